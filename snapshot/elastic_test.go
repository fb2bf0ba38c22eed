package snapshot

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestElasticInFlight: a shrink in flight, and then a grow in flight,
// survive Capture → Encode → Load: the loaded Scheduler lists the same
// resizes, accepts the same Shrunk and Grown, and decides as the
// original does after them.
func TestElasticInFlight(t *testing.T) {
	sp, err := topology.Generator{Name: "e", Machine: "dgx-h100", Hosts: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
		Elastic: &gpusched.ElasticConfig{}}
	preemptor := func() gpusched.Preemptor {
		p, err := gpusched.NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg.Preemptor = preemptor()
	a, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Submit(workload.Job{ID: "e", Queue: "q", Priority: 1, Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}, t0))
	must(a.Submit(workload.Job{ID: "r", Queue: "q", Priority: 1, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, t0))
	for _, b := range a.Schedule(t0).Bindings {
		must(a.Started(b.Job, t0))
	}
	must(a.Checkpointed("e", t0.Add(50*time.Minute), t0.Add(50*time.Minute)))
	must(a.Checkpointed("r", t0.Add(30*time.Minute), t0.Add(50*time.Minute)))
	now := t0.Add(time.Hour)
	must(a.Submit(workload.Job{ID: "n", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, now))
	if d := a.Schedule(now); len(d.Shrinks) != 1 {
		t.Fatalf("want a shrink:\n%s", d.Format(c))
	}
	reload := func(now time.Time) *gpusched.Scheduler {
		t.Helper()
		st, err := Capture(a, now, CaptureOptions{})
		must(err)
		var buf bytes.Buffer
		must(Encode(&buf, st, ""))
		l, err := Load(buf.Bytes(), "state.yaml", Options{Preemptor: preemptor()})
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(a.Resizes(), l.Scheduler.Resizes()) {
			t.Fatalf("resizes differ:\n%+v\n%+v\n%s", a.Resizes(), l.Scheduler.Resizes(), buf.String())
		}
		return l.Scheduler
	}
	b := reload(now)
	both := func(f func(s *gpusched.Scheduler) error) {
		t.Helper()
		must(f(a))
		must(f(b))
	}
	same := func(now time.Time) gpusched.Decision {
		t.Helper()
		da, db := a.Schedule(now), b.Schedule(now)
		if x, y := da.Format(c), db.Format(c); x != y {
			t.Fatalf("at %v the loaded Scheduler decides otherwise:\n%s---\n%s", now.Sub(t0), x, y)
		}
		return da
	}
	both(func(s *gpusched.Scheduler) error { return s.Shrunk("e", now.Add(time.Minute)) })
	d := same(now.Add(time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "n" {
		t.Fatalf("n does not bind after the shrink:\n%s", d.Format(c))
	}
	both(func(s *gpusched.Scheduler) error { return s.Started("n", now.Add(time.Minute)) })
	both(func(s *gpusched.Scheduler) error { return s.Finished("n", now.Add(time.Hour)) })
	d = same(now.Add(time.Hour))
	if len(d.Grows) != 1 {
		t.Fatalf("e does not grow back:\n%s", d.Format(c))
	}
	b = reload(now.Add(time.Hour))
	both(func(s *gpusched.Scheduler) error { return s.Grown("e", now.Add(time.Hour+time.Minute)) })
	same(now.Add(2 * time.Hour))
	if st, _ := b.Job("e"); st.Placement.Len() != 8 {
		t.Fatalf("e holds %d tasks after growing back, want 8", st.Placement.Len())
	}
}
