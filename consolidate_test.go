package gpusched

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// consInstance builds, from draws, an idle Scheduler (nothing waits) on
// 4–8 DGX H100 hosts, 2 to a ToR, with random running jobs
// (restoreRandomJobs) and consolidation on at both levels (hosts, the
// NVLink domains of a DGX; ToRs) within the drawn budgets.
func consInstance(t *rapid.T) (*Scheduler, time.Time, *DefragConfig) {
	hosts := rapid.IntRange(4, 8).Draw(t, "hosts")
	c := h100Pairs(t, hosts)
	dc := &DefragConfig{Budget: preempt.DefragBudget{PerHour: rapid.IntRange(0, 8).Draw(t, "perHour")},
		MaxPerJob: rapid.IntRange(0, 2).Draw(t, "maxPerJob"),
		Consolidate: &ConsolidateConfig{Budget: preempt.DefragBudget{PerHour: rapid.IntRange(0, 6).Draw(t, "cPerHour"),
			LostPerHour: preempt.GPUTime(rapid.IntRange(0, 40).Draw(t, "cLostGPUh")) * 3600 * 1000}}}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}}, Defrag: dc})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	restoreRandomJobs(t, s, now)
	return s, now, dc
}

// freeDomains counts the wholly free domains at each level of c from
// LevelFabric to the innermost network level.
func freeDomains(s *Scheduler) []int {
	l := s.ledger
	return []int{whollyFreeAt(l, topology.LevelFabric), whollyFreeAt(l, topology.LevelHost+1)}
}

// TestPropertyConsolidate: on random idle clusters, over several rounds
// of 20 minutes, each issuing what the Scheduler decides and carrying it
// out (every moved job reports Migrated, then binds on its destination):
// no plan lowers the count of wholly free domains at any level and each
// raises it at some level; no job is lost; the ledger stays consistent;
// no non-preemptible job or one inside its minimum run time moves; both
// budgets and MaxPerJob hold; every move is ready (its destination free
// when issued); and a second Scheduler built from the same draws decides
// the same.
func TestPropertyConsolidate(t *testing.T) {
	var issued int
	rapid.Check(t, func(rt *rapid.T) {
		s, now, dc := consInstance(rt)
		var holding int
		s.Holding(func(string, JobStatus) bool { holding++; return true })
		type stamp struct {
			at   time.Time
			lost preempt.GPUTime
		}
		var log []stamp
		moves := map[string]int{}
		var arrived []Migration // moves carried out since the last cycle
		var before []int        // free domains when they were issued
		for round := 0; round < 10; round++ {
			d := s.Schedule(now)
			if len(d.Pending) > 0 {
				rt.Fatalf("idle cluster: %d pending", len(d.Pending))
			}
			if len(d.Bindings) != len(arrived) {
				rt.Fatalf("%d bindings for %d moves carried out", len(d.Bindings), len(arrived))
			}
			for _, b := range d.Bindings {
				if !slices.ContainsFunc(arrived, func(m Migration) bool { return m.Job == b.Job }) {
					rt.Fatalf("%s bound but did not move", b.Job)
				}
				if err := s.Started(b.Job, now); err != nil {
					rt.Fatal(err)
				}
			}
			// The plan of this cycle, if any, was made on the ledger as the
			// cycle leaves it: with the moved jobs of the last plan bound on
			// their destinations (before the cycle those were held for them
			// only, so counted free, though no plan may count on them).
			cur := freeDomains(s)
			if len(arrived) > 0 {
				after := cur
				up := false
				for i := range after {
					if after[i] < before[i] {
						rt.Fatalf("level %d: %d wholly free domains before, %d after", i, before[i], after[i])
					}
					up = up || after[i] > before[i]
				}
				if !up {
					rt.Fatalf("a plan freed no domain: %v → %v", before, after)
				}
			}
			for _, m := range d.Migrations {
				if m.For != "" {
					rt.Fatalf("consolidation move %s names a gang %q", m.Job, m.For)
				}
				if !m.Ready {
					rt.Fatalf("consolidation move %s is not ready", m.Job)
				}
				st, _ := s.Job(m.Job)
				if st.Spec.NonPreemptible || st.Spec.MinRunTime > 0 && now.Sub(st.Started) < st.Spec.MinRunTime {
					rt.Fatalf("%s moved but is protected", m.Job)
				}
				moves[m.Job]++
				if dc.MaxPerJob > 0 && moves[m.Job] > dc.MaxPerJob {
					rt.Fatalf("%s moved %d times, cap %d", m.Job, moves[m.Job], dc.MaxPerJob)
				}
				log = append(log, stamp{now, m.Lost})
			}
			// Budgets: the moves of the last hour, these included.
			var n int
			var lost preempt.GPUTime
			for _, x := range log {
				if x.at.After(now.Add(-time.Hour)) {
					n++
					lost += x.lost
				}
			}
			for _, b := range []preempt.DefragBudget{dc.Budget, dc.Consolidate.Budget} {
				if b.PerHour > 0 && n > b.PerHour || b.LostPerHour > 0 && lost > b.LostPerHour {
					rt.Fatalf("budget %+v broken: %d moves, %v lost in the last hour", b, n, lost)
				}
			}
			if err := s.Ledger().Check(); err != nil {
				rt.Fatal(err)
			}
			var held int
			s.Holding(func(string, JobStatus) bool { held++; return true })
			if held != holding {
				rt.Fatalf("%d jobs hold resources, %d before", held, holding)
			}
			// Carry the new moves out, 2 minutes on.
			arrived, before = d.Migrations, cur
			if len(arrived) > 0 {
				issued++
				now = now.Add(2 * time.Minute)
				for _, m := range arrived {
					if err := s.Migrated(m.Job, now); err != nil {
						rt.Fatal(err)
					}
				}
			} else {
				now = now.Add(20 * time.Minute)
			}
		}
	})
	t.Logf("%d rounds with consolidation moves", issued)
	if issued == 0 {
		t.Error("no consolidation move was ever issued")
	}
}

