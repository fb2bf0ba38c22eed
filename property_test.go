package gpusched

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// simJob is one job of a test stream.
type simJob struct {
	spec    workload.Job
	arrive  time.Time
	start   time.Time
	end     time.Time
	started bool
	done    bool
	err     error
}

// runStream drives s through a stream of jobs the way a host would:
// at every arrival or estimated end, finish what ended, submit what
// arrived, run a cycle and start every binding at once. Jobs run exactly
// their runtime estimate. onCycle sees every decision. It stops at
// horizon or when nothing is left to happen.
func runStream(t testing.TB, s *Scheduler, jobs []*simJob, horizon time.Time, onCycle func(now time.Time, d Decision)) {
	t.Helper()
	byID := map[string]*simJob{}
	for _, j := range jobs {
		byID[j.spec.ID] = j
	}
	slices.SortStableFunc(jobs, func(a, b *simJob) int { return a.arrive.Compare(b.arrive) })
	next := 0
	var running []*simJob
	for {
		// Next event.
		var ev time.Time
		have := false
		if next < len(jobs) {
			ev, have = jobs[next].arrive, true
		}
		for _, r := range running {
			if !have || r.end.Before(ev) {
				ev, have = r.end, true
			}
		}
		if !have || ev.After(horizon) {
			return
		}
		now := ev
		keep := running[:0]
		for _, r := range running {
			if !r.end.After(now) {
				if err := s.Finished(r.spec.ID, now); err != nil {
					t.Fatal(err)
				}
				r.done = true
				continue
			}
			keep = append(keep, r)
		}
		running = keep
		for next < len(jobs) && !jobs[next].arrive.After(now) {
			j := jobs[next]
			j.err = s.Submit(j.spec, now)
			next++
		}
		d := s.Schedule(now)
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, now); err != nil {
				t.Fatal(err)
			}
			j := byID[b.Job]
			j.started, j.start, j.end = true, now, now.Add(j.spec.Runtime)
			running = append(running, j)
		}
		if onCycle != nil {
			onCycle(now, d)
		}
	}
}

func testCluster(t testing.TB, hosts, perToR int) *topology.Cluster {
	t.Helper()
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: hosts, HostsPerToR: perToR}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var shapes = []workload.TaskGroup{
	{Count: 1, GPUs: 1}, {Count: 1, GPUs: 2}, {Count: 1, GPUs: 4}, {Count: 1, GPUs: 8},
	{Count: 2, GPUs: 8}, {Count: 4, GPUs: 1}, {Count: 1, GPUMilli: 500}, {Count: 3, GPUs: 2},
}

