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
			cur := freeDomains(s)
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
			if len(arrived) > 0 {
				after := freeDomains(s)
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
