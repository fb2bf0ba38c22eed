package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// scheduleCases: full and incremental scheduling cycles (issue 8).
func scheduleCases() []Case {
	var cs []Case
	for _, pending := range []int{1000, 10000} {
		for _, sz := range sizes {
			var full, incr []Figure
			if sz.name == "10k" && pending == 10000 {
				full = []Figure{fig("ms/op", 10, 8)}
				incr = []Figure{fig("ms/op", 1, 8)}
			}
			if sz.name == "100k" && pending == 10000 {
				full = []Figure{fig("ms/op", 10, 14)}
			}
			cs = append(cs,
				Case{
					Name: fmt.Sprintf("Schedule/full-%d-pending/%s", pending, sz.name), Size: sz.name, BenchTime: "20x", Figures: full,
					Doc: fmt.Sprintf("one cycle with cold caches over %d pending jobs (mixed shapes, 20 queues) on %s with 90%% of its GPUs running jobs; the Scheduler is rebuilt outside the timer for every op", pending, sz.preset),
					F:   func(b *testing.B) { benchFull(b, sz.preset, pending) },
				},
				Case{
					Name: fmt.Sprintf("Schedule/incremental-%d-pending/%s", pending, sz.name), Size: sz.name, BenchTime: "1s", Figures: incr,
					Doc: fmt.Sprintf("the cycle after one running job finishes, %d jobs pending, on %s 90%% busy (the steady state; each job bound is replaced by a new pending one outside the timer)", pending, sz.preset),
					F:   func(b *testing.B) { benchIncremental(b, sz.preset, pending) },
				},
			)
		}
	}
	cs = append(cs, kaiCases()...)
	for _, sz := range sizes {
		cs = append(cs, Case{
			Name: "Schedule/preempt-256gpu-tor/" + sz.name, Size: sz.name, BenchTime: "20x",
			Doc: "one cycle in which a 32 × 8-GPU gang of priority 100, required in one ToR, arrives on " + sz.preset + " with every GPU busy (without quotas where a leaf's nominal is under 256 GPUs): the PlanPreemptor (lower priority in any queue) picks the cheapest ToR's victims; the Scheduler is rebuilt outside the timer for every op",
			F:   func(b *testing.B) { benchPreemptCycle(b, sz.preset) },
		})
	}
	return cs
}

func benchPreemptCycle(b *testing.B, presetName string) {
	w := fullWorld(b, presetName)
	if w.c.NumGPUs()/20 < 256 {
		w = unquotaed(w) // the urgent gang would borrow: see unquotaed
	}
	b.ReportAllocs()
	victims := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		p, err := gpusched.NewPlanPreemptor(preempt.Config{LowerPriority: preempt.AnyQueue}, 0)
		if err != nil {
			fatal(b, err)
		}
		s, now, _ := w.schedulerWith(b, 0, p)
		urgent := workload.Job{ID: "urgent", Queue: w.leaves[0], Priority: 100, Runtime: time.Hour,
			Groups:   []workload.TaskGroup{{Count: 32, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}},
			Topology: []workload.Constraint{{Level: "tor", Required: true}}}
		if err := s.Submit(urgent, now); err != nil {
			fatal(b, err)
		}
		runtime.GC()
		b.StartTimer()
		d := s.Schedule(now)
		b.StopTimer()
		victims = len(d.Preemptions)
		if victims == 0 || len(d.Bindings) != 0 {
			fatalf(b, "%d preemptions, %d bindings", victims, len(d.Bindings))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(victims), "victims/op")
}

// unquotaed returns a copy of w whose queue tree has no quotas. The
// preemption cycle benchmarks priority victims in any queue; where a leaf's
// nominal quota is below the urgent 256-GPU gang (1k: 51 GPUs) its queue
// would borrow, and the planner does not let a borrower take another
// queue's jobs on priority (preempt.AnyQueue), so there would be no plan:
// those clusters run without quotas.
func unquotaed(w *schedWorld) *schedWorld {
	c := *w
	c.queues = queue.Config{Root: stripQuotas(w.queues.Root)}
	return &c
}

// stripQuotas copies n and its subtree without quotas.
func stripQuotas(n queue.Node) queue.Node {
	n.Quotas = nil
	kids := make([]queue.Node, len(n.Children))
	for i, k := range n.Children {
		kids[i] = stripQuotas(k)
	}
	n.Children = kids
	return n
}

