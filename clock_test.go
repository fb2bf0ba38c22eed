package gpusched

import (
	"errors"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// TestTimeBackwards (issue 14): an event at a time earlier than the
// latest the Scheduler has seen is refused with ErrTimeBackwards, naming
// the event, the job and both times, and changes nothing; Schedule, which
// has no error, clamps to the latest time (Decision.Now); an event at the
// latest time itself is fine.
func TestTimeBackwards(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{
		Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Submit(gpuJob(id, 2), at(0)); err != nil {
			t.Fatal(err)
		}
	}
	if d := s.Schedule(at(5)); len(d.Bindings) != 3 {
		t.Fatalf("want three bound:\n%s", d.Format(s.Cluster()))
	}
	if err := s.Started("b", at(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Started("c", at(5)); err != nil {
		t.Fatal(err)
	}
	// Every event at 09:00 after 09:05 is refused, whatever the job.
	back := at(0)
	for _, tc := range []struct {
		call func() error
		want string
	}{
		{func() error { return s.Submit(gpuJob("d", 2), back) }, "job d: gpusched: time went backwards: Submit(d) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Started("a", back) }, "job a: gpusched: time went backwards: Started(a) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Finished("b", back) }, "job b: gpusched: time went backwards: Finished(b) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Failed("b", back) }, "job b: gpusched: time went backwards: Failed(b) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Cancel("a", back) }, "job a: gpusched: time went backwards: Cancel(a) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Requeue("b", back) }, "job b: gpusched: time went backwards: Requeue(b) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Preempted("c", back) }, "job c: gpusched: time went backwards: Preempted(c) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		{func() error { return s.Checkpointed("c", back, back) }, "job c: gpusched: time went backwards: Checkpointed(c) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
		// An unknown job: the time is checked first, and named.
		{func() error { return s.Started("nope", back) }, "job nope: gpusched: time went backwards: Started(nope) at 2025-01-01T00:00:00Z is before 2025-01-01T00:05:00Z, the latest time seen"},
	} {
		err := tc.call()
		var je *JobError
		if !errors.Is(err, ErrTimeBackwards) || !errors.As(err, &je) || err.Error() != tc.want {
			t.Errorf("got %v\nwant %s", err, tc.want)
		}
	}
	// Nothing changed.
	if s.Len() != 3 {
		t.Fatalf("len %d, want 3", s.Len())
	}
	for id, want := range map[string]queue.State{"a": queue.Admitted, "b": queue.Running, "c": queue.Running} {
		if st, _ := s.Job(id); st.State != want {
			t.Errorf("%s: %v, want %v", id, st.State, want)
		}
	}
	// Schedule clamps: the cycle runs at the latest time seen.
	if d := s.Schedule(back); !d.Now.Equal(at(5)) {
		t.Errorf("Schedule(%v) ran at %v, want %v", back, d.Now, at(5))
	}
	// At the latest time, and after it, events apply.
	if err := s.Finished("b", at(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.Started("a", at(6)); err != nil {
		t.Fatal(err)
	}
	// A refused event does not move the clock: 00:06 is still the latest.
	if err := s.Requeue("c", at(1)); !errors.Is(err, ErrTimeBackwards) {
		t.Fatalf("Requeue at 00:01: %v", err)
	}
	if err := s.Requeue("c", at(6)); err != nil {
		t.Fatal(err)
	}
}
