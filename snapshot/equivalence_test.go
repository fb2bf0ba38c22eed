package snapshot

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// schedHost is what scenario.drive calls: a *gpusched.Scheduler, or a
// twin of two.
type schedHost interface {
	Submit(spec workload.Job, now time.Time) error
	Started(id string, now time.Time) error
	Finished(id string, now time.Time) error
	Requeue(id string, now time.Time) error
	Preempted(id string, now time.Time) error
	Checkpointed(id string, at, now time.Time) error
	Migrated(id string, now time.Time) error
	EvictionRefused(victim string, now time.Time, reason string) error
	Shrunk(id string, now time.Time) error
	Grown(id string, now time.Time) error
	Cordon(name string) error
	Uncordon(name string) error
	SetHostHealth(name string, hh topology.Health) ([]string, error)
	SetGPUHealth(g topology.GPUID, h topology.Health) ([]string, error)
	Job(id string) (gpusched.JobStatus, bool)
	Schedule(now time.Time) gpusched.Decision
}

var _ schedHost = (*gpusched.Scheduler)(nil)

// twin feeds every event to a and, once set, to b (a Scheduler loaded
// from a's state), and fails when b decides otherwise than a.
type twin struct {
	t      fataler
	a, b   *gpusched.Scheduler
	ca, cb *topology.Cluster
	state  string // b's state file, for failures
	cycles int    // cycles compared
}

func (w *twin) both(fa, fb func(*gpusched.Scheduler) error) error {
	ea := fa(w.a)
	if w.b != nil {
		if eb := fb(w.b); fmt.Sprint(ea) != fmt.Sprint(eb) {
			w.t.Fatalf("the loaded Scheduler answers %v, the original %v\nstate:\n%s", eb, ea, w.state)
		}
	}
	return ea
}

func (w *twin) Submit(spec workload.Job, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Submit(spec, now) }
	return w.both(f, f)
}
func (w *twin) Started(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Started(id, now) }
	return w.both(f, f)
}
func (w *twin) Finished(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Finished(id, now) }
	return w.both(f, f)
}
func (w *twin) Requeue(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Requeue(id, now) }
	return w.both(f, f)
}
func (w *twin) Preempted(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Preempted(id, now) }
	return w.both(f, f)
}
func (w *twin) Checkpointed(id string, at, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Checkpointed(id, at, now) }
	return w.both(f, f)
}
func (w *twin) Migrated(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Migrated(id, now) }
	return w.both(f, f)
}
func (w *twin) EvictionRefused(victim string, now time.Time, reason string) error {
	f := func(s *gpusched.Scheduler) error { return s.EvictionRefused(victim, now, reason) }
	return w.both(f, f)
}
func (w *twin) Shrunk(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Shrunk(id, now) }
	return w.both(f, f)
}
func (w *twin) Grown(id string, now time.Time) error {
	f := func(s *gpusched.Scheduler) error { return s.Grown(id, now) }
	return w.both(f, f)
}
func (w *twin) Cordon(name string) error {
	f := func(s *gpusched.Scheduler) error { return s.Cordon(name) }
	return w.both(f, f)
}
func (w *twin) Uncordon(name string) error {
	f := func(s *gpusched.Scheduler) error { return s.Uncordon(name) }
	return w.both(f, f)
}
func (w *twin) SetHostHealth(name string, hh topology.Health) ([]string, error) {
	var out []string
	err := w.both(func(s *gpusched.Scheduler) error { var e error; out, e = s.SetHostHealth(name, hh); return e },
		func(s *gpusched.Scheduler) error { _, e := s.SetHostHealth(name, hh); return e })
	return out, err
}
func (w *twin) SetGPUHealth(g topology.GPUID, h topology.Health) ([]string, error) {
	var out []string
	err := w.both(func(s *gpusched.Scheduler) error { var e error; out, e = s.SetGPUHealth(g, h); return e },
		func(s *gpusched.Scheduler) error { _, e := s.SetGPUHealth(g, h); return e })
	return out, err
}
func (w *twin) Job(id string) (gpusched.JobStatus, bool) { return w.a.Job(id) }

// Schedule runs a cycle on both and compares: bindings, preemptions,
// recoveries and expiries byte for byte (Decision.Format of them), and
// every waiting job in order with its reason, a placer's explanation
// reduced to "placement" (see reasonKey).
func (w *twin) Schedule(now time.Time) gpusched.Decision {
	da := w.a.Schedule(now)
	if w.b == nil {
		return da
	}
	db := w.b.Schedule(now)
	w.cycles++
	acts := func(c *topology.Cluster, d gpusched.Decision) string {
		d.Pending = nil
		return d.Format(c)
	}
	if x, y := acts(w.ca, da), acts(w.cb, db); x != y {
		w.t.Fatalf("at %s the loaded Scheduler decides\n%s\nthe original\n%s\nstate:\n%s", now.Format(time.RFC3339), y, x, w.state)
	}
	if x, y := decisionText(w.ca, da, nil), decisionText(w.cb, db, nil); x != y {
		w.t.Fatalf("at %s the loaded Scheduler's waiting jobs\n%s\nthe original's\n%s\nstate:\n%s", now.Format(time.RFC3339), y, x, w.state)
	}
	return da
}

