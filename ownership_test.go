package gpusched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestJobReturnsCopies (issue 14): Job hands out deep copies. Before, the
// Spec's Groups slice was the Scheduler's own: editing the copy changed
// what the Scheduler reported, and with a PlanPreemptor, Count = 0 on it
// made the next cycle panic ("filing a holding job for preemption: …
// count 0").
func TestJobReturnsCopies(t *testing.T) {
	pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Preemptor: pp, Queues: queue.Config{
		Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	low := workload.Job{ID: "low", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8, Models: []string{"H100-SXM5-80GB"}}}, Topology: []workload.Constraint{{Level: "host"}}, Runtime: time.Hour}
	if err := s.Submit(low, t0); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0); len(d.Bindings) != 1 {
		t.Fatalf("low not bound:\n%s", d.Format(s.Cluster()))
	} else {
		d.Bindings[0].Placement.Claims[0].Host = 99 // the host's copy
		d.Bindings[0].Placement.Claims[0].GPUs[0].GPU = 99
	}
	if err := s.Started("low", t0); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Job("low")
	st.Spec.Groups[0].Count = 0
	st.Spec.Groups[0].Models[0] = "X"
	st.Spec.Topology[0].Level = "tor"
	st.Placement.Claims[0].Host = 7
	st.Placement.Claims[0].GPUs[0].GPU = 42
	again, _ := s.Job("low")
	if g := again.Spec.Groups[0]; g.Count != 1 || g.Models[0] != "H100-SXM5-80GB" || again.Spec.Topology[0].Level != "host" {
		t.Fatalf("editing Job's copy changed the Scheduler's job: %+v", again.Spec)
	}
	if c := again.Placement.Claims[0]; c.Host != 0 || c.GPUs[0].GPU != 0 {
		t.Fatalf("editing a copy changed the Scheduler's placement: %+v", c)
	}
	// The next cycle plans a preemption of low: no panic, low is the victim.
	high := workload.Job{ID: "high", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}, Runtime: time.Hour}
	if err := s.Submit(high, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t0.Add(time.Minute))
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "low" {
		t.Fatalf("want low preempted:\n%s", d.Format(s.Cluster()))
	}
	if err := s.ledger.Check(); err != nil {
		t.Fatal(err)
	}
	// A waiting job's reason is a copy too.
	w, _ := s.Job("high")
	if w.Reason == nil || len(w.Reason.Victims) != 1 {
		t.Fatalf("reason %+v", w.Reason)
	}
	w.Reason.Victims[0] = "someone"
	if w2, _ := s.Job("high"); w2.Reason.Victims[0] != "low" {
		t.Fatal("editing a reason's copy changed the Scheduler's")
	}
}

// TestReadOnlyAccessors (issue 14): Ledger and Tree are views without
// writers; a type assertion does not get the Scheduler's own back.
func TestReadOnlyAccessors(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	if _, ok := s.Ledger().(*topology.Ledger); ok {
		t.Fatal("Ledger() is the Scheduler's *topology.Ledger")
	}
	if _, ok := s.Ledger().(interface{ Allocate(...topology.Claim) error }); ok {
		t.Fatal("Ledger() can allocate")
	}
	if _, ok := any(s.Tree()).(*queue.Tree); ok {
		t.Fatal("Tree() is the Scheduler's *queue.Tree")
	}
	if err := s.Submit(gpuJob("a", 2), t0); err != nil {
		t.Fatal(err)
	}
	id, _ := s.Tree().Lookup("q")
	leaf, ok := s.Tree().LeafOf(id)
	if !ok || leaf.Len() != 1 {
		t.Fatal("the tree view does not show the waiting job")
	}
	s.Schedule(t0)
	if free := s.Ledger().FreeGPUs(s.Cluster().Root()); free != 6 {
		t.Fatalf("the ledger view shows %d free GPUs, want 6", free)
	}
	if used, _ := s.Tree().Usage(id); used != nil {
		used[0] = -1
		if u2, _ := s.Tree().Usage(id); u2[0] == -1 {
			t.Fatal("the tree view shares its vectors")
		}
	}
}

