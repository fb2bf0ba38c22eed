package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// placeShape is a gang of Tasks × GPUs, optionally required in one domain
// of Level.
type placeShape struct {
	name         string
	tasks, gpus  int
	level        string
	fits         bool
	cold         bool // bump the ledger's generation before every op
	gpuOnly      bool // tasks ask for GPUs only (no CPU or memory)
	brief        bool // explanations at gang.DetailBrief (the Scheduler's)
	emptierToRs  bool // use the fixture with some wholly idle ToRs
	doc          string
	onlyAt100k   bool
	skipAt1k     bool
	policiesOnly bool // one of the shapes every policy runs
	// decided says what must prove an infeasible shape infeasible (zero:
	// not checked); the benchmark checks the explanation agrees.
	decided decidedBy
}

// decidedBy is what proves a gang infeasible.
type decidedBy uint8

const (
	// byCounters: some domain at the level is large enough, but none has
	// enough free GPUs (fragmentation, the freest domain short).
	byCounters decidedBy = iota + 1
	// byHosts: some domains have enough free GPUs, but their hosts cannot
	// hold the tasks (fragmentation after trying domains).
	byHosts
)

// benchMix is the target workload the fragmentation-aware policies (fgd
// and the FGD paper's baselines) are given on the dgx-h100 clusters: mostly
// single GPUs, some shares, 2-, 4- and 8-GPU tasks.
var benchMix = frag.Distribution{Classes: []frag.Class{
	{Task: frag.Task{GPUs: 1, CPUMilli: 8000}, Weight: 40},
	{Task: frag.Task{GPUMilli: 500, CPUMilli: 4000}, Weight: 10},
	{Task: frag.Task{GPUs: 2, CPUMilli: 16000}, Weight: 15},
	{Task: frag.Task{GPUs: 4, CPUMilli: 32000}, Weight: 15},
	{Task: frag.Task{GPUs: 8, CPUMilli: 64000}, Weight: 20},
}}

