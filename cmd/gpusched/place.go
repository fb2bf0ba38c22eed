package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"github.com/spf13/cobra"
)

// placeFlags are the flags of gpusched place.
type placeFlags struct {
	cluster     *clusterFlags
	policy      string
	gpus        int
	tasks       int
	gpusPerTask int
	minTasks    int
	share       int
	mig         string
	cpu         int64
	memory      int64
	models      []string
	require     []string
	prefer      []string
	fill        float64
	seed        uint64
	format      string
}

// newPlaceCmd builds "gpusched place": one gang placement decision on a
// cluster, optionally pre-fragmented at random, printed as the placement
// (grouped by domain) or the explanation of why it does not fit.
func newPlaceCmd() *cobra.Command {
	f := &placeFlags{}
	cmd := &cobra.Command{
		Use:   "place",
		Short: "Place one gang on a cluster and print where it goes, or why it does not fit",
		Long: `Place one gang (a job of identical tasks) all or nothing on a cluster with a
placement policy, and print the placement grouped by domain, or the explanation
of why it does not fit (capacity, quota, fragmentation, too large).

The gang is --tasks tasks of --gpus-per-task whole GPUs each, or --gpus GPUs in
total split into tasks of as many GPUs as the largest host allows (--gpus 64 on
DGX hosts: 8 tasks of 8). --share MILLI or --mig PROFILE give each task a GPU
share or a MIG instance instead. --require LEVEL keeps all tasks in one domain
of that level (nvlink, host, tor, spine, cluster…); --prefer LEVEL tries to.

--fill FRACTION first takes each GPU of the cluster with that probability
(seeded by --seed), so the cluster is fragmented the way a busy one is.

A placement is listed under the tightest domain that holds every task (a
host, an NVLink domain, a ToR…). When the gang does not fit, the explanation
goes to standard output and the command exits with status 1, as it does for
a bad request (whose error goes to standard error).

Examples:

  gpusched place --preset h100-1k --gpus 64 --require tor
  gpusched place --preset h100-1k --fill 0.5 --seed 7 --gpus 16 --require tor --policy best-fit
  gpusched place --preset pcie-8gpu --tasks 1 --gpus-per-task 4
  gpusched place --machine gb200-nvl72 --hosts 36 --tasks 16 --gpus-per-task 4 --require nvlink -o json

Policies: ` + strings.Join(gang.PolicyNames(), ", ") + `. fgd measures
fragmentation against a workload of this gang's own tasks.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlace(cmd, f) },
	}
	f.cluster = addClusterFlags(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.policy, "policy", "topology", "placement policy: "+strings.Join(gang.PolicyNames(), ", "))
	fs.IntVar(&f.gpus, "gpus", 0, "whole GPUs in total (split into tasks of up to a host's GPUs)")
	fs.IntVar(&f.tasks, "tasks", 1, "number of tasks")
	fs.IntVar(&f.gpusPerTask, "gpus-per-task", 0, "whole GPUs per task")
	fs.IntVar(&f.minTasks, "min-tasks", 0, "elastic gang: place at least this many tasks (default: all)")
	fs.IntVar(&f.share, "share", 0, "GPU share per task in milli-GPU (1..999)")
	fs.StringVar(&f.mig, "mig", "", "MIG profile per task, e.g. 1g.10gb")
	fs.Int64Var(&f.cpu, "cpu", 0, "CPU per task in milli-cores")
	fs.Int64Var(&f.memory, "memory", 0, "memory per task in MiB")
	fs.StringSliceVar(&f.models, "model", nil, "acceptable GPU model (repeatable; default any)")
	fs.StringSliceVar(&f.require, "require", nil, "level all tasks must share one domain of (repeatable)")
	fs.StringSliceVar(&f.prefer, "prefer", nil, "level all tasks should share one domain of (repeatable)")
	fs.Float64Var(&f.fill, "fill", 0, "take each GPU with this probability first (0..1)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of --fill and of randomised policies")
	fs.StringVarP(&f.format, "format", "o", "text", "output: text or json")
	return cmd
}

func runPlace(cmd *cobra.Command, f *placeFlags) error {
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("unknown --format %q (want text or json)", f.format)
	}
	if f.fill < 0 || f.fill > 1 || f.fill != f.fill {
		return fmt.Errorf("--fill %v outside 0..1", f.fill)
	}
	c, err := f.cluster.cluster(cmd)
	if err != nil {
		return err
	}
	job, err := f.job(cmd, c)
	if err != nil {
		return err
	}
	r, err := gang.NewRequest(c, job)
	if err != nil {
		return fmt.Errorf("%w (flags: groups[0] is the task, topology[i] the --require/--prefer levels in order)", err)
	}
	r.Seed = f.seed
	opts := gang.Options{}
	if f.policy == "fgd" {
		opts.Frag.Distribution = ownWorkload(c, job)
	}
	placer, err := gang.New(f.policy, opts)
	if err != nil {
		return err
	}
	l := topology.NewLedger(c)
	taken := fill(l, f.fill, f.seed)
	var p gang.Placement
	why := placer.Place(l, r, &p)
	out := cmd.OutOrStdout()
	if f.format == "json" {
		if err := writePlaceJSON(out, c, l, f, taken, &p, why); err != nil {
			return err
		}
		if why != nil {
			return noFit(why)
		}
		return nil
	}
	fmt.Fprintf(out, "cluster %s: %s, %s", c.Name(), plural(c.NumHosts(), "host"), plural(c.NumGPUs(), "GPU"))
	if f.fill > 0 {
		fmt.Fprintf(out, "; filled %d GPUs at random (--fill %g --seed %d)", taken, f.fill, f.seed)
	}
	fmt.Fprintf(out, "; %d free\n", l.FreeGPUs(c.Root()))
	if why != nil {
		fmt.Fprintln(out, "does not fit:", why)
		return noFit(why)
	}
	writePlaceText(out, c, f.policy, &p)
	return nil
}

// noFit is the error of a gang that does not fit, after its explanation
// has been printed: the command exits with status 1.
func noFit(why *gang.Explanation) error {
	return fmt.Errorf("job %s does not fit (%s)", why.Job, why.Verdict)
}

// job builds the one-group job the flags describe.
func (f *placeFlags) job(cmd *cobra.Command, c *topology.Cluster) (*workload.Job, error) {
	fs := cmd.Flags()
	g := workload.TaskGroup{Name: "task", GPUMilli: f.share, MIGProfile: f.mig, CPUMilli: f.cpu, MemoryMiB: f.memory, Models: f.models}
	kinds := 0
	for _, name := range []string{"share", "mig"} {
		if fs.Changed(name) {
			kinds++
		}
	}
	if fs.Changed("gpus") || fs.Changed("gpus-per-task") {
		kinds++
	}
	if kinds > 1 {
		return nil, fmt.Errorf("use one of --gpus/--gpus-per-task, --share and --mig")
	}
	// Zero or negative counts and shares are bad requests, not defaults.
	if fs.Changed("tasks") && f.tasks < 1 {
		return nil, fmt.Errorf("--tasks %d: groups[0].count must be at least 1", f.tasks)
	}
	if fs.Changed("share") && (f.share < 1 || f.share >= topology.MilliPerGPU) {
		return nil, fmt.Errorf("--share %d: groups[0].gpuMilli must be 1..%d milli-GPU (a whole GPU is --gpus-per-task 1)", f.share, topology.MilliPerGPU-1)
	}
	if fs.Changed("mig") && f.mig == "" {
		return nil, fmt.Errorf("--mig: groups[0].migProfile must name a MIG profile, e.g. 1g.10gb")
	}
	switch {
	case f.gpusPerTask > 0:
		g.GPUs = f.gpusPerTask
		g.Count = f.tasks
		if f.gpus > 0 && f.gpus != g.Count*g.GPUs {
			return nil, fmt.Errorf("--gpus %d is not --tasks %d × --gpus-per-task %d", f.gpus, g.Count, g.GPUs)
		}
	case f.gpus > 0:
		per := splitGPUs(f.gpus, maxHostGPUs(c))
		if fs.Changed("tasks") {
			if f.gpus%f.tasks != 0 {
				return nil, fmt.Errorf("--gpus %d does not split into --tasks %d", f.gpus, f.tasks)
			}
			per = f.gpus / f.tasks
		}
		g.GPUs, g.Count = per, f.gpus/per
	case fs.Changed("gpus") || fs.Changed("gpus-per-task"):
		return nil, fmt.Errorf("--gpus and --gpus-per-task must be positive")
	default:
		g.Count = f.tasks
		if f.share == 0 && f.mig == "" && !fs.Changed("tasks") {
			return nil, fmt.Errorf("say what to place: --gpus, --tasks with --gpus-per-task, --share or --mig")
		}
	}
	if fs.Changed("min-tasks") {
		g.MinCount = f.minTasks
	}
	j := &workload.Job{ID: "cli", Groups: []workload.TaskGroup{g}}
	for _, lv := range f.require {
		j.Topology = append(j.Topology, workload.Constraint{Level: lv, Required: true})
	}
	for _, lv := range f.prefer {
		j.Topology = append(j.Topology, workload.Constraint{Level: lv})
	}
	return j, nil
}

// splitGPUs returns the GPUs per task for n GPUs on hosts of at most max:
// the largest divisor of n that is at most max.
func splitGPUs(n, max int) int {
	for k := min(n, max); k > 1; k-- {
		if n%k == 0 {
			return k
		}
	}
	return 1
}

func maxHostGPUs(c *topology.Cluster) int {
	m := 1
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		_, n := c.HostGPUs(h)
		m = max(m, n)
	}
	return m
}

// ownWorkload is the fgd target workload of the command: the gang's own
// task (or one whole GPU for MIG tasks, which frag does not model).
func ownWorkload(c *topology.Cluster, j *workload.Job) frag.Distribution {
	t, err := frag.TaskFor(c, &j.Groups[0])
	if err != nil || t.Validate() != nil {
		t = frag.Task{GPUs: 1}
	}
	return frag.Distribution{Classes: []frag.Class{{Task: t, Weight: 1}}}
}

// fill takes each GPU whole with probability p, drawn from a PCG seeded
// by seed, and returns how many it took.
func fill(l *topology.Ledger, p float64, seed uint64) int {
	if p <= 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := 0
	for g := topology.GPUID(0); int(g) < l.Cluster().NumGPUs(); g++ {
		if rng.Float64() < p && l.AllocateGPU(g) == nil {
			n++
		}
	}
	return n
}

// groupDomain is the domain a claim is listed under: its fabric domain
// when the placement holds at the fabric level (a GB200 NVL72 rack),
// otherwise the innermost network domain of its host (the root in a
// cluster without network levels).
func groupDomain(c *topology.Cluster, p *gang.Placement, cl topology.Claim) topology.DomainID {
	if p.Level == topology.LevelFabric && len(cl.GPUs) > 0 {
		if d := c.GPUFabric(cl.GPUs[0].GPU); d != topology.NoDomain {
			return d
		}
	}
	return c.Host(cl.Host).Parent
}

// tightest returns the innermost domain that holds every task of p: the
// innermost tree domain (host, ToR, …, the cluster) that holds every
// task's host, or the accelerator fabric domain that holds every task's
// GPUs when that one is smaller (an NVLink domain of a GB200 rack, an
// HCCS group inside a host).
func tightest(c *topology.Cluster, p *gang.Placement) (topology.Level, topology.DomainID) {
	lv, d := c.LevelCluster(), c.Root()
	if p.Len() == 0 {
		return lv, d
	}
	for at := topology.LevelHost; at < c.LevelCluster(); at++ {
		first := c.HostAt(p.Claims[0].Host, at)
		same := true
		for _, cl := range p.Claims[1:] {
			same = same && c.HostAt(cl.Host, at) == first
		}
		if same {
			lv, d = at, first
			break
		}
	}
	f := topology.NoDomain
	for _, cl := range p.Claims {
		if len(cl.GPUs) == 0 {
			return lv, d // a CPU-only task is in no fabric domain
		}
		for _, gc := range cl.GPUs {
			x := c.GPUFabric(gc.GPU)
			if x == topology.NoDomain || f != topology.NoDomain && x != f {
				return lv, d
			}
			f = x
		}
	}
	if len(c.DomainGPUs(f)) < len(c.DomainGPUs(d)) {
		return topology.LevelFabric, f
	}
	return lv, d
}

func writePlaceText(out io.Writer, c *topology.Cluster, policy string, p *gang.Placement) {
	lv, d := tightest(c, p)
	fmt.Fprintf(out, "placed job %s with %s: %s on %s of %s, all in %s %s\n",
		p.Job, policy, plural(p.Len(), "task"), plural(p.GPUs(), "GPU"), plural(len(p.Hosts()), "host"), c.LevelName(lv), c.DomainName(d))
	if len(p.Relaxed) > 0 {
		var names []string
		for _, lv := range p.Relaxed {
			names = append(names, c.LevelName(lv))
		}
		fmt.Fprintf(out, "preferred levels not honoured: %s\n", strings.Join(names, ", "))
	}
	order := make([]int, p.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ha, hb := p.Claims[a].Host, p.Claims[b].Host
		if da, db := groupDomain(c, p, p.Claims[a]), groupDomain(c, p, p.Claims[b]); da != db {
			return int(da - db)
		}
		return int(ha - hb)
	})
	last := topology.NoDomain
	for _, i := range order {
		cl := p.Claims[i]
		if d := groupDomain(c, p, cl); d != last {
			fmt.Fprintf(out, "%s:\n", c.DomainName(d))
			last = d
		}
		fmt.Fprintf(out, "  %-16s %-22s task %d\n", c.HostName(cl.Host), claimGPUs(c, cl), p.Tasks[i].Index)
	}
}

// claimGPUs renders what a claim takes: "gpu0-3", "gpu2 (500m)", "gpu1 mig 1g.10gb@6".
func claimGPUs(c *topology.Cluster, cl topology.Claim) string {
	if len(cl.GPUs) == 0 {
		return "no GPU"
	}
	var idx []int
	for _, gc := range cl.GPUs {
		idx = append(idx, c.GPU(gc.GPU).Index)
	}
	gc := cl.GPUs[0]
	switch gc.Kind {
	case topology.ClaimShare:
		return fmt.Sprintf("gpu%d (%dm)", idx[0], gc.Milli)
	case topology.ClaimMIG:
		return fmt.Sprintf("gpu%d mig %s@%d", idx[0], c.Model(c.HostModel(cl.Host)).MIGProfiles[gc.Profile].Name, gc.Start)
	}
	return "gpu" + ranges(idx)
}

// ranges renders sorted indices compactly: "0-3,6".
func ranges(xs []int) string {
	slices.Sort(xs)
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(xs[i])+"-"+strconv.Itoa(xs[j]))
		} else {
			parts = append(parts, strconv.Itoa(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

type placeJSON struct {
	Cluster     string           `json:"cluster"`
	Policy      string           `json:"policy"`
	Taken       int              `json:"takenByFill"`
	Free        int              `json:"freeGPUs"`
	Placed      bool             `json:"placed"`
	Level       string           `json:"level,omitempty"`  // of the tightest domain holding every task
	Domain      string           `json:"domain,omitempty"` // that domain
	Relaxed     []string         `json:"relaxed,omitempty"`
	Tasks       []placeTaskJSON  `json:"tasks,omitempty"`
	Message     string           `json:"message,omitempty"`
	Explanation *explanationJSON `json:"explanation,omitempty"`
}

type placeTaskJSON struct {
	Group     int      `json:"group"`
	Index     int      `json:"index"`
	Host      string   `json:"host"`
	Domain    string   `json:"domain"`
	GPUs      []string `json:"gpus,omitempty"`
	Milli     int      `json:"milli,omitempty"`
	MIG       string   `json:"mig,omitempty"`
	MIGStart  int      `json:"migStart,omitempty"`
	CPUMilli  int64    `json:"cpuMilli,omitempty"`
	MemoryMiB int64    `json:"memoryMiB,omitempty"`
}

type explanationJSON struct {
	Verdict   string         `json:"verdict"`
	Tasks     int            `json:"tasks"`
	GPUs      int            `json:"gpus"`
	Milli     int64          `json:"milli"`
	Level     string         `json:"level"`
	Domains   int            `json:"domains"`
	TooSmall  int            `json:"tooSmall"`
	Tried     int            `json:"tried"`
	Largest   int            `json:"largest"`
	Best      string         `json:"best,omitempty"`
	BestFree  int            `json:"bestFree"`
	BestShort int            `json:"bestShort"`
	BestTasks int            `json:"bestTasks"`
	Excluded  map[string]int `json:"excludedHosts,omitempty"`
	Limit     string         `json:"limit"`               // gpu, cpu or memory
	Group     int            `json:"group"`               // the task group a per-task verdict is about, or -1
	TaskNeeds int64          `json:"taskNeeds,omitempty"` // of limit, per task: GPUs, milli-CPU or MiB
	HostHas   int64          `json:"hostHas,omitempty"`   // the most a host has (too large: in all; capacity: free)
	Room      *int           `json:"room,omitempty"`      // capacity by CPU/memory: tasks the free CPU/memory holds
	RoomNeeds *int           `json:"roomNeeds,omitempty"` // ... of the tasks it needs
	Free      int            `json:"freeGPUs"`
	Usable    int            `json:"usableGPUs"`
	Allowed   int            `json:"allowedGPUs"`
}

func writePlaceJSON(out io.Writer, c *topology.Cluster, l *topology.Ledger, f *placeFlags, taken int, p *gang.Placement, why *gang.Explanation) error {
	doc := placeJSON{Cluster: c.Name(), Policy: f.policy, Free: l.FreeGPUs(c.Root()), Placed: why == nil}
	doc.Taken = taken
	if why != nil {
		doc.Message = why.String()
		x := &explanationJSON{
			Verdict: why.Verdict.String(), Tasks: why.Tasks, GPUs: why.GPUs, Milli: why.Milli, Level: why.LevelName,
			Domains: why.Domains, TooSmall: why.TooSmall, Tried: why.Tried, Largest: why.Largest,
			Best: why.Best.Name, BestFree: why.Best.FreeGPUs, BestShort: why.Best.Short, BestTasks: why.Best.Tasks,
			Limit: why.Limit.String(), Group: why.Group, TaskNeeds: why.TaskNeeds, HostHas: why.HostHas,
			Free: why.FreeGPUs, Usable: why.Usable, Allowed: why.Allowed,
		}
		if why.Room >= 0 {
			x.Room, x.RoomNeeds = &why.Room, &why.RoomNeeds
		}
		for i, n := range why.Excluded {
			if n > 0 {
				if x.Excluded == nil {
					x.Excluded = map[string]int{}
				}
				x.Excluded[gang.Reason(i).String()] = n
			}
		}
		doc.Explanation = x
	} else {
		lv, d := tightest(c, p)
		doc.Level, doc.Domain = c.LevelName(lv), c.DomainName(d)
		for _, lv := range p.Relaxed {
			doc.Relaxed = append(doc.Relaxed, c.LevelName(lv))
		}
		for i, cl := range p.Claims {
			t := placeTaskJSON{
				Group: int(p.Tasks[i].Group), Index: int(p.Tasks[i].Index),
				Host: c.HostName(cl.Host), Domain: c.DomainName(groupDomain(c, p, cl)),
				CPUMilli: cl.CPUMilli, MemoryMiB: cl.MemoryMiB,
			}
			for _, gc := range cl.GPUs {
				t.GPUs = append(t.GPUs, c.GPUName(gc.GPU))
				switch gc.Kind {
				case topology.ClaimShare:
					t.Milli = int(gc.Milli)
				case topology.ClaimMIG:
					t.MIG = c.Model(c.HostModel(cl.Host)).MIGProfiles[gc.Profile].Name
					t.MIGStart = int(gc.Start)
				}
			}
			doc.Tasks = append(doc.Tasks, t)
		}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
