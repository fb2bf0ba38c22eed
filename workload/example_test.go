package workload_test

import (
	"fmt"

	"github.com/gpusched/gpusched/workload"
)

// A 64-GPU training job: 8 tasks of 8 GPUs that must share one ToR switch.
func ExampleJob() {
	j := workload.Job{
		ID:    "pretrain-7b",
		Queue: "pretraining",
		Groups: []workload.TaskGroup{
			{Name: "worker", Count: 8, GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20},
		},
		Topology: []workload.Constraint{{Level: "tor", Required: true}},
	}
	fmt.Println(j.Validate(), j.Tasks(), j.GPUs(), j.Demand())

	j.Groups[0].GPUMilli = 1500 // not a valid share
	fmt.Println(j.Validate())
	// Output:
	// <nil> 8 64 gpu=64 cpu=768 mem=8388608MiB
	// job pretrain-7b: groups[0].gpuMilli: share 1500 milli outside 1..999
}
