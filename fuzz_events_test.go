package gpusched

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// eventTape reads a fuzz input as a stream of small numbers; past its end
// it reads zeros.
type eventTape struct {
	b []byte
	i int
}

func (t *eventTape) byte() byte {
	if t.i >= len(t.b) {
		return 0
	}
	t.i++
	return t.b[t.i-1]
}

func (t *eventTape) done() bool { return t.i >= len(t.b) }

// pick returns one of vals.
func pick[T any](t *eventTape, vals ...T) T { return vals[int(t.byte())%len(vals)] }

// FuzzEvents drives a Scheduler (2 DGX H100 hosts in one ToR, two queues
// with quotas, a PlanPreemptor, AdmitTimeout, defragmentation; the first
// byte turns elastic shrink and grow off, on, or on without growing back,
// and the backfill options BackfillAround, ReserveWholeHosts and
// ReserveDepth)
// through random sequences of every public call — events, health
// changes, refused evictions, Restore, RestoreJob, RestoreNomination,
// RestoreNoPlan, RestoreDefrag, cordons, Migrated, elastic submissions,
// Shrunk, Grown, RestoreResize, cycles whose shrinks and grows are
// confirmed or left in flight — with hostile values: negative, huge and
// out-of-range numbers, unknown IDs and queues, bad MIG profiles and
// claims, times going backwards, starts in the future, times a year
// ahead (ErrClockSkew), events delivered twice (the second must be
// ErrAlreadyApplied and change nothing), and callbacks — Holding's, a
// queue reader's Ascend, a Placer's during Schedule — that call back in
// (ErrReentrant, never a panic). After every step
// nothing has panicked, the ledger's counters and indexes agree with its
// GPUs (Ledger.Check), no quota is exceeded (Tree.Over), the holding jobs
// are exactly those the ledger's claims are for, and no job holds fewer
// tasks than its minimum or more than its count. Copies handed out by
// Job are scribbled on to prove they are copies.
//
//	go test -run '^$' -fuzz FuzzEvents -fuzztime 60s .
func FuzzEvents(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 9, 1, 0, 9, 2, 0, 9, 10, 200, 9, 3, 3, 9})
	f.Add([]byte{0, 11, 1, 4, 250, 11, 0, 1, 255, 9, 12, 3, 1, 9, 5, 2, 9})
	f.Add([]byte{0, 13, 255, 255, 13, 3, 7, 0, 0, 9, 0, 5, 1, 9, 14, 3, 9, 15, 0, 9})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 9, 19, 1, 2, 3, 4, 5, 20, 2, 1, 2, 1, 1, 0, 1, 1, 2, 21, 0, 1, 1, 9, 21, 1, 1, 2, 9})
	// Elastic: gangs submitted, shrunk for a higher priority, grown back,
	// resizes restored.
	f.Add([]byte{1, 22, 0, 1, 1, 0, 0, 0, 22, 1, 0, 1, 0, 0, 0, 9, 1, 0, 0, 0, 0, 22, 2, 2, 0, 0, 2, 0, 0, 9, 1, 0, 0, 0, 0, 23, 1, 0, 24, 2, 0, 9, 1, 0, 0, 0, 1})
	f.Add([]byte{1, 22, 0, 0, 1, 0, 1, 1, 0, 22, 1, 0, 0, 1, 1, 1, 0, 9, 1, 3, 0, 1, 22, 2, 1, 2, 0, 2, 0, 0, 9, 1, 3, 0, 0, 25, 1, 1, 2, 1, 0, 1, 2, 1, 0, 9, 1, 5, 0, 1})
	// Backfill options on (first byte 3 × 0b1011: around, whole hosts,
	// depth 3), jobs ending and waiting; then depth -1 (3 × 0b1111).
	f.Add([]byte{33, 0, 0, 0, 0, 0, 9, 1, 0, 9, 2, 0, 9, 10, 200, 9, 3, 3, 9, 1, 1, 9})
	f.Add([]byte{45, 0, 0, 0, 0, 0, 9, 1, 0, 9, 2, 0, 9, 10, 200, 9, 3, 3, 9, 1, 1, 9})
	f.Add([]byte{2, 22, 1, 0, 1, 1, 0, 0, 0, 22, 1, 1, 1, 1, 0, 0, 9, 1, 2, 0, 1, 22, 0, 0, 0, 2, 0, 0, 9, 1, 2, 0, 0, 7, 1, 0, 9, 1, 30, 0, 1, 23, 0, 1, 24, 0, 1, 25, 0, 3, 4})
	// Events delivered twice, a year ahead, callbacks calling back in;
	// then the same with a Placer that calls back in (first byte 48).
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 9, 1, 0, 0, 1, 0, 26, 0, 1, 1, 0, 9, 1, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 9, 1, 0, 0, 1, 0, 26, 1, 1, 4, 0, 9, 1, 2, 0, 1, 0, 27, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 27, 1, 0, 7, 27, 2, 6, 0})
	f.Add([]byte{48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 9, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0})
	c := testClusterTB(f, 2, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return
		}
		tp := &eventTape{b: data}
		// The first byte's higher bits (above the elastic choice, so the
		// seeds that start with 0–2 keep every option off) turn on the
		// backfill options, with a hostile depth.
		var opt byte
		if len(data) > 0 {
			opt = data[0] / 3
		}
		around, whole := opt&1 != 0, opt&2 != 0
		depth := []int{0, 2, 3, -1}[opt>>2&3]
		// Bit 4: a Placer that calls back in while Schedule runs.
		var placer gang.Placer
		var inPlacer func()
		if opt&16 != 0 {
			tpl, err := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
			if err != nil {
				t.Fatal(err)
			}
			placer = reentrantPlacer{Placer: tpl, fn: func() { inPlacer() }}
		}
		pp, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Cluster: c, Preemptor: pp, Placer: placer, AdmitTimeout: 10 * time.Minute, MaxRestarts: 2, DefaultRuntime: time.Hour, Defrag: &DefragConfig{MaxPerJob: 2},
			Elastic:        pick(tp, nil, &ElasticConfig{}, &ElasticConfig{NoGrow: true}),
			BackfillAround: around, ReserveWholeHosts: whole, ReserveDepth: depth,
			Queues: queue.Config{Fairness: queue.Fairness{Policy: queue.FairTree}, Root: queue.Node{Children: []queue.Node{
				{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}, Policy: queue.Policy{Backfill: true}},
				{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
			}}}})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		ids := []string{"j0", "j1", "j2", "j3", "j4", "j5", "nope", ""}
		id := func() string { return pick(tp, ids...) }
		when := func() time.Time {
			return now.Add(pick(tp, time.Duration(0), time.Minute, 11*time.Minute, -time.Hour, 100*time.Hour, math.MinInt64/2, time.Nanosecond, 365*24*time.Hour))
		}
		num := func() int { return pick(tp, 0, 1, 2, 8, -1, -1000, math.MaxInt32, math.MinInt32) }
		group := func() workload.TaskGroup {
			g := workload.TaskGroup{Count: pick(tp, 1, 1, 2, 0, -1, 1<<21), CPUMilli: pick(tp, int64(0), 1000, -5, math.MaxInt64)}
			switch tp.byte() % 5 {
			case 0:
				g.GPUs = pick(tp, 1, 2, 8, 16, -3, 300)
			case 1:
				g.GPUMilli = pick(tp, 250, 500, 999, 1000, -1, 0)
			case 2:
				g.MIGProfile = pick(tp, "1g.10gb", "3g.40gb", "7g.80gb", "9g.1tb", "")
			case 3:
				g.MinCount = pick(tp, 0, 1, 3, -2)
				g.GPUs = 1
			}
			return g
		}
		spec := func() workload.Job {
			j := workload.Job{ID: id(), Queue: pick(tp, "a", "b", "root", "zz", ""), Priority: int32(num()),
				Groups:  []workload.TaskGroup{group()},
				Runtime: pick(tp, time.Duration(0), time.Hour, -time.Second), Grace: pick(tp, time.Duration(0), time.Minute, -time.Minute, 1000*time.Hour),
				MaxPreemptions: pick(tp, 0, 1, -1), CheckpointInterval: pick(tp, time.Duration(0), 10*time.Minute, -1)}
			if tp.byte()%3 == 0 {
				j.Groups = append(j.Groups, group())
			}
			if tp.byte()%3 == 0 {
				j.Topology = []workload.Constraint{{Level: pick(tp, "host", "tor", "nvlink", "rack", ""), Required: tp.byte()%2 == 0}}
			}
			return j
		}
		claim := func() topology.Claim {
			cl := topology.Claim{Host: topology.HostID(pick(tp, 0, 1, -1, 2, 1000)), CPUMilli: pick(tp, int64(0), 1000, -1)}
			for n := int(tp.byte() % 3); n > 0; n-- {
				gc := topology.GPUClaim{GPU: topology.GPUID(pick(tp, 0, 1, 7, 8, 15, -1, 16, math.MaxInt32)),
					Kind: pick(tp, topology.ClaimWhole, topology.ClaimShare, topology.ClaimMIG, topology.ClaimKind(9))}
				gc.Milli = int32(pick(tp, 250, 500, 0, -250, 5000))
				gc.Profile = topology.MIGProfileID(pick(tp, 0, 1, -1, -128, 127))
				gc.Start = int8(pick(tp, 0, 4, -1, 127))
				cl.GPUs = append(cl.GPUs, gc)
			}
			return cl
		}
		claims := func() []topology.Claim {
			var out []topology.Claim
			for n := int(tp.byte() % 3); n > 0; n-- {
				out = append(out, claim())
			}
			return out
		}
		tasks := func() [][]topology.Claim {
			var out [][]topology.Claim
			for g := int(tp.byte() % 3); g > 0; g-- {
				var cls []topology.Claim
				for n := int(tp.byte() % 3); n > 0; n-- {
					cls = append(cls, claim())
				}
				out = append(out, cls)
			}
			return out
		}
		domain := func() string { return pick(tp, "", "nope", c.HostName(0), c.DomainName(c.Root())) }
		state := func() queue.State {
			return pick(tp, queue.Pending, queue.Requeued, queue.Preempted, queue.Admitted, queue.Running, queue.State(200))
		}
		health := func() topology.Health {
			return pick(tp, topology.Healthy, topology.Draining, topology.Failed, topology.Health(7))
		}
		// Elastic and rigid gangs of whole GPUs, as FuzzElasticEvents drew
		// them before it was folded in here.
		elasticJob := func() workload.Job {
			g := workload.TaskGroup{Count: pick(tp, 4, 8, 2), MinCount: pick(tp, 0, 1, 2, 4, -1), GPUs: pick(tp, 1, 2)}
			return workload.Job{ID: id(), Queue: pick(tp, "a", "b"), Priority: int32(pick(tp, 0, 1, 10)), Groups: []workload.TaskGroup{g},
				Topology: pick(tp, []workload.Constraint(nil), []workload.Constraint{{Level: "host", Required: true}})}
		}
		// reenter calls one of the methods that change the Scheduler from
		// inside a callback: it must be refused with ErrReentrant.
		reenter := func(where string) {
			var err error
			switch tp.byte() % 8 {
			case 0:
				err = s.Submit(spec(), when())
			case 1:
				err = s.Cancel(id(), when())
			case 2:
				err = s.Finished(id(), when())
			case 3:
				err = s.Preempted(id(), when())
			case 4:
				err = s.SetPriority(id(), int32(num()))
			case 5:
				_, err = s.SetHostHealth(c.HostName(0), topology.Failed)
			case 6:
				if d := s.Schedule(when()); len(d.Bindings)+len(d.Pending)+len(d.Preemptions) > 0 {
					t.Fatalf("Schedule inside %s decided something", where)
				}
				err = ErrReentrant
			case 7:
				err = s.Cordon(c.HostName(1))
			}
			if !errors.Is(err, ErrReentrant) {
				t.Fatalf("a change inside %s: %v, want ErrReentrant", where, err)
			}
		}
		inPlacer = func() {
			if tp.byte()%4 == 0 {
				reenter("the Placer")
			}
		}
		// redeliver replays an event that was just applied: it must be
		// ErrAlreadyApplied and change nothing.
		redeliver := func(what string, ev func() error) {
			if ev() != nil || tp.byte()%2 != 0 {
				return
			}
			gen, n, at := s.ledger.Generation(), s.Len(), s.Now()
			if err := ev(); !errors.Is(err, ErrAlreadyApplied) {
				t.Fatalf("%s delivered twice: %v, want ErrAlreadyApplied", what, err)
			}
			if s.ledger.Generation() != gen || s.Len() != n || !s.Now().Equal(at) {
				t.Fatalf("%s delivered twice changed the Scheduler", what)
			}
		}
		for step := 0; !tp.done() && step < 200; step++ {
			op := tp.byte() % 28
			what := fmt.Sprintf("step %d op %d", step, op)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s panicked: %v", what, r)
					}
				}()
				switch op {
				case 0, 1:
					_ = s.Submit(spec(), when())
				case 2:
					_ = s.Started(id(), when())
				case 3:
					_ = s.Finished(id(), when())
				case 4:
					_ = s.Failed(id(), when())
				case 5:
					_ = s.Cancel(id(), when())
				case 6:
					_ = s.Requeue(id(), when())
				case 7:
					_ = s.Preempted(id(), when())
				case 8:
					_ = s.SetPriority(id(), int32(num()))
				case 9, 10:
					if tp.byte()%4 != 0 {
						now = now.Add(time.Duration(tp.byte()) * time.Minute)
					}
					d := s.Schedule(when())
					for _, b := range d.Bindings {
						if tp.byte()%3 != 0 {
							_ = s.Started(b.Job, now)
						}
					}
					for _, p := range d.Preemptions {
						if tp.byte()%4 == 0 {
							_ = s.EvictionRefused(p.Job, now, "disruption budget")
							continue
						}
						_ = s.Preempted(p.Job, now)
					}
					for _, r := range d.Recoveries {
						_ = s.Requeue(r.Job, now)
					}
					for _, m := range d.Migrations {
						if tp.byte()%2 == 0 {
							_ = s.Migrated(m.Job, now)
						}
					}
					// Shrinks and grows confirmed, or left in flight.
					confirm := tp.byte()%2 == 0
					for _, x := range d.Shrinks {
						if confirm {
							_ = s.Shrunk(x.Job, now)
						}
					}
					for _, x := range d.Grows {
						if confirm {
							_ = s.Grown(x.Job, now)
						}
					}
				case 11:
					_, _ = s.SetGPUHealth(topology.GPUID(num()%20), health())
				case 12:
					_, _ = s.SetHostHealth(pick(tp, c.HostName(0), c.HostName(1), "nope"), health())
				case 13:
					_ = s.Restore(spec(), tasks(), state(), when(), when())
				case 14:
					_ = s.RestoreJob(RestoredJob{Spec: spec(), State: state(), Tasks: tasks(), Submitted: when(), Admitted: when(), Started: when(), Now: when(),
						Preemptions: num(), Restarts: num(), Progress: pick(tp, time.Duration(0), time.Hour, -time.Hour), Checkpoint: pick(tp, time.Time{}, when())})
				case 15:
					_ = s.Checkpointed(id(), when(), when())
				case 16:
					_ = s.RestoreQueueUsage(pick(tp, "a", "b", "", "zz"), fairshare.Usage{Value: pick(tp, 0, 1e6, -1, math.Inf(1), math.NaN()), At: when()})
				case 17:
					if st, ok := s.Job(id()); ok {
						if len(st.Spec.Groups) > 0 {
							st.Spec.Groups[0].Count = 0
							st.Spec.Groups[0].GPUs = -1
						}
						if st.Placement != nil && len(st.Placement.Claims) > 0 {
							st.Placement.Claims[0].Host = -1
						}
					}
					s.Progress(id())
					s.Holding(func(string, JobStatus) bool { return true })
				case 18:
					victims := pick(tp, []string(nil), []string{id()}, []string{id(), id()})
					_ = s.RestoreNomination(Nomination{Job: id(), Victims: victims, Tasks: pick(tp, [][]topology.Claim(nil), tasks()), Due: when(),
						Domain: domain()})
					_ = s.Nominations([]string{id(), id()})
					_ = s.RestoreReservation(Reservation{Job: id(), At: pick(tp, time.Time{}, when()), Forever: tp.byte()%2 == 0, Tasks: tasks(),
						Current: tp.byte()%2 == 0, Built: pick(tp, time.Time{}, when()), Domain: domain()})
					_ = s.Reservations()
				case 19: // preemption verdicts (snapshot versions 5 and 7)
					_ = s.NoPlans([]string{id(), id()})
					hosts := func() []topology.HostID {
						return pick(tp, []topology.HostID(nil), []topology.HostID{0}, []topology.HostID{1, 0, 1}, []topology.HostID{-1}, []topology.HostID{2, math.MaxInt32})
					}
					_ = s.RestoreNoPlan(NoPlan{Job: id(), Until: pick(tp, time.Time{}, when()), Priority: int32(num()), Quotas: tp.byte()%2 == 0, Exact: tp.byte()%2 == 0,
						Gained: hosts(), Eligible: hosts()}) // (and the hosts changed since: version 7)
				case 20: // defragmentation state (snapshot version 5)
					var st DefragState
					for n := int(tp.byte() % 3); n > 0; n-- {
						st.Moving = append(st.Moving, MigrationInFlight{Job: id(), To: tasks(), Domain: domain()})
					}
					for n := int(tp.byte() % 3); n > 0; n-- {
						st.Moves = append(st.Moves, JobMoves{Job: id(), Moves: num()})
					}
					for n := int(tp.byte() % 3); n > 0; n-- {
						st.Issued = append(st.Issued, preempt.DefragIssued{At: when(), Lost: preempt.GPUTime(num())})
					}
					st.Now = pick(tp, time.Time{}, when())
					_ = s.RestoreDefrag(st)
					_ = s.DefragState([]string{id(), id()})
				case 21: // cordons and moves reported
					name := pick(tp, c.HostName(0), c.HostName(1), "nope", "")
					if tp.byte()%2 == 0 {
						_ = s.Cordon(name)
					} else {
						_ = s.Uncordon(name)
					}
					_ = s.Migrated(id(), when())
					_ = s.Leaving()
				case 22: // elastic gangs (Config.Elastic)
					_ = s.Submit(elasticJob(), when())
				case 23:
					_ = s.Shrunk(id(), when())
				case 24:
					_ = s.Grown(id(), when())
				case 26: // events delivered twice
					j, at := id(), when()
					switch tp.byte() % 6 {
					case 0:
						redeliver("Started", func() error { return s.Started(j, at) })
					case 1:
						redeliver("Finished", func() error { return s.Finished(j, at) })
					case 2:
						redeliver("Failed", func() error { return s.Failed(j, at) })
					case 3:
						redeliver("Cancel", func() error { return s.Cancel(j, at) })
					case 4:
						redeliver("Preempted", func() error { return s.Preempted(j, at) })
					case 5:
						redeliver("Requeue", func() error { return s.Requeue(j, at) })
					}
				case 27: // callbacks that call back in
					switch tp.byte() % 3 {
					case 0:
						s.Holding(func(string, JobStatus) bool { reenter("Holding"); return tp.byte()%2 == 0 })
					case 1:
						if l, ok := s.Tree().Leaf(pick(tp, "a", "b")); ok {
							l.Ascend(func(queue.PendingJob) bool { reenter("a leaf's Ascend"); return false })
						}
					case 2:
						s.Ledger().AscendHosts(c.Root(), topology.NoModel, 0, func(topology.HostID, int) bool { reenter("AscendHosts"); return false })
					}
				case 25: // resizes in flight (snapshot version 6)
					_ = s.RestoreResize(Resize{Job: id(), Size: pick(tp, []int(nil), []int{8}, []int{-1}, []int{2, 2}),
						Shrink: pick(tp, []topology.Claim(nil), claims()), Grow: pick(tp, []topology.Claim(nil), claims()), Grace: pick(tp, time.Duration(0), -time.Second)})
					_ = s.Resizes()
				}
			}()
			checkInvariants(t, s, what)
			checkHolders(t, s, what)
			s.jobs.ascendEnds(func(j *job) bool {
				if k := j.placement.Len(); k < j.spec.MinTasks() || k > j.spec.Tasks() {
					t.Fatalf("%s: %s holds %d tasks (min %d, count %d)", what, j.spec.ID, k, j.spec.MinTasks(), j.spec.Tasks())
				}
				return true
			})
		}
	})
}

