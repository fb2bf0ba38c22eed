// Package defragexp is the experiment of docs/defrag.md: what the
// Scheduler's migrations (Config.Defrag), protected domains and
// fragmentation-aware victims buy big gangs on a GB200 NVL72 (or H100)
// cluster under a mixed trace (many small and CPU-only jobs, a stream of
// 64- to 256-GPU gangs that need a whole NVLink domain or ToR), replayed
// through the root Scheduler by the simulator, over several seeds.
//
// Every run is deterministic for its seed; Run returns per-variant
// medians with bootstrap confidence intervals, Table renders them as
// markdown and Plot draws the per-seed values.
package defragexp

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Options sizes the experiment. Zero fields take the defaults.
type Options struct {
	// Machine is "gb200-nvl72" (the default) or "dgx-h100": the same GPU
	// count in DGX H100 hosts (8 GPUs each, no multi-host NVLink), 36 to a
	// ToR (288 GPUs), where every big gang requires one ToR.
	Machine string
	// Racks is the number of GB200 NVL72 racks (18 trays of 4 GPUs);
	// default 16 (1,152 GPUs). RacksPerToR groups them under ToRs;
	// default 4 (288 GPUs a ToR).
	Racks, RacksPerToR int
	// Jobs per trace; default 3,000.
	Jobs int
	// Load is the offered GPU load (GPU time asked / capacity over the
	// arrival span); default 0.9.
	Load float64
	// Seeds; default 1–5.
	Seeds []uint64
	// Variants; default Variants.
	Variants []Variant
	// Progress, if set, is called after each run (a variant on a seed).
	Progress func(Outcome)
}

// Variant is one scheduler setup.
type Variant struct {
	Name string
	// Preempt enables priority preemption within the queue (big gangs
	// have priority 10, everything else 0).
	Preempt bool
	// Defrag enables the Scheduler's migrations (Config.Defrag: after 5
	// minutes blocked by fragmentation, at most 30 moves an hour, a job
	// moved at most twice).
	Defrag bool
	// Consolidate adds consolidation when idle (with Defrag:
	// DefragConfig.Consolidate, at most 30 moves an hour of its own).
	Consolidate bool
	// Protect is the topology placer's protection (gang.Options.Protect).
	Protect gang.Protection
	// FragAware and FragEpsilon configure the preemption planner
	// (preempt.Config).
	FragAware   bool
	FragEpsilon float64
}

// Variants are the setups the experiment compares.
var Variants = []Variant{
	{Name: "off", Protect: gang.ProtectOff},
	{Name: "protect", Protect: gang.ProtectOn},
	{Name: "defrag", Defrag: true, Protect: gang.ProtectOff},
	{Name: "defrag+protect", Defrag: true, Protect: gang.ProtectOn},
	{Name: "defrag+protect+consolidate", Defrag: true, Consolidate: true, Protect: gang.ProtectOn},
	{Name: "preempt", Preempt: true, Protect: gang.ProtectOff},
	{Name: "preempt+defrag+protect", Preempt: true, Defrag: true, Protect: gang.ProtectOn},
	{Name: "preempt+defrag+protect+frag-victims", Preempt: true, Defrag: true, Protect: gang.ProtectOn, FragAware: true, FragEpsilon: 0.1},
}

func (o *Options) defaults() {
	if o.Machine == "" {
		o.Machine = "gb200-nvl72"
	}
	if o.Racks == 0 {
		o.Racks = 16
	}
	if o.RacksPerToR == 0 {
		o.RacksPerToR = 4
	}
	if o.Jobs == 0 {
		o.Jobs = 3000
	}
	if o.Load == 0 {
		o.Load = 0.9
	}
	if len(o.Seeds) == 0 {
		o.Seeds = []uint64{1, 2, 3, 4, 5}
	}
	if len(o.Variants) == 0 {
		o.Variants = Variants
	}
}

// Cluster builds the experiment's cluster.
func Cluster(o Options) (*topology.Cluster, error) {
	o.defaults()
	g := topology.Generator{Name: fmt.Sprintf("gb200-nvl72-x%d", o.Racks), Machine: "gb200-nvl72",
		Hosts: 18 * o.Racks, HostsPerToR: 18 * o.RacksPerToR}
	switch o.Machine {
	case "gb200-nvl72":
	case "dgx-h100":
		g = topology.Generator{Name: fmt.Sprintf("h100-x%d", 9*o.Racks), Machine: "dgx-h100", Hosts: 9 * o.Racks, HostsPerToR: 9 * o.RacksPerToR}
	default:
		return nil, fmt.Errorf("defragexp: Options.Machine: unknown %q (want gb200-nvl72 or dgx-h100)", o.Machine)
	}
	s, err := g.Spec()
	if err != nil {
		return nil, err
	}
	return topology.Build(s)
}