// TestPropertyQuotasAndBorrowing drives random streams through random
// quota trees and checks after every cycle:
//   - no quota is exceeded (Tree.Over: max, borrowing limits, the root),
//     and the ledger agrees with the jobs;
//   - a binding is marked Borrowing exactly when it took its queue beyond
//     its nominal quota (borrowing is recorded);
//   - a queue below its guarantee is served before a borrower: when a
//     borrowing job was admitted, no queue's next job that fit in its
//     guarantee could have been placed at that moment instead (checked by
//     replaying the cycle's bindings on a copy of the ledger).
func TestPropertyQuotasAndBorrowing(t *testing.T) {
	c := testCluster(t, 4, 2) // 32 GPUs
	var borrowing, checked int
	defer func() {
		t.Logf("%d borrowing bindings, %d guarantee checks against them", borrowing, checked)
		if borrowing == 0 || checked == 0 {
			t.Error("the property was never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		nq := rapid.IntRange(2, 4).Draw(rt, "queues")
		cfg := queue.Config{}
		left := int64(32)
		for i := 0; i < nq; i++ {
			nom := min(left, rapid.Int64Range(2, 14).Draw(rt, "nominal"))
			left -= nom
			q := queue.Quota{Resource: "gpu", Nominal: nom}
			if rapid.Bool().Draw(rt, "limit") {
				q.BorrowingLimit = queue.Limit(rapid.Int64Range(0, 16).Draw(rt, "borrow"))
			}
			if rapid.Bool().Draw(rt, "max") {
				q.Max = queue.Limit(nom + rapid.Int64Range(0, 8).Draw(rt, "over"))
			}
			pol := []queue.Ordering{queue.BestEffortFIFO, queue.StrictFIFO}[rapid.IntRange(0, 1).Draw(rt, "pol")]
			cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: fmt.Sprintf("q%d", i), Quotas: []queue.Quota{q}, Policy: queue.Policy{Ordering: pol}})
		}
		placer, _ := gang.New("best-fit", gang.Options{Explain: gang.DetailBrief})
		s, err := New(Config{Cluster: c, Queues: cfg, Placer: placer})
		if err != nil {
			rt.Fatal(err)
		}
		replayPlacer, _ := gang.New("best-fit", gang.Options{Explain: gang.DetailBrief})
		var jobs []*simJob
		n := rapid.IntRange(5, 60).Draw(rt, "jobs")
		for i := 0; i < n; i++ {
			g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
			jobs = append(jobs, &simJob{
				spec: workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: fmt.Sprintf("q%d", rapid.IntRange(0, nq-1).Draw(rt, "q")),
					Groups: []workload.TaskGroup{g}, Runtime: time.Duration(rapid.IntRange(1, 8).Draw(rt, "rt")) * 15 * time.Minute},
				arrive: t0.Add(time.Duration(rapid.IntRange(0, 90).Draw(rt, "at")) * time.Minute),
			})
		}
		jobsByID := map[string]*simJob{}
		for _, j := range jobs {
			jobsByID[j.spec.ID] = j
		}
		var pre *topology.Ledger
		var preUse map[string]int64
		s.testBeforeCycle = func() {
			pre = s.ledger.Clone()
			preUse = map[string]int64{}
			for _, id := range s.tree.Leaves() {
				u, r := s.tree.Usage(id)
				preUse[s.tree.Name(id)] = u[0] + r[0]
			}
		}
		runStream(t, s, jobs, t0.Add(48*time.Hour), func(now time.Time, d Decision) {
			checkInvariants(t, s, now.String())
			use := map[string]int64{}
			for k, v := range preUse {
				use[k] = v
			}
			nominal := map[string]int64{}
			for _, id := range s.tree.Leaves() {
				nominal[s.tree.Name(id)] = s.tree.Nominal(id)[0]
			}
			// First pending job of each queue, with its reason.
			first := map[string]Pending{}
			for _, p := range d.Pending {
				if _, ok := first[p.Queue]; !ok {
					first[p.Queue] = p
				}
			}
			l := pre
			for bi, b := range d.Bindings {
				st, _ := s.Job(b.Job)
				milli := int64(0)
				for _, cl := range b.Placement.Claims {
					for _, g := range cl.GPUs {
						switch g.Kind {
						case topology.ClaimWhole:
							milli += 1000
						default:
							milli += int64(g.Milli)
						}
					}
				}
				over := use[b.Queue]+milli > nominal[b.Queue]
				if over != b.Borrowing {
					t.Fatalf("%v: %s Borrowing=%v but usage %d+%d vs nominal %d", now, b.Job, b.Borrowing, use[b.Queue], milli, nominal[b.Queue])
				}
				if b.Borrowing {
					borrowing++
					for q, p := range first {
						if q == b.Queue || p.Reason == nil {
							continue
						}
						switch p.Reason.Code {
						case WaitCapacity, WaitTopology, WaitFragmentation:
						default:
							continue
						}
						pj := jobsByID[p.Job]
						// p must have been its queue's candidate: every
						// job ahead of it in its queue was bound before b.
						ahead := false
						for _, later := range d.Bindings[bi:] {
							lj := jobsByID[later.Job]
							if later.Queue == q && (lj.arrive.Before(pj.arrive) || lj.arrive.Equal(pj.arrive) && lj.spec.ID < pj.spec.ID) {
								ahead = true
							}
						}
						if ahead {
							continue
						}
						req, _ := gang.NewRequest(c, &pj.spec)
						need := req.MinDemand().Milli
						if use[q]+need > nominal[q] {
							continue // p would borrow too
						}
						checked++
						var pl gang.Placement
						if replayPlacer.Place(l, req, &pl) == nil {
							t.Fatalf("%v: %s (queue %s) was admitted borrowing while %s of %s, within its guarantee, fit", now, b.Job, b.Queue, p.Job, q)
						}
					}
				}
				use[b.Queue] += milli
				if err := l.Allocate(st.Placement.Claims...); err != nil {
					t.Fatalf("replay: %v", err)
				}
			}
		})
		for _, j := range jobs {
			if j.err != nil && !strings.Contains(j.err.Error(), "can never fit") {
				t.Fatalf("submit %s: %v", j.spec.ID, j.err)
			}
		}
	})
}

