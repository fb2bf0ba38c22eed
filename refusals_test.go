package gpusched

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestPropertyEvictionRefused drives a Scheduler with a PlanPreemptor
// whose host refuses a random part of the preemptions (EvictionRefused)
// and carries out the others. After every step the ledger, the quotas and
// the holdings agree (as in FuzzEvents), and:
//   - a refused victim is not chosen again, in the run it was refused in,
//     before Config.EvictionRetry has passed since its refusal: no
//     preemption loop;
//   - a job whose plan a refusal broke is not left waiting for that
//     victim: it is planned again (another victim set, or it waits naming
//     the refusal);
//   - no job is lost: every submitted job is live or ended by an event.
func TestPropertyEvictionRefused(t *testing.T) {
	var refused, replanned, named int
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 4).Draw(rt, "hosts"), 2)
		retry := time.Duration(rapid.IntRange(1, 30).Draw(rt, "retryMin")) * time.Minute
		p, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.Scope(rapid.IntRange(0, 1).Draw(rt, "scope"))}, 0)
		if err != nil {
			rt.Fatal(err)
		}
		s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: p, EvictionRetry: retry,
			Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}, {Name: "b"}}}}})
		if err != nil {
			rt.Fatal(err)
		}
		now := t0
		var submitted []string
		ended := map[string]bool{}
		refusedAt := map[string]time.Time{}  // victim → its last refusal
		refusedRun := map[string]time.Time{} // victim → the start of the run refused
		brokeFor := map[string][]string{}    // victim → jobs it was asked for when refused
		asked := map[string]string{}         // victim → the job it was asked for, in flight
		stopping := map[string]time.Time{}   // victims the host evicts, by when
		for step := 0; step < 80; step++ {
			now = now.Add(time.Duration(rapid.IntRange(1, 10).Draw(rt, "dt")) * time.Minute)
			for _, id := range sortedIDs(stopping) {
				if stopping[id].After(now) {
					continue
				}
				delete(stopping, id)
				if st, ok := s.Job(id); ok && st.State.Holding() {
					if err := s.Preempted(id, now); err != nil {
						rt.Fatal(err)
					}
				}
			}
			switch k := rapid.IntRange(0, 5).Draw(rt, "event"); {
			case k < 3:
				id := fmt.Sprintf("j%d", len(submitted))
				j := workload.Job{ID: id, Queue: rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "queue"), Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
					Groups:  []workload.TaskGroup{{Count: rapid.IntRange(1, 2).Draw(rt, "count"), GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "gpus")}},
					Runtime: time.Duration(rapid.IntRange(1, 6).Draw(rt, "rt")) * time.Hour}
				if err := s.Submit(j, now); err == nil {
					submitted = append(submitted, id)
				}
			case k == 3 && len(submitted) > 0:
				// A job ends, if the one drawn runs.
				id := rapid.SampledFrom(submitted).Draw(rt, "finish")
				if st, ok := s.Job(id); ok && st.State == queue.Running {
					if err := s.Finished(id, now); err != nil {
						rt.Fatal(err)
					}
					ended[id] = true
				}
			}
			d := s.Schedule(now)
			for _, b := range d.Bindings {
				if err := s.Started(b.Job, now); err != nil {
					rt.Fatal(err)
				}
			}
			for _, pr := range d.Preemptions {
				st, _ := s.Job(pr.Job)
				if at, ok := refusedAt[pr.Job]; ok && st.Started.Equal(refusedRun[pr.Job]) && now.Before(at.Add(retry)) {
					rt.Fatalf("%v: %s chosen again %v after its refusal (retry %v)", now, pr.Job, now.Sub(at), retry)
				}
				asked[pr.Job] = pr.For
				if rapid.IntRange(0, 2).Draw(rt, "refuse") == 0 {
					if err := s.EvictionRefused(pr.Job, now, "pdb"); err != nil {
						rt.Fatal(err)
					}
					refused++
					refusedAt[pr.Job], refusedRun[pr.Job] = now, st.Started
					brokeFor[pr.Job] = append(brokeFor[pr.Job][:0], pr.For)
					continue
				}
				stopping[pr.Job] = now.Add(time.Duration(rapid.IntRange(0, 3).Draw(rt, "stop")) * time.Minute)
			}
			// A job whose plan a refusal broke this step waits for no
			// refused victim in the next cycle.
			if len(d.Preemptions) > 0 {
				d2 := s.Schedule(now)
				for _, pr := range d2.Preemptions {
					stopping[pr.Job] = now
				}
				for _, b := range d2.Bindings {
					if err := s.Started(b.Job, now); err != nil {
						rt.Fatal(err)
					}
				}
				for _, w := range d2.Pending {
					if w.Reason == nil || w.Reason.Code != WaitPreemption {
						continue
					}
					for v, at := range refusedAt {
						if at.Equal(now) && slices.Contains(brokeFor[v], w.Job) && slices.Contains(w.Reason.Victims, v) {
							rt.Fatalf("%v: %s still preempting refused %s: %v", now, w.Job, v, w.Reason)
						}
					}
				}
				for _, w := range d2.Pending {
					for v, at := range refusedAt {
						if at.Equal(now) && slices.Contains(brokeFor[v], w.Job) {
							if w.Reason != nil && w.Reason.Code == WaitPreemption {
								replanned++
							} else {
								named++
							}
						}
					}
				}
			}
			if err := s.ledger.Check(); err != nil {
				rt.Fatalf("step %d: ledger: %v", step, err)
			}
			if _, b := s.tree.Over(); b != nil {
				rt.Fatalf("step %d: quota exceeded: %v", step, b)
			}
			checkHolders(t, s, fmt.Sprintf("step %d", step))
		}
		for _, id := range submitted {
			if _, ok := s.Job(id); !ok && !ended[id] {
				rt.Fatalf("job %s lost", id)
			}
		}
	})
	t.Logf("%d refusals; afterwards %d jobs preempting other victims, %d waiting", refused, replanned, named)
}

// sortedIDs returns m's keys in order.
func sortedIDs(m map[string]time.Time) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
