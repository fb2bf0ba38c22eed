package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// TestRestoredCheckpointEstimate (issue 25, item 1; a QA probe's
// composite restart with Config.Defrag, where the restored Scheduler
// migrated jobs the original did not): a running job that reported no
// checkpoint is given one estimated from its CheckpointInterval, later as
// time goes on. State saved that estimate as the job's checkpoint, and
// the restored Scheduler took it as reported (authoritative): from the
// next interval on it priced a stop with an older checkpoint than the
// original did, so the planners' choices parted. A reported checkpoint
// is saved as it is; an estimated one is not saved and is estimated again.
func TestRestoredCheckpointEstimate(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := stateTestScheduler(t, Config{})
	for _, id := range []string{"est", "rep"} {
		j := workload.Job{ID: id, Queue: "q", CheckpointInterval: 20 * time.Minute, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range s.Schedule(t0).Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Checkpointed("rep", t0.Add(5*time.Minute), t0.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	r, err := Restore(s.State())
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(50 * time.Minute)
	s.Schedule(later)
	r.Schedule(later)
	for _, id := range []string{"est", "rep"} {
		c1, p1, ok1 := s.Progress(id)
		c2, p2, ok2 := r.Progress(id)
		if c1 != c2 || p1 != p2 || ok1 != ok2 {
			t.Errorf("%s at %s: original's checkpoint %s (saved %s), restored's %s (saved %s)", id, stamp(later), stamp(c1), p1, stamp(c2), p2)
		}
	}
	if c, _, _ := r.Progress("est"); !c.Equal(t0.Add(40 * time.Minute)) {
		t.Errorf("est: restored's checkpoint %s, want the estimate %s", stamp(c), stamp(t0.Add(40*time.Minute)))
	}
}
