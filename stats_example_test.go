package gpusched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A host that exports metrics sets Config.Stats and reads each cycle's
// figures from Decision.Stats: the waiting jobs by queue and cause (the
// reason tokens a kube host also sets on pod conditions), each queue's
// GPUs, and the free GPUs that no waiting job's shape can use.
func ExampleCycleStats() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	s, err := gpusched.New(gpusched.Config{
		Cluster: cluster,
		Stats:   true,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "train", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 4}}},
			{Name: "eval", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 4}}},
		}}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	submit := func(id, q string, gpus int) {
		j := workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}
		if err := s.Submit(j, now); err != nil {
			panic(err)
		}
	}
	submit("pretrain", "train", 5) // borrows 1 GPU of eval's guarantee
	submit("sweep", "eval", 2)
	for _, b := range s.Schedule(now).Bindings {
		_ = s.Started(b.Job, now)
	}
	now = now.Add(time.Minute)
	submit("judge", "eval", 2) // 1 GPU is free
	st := s.Schedule(now).Stats
	fmt.Printf("admitted %d (borrowing %d), pending %d\n", st.Admitted, st.Borrowing, st.Pending)
	for _, p := range st.PendingBy {
		fmt.Printf("pending %s %s: %d\n", p.Queue, p.Token, p.Jobs)
	}
	for _, q := range st.Queues[1:] { // the root first
		fmt.Printf("queue %s: nominal %v used+reserved %v borrowed %v\n", q.Queue, q.Nominal, q.Used+q.Reserved, q.Borrowed)
	}
	for _, x := range st.Stranded {
		if x.Level == topology.LevelHost {
			fmt.Printf("free %d, stranded at the host level %d\n", st.FreeGPUs, x.GPUs)
		}
	}
	// Output:
	// admitted 0 (borrowing 0), pending 1
	// pending eval InsufficientCapacity: 1
	// queue train: nominal 4 used+reserved 5 borrowed 1
	// queue eval: nominal 4 used+reserved 2 borrowed 0
	// free 1, stranded at the host level 1
}
