package gpusched

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// TestRestoreReservation: a kept reservation listed by Reservations and
// restored into a Scheduler with the same jobs is listed the same, and
// RestoreReservation refuses what it cannot apply, changing nothing.
func TestRestoreReservation(t *testing.T) {
	c := holdCluster(t, 1, 0)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	build := func() *Scheduler {
		s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "q", Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			if err := s.Submit(workload.Job{ID: id, Queue: "q", Runtime: time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, base); err != nil {
				t.Fatal(err)
			}
		}
		if d := s.Schedule(base); len(d.Bindings) != 1 || d.Bindings[0].Job != "a" {
			t.Fatalf("bindings %+v, want a", d.Bindings)
		}
		if err := s.Started("a", base); err != nil {
			t.Fatal(err)
		}
		s.Schedule(base.Add(time.Minute))
		return s
	}
	orig := build()
	rv := orig.Reservations()
	if len(rv) != 1 || rv[0].Job != "b" || !rv[0].At.Equal(base.Add(time.Hour)) || !rv[0].Current {
		t.Fatalf("Reservations() = %+v, want b's, current, at +1h", rv)
	}

	// The same Scheduler with its reservations dropped.
	s := build()
	s.res.dropAll()
	bad := []Reservation{
		{Job: "zz", At: rv[0].At, Tasks: rv[0].Tasks},
		{Job: "a", At: rv[0].At, Tasks: rv[0].Tasks},
		{Job: "b", Tasks: rv[0].Tasks},
		{Job: "b", At: rv[0].At, Tasks: rv[0].Tasks, Current: true},
		{Job: "b", At: rv[0].At},
	}
	for i, r := range bad {
		if err := s.RestoreReservation(r); err == nil {
			t.Fatalf("bad[%d] %+v: no error", i, r)
		}
		if got := s.Reservations(); len(got) != 0 {
			t.Fatalf("bad[%d]: a refused reservation is listed: %+v", i, got)
		}
	}
	if err := s.RestoreReservation(rv[0]); err != nil {
		t.Fatal(err)
	}
	if got := s.Reservations(); !reflect.DeepEqual(got, rv) {
		t.Fatalf("restored %+v, want %+v", got, rv)
	}
	if err := s.RestoreReservation(rv[0]); !errors.Is(err, ErrState) {
		t.Fatalf("restored twice: %v, want ErrState", err)
	}
}
