package gpusched

import (
	"fmt"
	"math/rand/v2"
	"pgregory.net/rapid"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// reclaimScheduler is the shape of the kube-scheduler scale benchmark's
// cluster workload in small: queue research (strict FIFO, guaranteed
// 2/3 of the GPUs, borrowing up to 1/3 more) and queue default
// (best-effort FIFO, guaranteed 1/3), both backfilling, on hosts × 8
// GPUs, with the PlanPreemptor's defaults.
func reclaimScheduler(t testing.TB, hosts int) *Scheduler {
	t.Helper()
	p, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	gpus := int64(8 * hosts)
	s, err := New(Config{Cluster: testCluster(t, hosts, 2), Preemptor: p,
		Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "research", Weight: 2, Quotas: []queue.Quota{{Resource: "gpu", Nominal: gpus * 2 / 3, BorrowingLimit: new(gpus / 3)}},
				Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
			{Name: "default", Quotas: []queue.Quota{{Resource: "gpu", Nominal: gpus / 3}},
				Policy: queue.Policy{Ordering: queue.BestEffortFIFO, Backfill: true}},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReclaimPlansEveryJobOfAClass: queue default's waiting jobs all have
// one shape (one class). research borrows the whole cluster: 6 hosts, 48
// 1-GPU jobs, its nominal quota 32 (borrowing 16). default, guaranteed 16,
// submits 4 1-GPU jobs: each reclaims one of research's jobs, and the 48
// give 4 disjoint victims while research borrows (48 − 4 = 44 > 32). All
// 4 plans are made in one cycle. Before, the class of the first blocked
// job was dropped from the cycle once its plan was made: one plan per
// cycle, so k reclaiming jobs took k cycles (in scheduler mode on
// Kubernetes, one job per 200 ms cycle). Once the 4 victims are reported
// gone, the 4 jobs bind in the next cycle, on their victims' GPUs.
func TestReclaimPlansEveryJobOfAClass(t *testing.T) {
	s := reclaimScheduler(t, 6)
	for i := range 48 {
		if err := s.Submit(workload.Job{ID: fmt.Sprintf("r%02d", i), Queue: "research", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	if d := bindAndStart(t, s, t0); len(d.Bindings) != 48 {
		t.Fatalf("research bound %d of 48", len(d.Bindings))
	}
	now := t0.Add(time.Hour)
	const k = 4
	var want []string
	for i := range k {
		id := fmt.Sprintf("d%d", i)
		want = append(want, id)
		if err := s.Submit(workload.Job{ID: id, Queue: "default", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, now); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(now)
	var fors, victims []string
	for _, p := range d.Preemptions {
		fors = append(fors, p.For)
		victims = append(victims, p.Job)
	}
	slices.Sort(fors)
	if !slices.Equal(fors, want) {
		t.Fatalf("one cycle planned reclaim for %v, want all of %v (%d disjoint victims available):\n%s", fors, want, k, d.Format(s.Cluster()))
	}
	slices.Sort(victims)
	if len(slices.Compact(victims)) != k {
		t.Fatalf("victims %v: want %d distinct", victims, k)
	}
	checkInvariants(t, s, "after the plans")
	now = now.Add(time.Minute)
	for _, v := range victims {
		if err := s.Preempted(v, now); err != nil {
			t.Fatal(err)
		}
	}
	d = s.Schedule(now)
	var bound []string
	for _, b := range d.Bindings {
		bound = append(bound, b.Job)
	}
	slices.Sort(bound)
	if !slices.Equal(bound, want) || len(d.Preemptions) != 0 {
		t.Fatalf("after the victims: bound %v, preempted %+v; want %v bound and nothing more stopped", bound, d.Preemptions, want)
	}
	checkInvariants(t, s, "after the binds")
}

// TestPropertyReclaimManyPerCycle drives random clusters (2 to 8 hosts of
// 8 GPUs) in which queue r borrows past its guarantee with jobs of one
// priority, and queues a and b, never past their guarantees, reclaim
// with bursts of jobs of one shape (several jobs per class), while the
// host stops victims 0 to 2 cycles late and r's jobs finish and come
// back; the PlanPreemptor's bound per cycle is drawn (1 to 8). After
// every cycle:
//   - the ledger, quotas and holdings agree (checkInvariants: no GPU
//     given twice, no quota exceeded);
//   - no job is a victim twice in a cycle, nor while its stop is still
//     in progress, and no job is preempted for while it waits for
//     victims (its victims are disjoint from every other plan's);
//   - reclaim takes only borrowed capacity: r, with every stop in
//     progress done but the largest of this cycle's, still borrows
//     (r's victims are all reclaim: its jobs share one priority);
//   - a job whose victims are all gone binds in the next cycle (or waits
//     for another stop in progress its plan counted on for quota);
//   - every cycle's decision is the same when the run is replayed.
//
// And a cycle planned reclaim for two or more jobs of one class at least
// once over the runs.
func TestPropertyReclaimManyPerCycle(t *testing.T) {
	var multi, plans int
	rapid.Check(t, func(rt *rapid.T) {
		hosts := rapid.IntRange(2, 8).Draw(rt, "hosts")
		total := int64(8 * hosts)
		nr := rapid.Int64Range(0, total/2).Draw(rt, "nominalR")
		na := rapid.Int64Range(1, total-nr).Draw(rt, "nominalA")
		nb := rapid.Int64Range(0, total-nr-na).Draw(rt, "nominalB")
		maxPlan := rapid.IntRange(1, 8).Draw(rt, "maxPerCycle")
		seed := rapid.Uint64().Draw(rt, "seed")
		run := func() []string {
			return runReclaimMany(rt, testCluster(t, hosts, 2), [3]int64{nr, na, nb}, maxPlan, seed, func(perClass int, n int) {
				plans += n
				if perClass > 1 {
					multi++
				}
			})
		}
		first := run()
		if again := run(); !slices.Equal(first, again) {
			for i := range min(len(first), len(again)) {
				if first[i] != again[i] {
					rt.Fatalf("replay differs at cycle %d:\n%s\nthen:\n%s", i, first[i], again[i])
				}
			}
			rt.Fatalf("replay ran %d cycles, first %d", len(again), len(first))
		}
	})
	t.Logf("%d reclaim plans; %d cycles planned for two or more jobs of one class", plans, multi)
	if multi == 0 {
		t.Error("no cycle planned reclaim for two jobs of one class: the property was not exercised")
	}
}

// runReclaimMany is one run of TestPropertyReclaimManyPerCycle: nominal
// are r's, a's and b's GPU guarantees; seed draws the events. It checks
// the invariants after every cycle, tells seen the most plans made for
// one class in a cycle and the cycle's plans, and returns each cycle's
// decision in words.
func runReclaimMany(rt *rapid.T, c *topology.Cluster, nominal [3]int64, maxPlan int, seed uint64, seen func(perClass, n int)) []string {
	total := int64(c.NumGPUs())
	p, err := NewPlanPreemptor(preempt.Config{}, maxPlan)
	if err != nil {
		rt.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Preemptor: p, DefaultRuntime: time.Hour, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "r", Quotas: []queue.Quota{{Resource: "gpu", Nominal: nominal[0]}}, Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
		{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: nominal[1]}}, Policy: queue.Policy{Ordering: queue.BestEffortFIFO, Backfill: true}},
		{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: nominal[2]}}, Policy: queue.Policy{Ordering: queue.BestEffortFIFO}},
	}}}})
	if err != nil {
		rt.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 26))
	shapes := []workload.TaskGroup{{Count: 1, GPUs: 1}, {Count: 1, GPUs: 2}, {Count: 1, GPUs: 4}, {Count: 1, GPUs: 8}, {Count: 2, GPUs: 4}}
	gpusOf := func(sp workload.Job) int64 {
		var n int64
		for _, g := range sp.Groups {
			n += int64(g.Count * g.GPUs)
		}
		return n
	}
	var (
		now     = t0
		next    int
		out     []string
		stops   = map[string]int{} // victim → cycles until the host reports it stopped
		waiting = map[string][]string{}
		live    = map[string]int64{} // a's and b's GPUs submitted and not ended
		submit  = func(q string, g workload.TaskGroup) {
			id := fmt.Sprintf("%s%03d", q, next)
			next++
			if err := s.Submit(workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{g}, Runtime: time.Duration(1+rng.IntN(4)) * time.Hour}, now); err != nil {
				rt.Fatal(err)
			}
		}
		usedByR = func() int64 {
			var n int64
			s.Holding(func(_ string, st JobStatus) bool {
				if st.Spec.Queue == "r" {
					n += gpusOf(st.Spec)
				}
				return true
			})
			return n
		}
	)
	// r borrows: it asks for the whole cluster and more.
	for want := total + total/4; want > 0; {
		g := shapes[rng.IntN(len(shapes))]
		submit("r", g)
		want -= int64(g.Count * g.GPUs)
	}
	for cycle := range 60 {
		now = now.Add(30 * time.Second)
		// The host reports the stops that are due.
		var due []string
		for id, k := range stops {
			if k == 0 {
				due = append(due, id)
			} else {
				stops[id] = k - 1
			}
		}
		slices.Sort(due)
		for _, id := range due {
			delete(stops, id)
			if err := s.Preempted(id, now); err != nil {
				rt.Fatal(err)
			}
		}
		switch k := rng.IntN(6); {
		case k < 3:
			// a or b submits a burst of one shape, within its guarantee.
			q, qi := "a", 1
			if k == 2 {
				q, qi = "b", 2
			}
			g := shapes[rng.IntN(len(shapes))]
			for range 1 + rng.IntN(6) {
				if live[q]+int64(g.Count*g.GPUs) > nominal[qi] {
					break
				}
				live[q] += int64(g.Count * g.GPUs)
				submit(q, g)
			}
		case k == 3:
			// A running job finishes; r submits again.
			var running []string
			s.Holding(func(id string, st JobStatus) bool {
				if st.State == queue.Running && stops[id] == 0 && !slices.Contains(due, id) {
					running = append(running, id)
				}
				return true
			})
			if len(running) > 0 {
				id := running[rng.IntN(len(running))]
				st, _ := s.Job(id)
				if _, ok := stops[id]; !ok {
					if err := s.Finished(id, now); err != nil {
						rt.Fatal(err)
					}
					if q := st.Spec.Queue; q != "r" {
						live[q] -= gpusOf(st.Spec)
					}
				}
			}
			submit("r", shapes[rng.IntN(len(shapes))])
		}
		// Preempting jobs whose victims are all gone must bind now.
		var ready []string
		for id, vs := range waiting {
			gone := true
			for _, v := range vs {
				if st, ok := s.Job(v); ok && st.State.Holding() {
					gone = false
				}
			}
			if gone {
				ready = append(ready, id)
				delete(waiting, id)
			}
		}
		slices.Sort(ready)
		d := bindAndStart(rt, s, now)
		out = append(out, d.Format(c))
		bound := map[string]bool{}
		for _, b := range d.Bindings {
			bound[b.Job] = true
		}
		for _, id := range ready {
			if st, ok := s.Job(id); bound[id] || !ok || !st.State.Waiting() {
				continue
			}
			w := deferredBy(d, id)
			if _, stopping := stops[w]; w == "" || !stopping {
				rt.Fatalf("cycle %d: %s's victims are gone, but it did not bind:\n%s", cycle, id, d.Format(c))
			}
			waiting[id] = []string{w}
		}
		perClass := map[string]int{} // jobs planned for, by class
		var fors []string
		var rStops, rMax int64
		for _, pr := range d.Preemptions {
			if _, ok := stops[pr.Job]; ok {
				rt.Fatalf("cycle %d: %s chosen again while its stop is in progress", cycle, pr.Job)
			}
			if _, ok := waiting[pr.Job]; ok {
				rt.Fatalf("cycle %d: %s waits for its own victims, yet is a victim", cycle, pr.Job)
			}
			if _, ok := waiting[pr.For]; ok && !bound[pr.For] {
				if slices.Contains(waiting[pr.For], pr.Job) {
					rt.Fatalf("cycle %d: %s chosen twice for %s", cycle, pr.Job, pr.For)
				}
			}
			stops[pr.Job] = rng.IntN(3)
			waiting[pr.For] = append(waiting[pr.For], pr.Job)
			st, _ := s.Job(pr.Job)
			if st.Spec.Queue == "r" {
				rMax = max(rMax, gpusOf(st.Spec))
			}
			if !slices.Contains(fors, pr.For) {
				fors = append(fors, pr.For)
				fs, _ := s.Job(pr.For)
				perClass[fmt.Sprint(fs.Spec.Queue, fs.Spec.Groups)]++
			}
		}
		for id := range stops {
			if st, ok := s.Job(id); ok && st.Spec.Queue == "r" {
				rStops += gpusOf(st.Spec)
			}
		}
		if rMax > 0 && usedByR()-rStops+rMax <= nominal[0] {
			rt.Fatalf("cycle %d: r uses %d GPUs, %d stopping (the largest of this cycle %d): reclaim took more than r borrows beyond %d:\n%s",
				cycle, usedByR(), rStops, rMax, nominal[0], d.Format(c))
		}
		most := 0
		for _, n := range perClass {
			most = max(most, n)
		}
		seen(most, len(fors))
		checkInvariants(rt, s, fmt.Sprint("cycle ", cycle))
	}
	return out
}