// TestConsolidateDeterministic: the same instance, built twice from the
// same draws, decides the same moves.
func TestConsolidateDeterministic(t *testing.T) {
	gen := rapid.Custom(func(t *rapid.T) []Migration {
		s, now, _ := consInstance(t)
		return s.Schedule(now).Migrations
	})
	issued := 0
	for i := range 200 {
		a, b := gen.Example(i), gen.Example(i)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("example %d: decisions differ:\n%+v\n%+v", i, a, b)
		}
		if len(a) > 0 {
			issued++
		}
	}
	if issued == 0 {
		t.Error("no instance consolidated")
	}
}

// TestConsolidateConfigErrors: bad settings are refused, naming the field.
func TestConsolidateConfigErrors(t *testing.T) {
	c, err := topology.Build(mustSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cc   ConsolidateConfig
		want string
	}{
		{ConsolidateConfig{Idle: -time.Second}, "Consolidate.Idle"},
		{ConsolidateConfig{Target: -1}, "Consolidate.Target"},
		{ConsolidateConfig{MaxDomains: -1}, "Consolidate.MaxDomains"},
		{ConsolidateConfig{Budget: preempt.DefragBudget{MinValue: 1}}, "Consolidate.Budget.MinValue"},
		{ConsolidateConfig{Budget: preempt.DefragBudget{PerHour: -1}}, "PerHour"},
		{ConsolidateConfig{Levels: []topology.Level{-1}}, "Consolidate.Levels[0]"},
	} {
		cc := tc.cc
		_, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
			Defrag: &DefragConfig{Consolidate: &cc}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.cc, err, tc.want)
		}
	}
}

