package sim_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

func phillyJobs(b *testing.B) []trace.Job {
	f, err := os.Open("../../shared/data/philly/philly.csv")
	if err != nil {
		b.Skip("../shared/data/philly not present: ", err)
	}
	defer f.Close()
	r, err := trace.NewPhillyCSV(f, trace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	jobs, err := trace.Collect(r)
	if err != nil {
		b.Fatal(err)
	}
	return jobs
}

// BenchmarkPhillyFIFO replays the full Philly trace (82,247 jobs) on the
// 2,816-GPU Philly cluster through the naive FIFO test scheduler: the cost
// of the simulator itself, with a cheap scheduler.
func BenchmarkPhillyFIFO(b *testing.B) {
	jobs := phillyJobs(b)
	c := simtest.Cluster(b, sim.PhillyCluster)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		js := append([]trace.Job(nil), jobs...)
		cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c)}
		b.StartTimer()
		r := simtest.Run(b, cfg, js)
		if r.Summary.Jobs.Completed != len(jobs) {
			b.Fatalf("%d of %d completed", r.Summary.Jobs.Completed, len(jobs))
		}
	}
}

// BenchmarkSynthetic1MFIFO replays a synthetic 1M-job trace at 90% offered
// load on 100k GPUs (12,500 DGX H100) through the FIFO test scheduler and
// reports the peak heap.
func BenchmarkSynthetic1MFIFO(b *testing.B) {
	c, err := topology.LoadPreset("h100-100k")
	if err != nil {
		b.Fatal(err)
	}
	syn := trace.Synthetic{Seed: 1, Jobs: simtest.BenchJobs()}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 0.9)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		jobs := simtest.Jobs(b, syn)
		runtime.GC()
		b.StartTimer()
		res := simtest.Run(b, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), SampleEvery: time.Hour}, jobs)
		b.StopTimer()
		if res.Summary.Jobs.Completed != syn.Jobs {
			b.Fatalf("%d completed", res.Summary.Jobs.Completed)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heapsys-MiB")
		b.StartTimer()
	}
}
