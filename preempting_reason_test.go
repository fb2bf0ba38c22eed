package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// TestPreemptingCycleReportsPreempting: in a backfilling queue, the job
// the cycle preempts for is reported WaitPreemption in that very cycle
// (issue 25, item 6). Before, try asked the Preemptor and then afterBlock
// gave the job a reservation computed against its own new nomination,
// overwriting the reason with "capacity … reserved to start at 10:30":
// a time the job never waits for (it binds once its victim stops).
func TestPreemptingCycleReportsPreempting(t *testing.T) {
	for _, placing := range []bool{true, false} {
		c := testCluster(t, 2, 2) // 16 GPUs
		p, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var pr Preemptor = p
		if !placing {
			pr = plainPreemptor{p} // only Preempt: no nomination
		}
		s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: pr,
			Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "team", Policy: queue.Policy{Backfill: true}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		job := func(id string, prio int32, rt time.Duration) workload.Job {
			return workload.Job{ID: id, Queue: "team", Priority: prio, Runtime: rt, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
		}
		for _, j := range []workload.Job{job("v1", 0, 10*time.Hour), job("v2", 50, time.Hour)} {
			if err := s.Submit(j, t0); err != nil {
				t.Fatal(err)
			}
		}
		if d := s.Schedule(t0); len(d.Bindings) != 2 {
			t.Fatalf("placing=%v: want both bound, got %+v", placing, d.Bindings)
		}
		at := t0.Add(10 * time.Minute)
		if err := s.Submit(job("hi", 100, 20*time.Minute), at); err != nil {
			t.Fatal(err)
		}
		d := s.Schedule(at)
		if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "v1" || d.Preemptions[0].For != "hi" {
			t.Fatalf("placing=%v: want v1 preempted for hi, got %+v", placing, d.Preemptions)
		}
		st, _ := s.Job("hi")
		if r := st.Reason; r == nil || r.Code != WaitPreemption || !r.Reserved.IsZero() || r.ReservedForever {
			t.Errorf("placing=%v: Job(hi).Reason in the preempting cycle = %v, want preempting", placing, r)
		}
		for _, pd := range d.Pending {
			if pd.Job == "hi" && (pd.Reason == nil || pd.Reason.Code != WaitPreemption) {
				t.Errorf("placing=%v: Decision.Pending says %v for hi, want preempting", placing, pd.Reason)
			}
		}
	}
}

// plainPreemptor hides PlanPreemptor's PreemptPlan: the Scheduler asks
// for victims only and nominates nothing.
type plainPreemptor struct{ p *PlanPreemptor }

func (x plainPreemptor) Preempt(s PreemptView, c PreemptCandidate, now time.Time) []Preemption {
	return x.p.Preempt(s, c, now)
}
