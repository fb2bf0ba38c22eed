package gpusched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// An elastic gang gives back tasks instead of being preempted, and grows
// back when the room returns: the host stops the shrink's tasks and calls
// Shrunk, starts a grow's tasks and calls Grown.
func ExampleElasticConfig() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	p, _ := gpusched.NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
	s, err := gpusched.New(gpusched.Config{Cluster: cluster, Preemptor: p, Elastic: &gpusched.ElasticConfig{},
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	train := workload.Job{ID: "train", Queue: "q", Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}
	_ = s.Submit(train, now)
	for _, b := range s.Schedule(now).Bindings {
		_ = s.Started(b.Job, now)
	}
	now = now.Add(time.Hour)
	urgent := workload.Job{ID: "urgent", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 2}}}
	_ = s.Submit(urgent, now)
	d := s.Schedule(now)
	for _, x := range d.Shrinks {
		fmt.Printf("shrink %s by %d tasks for %s, %d left\n", x.Job, len(x.Tasks), x.For, x.Size)
		_ = s.Shrunk(x.Job, now.Add(time.Minute)) // the tasks checkpointed and stopped
	}
	now = now.Add(time.Minute)
	for _, b := range s.Schedule(now).Bindings {
		fmt.Println("bind", b.Job, gpusched.FormatPlacement(cluster, b.Placement))
		_ = s.Started(b.Job, now)
	}
	now = now.Add(time.Hour)
	_ = s.Finished("urgent", now)
	for _, g := range s.Schedule(now).Grows {
		fmt.Printf("grow %s by %d tasks to %d\n", g.Job, len(g.Tasks), g.Size)
		_ = s.Grown(g.Job, now)
	}
	// Output:
	// shrink train by 2 tasks for urgent, 6 left
	// bind urgent dgx-h100-1[0-1]
	// grow train by 2 tasks to 8
}
