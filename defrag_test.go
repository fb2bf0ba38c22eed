package gpusched

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// defragScheduler: 4 DGX H100 hosts, 2 to a ToR, one queue. a1 and a2
// (4 GPUs on hosts 1 and 2, tor1) ran 1 and 2 hours; b1 and b2 (4 GPUs on
// hosts 3 and 4, tor2) 10 minutes. 16 GPUs are free but no ToR has 16: a
// 2 × 8-GPU gang required in one ToR is blocked by fragmentation. Moving
// b1 and b2 into tor1 loses the least (2 × 4 GPUs × 10 min).
func defragScheduler(t *testing.T, dc *DefragConfig, minRunB1 time.Duration) (*Scheduler, time.Time) {
	t.Helper()
	sp, err := topology.Generator{Name: "t", Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}}, Defrag: dc})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(3 * time.Hour)
	for i, ran := range []time.Duration{time.Hour, 2 * time.Hour, 10 * time.Minute, 10 * time.Minute} {
		id := []string{"a1", "a2", "b1", "b2"}[i]
		spec := workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
		if id == "b1" {
			spec.MinRunTime = minRunB1
		}
		first, _ := c.HostGPUs(topology.HostID(i))
		cl := topology.Claim{Host: topology.HostID(i)}
		for g := 0; g < 4; g++ {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
		}
		if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, now.Add(-ran), now.Add(-ran)); err != nil {
			t.Fatal(err)
		}
	}
	gang := workload.Job{ID: "big", Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}},
		Topology: []workload.Constraint{{Level: "tor", Required: true}}}
	if err := s.Submit(gang, now); err != nil {
		t.Fatal(err)
	}
	return s, now
}

func migrationIDs(d Decision) []string {
	var ids []string
	for _, m := range d.Migrations {
		ids = append(ids, m.Job)
	}
	return ids
}

// TestDefragMigratesForFragmentedGang: the gang gets migrations of b1 and
// b2; after both report Migrated, the next cycle binds the gang in tor2
// and b1, b2 on their destinations in tor1; the ledger stays consistent.
func TestDefragMigratesForFragmentedGang(t *testing.T) {
	s, now := defragScheduler(t, &DefragConfig{}, 0)
	d := s.Schedule(now)
	if got := migrationIDs(d); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("migrations %v, want [b1 b2]", got)
	}
	for _, m := range d.Migrations {
		if m.For != "big" || len(m.To) != 1 || m.To[0].Host > 1 || m.Lost != preempt.GPUTime(4*600*1000) {
			t.Fatalf("migration %+v", m)
		}
	}
	if len(d.Bindings) != 0 || len(d.Preemptions) != 0 {
		t.Fatalf("bindings %v preemptions %v", d.Bindings, d.Preemptions)
	}
	// A second cycle issues nothing new (the moves are in flight).
	if d2 := s.Schedule(now.Add(time.Minute)); len(d2.Migrations) != 0 {
		t.Fatalf("second cycle migrates %v", migrationIDs(d2))
	}
	if err := s.Migrated("a1", now); !errors.Is(err, ErrNotMoving) {
		t.Fatalf("Migrated for a job not moving: %v", err)
	}
	for _, id := range []string{"b1", "b2"} {
		if err := s.Migrated(id, now.Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	d = s.Schedule(now.Add(2 * time.Minute))
	bound := map[string][]topology.HostID{}
	for _, b := range d.Bindings {
		for _, cl := range b.Placement.Claims {
			bound[b.Job] = append(bound[b.Job], cl.Host)
		}
	}
	if !slices.Equal(bound["big"], []topology.HostID{2, 3}) || len(bound["b1"]) != 1 || bound["b1"][0] > 1 || len(bound["b2"]) != 1 || bound["b2"][0] > 1 {
		t.Fatalf("bindings %v", bound)
	}
	if err := s.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
	if free := s.Ledger().FreeGPUs(s.Cluster().Root()); free != 0 {
		t.Fatalf("%d GPUs free after the moves, want 0", free)
	}
}

// TestDefragBudgetStopsPlan: a budget of one migration an hour stops the
// two-migration plan.
func TestDefragBudgetStopsPlan(t *testing.T) {
	s, now := defragScheduler(t, &DefragConfig{Budget: preempt.DefragBudget{PerHour: 1}}, 0)
	if d := s.Schedule(now); len(d.Migrations) != 0 {
		t.Fatalf("migrations %v past the budget", migrationIDs(d))
	}
}

// TestDefragMinRunTime: b1 inside its minimum run time is never moved;
// the plan moves tor1's jobs instead.
func TestDefragMinRunTime(t *testing.T) {
	s, now := defragScheduler(t, &DefragConfig{}, time.Hour)
	d := s.Schedule(now)
	if got := migrationIDs(d); slices.Contains(got, "b1") || len(got) == 0 {
		t.Fatalf("migrations %v", got)
	}
}

// TestDefragOffByDefault: without Config.Defrag nothing moves.
func TestDefragOffByDefault(t *testing.T) {
	s, now := defragScheduler(t, nil, 0)
	if d := s.Schedule(now); len(d.Migrations) != 0 {
		t.Fatalf("migrations %v with defragmentation off", migrationIDs(d))
	}
	if _, err := New(Config{Cluster: s.Cluster(), Defrag: &DefragConfig{After: -1}}); err == nil {
		t.Fatal("negative After accepted")
	}
}

// TestDefragWaitsAfter: a gang that has not waited After gets nothing.
func TestDefragWaitsAfter(t *testing.T) {
	s, now := defragScheduler(t, &DefragConfig{After: time.Hour}, 0)
	if d := s.Schedule(now); len(d.Migrations) != 0 {
		t.Fatalf("migrations %v before After", migrationIDs(d))
	}
	if d := s.Schedule(now.Add(time.Hour)); len(d.Migrations) != 2 {
		t.Fatalf("migrations %v after After", migrationIDs(d))
	}
}
