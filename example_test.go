package gpusched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// The embedding loop: create the Scheduler, submit, schedule, carry out
// the Decision, report back.
func Example() {
	cluster, _ := topology.LoadPreset("dgx-h100") // one host, 8 GPUs
	s, err := gpusched.New(gpusched.Config{
		Cluster: cluster,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "research", Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
		}}},
	})
	if err != nil {
		panic(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	submit := func(id string, gpus int, runtime time.Duration) {
		job := workload.Job{ID: id, Queue: "research", Runtime: runtime,
			Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}
		if err := s.Submit(job, now); err != nil {
			fmt.Println(err)
		}
	}
	submit("finetune", 4, time.Hour)
	submit("pretrain", 8, 10*time.Hour)
	submit("eval", 2, 30*time.Minute)
	submit("too-big", 16, time.Hour)

	cycle := func() {
		d := s.Schedule(now)
		for _, b := range d.Bindings {
			// The host binds the tasks to b.Placement's GPUs, then:
			_ = s.Started(b.Job, now)
			fmt.Printf("%s start %s on %s\n", now.Format("15:04"), b.Job, gpusched.FormatPlacement(cluster, b.Placement))
		}
		for _, p := range d.Pending {
			fmt.Printf("%s wait  %s: %s", now.Format("15:04"), p.Job, p.Reason.Code)
			if !p.Reason.Reserved.IsZero() {
				fmt.Printf(", reserved for %s", p.Reason.Reserved.Format("15:04"))
			}
			fmt.Println()
		}
	}
	cycle()
	now = now.Add(30 * time.Minute)
	_ = s.Finished("eval", now)
	cycle()
	now = now.Add(30 * time.Minute)
	_ = s.Finished("finetune", now)
	cycle()
	// Output:
	// job too-big: gpusched: job can never fit: does not fit on the idle cluster: needs 16 GPUs (1 task); the cluster has 8 GPUs: too large
	// 09:00 start finetune on dgx-h100-1[0-3]
	// 09:00 start eval on dgx-h100-1[4-5]
	// 09:00 wait  pretrain: capacity, reserved for 10:00
	// 09:30 wait  pretrain: capacity, reserved for 10:00
	// 10:00 start pretrain on dgx-h100-1[0-7]
}
