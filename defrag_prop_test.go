package gpusched

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// defragInstance builds, from draws, a Scheduler on 4–6 DGX H100 hosts (2
// to a ToR) with running jobs of 1, 2 or 4 GPUs restored at random
// offsets (some non-preemptible or inside a minimum run time), and a
// pending gang of 2 × 8 GPUs required in one ToR, or 1 × 8 anywhere.
func defragInstance(t *rapid.T, budget preempt.DefragBudget) (*Scheduler, time.Time) {
	hosts := rapid.IntRange(4, 6).Draw(t, "hosts")
	c := h100Pairs(t, hosts)
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
		Defrag: &DefragConfig{Budget: budget}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	restoreRandomJobs(t, s, now)
	g := workload.Job{ID: "gang", Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}, Topology: []workload.Constraint{{Level: "tor", Required: true}}}
	if rapid.Bool().Draw(t, "single") {
		g = workload.Job{ID: "gang", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}
	}
	if err := s.Submit(g, now); err != nil {
		t.Fatal(err)
	}
	return s, now
}

// h100Pairs builds a cluster of n DGX H100 hosts, two to a ToR.
func h100Pairs(t *rapid.T, n int) *topology.Cluster {
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: n, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restoreRandomJobs restores, from draws, running jobs of 1, 2 or 4 GPUs
// on every host of s's cluster at random offsets before now (some
// non-preemptible or inside a minimum run time).
func restoreRandomJobs(t *rapid.T, s *Scheduler, now time.Time) {
	c := s.Cluster()
	hosts := c.NumHosts()
	n := 0
	for h := 0; h < hosts; h++ {
		first, _ := c.HostGPUs(topology.HostID(h))
		at := 0
		for at < 8 {
			k := rapid.SampledFrom([]int{0, 1, 2, 4}).Draw(t, "size")
			if k == 0 || at+k > 8 {
				break
			}
			n++
			spec := workload.Job{ID: fmt.Sprintf("j%02d", n), Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: k}}}
			switch rapid.IntRange(0, 5).Draw(t, "protect") {
			case 0:
				spec.NonPreemptible = true
			case 1:
				spec.MinRunTime = 20 * time.Hour
			}
			cl := topology.Claim{Host: topology.HostID(h)}
			for g := at; g < at+k; g++ {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
			}
			ran := time.Duration(rapid.IntRange(1, 600).Draw(t, "ran")) * time.Minute
			if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, now.Add(-ran), now.Add(-ran)); err != nil {
				t.Fatal(err)
			}
			at += k
		}
	}
}

// TestPropertyDefrag: on random instances, an issued plan carried out
// (every moved job reports Migrated) lets the gang bind in the next cycle,
// every moved job binds again on its destination (no job is lost), the
// ledger stays consistent, no non-preemptible job or one inside its
// minimum run time moves, budgets hold, and the decision is deterministic.
func TestPropertyDefrag(t *testing.T) {
	var issued [1]int
	rapid.Check(t, func(rt *rapid.T) {
		perHour := rapid.IntRange(0, 4).Draw(rt, "perHour")
		s, now := defragInstance(rt, preempt.DefragBudget{PerHour: perHour})
		d := s.Schedule(now)
		if perHour > 0 && len(d.Migrations) > perHour {
			rt.Fatalf("%d migrations past a budget of %d an hour", len(d.Migrations), perHour)
		}
		if len(d.Migrations) == 0 {
			return
		}
		issued[0]++
		for _, m := range d.Migrations {
			st, ok := s.Job(m.Job)
			if !ok {
				rt.Fatalf("unknown job %s", m.Job)
			}
			if st.Spec.NonPreemptible || st.Spec.MinRunTime > 0 {
				rt.Fatalf("%s moved but is protected", m.Job)
			}
		}
		if err := s.Ledger().Check(); err != nil {
			rt.Fatal(err)
		}
		// A ready migration's destination was free and held for it: no
		// binding of the cycle took any of it (make-before-break).
		for _, m := range d.Migrations {
			for _, cl := range m.To {
				for _, g := range cl.GPUs {
					if g.Kind == topology.ClaimWhole && m.Ready && !s.Ledger().GPUIsFree(g.GPU) {
						rt.Fatalf("%s is ready but GPU %d of its destination is taken", m.Job, g.GPU)
					}
				}
			}
		}
		for _, m := range d.Migrations {
			if err := s.Migrated(m.Job, now.Add(time.Minute)); err != nil {
				rt.Fatal(err)
			}
		}
		d2 := s.Schedule(now.Add(time.Minute))
		bound := map[string]bool{}
		for _, b := range d2.Bindings {
			bound[b.Job] = true
		}
		if !bound["gang"] {
			rt.Fatalf("the plan carried out does not let the gang bind: %+v", d2.Pending)
		}
		for _, m := range d.Migrations {
			if !bound[m.Job] {
				rt.Fatalf("%s moved but did not bind on its destination", m.Job)
			}
		}
		if err := s.Ledger().Check(); err != nil {
			rt.Fatal(err)
		}
	})
	t.Logf("%d instances with migrations", issued[0])
	if issued[0] == 0 {
		t.Error("no migration was ever issued")
	}
}

// TestDefragDeterministic: two Schedulers built alike decide alike.
func TestDefragDeterministic(t *testing.T) {
	a, now := defragScheduler(t, &DefragConfig{}, 0)
	b, _ := defragScheduler(t, &DefragConfig{}, 0)
	da, db := a.Schedule(now), b.Schedule(now)
	if !reflect.DeepEqual(da.Migrations, db.Migrations) || len(da.Migrations) == 0 {
		t.Fatalf("decisions differ or empty:\n%+v\n%+v", da.Migrations, db.Migrations)
	}
}