// TestPropertyBoundedWaiting runs random streams of mixed jobs (1 to 32
// GPUs, priorities 0..9) at high load through one queue. With
// priority-aging and backfill, every job starts within a bound; the same
// stream under best-effort FIFO lets a large job starve (the control that
// shows the test has teeth).
func TestPropertyBoundedWaiting(t *testing.T) {
	c := testCluster(t, 4, 0) // 32 GPUs
	stream := func(seed uint64) []*simJob {
		r := rand.New(rand.NewPCG(seed, 7))
		var jobs []*simJob
		at := t0
		for i := 0; i < 400; i++ {
			at = at.Add(time.Duration(r.IntN(6)+1) * time.Minute)
			g := workload.TaskGroup{Count: 1, GPUs: 1 << r.IntN(4)}
			prio := int32(r.IntN(10))
			if i%50 == 10 {
				g = workload.TaskGroup{Count: 4, GPUs: 8} // a whole-cluster gang, low priority
				prio = 0
			}
			jobs = append(jobs, &simJob{spec: workload.Job{ID: fmt.Sprintf("j%03d", i), Queue: "q", Priority: prio, Groups: []workload.TaskGroup{g},
				Runtime: time.Duration(10+r.IntN(50)) * time.Minute}, arrive: at})
		}
		return jobs
	}
	maxWait := func(pol queue.Policy, jobs []*simJob) (time.Duration, string) {
		s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Policy: pol}}}}})
		if err != nil {
			t.Fatal(err)
		}
		last := jobs[len(jobs)-1].arrive
		runStream(t, s, jobs, last.Add(7*24*time.Hour), nil)
		var worst time.Duration
		var who string
		for _, j := range jobs {
			w := 365 * 24 * time.Hour
			if j.started {
				w = j.start.Sub(j.arrive)
			}
			if w > worst {
				worst, who = w, j.spec.ID
			}
		}
		return worst, who
	}
	for seed := uint64(1); seed <= 3; seed++ {
		jobs := stream(seed)
		// Bound: a job outranks every later arrival after 10 priority
		// points × 10 minutes; then it waits at most for the jobs ahead of
		// it (a few hours of work on this cluster).
		aging, who := maxWait(queue.Policy{Ordering: queue.PriorityAging, AgingInterval: 10 * time.Minute, Backfill: true}, stream(seed))
		if aging > 12*time.Hour {
			t.Errorf("seed %d: with aging, %s waited %v", seed, who, aging)
		}
		control, cwho := maxWait(queue.Policy{Ordering: queue.BestEffortFIFO}, jobs)
		t.Logf("seed %d: max wait with aging %v (%s), best-effort %v (%s)", seed, aging, who, control, cwho)
		if control <= aging {
			t.Errorf("seed %d: the control (best-effort FIFO) did not starve anyone: %v", seed, control)
		}
	}
}

