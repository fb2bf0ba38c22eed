package gpusched

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestNominationOnCordonedHostDropped (regression): a job nominated to
// a host that is cordoned (or made unhealthy) before it binds drops the
// nomination at the next cycle and plans again, rather than wait for its
// victims there and then fail its bind ("placement did not commit: host
// cordoned"). Its victim still stops; nothing is placed on the cordoned
// host.
func TestNominationOnCordonedHostDropped(t *testing.T) {
	cordon := func(s *Scheduler, c *topology.Cluster, h topology.HostID) error { return s.Cordon(c.HostName(h)) }
	for _, tc := range []struct {
		name    string
		breakIt func(s *Scheduler, c *topology.Cluster, h topology.HostID) error
		stopped bool // the victim stops before the next cycle too
	}{
		{"cordon", cordon, false},
		{"cordon, victim stopped", cordon, true},
		{"draining GPU", func(s *Scheduler, c *topology.Cluster, h topology.HostID) error {
			first, _ := c.HostGPUs(h)
			_, err := s.SetGPUHealth(first, topology.Draining)
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := holdCluster(t, 2, 0)
			pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}, Preemptor: pp})
			if err != nil {
				t.Fatal(err)
			}
			job := func(id string, prio int32) workload.Job {
				// The victims take 10 minutes to stop.
				return workload.Job{ID: id, Queue: "a", Priority: prio, Grace: 10 * time.Minute, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
			}
			at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
			for _, id := range []string{"v", "w"} {
				if err := s.Submit(job(id, 0), at(0)); err != nil {
					t.Fatal(err)
				}
			}
			holdCycle(t, s, at(0))
			if err := s.Submit(job("n", 2), at(1)); err != nil {
				t.Fatal(err)
			}
			d := holdCycle(t, s, at(1))
			if len(d.Preemptions) != 1 {
				t.Fatalf("at 1m want one preemption for n:\n%s", d.Format(c))
			}
			victim, other := d.Preemptions[0].Job, "w"
			if victim == "w" {
				other = "v"
			}
			vs, _ := s.Job(victim)
			h := vs.Placement.Claims[0].Host
			// The victim's host goes out of service while it stops.
			if err := tc.breakIt(s, c, h); err != nil {
				t.Fatal(err)
			}
			if tc.stopped {
				if err := s.Preempted(victim, at(2)); err != nil {
					t.Fatal(err)
				}
			}
			d = holdCycle(t, s, at(2))
			if f := d.Format(c); len(d.Preemptions) != 1 || d.Preemptions[0].Job != other || d.Preemptions[0].For != "n" || strings.Contains(f, "did not commit") {
				t.Fatalf("at 2m want n to plan again and preempt %s:\n%s", other, f)
			}
			noms := s.Nominations([]string{"n"})
			if len(noms) != 1 || len(noms[0].Tasks) != 1 || noms[0].Tasks[0][0].Host == h {
				t.Fatalf("n's nomination %+v, want one off host %s", noms, c.HostName(h))
			}
			// Both victims stop; n binds on the usable host, and no
			// cycle says a placement did not commit.
			for _, id := range []string{victim, other} {
				if js, _ := s.Job(id); !js.State.Holding() {
					continue
				}
				if err := s.Preempted(id, at(5)); err != nil {
					t.Fatal(err)
				}
			}
			d = holdCycle(t, s, at(5))
			if len(d.Bindings) != 1 || d.Bindings[0].Job != "n" || d.Bindings[0].Placement.Claims[0].Host == h {
				t.Fatalf("at 5m want n bound off host %s:\n%s", c.HostName(h), d.Format(c))
			}
			if f := d.Format(c); strings.Contains(f, "did not commit") {
				t.Fatalf("a placement did not commit:\n%s", f)
			}
		})
	}
}
