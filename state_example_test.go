package gpusched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A restart in one process: the Scheduler's state as plain data, and a
// Scheduler built from it that continues where the first stopped — with
// the quota as last reconfigured. (Package snapshot writes the same state
// to a file for a restart of the process.)
func ExampleScheduler_State() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	s, err := gpusched.New(gpusched.Config{Cluster: cluster, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "research", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 4, Max: queue.Limit(4)}}}}}}})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b"} {
		job := workload.Job{ID: id, Queue: "research", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
		if err := s.Submit(job, now); err != nil {
			panic(err)
		}
	}
	fmt.Println("bound:", len(s.Schedule(now).Bindings)) // the quota holds b back
	if err := s.Started("a", now); err != nil {
		panic(err)
	}
	more := queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "research", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8, Max: queue.Limit(8)}}}}}}
	if _, err := s.Reconfigure(more, nil, now); err != nil {
		panic(err)
	}

	st := s.State()
	restarted, err := gpusched.Restore(st)
	if err != nil {
		panic(err)
	}
	a, _ := restarted.Job("a")
	fmt.Println("a is", a.State, "on", len(a.Placement.Claims[0].GPUs), "GPUs")
	for _, b := range restarted.Schedule(now.Add(time.Minute)).Bindings {
		fmt.Println("bound after the restart:", b.Job)
	}
	// Output:
	// bound: 1
	// a is running on 4 GPUs
	// bound after the restart: b
}
