package gpusched

import (
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Re-placements of running jobs honour the moved job's own host filter:
// a defragmentation or consolidation move, and an elastic gang's grow.
// Before, they placed the job with its spec alone (preempt's
// Job.request, growPlacement's sub-request), so a job with a node
// selector could be moved or grown onto a host outside it.

// TestDefragMoveHonoursHostFilter: defragScheduler's cheapest plan moves
// b1 and b2 (hosts 2 and 3, tor2) into tor1. With b1 allowed only hosts
// 2 and 3 (as a job-wide filter, or as its one group's), that plan would
// put it on a host it forbids: the plan moves a1 and a2 (hosts 0 and 1)
// into tor2 instead (more lost work, but allowed), and nothing lands
// outside its filter.
func TestDefragMoveHonoursHostFilter(t *testing.T) {
	tor2 := func(h topology.HostID) bool { return h >= 2 }
	for _, tc := range []struct {
		name string
		f    HostFilter
	}{
		{"allow", HostFilter{Key: "tor2", Allow: tor2}},
		{"group", HostFilter{Key: "tor2g", Group: func(_ int, h topology.HostID) bool { return tor2(h) }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, now := defragScheduler(t, &DefragConfig{}, 0)
			if err := s.SetHostFilter("b1", tc.f); err != nil {
				t.Fatal(err)
			}
			d := s.Schedule(now)
			for _, m := range d.Migrations {
				if m.Job == "b1" && !tor2(m.To[0].Host) {
					t.Fatalf("b1 moved to host %d, outside its filter:\n%s", m.To[0].Host, d.Format(s.Cluster()))
				}
			}
			if got := migrationIDs(d); !slices.Equal(got, []string{"a1", "a2"}) {
				t.Fatalf("migrations %v, want [a1 a2]:\n%s", got, d.Format(s.Cluster()))
			}
			for _, m := range d.Migrations {
				if !tor2(m.To[0].Host) {
					t.Errorf("%s moved to host %d, want tor2", m.Job, m.To[0].Host)
				}
			}
		})
	}
}

// TestDefragNoMoveOutsideHostFilter: with b1 and a1 both kept where they
// are (each allowed only its own host), no ToR can be freed: no plan.
func TestDefragNoMoveOutsideHostFilter(t *testing.T) {
	s, now := defragScheduler(t, &DefragConfig{}, 0)
	for id, h := range map[string]topology.HostID{"a1": 0, "b1": 2} {
		if err := s.SetHostFilter(id, HostFilter{Key: id, Allow: func(x topology.HostID) bool { return x == h }}); err != nil {
			t.Fatal(err)
		}
	}
	if d := s.Schedule(now); len(d.Migrations) != 0 {
		t.Fatalf("migrations %v, want none:\n%s", migrationIDs(d), d.Format(s.Cluster()))
	}
}

// TestConsolidateMoveHonoursHostFilter: two DGX H100 hosts, x (4 GPUs,
// 10 minutes) on host 0 and y (4 GPUs, 2 hours) on host 1; nothing
// waits. Consolidation frees a host by moving the job that loses least:
// x, to host 1. With x allowed only host 0, it moves y to host 0
// instead; with y kept on host 1 as well, it moves nothing.
func TestConsolidateMoveHonoursHostFilter(t *testing.T) {
	build := func(t *testing.T) (*Scheduler, time.Time) {
		c := testCluster(t, 2, 0)
		s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
			Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{}}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		for h, r := range []struct {
			id  string
			ran time.Duration
		}{{"x", 10 * time.Minute}, {"y", 2 * time.Hour}} {
			first, _ := c.HostGPUs(topology.HostID(h))
			cl := topology.Claim{Host: topology.HostID(h)}
			for g := 0; g < 4; g++ {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
			}
			spec := workload.Job{ID: r.id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
			if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, now.Add(-r.ran), now.Add(-r.ran)); err != nil {
				t.Fatal(err)
			}
		}
		return s, now
	}
	only := func(h topology.HostID) HostFilter {
		return HostFilter{Key: "only", Allow: func(x topology.HostID) bool { return x == h }}
	}
	t.Run("unfiltered", func(t *testing.T) {
		s, now := build(t)
		d := s.Schedule(now)
		if got := migrationIDs(d); !slices.Equal(got, []string{"x"}) || d.Migrations[0].To[0].Host != 1 {
			t.Fatalf("want x moved to host 1:\n%s", d.Format(s.Cluster()))
		}
	})
	t.Run("x kept", func(t *testing.T) {
		s, now := build(t)
		if err := s.SetHostFilter("x", only(0)); err != nil {
			t.Fatal(err)
		}
		d := s.Schedule(now)
		if got := migrationIDs(d); !slices.Equal(got, []string{"y"}) || d.Migrations[0].To[0].Host != 0 {
			t.Fatalf("want y moved to host 0:\n%s", d.Format(s.Cluster()))
		}
	})
	t.Run("both kept", func(t *testing.T) {
		s, now := build(t)
		if err := s.SetHostFilter("x", only(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetHostFilter("y", HostFilter{Key: "y1", Group: func(_ int, x topology.HostID) bool { return x == 1 }}); err != nil {
			t.Fatal(err)
		}
		if d := s.Schedule(now); len(d.Migrations) != 0 {
			t.Fatalf("want no move:\n%s", d.Format(s.Cluster()))
		}
	})
}

// TestElasticGrowHonoursHostFilter: three DGX H100 hosts in one ToR. e
// (12 tasks of 1 GPU, at least 4) is allowed hosts 0 and 1 and fills
// host 0 and half of host 1; f fills the rest of host 1. A GPU of e on
// host 1 fails: e shrinks to 11. Only host 2 has room, and e's filter
// forbids it (job-wide, or for its one group): e does not grow there.
func TestElasticGrowHonoursHostFilter(t *testing.T) {
	lo := func(h topology.HostID) bool { return h <= 1 }
	for _, tc := range []struct {
		name string
		f    HostFilter
	}{
		{"allow", HostFilter{Key: "lo", Allow: lo}},
		{"group", HostFilter{Key: "log", Group: func(_ int, h topology.HostID) bool { return lo(h) }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := elasticScheduler(t, 3)
			c := s.Cluster()
			e := workload.Job{ID: "e", Queue: "q", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 12, MinCount: 4, GPUs: 1}}}
			f := workload.Job{ID: "f", Queue: "q", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
			for _, j := range []workload.Job{e, f} {
				if err := s.Submit(j, t0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.SetHostFilter("e", tc.f); err != nil {
				t.Fatal(err)
			}
			if err := s.SetHostFilter("f", HostFilter{Key: "h1", Allow: func(h topology.HostID) bool { return h == 1 }}); err != nil {
				t.Fatal(err)
			}
			if d := s.Schedule(t0); len(d.Bindings) != 2 {
				t.Fatalf("want e and f bound:\n%s", d.Format(c))
			}
			for _, id := range []string{"e", "f"} {
				if err := s.Started(id, t0); err != nil {
					t.Fatal(err)
				}
			}
			st, _ := s.Job("e")
			bad := topology.GPUID(-1)
			for _, cl := range st.Placement.Claims {
				if !lo(cl.Host) {
					t.Fatalf("e placed on host %d", cl.Host)
				}
				if cl.Host == 1 {
					bad = cl.GPUs[0].GPU
				}
			}
			if bad < 0 {
				t.Fatalf("e has no task on host 1: %v", st.Placement.Claims)
			}
			at := t0.Add(time.Hour)
			if _, err := s.SetGPUHealth(bad, topology.Failed); err != nil {
				t.Fatal(err)
			}
			d := s.Schedule(at)
			if len(d.Recoveries) != 1 || d.Recoveries[0].Action != preempt.ActionShrink {
				t.Fatalf("want e shrunk:\n%s", d.Format(c))
			}
			if err := s.Shrunk("e", at.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			for i := 2; i < 5; i++ {
				d = s.Schedule(at.Add(time.Duration(i) * time.Minute))
				for _, g := range d.Grows {
					for _, cl := range g.Claims {
						if !lo(cl.Host) {
							t.Fatalf("%s grown onto host %d, outside its filter:\n%s", g.Job, cl.Host, d.Format(c))
						}
					}
				}
			}
		})
	}
}

// TestHostFilterNotInherited: a filter belongs to the job it was set
// for. A job submitted again under the same ID (ForgetEnded, as the
// Kubernetes host does for a gang recreated under its name) has none
// until its host sets one: it is placed, moved and grown anywhere. Before,
// the old job's filter, not yet swept, still narrowed its placements
// (though not its groups'), so a recreated gang without node constraints
// could wait for hosts its predecessor was confined to.
func TestHostFilterNotInherited(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 3, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(gpuJob("a", 8), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHostFilter("a", HostFilter{Key: "none", Allow: func(topology.HostID) bool { return false }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel("a", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ForgetEnded("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(gpuJob("a", 8), t0.Add(1)); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0.Add(2)); len(d.Bindings) != 1 {
		t.Fatalf("the new a is not placed:\n%s", d.Format(s.Cluster()))
	}
}

// TestHostFilterDropsForbiddenNomination: a filter set while its job is
// nominated (promised a placement: here b1, migrated, is to bind on its
// destination in tor1 in the next cycle) applies to that placement too:
// the new filter allows only host 3, so b1 does not bind on its
// destination; it waits in its queue and is placed only where the filter
// allows. The same when the filter is set while b1 is still moving.
// Before, the nomination bound it where its filter forbids.
func TestHostFilterDropsForbiddenNomination(t *testing.T) {
	t.Run("nominated", func(t *testing.T) { forbiddenDestination(t, false) })
	t.Run("moving", func(t *testing.T) { forbiddenDestination(t, true) })
}

// forbiddenDestination is TestHostFilterDropsForbiddenNomination with
// the filter set after b1 reports Migrated (nominated), or before (while
// it moves: Migrated does not nominate it on its destination then).
func forbiddenDestination(t *testing.T, moving bool) {
	s, now := defragScheduler(t, &DefragConfig{}, 0)
	d := s.Schedule(now)
	if got := migrationIDs(d); !slices.Equal(got, []string{"b1", "b2"}) {
		t.Fatalf("migrations %v, want [b1 b2]", got)
	}
	h3 := func(h topology.HostID) bool { return h == 3 }
	if moving {
		// Set while b1 still runs, before it reports Migrated.
		if err := s.SetHostFilter("b1", HostFilter{Key: "h3", Allow: h3}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b1", "b2"} {
		if err := s.Migrated(id, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if !moving {
		if err := s.SetHostFilter("b1", HostFilter{Key: "h3", Allow: h3}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i < 5; i++ {
		d = s.Schedule(now.Add(time.Duration(i) * time.Minute))
		for _, b := range d.Bindings {
			if b.Job == "b1" && !h3(b.Placement.Claims[0].Host) {
				t.Fatalf("b1 bound on host %d, which its filter forbids:\n%s", b.Placement.Claims[0].Host, d.Format(s.Cluster()))
			}
		}
	}
	if err := s.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
}
