package queue_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// Rolling out a quota change: evaluation's guarantee grows, the
// experiments queue is folded into pretraining, and the jobs follow,
// running and pending, with the usage they hold.
func ExampleTree_Reconfigure() {
	capacity := queue.Capacity{Resources: workload.Resources{GPUMilli: 64000, CPUMilli: 1 << 20, MemoryMiB: 1 << 30}}
	gpus := func(n int64) queue.Vector { return queue.Vector{n * 1000, 0, 0} }
	before := queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "pretraining", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 40}}},
		{Name: "experiments", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
		{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16}}},
	}}}
	tree, err := queue.Build(before, capacity)
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	exp, _ := tree.Leaf("experiments")
	tree.Admit(exp.ID(), gpus(6), now)
	tree.Start(exp.ID(), gpus(6), now)
	exp.Count(0, 1)
	exp.Add(&queue.Entry{ID: "sweep-7", Seq: 1, Submitted: now, Demand: gpus(2)})

	after := queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "pretraining", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 40}}},
		{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 24}}},
	}}}
	// The old tree stays in use until Reconfigure succeeds; then switch.
	tree, moved, err := tree.Reconfigure(after, capacity, []queue.Move{{From: "experiments", To: "pretraining"}}, now.Add(time.Hour))
	if err != nil {
		panic(err)
	}
	for _, e := range moved.Moved {
		fmt.Println("moved:", e.ID)
	}
	for _, v := range tree.View() {
		r := v.Resources[0]
		fmt.Printf("%-12s nominal %2.0f used %2.0f pending %d running %d\n", v.Queue, r.Nominal, r.Used, v.Pending, v.Running)
	}
	// Output:
	// moved: sweep-7
	// cluster      nominal 64 used  6 pending 1 running 1
	// pretraining  nominal 40 used  6 pending 1 running 1
	// evaluation   nominal 24 used  0 pending 0 running 0
}
