package snapshot

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
)

// TestFromStateDecodesBack: the file is an encoding of the Scheduler's
// state only. A Scheduler restored from its State in memory
// (gpusched.Restore) and one loaded from the file FromState wrote for it
// hold the same state, and their next cycles decide alike.
func TestFromStateDecodesBack(t *testing.T) {
	s := richScheduler(t)
	now := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	gs := s.State()
	gs.Now = now
	st, err := FromState(gs, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Load([]byte(encoded(t, st)), "s.yaml", Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	back, err := st.SchedulerState(Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Jobs) != len(gs.Jobs) || back.Config.Cluster.NumGPUs() != gs.Config.Cluster.NumGPUs() {
		t.Fatalf("decoded %d jobs on %d GPUs, want %d on %d", len(back.Jobs), back.Config.Cluster.NumGPUs(), len(gs.Jobs), gs.Config.Cluster.NumGPUs())
	}
	direct, err := gpusched.Restore(gs)
	if err != nil {
		t.Fatal(err)
	}
	a, b := direct.State(), l.Scheduler.State()
	// The code and the cluster are each Scheduler's own.
	a.Config.Cluster, a.Config.Placer, b.Config.Cluster, b.Config.Placer = nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("restored from memory:\n%+v\nloaded from the file:\n%+v", a, b)
	}
	da, db := direct.Schedule(now), l.Scheduler.Schedule(now)
	if !reflect.DeepEqual(da.Bindings, db.Bindings) || !reflect.DeepEqual(da.Preemptions, db.Preemptions) {
		t.Errorf("next cycles differ:\n%s\nloaded:\n%s", da.Format(l.Cluster), db.Format(l.Cluster))
	}
}