// Trace draws the mixed trace of one seed: 62% 1-GPU jobs, 18% of 2 or
// 4 GPUs, 16% CPU-only jobs (16–64 cores), all priority 0, log-normal run
// times around 3 hours; and 4% big gangs of priority 10: 64 GPUs
// (16 × 4, one NVLink domain required), 128 or 256 GPUs (one ToR
// required), run times around 1 hour. Small jobs then hold about half
// the GPU time, big gangs the other half. Arrivals are Poisson, scaled to
// the offered load.
func Trace(c *topology.Cluster, o Options, seed uint64) ([]trace.Job, error) {
	o.defaults()
	rng := rand.New(rand.NewPCG(seed, 0x15))
	logn := func(median time.Duration, sigma float64) time.Duration {
		d := time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
		return min(max(d, time.Minute), 24*time.Hour)
	}
	jobs := make([]trace.Job, 0, o.Jobs)
	var t time.Duration
	for i := 0; i < o.Jobs; i++ {
		t += time.Duration(rng.ExpFloat64() * float64(time.Minute))
		j := trace.Job{Submit: t, Line: i + 1}
		j.Spec = workload.Job{ID: fmt.Sprintf("j%05d", i), Queue: "default"}
		g := workload.TaskGroup{Count: 1}
		switch x := rng.IntN(100); {
		case x < 62:
			g.GPUs, g.CPUMilli = 1, 8000
			j.Duration = logn(3*time.Hour, 1)
		case x < 80:
			g.GPUs, g.CPUMilli = []int{2, 4}[rng.IntN(2)], 16000
			j.Duration = logn(3*time.Hour, 1)
		case x < 96:
			g.CPUMilli = int64(16000 * (1 + rng.IntN(4)))
			g.MemoryMiB = 65536
			j.Duration = logn(3*time.Hour, 1)
		default:
			size := []int{64, 64, 128, 256}[rng.IntN(4)]
			per := 4
			if o.Machine == "dgx-h100" {
				per = 8
			}
			g.Count, g.GPUs, g.CPUMilli = size/per, per, int64(per)*4000
			level := "tor"
			if size <= 72 && per == 4 {
				level = "nvlink"
			}
			j.Spec.Topology = []workload.Constraint{{Level: level, Required: true}}
			j.Spec.Priority = 10
			j.Duration = logn(time.Hour, 0.5)
		}
		j.Spec.Groups = []workload.TaskGroup{g}
		jobs = append(jobs, j)
	}
	if _, err := trace.ScaleToLoad(jobs, c.NumGPUs(), o.Load); err != nil {
		return nil, err
	}
	return jobs, nil
}

// Outcome is one run's figures.
type Outcome struct {
	Variant string
	Seed    uint64
	// BigP95 and BigP50 are the wait (seconds) of gangs of ≥ 64 GPUs that
	// started; BigStarted how many did, of BigJobs.
	BigP95, BigP50      float64
	BigStarted, BigJobs int
	SmallP95            float64 // wait of the other GPU jobs
	LostGPUHours        float64 // lost to preemption (work since checkpoint)
	MigrationLostHours  float64 // lost to migrations (work since checkpoint)
	Migrations          int
	OverheadGPUHours    float64 // checkpoint and restart pauses, slowdown
	Preemptions         int
	Allocation          float64 // allocation rate over the arrival span
}

// RunOne replays one seed under one variant.
func RunOne(c *topology.Cluster, o Options, v Variant, seed uint64) (Outcome, error) {
	o.defaults()
	jobs, err := Trace(c, o, seed)
	if err != nil {
		return Outcome{}, err
	}
	placer, err := gang.New("topology", gang.Options{Explain: gang.DetailBrief, Protect: v.Protect})
	if err != nil {
		return Outcome{}, err
	}
	var pre gpusched.Preemptor
	if v.Preempt {
		pp, err := gpusched.NewPlanPreemptor(preempt.Config{Placer: placer, LowerPriority: preempt.WithinQueue,
			FragAware: v.FragAware, FragEpsilon: v.FragEpsilon}, 0)
		if err != nil {
			return Outcome{}, err
		}
		pre = pp
	}
	qc := rootsched.FlatQueues([]string{"default"}, queue.Policy{Ordering: queue.BestEffortFIFO})
	var dc *gpusched.DefragConfig
	if v.Defrag {
		dc = &gpusched.DefragConfig{After: 5 * time.Minute, Budget: preempt.DefragBudget{PerHour: 30}, MaxPerJob: 2}
		if v.Consolidate {
			dc.Consolidate = &gpusched.ConsolidateConfig{Budget: preempt.DefragBudget{PerHour: 30}}
		}
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: qc, Placer: placer, Preemptor: pre, Defrag: dc, Seed: seed})
	if err != nil {
		return Outcome{}, err
	}
	sm, err := sim.New(sim.Config{Cluster: c, Scheduler: s, Seed: seed,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Minute, RestartCost: 2 * time.Minute}}, jobs)
	if err != nil {
		return Outcome{}, err
	}
	res, err := sm.Run()
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Variant: v.Name, Seed: seed, LostGPUHours: res.Summary.Preemption.GPUHoursLostPreemption,
		OverheadGPUHours: res.Summary.GPUTime.Overhead / 3600,
		Migrations:       res.Summary.Preemption.Migrations, MigrationLostHours: res.Summary.Preemption.GPUHoursLostMigration,
		Preemptions: res.Summary.Preemption.Preemptions, Allocation: res.Summary.ArrivalAllocation}
	var big, small []float64
	for _, r := range res.Jobs {
		if r.GPUs >= 64 {
			out.BigJobs++
		}
		if r.Start < r.Submit || r.GPUs == 0 {
			continue
		}
		if r.GPUs >= 64 {
			big = append(big, r.Start-r.Submit)
		} else {
			small = append(small, r.Start-r.Submit)
		}
	}
	out.BigStarted = len(big)
	out.BigP95, out.BigP50, out.SmallP95 = quantile(big, 0.95), quantile(big, 0.5), quantile(small, 0.95)
	return out, nil
}

