package gpusched

import (
	"errors"
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// TestRestoreKeepsLatestTime: a Scheduler restored from a State has the
// State's Now as its latest time, as the original had, not its latest
// restored submission: an event earlier than Now is refused with
// ErrTimeBackwards by both, and an event at the right time a day after
// the last submission (Schedule moved the clock meanwhile) is accepted by
// both, not refused with ErrClockSkew.
func TestRestoreKeepsLatestTime(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		at        time.Duration // the last Schedule, after the submission
		event     time.Duration // Started's time
		backwards bool
	}{
		{"earlier than Now", 2 * time.Hour, time.Hour, true},
		{"a day after the last submission", 30 * time.Hour, 30*time.Hour + time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := stateTestScheduler(t, Config{})
			if err := s.Submit(workload.Job{ID: "a", Queue: "q", Runtime: time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
				t.Fatal(err)
			}
			if d := s.Schedule(t0.Add(tc.at)); len(d.Bindings) != 1 {
				t.Fatalf("bindings %+v", d.Bindings)
			}
			r, err := Restore(s.State())
			if err != nil {
				t.Fatal(err)
			}
			if !r.Now().Equal(s.Now()) {
				t.Errorf("restored Now() = %v, the original's %v", r.Now(), s.Now())
			}
			for who, x := range map[string]*Scheduler{"original": s, "restored": r} {
				err := x.Started("a", t0.Add(tc.event))
				if tc.backwards && !errors.Is(err, ErrTimeBackwards) || !tc.backwards && err != nil {
					t.Errorf("%s: Started at +%v after the state's Now +%v: %v, want backwards=%v", who, tc.event, tc.at, err, tc.backwards)
				}
			}
		})
	}
}
