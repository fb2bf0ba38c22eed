package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestDefragFailureNotSticky (issue 25, item 1; a QA probe suspected the
// defragmentation concern's memo of failed plans, which State does not
// save): a plan that failed because its only movable job was inside its
// minimum run time was not planned again until the ledger changed, so
// the original Scheduler kept the gang waiting after the protection
// lapsed, while one restored from its State (no memo) moved the job. A
// failed plan holds at most for the instant it was made at: both move
// the job once it may move.
func TestDefragFailureNotSticky(t *testing.T) {
	s, c, run := defragRunning(t, time.Hour)
	run("a", 0, 0, 4)
	run("b", 1, 0, 4) // 4 free on each host
	now := t0.Add(10 * time.Minute)
	if err := s.Submit(workload.Job{ID: "g", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(now); len(d.Migrations) > 0 || len(d.Bindings) > 0 {
		t.Fatalf("a and b inside their minimum run time: want no move, got %s", d.Format(c))
	}
	r, err := Restore(s.State())
	if err != nil {
		t.Fatal(err)
	}
	now = t0.Add(2 * time.Hour) // a and b may move now; nothing else changed
	d1, d2 := s.Schedule(now), r.Schedule(now)
	if len(d1.Migrations) != 1 {
		t.Errorf("original: want a move for g once a and b may move, got %s", d1.Format(c))
	}
	if a, b := d1.Format(c), d2.Format(c); a != b {
		t.Errorf("original and restored decide differently:\n%s\n---\n%s", a, b)
	}
}

// defragRunning returns a Scheduler with defragmentation on, on 2 hosts
// of 8 GPUs with one queue q, and run, which restores a running job of n
// GPUs (one task, minimum run time minRun) on GPUs from..from+n-1 of
// host h, started at t0.
func defragRunning(t *testing.T, minRun time.Duration) (*Scheduler, *topology.Cluster, func(id string, h topology.HostID, from, n int)) {
	c := testCluster(t, 2, 2)
	qs := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}
	s, err := New(Config{Cluster: c, Queues: qs, Defrag: &DefragConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, func(id string, h topology.HostID, from, n int) {
		first, _ := c.HostGPUs(h)
		cl := topology.Claim{Host: h}
		for g := from; g < from+n; g++ {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
		}
		spec := workload.Job{ID: id, Queue: "q", MinRunTime: minRun, Groups: []workload.TaskGroup{{Count: 1, GPUs: n}}}
		if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
}