// TestPropertyBackfillKeepsReservation checks that backfill never delays
// a reservation: in a strict FIFO queue with backfill and exact runtime
// estimates, every job that was given a reserved start time starts no
// later than the first time it was given, and the reserved time never
// moves later; with and without placement around reservations
// (BackfillAround) and deeper reservations (ReserveDepth: then for the
// first reserved job, whose reservation the later ones are planned
// around), with or without whole-host reservations (ReserveWholeHosts).
// backfillStream draws a Scheduler with one backfilling StrictFIFO queue
// (BackfillAround, reservations in depth, whole hosts drawn) and a stream
// of jobs for it; depth is its ReserveDepth.
func backfillStream(t testing.TB, rt *rapid.T) (s *Scheduler, jobs []*simJob, depth int) {
	c := testCluster(t, rapid.IntRange(2, 5).Draw(rt, "hosts"), 0)
	depth = rapid.IntRange(0, 4).Draw(rt, "reserveDepth")
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "q", Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}}}}},
		BackfillAround: rapid.Bool().Draw(rt, "backfillAround"), ReserveDepth: depth, MaxReservations: max(depth, 4),
		ReserveWholeHosts: rapid.Bool().Draw(rt, "wholeHosts")})
	if err != nil {
		rt.Fatal(err)
	}
	n := rapid.IntRange(2, 30).Draw(rt, "jobs")
	for i := 0; i < n; i++ {
		g := shapes[rapid.IntRange(0, len(shapes)-1).Draw(rt, "shape")]
		jobs = append(jobs, &simJob{spec: workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: "q", Groups: []workload.TaskGroup{g},
			Runtime: time.Duration(rapid.IntRange(1, 12).Draw(rt, "rt")) * 10 * time.Minute},
			arrive: t0.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "at")) * time.Minute)})
	}
	return s, jobs, depth
}

func TestPropertyBackfillKeepsReservation(t *testing.T) {
	var reservations, backfilled int
	defer func() {
		t.Logf("%d reservations, %d backfilled jobs", reservations, backfilled)
		if reservations == 0 || backfilled == 0 {
			t.Error("the property was never exercised")
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		s, jobs, depth := backfillStream(t, rt)
		reserved := map[string]time.Time{}
		firstReserved := map[string]time.Time{}
		byID := map[string]*simJob{}
		for _, j := range jobs {
			byID[j.spec.ID] = j
		}
		runStream(t, s, jobs, t0.Add(100*time.Hour), func(now time.Time, d Decision) {
			for _, b := range d.Bindings {
				if b.Backfill {
					backfilled++
				}
			}
			heads := 0
			for _, p := range d.Pending {
				if p.Reason == nil || p.Reason.Reserved.IsZero() {
					continue
				}
				// Deeper reservations (ReserveDepth > 1) are planned
				// around those of jobs ahead of them, which may move
				// them later; only the first reserved job, the queue's
				// head, keeps the guarantee.
				if heads++; depth > 1 && heads > 1 {
					continue
				}
				at := p.Reason.Reserved
				if prev, ok := reserved[p.Job]; ok && at.After(prev) {
					t.Fatalf("%v: reservation of %s moved later: %v → %v", now, p.Job, prev, at)
				}
				reserved[p.Job] = at
				if _, ok := firstReserved[p.Job]; !ok {
					firstReserved[p.Job] = at
					reservations++
				}
			}
		})
		for id, at := range firstReserved {
			j := byID[id]
			if !j.started || j.start.After(at) {
				t.Fatalf("%s reserved for %v started %v (started=%v)", id, at, j.start, j.started)
			}
		}
	})
}

var rewriteGolden = flag.Bool("update-golden", false, "rewrite testdata/golden files")