// TestLoadedDecidesAsOriginal (issue 14, lossless state): run a random
// stream for a while, Capture → Encode → Load into a fresh Scheduler, then
// feed both the same further events for a day: every answer and every
// decision is the same (waiting reasons from the placer compared by kind,
// as the original repeats an explanation cached in an earlier cycle).
// Requeued jobs with checkpoints, failed and draining parts, quotas and
// Fair Tree are in the streams; preemption in
// TestLoadedDecidesAsOriginalPreempting; backfill queues in
// TestLoadedDecidesAsOriginalBackfill.
func TestLoadedDecidesAsOriginal(t *testing.T) { testLoadedDecidesAsOriginal(t, false, false, false) }

// TestLoadedDecidesAsOriginalPreempting: the same with a PlanPreemptor
// (a fresh one for each Scheduler), victims that stop some minutes after
// they are asked: the state carries the preemptions in flight
// (nominations and the jobs waiting for their victims).
func TestLoadedDecidesAsOriginalPreempting(t *testing.T) {
	testLoadedDecidesAsOriginal(t, false, true, false)
}

func testLoadedDecidesAsOriginal(t *testing.T, backfill, preempting, defrag bool) {
	runs, compared, cycles, inflight, reserved, moving, cordoned := 0, 0, 0, 0, 0, 0, 0
	refused, resized, consolidating := 0, 0, 0
	// Backfill streams carry a kept reservation in about one state in
	// ten: run five rounds of -rapid.checks streams (one with -short).
	// Defrag streams carry a migration in flight less often than not in
	// a -short run's 20 streams: run up to five rounds, stopping once the
	// property was exercised (a fixed count flaked on rapid's seed).
	rounds := 1
	if backfill && !testing.Short() {
		rounds = 5
	}
	if defrag {
		rounds = 5
	}
	for round := range rounds {
		if defrag && !backfill && round > 0 && moving > 0 {
			break
		}
		rapid.Check(t, func(rt *rapid.T) {
			sc := genScenario(rt, backfill)
			opt := Options{NoPreemption: true}
			if preempting {
				sc.stopAfter = rapid.SampledFrom([]time.Duration{0, 5 * time.Minute, 30 * time.Minute}).Draw(rt, "stopAfter")
				sc.cfg.Preemptor = planPreemptor(rt)
				opt.Preemptor, opt.NoPreemption = planPreemptor(rt), false
				// The host refuses every refuse-th stop asked
				// (EvictionRefused: a PodDisruptionBudget), retried
				// after EvictionRetry.
				sc.refuse = rapid.IntRange(0, 3).Draw(rt, "refuse")
				sc.cfg.EvictionRetry = rapid.SampledFrom([]time.Duration{0, 20 * time.Minute, 2 * time.Hour}).Draw(rt, "evictionRetry")
				// Elastic gangs that shrink instead of stopping whole,
				// and grow back.
				if rapid.Bool().Draw(rt, "elastic") {
					sc.cfg.Elastic = &gpusched.ElasticConfig{NoGrow: rapid.Bool().Draw(rt, "noGrow")}
					for _, j := range sc.jobs {
						if g := &j.spec.Groups[0]; g.Count > 1 && rapid.Bool().Draw(rt, "elasticJob") {
							g.MinCount = rapid.IntRange(1, g.Count-1).Draw(rt, "minCount")
						}
					}
				}
			}

			if defrag {
				sc.stopAfter = rapid.SampledFrom([]time.Duration{0, 5 * time.Minute, 30 * time.Minute}).Draw(rt, "stopAfter")
				sc.cfg.Defrag = &gpusched.DefragConfig{After: rapid.SampledFrom([]time.Duration{0, 10 * time.Minute}).Draw(rt, "defragAfter"),
					Budget:    preempt.DefragBudget{PerHour: rapid.IntRange(0, 3).Draw(rt, "perHour")},
					MaxPerJob: rapid.IntRange(0, 2).Draw(rt, "maxPerJob")}
				// Consolidation when idle, with its own budget.
				if rapid.Bool().Draw(rt, "consolidate") {
					sc.cfg.Defrag.Consolidate = &gpusched.ConsolidateConfig{
						Idle:   rapid.SampledFrom([]time.Duration{0, 30 * time.Minute}).Draw(rt, "idle"),
						Budget: preempt.DefragBudget{PerHour: rapid.IntRange(0, 3).Draw(rt, "consPerHour")},
						Target: rapid.IntRange(0, 2).Draw(rt, "target")}
					if rapid.Bool().Draw(rt, "consLevels") {
						sc.cfg.Defrag.Consolidate.Levels = []topology.Level{topology.LevelHost + 1}
					}
				}
			}
			w := &twin{t: rt, a: sc.scheduler(rt), ca: sc.c}
			at := t0.Add(time.Duration(rapid.IntRange(0, 600).Draw(rt, "at")) * time.Minute)
			sc.drive(rt, w, at.Add(24*time.Hour), func(now time.Time) {
				if w.b != nil || now.Before(at) {
					return
				}
				// With a Preemptor, wait (up to 6 h) for a preemption in
				// flight (or a refused stop in force) to capture.
				if preempting && now.Before(at.Add(6*time.Hour)) && len(w.a.Nominations(sc.order())) == 0 && len(w.a.Refusals()) == 0 {
					return
				}
				// With defragmentation, for a migration in flight.
				if defrag && now.Before(at.Add(6*time.Hour)) && len(w.a.DefragState(nil).Moving) == 0 {
					return
				}
				st, err := Capture(w.a, now, CaptureOptions{Placer: sc.placer})
				if err != nil {
					rt.Fatal(err)
				}
				var buf bytes.Buffer
				if err := Encode(&buf, st, ""); err != nil {
					rt.Fatal(err)
				}
				w.state = buf.String()
				if len(st.Nominations) > 0 {
					inflight++
				}
				if len(st.Reservations) > 0 {
					reserved++
				}
				if len(st.Migrations) > 0 {
					moving++
				}
				if len(st.Cordoned) > 0 {
					cordoned++
				}
				if len(st.Refusals) > 0 {
					refused++
				}
				if len(st.Resizes) > 0 {
					resized++
				}
				if k := st.Consolidation; k != nil && (len(k.Log) > 0 || k.NothingFound) {
					consolidating++
				}
				l, err := Load(buf.Bytes(), "state.yaml", opt)
				if err != nil {
					rt.Fatalf("%v\n%s", err, w.state)
				}
				w.b, w.cb = l.Scheduler, l.Cluster
			}, nil)
			runs++
			if w.b != nil {
				compared++
				cycles += w.cycles
			}
		})
	}
	t.Logf("%d streams, %d loaded and compared, %d cycles compared, %d states with preemptions in flight, %d with reservations, %d with migrations in flight, %d with cordons, %d with refusals in force, %d with resized elastic jobs, %d with consolidation's log or memo",
		runs, compared, cycles, inflight, reserved, moving, cordoned, refused, resized, consolidating)
	if compared < runs/4 || cycles == 0 {
		t.Fatalf("only %d of %d streams reached their capture", compared, runs)
	}
	if backfill && !testing.Short() && reserved == 0 {
		t.Fatal("no state carried a kept reservation: the property was not exercised")
	}
	if defrag && moving == 0 {
		t.Fatal("no state carried a migration in flight: the property was not exercised")
	}
}

