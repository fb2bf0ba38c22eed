package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestReclaimCountsCascade: reclaim prices a victim with the stops its
// own restart would cause (issue 25, item 7). Queue b borrows the whole
// cluster: b-lo (priority 0, no checkpoint for 2 h) and b-hi (priority 5,
// checkpointed just now). Queue a, guaranteed 8 GPUs, reclaims 8. b-hi
// loses nothing, b-lo 16 GPU-h; but b-hi, restarted, preempts b-lo in
// its own queue (WithinQueue): two stops where stopping b-lo needed one.
// Priced with its restart, b-hi costs what b-lo does and one stop more:
// the plan stops b-lo alone, and nothing follows.
func TestReclaimCountsCascade(t *testing.T) {
	c := testCluster(t, 2, 2) // 16 GPUs
	p, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}, 0)
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(n int64) []queue.Quota { return []queue.Quota{{Resource: "gpu", Nominal: n}} }
	s, err := New(Config{Cluster: c, DefaultRuntime: 10 * time.Hour, Preemptor: p,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a", Quotas: gpu(8)}, {Name: "b", Quotas: gpu(0)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, q string, prio int32) workload.Job {
		return workload.Job{ID: id, Queue: q, Priority: prio, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	}
	if err := s.Submit(job("b-lo", "b", 0), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(job("b-hi", "b", 5), t0); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0); len(d.Bindings) != 2 {
		t.Fatalf("want b-lo and b-hi bound, got %+v", d.Bindings)
	}
	for _, id := range []string{"b-lo", "b-hi"} {
		if err := s.Started(id, t0); err != nil {
			t.Fatal(err)
		}
	}
	at := t0.Add(2 * time.Hour)
	if err := s.Checkpointed("b-hi", at, at); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(job("a1", "a", 0), at); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(at)
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "b-lo" {
		t.Fatalf("reclaim for a1 stops %+v, want b-lo alone (b-hi's restart would stop b-lo too)", d.Preemptions)
	}
	if err := s.Preempted("b-lo", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(at.Add(time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "a1" || len(d.Preemptions) != 0 {
		t.Fatalf("a1 binds and nothing else stops: got bindings %+v, preemptions %+v", d.Bindings, d.Preemptions)
	}
	if st, _ := s.Job("b-hi"); !st.State.Holding() {
		t.Fatalf("b-hi is %s, want it running on", st.State)
	}
}

// TestReclaimPastUselessVictims: on a mixed cluster (two 8-GPU H100
// hosts, twenty 4-GPU GB200 trays), queue b borrows half the cluster,
// running an 8-GPU job on each H100 host and a 4-GPU job on each tray.
// Queue a reclaims for an 8-GPU task, which only an H100 host holds. The
// tray jobs are the cheapest victims (half the lost work of an H100
// job each), and with more candidates than MaxExact the search is
// greedy: it took them first, until b no longer borrowed, then refused
// the H100 jobs (a reclaim victim joins only while its queue borrows),
// and found no plan: a waited for ever with its guarantee unused. The
// tray jobs free only GPUs no task of the gang can use; the search tries
// again with them last and stops one H100 job (a probe of issue 25 on
// the report's cluster).
func TestReclaimPastUselessVictims(t *testing.T) {
	// heteroCluster (two H100 hosts, four trays) and sixteen trays more.
	c, err := topology.Load([]byte(heteroCluster+"  - {name: \"t[05-20]\", template: gb200-4}\n"), "mixed.yaml", topology.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(n int64) []queue.Quota { return []queue.Quota{{Resource: "gpu", Nominal: n}} }
	s, err := New(Config{Cluster: c, Preemptor: p,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a", Quotas: gpu(48)}, {Name: "b", Quotas: gpu(48)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(id, q string, gpus int, models ...string) {
		t.Helper()
		if err := s.Submit(workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus, Models: models}}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	submit("b-h1", "b", 8)
	submit("b-h2", "b", 8)
	for i := range 20 {
		submit(fmt.Sprintf("b-t%02d", i+1), "b", 4, "GB200")
	}
	if d := bindAndStart(t, s, t0); len(d.Bindings) != 22 {
		t.Fatalf("bound %d of b's 22 jobs", len(d.Bindings))
	}
	now := t0.Add(time.Hour)
	if err := s.Submit(workload.Job{ID: "a1", Queue: "a", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(now)
	if len(d.Preemptions) != 1 || (d.Preemptions[0].Job != "b-h1" && d.Preemptions[0].Job != "b-h2") {
		st, _ := s.Job("a1")
		t.Fatalf("preemptions %+v, want one of b's H100 jobs; a1 waits: %v", d.Preemptions, st.Reason)
	}
}