// TestDeterminismGolden runs a fixed pseudo-random event sequence (mixed
// queues, policies, failures, requeues, health changes) twice and checks
// that both runs give byte-identical Decisions, equal to the golden file.
func TestDeterminismGolden(t *testing.T) {
	run := func() string {
		c := testCluster(t, 8, 4)
		cfg := queue.Config{Fairness: queue.Fairness{Policy: queue.FairTree, HalfLife: time.Hour}, Root: queue.Node{Children: []queue.Node{
			{Name: "research", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 40}}, Children: []queue.Node{
				{Name: "pretraining", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 32, LendingLimit: queue.Limit(16)}}, Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
				{Name: "experiments", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8, BorrowingLimit: queue.Limit(8)}}, Policy: queue.Policy{Ordering: queue.PriorityAging, AgingInterval: 15 * time.Minute, Backfill: true}},
			}},
			{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 24}}},
		}}}
		s, err := New(Config{Cluster: c, Queues: cfg, DefaultRuntime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(42, 42))
		var b strings.Builder
		now := t0
		var live []string
		queues := []string{"pretraining", "experiments", "evaluation"}
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(r.IntN(10)) * time.Minute)
			switch k := r.IntN(10); {
			case k < 5:
				id := fmt.Sprintf("j%03d", step)
				j := workload.Job{ID: id, Queue: queues[r.IntN(3)], Priority: int32(r.IntN(3)), Groups: []workload.TaskGroup{shapes[r.IntN(len(shapes))]}}
				if r.IntN(3) > 0 {
					j.Runtime = time.Duration(10+r.IntN(120)) * time.Minute
				}
				if r.IntN(5) == 0 {
					j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
				}
				if err := s.Submit(j, now); err != nil {
					fmt.Fprintf(&b, "submit %s: %v\n", id, err)
				} else {
					live = append(live, id)
				}
			case k < 8 && len(live) > 0:
				id := live[r.IntN(len(live))]
				st, _ := s.Job(id)
				var err error
				switch {
				case st.State == queue.Running && r.IntN(4) > 0:
					err = s.Finished(id, now)
				case st.State == queue.Running && r.IntN(2) == 0:
					err = s.Requeue(id, now)
				case st.State == queue.Running:
					err = s.Failed(id, now)
				case st.State.Waiting() && r.IntN(3) == 0:
					err = s.Cancel(id, now)
				case st.State.Waiting():
					err = s.SetPriority(id, int32(r.IntN(3)))
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := s.Job(id); !ok {
					live = slices.DeleteFunc(live, func(x string) bool { return x == id })
				}
				fmt.Fprintf(&b, "%s event on %s\n", rel(now), id)
			case k == 8:
				h := topology.HostID(r.IntN(c.NumHosts()))
				hh := []topology.Health{topology.Healthy, topology.Draining, topology.Failed}[r.IntN(3)]
				ids, err := s.SetHostHealth(c.HostName(h), hh)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "%s host %s %s affects %v\n", rel(now), c.HostName(h), hh, ids)
			default:
				d := s.Schedule(now)
				fmt.Fprintf(&b, "== schedule %s\n%s", rel(now), d.Format(c))
				for _, x := range d.Bindings {
					if err := s.Started(x.Job, now); err != nil {
						t.Fatal(err)
					}
				}
				for _, v := range s.Queues() {
					fmt.Fprintf(&b, "  %s used %v reserved %v borrowed %v share %.6f\n", v.Queue, v.Resources[0].Used, v.Resources[0].Reserved, v.Resources[0].Borrowed, v.Share)
				}
			}
			checkInvariants(t, s, fmt.Sprint("step ", step))
		}
		return b.String()
	}
	a, b := run(), run()
	if a != b {
		t.Fatal("two runs of the same event sequence differ")
	}
	path := filepath.Join("testdata", "golden", "determinism.txt")
	if *rewriteGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(a), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to create it)", err)
	}
	if string(want) != a {
		t.Fatalf("decisions differ from %s (run with -update-golden after checking the change)", path)
	}
}
