package preempt_test

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A 16-GPU cluster (two DGX H100) runs two low-priority jobs. An urgent
// 8-GPU job arrives: the planner stops the job that loses less work — the
// one that checkpointed 10 minutes ago, not the one that never did — and
// says where the urgent job goes. Then GPU 3 of the second host fails:
// the recovery plan requeues the job there from its last checkpoint.
func Example() {
	spec, _ := topology.Generator{Name: "demo", Machine: "dgx-h100", Hosts: 2}.Spec()
	c, _ := topology.Build(spec)
	ledger := topology.NewLedger(c)
	state := preempt.NewState(ledger, nil)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

	placer, _ := gang.New("topology", gang.Options{})
	run := func(id string, started, checkpoint time.Duration) {
		job := &workload.Job{ID: id, Queue: "research", Priority: 1, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
		req, _ := gang.NewRequest(c, job)
		var p gang.Placement
		placer.Place(ledger, req, &p)
		gang.Commit(ledger, &p)
		j := &preempt.Job{Spec: job, Placement: &p, Started: now.Add(-started)}
		if checkpoint > 0 {
			j.Checkpoint = now.Add(-checkpoint)
		}
		state.Add(j)
	}
	run("sweep", 3*time.Hour, 10*time.Minute) // checkpointed 10 min ago
	run("finetune", time.Hour, 0)             // never checkpointed

	urgent := &workload.Job{ID: "urgent", Queue: "research", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	req, _ := gang.NewRequest(c, urgent)
	s, _ := preempt.New(preempt.Config{Placer: placer})
	plan, why := s.Plan(state, &preempt.Pending{Request: req, Queue: "research", Priority: 10}, now)
	if why != nil {
		fmt.Println(why)
		return
	}
	fmt.Println(plan)
	for _, v := range plan.Victims {
		fmt.Printf("stop %s within %v; it loses %s\n", v.Job, v.Grace, v.Lost)
	}
	fmt.Println("urgent goes to", c.HostName(plan.Placement.Claims[0].Host))

	first, _ := c.HostGPUs(1)
	rec, _ := preempt.Recover(state, []preempt.Fault{preempt.GPUFault(first+3, topology.Failed, "Xid 79")}, now, preempt.RecoveryConfig{})
	for _, a := range rec.Actions {
		fmt.Printf("%s: %s, loses %s (%s)\n", a.Job, a.Action, a.Lost, a.Reason)
	}
	// Output:
	// job urgent: preempt sweep (priority, 1.3 GPU-h); cost 1.3 GPU-h lost, 1 victims (priority sum 1)
	// stop sweep within 2m0s; it loses 1.3 GPU-h
	// urgent goes to dgx-h100-1
	// finetune: requeue, loses 8 GPU-h (GPU dgx-h100-2/gpu3 failed (Xid 79))
}
