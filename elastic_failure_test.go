package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestElasticGangShrinksOnGPUFailure: with Config.Elastic, a GPU failure
// under an elastic gang above its minimum stops only the task on that
// GPU (Recovery with ActionShrink; the host reports Shrunk), and the
// gang grows back once the GPU is repaired (issue 25, item 10). Before,
// recoverFaults planned with NoShrink and requeued the whole gang.
func TestElasticGangShrinksOnGPUFailure(t *testing.T) {
	c := testCluster(t, 1, 0) // 8 GPUs
	p, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, DefaultRuntime: time.Hour, Preemptor: p, Elastic: &ElasticConfig{},
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	e := workload.Job{ID: "e", Queue: "q", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}
	if err := s.Submit(e, t0); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0); len(d.Bindings) != 1 {
		t.Fatalf("want e bound, got %+v", d.Bindings)
	}
	if err := s.Started("e", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpointed("e", t0.Add(50*time.Minute), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Job("e")
	bad := st.Placement.Claims[3].GPUs[0].GPU
	at := t0.Add(time.Hour)
	if _, err := s.SetGPUHealth(bad, topology.Failed); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(at)
	if len(d.Recoveries) != 1 {
		t.Fatalf("want one recovery, got %+v", d.Recoveries)
	}
	r := d.Recoveries[0]
	if r.Job != "e" || r.Action != preempt.ActionShrink || len(r.Tasks) != 1 || len(r.Claims) != 1 || r.Size != 7 ||
		r.Claims[0].GPUs[0].GPU != bad || r.Tasks[0] != st.Placement.Tasks[3] {
		t.Fatalf("recovery = %+v, want e shrunk by the task on GPU %s to 7", r, c.GPUName(bad))
	}
	// 1 GPU × 10 min since the checkpoint at 50m.
	if r.Lost.GPUSeconds() != 600 {
		t.Errorf("Lost = %v, want 10 GPU-min (only the failed task's work)", r.Lost)
	}
	if err := s.Shrunk("e", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Job("e")
	if st.State != queue.Running || st.Placement.Len() != 7 || st.Restarts != 0 {
		t.Fatalf("after Shrunk: %s with %d tasks, %d restarts; want running with 7, 0 restarts", st.State, st.Placement.Len(), st.Restarts)
	}
	for _, cl := range st.Placement.Claims {
		if cl.GPUs[0].GPU == bad {
			t.Fatalf("e still holds the failed GPU")
		}
	}
	if d := s.Schedule(at.Add(2 * time.Minute)); len(d.Grows) != 0 || len(d.Recoveries) != 0 {
		t.Fatalf("nothing to do while the GPU is failed, got %+v", d)
	}
	// Repaired: e grows back to 8.
	if _, err := s.SetGPUHealth(bad, topology.Healthy); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(at.Add(3 * time.Minute))
	if len(d.Grows) != 1 || d.Grows[0].Job != "e" || d.Grows[0].Size != 8 {
		t.Fatalf("want e grown back to 8, got %+v", d.Grows)
	}
}