// placeCases: gang placement (issue 4): the topology policy (the
// Scheduler's default) on every shape and size, every other policy on
// three shapes and every size, and FGD on the Alibaba openb cluster.
func placeCases() []Case {
	shapes := []placeShape{
		{name: "1gpu", tasks: 1, gpus: 1, fits: true, policiesOnly: true, doc: "one 1-GPU task anywhere"},
		{name: "8gpu-host", tasks: 1, gpus: 8, fits: true, policiesOnly: true, doc: "one 8-GPU task (a whole host)"},
		{name: "128gpu-tor", tasks: 16, gpus: 8, level: "tor", fits: true, policiesOnly: true, skipAt1k: true, doc: "16 × 8 GPUs required in one ToR"},
		{name: "256gpu-tor", tasks: 32, gpus: 8, level: "tor", fits: true, emptierToRs: true, doc: "32 × 8 GPUs required in one ToR: a whole ToR of the preset (one ToR in 16 idle)"},
		{name: "512gpu-spine", tasks: 64, gpus: 8, level: "spine", fits: true, skipAt1k: true, doc: "64 × 8 GPUs required in one spine"},
		{name: "512gpu-spine-512x1", tasks: 512, gpus: 1, level: "spine", fits: true, skipAt1k: true, doc: "512 × 1 GPU required in one spine"},
		{name: "4096gpu-any", tasks: 512, gpus: 8, fits: true, onlyAt100k: true, doc: "512 × 8 GPUs anywhere"},
		{name: "4096gpu-tor-infeasible", tasks: 512, gpus: 8, level: "tor", gpuOnly: true, doc: "prove 512 × 8 GPUs (GPUs only) required in one ToR infeasible, with the full explanation; ledger unchanged between ops"},
		{name: "4096gpu-tor-infeasible-cold", tasks: 512, gpus: 8, level: "tor", gpuOnly: true, cold: true, doc: "as 4096gpu-tor-infeasible, the ledger changed before every op (one GPU allocated and released), so nothing cached from the previous op helps; the gang is proven too large by domain sizes"},
		{name: "4096gpu-tor-infeasible-cpu-mem", tasks: 512, gpus: 8, level: "tor", cold: true, doc: "as 4096gpu-tor-infeasible-cold with CPU and memory per task: still proven by domain sizes, no host census"},
		{name: "4096gpu-tor-infeasible-brief", tasks: 512, gpus: 8, level: "tor", cold: true, brief: true, doc: "as 4096gpu-tor-infeasible-cpu-mem with brief explanations (counters only), as the Scheduler asks for them"},
		{name: "3072gpu-spine-infeasible-brief", tasks: 384, gpus: 8, level: "spine", cold: true, brief: true, onlyAt100k: true, decided: byCounters, doc: "prove 384 × 8 GPUs required in one spine infeasible (brief explanations, as the Scheduler asks; the ledger changed before every op; decided by the free-GPU counters, not domain sizes: a spine holds 4,096 GPUs, none has more than 2,181 free)"},
		{name: "3072gpu-spine-infeasible-cold", tasks: 384, gpus: 8, level: "spine", cold: true, onlyAt100k: true, decided: byCounters, doc: "as 3072gpu-spine-infeasible-brief with the full explanation (the hosts excluded per reason, counted over the cluster, as gpusched place prints it)"},
		{name: "1792gpu-spine-infeasible-brief", tasks: 224, gpus: 8, level: "spine", cold: true, brief: true, onlyAt100k: true, decided: byHosts, doc: "prove 224 × 8 GPUs required in one spine infeasible (brief explanations; the ledger changed before every op; neither domain sizes nor free counters decide it: 24 of the 25 spines have 1,792 GPUs free or more, but none more than 221 wholly idle hosts, so the placer looks at each spine's hosts)"},
		{name: "1792gpu-spine-infeasible-cold", tasks: 224, gpus: 8, level: "spine", cold: true, onlyAt100k: true, decided: byHosts, doc: "as 1792gpu-spine-infeasible-brief with the full explanation"},
	}
	var cs []Case
	for _, sh := range shapes {
		for _, sz := range sizes {
			if sh.onlyAt100k && sz.name != "100k" || sh.skipAt1k && sz.name == "1k" {
				continue
			}
			var figs []Figure
			if sz.name == "100k" {
				switch sh.name {
				case "1gpu":
					figs = []Figure{fig("µs/op", 2, 4), fig("allocs/op", 0, 4)}
				case "8gpu-host":
					figs = []Figure{fig("µs/op", 5, 4)}
				case "256gpu-tor":
					f := fig("µs/op", 50, 4)
					f.Note = "the 512-GPU-in-one-ToR target applied to one whole ToR (256 GPUs) of h100-100k"
					figs = []Figure{f}
				case "4096gpu-tor-infeasible-cold":
					f := fig("µs/op", 100, 4)
					f.Note = "proven by domain sizes: a ToR of h100-100k holds 256 GPUs"
					figs = []Figure{f}
				case "3072gpu-spine-infeasible-brief":
					f := fig("µs/op", 100, 4)
					f.Note = "the infeasibility target where domain sizes do not decide it: proven by the spines' free-GPU counters, brief explanations as the Scheduler asks"
					figs = []Figure{f}
				}
			}
			cs = append(cs, placeCase("topology", sh, sz.name, sz.preset, figs))
		}
	}
	// The 512-GPU ToR gang, on the 64-hosts-per-ToR variant.
	f := fig("µs/op", 50, 4)
	f.Note = "on h100-100k-tor64 (64 hosts per ToR): a ToR of h100-100k holds only 256 GPUs"
	cs = append(cs, placeCase("topology", placeShape{name: "512gpu-tor", tasks: 64, gpus: 8, level: "tor", fits: true, emptierToRs: true,
		doc: "64 × 8 GPUs required in one ToR on h100-100k-tor64 (12,500 hosts, 64 per ToR), half full and fragmented, one ToR in 16 idle"},
		"100k-tor64", "", []Figure{f}))
	for _, pol := range gang.PolicyNames() {
		if pol == "topology" {
			continue
		}
		for _, sh := range shapes {
			if !sh.policiesOnly {
				continue
			}
			for _, sz := range sizes {
				if sh.skipAt1k && sz.name == "1k" {
					continue
				}
				cs = append(cs, placeCase(pol, sh, sz.name, sz.preset, nil))
			}
		}
	}
	cs = append(cs, Case{
		Name:      "Place/fgd/openb-task",
		Doc:       "FGD (through the gang placer) for one task of the openb default trace on the openb cluster (6,212 GPUs), half its GPUs taken; tasks cycle through 1,024 drawn from the trace",
		BenchTime: "1s", Figures: []Figure{fig("µs/op", 50, 4)},
		F: benchPlaceOpenb,
	})
	return cs
}