// checkHolders: every holding job is filed under its current estimated
// end, and the GPUs the ledger has in use are exactly those the
// holding jobs' placements claim.
func checkHolders(t *testing.T, s *Scheduler, what string) {
	s.jobs.ends.ascend(func(k endKey) bool {
		if k != endKeyOf(k.j) {
			t.Fatalf("%s: job %s filed under a stale estimated end (%+v, now %+v)", what, k.j.spec.ID, k, endKeyOf(k.j))
		}
		return true
	})
	milli := make([]int, s.c.NumGPUs())
	s.jobs.ascendEnds(func(j *job) bool {
		if !j.state.Holding() || j.placement == nil {
			t.Fatalf("%s: job %s filed as holding in state %s", what, j.spec.ID, j.state)
		}
		for _, cl := range j.placement.Claims {
			for _, g := range cl.GPUs {
				switch g.Kind {
				case topology.ClaimWhole:
					milli[g.GPU] += topology.MilliPerGPU
				case topology.ClaimShare:
					milli[g.GPU] += int(g.Milli)
				default:
					milli[g.GPU] = -1 // MIG: checked by Ledger.Check
				}
			}
		}
		return true
	})
	for g := range milli {
		st := s.ledger.GPU(topology.GPUID(g))
		if milli[g] >= 0 && st.Mode != topology.ModeMIG && st.UsedMilli != milli[g] {
			t.Fatalf("%s: GPU %d: ledger uses %d milli, the holding jobs claim %d", what, g, st.UsedMilli, milli[g])
		}
	}
}

// testClusterTB is testCluster for a fuzz target.
func testClusterTB(tb testing.TB, hosts, perToR int) *topology.Cluster {
	return testCluster(tb, hosts, perToR)
}