// TestRestoreRejects (issue 14): bad restored values are errors naming the
// job and the field, never a panic. Before, a MIG claim with Profile −1
// panicked (only ≥ len was checked), and a start 100 h in the future was
// accepted (the planner then took the job for a zero-cost victim).
func TestRestoreRejects(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	mig := workload.Job{ID: "m", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, MIGProfile: "1g.10gb"}}}
	for _, p := range []topology.MIGProfileID{-1, -128, 127} {
		err := s.Restore(mig, [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: 0, Kind: topology.ClaimMIG, Profile: p}}}}}, queue.Running, t0, t0)
		if err == nil || !strings.Contains(err.Error(), "job m") || !strings.Contains(err.Error(), "MIG instance") {
			t.Errorf("profile %d: %v", p, err)
		}
	}
	whole := [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: 0}, {GPU: 1}}}}}
	now := t0.Add(10 * time.Hour)
	for _, tc := range []struct {
		name  string
		r     RestoredJob
		field string
		want  string
	}{
		{"start in the future", RestoredJob{State: queue.Running, Submitted: t0, Started: now.Add(100 * time.Hour), Now: now}, "started", "is after now"},
		{"start before submission", RestoredJob{State: queue.Running, Submitted: t0, Started: t0.Add(-time.Hour), Now: now}, "started", "before the job was submitted"},
		{"no start", RestoredJob{State: queue.Running, Submitted: t0, Now: now}, "started", "needs its start time"},
		{"submitted in the future", RestoredJob{State: queue.Pending, Submitted: now.Add(time.Second), Now: now}, "submitted", "is after now"},
		{"admitted in the future", RestoredJob{State: queue.Admitted, Submitted: t0, Admitted: now.Add(time.Hour), Now: now}, "admitted", "is after now"},
		{"admitted before submission", RestoredJob{State: queue.Admitted, Submitted: t0, Admitted: t0.Add(-1), Now: now}, "admitted", "before"},
		{"no now", RestoredJob{State: queue.Pending, Submitted: t0}, "now", "missing"},
		{"negative preemptions", RestoredJob{State: queue.Pending, Submitted: t0, Now: now, Preemptions: -1}, "preemptions", "negative"},
		{"negative restarts", RestoredJob{State: queue.Pending, Submitted: t0, Now: now, Restarts: -3}, "restarts", "negative"},
		{"negative progress", RestoredJob{State: queue.Requeued, Submitted: t0, Now: now, Progress: -time.Minute}, "progress", "negative"},
		{"waiting with claims", RestoredJob{State: queue.Requeued, Submitted: t0, Now: now, Tasks: whole}, "tasks", "holds no claims"},
	} {
		r := tc.r
		r.Spec = gpuJob("x", 2)
		if r.State.Holding() {
			r.Tasks = whole
		}
		err := s.RestoreJob(r)
		var fe *workload.FieldError
		if !errors.As(err, &fe) || fe.Job != "x" || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a FieldError for job x, field %s, %q", tc.name, err, tc.field, tc.want)
		}
	}
	if err := s.Restore(gpuJob("y", 2), whole, queue.Running, t0, t0.Add(-time.Minute)); err == nil || !strings.Contains(err.Error(), "started") {
		t.Errorf("Restore with a start before submission: %v", err)
	}
	if s.Len() != 0 || s.Ledger().FreeGPUs(s.Cluster().Root()) != 8 {
		t.Fatalf("a rejected restore left %d jobs", s.Len())
	}
}

// TestRestoreJobKeepsCounts: RestoreJob restores the counts, progress,
// waiting states and admission time that Restore and Submit cannot.
func TestRestoreJobKeepsCounts(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	now := t0.Add(3 * time.Hour)
	whole := [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: 0}, {GPU: 1}}}}}
	for _, r := range []RestoredJob{
		{Spec: gpuJob("run", 2), State: queue.Running, Tasks: whole, Submitted: t0, Admitted: t0.Add(time.Minute), Started: t0.Add(2 * time.Minute), Preemptions: 2, Restarts: 1, Progress: 30 * time.Minute},
		{Spec: gpuJob("pre", 4), State: queue.Preempted, Submitted: t0.Add(time.Hour), Preemptions: 3, Progress: time.Hour},
		{Spec: gpuJob("req", 1), State: queue.Requeued, Submitted: t0.Add(2 * time.Hour), Restarts: 2},
	} {
		r.Now = now
		if err := s.RestoreJob(r); err != nil {
			t.Fatal(err)
		}
	}
	run, _ := s.Job("run")
	if run.Preemptions != 2 || run.Restarts != 1 || !run.Admitted.Equal(t0.Add(time.Minute)) || !run.Started.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("run: %+v", run)
	}
	pre, _ := s.Job("pre")
	if pre.State != queue.Preempted || pre.Preemptions != 3 {
		t.Errorf("pre: %+v", pre)
	}
	if _, saved, _ := s.Progress("pre"); saved != time.Hour {
		t.Errorf("pre's progress %v", saved)
	}
	if req, _ := s.Job("req"); req.State != queue.Requeued || req.Restarts != 2 {
		t.Errorf("req: %+v", req)
	}
	if err := s.RestoreJob(RestoredJob{Spec: gpuJob("req", 1), State: queue.Pending, Submitted: now, Now: now}); !errors.Is(err, ErrDuplicateJob) {
		t.Errorf("duplicate: %v", err)
	}
	if err := s.ledger.Check(); err != nil {
		t.Fatal(err)
	}
}