func placeCase(policy string, sh placeShape, size, presetName string, figs []Figure) Case {
	name := fmt.Sprintf("Place/%s/%s/%s", policy, sh.name, size)
	doc := fmt.Sprintf("%s: %s on %s, half full and fragmented; Place, then Commit and Undo when it fits", policy, sh.doc, presetName)
	if presetName == "" {
		doc = policy + ": " + sh.doc + "; Place, then Commit and Undo"
	}
	return Case{
		Name: name, Doc: doc, Size: sizeClass(size), BenchTime: "1s", Figures: figs,
		F: func(b *testing.B) {
			var c *topology.Cluster
			var l *topology.Ledger
			switch {
			case presetName == "":
				c = tor64(b)
				l = fragmented(b, "tor64-idle16", c, 16)
			case sh.emptierToRs:
				c = preset(b, presetName)
				l = fragmented(b, presetName+"-idle16", c, 16)
			default:
				c = preset(b, presetName)
				l = fragmented(b, presetName, c, 0)
			}
			benchPlace(b, l, policy, sh)
		},
	}
}

// sizeClass maps a case's size suffix to its Size ("100k-tor64" → "100k").
func sizeClass(s string) string {
	if len(s) >= 4 && s[:4] == "100k" {
		return "100k"
	}
	return s
}

func benchPlace(b *testing.B, l *topology.Ledger, policy string, sh placeShape) {
	c := l.Cluster()
	j := &workload.Job{ID: "bench", Groups: []workload.TaskGroup{{Count: sh.tasks, GPUs: sh.gpus, CPUMilli: 1000, MemoryMiB: 1024}}}
	if sh.gpuOnly {
		j.Groups[0].CPUMilli, j.Groups[0].MemoryMiB = 0, 0
	}
	if sh.level != "" {
		j.Topology = []workload.Constraint{{Level: sh.level, Required: true}}
	}
	r, err := gang.NewRequest(c, j)
	if err != nil {
		fatal(b, err)
	}
	opts := gang.Options{Frag: frag.Options{Distribution: benchMix}}
	if sh.brief {
		opts.Explain = gang.DetailBrief
	}
	pl, err := gang.New(policy, opts)
	if err != nil {
		fatal(b, err)
	}
	var p gang.Placement
	if x := pl.Place(l, r, &p); (x == nil) != sh.fits { // sizes the scratch space outside the timer
		fatalf(b, "%s on %s: fits=%v, want %v: %v", sh.name, c.Name(), x == nil, sh.fits, x)
	}
	spare := spareGPU(b, l)
	gen := l.Generation()
	b.ReportAllocs()
	for b.Loop() {
		if sh.cold {
			if err := l.AllocateGPU(spare); err != nil {
				fatal(b, err)
			}
			if err := l.ReleaseGPU(spare); err != nil {
				fatal(b, err)
			}
		}
		x := pl.Place(l, r, &p)
		if (x == nil) != sh.fits {
			fatalf(b, "fits=%v: %v", x == nil, x)
		}
		if x != nil {
			if x.Verdict == 0 {
				fatal(b, "explanation without a verdict")
			}
			checkDecided(b, sh, x)
			continue
		}
		tx, err := gang.Commit(l, &p)
		if err != nil {
			fatal(b, err)
		}
		if err := tx.Undo(); err != nil {
			fatal(b, err)
		}
	}
	if sh.fits && p.Len() != r.Tasks() {
		fatalf(b, "placed %d of %d tasks", p.Len(), r.Tasks())
	}
	if !sh.cold && l.Generation() == gen && l.Check() != nil {
		fatal(b, l.Check())
	}
}

