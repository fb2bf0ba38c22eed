package snapshot

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestRecoveryShrinkInFlight: a shrink a GPU failure asked of an elastic
// gang (issue 25, item 10) survives Capture → Encode → Load: the loaded
// Scheduler lists the same resize (no job it makes room for), accepts
// Shrunk, and grows the gang back once the GPU is repaired, as the
// original does.
func TestRecoveryShrinkInFlight(t *testing.T) {
	c := lab(t, 1)
	preemptor := func() gpusched.Preemptor {
		p, err := gpusched.NewPlanPreemptor(preempt.Config{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, err := gpusched.New(gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
		Elastic: &gpusched.ElasticConfig{}, Preemptor: preemptor()})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must(a.Submit(workload.Job{ID: "e", Queue: "q", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}, t0))
	for _, b := range a.Schedule(t0).Bindings {
		must(a.Started(b.Job, t0))
	}
	st, _ := a.Job("e")
	bad := st.Placement.Claims[2].GPUs[0].GPU
	if _, err := a.SetGPUHealth(bad, topology.Failed); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	if d := a.Schedule(now); len(d.Recoveries) != 1 || d.Recoveries[0].Action != preempt.ActionShrink {
		t.Fatalf("want a recovery shrink:\n%s", d.Format(c))
	}
	l, file := reloaded(t, a, now, CaptureOptions{}, Options{Preemptor: preemptor()})
	b := l.Scheduler
	if !reflect.DeepEqual(a.Resizes(), b.Resizes()) {
		t.Fatalf("resizes differ:\n%+v\n%+v\n%s", a.Resizes(), b.Resizes(), file)
	}
	for i, s := range []*gpusched.Scheduler{a, b} {
		must(s.Shrunk("e", now.Add(time.Minute)))
		if d := s.Schedule(now.Add(2 * time.Minute)); len(d.Grows) != 0 {
			t.Fatalf("scheduler %d grows onto the failed GPU:\n%s", i, d.Format(c))
		}
		if _, err := s.SetGPUHealth(bad, topology.Healthy); err != nil {
			t.Fatal(err)
		}
		d := s.Schedule(now.Add(3 * time.Minute))
		if len(d.Grows) != 1 || d.Grows[0].Size != 8 {
			t.Fatalf("scheduler %d: want e grown back to 8:\n%s", i, d.Format(c))
		}
	}
}
