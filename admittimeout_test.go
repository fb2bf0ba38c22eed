package gpusched

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestAdmitTimeout (issue 14): a job admitted and never reported started
// within Config.AdmitTimeout is released at the next cycle after it — its
// GPUs and quota come back, Decision.Expired says why — and waits again;
// a job reported started in time is kept.
func TestAdmitTimeout(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 0), AdmitTimeout: 5 * time.Minute, Queues: queue.Config{
		Root: queue.Node{Children: []queue.Node{{Name: "q", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"lost", "fine"} {
		if err := s.Submit(gpuJob(id, 4), t0); err != nil {
			t.Fatal(err)
		}
	}
	if d := s.Schedule(t0); len(d.Bindings) != 2 {
		t.Fatalf("want both bound:\n%s", d.Format(s.Cluster()))
	}
	if err := s.Started("fine", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Before the timeout nothing expires; a job waiting for the room does.
	if err := s.Submit(gpuJob("next", 4), t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0.Add(5*time.Minute - time.Second)); len(d.Expired) != 0 || len(d.Bindings) != 0 {
		t.Fatalf("expired early:\n%s", d.Format(s.Cluster()))
	}
	d := s.Schedule(t0.Add(5 * time.Minute))
	if len(d.Expired) != 1 || d.Expired[0].Job != "lost" || !d.Expired[0].Admitted.Equal(t0) || !strings.Contains(d.Expired[0].Reason, "not reported started within 5m0s") {
		t.Fatalf("want lost expired:\n%s", d.Format(s.Cluster()))
	}
	if !strings.Contains(d.Format(s.Cluster()), "expire lost: admitted at 2025-01-01T00:00:00Z") {
		t.Errorf("Format:\n%s", d.Format(s.Cluster()))
	}
	// Its room went to the job that waited first for it ("lost" waits
	// behind it now, submitted earlier but requeued into the same queue).
	if len(d.Bindings) != 1 {
		t.Fatalf("the released room was not given out:\n%s", d.Format(s.Cluster()))
	}
	lost, _ := s.Job("lost")
	fine, _ := s.Job("fine")
	if fine.State != queue.Running {
		t.Errorf("fine: %v", fine.State)
	}
	if lost.State.Holding() && d.Bindings[0].Job != "lost" {
		t.Errorf("lost holds again without a binding: %v", lost.State)
	}
	if err := s.ledger.Check(); err != nil {
		t.Fatal(err)
	}
	if _, b := s.tree.Over(); b != nil {
		t.Fatalf("quota broken: %v", b)
	}
	// A late Started for the released job is refused: it is not admitted.
	if d.Bindings[0].Job != "lost" {
		if err := s.Started("lost", t0.Add(6*time.Minute)); err == nil {
			t.Error("Started accepted for a released job")
		}
	}
	if _, err := New(Config{Cluster: testCluster(t, 1, 0), AdmitTimeout: -1, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}}); err == nil {
		t.Error("negative AdmitTimeout accepted")
	}
}

// TestPerJobGrace (issue 14): a job's own grace period is the one its
// preemption and its drain give it, and one above Config.MaxGrace is
// refused.
func TestPerJobGrace(t *testing.T) {
	pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue, Grace: time.Minute}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: testCluster(t, 2, 0), Preemptor: pp, MaxGrace: 20 * time.Minute, DrainGrace: 2 * time.Minute,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	big := gpuJob("llm", 8)
	big.Grace = 15 * time.Minute // a 70B checkpoint
	nb := gpuJob("notebook", 8)
	nb.Grace = 10 * time.Second
	tooLong := gpuJob("greedy", 1)
	tooLong.Grace = 2 * time.Hour
	if err := s.Submit(tooLong, t0); err == nil || !strings.Contains(err.Error(), "grace") || !strings.Contains(err.Error(), "MaxGrace") {
		t.Fatalf("grace above MaxGrace: %v", err)
	}
	for _, j := range []workload.Job{big, nb} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(t0)
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	// Draining the notebook's host gives it its own 10 s.
	nbs, _ := s.Job("notebook")
	if _, err := s.SetHostHealth(s.Cluster().HostName(nbs.Placement.Claims[0].Host), topology.Draining); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t0.Add(time.Hour))
	if len(d.Recoveries) != 1 || d.Recoveries[0].Job != "notebook" || d.Recoveries[0].Grace != 10*time.Second {
		t.Fatalf("want the notebook drained with its 10s:\n%s", d.Format(s.Cluster()))
	}
	// Preempting the LLM gives it its 15 minutes.
	urgent := gpuJob("urgent", 8)
	urgent.Priority = 10
	if err := s.Submit(urgent, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t0.Add(time.Hour))
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "llm" || d.Preemptions[0].Grace != 15*time.Minute {
		t.Fatalf("want llm preempted with its 15m:\n%s", d.Format(s.Cluster()))
	}
}
