package simtest

import (
	"os"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// Cluster builds the cluster g generates, failing t on error.
func Cluster(t testing.TB, g topology.Generator) *topology.Cluster {
	t.Helper()
	sp, err := g.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Jobs generates the synthetic trace syn describes, failing t on error.
func Jobs(t testing.TB, syn trace.Synthetic) []trace.Job {
	t.Helper()
	r, err := trace.NewSynthetic(syn)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := trace.Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// Run simulates jobs under cfg to the end, failing t on error.
func Run(t testing.TB, cfg sim.Config, jobs []trace.Job) *sim.Result {
	t.Helper()
	s, err := sim.New(cfg, jobs)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// BenchJobs is the number of jobs of the million-job benchmarks:
// GPUSCHED_BENCH_JOBS when it is a positive integer, else 1,000,000.
func BenchJobs() int {
	if n, err := strconv.Atoi(os.Getenv("GPUSCHED_BENCH_JOBS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}
