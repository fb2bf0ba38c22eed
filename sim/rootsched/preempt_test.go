package rootsched_test

import (
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

// lowestFirst is a naive Preemptor for tests: it proposes running jobs of
// lower priority, in the Scheduler's holding order, until their GPUs
// cover the candidate's demand.
type lowestFirst struct{ grace time.Duration }

func (p lowestFirst) Preempt(s gpusched.PreemptView, c gpusched.PreemptCandidate, _ time.Time) []gpusched.Preemption {
	need := c.Job.Demand().GPUMilli
	var out []gpusched.Preemption
	s.Holding(func(id string, st gpusched.JobStatus) bool {
		if st.Spec.Priority < c.Job.Priority {
			out = append(out, gpusched.Preemption{Job: id, For: c.Job.ID, Grace: p.grace, Reason: "lower priority"})
			need -= st.Spec.Demand().GPUMilli
		}
		return need > 0
	})
	if need > 0 {
		return nil
	}
	return out
}

// TestRootPreemption drives the Scheduler's preemption path end to end: a
// high-priority job preempts a running one, which checkpoints during its
// grace period, is requeued with its progress and finishes later.
func TestRootPreemption(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"q"}, queue.Policy{}),
		Preemptor: lowestFirst{grace: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, prio int32, submit time.Duration) trace.Job {
		return trace.Job{Spec: workload.Job{ID: id, Queue: "q", Priority: prio, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, Submit: submit, Duration: time.Hour}
	}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 5 * time.Minute, Overhead: 30 * time.Second}},
		[]trace.Job{job("low", 0, 0), job("high", 10, 10*time.Minute)})
	got := map[string]sim.JobRecord{}
	for _, j := range r.Jobs {
		got[j.ID] = j
	}
	// low works in cycles of 5 min + a 30 s checkpoint. Notice at 10:00;
	// its final checkpoint, 10:30–11:00, keeps the work done by 10:30:
	// 5:00 + 5:00 = 10 min. high runs from 11:00 for 60 min of work and 11
	// checkpoints (5.5 min): until 76:30 = 4,590 s. low resumes then with
	// 50 min left and 9 checkpoints (4.5 min): 4,590 + 3,000 + 270 = 7,860.
	if h := got["high"]; h.Start != 660 || h.End != 4590 {
		t.Errorf("high %+v", h)
	}
	if l := got["low"]; l.Preemptions != 1 || l.State != sim.StateCompleted || l.End != 7860 {
		t.Errorf("low %+v", l)
	}
	if r.Summary.Preemption.Preemptions != 1 || r.Summary.Preemption.Recovered != 1 {
		t.Errorf("%+v", r.Summary.Preemption)
	}
}
