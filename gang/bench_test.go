package gang

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

var (
	benchOnce    sync.Once
	benchCluster *topology.Cluster
	benchLedger  *topology.Ledger
)

// benchFixture builds the 100k-GPU cluster of preset h100-100k (12,500
// dgx-h100 hosts, 32 per ToR, 16 ToRs per spine) half full and fragmented:
// each host is, at random (seed 1), busy (40%), idle (40%) or partly used
// (20%, each GPU taken with probability ½), so free GPUs are scattered
// both across ToRs and inside hosts.
func benchFixture() (*topology.Cluster, *topology.Ledger) {
	benchOnce.Do(func() {
		c, err := topology.LoadPreset("h100-100k")
		if err != nil {
			panic(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		l := topology.NewLedger(c)
		for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
			first, n := c.HostGPUs(h)
			x := rng.IntN(10)
			for g := first; g < first+topology.GPUID(n); g++ {
				if x < 4 || x >= 8 && rng.IntN(2) == 0 {
					if err := l.AllocateGPU(g); err != nil {
						panic(err)
					}
				}
			}
		}
		benchCluster, benchLedger = c, l
	})
	return benchCluster, benchLedger
}

func benchJob(tasks, gpus int, level string) *workload.Job {
	j := &workload.Job{ID: "bench", Groups: []workload.TaskGroup{{Count: tasks, GPUs: gpus}}}
	if level != "" {
		j.Topology = []workload.Constraint{{Level: level, Required: true}}
	}
	return j
}

// BenchmarkPlace measures one placement decision on the 100k-GPU fixture:
// Place, then (when it fits) Commit and Undo, so the ledger is the same
// after every op. Infeasible requests measure Place and its Explanation;
// "cold" cases change the ledger's generation before each op (allocate and
// release one GPU), so the explanation cannot reuse its per-generation
// host census. Besides wall time, each reports cpu-ns/op: the CPU time of
// the benchmark's thread per op (Linux), which does not grow when other
// processes share the machine.
func BenchmarkPlace(b *testing.B) {
	c, l := benchFixture()
	cases := []struct {
		name string
		job  *workload.Job
		fits bool
		cold bool
	}{
		{"1gpu", benchJob(1, 1, ""), true, false},
		{"8gpu-host", benchJob(1, 8, ""), true, false},
		{"128gpu-tor-16x8", benchJob(16, 8, "tor"), true, false},
		{"512gpu-spine-64x8", benchJob(64, 8, "spine"), true, false},
		{"512gpu-spine-512x1", benchJob(512, 1, "spine"), true, false},
		{"512gpu-tor-infeasible", benchJob(64, 8, "tor"), false, false},
		{"4096gpu-tor-infeasible", benchJob(512, 8, "tor"), false, false},
		{"4096gpu-tor-infeasible-cold", benchJob(512, 8, "tor"), false, true},
		{"4096gpu-spine-infeasible", benchJob(512, 8, "spine"), false, false},
	}
	for _, policy := range []string{"topology", "best-fit", "first-fit", "worst-fit", "random", "buddy"} {
		for _, tc := range cases {
			b.Run(policy+"/"+tc.name, func(b *testing.B) {
				r, err := NewRequest(c, tc.job)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := New(policy, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var p Placement
				pl.Place(l, r, &p) // size the scratch space outside the timer
				spare := topology.GPUID(-1)
				for g := topology.GPUID(0); spare < 0; g++ {
					if l.GPUIsFree(g) {
						spare = g
					}
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					if tc.cold {
						if err := l.AllocateGPU(spare); err != nil {
							b.Fatal(err)
						}
						if err := l.ReleaseGPU(spare); err != nil {
							b.Fatal(err)
						}
					}
					x := pl.Place(l, r, &p)
					if (x == nil) != tc.fits {
						b.Fatalf("fits=%v: %v", x == nil, x)
					}
					if x != nil {
						continue
					}
					tx, err := Commit(l, &p)
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Undo(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 >= 0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
				if tc.fits && p.Len() != r.Tasks() {
					b.Fatalf("placed %d of %d tasks", p.Len(), r.Tasks())
				}
			})
		}
	}
}

// BenchmarkPlaceOpenb measures one task at a time on the Alibaba openb
// cluster (preset openb: 1,523 hosts, 6,212 GPUs of several models), with
// every GPU taken with probability ½ (seed 3), for the policies that
// delegate to package frag and for native best-fit: Place, Commit, Undo.
// The fgd workload is a fixed mix close to openb's (1 GPU, half a GPU,
// CPU-only, 2, 4 and 8 GPUs).
func BenchmarkPlaceOpenb(b *testing.B) {
	c, err := topology.LoadPreset("openb")
	if err != nil {
		b.Skip("no openb preset:", err)
	}
	l := topology.NewLedger(c)
	rng := rand.New(rand.NewPCG(3, 4))
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
		if rng.IntN(2) == 0 {
			if err := l.AllocateGPU(g); err != nil {
				b.Fatal(err)
			}
		}
	}
	dist := frag.Distribution{Classes: []frag.Class{
		{Task: frag.Task{GPUs: 1, CPUMilli: 8000, MemoryMiB: 30000}, Weight: 47},
		{Task: frag.Task{GPUMilli: 500, CPUMilli: 4000, MemoryMiB: 15000}, Weight: 38},
		{Task: frag.Task{CPUMilli: 4000, MemoryMiB: 8000}, Weight: 13},
		{Task: frag.Task{GPUs: 2, CPUMilli: 16000}, Weight: 1},
		{Task: frag.Task{GPUs: 8, CPUMilli: 64000}, Weight: 1},
	}}
	for _, policy := range []string{"fgd", "dot-product", "gpu-packing", "gpu-clustering", "best-fit", "topology"} {
		for _, tc := range []struct {
			name string
			g    workload.TaskGroup
		}{
			{"1gpu", workload.TaskGroup{GPUs: 1, CPUMilli: 8000, MemoryMiB: 30000}},
			{"share", workload.TaskGroup{GPUMilli: 500, CPUMilli: 4000, MemoryMiB: 15000}},
		} {
			b.Run(policy+"/"+tc.name, func(b *testing.B) {
				pl, err := New(policy, Options{Frag: frag.Options{Distribution: dist}})
				if err != nil {
					b.Fatal(err)
				}
				r, err := NewRequest(c, job("t", 1, tc.g))
				if err != nil {
					b.Fatal(err)
				}
				var p Placement
				pl.Place(l, r, &p)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := threadCPU()
				for i := 0; i < b.N; i++ {
					if x := pl.Place(l, r, &p); x != nil {
						b.Fatal(x)
					}
					tx, err := Commit(l, &p)
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Undo(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if cpu1 := threadCPU(); cpu0 >= 0 && cpu1 >= 0 {
					b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
				}
			})
		}
	}
}

// BenchmarkStranded measures the per-level fragmentation metric on the
// 100k-GPU fixture for ten pending requests of different shapes.
func BenchmarkStranded(b *testing.B) {
	c, l := benchFixture()
	var reqs []*Request
	for _, j := range []*workload.Job{
		benchJob(1, 1, ""), benchJob(1, 2, ""), benchJob(1, 4, ""), benchJob(1, 8, ""),
		benchJob(2, 8, "host"), benchJob(16, 8, "tor"), benchJob(64, 8, "spine"),
		benchJob(4, 4, "tor"), benchJob(8, 1, "nvlink"), benchJob(512, 8, ""),
	} {
		r, err := NewRequest(c, j)
		if err != nil {
			b.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if f := Stranded(l, reqs); len(f) != c.NumLevels() || f[0].Free != l.FreeGPUs(c.Root()) {
			b.Fatalf("%+v", f)
		}
	}
}

// BenchmarkPlaceMultiGroup measures gangs of two groups on the 100k-GPU
// fixture: an MPI-style job (a CPU-only launcher of 32 cores and sixteen
// 8-GPU workers of 16 cores) required in one ToR, which fits; and 21
// 8-GPU workers with 4 smaller workers, all of 120 cores, required in one
// ToR, which fits no ToR: only the ToR with 21 idle hosts passes the
// counting checks, and there the greedy orders and the bounded search
// (searchBudget host checks) fail before the explanation scans the
// hosts (CPU demand: no census); and twelve 8-GPU workers with sixteen
// 1-GPU, 150-core workers in one ToR, which fits none though some 300
// ToRs have the free GPUs and cores for each group: no host can take
// two of its tasks, which the joint count sees before any attempt.
func BenchmarkPlaceMultiGroup(b *testing.B) {
	c, l := benchFixture()
	tor := []workload.Constraint{{Level: "tor", Required: true}}
	for _, tc := range []struct {
		name string
		job  *workload.Job
		fits bool
	}{
		{"mpi-tor", &workload.Job{ID: "mpi", Groups: []workload.TaskGroup{
			{Name: "launcher", Count: 1, CPUMilli: 32000},
			{Name: "worker", Count: 16, GPUs: 8, CPUMilli: 16000},
		}, Topology: tor}, true},
		{"2group-tor-infeasible", &workload.Job{ID: "two", Groups: []workload.TaskGroup{
			{Name: "a", Count: 21, GPUs: 8},
			{Name: "b", Count: 4, GPUs: 1, CPUMilli: 200000},
		}, Topology: tor}, false},
		{"2group-tor-many", &workload.Job{ID: "many", Groups: []workload.TaskGroup{
			{Name: "a", Count: 12, GPUs: 8, CPUMilli: 10000},
			{Name: "b", Count: 16, GPUs: 1, CPUMilli: 150000},
		}, Topology: tor}, false},
	} {
		for _, name := range []string{"topology", "best-fit"} {
			b.Run(name+"/"+tc.name, func(b *testing.B) {
				r, err := NewRequest(c, tc.job)
				if err != nil {
					b.Fatal(err)
				}
				pl, err := New(name, Options{})
				if err != nil {
					b.Fatal(err)
				}
				var p Placement
				pl.Place(l, r, &p)
				if tc.name == "2group-tor-infeasible" && pl.(*policy).budget > 0 {
					b.Fatalf("the search did not spend its budget (%d left)", pl.(*policy).budget)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					x := pl.Place(l, r, &p)
					if (x == nil) != tc.fits {
						b.Fatalf("fits=%v: %v", x == nil, x)
					}
					if x != nil {
						continue
					}
					tx, err := Commit(l, &p)
					if err != nil {
						b.Fatal(err)
					}
					if err := tx.Undo(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
