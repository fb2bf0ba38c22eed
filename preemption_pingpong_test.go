package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestPropertyNoPreemptionPingPong drives a Scheduler with a PlanPreemptor
// through random streams of whole-GPU and shared-GPU jobs (priorities,
// quota trees with borrowing) whose victims stop at once: at each event
// time the host reports the stops and runs cycles again until a cycle
// asks for nothing more, as a host does when time does not advance. No
// job may be preempted twice at the same instant (a job stopped for a
// plan must not get back, in the same instant, room that makes it a
// victim again), and the cycles at one time must settle: a preemption
// ping-pong (two jobs each taking the room the other's stop freed, for
// ever) fails here instead of hanging.
func TestPropertyNoPreemptionPingPong(t *testing.T) {
	var preemptions, rounds int
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(1, 3).Draw(rt, "hosts"), 2)
		qc, queues := preemptionQueues(rt, c)
		pcfg := preempt.Config{LowerPriority: preempt.Scope(rapid.IntRange(0, 1).Draw(rt, "scope")), FairSharing: rapid.Bool().Draw(rt, "fs")}
		p, err := NewPlanPreemptor(pcfg, 0)
		if err != nil {
			rt.Fatal(err)
		}
		s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Queues: qc, Preemptor: p})
		if err != nil {
			rt.Fatal(err)
		}
		shapes := []workload.TaskGroup{
			{Count: 1, GPUs: 1}, {Count: 1, GPUs: 2}, {Count: 1, GPUs: 4}, {Count: 1, GPUs: 8},
			{Count: 1, GPUMilli: 500}, {Count: 1, GPUMilli: 250}, {Count: 2, GPUMilli: 500}, {Count: 3, GPUs: 2},
		}
		now := t0
		ends := map[string]time.Time{} // running jobs' ends
		n := rapid.IntRange(1, 30).Draw(rt, "jobs")
		for i := range n {
			now = now.Add(time.Duration(rapid.IntRange(0, 10).Draw(rt, "gap")) * time.Minute)
			j := workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: rapid.SampledFrom(queues).Draw(rt, "queue"),
				Priority: int32(rapid.IntRange(0, 2).Draw(rt, "prio")), Groups: []workload.TaskGroup{rapid.SampledFrom(shapes).Draw(rt, "shape")},
				Runtime: time.Duration(rapid.IntRange(10, 120).Draw(rt, "rt")) * time.Minute}
			if err := s.Submit(j, now); err != nil {
				continue
			}
			for id, end := range ends {
				if !end.After(now) {
					delete(ends, id)
					if st, ok := s.Job(id); ok && st.State == queue.Running {
						if err := s.Finished(id, now); err != nil {
							rt.Fatal(err)
						}
					}
				}
			}
			// Cycles at now until one asks for nothing; victims stop at
			// once (reported before the next cycle).
			preempted := map[string]int{}
			var log []string
			for round := 0; ; round++ {
				if round == 100 {
					rt.Fatalf("%v: the cycles do not settle after %d rounds at one time:\n%s", now, round, log)
				}
				rounds++
				d := s.Schedule(now)
				for _, b := range d.Bindings {
					if err := s.Started(b.Job, now); err != nil {
						rt.Fatal(err)
					}
					st, _ := s.Job(b.Job)
					ends[b.Job] = now.Add(st.Spec.Runtime)
					log = append(log, fmt.Sprintf("round %d: bind %s", round, b.Job))
				}
				var stops []string
				for _, pr := range d.Preemptions {
					preemptions++
					log = append(log, fmt.Sprintf("round %d: preempt %s for %s", round, pr.Job, pr.For))
					if preempted[pr.Job]++; preempted[pr.Job] > 1 {
						rt.Fatalf("%v: %s preempted twice at one time:\n%s", now, pr.Job, log)
					}
					stops = append(stops, pr.Job)
				}
				checkInvariants(t, s, fmt.Sprint(now, " round ", round))
				if len(stops) == 0 && len(d.Bindings) == 0 {
					break
				}
				for _, id := range stops {
					if st, ok := s.Job(id); ok && st.State.Holding() {
						if err := s.Preempted(id, now); err != nil {
							rt.Fatal(err)
						}
						delete(ends, id)
					}
				}
			}
		}
	})
	t.Logf("%d preemptions in %d cycles", preemptions, rounds)
	if preemptions == 0 {
		t.Error("the property was not exercised")
	}
}
