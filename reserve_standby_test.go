package gpusched

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// standbyScheduler is the scene of the standby tests: three 8-GPU hosts,
// a backfilling priority queue "a" and a plain queue "c" whose jobs run
// 8 GPUs for 2h, 8 for 4h and 4 for 1h from t0 (each on a host of its
// own), so that a 16-GPU gang of "a" waits for a reservation; 0
// maxReservations means New's default.
func standbyScheduler(t *testing.T, maxReservations int) *Scheduler {
	t.Helper()
	s, err := New(Config{Cluster: holdCluster(t, 3, 0), MaxReservations: maxReservations, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a", Policy: queue.Policy{Ordering: queue.PriorityAging, AgingInterval: 24 * time.Hour, Backfill: true}},
		{Name: "c"},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []workload.Job{
		standbyJob("run1", "c", 0, 1, 8, 2*time.Hour),
		standbyJob("run2", "c", 0, 1, 8, 4*time.Hour),
		standbyJob("run3", "c", 0, 1, 4, time.Hour),
	} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	startAll(t, s, s.Schedule(t0), t0)
	return s
}

// standbyBig is standbyScheduler with big, a 16-GPU gang of "a" for 1h,
// submitted at t1 and reserved in t1's cycle: it returns big's
// reservation then.
func standbyBig(t *testing.T, maxReservations int, t1 time.Time) (*Scheduler, Reservation) {
	t.Helper()
	s := standbyScheduler(t, maxReservations)
	if err := s.Submit(standbyJob("big", "a", 0, 2, 8, time.Hour), t1); err != nil {
		t.Fatal(err)
	}
	startAll(t, s, s.Schedule(t1), t1)
	r, ok := reservationOf(s, "big")
	if !ok {
		t.Fatal("big holds no reservation")
	}
	return s, r
}

func standbyJob(id, q string, prio int32, count, gpus int, rt time.Duration) workload.Job {
	return workload.Job{ID: id, Queue: q, Priority: prio, Runtime: rt, Groups: []workload.TaskGroup{{Count: count, GPUs: gpus}}}
}

// startAll reports every job d bound started at now.
func startAll(t *testing.T, s *Scheduler, d Decision, now time.Time) {
	t.Helper()
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
}

// reservationOf returns the reservation Scheduler.Reservations lists for
// job id.
func reservationOf(s *Scheduler, id string) (Reservation, bool) {
	for _, r := range s.Reservations() {
		if r.Job == id {
			return r, true
		}
	}
	return Reservation{}, false
}

// TestReservationStandby: a job that held a reservation, then waited a
// cycle without a hold (a job of higher priority in its queue blocked
// first and took the queue's hold), finds its reservation as it left it
// when its turn comes back: kept on standby, it is not computed again
// (Built stays), and it stays where it was. (Regression: a reservation
// not held in a cycle was dropped, and the job's next hold began a new
// what-if over every running job. With more backfilling queues than
// MaxReservations, most cycles' holders were such jobs: the incremental
// 10k-GPU benchmark's cycle grew from 0.36 ms a cycle over a thousand
// cycles to 1.3 ms over twenty thousand.)
func TestReservationStandby(t *testing.T) {
	t1 := t0.Add(time.Minute)
	s, first := standbyBig(t, 0, t1)
	if !first.At.Equal(t0.Add(2*time.Hour)) || !first.Built.Equal(t1) {
		t.Fatalf("big's reservation: %+v, want at %v built %v", first, t0.Add(2*time.Hour), t1)
	}

	// urgent blocks first in "a" and takes its hold: big holds none.
	t2 := t1.Add(time.Minute)
	if err := s.Submit(standbyJob("urgent", "a", 9, 1, 8, time.Hour), t2); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t2)
	startAll(t, s, d, t2)
	for _, p := range d.Pending {
		if p.Job == "big" && p.Reason != nil && !p.Reason.Reserved.IsZero() {
			t.Fatalf("big holds a reservation behind urgent: %+v", p.Reason)
		}
	}
	if r, ok := reservationOf(s, "big"); !ok || !r.Built.Equal(t1) {
		t.Fatalf("big's reservation on standby: %+v (found %v), want the one built at %v", r, ok, t1)
	}

	// urgent goes: big holds again, the same reservation.
	t3 := t2.Add(time.Minute)
	if err := s.Cancel("urgent", t3); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t3)
	startAll(t, s, d, t3)
	again, ok := reservationOf(s, "big")
	if !ok || !again.Built.Equal(t1) || !again.At.Equal(first.At) || !sameTasks(again.Tasks, first.Tasks) {
		t.Fatalf("big's reservation after standby: %+v (found %v), want %+v", again, ok, first)
	}
	for _, p := range d.Pending {
		if p.Job == "big" && (p.Reason == nil || !p.Reason.Reserved.Equal(first.At)) {
			t.Fatalf("big's reason: %+v, want reserved at %v", p.Reason, first.At)
		}
	}
}

