package gpusched_test

import (
	"testing"

	"github.com/gpusched/gpusched/benchmarks"
)

// BenchmarkSchedule runs the scheduling cases of the benchmark suite
// (package benchmarks) on the h100-10k preset (10,000 GPUs, 1,250 hosts,
// 32 per ToR): a full cycle with cold caches and the cycle after one job
// finishes, over 1,000 and 10,000 pending jobs of a mix of single GPUs,
// shares, whole hosts and 2–32-host ToR gangs in 20 queues (4
// organisations × 5 teams) with 90% of the GPUs busy, and a cycle in which
// a high-priority ToR gang preempts. The suite builds the fixtures outside
// the timer and checks every result; ./benchmarks runs the same cases at
// every size.
func BenchmarkSchedule(b *testing.B) {
	for _, c := range benchmarks.Cases() {
		if c.Group() == "Schedule" && c.Size == "10k" {
			b.Run(c.Sub(), c.F)
		}
	}
}
