package rootsched_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Replay three jobs on one DGX H100 through the real Scheduler: the
// second waits for the first, whose GPUs it needs; the third fits beside
// the first. Allocation: (6×1h + 4×1h + 2×0.5h) / (8 GPUs × 2h) = 68.75%.
func Example() {
	c, _ := topology.LoadPreset("dgx-h100")
	job := func(id string, gpus int, submit, run time.Duration) trace.Job {
		return trace.Job{Spec: workload.Job{ID: id, Queue: "team", Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}, Submit: submit, Duration: run}
	}
	jobs := []trace.Job{
		job("a", 6, 0, time.Hour),
		job("b", 4, time.Minute, time.Hour),
		job("c", 2, 2*time.Minute, 30*time.Minute),
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"team"}, queue.Policy{})})
	if err != nil {
		fmt.Println(err)
		return
	}
	sm, err := sim.New(sim.Config{Cluster: c, Scheduler: s}, jobs)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sm.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range res.Jobs {
		fmt.Printf("%s: waited %v, ran %v–%v\n", j.ID, time.Duration(j.Start-j.Submit)*time.Second, time.Duration(j.Start)*time.Second, time.Duration(j.End)*time.Second)
	}
	fmt.Printf("makespan %v, allocation %.1f%%\n", time.Duration(res.Summary.Makespan)*time.Second, 100*res.Summary.AllocationRate)
	// Output:
	// a: waited 0s, ran 0s–1h0m0s
	// b: waited 59m0s, ran 1h0m0s–2h0m0s
	// c: waited 0s, ran 2m0s–32m0s
	// makespan 2h0m0s, allocation 68.8%
}

// A GPU fails under a running job: the Scheduler's recovery requeues it
// from its last checkpoint, and it finishes on the other host. The job
// checkpoints every hour (reported to the Scheduler as each completes);
// the failure at 2h30m costs the half hour since the 2h checkpoint on 8
// GPUs.
func Example_gpuFailure() {
	sp, _ := topology.Generator{Machine: "dgx-h100", Hosts: 2}.Spec()
	c, _ := topology.Build(sp)
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"team"}, queue.Policy{}), MaxRestarts: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	train := trace.Job{Spec: workload.Job{ID: "train", Queue: "team", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, Duration: 4 * time.Hour}
	sm, err := sim.New(sim.Config{Cluster: c, Scheduler: s,
		Checkpoint: sim.CheckpointModel{Interval: time.Hour},
		Outages:    []sim.Outage{{Level: "gpu", Name: c.HostName(0) + "/gpu3", At: 150 * time.Minute, For: time.Hour}},
	}, []trace.Job{train})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sm.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	j, p := res.Jobs[0], res.Summary.Preemption
	fmt.Printf("%s: %s at %v, %d fault stop\n", j.ID, j.State, time.Duration(j.End)*time.Second, j.FaultStops)
	fmt.Printf("recoveries: %d requeue; %.1f GPU-hours lost\n", p.Recoveries.Requeue, p.GPUHoursLostFailure)
	// Output:
	// train: completed at 4h30m0s, 1 fault stop
	// recoveries: 1 requeue; 4.0 GPU-hours lost
}