// TestLoadedDecidesAsOriginalDefrag: the same with defragmentation
// (Config.Defrag, budgets and a cap per job drawn): the state carries the
// migrations in flight, each job's completed moves and the budget's log
// (version 5); the host reports Migrated some minutes after a move is
// issued. Cordons come and go in every stream.
func TestLoadedDecidesAsOriginalDefrag(t *testing.T) {
	testLoadedDecidesAsOriginal(t, false, false, true)
}

func planPreemptor(t fataler) *gpusched.PlanPreemptor {
	pp, err := gpusched.NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return pp
}

// TestLoadedDecidesAsOriginalBackfill: the same with backfilling queues,
// whose reservations are kept across cycles (never moved later while
// still free at their time, their shadow ledgers reused): the state
// carries them (version 4). Without them about one stream in 700
// diverged; run with -rapid.checks=5000 for a deeper search.
func TestLoadedDecidesAsOriginalBackfill(t *testing.T) {
	testLoadedDecidesAsOriginal(t, true, false, false)
}

// TestLoadedDecidesAsOriginalBackfillPreempting: backfilling queues and a
// PlanPreemptor. It found, about once in 10,000 to 100,000 streams, the
// verdicts judged at capture (TestLoadedKeepsVerdictPastAFreedHost), the
// requeued jobs' remaining runtime
// (TestLoadedOrdersRequeuedByRemainingTime) and a nomination's placement
// domain (TestLoadedKeepsNominationDomain); run it with
// -rapid.checks=20000 (100,000 streams) for a deep search.
func TestLoadedDecidesAsOriginalBackfillPreempting(t *testing.T) {
	testLoadedDecidesAsOriginal(t, true, true, false)
}