// quantile is the nearest-rank quantile (0 for no values).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Stat is a median with a 95% bootstrap confidence interval.
type Stat struct{ Median, Lo, Hi float64 }

// Row is one variant's figures over the seeds.
type Row struct {
	Variant                                   string
	BigP95, BigP50, SmallP95, Lost, Allocated Stat
	Overhead, MigrationLost                   Stat
	Preemptions, Migrations                   Stat
	BigStarted, BigJobs                       int
}

// Run replays every seed under every variant.
func Run(o Options) ([]Row, []Outcome, error) {
	o.defaults()
	c, err := Cluster(o)
	if err != nil {
		return nil, nil, err
	}
	var all []Outcome
	var rows []Row
	for _, v := range o.Variants {
		var outs []Outcome
		for _, seed := range o.Seeds {
			x, err := RunOne(c, o, v, seed)
			if err != nil {
				return nil, nil, fmt.Errorf("defragexp: %s seed %d: %w", v.Name, seed, err)
			}
			outs = append(outs, x)
			if o.Progress != nil {
				o.Progress(x)
			}
		}
		all = append(all, outs...)
		pick := func(f func(Outcome) float64) Stat {
			var xs []float64
			for _, x := range outs {
				xs = append(xs, f(x))
			}
			return bootstrap(xs, 0x15)
		}
		r := Row{Variant: v.Name,
			BigP95:        pick(func(x Outcome) float64 { return x.BigP95 / 60 }),
			BigP50:        pick(func(x Outcome) float64 { return x.BigP50 / 60 }),
			SmallP95:      pick(func(x Outcome) float64 { return x.SmallP95 / 60 }),
			Lost:          pick(func(x Outcome) float64 { return x.LostGPUHours }),
			Overhead:      pick(func(x Outcome) float64 { return x.OverheadGPUHours }),
			MigrationLost: pick(func(x Outcome) float64 { return x.MigrationLostHours }),
			Allocated:     pick(func(x Outcome) float64 { return 100 * x.Allocation }),
			Preemptions:   pick(func(x Outcome) float64 { return float64(x.Preemptions) }),
			Migrations:    pick(func(x Outcome) float64 { return float64(x.Migrations) }),
		}
		for _, x := range outs {
			r.BigStarted += x.BigStarted
			r.BigJobs += x.BigJobs
		}
		rows = append(rows, r)
	}
	return rows, all, nil
}

// bootstrap returns the median of xs and a 95% percentile-bootstrap
// interval of the median (2,000 resamples, seeded).
func bootstrap(xs []float64, seed uint64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		n := len(s)
		if n%2 == 1 {
			return s[n/2]
		}
		return (s[n/2-1] + s[n/2]) / 2
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(xs))))
	const B = 2000
	ms := make([]float64, B)
	buf := make([]float64, len(xs))
	for b := range ms {
		for i := range buf {
			buf[i] = xs[rng.IntN(len(xs))]
		}
		ms[b] = med(buf)
	}
	slices.Sort(ms)
	return Stat{Median: med(xs), Lo: ms[int(0.025*B)], Hi: ms[int(0.975*B)-1]}
}

// tableHeader is the head of Table's markdown table.
const tableHeader = "| variant | p95 wait, gangs ≥ 64 GPUs (min) | p50 wait, gangs ≥ 64 GPUs (min) | p95 wait, small GPU jobs (min) | GPU-h lost to preemption | GPU-h lost to migrations | GPU-h overhead (checkpoint, restart) | preemptions | migrations | allocation (%) |\n" +
	"|---|---|---|---|---|---|---|---|---|---|\n"