func mustSpec(t *testing.T) topology.Spec {
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestConsolidateInCycleOfBinding is the case rapid found (seed
// 3547142616334529001, minimized): five DGX H100 hosts, two to a ToR
// (host 4 alone under the third ToR); host 0 idle, hosts 1 and 2 held by
// non-preemptible jobs, host 3 by j05 (1 GPU) and j06 (4), host 4 by j07
// (4). The first plan moves j07 to host 0, freeing host 4 and its ToR.
// In the cycle where j07 binds there, a second plan moves j05 and j06 off
// host 3, j06 onto host 0 beside j07. Counted before that cycle, host 0
// looked wholly free (only held for j07), so the property saw [2 1] both
// before and after; the plan was made on the ledger with j07 bound,
// [1 1], and it frees host 3: [2 1]. This pins the Scheduler's side:
// the second plan is issued in the binding cycle, none of its
// destinations lies in a domain wholly free as that cycle leaves the
// ledger, and carried out it adds a wholly free host.
func TestConsolidateInCycleOfBinding(t *testing.T) {
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: 5, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Name: "root", Children: []queue.Node{{Name: "q"}}}},
		Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		id          string
		host, at, k int
		protected   bool
	}{
		{"j01", 1, 0, 1, true}, {"j02", 1, 1, 4, true}, {"j03", 2, 0, 4, true}, {"j04", 2, 4, 4, true},
		{"j05", 3, 0, 1, false}, {"j06", 3, 1, 4, false}, {"j07", 4, 0, 4, false},
	} {
		first, _ := c.HostGPUs(topology.HostID(r.host))
		cl := topology.Claim{Host: topology.HostID(r.host)}
		for g := r.at; g < r.at+r.k; g++ {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(g)})
		}
		spec := workload.Job{ID: r.id, Queue: "q", NonPreemptible: r.protected, Groups: []workload.TaskGroup{{Count: 1, GPUs: r.k}}}
		if err := s.Restore(spec, [][]topology.Claim{{cl}}, queue.Running, now.Add(-time.Minute), now.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	moved := func(d Decision) []string {
		var ids []string
		for _, m := range d.Migrations {
			ids = append(ids, m.Job)
		}
		return ids
	}
	hostOf := func(cls []topology.Claim) topology.HostID { return cls[0].Host }

	d := s.Schedule(now)
	if got := moved(d); !slices.Equal(got, []string{"j07"}) || hostOf(d.Migrations[0].To) != 0 {
		t.Fatalf("first plan: %v %+v, want j07 to host 0", got, d.Migrations)
	}
	now = now.Add(2 * time.Minute)
	if err := s.Migrated("j07", now); err != nil {
		t.Fatal(err)
	}
	if got := freeDomains(s); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("before the binding cycle: %v wholly free, want [2 1] (host 0 only held for j07)", got)
	}

	d = s.Schedule(now)
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "j07" {
		t.Fatalf("bindings %+v, want j07", d.Bindings)
	}
	if err := s.Started("j07", now); err != nil {
		t.Fatal(err)
	}
	issuedOn := freeDomains(s)
	if !slices.Equal(issuedOn, []int{1, 1}) {
		t.Fatalf("as the binding cycle leaves the ledger: %v wholly free, want [1 1]", issuedOn)
	}
	if got := moved(d); !slices.Equal(got, []string{"j05", "j06"}) {
		t.Fatalf("second plan: %v, want j05 and j06 off host 3", got)
	}
	for _, m := range d.Migrations {
		if !m.Ready {
			t.Errorf("%s not ready", m.Job)
		}
		for _, cl := range m.To {
			for _, g := range cl.GPUs {
				for _, lv := range []topology.Level{topology.LevelFabric, topology.LevelHost + 1} {
					dom := c.GPUAt(g.GPU, lv)
					if hg := s.ledger.HealthyGPUs(dom); s.ledger.FreeGPUs(dom) == hg {
						t.Errorf("%s moves into wholly free domain %d at level %d", m.Job, dom, lv)
					}
				}
			}
		}
	}
	now = now.Add(2 * time.Minute)
	for _, m := range d.Migrations {
		if err := s.Migrated(m.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	d = s.Schedule(now)
	if len(d.Bindings) != 2 {
		t.Fatalf("bindings %+v, want j05 and j06", d.Bindings)
	}
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	if got := freeDomains(s); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("after the second plan: %v wholly free, want [2 1] (hosts 3 and 4, the third ToR)", got)
	}
	if err := s.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
}
