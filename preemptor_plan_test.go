package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// fixedPreemptor returns the same entries for every job.
type fixedPreemptor struct{ plan []Preemption }

func (f fixedPreemptor) Preempt(PreemptView, PreemptCandidate, time.Time) []Preemption {
	return append([]Preemption(nil), f.plan...)
}

// TestPreemptorPlanChecked (issue 25): a custom Preemptor's entry with a
// negative Grace is dropped where the Scheduler takes the plan, as one
// naming no holding job is: it never reaches Decision.Preemptions and
// its victim is not marked as being stopped; a plan with a valid entry
// besides keeps that one only. Before, a negative Grace passed through
// to Decision.Preemptions.
func TestPreemptorPlanChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan []Preemption
		want []string // victims asked
	}{
		{"negative grace", []Preemption{{Job: "low1", Grace: -time.Minute, Reason: "bad"}}, nil},
		{"unknown job", []Preemption{{Job: "ghost", Grace: time.Minute}}, nil},
		{"one bad of two", []Preemption{{Job: "low1", Grace: -time.Second}, {Job: "low2", Grace: time.Minute}}, []string{"low2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Cluster: testCluster(t, 2, 0), Preemptor: fixedPreemptor{tc.plan},
				Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"low1", "low2"} {
				if err := s.Submit(gpuJob(id, 8), t0); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range s.Schedule(t0).Bindings {
				if err := s.Started(b.Job, t0); err != nil {
					t.Fatal(err)
				}
			}
			high := gpuJob("high", 8)
			high.Priority = 5
			if err := s.Submit(high, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			d := s.Schedule(t0.Add(time.Minute))
			var asked []string
			for _, p := range d.Preemptions {
				if p.Grace < 0 {
					t.Errorf("Decision.Preemptions holds a negative grace: %+v", p)
				}
				asked = append(asked, p.Job)
			}
			if len(asked) != len(tc.want) || len(asked) > 0 && asked[0] != tc.want[0] {
				t.Fatalf("asked %v, want %v:\n%s", asked, tc.want, d.Format(s.Cluster()))
			}
			if got := s.Stopping([]string{"low1", "low2"}); len(got) != len(tc.want) {
				t.Fatalf("stopping %v, want %v", got, tc.want)
			}
		})
	}
}
