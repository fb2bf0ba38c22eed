package preempt

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestDefragWorked: 2 ToRs of 2 hosts, 4 GPUs used on each host, so 16
// GPUs are free but no ToR has 16. The 16-GPU ToR gang needs one ToR
// emptied: moving tor2's two jobs (10 min each: 2 × 4 GPUs × 10 min = 80
// GPU-min) is cheaper than tor1's (1 h and 2 h), and they fit in tor1's
// free GPUs.
func TestDefragWorked(t *testing.T) {
	setup := func(t *testing.T, pinned bool) *fixture {
		f := newFixture(t, cluster(t, "dgx-h100", 4, 2), nil)
		f.run(t, jobSpec{id: "a1", queue: "q", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(time.Hour)})
		f.run(t, jobSpec{id: "a2", queue: "q", prio: 9, tasks: []task{{"dgx-h100-2", 0, 4}}, started: ago(2 * time.Hour)})
		f.run(t, jobSpec{id: "b1", queue: "q", tasks: []task{{"dgx-h100-3", 0, 4}}, started: ago(10 * time.Minute), nonPre: pinned})
		f.run(t, jobSpec{id: "b2", queue: "q", tasks: []task{{"dgx-h100-4", 0, 4}}, started: ago(10 * time.Minute)})
		return f
	}
	s := newSearch(t, Config{})
	t.Run("cheapest ToR", func(t *testing.T) {
		f := setup(t, false)
		pend := f.pending(t, "big", "q", 0, 2, 8, "tor")
		dp, np := s.Defragment(f.st, pend, now)
		if np != nil {
			t.Fatal(np)
		}
		var ids []string
		for _, m := range dp.Migrations {
			ids = append(ids, m.Job)
			for _, cl := range m.To.Claims {
				if h := f.c.HostName(cl.Host); h != "dgx-h100-1" && h != "dgx-h100-2" {
					t.Fatalf("%s moves to %s, not into tor1", m.Job, h)
				}
			}
		}
		if !slices.Equal(ids, []string{"b1", "b2"}) || dp.Cost.Lost != 2*4*600*1000 || f.c.DomainName(dp.Domain) != "tor2" {
			t.Fatalf("migrations %v cost %s into %s", ids, dp.Cost, f.c.DomainName(dp.Domain))
		}
		checkDefrag(t, f, dp, pend)
	})
	t.Run("pinned job", func(t *testing.T) {
		f := setup(t, true)
		pend := f.pending(t, "big", "q", 0, 2, 8, "tor")
		dp, np := s.Defragment(f.st, pend, now)
		if np != nil {
			t.Fatal(np)
		}
		if f.c.DomainName(dp.Domain) != "tor1" || len(dp.Migrations) != 2 || dp.Migrations[0].Job != "a1" {
			t.Fatalf("plan %+v", dp)
		}
		checkDefrag(t, f, dp, pend)
	})
	t.Run("capacity, not fragmentation", func(t *testing.T) {
		f := setup(t, false)
		pend := f.pending(t, "big", "q", 0, 3, 8, "")
		_, np := s.Defragment(f.st, pend, now)
		if np == nil || np.Verdict != VerdictCapacity {
			t.Fatalf("got %v", np)
		}
	})
}

