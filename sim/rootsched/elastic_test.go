package rootsched_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestElasticSimulation drives shrinks and grows end to end on a busy
// synthetic trace (one GPU per task, every gang elastic down to half its
// tasks, a fifth of the jobs of high priority), with the simulator's
// audit on (every claim and the kept progress checked against its own
// accounts): the run ends without an invariant violation, every job
// completes, and the Scheduler shrank and grew gangs. With the same
// trace and no --shrink it shrinks nothing.
func TestElasticSimulation(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Name: "e", Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4})
	syn := trace.Synthetic{Seed: 7, Jobs: 400, MeanInterarrival: 5 * time.Minute, Sizes: []trace.Weighted[int]{{Value: 1, Weight: 0.4}, {Value: 4, Weight: 0.3}, {Value: 8, Weight: 0.2}, {Value: 16, Weight: 0.1}},
		Priorities: trace.HighPriority(0.2, 10), Shape: trace.Shape{MaxGPUsPerTask: 1}}
	run := func(cfg *gpusched.ElasticConfig) *sim.Result {
		p, err := rootsched.Preemptor("queue", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"default"}, queue.Policy{}), Preemptor: p, Elastic: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true, Elastic: 0.5,
			Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute, Overhead: 20 * time.Second, RestartCost: time.Minute}}, simtest.Jobs(t, syn))
	}
	on, off := run(&gpusched.ElasticConfig{}), run(nil)
	for name, r := range map[string]*sim.Result{"on": on, "off": off} {
		if r.Summary.Jobs.Completed != 400 {
			t.Errorf("%s: %d of 400 jobs completed", name, r.Summary.Jobs.Completed)
		}
	}
	p, q := on.Summary.Preemption, off.Summary.Preemption
	if p.Shrinks == 0 || p.Grows == 0 || q.Shrinks != 0 || q.Grows != 0 {
		t.Errorf("shrinks/grows: on %d/%d, off %d/%d", p.Shrinks, p.Grows, q.Shrinks, q.Grows)
	}
	t.Logf("on: %d shrinks, %d grows, %d preemptions, %.2f GPU-h lost to shrinks, %.2f to preemptions; off: %d preemptions, %.2f GPU-h lost",
		p.Shrinks, p.Grows, p.Preemptions, p.GPUHoursLostShrink, p.GPUHoursLostPreemption, q.Preemptions, q.GPUHoursLostPreemption)
}

// TestElasticSpeed: a shrunk gang runs at the speed of its size. e (8
// one-GPU tasks, at least 4; 1,000 s of work at full size) runs alone on
// one DGX H100; at 100 s a 4-GPU job of higher priority (300 s) arrives.
// The planner shrinks e by 4 tasks (losing 4 GPUs × 100 s rather than 8
// for a preemption); the tasks stop after the 2-minute grace, at 220 s,
// when hi starts. e has done 220 s of work; at half speed until hi ends
// (520 s) it does 150 more; then it grows back to 8 and does the last
// 630 s at full speed: it ends at 1,150 s. The stopped tasks had no
// checkpoint: they lose 4 GPUs × 220 s.
func TestElasticSpeed(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	p, err := rootsched.Preemptor("queue", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"q"}, queue.Policy{}), Preemptor: p, Elastic: &gpusched.ElasticConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []trace.Job{
		{Spec: workload.Job{ID: "e", Queue: "q", Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}, Duration: 1000 * time.Second},
		{Spec: workload.Job{ID: "hi", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, Submit: 100 * time.Second, Duration: 300 * time.Second},
	}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true}, jobs)
	got := map[string]sim.JobRecord{}
	for _, j := range r.Jobs {
		got[j.ID] = j
	}
	if h := got["hi"]; h.Start != 220 || h.End != 520 {
		t.Errorf("hi %+v", h)
	}
	if e := got["e"]; e.End != 1150 || e.Preemptions != 0 {
		t.Errorf("e %+v", e)
	}
	pr := r.Summary.Preemption
	if pr.Shrinks != 1 || pr.Grows != 1 || pr.Preemptions != 0 || math.Abs(pr.GPUHoursLostShrink-4*220.0/3600) > 1e-9 {
		t.Errorf("%+v", pr)
	}
}
