package gpusched

import (
	"errors"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestStateRestoreFixedPoint: a Scheduler restored from its State has
// the same State (every concern's part: jobs in every state, a
// reconfigured quota, health, cordons, tombstones, defragmentation and
// consolidation settings), and decides the next cycle as the original
// does.
func TestStateRestoreFixedPoint(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, c := stateTestScheduler(t, Config{Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{}}, MaxTombstones: 5})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	job := func(id string, gpus int, at time.Time) {
		t.Helper()
		must(s.Submit(workload.Job{ID: id, Queue: "q", Runtime: time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}, at))
	}
	job("run", 4, t0)
	job("adm", 2, t0)
	job("done", 1, t0)
	d := s.Schedule(t0)
	if len(d.Bindings) != 3 {
		t.Fatalf("bindings %+v", d.Bindings)
	}
	must(s.Started("run", t0.Add(time.Minute)))
	must(s.Started("done", t0.Add(time.Minute)))
	must(s.Finished("done", t0.Add(2*time.Minute)))
	job("wait", 8, t0.Add(3*time.Minute))
	// A quota set by Reconfigure, which the restored Scheduler keeps.
	next := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16, Max: queue.Limit(24)}}}}}}
	_, err := s.Reconfigure(next, nil, t0.Add(3*time.Minute))
	must(err)
	must(s.Cordon(c.HostName(1)))
	_, err = s.SetGPUHealth(7, topology.Draining)
	must(err)
	s.Schedule(t0.Add(4 * time.Minute))

	st := s.State()
	r, err := Restore(st)
	must(err)
	again := r.State()
	if !reflect.DeepEqual(again, st) {
		t.Fatalf("restored State differs:\n%+v\nwant\n%+v", again, st)
	}
	if q := r.Config().Queues.Root.Children[0].Quotas; len(q) != 1 || *q[0].Max != 24 {
		t.Errorf("quota %+v, want as reconfigured", q)
	}
	if len(st.Tombstones) != 1 || len(st.Health) != 1 || len(st.Cordoned) != 1 || len(st.Jobs) != 3 {
		t.Errorf("state %+v: want a tombstone, a GPU draining, a host cordoned, three jobs", st)
	}
	t1 := t0.Add(5 * time.Minute)
	da, db := s.Schedule(t1), r.Schedule(t1)
	if !reflect.DeepEqual(da.Bindings, db.Bindings) || !reflect.DeepEqual(da.Preemptions, db.Preemptions) {
		a, b := da.Format(c), db.Format(c)
		t.Errorf("next cycle differs:\n%s\nrestored:\n%s", a, b)
	}
}

// TestRestoreStateErrors: Restore names the field of a State it refuses.
func TestRestoreStateErrors(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := stateTestScheduler(t, Config{})
	if err := s.Submit(workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
		t.Fatal(err)
	}
	base := s.State()
	for _, tc := range []struct {
		name  string
		edit  func(st *State)
		field string
	}{
		{"no now", func(st *State) { st.Now = time.Time{} }, "now"},
		{"no cluster", func(st *State) { st.Config.Cluster = nil }, "config"},
		{"submitted after now", func(st *State) { st.Jobs[0].Submitted = t0.Add(time.Hour) }, "jobs[0].submitted"},
		{"nomination", func(st *State) { st.Nominations = []Nomination{{Job: "x", Victims: []string{"a"}}} }, "nominations[0].job"},
		{"stopping", func(st *State) { st.Stopping = []string{"a"} }, "stopping[0]"},
		{"tombstone", func(st *State) {
			st.Tombstones = []Tombstone{{Job: "b", State: queue.Succeeded, At: t0.Add(time.Hour)}}
		}, "tombstones[0].at"},
		{"health", func(st *State) { st.Health = []Unhealthy{{Host: "nowhere", Health: topology.Failed}} }, "health[0]"},
	} {
		st := base
		st.Jobs = append([]RestoredJob(nil), base.Jobs...)
		tc.edit(&st)
		_, err := Restore(st)
		var se *StateError
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("%s: got %v, want an error at %s", tc.name, err, tc.field)
		}
	}
}

// TestStatePartsInTheirConcernsFiles: each concern's part of State is
// saved and restored in one file of its own (beside its Restore… method),
// none in state.go, and no two parts share a file.
func TestStatePartsInTheirConcernsFiles(t *testing.T) {
	fileOf := func(fn any) string {
		f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
		file, _ := f.FileLine(f.Entry())
		return filepath.Base(file)
	}
	seen := map[string]bool{}
	for i, p := range stateParts {
		save, restore := fileOf(p.save), fileOf(p.restore)
		switch {
		case save != restore:
			t.Errorf("part %d: saved in %s, restored in %s", i, save, restore)
		case save == "state.go":
			t.Errorf("part %d: in state.go, not its concern's file", i)
		case seen[save] && save != "restore.go": // (the jobs and the tree's usage: RestoreJob, RestoreQueueUsage)
			t.Errorf("part %d: %s holds another part", i, save)
		}
		seen[save] = true
	}
}
