package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestDefragAfterCachedCapacity (found, as testDroppedMove, by snapshot's
// TestLoadedDecidesAsOriginalDefrag): a gang whose placement failure was
// cached as "capacity" stays cached when GPUs free on hosts that cannot
// take its task, though together they turn its failure into
// fragmentation. Defragmentation must not depend on that cached verdict:
// the Scheduler moves jobs for it as one built fresh at that point does.
func TestDefragAfterCachedCapacity(t *testing.T) {
	s, c, run := defragRunning(t, 0)
	run("a", 0, 0, 4)
	run("b", 0, 4, 2) // host 0: 2 free
	run("c", 1, 0, 4)
	run("d", 1, 4, 4) // host 1: full
	now := t0.Add(time.Hour)
	if err := s.Submit(workload.Job{ID: "g", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(now)
	if r := d.Pending[0].Reason; r == nil || r.Placement == nil || r.Placement.Verdict != gang.VerdictCapacity || len(d.Migrations) > 0 {
		t.Fatalf("2 GPUs free: want a capacity failure and no move, got %+v, %v", d.Pending, d.Migrations)
	}
	// b and d end: 4 + 4 GPUs free, none of the two hosts can take 8.
	now = now.Add(time.Minute)
	for _, id := range []string{"b", "d"} {
		if err := s.Finished(id, now); err != nil {
			t.Fatal(err)
		}
	}
	d = s.Schedule(now)
	if len(d.Migrations) == 0 {
		t.Fatalf("8 GPUs free on two hosts: want a migration for g, got %s", d.Format(c))
	}
	// The rest (TestDefragDroppedMoveFreesItsDestination) goes on from
	// here.
	testDroppedMove(t, s, c, d, now)
}

// testDroppedMove: w (4 GPUs) fails while the move's destination is held
// and g's nomination holds the rest; then the moving job ends instead of
// migrating: g binds where it was promised, and the destination held for
// the move is free again, so w binds there. (A dropped move logged no
// gain: w's cached failure held, because the only gain logged, on the
// moving job's own host, went to g.)
func testDroppedMove(t *testing.T, s *Scheduler, c *topology.Cluster, d Decision, now time.Time) {
	m := d.Migrations[0]
	if len(d.Migrations) != 1 {
		t.Fatalf("want one move: %s", d.Format(c))
	}
	now = now.Add(time.Minute)
	if err := s.Submit(workload.Job{ID: "w", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, now); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(now); len(d.Bindings) != 0 {
		t.Fatalf("w binds while the move's destination is held: %s", d.Format(c))
	}
	now = now.Add(time.Minute)
	if err := s.Finished(m.Job, now); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(now)
	var bound []string
	for _, b := range d.Bindings {
		bound = append(bound, b.Job)
	}
	if len(bound) != 2 || bound[0] != "g" || bound[1] != "w" || d.Bindings[1].Placement.Claims[0].Host != m.To[0].Host {
		t.Fatalf("the move's job ended: want g bound, then w on the destination %s, got %s", c.HostName(m.To[0].Host), d.Format(c))
	}
}
