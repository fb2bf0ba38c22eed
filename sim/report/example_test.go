package report_test

import (
	"os"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/report"
)

// The time series as CSV: one row per sample.
func ExampleWriteSamples() {
	samples := []sim.Sample{
		{Time: 0, FreeGPUs: 8},
		{Time: 60, AllocatedGPUs: 6.5, Allocation: 0.8125, FreeGPUs: 1, UnusableGPUs: 1, Running: 3, Pending: 1, PendingGPUs: 2},
	}
	report.WriteSamples(os.Stdout, samples)
	// Output:
	// t_seconds,allocated_gpus,allocation,free_gpus,unusable_gpus,failed_gpus,running,pending,pending_gpus
	// 0,0,0,8,0,0,0,0,0
	// 60,6.5,0.8125,1,1,0,3,1,2
}