// TestReservationStandbyTaken: a standby reservation whose place a job
// admitted meanwhile takes (it runs past the reserved time on a reserved
// GPU) is dropped, and the job's next hold is computed afresh: no
// reservation is kept on GPUs a running job holds at its time.
func TestReservationStandbyTaken(t *testing.T) {
	s, first := standbyBig(t, 0, t0.Add(time.Minute))
	// At 1h run3 ends: urgent (8 GPUs for 3h, past big's time) takes its
	// host, one of big's, while urgent2, blocked first, holds "a"'s hold.
	t2 := t0.Add(time.Hour)
	if err := s.Finished("run3", t2); err != nil {
		t.Fatal(err)
	}
	for _, j := range []workload.Job{standbyJob("urgent", "a", 9, 1, 8, 3*time.Hour), standbyJob("urgent2", "a", 8, 3, 8, time.Hour)} {
		if err := s.Submit(j, t2); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(t2)
	startAll(t, s, d, t2)
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "urgent" {
		t.Fatalf("bindings %+v, want urgent's", d.Bindings)
	}
	if !sharesHost(d.Bindings[0].Placement.Claims, flatten(first.Tasks)) {
		t.Fatalf("the scene is wrong: urgent (%v) is not on a host of big's reservation (%v)", d.Bindings[0].Placement.Claims, first.Tasks)
	}
	if r, ok := reservationOf(s, "big"); ok {
		t.Fatalf("big keeps a reservation urgent took: %+v", r)
	}

	t3 := t2.Add(time.Minute)
	if err := s.Cancel("urgent2", t3); err != nil {
		t.Fatal(err)
	}
	startAll(t, s, s.Schedule(t3), t3)
	again, ok := reservationOf(s, "big")
	if !ok || !again.Built.Equal(t3) || !again.At.After(first.At) {
		t.Fatalf("big's reservation: %+v (found %v), want one built at %v, later than %v", again, ok, t3, first.At)
	}
}

func sameTasks(a, b [][]topology.Claim) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for k := range a[i] {
			if !a[i][k].Equal(b[i][k]) {
				return false
			}
		}
	}
	return true
}

func flatten(tasks [][]topology.Claim) []topology.Claim {
	var out []topology.Claim
	for _, g := range tasks {
		out = append(out, g...)
	}
	return out
}

