package frag

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// smallCluster has three hosts on one flat network:
//
//	h0: 8 × A, 64 cores, 256 GiB
//	h1: 2 × B, 32 cores, 128 GiB
//	h2: 4 × A, 16 cores,  64 GiB
func smallCluster(t testing.TB) *topology.Cluster {
	t.Helper()
	spec := topology.Spec{
		Version:      topology.SpecVersion,
		Name:         "small",
		Accelerators: []topology.AcceleratorSpec{{Model: "A"}, {Model: "B"}},
		Templates: []topology.HostTemplate{
			{Name: "big", CPUMilli: 64000, MemoryMiB: 262144, Accelerator: "A", GPUs: 8},
			{Name: "pair", CPUMilli: 32000, MemoryMiB: 131072, Accelerator: "B", GPUs: 2},
			{Name: "quad", CPUMilli: 16000, MemoryMiB: 65536, Accelerator: "A", GPUs: 4},
		},
		Hosts: []topology.HostGroup{{Name: "h0", Template: "big"}, {Name: "h1", Template: "pair"}, {Name: "h2", Template: "quad"}},
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// smallLedger occupies smallCluster: h0 GPU0 holds a 600-milli share
// (400 free); h2 GPU0 is held whole and GPU1 holds a 200-milli share
// (800 free).
func smallLedger(t testing.TB, c *topology.Cluster) *topology.Ledger {
	t.Helper()
	l := topology.NewLedger(c)
	g0, _ := c.HostGPUs(0)
	g2, _ := c.HostGPUs(2)
	err := l.Allocate(
		topology.Claim{Host: 0, GPUs: []topology.GPUClaim{{GPU: g0, Kind: topology.ClaimShare, Milli: 600}}},
		topology.Claim{Host: 2, GPUs: []topology.GPUClaim{{GPU: g2, Kind: topology.ClaimWhole}}},
		topology.Claim{Host: 2, GPUs: []topology.GPUClaim{{GPU: g2 + 1, Kind: topology.ClaimShare, Milli: 200}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMeasureNode(t *testing.T) {
	c := smallCluster(t)
	l := smallLedger(t, c)
	a, _ := c.ModelByName("A")
	b, _ := c.ModelByName("B")
	d := Distribution{Classes: []Class{
		{Task: Task{GPUMilli: 500, CPUMilli: 4000}, Weight: 1},
		{Task: Task{GPUs: 1, CPUMilli: 14000}, Weight: 1},
		{Task: Task{CPUMilli: 2000}, Weight: 2},
	}}
	m, err := NewMeasure(c, d)
	if err != nil {
		t.Fatal(err)
	}
	// h2: frees [0, 800, 1000, 1000], total 2800, 16 cores.
	// share 500: fits; unusable = none below 500        → 0
	// 1 GPU, 14 cores: fits; unusable = the 800          → 800
	// CPU-only: cannot use GPUs                          → 2800
	// F = .25·0 + .25·800 + .5·2800 = 1600
	if got := m.Node(l, 2); got != 1600 {
		t.Errorf("h2: %v, want 1600", got)
	}
	// Take 4 cores on h2: the 14-core class no longer fits.
	// F = .25·0 + .25·2800 + .5·2800 = 2100
	if err := l.Allocate(topology.Claim{Host: 2, CPUMilli: 4000}); err != nil {
		t.Fatal(err)
	}
	if got := m.Node(l, 2); got != 2100 {
		t.Errorf("h2 with 12 cores: %v, want 2100", got)
	}
	// h0: frees [400, 1000×7], total 7400; share and 1-GPU classes leave
	// the 400 unusable: F = .25·400 + .25·400 + .5·7400 = 3900.
	if got := m.Node(l, 0); got != 3900 {
		t.Errorf("h0: %v, want 3900", got)
	}
	// Model constraints: a class for B only cannot use h0 (model A) at all.
	m2, err := NewMeasure(c, Distribution{Classes: []Class{{Task: Task{GPUs: 1, Models: []topology.ModelID{b}}, Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Node(l, 0); got != 7400 {
		t.Errorf("h0 for a B-only class: %v, want 7400", got)
	}
	m3, _ := NewMeasure(c, Distribution{Classes: []Class{{Task: Task{GPUs: 1, Models: []topology.ModelID{a}}, Weight: 1}}})
	if got := m3.Node(l, 0); got != 400 {
		t.Errorf("h0 for an A-only class: %v, want 400", got)
	}
	// A draining host has nothing free, so nothing fragmented.
	if err := l.SetHostHealth(0, topology.Draining); err != nil {
		t.Fatal(err)
	}
	if got := m.Node(l, 0); got != 0 {
		t.Errorf("draining h0: %v, want 0", got)
	}
	// Cluster: h0 0 + h1 (frees [1000,1000], 32 cores: F = 0+0+.5·2000 = 1000) + h2 2100.
	f := m.Cluster(l)
	if f.Frag != 3100 || f.Free != 2000+2800 {
		t.Errorf("cluster %+v, want frag 3100 free 4800", f)
	}
	if r := f.Ratio(); math.Abs(r-3100.0/4800) > 1e-12 {
		t.Errorf("ratio %v", r)
	}
}

func TestLearn(t *testing.T) {
	a := Task{GPUs: 1, CPUMilli: 8000, MemoryMiB: 100}
	a2 := a
	a2.MemoryMiB = 200 // differs only in memory
	b := Task{GPUMilli: 500, CPUMilli: 4000}
	cpu := Task{CPUMilli: 2000}
	d := Task{GPUMilli: 250, CPUMilli: 1000}
	var tasks []Task
	for range 3 {
		tasks = append(tasks, a, a2) // 6 of class a
	}
	for range 3 {
		tasks = append(tasks, b)
	}
	tasks = append(tasks, cpu, d) // 11 tasks

	dist, err := Learn(tasks, LearnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 95% of 11 is 10.45: a (6) + b (3) + one of the singletons (10) is
	// short, so all four classes stay; singletons tie on count and come by
	// demand: the CPU-only one (0 milli) before the 250 share.
	if len(dist.Classes) != 4 {
		t.Fatalf("%d classes: %+v", len(dist.Classes), dist.Classes)
	}
	want := []struct {
		t Task
		w float64
	}{{Task{GPUs: 1, CPUMilli: 8000}, 6.0 / 11}, {b, 3.0 / 11}, {cpu, 1.0 / 11}, {d, 1.0 / 11}}
	for i, w := range want {
		got := dist.Classes[i]
		if got.Task.GPUs != w.t.GPUs || got.Task.GPUMilli != w.t.GPUMilli || got.Task.CPUMilli != w.t.CPUMilli || got.Task.MemoryMiB != 0 || math.Abs(got.Weight-w.w) > 1e-12 {
			t.Errorf("class %d: %+v, want %+v weight %v", i, got, w.t, w.w)
		}
	}
	// 80% of 11 is 8.8: a and b (9) suffice, renormalised to 6/9 and 3/9.
	dist, _ = Learn(tasks, LearnOptions{Coverage: 0.8})
	if len(dist.Classes) != 2 || math.Abs(dist.Classes[0].Weight-6.0/9) > 1e-12 {
		t.Errorf("coverage 0.8: %+v", dist.Classes)
	}
	// Memory kept: a and a2 are two classes of 3.
	dist, _ = Learn(tasks, LearnOptions{Coverage: 1, KeepMemory: true})
	if len(dist.Classes) != 5 {
		t.Errorf("with memory: %+v", dist.Classes)
	}
	// Without CPU-only tasks.
	dist, _ = Learn(tasks, LearnOptions{Coverage: 1, ExcludeCPUOnly: true})
	for _, c := range dist.Classes {
		if c.Task.CPUOnly() {
			t.Errorf("CPU-only class kept: %+v", dist.Classes)
		}
	}
	for _, bad := range []LearnOptions{{Coverage: 1.5}, {Coverage: -1}} {
		if _, err := Learn(tasks, bad); !errors.Is(err, ErrBadDistribution) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := Learn(nil, LearnOptions{}); !errors.Is(err, ErrBadDistribution) {
		t.Errorf("no tasks: %v", err)
	}
	if _, err := Learn([]Task{{GPUs: -1}}, LearnOptions{}); !errors.Is(err, ErrBadTask) {
		t.Errorf("bad task: %v", err)
	}
}

func TestDistributionValidate(t *testing.T) {
	for _, d := range []Distribution{
		{},
		{Classes: []Class{{Task: Task{GPUs: 1}, Weight: 0}}},
		{Classes: []Class{{Task: Task{GPUs: 1}, Weight: math.Inf(1)}}},
		{Classes: []Class{{Task: Task{GPUs: 1}, Weight: math.NaN()}}},
		{Classes: []Class{{Task: Task{GPUMilli: 1000}, Weight: 1}}},
	} {
		if err := d.Validate(); !errors.Is(err, ErrBadDistribution) {
			t.Errorf("%+v: %v", d, err)
		}
	}
}

func TestTaskValidateAndTaskFor(t *testing.T) {
	for _, bad := range []Task{{GPUs: -1}, {GPUs: 257}, {GPUMilli: 1000}, {GPUMilli: -5}, {GPUs: 1, GPUMilli: 5}, {CPUMilli: -1}, {MemoryMiB: -1}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadTask) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	c := smallCluster(t)
	a, _ := c.ModelByName("A")
	tk, err := TaskFor(c, &workload.TaskGroup{Count: 1, GPUs: 2, CPUMilli: 3, MemoryMiB: 4, Models: []string{"Z", "A", "A"}})
	if err != nil || tk.GPUs != 2 || tk.CPUMilli != 3 || tk.MemoryMiB != 4 || len(tk.Models) != 1 || tk.Models[0] != a {
		t.Errorf("%+v %v", tk, err)
	}
	// Only unknown models: fits nowhere.
	tk, _ = TaskFor(c, &workload.TaskGroup{Count: 1, GPUMilli: 300, Models: []string{"Z"}})
	if _, ok := mustPolicy(t, BestFit).Pick(topology.NewLedger(c), tk, Scope{}); ok {
		t.Errorf("task for an unknown model placed")
	}
	// CPU-only tasks ignore models.
	tk, _ = TaskFor(c, &workload.TaskGroup{Count: 1, CPUMilli: 1, Models: []string{"Z"}})
	if tk.Models != nil {
		t.Errorf("CPU-only task kept models %v", tk.Models)
	}
	if _, err := TaskFor(c, &workload.TaskGroup{Count: 1, MIGProfile: "1g.10gb"}); !errors.Is(err, ErrBadTask) {
		t.Errorf("MIG: %v", err)
	}
}

func mustPolicy(t testing.TB, name string) Policy {
	t.Helper()
	p, err := NewPolicy(name, Options{Rand: rand.New(rand.NewPCG(1, 1)), Distribution: Distribution{Classes: []Class{{Task: Task{GPUs: 1}, Weight: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBaselineChoices checks each baseline's choice on smallLedger against
// scores worked out by hand (C = 64000, G = 8000).
func TestBaselineChoices(t *testing.T) {
	c := smallCluster(t)
	gpu := func(h topology.HostID, i int) topology.GPUID { f, _ := c.HostGPUs(h); return f + topology.GPUID(i) }
	share := Task{GPUMilli: 300, CPUMilli: 4000}
	two := Task{GPUs: 2, CPUMilli: 8000}
	cpuOnly := Task{CPUMilli: 20000}
	cases := []struct {
		policy string
		task   Task
		host   topology.HostID
		gpus   []topology.GPUID
		why    string
	}{
		// left = ½(cpuFree−cpu)/C + ½(gpuFree−gpu)/G: h0 .9125, h1 .325, h2 .25;
		// best-fit ⌊100(1−left)⌋ = 8, 67, 75 → h2, on its fullest GPU that
		// holds 300 (GPU1, 800 free).
		{BestFit, share, 2, []topology.GPUID{gpu(2, 1)}, "h2 scores 75"},
		// worst-fit ⌊100·left⌋ = 91, 32, 25 → h0, on its emptiest GPU (GPU1).
		{WorstFit, share, 0, []topology.GPUID{gpu(0, 1)}, "h0 scores 91"},
		{FirstFit, share, 0, []topology.GPUID{gpu(0, 0)}, "first host, first GPU with 300 free"},
		// packing: h0 shares GPU0 (400 free): 100−⌊40/10⌋ = 96; h1 unused:
		// 33−2 = 31; h2 GPU1 (800 free): 100−8 = 92.
		{GPUPacking, share, 0, []topology.GPUID{gpu(0, 0)}, "h0 scores 96"},
		// dot = ½(cpuFree·cpu/C² + gpuFree·gpu/G²): h0 .0486, h1 .0203, h2
		// .0144 → ⌊100(1−dot)⌋ = 95, 97, 98 → h2.
		{DotProduct, share, 2, []topology.GPUID{gpu(2, 1)}, "h2 scores 98"},
		// clustering: h0 runs only shares: 75 + ⌊25·600/8000⌋ = 76; h1
		// unused: 25 + 18 = 43; h2 runs shares and a 1-GPU task: 50 + 16 = 66.
		{GPUClustering, share, 0, []topology.GPUID{gpu(0, 0)}, "h0 scores 76"},
		// Two whole GPUs: best-fit left h0 .8125, h1 .1875, h2 .1125 → h2,
		// its two free GPUs.
		{BestFit, two, 2, []topology.GPUID{gpu(2, 2), gpu(2, 3)}, "h2 scores 88"},
		// packing: h0 48, h1 31, h2 48 → tie, lowest HostID.
		{GPUPacking, two, 0, []topology.GPUID{gpu(0, 1), gpu(0, 2)}, "h0 and h2 tie at 48"},
		// CPU-only, 20 cores: h2 has 16. Packing scores all alike → h0;
		// best-fit h0 ⌊100(1−.80625)⌋ = 19, h1 ⌊100(1−.21875)⌋ = 78 → h1.
		{GPUPacking, cpuOnly, 0, nil, "all score 0"},
		{BestFit, cpuOnly, 1, nil, "h1 scores 78"},
	}
	for _, tc := range cases {
		t.Run(tc.policy+"/"+tc.why, func(t *testing.T) {
			l := smallLedger(t, c)
			cl, ok := mustPolicy(t, tc.policy).Pick(l, tc.task, Scope{})
			if !ok || cl.Host != tc.host || cl.CPUMilli != tc.task.CPUMilli || len(cl.GPUs) != len(tc.gpus) {
				t.Fatalf("got %+v %v, want host %d GPUs %v", cl, ok, tc.host, tc.gpus)
			}
			for i, g := range tc.gpus {
				if cl.GPUs[i].GPU != g {
					t.Errorf("GPU %d: %d, want %d", i, cl.GPUs[i].GPU, g)
				}
			}
			if err := l.Allocate(cl); err != nil {
				t.Errorf("claim refused: %v", err)
			}
		})
	}
}

func TestPickFiltersAndScope(t *testing.T) {
	c := smallCluster(t)
	b, _ := c.ModelByName("B")
	share := Task{GPUMilli: 300, CPUMilli: 4000}
	p := mustPolicy(t, BestFit)
	l := smallLedger(t, c)
	// Only B: h1.
	if cl, ok := p.Pick(l, Task{GPUMilli: 300, Models: []topology.ModelID{b}}, Scope{}); !ok || cl.Host != 1 {
		t.Errorf("model B: %+v %v", cl, ok)
	}
	// Allow leaves out h2 (the best): h1 is next (67).
	if cl, ok := p.Pick(l, share, Scope{Allow: func(h topology.HostID) bool { return h != 2 }}); !ok || cl.Host != 1 {
		t.Errorf("allow: %+v %v", cl, ok)
	}
	// Within h0's host domain.
	if cl, ok := p.Pick(l, share, Scope{Within: c.HostDomain(0)}); !ok || cl.Host != 0 {
		t.Errorf("within h0: %+v %v", cl, ok)
	}
	// Within h0's NUMA node (all its GPUs): same choice as the host.
	numa := c.DomainChildren(c.HostDomain(0))[0]
	if cl, ok := p.Pick(l, share, Scope{Within: numa}); !ok || cl.Host != 0 || cl.GPUs[0].GPU != c.DomainGPUs(numa)[0] {
		t.Errorf("within h0's NUMA node: %+v %v", cl, ok)
	}
	// Memory: 100 GiB only fits h0 and h1; CPU 40 cores only h0.
	if cl, ok := p.Pick(l, Task{GPUMilli: 300, MemoryMiB: 100 << 10}, Scope{}); !ok || cl.Host == 2 {
		t.Errorf("memory: %+v %v", cl, ok)
	}
	if cl, ok := p.Pick(l, Task{GPUMilli: 300, CPUMilli: 40000}, Scope{}); !ok || cl.Host != 0 {
		t.Errorf("cpu: %+v %v", cl, ok)
	}
	// Health: h2 draining, then h2's GPU1 failed with h2 healthy again.
	if err := l.SetHostHealth(2, topology.Draining); err != nil {
		t.Fatal(err)
	}
	if cl, ok := p.Pick(l, share, Scope{}); !ok || cl.Host == 2 {
		t.Errorf("draining h2 chosen: %+v", cl)
	}
	if err := l.SetHostHealth(2, topology.Healthy); err != nil {
		t.Fatal(err)
	}
	f2, _ := c.HostGPUs(2)
	if err := l.SetGPUHealth(f2+1, topology.Failed); err != nil {
		t.Fatal(err)
	}
	if cl, ok := p.Pick(l, share, Scope{}); !ok || cl.GPUs[0].GPU == f2+1 {
		t.Errorf("failed GPU chosen: %+v", cl)
	}
	// Too big for anyone, and invalid tasks, and a domain out of range.
	for _, tk := range []Task{{GPUs: 9}, {GPUMilli: 1000}, {CPUMilli: -1}} {
		if cl, ok := p.Pick(l, tk, Scope{}); ok {
			t.Errorf("%+v placed: %+v", tk, cl)
		}
	}
	if _, ok := p.Pick(l, share, Scope{Within: topology.DomainID(c.NumDomains())}); ok {
		t.Errorf("placed in a domain out of range")
	}
}

func TestFGDCompletesAGPU(t *testing.T) {
	c := smallCluster(t)
	l := topology.NewLedger(c)
	g1, _ := c.HostGPUs(1)
	// h1 (2 × B): GPU0 holds a 500 share.
	if err := l.Allocate(topology.Claim{Host: 1, GPUs: []topology.GPUClaim{{GPU: g1, Kind: topology.ClaimShare, Milli: 500}}}); err != nil {
		t.Fatal(err)
	}
	b, _ := c.ModelByName("B")
	d := Distribution{Classes: []Class{{Task: Task{GPUMilli: 500}, Weight: 1}, {Task: Task{GPUs: 1}, Weight: 1}}}
	for _, sc := range []Scoring{ScorePaper, ScoreExact} {
		p, err := NewPolicy(FGD, Options{Distribution: d, Scoring: sc})
		if err != nil {
			t.Fatal(err)
		}
		// On h1, frees [500, 1000], F = ½·0 + ½·500 = 250. A 500 share on
		// GPU0 leaves [0, 1000]: F = 0 (ΔF −250); on GPU1 it leaves [500,
		// 500]: no whole GPU, F = ½·1000 = 500 (ΔF +250).
		cl, ok := p.Pick(l, Task{GPUMilli: 500, Models: []topology.ModelID{b}}, Scope{})
		if !ok || cl.Host != 1 || cl.GPUs[0].GPU != g1 {
			t.Errorf("%v: %+v %v", sc, cl, ok)
		}
	}
}

func TestNewPolicyErrors(t *testing.T) {
	if _, err := NewPolicy("tetris", Options{}); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := NewPolicy(FGD, Options{}); !errors.Is(err, ErrBadDistribution) {
		t.Errorf("fgd without distribution: %v", err)
	}
	if _, err := NewPolicy(Random, Options{}); err == nil {
		t.Errorf("random without Rand")
	}
	if _, err := NewPolicy(BestFit, Options{TieBreak: TieShuffled}); err == nil {
		t.Errorf("shuffled ties without Rand")
	}
	if _, err := NewPolicy(BestFit, Options{TieBreak: 9}); err == nil {
		t.Errorf("bad tie-break")
	}
	if _, err := NewPolicy(BestFit, Options{Scoring: 9}); err == nil {
		t.Errorf("bad scoring")
	}
	for _, n := range PolicyNames() {
		p := mustPolicy(t, n)
		if s, ok := p.(interface{ Name() string }); !ok || s.Name() != n {
			t.Errorf("%s: name %v", n, p)
		}
		if _, ok := p.(Resetter); !ok {
			t.Errorf("%s is not a Resetter", n)
		}
	}
	if got := PaperPolicies(); len(got) != 6 || got[0] != FGD || got[5] != Random {
		t.Errorf("paper policies %v", got)
	}
}

func TestClusteringTracker(t *testing.T) {
	c := smallCluster(t)
	l := topology.NewLedger(c)
	p := mustPolicy(t, GPUClustering)
	tr := p.(Tracker)
	// A 1-GPU task on empty cluster: all tier 25+base; base = ⌊25(8000−free)/8000⌋:
	// h0 0, h1 18, h2 12 → h1.
	one := Task{GPUs: 1}
	cl, ok := p.Pick(l, one, Scope{})
	if !ok || cl.Host != 1 {
		t.Fatalf("%+v", cl)
	}
	if err := l.Allocate(cl); err != nil {
		t.Fatal(err)
	}
	tr.Allocated(cl, one)
	// Another 1-GPU task: h1 runs only 1-GPU tasks: 75 + ⌊25·7000/8000⌋ = 96.
	if cl2, _ := p.Pick(l, one, Scope{}); cl2.Host != 1 {
		t.Errorf("same kind not clustered: %+v", cl2)
	}
	// A share avoids h1 (another kind): h1 ⌊25·7000/8000⌋ = 21 < h2's 25+12 = 37.
	if cl2, _ := p.Pick(l, Task{GPUMilli: 100}, Scope{}); cl2.Host != 2 {
		t.Errorf("share: %+v", cl2)
	}
	// Once released, h1 is unused again.
	if err := l.Release(cl); err != nil {
		t.Fatal(err)
	}
	tr.Released(cl, one)
	if cl2, _ := p.Pick(l, Task{GPUMilli: 100}, Scope{}); cl2.Host != 1 {
		t.Errorf("after release: %+v", cl2)
	}
	p.(Resetter).Reset()
	if cl2, _ := p.Pick(l, one, Scope{}); cl2.Host != 1 {
		t.Errorf("after reset: %+v", cl2)
	}
}

// TestClusteringTrialLeavesNoTrace: a task reported allocated and then
// released (a trial placement taken back) on a host whose other tasks
// were never reported leaves gpu-clustering reading that host from the
// ledger again, as a fresh policy does.
func TestClusteringTrialLeavesNoTrace(t *testing.T) {
	c := smallCluster(t)
	l := topology.NewLedger(c)
	// Unreported 2-GPU tasks on every host.
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		first, _ := c.HostGPUs(h)
		if err := l.Allocate(topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: first}, {GPU: first + 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	fresh := mustPolicy(t, GPUClustering)
	want, ok := fresh.Pick(l, Task{GPUs: 2}, Scope{})
	if !ok {
		t.Fatal("no host for 2 GPUs")
	}
	// A 1-GPU trial on the host a fresh policy picks for the next 2-GPU
	// task, taken back.
	used := mustPolicy(t, GPUClustering)
	one := Task{GPUs: 1}
	used.Pick(l, one, Scope{}) // it sees the cluster
	first, _ := c.HostGPUs(want.Host)
	cl := topology.Claim{Host: want.Host, GPUs: []topology.GPUClaim{{GPU: first + 2}}}
	used.(Tracker).Allocated(cl, one)
	used.(Tracker).Released(cl, one)
	for _, task := range []Task{{GPUs: 2}, one, {GPUMilli: 300}, {GPUs: 4}} {
		a, okA := used.Pick(l, task, Scope{})
		b, okB := fresh.Pick(l, task, Scope{})
		if okA != okB || !reflect.DeepEqual(a, b) {
			t.Errorf("%+v: used %+v, fresh %+v", task, a, b)
		}
	}
}