// Table renders rows as a markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString(tableHeader)
	f := func(s Stat) string { return fmt.Sprintf("%.1f [%.1f, %.1f]", s.Median, s.Lo, s.Hi) }
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Variant, f(r.BigP95), f(r.BigP50), f(r.SmallP95),
			f(r.Lost), f(r.MigrationLost), f(r.Overhead), f(r.Preemptions), f(r.Migrations), f(r.Allocated))
	}
	return b.String()
}

// ErrNoRuns is returned by Plot for no outcomes.
var ErrNoRuns = errors.New("defragexp: no runs to plot")

// Plot draws, per variant, each seed's p95 wait of the big gangs (minutes)
// against its GPU-hours lost to preemption, to path (PNG).
func Plot(path string, outs []Outcome) error {
	if len(outs) == 0 {
		return ErrNoRuns
	}
	p := plot.New()
	p.Title.Text = "Big gangs (≥ 64 GPUs): p95 wait vs GPU-time overhead, per seed"
	p.X.Label.Text = "GPU-hours of checkpoint/restart overhead"
	p.Y.Label.Text = "p95 wait of gangs ≥ 64 GPUs (min)"
	var names []string
	for _, x := range outs {
		if !slices.Contains(names, x.Variant) {
			names = append(names, x.Variant)
		}
	}
	for i, n := range names {
		var xys plotter.XYs
		for _, x := range outs {
			if x.Variant == n {
				xys = append(xys, plotter.XY{X: x.OverheadGPUHours, Y: x.BigP95 / 60})
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = plotutil.Color(i)
		sc.GlyphStyle.Shape = plotutil.Shape(i)
		sc.GlyphStyle.Radius = vg.Points(4)
		p.Add(sc)
		p.Legend.Add(n, sc)
	}
	p.Legend.Top = true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// Machines are the clusters the experiment runs on (Options.Machine).
var Machines = []string{"gb200-nvl72", "dgx-h100"}

// Describe is the first line of a generated block: the command that
// regenerates it and the options of the run.
func Describe(o Options) string {
	o.defaults()
	seeds := make([]string, len(o.Seeds))
	for i, s := range o.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	return fmt.Sprintf("Generated by `go run ./examples/defrag -write docs/defrag.md -plots docs/img`: %s, %d racks' worth of GPUs (%d to a ToR), %d jobs a trace, offered load %.2f, seeds %s.",
		o.Machine, o.Racks, o.RacksPerToR, o.Jobs, o.Load, strings.Join(seeds, ", "))
}

// Block renders one machine's results for docs/defrag.md: Describe, the
// table of medians, and each run's figures.
func Block(o Options, rows []Row, outs []Outcome) string {
	var b strings.Builder
	b.WriteString(Describe(o) + "\n\n")
	b.WriteString(Table(rows))
	b.WriteString("\nPer seed:\n\n```\n")
	for _, x := range outs {
		fmt.Fprintf(&b, "%s seed %d: big p95 %.0f min (p50 %.0f), %d/%d big gangs started, %.1f GPU-h lost, %.1f GPU-h overhead, %d preemptions, %d migrations (%.1f GPU-h lost), allocation %.1f%%\n",
			x.Variant, x.Seed, x.BigP95/60, x.BigP50/60, x.BigStarted, x.BigJobs, x.LostGPUHours, x.OverheadGPUHours, x.Preemptions, x.Migrations, x.MigrationLostHours, 100*x.Allocation)
	}
	b.WriteString("```\n")
	return b.String()
}

// markers returns the lines that open and close the generated block
// named name.
func markers(name string) (string, string) {
	return "<!-- defragexp " + name + ": generated, do not edit -->\n", "<!-- /defragexp " + name + " -->\n"
}

// Splice returns doc with the generated block named name replaced by
// block; an error when doc lacks its markers.
func Splice(doc, name, block string) (string, error) {
	open, close := markers(name)
	i := strings.Index(doc, open)
	j := strings.Index(doc, close)
	if i < 0 || j < i {
		return "", fmt.Errorf("defragexp: no block %q (%q … %q) in the document", name, strings.TrimSpace(open), strings.TrimSpace(close))
	}
	return doc[:i+len(open)] + block + doc[j:], nil
}

// Extract returns the generated block named name of doc.
func Extract(doc, name string) (string, error) {
	open, close := markers(name)
	i := strings.Index(doc, open)
	j := strings.Index(doc, close)
	if i < 0 || j < i {
		return "", fmt.Errorf("defragexp: no block %q in the document", name)
	}
	return doc[i+len(open) : j], nil
}

// PlotName is the file name of a machine's plot.
func PlotName(machine string) string {
	if machine == "gb200-nvl72" {
		return "defrag.png"
	}
	return "defrag-h100.png"
}
