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

// TestReservationWithNomination: a backfill reservation computed while a
// nomination holds its placement's free parts (its victim still
// stopping) models the nominated job as running on its placement from now
// for its runtime estimate. (Regression: the shadow kept the trial holds
// for ever and released the victim at its own estimated end, so the
// reservation was too late, or on the GPUs the nominated job takes.)
func TestReservationWithNomination(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		lowGPUs                int
		lowRT, otherRT, highRT time.Duration
		// onLow: the reservation is on the victim's (the nominated)
		// host, at the nominated job's end; else on the other host at
		// its end.
		onLow bool
	}{
		// high takes low's 4 GPUs and the host's 4 free ones; big fits
		// there once high ends, long before the other host frees.
		{name: "after-nominated-end", lowGPUs: 4, lowRT: 10 * time.Hour, otherRT: 20 * time.Hour, highRT: 3 * time.Hour, onLow: true},
		// low's estimated end is early, but high takes its GPUs for
		// 10h: big goes to the other host when it frees.
		{name: "not-on-nominated", lowGPUs: 8, lowRT: 2 * time.Hour, otherRT: 5 * time.Hour, highRT: 10 * time.Hour, onLow: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := holdCluster(t, 2, 0)
			qc := queue.Config{Root: queue.Node{Children: []queue.Node{
				{Name: "a"}, {Name: "b", Policy: queue.Policy{Backfill: true}}, {Name: "c"},
			}}}
			pp, err := NewPlanPreemptor(preempt.Config{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Cluster: c, Queues: qc, Preemptor: pp})
			if err != nil {
				t.Fatal(err)
			}
			job := func(id, q string, prio int32, gpus int, rt time.Duration) workload.Job {
				return workload.Job{ID: id, Queue: q, Priority: prio, Runtime: rt, Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}}
			}
			now := t0
			other := job("other", "c", 0, 8, tc.otherRT)
			other.NonPreemptible = true
			for _, j := range []workload.Job{job("low", "a", 0, tc.lowGPUs, tc.lowRT), other} {
				if err := s.Submit(j, now); err != nil {
					t.Fatal(err)
				}
			}
			if d := holdCycle(t, s, now); len(d.Bindings) != 2 {
				t.Fatalf("start:\n%s", d.Format(c))
			}
			lowHost := s.jobs.byID["low"].placement.Claims[0].Host
			otherHost := s.jobs.byID["other"].placement.Claims[0].Host
			if lowHost == otherHost {
				t.Fatalf("low and other share host %d", lowHost)
			}
			now = now.Add(time.Hour)
			if err := s.Submit(job("high", "a", 10, 8, tc.highRT), now); err != nil {
				t.Fatal(err)
			}
			d := holdCycle(t, s, now)
			if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "low" || s.jobs.byID["high"].nom.nominated == nil {
				t.Fatalf("high arrives: want low preempted for high, nominated:\n%s", d.Format(c))
			}
			// low is still stopping when big arrives and is blocked.
			for step := 0; step < 2; step++ {
				now = now.Add(time.Minute)
				if step == 0 {
					if err := s.Submit(job("big", "b", 0, 8, time.Hour), now); err != nil {
						t.Fatal(err)
					}
				}
				d = holdCycle(t, s, now)
				if len(d.Bindings) != 0 {
					t.Fatalf("nothing fits while low stops:\n%s", d.Format(c))
				}
				r := s.res.byJob[s.jobs.byID["big"]]
				if r == nil || r.forever {
					t.Fatalf("step %d: big has no timed reservation:\n%s", step, d.Format(c))
				}
				wantAt, wantHost := t0.Add(tc.otherRT), otherHost
				if tc.onLow {
					wantAt, wantHost = t0.Add(time.Hour+time.Minute).Add(tc.highRT), lowHost
				}
				var hosts []topology.HostID
				for _, cl := range r.claims {
					hosts = append(hosts, cl.Host)
				}
				if !r.at.Equal(wantAt) || !slices.Equal(hosts, []topology.HostID{wantHost}) {
					t.Fatalf("step %d: big reserved at %v on hosts %v, want %v on host %d (low on %d, other on %d):\n%s",
						step, r.at.Sub(t0), hosts, wantAt.Sub(t0), wantHost, lowHost, otherHost, d.Format(c))
				}
				if pr := pendingReason(d, "big"); pr == nil || !pr.Reserved.Equal(wantAt) {
					t.Fatalf("step %d: big's reason %+v, want reserved at %v", step, pr, wantAt.Sub(t0))
				}
			}
		})
	}
}

func pendingReason(d Decision, id string) *Reason {
	for _, p := range d.Pending {
		if p.Job == id {
			return p.Reason
		}
	}
	return nil
}

// TestReservationRebuiltForNewNomination: a reservation kept from an
// earlier cycle is computed again once a nomination is made, and moves off
// the GPUs the nominated job takes. (Regression: the kept shadow was
// reused until the nominated job bound.)
func TestReservationRebuiltForNewNomination(t *testing.T) {
	c := holdCluster(t, 2, 0)
	qc := queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a"}, {Name: "b", Policy: queue.Policy{Backfill: true}}, {Name: "c"},
	}}}
	pp, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: qc, Preemptor: pp})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, q string, prio int32, rt time.Duration) workload.Job {
		return workload.Job{ID: id, Queue: q, Priority: prio, Runtime: rt, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	}
	now := t0
	other := job("other", "c", 0, 5*time.Hour)
	other.NonPreemptible = true
	for _, j := range []workload.Job{job("low", "a", 0, 2*time.Hour), other} {
		if err := s.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	holdCycle(t, s, now)
	lowHost := s.jobs.byID["low"].placement.Claims[0].Host
	check := func(step string, at time.Duration, host topology.HostID) {
		t.Helper()
		r := s.res.byJob[s.jobs.byID["big"]]
		if r == nil || r.forever || !r.at.Equal(t0.Add(at)) || len(r.claims) != 1 || r.claims[0].Host != host {
			t.Fatalf("%s: big's reservation %+v, want at %v on host %d", step, r, at, host)
		}
	}
	now = now.Add(time.Hour)
	if err := s.Submit(job("big", "b", 0, time.Hour), now); err != nil {
		t.Fatal(err)
	}
	holdCycle(t, s, now)
	check("big arrives", 2*time.Hour, lowHost)
	now = now.Add(time.Minute)
	if err := s.Submit(job("high", "a", 10, 10*time.Hour), now); err != nil {
		t.Fatal(err)
	}
	if d := holdCycle(t, s, now); len(d.Preemptions) != 1 {
		t.Fatalf("high arrives: want low preempted:\n%s", d.Format(c))
	}
	now = now.Add(time.Minute)
	holdCycle(t, s, now)
	check("high nominated", 5*time.Hour, 1-lowHost)
}
