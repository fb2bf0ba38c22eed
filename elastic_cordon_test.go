package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// elasticScheduler returns a Scheduler of one queue, q, with elastic
// gangs and plan preemption within the queue, on hosts DGX H100 hosts.
func elasticScheduler(t *testing.T, hosts int) *Scheduler {
	t.Helper()
	sp, err := topology.Generator{Name: "c", Machine: "dgx-h100", Hosts: hosts}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}},
		Preemptor: pp, Elastic: &ElasticConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShrunkOnCordonedHost (regression): a gang shrunk on a host cordoned
// after the shrink was asked keeps its other tasks there. Shrunk re-took
// the kept placement as a new allocation, which a cordon refuses, and
// then panicked restoring the old one ("restoring a placement after a
// failed resize: … host cordoned"); found by the snapshot equivalence
// property with elastic gangs and cordons.
func TestShrunkOnCordonedHost(t *testing.T) {
	s := elasticScheduler(t, 1)
	c := s.Cluster()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Submit(workload.Job{ID: "e", Queue: "q", Groups: []workload.TaskGroup{{Count: 8, MinCount: 4, GPUs: 1}}}, t0))
	d := s.Schedule(t0)
	if len(d.Bindings) != 1 {
		t.Fatalf("e not bound:\n%s", d.Format(c))
	}
	must(s.Started("e", t0))
	now := t0.Add(time.Hour)
	must(s.Submit(workload.Job{ID: "n", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, now))
	d = s.Schedule(now)
	if len(d.Shrinks) != 1 {
		t.Fatalf("no shrink:\n%s", d.Format(c))
	}
	must(s.Cordon(c.HostName(0)))
	must(s.Shrunk("e", now.Add(time.Minute)))
	if js, _ := s.Job("e"); js.Placement.Len() != 4 {
		t.Fatalf("e has %d tasks after its shrink, want 4", js.Placement.Len())
	}
	if err := s.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
}
