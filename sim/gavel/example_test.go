package gavel_test

import (
	"fmt"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/gavel"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
)

// Example: one V100 and one K80 server of one GPU each; a resnet50 job
// (0.141 of a V100's throughput on a K80) and a recommendation job (1.398)
// arrive. The heterogeneity-aware allocation gives each the model it
// runs best on relative to the other; a run gives the Scheduler
// p.Placer(base) as its placer and p as its ordering (gpusched sim
// --ordering gavel does).
func Example() {
	c, err := topology.Build(topology.Spec{Version: 1, Name: "two",
		Accelerators: []topology.AcceleratorSpec{{Model: "V100"}, {Model: "K80"}},
		Templates: []topology.HostTemplate{
			{Name: "v", CPUMilli: 8000, MemoryMiB: 64000, Accelerator: "V100", GPUs: 1},
			{Name: "k", CPUMilli: 8000, MemoryMiB: 64000, Accelerator: "K80", GPUs: 1}},
		Hosts: []topology.HostGroup{{Name: "v1", Template: "v"}, {Name: "k1", Template: "k"}}})
	if err != nil {
		panic(err)
	}
	speeds, err := sim.ReadSpeedTable(data.GPUSpeedsGavel(), data.GPUSpeedsGavelName)
	if err != nil {
		panic(err)
	}
	p, err := gavel.New(gavel.Config{Cluster: c, Speeds: speeds,
		Types: map[string]string{"res": "resnet50-bs64", "rec": "recommendation-bs2048"}})
	if err != nil {
		panic(err)
	}
	if _, err := p.Enqueued(0, []policy.Job{{ID: "res", GPUs: 1}, {ID: "rec", GPUs: 1}}); err != nil {
		panic(err)
	}
	for _, id := range []string{"res", "rec"} {
		x, _ := p.Allocation(id)
		fmt.Printf("%s: %v of %v\n", id, x, p.Models())
	}
	// Output:
	// res: [1 0] of [V100 K80]
	// rec: [0 1] of [V100 K80]
}