// checkDecided fails the benchmark when an infeasible shape's explanation
// does not say what sh.decided says must prove it.
func checkDecided(b *testing.B, sh placeShape, x *gang.Explanation) {
	switch sh.decided {
	case byCounters:
		need := sh.tasks * sh.gpus
		if x.Verdict != gang.VerdictFragmentation || x.Largest < need || x.Best.FreeGPUs >= need || x.Tried != 0 {
			fatalf(b, "%s: want fragmentation, the largest domain ≥ %d GPUs, the freest one short: %+v", sh.name, need, *x)
		}
	case byHosts:
		if x.Verdict != gang.VerdictFragmentation || x.Tried == 0 {
			fatalf(b, "%s: want fragmentation after trying domains with enough free GPUs: %+v", sh.name, *x)
		}
	}
}

// openbJobs returns the jobs of the embedded openb default trace, read
// once for every fixture that needs them.
func openbJobs(b testing.TB) []trace.Job {
	return cached(b, "openb-jobs", func() ([]trace.Job, error) {
		jobs, _, err := trace.ReadOpenB(data.OpenBDefault(), trace.OpenBOptions{File: data.OpenBDefaultName})
		return jobs, err
	})
}

// openbFixture is the openb cluster with every GPU taken with probability
// ½ (PCG seed 3, 4), the requests of 1,024 tasks drawn from the embedded
// openb default trace, and FGD's workload learned from that trace.
type openbFixture struct {
	c    *topology.Cluster
	l    *topology.Ledger
	reqs []*gang.Request
	dist frag.Distribution
}

func openb(b testing.TB) *openbFixture {
	return cached(b, "openb-half", func() (*openbFixture, error) {
		c, err := topology.LoadPreset("openb")
		if err != nil {
			return nil, err
		}
		jobs := openbJobs(b)
		var tasks []frag.Task
		for _, j := range jobs {
			for gi := range j.Spec.Groups {
				t, err := frag.TaskFor(c, &j.Spec.Groups[gi])
				if err != nil {
					return nil, err
				}
				tasks = append(tasks, t)
			}
		}
		dist, err := frag.Learn(tasks, frag.LearnOptions{})
		if err != nil {
			return nil, err
		}
		l := topology.NewLedger(c)
		rng := rand.New(rand.NewPCG(3, 4))
		for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
			if rng.IntN(2) == 0 {
				if err := l.AllocateGPU(g); err != nil {
					return nil, err
				}
			}
		}
		f := &openbFixture{c: c, l: l, dist: dist}
		for range 1024 {
			j := jobs[rng.IntN(len(jobs))].Spec
			r, err := gang.NewRequest(c, &j)
			if err != nil {
				return nil, err
			}
			f.reqs = append(f.reqs, r)
		}
		return f, nil
	})
}

func benchPlaceOpenb(b *testing.B) {
	f := openb(b)
	pl, err := gang.New("fgd", gang.Options{Frag: frag.Options{Distribution: f.dist}})
	if err != nil {
		fatal(b, err)
	}
	var p gang.Placement
	for _, r := range f.reqs[:64] { // warm the per-shape caches outside the timer
		pl.Place(f.l, r, &p)
	}
	b.ReportAllocs()
	i, placed := 0, 0
	for b.Loop() {
		r := f.reqs[i&1023]
		i++
		if x := pl.Place(f.l, r, &p); x != nil {
			continue
		}
		placed++
		tx, err := gang.Commit(f.l, &p)
		if err != nil {
			fatal(b, err)
		}
		if err := tx.Undo(); err != nil {
			fatal(b, err)
		}
	}
	if placed == 0 {
		fatal(b, "no task placed")
	}
	b.ReportMetric(float64(placed)/float64(b.N), "placed/op")
}
