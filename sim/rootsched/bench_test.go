package rootsched_test

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// BenchmarkPhilly replays the full Philly trace (82,247 jobs) on the
// 2,816-GPU Philly cluster (352 hosts of 8 GPUs) with one queue per
// virtual cluster guaranteed its nodes × 8 GPUs (philly_vc.csv), through
// the root Scheduler with the default (topology) placer.
func BenchmarkPhilly(b *testing.B) {
	f, err := os.Open("../../../shared/data/philly/philly.csv")
	if err != nil {
		b.Skip("../shared/data/philly not present: ", err)
	}
	r, err := trace.NewPhillyCSV(f, trace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	jobs, err := trace.Collect(r)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	vf, err := os.Open("../../../shared/data/philly/philly_vc.csv")
	if err != nil {
		b.Fatal(err)
	}
	vcs, err := trace.ReadVCs(vf, 8, trace.Options{})
	vf.Close()
	if err != nil {
		b.Fatal(err)
	}
	c := simtest.Cluster(b, sim.PhillyCluster)
	qs := rootsched.VCQueues(vcs, rootsched.Tenants(jobs), queue.Policy{})
	b.ResetTimer()
	defer reportCPU(b)()
	for range b.N {
		b.StopTimer()
		js := append([]trace.Job(nil), jobs...)
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: qs})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res := simtest.Run(b, sim.Config{Cluster: c, Scheduler: s, Tenants: rootsched.VCTenants(vcs)}, js)
		if res.Summary.Jobs.Completed != len(jobs) {
			b.Fatalf("%+v", res.Summary.Jobs)
		}
	}
}

// BenchmarkSynthetic1M replays a synthetic trace of 1M jobs (Philly-like
// sizes, log-normal run times, 4 tenants, 90% offered load) on 100k GPUs
// (12,500 DGX H100, preset h100-100k) through the root Scheduler, and
// reports the Go heap reserved at the end (peak RSS: run under
// /usr/bin/time -v). GPUSCHED_BENCH_JOBS overrides the job count.
func BenchmarkSynthetic1M(b *testing.B) {
	c, err := topology.LoadPreset("h100-100k")
	if err != nil {
		b.Fatal(err)
	}
	tenants := []trace.Weighted[string]{{Value: "pretrain", Weight: 1}, {Value: "finetune", Weight: 2}, {Value: "eval", Weight: 3}, {Value: "research", Weight: 4}}
	syn := trace.Synthetic{Seed: 1, Jobs: simtest.BenchJobs(), Queues: tenants}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 0.9)
	names := []string{"eval", "finetune", "pretrain", "research"}
	b.ResetTimer()
	defer reportCPU(b)()
	for range b.N {
		b.StopTimer()
		jobs := simtest.Jobs(b, syn)
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues(names, queue.Policy{})})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		res := simtest.Run(b, sim.Config{Cluster: c, Scheduler: s, SampleEvery: time.Hour}, jobs)
		b.StopTimer()
		if res.Summary.Jobs.Completed != syn.Jobs {
			b.Fatalf("%+v", res.Summary.Jobs)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heapsys-MiB")
		b.StartTimer()
	}
}

// reportCPU starts measuring the process's CPU time; the function it
// returns reports CPU seconds per op (on a shared machine, wall time also
// counts waiting for a core). Setup inside the timed loop is included.
func reportCPU(b *testing.B) func() {
	cpu0 := cpuTime()
	return func() {
		if d := cpuTime() - cpu0; d > 0 {
			b.ReportMetric(d.Seconds()/float64(b.N), "cpu-s/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
