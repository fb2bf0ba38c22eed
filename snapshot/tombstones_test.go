package snapshot

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestLoadedRefusesResubmit (issue 25, defect 9): the ended jobs a
// Scheduler remembers survive a capture and a load, in order and within
// Config.MaxTombstones: the loaded Scheduler still refuses a redelivered
// Submit or Finished of a finished job (ErrAlreadyApplied).
func TestLoadedRefusesResubmit(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	cfg := gpusched.Config{Cluster: c, MaxTombstones: 2, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}}
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string) workload.Job {
		return workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b", "c", "live"} {
		if err := s.Submit(job(id), now); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range s.Schedule(now).Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range []string{"a", "b", "c"} {
		if err := s.Finished(id, now.Add(time.Duration(i+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Hour)
	st, err := Capture(s, now, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, st, "tombstones"); err != nil {
		t.Fatal(err)
	}
	l, err := Load(buf.Bytes(), "tombstones.yaml", Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	r := l.Scheduler
	if got, want := r.Tombstones(), s.Tombstones(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("loaded tombstones %+v, want %+v", got, want)
	}
	for _, id := range []string{"b", "c"} {
		if err := r.Submit(job(id), now); !errors.Is(err, gpusched.ErrAlreadyApplied) {
			t.Errorf("re-Submit of %s after the load: %v, want ErrAlreadyApplied", id, err)
		}
		if err := r.Finished(id, now); !errors.Is(err, gpusched.ErrAlreadyApplied) {
			t.Errorf("second Finished of %s after the load: %v, want ErrAlreadyApplied", id, err)
		}
	}
	if err := r.Submit(job("a"), now); err != nil {
		t.Errorf("a, forgotten (MaxTombstones 2), submitted again: %v", err)
	}
	// A tombstone naming a live job is refused, naming its field.
	st.Tombstones = append(st.Tombstones, Tombstone{Job: "live", State: queue.Succeeded, At: now})
	buf.Reset()
	if err := Encode(&buf, st, "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(buf.Bytes(), "bad.yaml", Options{NoPreemption: true}); err == nil || !bytes.Contains([]byte(err.Error()), []byte("tombstones[2]")) {
		t.Errorf("a tombstone of a live job: %v", err)
	}
}
