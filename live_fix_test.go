package gpusched

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestUncordonDropsKeptShadows: a backfill reservation kept from a cycle
// in which a host was cordoned modelled the host as unusable; after
// Uncordon the Scheduler decides as one built fresh with the host usable
// (the kept shadow is dropped, as on a cordon or a health change).
func TestUncordonDropsKeptShadows(t *testing.T) {
	c := testCluster(t, 2, 2) // 2 × 8 GPUs
	qs := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Policy: queue.Policy{Backfill: true}}}}}
	build := func(cordoned bool) *Scheduler {
		s, err := New(Config{Cluster: c, Queues: qs})
		if err != nil {
			t.Fatal(err)
		}
		host := func(id string, h topology.HostID, run time.Duration) {
			first, _ := c.HostGPUs(h)
			cl := topology.Claim{Host: h}
			for g := range 8 {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
			}
			spec := workload.Job{ID: id, Queue: "q", Runtime: run, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
			if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, t0, t0); err != nil {
				t.Fatal(err)
			}
		}
		host("long", 0, 4*time.Hour)
		host("short", 1, time.Hour)
		if cordoned {
			if err := s.Cordon(c.HostName(1)); err != nil {
				t.Fatal(err)
			}
		}
		for _, j := range []workload.Job{
			{ID: "big", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}},
			{ID: "small", Queue: "q", Runtime: 2 * time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}},
		} {
			if err := s.Submit(j, t0); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	live := build(true)
	live.Schedule(t0)
	if err := live.Uncordon(c.HostName(1)); err != nil {
		t.Fatal(err)
	}
	fresh := build(false)
	now := t0.Add(time.Minute)
	a, b := live.Schedule(now), fresh.Schedule(now)
	if diff := decisionDiff(c, a, c, b); diff != "" || fmt.Sprint(live.Reservations()) != fmt.Sprint(fresh.Reservations()) {
		t.Fatalf("after Uncordon the Scheduler decides (%s)\n%s%v\none built fresh\n%s%v", diff, a.Format(c), live.Reservations(), b.Format(c), fresh.Reservations())
	}
}

// TestJobNamesQueueAfterMove: after Reconfigure moved a removed queue's
// jobs, Job(id).Spec.Queue names the queue each job is in now (it named
// the removed one).
func TestJobNamesQueueAfterMove(t *testing.T) {
	c := testCluster(t, 2, 2)
	two := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}, {Name: "b"}}}}
	s, err := New(Config{Cluster: c, Queues: two})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []workload.Job{
		{ID: "run", Queue: "b", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}},
		{ID: "wait", Queue: "b", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}},
	} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	s.Schedule(t0) // run binds; wait waits
	one := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}
	if _, err := s.Reconfigure(one, []queue.Move{{From: "b", To: "a"}}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"run", "wait"} {
		st, ok := s.Job(id)
		if !ok || st.Spec.Queue != "a" {
			t.Fatalf("job %s: queue %q, want a (moved from b)", id, st.Spec.Queue)
		}
	}
	s.Holding(func(id string, st JobStatus) bool {
		if st.Spec.Queue != "a" {
			t.Errorf("holding job %s names queue %q", id, st.Spec.Queue)
		}
		return true
	})
}

// TestCordonedReleaseKeepsCachedFailure: CPUs freed on a cordoned host
// cannot take a waiting job's task, so its cached placement failure holds
// (the cache asked HostHealth, not HostUsable, and placed it again); after
// Uncordon it is placed again, and binds.
func TestCordonedReleaseKeepsCachedFailure(t *testing.T) {
	c := testCluster(t, 2, 2)
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	whole := []workload.TaskGroup{{Count: 1, GPUs: 8, CPUMilli: 200000}} // of 224000
	for _, id := range []string{"a", "b"} {
		if err := s.Submit(workload.Job{ID: id, Queue: "q", Groups: whole}, t0); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(t0)
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	// g is CPU-only: the cache's test for it looks at the host's free
	// CPU, which a cordon does not zero (free GPU counts it does).
	if err := s.Submit(workload.Job{ID: "g", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, CPUMilli: 100000}}}, t0); err != nil {
		t.Fatal(err)
	}
	s.Schedule(t0) // g fails: cached
	st, _ := s.Job("b")
	host := c.HostName(st.Placement.Claims[0].Host)
	if err := s.Cordon(host); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	if err := s.Finished("b", now); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(now)
	if len(d.Bindings) != 0 || len(d.Pending) != 1 || !d.Pending[0].Reason.ExplainedAt.Before(now) {
		t.Fatalf("a release on a cordoned host: want g's failure repeated from the cache, got %+v", d.Pending)
	}
	if err := s.Uncordon(host); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if d = s.Schedule(now); len(d.Bindings) != 1 || d.Bindings[0].Job != "g" {
		t.Fatalf("after Uncordon g binds there: %s", d.Format(c))
	}
}

// TestReservationAcrossCordonedHost (found by snapshot's
// TestLoadedDecidesAsOriginalBackfillPreempting once cordons were in its
// streams): searching back for the earliest time a blocked gang fits, the
// reservation puts released jobs back on its what-if ledger; one on a
// host cordoned since could not be put back (Allocate refuses a cordoned
// host), so the search saw its GPUs free too early and reserved a time at
// which it still runs. Here j2 holds h1 and the cordoned h2 until 3 h:
// three whole hosts are free at 3 h, not at 2 h.
func TestReservationAcrossCordonedHost(t *testing.T) {
	c := testCluster(t, 5, 5)
	qs := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Policy: queue.Policy{Backfill: true}}}}}
	s, err := New(Config{Cluster: c, Queues: qs})
	if err != nil {
		t.Fatal(err)
	}
	whole := func(h topology.HostID) topology.Claim {
		first, _ := c.HostGPUs(h)
		cl := topology.Claim{Host: h}
		for g := range 8 {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
		}
		return cl
	}
	run := func(id string, end time.Duration, hosts ...topology.HostID) {
		var cls []topology.Claim
		for _, h := range hosts {
			cls = append(cls, whole(h))
		}
		spec := workload.Job{ID: id, Queue: "q", Runtime: end, Groups: []workload.TaskGroup{{Count: len(hosts), GPUs: 8}}}
		if err := s.Restore(spec, [][]topology.Claim{cls}, queue.Running, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	run("j1", time.Hour, 0)
	run("j3", 2*time.Hour, 3)
	run("j2", 3*time.Hour, 1, 2)
	run("j5", 10*time.Hour, 4)
	if err := s.Cordon(c.HostName(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(workload.Job{ID: "x", Queue: "q", Groups: []workload.TaskGroup{{Count: 3, GPUs: 8}}}, t0); err != nil {
		t.Fatal(err)
	}
	s.Schedule(t0)
	rs := s.Reservations()
	if len(rs) != 1 || !rs[0].At.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("reservations %+v: want x at 3h", rs)
	}
	for _, cl := range rs[0].Tasks[0] {
		if cl.Host == 2 {
			t.Fatalf("x reserved the cordoned host: %+v", rs[0])
		}
	}
}