// TestPropertyKeptReservationsFree runs random streams through random
// backfilling queues (more of them than MaxReservations, priorities
// drawn, whole-host reservations and placement around reservations
// drawn) and checks after every cycle that each reservation kept, held or
// on standby, is free at its time: its claims fit beside every job that
// still holds resources then by its estimate (an oracle ledger). It also
// checks that standby reservations were reused, held again as they were
// built.
func TestPropertyKeptReservationsFree(t *testing.T) {
	var kept, standby, reused int
	defer func() {
		t.Logf("%d reservations kept, %d on standby, %d held again from standby", kept, standby, reused)
		if standby == 0 || reused == 0 {
			t.Error("standby reservations were never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		c := testCluster(t, rapid.IntRange(2, 5).Draw(rt, "hosts"), 0)
		policies := []queue.Policy{
			{Ordering: queue.StrictFIFO, Backfill: true},
			{Ordering: queue.PriorityAging, AgingInterval: time.Hour, Backfill: true},
			{Ordering: queue.BestEffortFIFO},
		}
		var qc queue.Config
		nq := rapid.IntRange(2, 4).Draw(rt, "queues")
		for i := 0; i < nq; i++ {
			qc.Root.Children = append(qc.Root.Children, queue.Node{Name: fmt.Sprintf("q%d", i),
				Policy: policies[rapid.IntRange(0, len(policies)-1).Draw(rt, "policy")]})
		}
		s, err := New(Config{Cluster: c, Queues: qc, MaxReservations: rapid.IntRange(1, 2).Draw(rt, "maxReservations"),
			BackfillAround: rapid.Bool().Draw(rt, "backfillAround"), ReserveWholeHosts: rapid.Bool().Draw(rt, "wholeHosts"),
			ReserveDepth: rapid.IntRange(0, 2).Draw(rt, "reserveDepth")})
		if err != nil {
			rt.Fatal(err)
		}
		var jobs []*simJob
		for i, n := 0, rapid.IntRange(2, 40).Draw(rt, "jobs"); i < n; i++ {
			g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
			jobs = append(jobs, &simJob{spec: workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: fmt.Sprintf("q%d", rapid.IntRange(0, nq-1).Draw(rt, "queue")),
				Priority: int32(rapid.IntRange(0, 3).Draw(rt, "priority")), Groups: []workload.TaskGroup{g},
				Runtime: time.Duration(rapid.IntRange(1, 12).Draw(rt, "rt")) * 10 * time.Minute},
				arrive: t0.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "at")) * time.Minute)})
		}
		wasStandby := map[string]time.Time{} // job → Built of its reservation on standby
		runStream(t, s, jobs, t0.Add(100*time.Hour), func(now time.Time, d Decision) {
			held := map[string]bool{}
			for _, p := range d.Pending {
				if p.Reason != nil && !p.Reason.Reserved.IsZero() {
					held[p.Job] = true
				}
			}
			for _, r := range s.Reservations() {
				kept++
				if built, ok := wasStandby[r.Job]; ok && held[r.Job] && r.Built.Equal(built) {
					reused++
				}
				delete(wasStandby, r.Job)
				if !held[r.Job] {
					standby++
					wasStandby[r.Job] = r.Built
				}
				if r.Forever {
					continue
				}
				l := topology.NewLedger(c)
				s.Holding(func(id string, st JobStatus) bool {
					since := st.Started
					if since.IsZero() {
						since = st.Admitted
					}
					if since.Add(st.Spec.Runtime).After(r.At) {
						if err := l.Allocate(st.Placement.Claims...); err != nil {
							t.Fatalf("oracle: %s: %v", id, err)
						}
					}
					return true
				})
				if err := l.Allocate(flatten(r.Tasks)...); err != nil {
					t.Fatalf("%v: %s's reservation at %v (built %v, held %v) is not free then: %v", now, r.Job, r.At, r.Built, held[r.Job], err)
				}
			}
		})
	})
}

// TestReservationStandbyRestart: a Scheduler restored from State while a
// reservation is on standby lists it, and decides the next cycle as the
// one that went on: the job's reservation is the one it left. With
// MaxReservations 1 it keeps two (one held, one on standby), which
// RestoreReservation accepts.
func TestReservationStandbyRestart(t *testing.T) {
	t1, t2, t3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	s, _ := standbyBig(t, 1, t1) // one held and one on standby: twice MaxReservations kept
	if err := s.Submit(standbyJob("urgent", "a", 9, 1, 8, time.Hour), t2); err != nil {
		t.Fatal(err)
	}
	startAll(t, s, s.Schedule(t2), t2)
	before := s.Reservations()
	if len(before) != 2 || before[0].Job != "urgent" || before[1].Job != "big" {
		t.Fatalf("Reservations() = %+v, want urgent's held, then big's on standby", before)
	}
	r, err := Restore(s.State())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Reservations(); !reflect.DeepEqual(got, before) {
		t.Fatalf("restored %+v, want %+v", got, before)
	}
	for _, x := range []*Scheduler{s, r} {
		if err := x.Cancel("urgent", t3); err != nil {
			t.Fatal(err)
		}
	}
	c := s.Config().Cluster
	d1, d2 := s.Schedule(t3), r.Schedule(t3)
	// The restored Scheduler has no failure cache (it is not state): it
	// places big again where the original repeats t1's explanation.
	for _, d := range []Decision{d1, d2} {
		for _, p := range d.Pending {
			if p.Reason != nil {
				p.Reason.ExplainedAt = time.Time{}
			}
		}
	}
	if want, got := d1.Format(c), d2.Format(c); got != want {
		t.Fatalf("original and restored decide differently:\n%s\n---\n%s", want, got)
	}
	if got, want := r.Reservations(), s.Reservations(); !reflect.DeepEqual(got, want) || len(got) != 1 || !got[0].Built.Equal(t1) {
		t.Fatalf("restored keeps %+v, the original %+v; want big's built at %v", got, want, t1)
	}
}
