package report_test

import (
	"os"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/report"
)

// The time series as CSV: one row per sample; useful_utilisation is over
// the period since the previous row.
func ExampleWriteSamples() {
	samples := []sim.Sample{
		{Time: 0, FreeGPUs: 8},
		{Time: 60, AllocatedGPUs: 6.5, Allocation: 0.8125, Utilisation: 0.75, FreeGPUs: 1, UnusableGPUs: 1, Running: 3, Pending: 1, PendingGPUs: 2},
	}
	report.WriteSamples(os.Stdout, samples)
	// Output:
	// t_seconds,allocated_gpus,allocation,useful_utilisation,free_gpus,unusable_gpus,failed_gpus,running,pending,pending_gpus
	// 0,0,0,0,8,0,0,0,0,0
	// 60,6.5,0.8125,0.75,1,1,0,3,1,2
}
