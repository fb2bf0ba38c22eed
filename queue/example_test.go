package queue_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// A cluster of 64 GPUs shared by a research organisation (pretraining and
// experiments) and an evaluation team. Experiments borrows beyond its
// guarantee; the quota view shows who uses, borrows and lends what.
func Example() {
	cfg := queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "research", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 48}}, Children: []queue.Node{
			{Name: "pretraining", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 40}}},
			{Name: "experiments", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8, BorrowingLimit: queue.Limit(16)}}},
		}},
		{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16, Max: queue.Limit(24)}}},
	}}}
	tree, err := queue.Build(cfg, queue.Capacity{Resources: workload.Resources{GPUMilli: 64000, CPUMilli: 1 << 20, MemoryMiB: 1 << 30}})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	gpus := func(n int64) queue.Vector { return queue.Vector{n * 1000, 0, 0} }
	exp, _ := tree.Lookup("experiments")
	pre, _ := tree.Lookup("pretraining")

	tree.Admit(pre, gpus(24), now)
	tree.Start(pre, gpus(24), now)
	fmt.Println("experiments +20 borrows:", tree.Borrows(exp, gpus(20)), "fits:", tree.Check(exp, gpus(20)) == nil)
	tree.Admit(exp, gpus(20), now)
	fmt.Println("experiments +5:", tree.Check(exp, gpus(5)))

	for _, v := range tree.View() {
		r := v.Resources[0]
		fmt.Printf("%-13s nominal %2.0f used %2.0f reserved %2.0f free %2.0f borrowed %2.0f lent %2.0f\n",
			v.Queue, r.Nominal, r.Used, r.Reserved, r.Free, r.Borrowed, r.Lent)
	}
	// Output:
	// experiments +20 borrows: true fits: true
	// experiments +5: queue experiments: gpu: 20 GPUs in use + 5 GPUs > borrowing limit 24 GPUs
	// cluster       nominal 64 used 24 reserved 20 free 20 borrowed  0 lent  0
	// research      nominal 48 used 24 reserved 20 free  4 borrowed  0 lent  0
	// pretraining   nominal 40 used 24 reserved  0 free 16 borrowed  0 lent 12
	// experiments   nominal  8 used  0 reserved 20 free  0 borrowed 12 lent  0
	// evaluation    nominal 16 used  0 reserved  0 free 16 borrowed  0 lent  0
}
