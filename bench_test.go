package gpusched

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// benchShapes are the job shapes of the benchmark workload: single GPUs
// and shares (most jobs), whole hosts, and multi-host gangs that need one
// ToR.
var benchShapes = []struct {
	weight int
	group  workload.TaskGroup
	tor    bool
}{
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

var benchRuntimes = []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour}

func benchJob(r *rand.Rand, id, q string) workload.Job {
	total := 0
	for _, s := range benchShapes {
		total += s.weight
	}
	k := r.IntN(total)
	i := 0
	for k >= benchShapes[i].weight {
		k -= benchShapes[i].weight
		i++
	}
	j := workload.Job{ID: id, Queue: q, Priority: int32(r.IntN(4)), Groups: []workload.TaskGroup{benchShapes[i].group},
		Runtime: benchRuntimes[r.IntN(len(benchRuntimes))]}
	if benchShapes[i].tor {
		j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
	}
	return j
}

var benchCluster *topology.Cluster

// benchScheduler builds the benchmark fixture: the h100-10k preset
// (1,250 DGX H100 hosts, 10,000 GPUs, 32 hosts per ToR), 20 leaf queues
// (4 organisations × 5 teams, 500 GPUs guaranteed each, the five teams of
// each organisation using strict FIFO with backfill, best-effort FIFO
// twice, priority aging with backfill, and best-effort FIFO), about 90%
// of the GPUs running jobs of the benchmark mix, and pending jobs of the
// same mix spread over the 20 queues.
func benchScheduler(b testing.TB, pending int) (*Scheduler, time.Time) {
	b.Helper()
	if benchCluster == nil {
		c, err := topology.LoadPreset("h100-10k")
		if err != nil {
			b.Fatal(err)
		}
		benchCluster = c
	}
	c := benchCluster
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
		org := queue.Node{Name: fmt.Sprintf("org%d", o), Quotas: []queue.Quota{{Resource: "gpu", Nominal: 2500}}}
		for t := 0; t < 5; t++ {
			name := fmt.Sprintf("org%d-team%d", o, t)
			leaves = append(leaves, name)
			org.Children = append(org.Children, queue.Node{Name: name, Quotas: []queue.Quota{{Resource: "gpu", Nominal: 500}}, Policy: policies[t]})
		}
		cfg.Root.Children = append(cfg.Root.Children, org)
	}
	s, err := New(Config{Cluster: c, Queues: cfg})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// Fill about 90% of the GPUs.
	for i := 0; s.ledger.FreeMilli(c.Root()) > int64(c.NumGPUs())*1000/10; i++ {
		for k := 0; k < 16; k++ {
			j := benchJob(r, fmt.Sprintf("run%05d-%d", i, k), leaves[r.IntN(len(leaves))])
			j.Runtime = time.Duration(1+r.IntN(48)) * 30 * time.Minute
			if err := s.Submit(j, now); err != nil {
				b.Fatal(err)
			}
		}
		d := s.Schedule(now)
		for _, x := range d.Bindings {
			if err := s.Started(x.Job, now); err != nil {
				b.Fatal(err)
			}
		}
		// Drop what did not fit so the pending set below is exact.
		for _, p := range d.Pending {
			_ = s.Cancel(p.Job, now)
		}
		now = now.Add(time.Second)
	}
	for i := 0; i < pending; i++ {
		if err := s.Submit(benchJob(r, fmt.Sprintf("p%05d", i), leaves[i%len(leaves)]), now); err != nil {
			b.Fatal(err)
		}
	}
	return s, now.Add(time.Minute)
}

// BenchmarkScheduleFull times one full cycle over 1,000 and 10,000
// pending jobs on a 10,000-GPU cluster 90% busy: every class is evaluated
// with cold caches. The fixture is rebuilt outside the timer for every
// iteration (use -benchtime=20x: a fixture takes a few hundred ms).
func BenchmarkScheduleFull(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) { benchFull(b, n) })
	}
}

func benchFull(b *testing.B, pending int) {
	b.ReportAllocs()
	var bound, waiting int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, now := benchScheduler(b, pending)
		runtime.GC() // the fixture's garbage is not the cycle's
		b.StartTimer()
		d := s.Schedule(now)
		b.StopTimer()
		bound, waiting = len(d.Bindings), len(d.Pending)
		if bound+waiting != pending || bound == 0 {
			b.Fatalf("bound %d waiting %d", bound, waiting)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(bound), "bound/op")
	b.ReportMetric(float64(waiting), "waiting/op")
}

// BenchmarkScheduleIncremental times the cycle after one job finishes: the
// steady state of a busy cluster with about 1,000 or 10,000 pending jobs.
// Each iteration finishes the running job that ends first (its estimated
// end), then runs a cycle; bindings are started outside the timer.
func BenchmarkScheduleIncremental(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pending=%d", n), func(b *testing.B) { benchIncremental(b, n) })
	}
}

func benchIncremental(b *testing.B, pending int) {
	s, now := benchScheduler(b, pending)
	d := s.Schedule(now)
	for _, x := range d.Bindings {
		_ = s.Started(x.Job, now)
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var bound int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var id string
		var end time.Time
		s.Holding(func(jid string, st JobStatus) bool {
			id, end = jid, st.Started.Add(st.Spec.Runtime)
			return false
		})
		if end.After(now) {
			now = end
		}
		b.StartTimer()
		if err := s.Finished(id, now); err != nil {
			b.Fatal(err)
		}
		d := s.Schedule(now)
		b.StopTimer()
		bound += len(d.Bindings)
		if len(d.Pending) == 0 {
			b.Fatal("the backlog ran out")
		}
		for _, x := range d.Bindings {
			_ = s.Started(x.Job, now)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(bound)/float64(b.N), "bound/op")
}