// checkDefrag carries a defragmentation plan out on a clone: release the
// migrated jobs, commit the gang, commit each migration.
func checkDefrag(t tb, f *fixture, dp *DefragPlan, pend *Pending) {
	t.Helper()
	l := f.l.Clone()
	for _, m := range dp.Migrations {
		if err := l.Release(m.From...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gang.Commit(l, dp.Placement.Clone()); err != nil {
		t.Fatalf("gang: %v", err)
	}
	for _, m := range dp.Migrations {
		if _, err := gang.Commit(l, m.To.Clone()); err != nil {
			t.Fatalf("migration of %s: %v", m.Job, err)
		}
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestPropertyDefrag: on random instances, a defragmentation plan carries
// out (checkDefrag), moves only movable jobs, is minimal, and costs what a
// brute-force search over every set of movable jobs finds cheapest; no
// plan exactly when there is none.
func TestPropertyDefrag(t *testing.T) {
	var plans, none int
	rapid.Check(t, func(rt *rapid.T) {
		in := genScattered(rt)
		s := newSearch(rt, in.cfg)
		dp, np := s.Defragment(in.f.st, in.pend, in.now)
		var movable []*Job
		in.f.st.Jobs(func(j *Job) bool {
			sp := j.Spec
			if !(sp.NonPreemptible || !j.Started.IsZero() && sp.MinRunTime > 0 && in.now.Sub(j.Started) < sp.MinRunTime || sp.MaxPreemptions > 0 && j.Preemptions >= sp.MaxPreemptions) {
				movable = append(movable, j)
			}
			return true
		})
		if len(movable) > 12 {
			rt.Skip("too many")
		}
		placer, _ := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
		feasible := func(set []*Job) bool {
			l := in.f.l.Clone()
			for _, j := range set {
				_ = l.Release(j.Placement.Claims...)
			}
			var p gang.Placement
			if placer.Place(l, in.pend.Request, &p) != nil {
				return false
			}
			_ = l.Allocate(p.Claims...)
			order := slices.Clone(set)
			slices.SortFunc(order, func(a, b *Job) int {
				ma, _ := a.shape(in.f.c)
				mb, _ := b.shape(in.f.c)
				if ma != mb {
					return int(mb - ma)
				}
				return strings.Compare(a.Spec.ID, b.Spec.ID)
			})
			for _, j := range order {
				req, _ := gang.NewRequest(in.f.c, j.Spec)
				var q gang.Placement
				if placer.Place(l, req, &q) != nil {
					return false
				}
				_ = l.Allocate(q.Claims...)
			}
			return true
		}
		cost := func(set []*Job) Cost {
			var c Cost
			for _, j := range set {
				m, _ := j.shape(in.f.c)
				if !j.Started.IsZero() {
					c.Lost += lostNanos(m, max(j.Started.UnixNano(), j.Checkpoint.UnixNano()), in.now.UnixNano())
				}
				c.Victims++
				c.Priority += int64(j.Spec.Priority)
			}
			return c
		}
		var best Cost
		var bestSet []*Job
		found := false
		for mask := 1; mask < 1<<len(movable); mask++ {
			var set []*Job
			for i, j := range movable {
				if mask&(1<<i) != 0 {
					set = append(set, j)
				}
			}
			if c := cost(set); (!found || c.Less(best)) && feasible(set) {
				best, found = c, true
				bestSet = set
			}
		}
		if dp == nil {
			none++
			if found && np.Verdict != VerdictCapacity {
				rt.Fatalf("no plan (%s), the oracle finds one costing %s", np, best)
			}
			return
		}
		if len(dp.Migrations) == 0 {
			return
		}
		plans++
		checkDefrag(rt, in.f, dp, in.pend)
		var set []*Job
		for _, m := range dp.Migrations {
			j, _ := in.f.st.Job(m.Job)
			if !slices.Contains(movable, j) {
				rt.Fatalf("%s moved but may not", m.Job)
			}
			set = append(set, j)
		}
		if !feasible(set) {
			rt.Fatalf("plan infeasible for the oracle")
		}
		for i := range set {
			if rest := slices.Delete(slices.Clone(set), i, i+1); len(rest) > 0 && feasible(rest) {
				rt.Fatalf("not minimal: works without %s", set[i].Spec.ID)
			}
		}
		if !found || dp.Cost != best {
			var ids []string
			for _, j := range bestSet {
				ids = append(ids, j.Spec.ID)
			}
			var dump string
			in.f.st.Jobs(func(j *Job) bool {
				dump += fmt.Sprintf("%s lost=%s:", j.Spec.ID, cost([]*Job{j}).Lost)
				for _, cl := range j.Placement.Claims {
					dump += fmt.Sprintf(" %s%v", in.f.c.HostName(cl.Host), len(cl.GPUs))
				}
				dump += "\n"
				return true
			})
			rt.Fatalf("plan %v costs %s, the oracle's minimum %s with %v (found %v)\n%s", dp.Migrations, dp.Cost, best, ids, found, dump)
		}
	})
	t.Logf("%d defragmentation plans, %d without", plans, none)
	if plans == 0 {
		t.Error("never a defragmentation plan")
	}
}

// genScattered draws a cluster of 2–4 hosts (flat or 2 per ToR) about
// half full of small jobs (1–4 GPUs, 1–2 tasks) scattered at random, and a
// pending gang of whole hosts or half hosts, often inside one host or ToR.
func genScattered(rt *rapid.T) *instance {
	hosts := rapid.IntRange(2, 4).Draw(rt, "hosts")
	perToR := rapid.SampledFrom([]int{0, 2}).Draw(rt, "perToR")
	c := cluster(rt, "dgx-h100", hosts, perToR)
	f := newFixture(rt, c, nil)
	placer, _ := gang.New("random", gang.Options{})
	target := c.NumGPUs() * rapid.IntRange(3, 6).Draw(rt, "fill") / 10
	for i := 0; c.NumGPUs()-f.l.FreeGPUs(c.Root()) < target && i < 12; i++ {
		g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "tasks"), GPUs: rapid.SampledFrom([]int{1, 2, 3, 4}).Draw(rt, "gpus")}
		spec := &workload.Job{ID: fmt.Sprintf("j%d", i), Queue: "q", Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")), Groups: []workload.TaskGroup{g}}
		if rapid.IntRange(0, 7).Draw(rt, "pinned") == 0 {
			spec.NonPreemptible = true
		}
		req, _ := gang.NewRequest(c, spec)
		req.Seed = uint64(rapid.IntRange(0, 1000).Draw(rt, "seed"))
		var p gang.Placement
		if placer.Place(f.l, req, &p) != nil {
			continue
		}
		j := &Job{Spec: spec, Placement: p.Clone(), Started: now.Add(-time.Duration(rapid.IntRange(1, 300).Draw(rt, "ran")) * time.Minute)}
		if _, err := gang.Commit(f.l, j.Placement); err != nil {
			rt.Fatal(err)
		}
		if err := f.st.Add(j); err != nil {
			rt.Fatal(err)
		}
	}
	g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "pendTasks"), GPUs: rapid.SampledFrom([]int{4, 8}).Draw(rt, "pendGPUs")}
	spec := workload.Job{ID: "pending", Queue: "q", Groups: []workload.TaskGroup{g}}
	levels := []string{"", "host"}
	if perToR > 0 {
		levels = append(levels, "tor")
	}
	if lv := rapid.SampledFrom(levels).Draw(rt, "level"); lv != "" {
		spec.Topology = []workload.Constraint{{Level: lv, Required: true}}
	}
	req, err := gang.NewRequest(c, &spec)
	if err != nil {
		rt.Fatal(err)
	}
	return &instance{f: f, cfg: Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}, pend: &Pending{Request: req, Queue: "q"}, now: now}
}