// schedShape is one job shape of the scheduling workload.
type schedShape struct {
	weight int
	group  workload.TaskGroup
	tor    bool // required in one ToR
}

// schedMix is the scheduling benchmarks' workload: single GPUs and shares
// (most jobs), 2- and 4-GPU jobs, whole hosts, and gangs of 2 to 32 whole
// hosts required in one ToR.
var schedMix = []schedShape{
	{30, workload.TaskGroup{Count: 1, GPUs: 1, CPUMilli: 8000, MemoryMiB: 64 << 10}, false},
	{10, workload.TaskGroup{Count: 1, GPUMilli: 500, CPUMilli: 4000, MemoryMiB: 32 << 10}, false},
	{6, workload.TaskGroup{Count: 2, GPUMilli: 250, CPUMilli: 2000, MemoryMiB: 16 << 10}, false},
	{12, workload.TaskGroup{Count: 1, GPUs: 2, CPUMilli: 16000, MemoryMiB: 128 << 10}, false},
	{10, workload.TaskGroup{Count: 1, GPUs: 4, CPUMilli: 32000, MemoryMiB: 256 << 10}, false},
	{5, workload.TaskGroup{Count: 4, GPUs: 1, CPUMilli: 8000, MemoryMiB: 64 << 10}, false},
	{10, workload.TaskGroup{Count: 1, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, false},
	{6, workload.TaskGroup{Count: 2, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, true},
	{5, workload.TaskGroup{Count: 4, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, true},
	{3, workload.TaskGroup{Count: 8, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, true},
	{2, workload.TaskGroup{Count: 16, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, true},
	{1, workload.TaskGroup{Count: 32, GPUs: 8, CPUMilli: 64000, MemoryMiB: 512 << 10}, true},
}

var schedRuntimes = []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour}

// schedJob draws a job of the mix.
func schedJob(r *rand.Rand, id, q string) workload.Job {
	total := 0
	for _, s := range schedMix {
		total += s.weight
	}
	k, i := r.IntN(total), 0
	for k >= schedMix[i].weight {
		k -= schedMix[i].weight
		i++
	}
	j := workload.Job{ID: id, Queue: q, Priority: int32(r.IntN(4)), Groups: []workload.TaskGroup{schedMix[i].group},
		Runtime: schedRuntimes[r.IntN(len(schedRuntimes))]}
	if schedMix[i].tor {
		j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
	}
	return j
}

// schedQueues is the queue tree of the scheduling benchmarks: 4
// organisations × 5 teams, each team guaranteed 1/20 of the GPUs, the five
// teams of an organisation using strict FIFO with backfill, best-effort
// FIFO twice, priority aging with backfill, and best-effort FIFO.
func schedQueues(gpus int) (queue.Config, []string) {
	policies := []queue.Policy{
		{Ordering: queue.StrictFIFO, Backfill: true},
		{Ordering: queue.BestEffortFIFO},
		{Ordering: queue.BestEffortFIFO},
		{Ordering: queue.PriorityAging, AgingInterval: 10 * time.Minute, Backfill: true},
		{Ordering: queue.BestEffortFIFO},
	}
	var cfg queue.Config
	var leaves []string
	for o := 0; o < 4; o++ {
		org := queue.Node{Name: fmt.Sprintf("org%d", o), Quotas: []queue.Quota{{Resource: "gpu", Nominal: int64(gpus / 4)}}}
		for t := 0; t < 5; t++ {
			name := fmt.Sprintf("org%d-team%d", o, t)
			leaves = append(leaves, name)
			org.Children = append(org.Children, queue.Node{Name: name, Quotas: []queue.Quota{{Resource: "gpu", Nominal: int64(gpus / 20)}}, Policy: policies[t]})
		}
		cfg.Root.Children = append(cfg.Root.Children, org)
	}
	return cfg, leaves
}

// running is a job that holds resources in the scheduling fixture.
type running struct {
	spec  workload.Job
	tasks [][]topology.Claim
	start time.Time
}

// schedWorld is what every Scheduler of one cluster's fixture starts from:
// running jobs (with their exact claims) filling about 90% of the GPUs.
type schedWorld struct {
	c       *topology.Cluster
	queues  queue.Config
	leaves  []string
	running []running
	t0      time.Time
}

// world places jobs of the mix (PCG seed 1, 2) with the topology policy
// until 90% of the GPUs are taken, and keeps their claims: a Scheduler is
// then rebuilt from them with Restore in a fraction of the time a sequence
// of cycles would take.
func world(b testing.TB, presetName string) *schedWorld {
	return buildWorld(b, presetName, false)
}

// fullWorld is world with every GPU busy: after the mix, 1-GPU jobs take
// what is left.
func fullWorld(b testing.TB, presetName string) *schedWorld {
	return buildWorld(b, presetName, true)
}

func buildWorld(b testing.TB, presetName string, full bool) *schedWorld {
	key := "world/" + presetName
	if full {
		key = "world-full/" + presetName
	}
	return cached(b, key, func() (*schedWorld, error) {
		w, _, _, err := newWorld(preset(b, presetName), full)
		return w, err
	})
}

// newWorld builds the world of cluster c (see world and fullWorld); it
// also returns the ledger holding the running jobs, and the random source
// that drew them, for fixtures that add more.
func newWorld(c *topology.Cluster, full bool) (*schedWorld, *topology.Ledger, *rand.Rand, error) {
	w := &schedWorld{c: c, t0: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	w.queues, w.leaves = schedQueues(c.NumGPUs())
	l := topology.NewLedger(c)
	pl, err := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
	if err != nil {
		return nil, nil, nil, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	target := int64(c.NumGPUs()) * 1000 / 10
	for i := 0; l.FreeMilli(c.Root()) > target; i++ {
		j := schedJob(r, "run"+strconv.Itoa(i), w.leaves[r.IntN(len(w.leaves))])
		j.Runtime = time.Duration(1+r.IntN(48)) * 30 * time.Minute
		req, err := gang.NewRequest(c, &j)
		if err != nil {
			return nil, nil, nil, err
		}
		p := new(gang.Placement) // a committed placement is kept
		if pl.Place(l, req, p) != nil {
			if i > 100*c.NumHosts() {
				return nil, nil, nil, fmt.Errorf("could not fill %s", c.Name())
			}
			continue
		}
		if _, err := gang.Commit(l, p); err != nil {
			return nil, nil, nil, err
		}
		tasks := make([][]topology.Claim, len(j.Groups))
		for k, cl := range p.Claims {
			tasks[p.Tasks[k].Group] = append(tasks[p.Tasks[k].Group], cloneClaim(cl))
		}
		start := w.t0.Add(-time.Duration(r.IntN(int(j.Runtime/time.Second))) * time.Second)
		w.running = append(w.running, running{spec: j, tasks: tasks, start: start})
	}
	// For a full world, single GPUs take what is left.
	for k := 0; full && l.FreeGPUs(c.Root()) > 0; k++ {
		one := workload.Job{ID: "fill" + strconv.Itoa(k), Queue: w.leaves[k%len(w.leaves)], Priority: int32(r.IntN(4)),
			Runtime: time.Duration(1+r.IntN(48)) * 30 * time.Minute, Groups: []workload.TaskGroup{schedMix[0].group}}
		req, err := gang.NewRequest(c, &one)
		if err != nil {
			return nil, nil, nil, err
		}
		p := new(gang.Placement)
		if x := pl.Place(l, req, p); x != nil {
			return nil, nil, nil, fmt.Errorf("top-up: %v", x)
		}
		if _, err := gang.Commit(l, p); err != nil {
			return nil, nil, nil, err
		}
		start := w.t0.Add(-time.Duration(r.IntN(int(one.Runtime/time.Second))) * time.Second)
		w.running = append(w.running, running{spec: one, tasks: [][]topology.Claim{{cloneClaim(p.Claims[0])}}, start: start})
	}
	return w, l, r, nil
}

func cloneClaim(cl topology.Claim) topology.Claim {
	cl.GPUs = slices.Clone(cl.GPUs)
	return cl
}

// scheduler builds a Scheduler of the world: the running jobs restored,
// then pending jobs of the mix (PCG seed 3, 4) spread over the 20 queues.
// It returns the Scheduler, the time of its first cycle, and the random
// source that drew the pending jobs (to draw more).
func (w *schedWorld) scheduler(b testing.TB, pending int) (*gpusched.Scheduler, time.Time, *rand.Rand) {
	return w.schedulerWith(b, pending, nil)
}

// schedulerWith is scheduler with a Preemptor.
func (w *schedWorld) schedulerWith(b testing.TB, pending int, p gpusched.Preemptor) (*gpusched.Scheduler, time.Time, *rand.Rand) {
	return w.schedulerOpts(b, pending, p, false)
}

// schedulerOpts is schedulerWith, with Config.OmitPending set to omit.
func (w *schedWorld) schedulerOpts(b testing.TB, pending int, p gpusched.Preemptor, omit bool) (*gpusched.Scheduler, time.Time, *rand.Rand) {
	s, err := gpusched.New(gpusched.Config{Cluster: w.c, Queues: w.queues, Preemptor: p, OmitPending: omit})
	if err != nil {
		fatal(b, err)
	}
	for i, rj := range w.running {
		sub := w.t0.Add(time.Duration(i-len(w.running)) * time.Millisecond)
		if rj.start.Before(sub) {
			sub = rj.start // a job is not started before it is submitted
		}
		if err := s.Restore(rj.spec, rj.tasks, queue.Running, sub, rj.start); err != nil {
			fatal(b, err)
		}
	}
	// Bring the ledger's lazily refreshed indexes up to date, as a
	// running Scheduler's are: the restores marked every host dirty.
	l := s.Ledger()
	l.BestHost(w.c.Root(), 1, topology.NoModel)
	for lv := topology.Level(0); lv < w.c.LevelCluster(); lv++ {
		l.BestDomain(lv, 1)
	}
	l.AscendSharedGPUs(topology.NoModel, 1, func(topology.GPUID, int) bool { return false })
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < pending; i++ {
		if err := s.Submit(schedJob(r, "p"+strconv.Itoa(i), w.leaves[i%len(w.leaves)]), w.t0); err != nil {
			fatal(b, err)
		}
	}
	return s, w.t0.Add(time.Minute), r
}

func benchFull(b *testing.B, presetName string, pending int) {
	benchFullOf(b, world(b, presetName), pending)
}

// benchFullOf times one cycle over pending jobs on a fresh Scheduler of w.
func benchFullOf(b *testing.B, w *schedWorld, pending int) {
	b.ReportAllocs()
	var bound, waiting int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, now, _ := w.scheduler(b, pending)
		runtime.GC() // the fixture's garbage is not the cycle's
		b.StartTimer()
		d := s.Schedule(now)
		b.StopTimer()
		bound, waiting = len(d.Bindings), len(d.Pending)
		if bound+waiting != pending || bound == 0 {
			fatalf(b, "bound %d, waiting %d of %d", bound, waiting, pending)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(bound), "bound/op")
	b.ReportMetric(float64(waiting), "waiting/op")
}

func benchIncremental(b *testing.B, presetName string, pending int) {
	benchIncrementalOf(b, world(b, presetName), pending, false)
}

// benchIncrementalOf times the cycle after a running job of w finishes,
// with pending jobs waiting; with omit, the Scheduler does not list them
// in Decision.Pending (Config.OmitPending).
func benchIncrementalOf(b *testing.B, w *schedWorld, pending int, omit bool) {
	s, now, r := w.schedulerOpts(b, pending, nil, omit)
	d := s.Schedule(now)
	next := pending
	start := func(d *gpusched.Decision) {
		for _, x := range d.Bindings {
			if err := s.Started(x.Job, now); err != nil {
				fatal(b, err)
			}
			// Keep the backlog at its size: a new job for each one bound.
			if err := s.Submit(schedJob(r, "p"+strconv.Itoa(next), w.leaves[next%len(w.leaves)]), now); err != nil {
				fatal(b, err)
			}
			next++
		}
	}
	start(&d)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	bound := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// The running job that ends first by its estimate finishes:
		// Holding's first (it lists by estimated end, here start plus
		// runtime: every job has a runtime, and each one bound starts at
		// once). Reading only the first keeps the untimed part of an op
		// from cloning every holding job's status.
		var id string
		var end time.Time
		s.Holding(func(jid string, st gpusched.JobStatus) bool {
			id, end = jid, st.Started.Add(st.Spec.Runtime)
			return false
		})
		if end.After(now) {
			now = end
		}
		b.StartTimer()
		if err := s.Finished(id, now); err != nil {
			fatal(b, err)
		}
		d := s.Schedule(now)
		b.StopTimer()
		bound += len(d.Bindings)
		if len(d.Pending) == 0 && !omit {
			fatal(b, "no job pending")
		}
		start(&d)
		s.Recycle(d) // a host listing 40,000 rows a cycle hands each Decision back when done
		b.StartTimer()
	}
	b.ReportMetric(float64(bound)/float64(b.N), "bound/op")
}
