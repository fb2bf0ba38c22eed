package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// hostJob is one job of a random stream, as the host sees it.
type hostJob struct {
	spec    workload.Job
	arrive  time.Time
	dur     time.Duration // true run time
	end     time.Time
	running bool
	gone    bool
}

// scenario is a random cluster, queue tree, placer and job stream.
type scenario struct {
	c      *topology.Cluster
	cfg    gpusched.Config
	placer string
	jobs   []*hostJob
	faults []fault
	ckpt   time.Duration // checkpoint interval of running jobs (0: none)
	// stopAfter is how long a victim of a preemption runs on before the
	// host reports it Preempted (scenarios with a Preemptor), and a job
	// asked to migrate before the host reports it Migrated.
	stopAfter time.Duration
	cordons   []cordon
	// refuse: the host refuses every refuse-th stop asked
	// (EvictionRefused); 0 none.
	refuse int
}

// cordon cordons (on) or uncordons a host at a time.
type cordon struct {
	at   time.Time
	host string
	on   bool
}

type fault struct {
	at   time.Time
	host topology.HostID
	gpu  topology.GPUID // NoGPU: the host
	h    topology.Health
}

// genScenario draws a scenario; backfill lets queues backfill.
func genScenario(t *rapid.T, backfill bool) *scenario {
	sp, err := topology.Generator{Name: "p", Machine: "dgx-h100", Hosts: rapid.IntRange(2, 8).Draw(t, "hosts"), HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scenario{c: c}
	gpus := int64(c.NumGPUs())
	pol := func(name string) queue.Policy {
		return queue.Policy{
			Ordering: rapid.SampledFrom([]queue.Ordering{queue.BestEffortFIFO, queue.StrictFIFO, queue.PriorityAging}).Draw(t, name+"-order"),
			Backfill: backfill && rapid.Bool().Draw(t, name+"-backfill"), AgingInterval: 10 * time.Minute,
		}
	}
	quota := func(name string) []queue.Quota {
		if !rapid.Bool().Draw(t, name+"-quota") {
			return nil
		}
		q := queue.Quota{Resource: queue.ResourceGPU, Nominal: rapid.Int64Range(0, gpus/2).Draw(t, name+"-nominal")}
		if rapid.Bool().Draw(t, name+"-max") {
			q.Max = queue.Limit(q.Nominal + rapid.Int64Range(0, gpus/2).Draw(t, name+"-maxv"))
		}
		return []queue.Quota{q}
	}
	sc.cfg.Queues = queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "a", Policy: pol("a"), Quotas: quota("a")},
		{Name: "b", Policy: pol("b"), Quotas: quota("b")},
		{Name: "c", Policy: pol("c")},
	}}}
	sc.cfg.Queues.Fairness.Policy = rapid.SampledFrom([]queue.FairPolicy{queue.DRF, queue.FairTree}).Draw(t, "fairness")
	sc.cfg.MaxRestarts = rapid.IntRange(0, 2).Draw(t, "maxRestarts")
	sc.cfg.DefaultRuntime = rapid.SampledFrom([]time.Duration{0, time.Hour}).Draw(t, "defaultRuntime")
	sc.cfg.Seed = 7
	sc.cfg.BackfillAround = backfill && rapid.Bool().Draw(t, "backfillAround")
	if backfill {
		sc.cfg.ReserveDepth = rapid.IntRange(0, 3).Draw(t, "reserveDepth")
		sc.cfg.ReserveWholeHosts = rapid.Bool().Draw(t, "reserveWholeHosts")
	}
	sc.placer = rapid.SampledFrom([]string{"topology", "best-fit", "gpu-packing"}).Draw(t, "placer")
	sc.ckpt = rapid.SampledFrom([]time.Duration{0, 20 * time.Minute}).Draw(t, "ckpt")
	shapes := []workload.TaskGroup{
		{Count: 1, GPUs: 1}, {Count: 1, GPUs: 2}, {Count: 1, GPUs: 4}, {Count: 1, GPUs: 8},
		{Count: 2, GPUs: 8}, {Count: 4, GPUs: 1}, {Count: 1, GPUMilli: 500}, {Count: 3, GPUs: 2},
	}
	n := rapid.IntRange(1, 40).Draw(t, "jobs")
	at := t0
	for i := range n {
		at = at.Add(time.Duration(rapid.IntRange(0, 20).Draw(t, "gap")) * time.Minute)
		g := rapid.SampledFrom(shapes).Draw(t, "shape")
		j := &hostJob{arrive: at, dur: time.Duration(rapid.IntRange(5, 240).Draw(t, "dur")) * time.Minute}
		j.spec = workload.Job{ID: fmt.Sprintf("j%02d", i), Queue: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "queue"),
			Priority: int32(rapid.IntRange(0, 2).Draw(t, "prio")), Groups: []workload.TaskGroup{g}}
		if g.Count > 1 && rapid.Bool().Draw(t, "tor") {
			j.spec.Topology = []workload.Constraint{{Level: "tor", Required: true}}
		}
		if rapid.Bool().Draw(t, "estimate") {
			j.spec.Runtime = time.Duration(float64(j.dur) * rapid.Float64Range(0.5, 2).Draw(t, "est"))
		}
		sc.jobs = append(sc.jobs, j)
	}
	for range rapid.IntRange(0, 3).Draw(t, "faults") {
		f := fault{at: t0.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "faultAt")) * time.Minute), gpu: topology.NoGPU,
			h: rapid.SampledFrom([]topology.Health{topology.Draining, topology.Failed, topology.Healthy}).Draw(t, "health")}
		f.host = topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "faultHost"))
		if rapid.Bool().Draw(t, "gpuFault") {
			first, _ := c.HostGPUs(f.host)
			f.gpu = first + topology.GPUID(rapid.IntRange(0, 7).Draw(t, "faultGPU"))
		}
		sc.faults = append(sc.faults, f)
	}
	slices.SortStableFunc(sc.faults, func(a, b fault) int { return a.at.Compare(b.at) })
	for range rapid.IntRange(0, 3).Draw(t, "cordons") {
		h := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "cordonHost"))
		sc.cordons = append(sc.cordons, cordon{at: t0.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "cordonAt")) * time.Minute),
			host: c.HostName(h), on: rapid.Bool().Draw(t, "cordonOn")})
	}
	slices.SortStableFunc(sc.cordons, func(a, b cordon) int { return a.at.Compare(b.at) })
	return sc
}

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func (sc *scenario) scheduler(t fataler) *gpusched.Scheduler {
	p, err := gang.New(sc.placer, gang.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sc.cfg
	cfg.Cluster, cfg.Placer = sc.c, p
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drive runs the stream through s as a host would: at every event time it
// reports what ended, the faults (requeueing the jobs on a failed part),
// the checkpoints and the arrivals, then calls before(now) and runs a
// cycle, whose decision it hands to after before starting the bindings.
func (sc *scenario) drive(t fataler, s schedHost, until time.Time, before func(now time.Time), after func(now time.Time, d gpusched.Decision)) {
	byID := map[string]*hostJob{}
	for _, j := range sc.jobs {
		byID[j.spec.ID] = j
	}
	next, nf := 0, 0
	type stop struct {
		id string
		at time.Time
	}
	var stops []stop   // victims asked to stop, in order asked
	var moves []stop   // jobs asked to migrate, in order asked
	var shrinks []stop // elastic gangs asked to shrink, in order asked
	asked := 0         // stops asked, for refuse
	var last time.Time
	same := 0
	nc := 0
	for {
		var now time.Time
		have := false
		cand := func(at time.Time) {
			if !have || at.Before(now) {
				now, have = at, true
			}
		}
		if next < len(sc.jobs) {
			cand(sc.jobs[next].arrive)
		}
		if nf < len(sc.faults) {
			cand(sc.faults[nf].at)
		}
		for _, j := range sc.jobs {
			if j.running {
				cand(j.end)
			}
		}
		for _, st := range stops {
			cand(st.at)
		}
		for _, st := range moves {
			cand(st.at)
		}
		for _, st := range shrinks {
			cand(st.at)
		}
		if nc < len(sc.cordons) {
			cand(sc.cordons[nc].at)
		}
		if !have || now.After(until) {
			return
		}
		if now.Equal(last) {
			if same++; same > 200 {
				// No job is preempted twice at one instant (see
				// gpusched.PlanPreemptor), so the cycles at one time
				// settle: 200 rounds there is a Scheduler bug (a
				// preemption ping-pong), not a stream to cut short.
				t.Fatalf("the stream does not advance: 200 rounds of events and cycles at %s", now.Format(time.RFC3339))
			}
		} else {
			last, same = now, 0
		}
		kept := stops[:0]
		for _, st := range stops {
			if st.at.After(now) {
				kept = append(kept, st)
				continue
			}
			if j := byID[st.id]; j != nil && j.running {
				if err := s.Preempted(st.id, now); err != nil {
					t.Fatal(err)
				}
				j.running = false
			}
		}
		stops = kept
		keptMoves := moves[:0]
		for _, st := range moves {
			if st.at.After(now) {
				keptMoves = append(keptMoves, st)
				continue
			}
			if j := byID[st.id]; j != nil && j.running {
				// A move dropped since (its job stopped and ran again
				// elsewhere) is not reported.
				if err := s.Migrated(st.id, now); errors.Is(err, gpusched.ErrNotMoving) {
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				j.running = false
			}
		}
		moves = keptMoves
		keptShrinks := shrinks[:0]
		for _, st := range shrinks {
			if st.at.After(now) {
				keptShrinks = append(keptShrinks, st)
				continue
			}
			if j := byID[st.id]; j != nil && j.running {
				// A shrink dropped since (the gang stopped) is not
				// reported.
				if err := s.Shrunk(st.id, now); err != nil && !errors.Is(err, gpusched.ErrNotResizing) {
					t.Fatal(err)
				}
			}
		}
		shrinks = keptShrinks
		for ; nc < len(sc.cordons) && !sc.cordons[nc].at.After(now); nc++ {
			cd := sc.cordons[nc]
			var err error
			if cd.on {
				err = s.Cordon(cd.host)
			} else {
				err = s.Uncordon(cd.host)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, j := range sc.jobs {
			if j.running && !j.end.After(now) {
				j.running, j.gone = false, true
				if err := s.Finished(j.spec.ID, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Running jobs report their checkpoints every ckpt.
		for _, j := range sc.jobs {
			if !j.running || sc.ckpt == 0 {
				continue
			}
			js, _ := s.Job(j.spec.ID)
			if cp := js.Started.Add(now.Sub(js.Started) / sc.ckpt * sc.ckpt); cp.After(js.Started) {
				if err := s.Checkpointed(j.spec.ID, cp, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for ; nf < len(sc.faults) && !sc.faults[nf].at.After(now); nf++ {
			f := sc.faults[nf]
			var hit []string
			var err error
			if f.gpu == topology.NoGPU {
				hit, err = s.SetHostHealth(sc.c.HostName(f.host), f.h)
			} else {
				hit, err = s.SetGPUHealth(f.gpu, f.h)
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.h != topology.Failed {
				continue
			}
			for _, id := range hit {
				j := byID[id]
				if !j.running {
					continue
				}
				if sc.ckpt > 0 {
					js, _ := s.Job(id)
					if cp := js.Started.Add(sc.ckpt); !cp.After(now) {
						if err := s.Checkpointed(id, cp, now); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := s.Requeue(id, now); err != nil {
					t.Fatal(err)
				}
				j.running = false
			}
		}
		for ; next < len(sc.jobs) && !sc.jobs[next].arrive.After(now); next++ {
			j := sc.jobs[next]
			if err := s.Submit(j.spec, now); err != nil {
				j.gone = true
			}
		}
		if before != nil {
			before(now)
		}
		d := s.Schedule(now)
		if after != nil {
			after(now, d)
		}
		for _, p := range d.Preemptions {
			if asked++; sc.refuse > 0 && asked%sc.refuse == 0 {
				if err := s.EvictionRefused(p.Job, now, "disruption budget"); err != nil {
					t.Fatal(err)
				}
				continue
			}
			stops = append(stops, stop{id: p.Job, at: now.Add(sc.stopAfter)})
		}
		for _, sh := range d.Shrinks {
			shrinks = append(shrinks, stop{id: sh.Job, at: now.Add(sc.stopAfter)})
		}
		for _, g := range d.Grows {
			if err := s.Grown(g.Job, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range d.Migrations {
			moves = append(moves, stop{id: m.Job, at: now.Add(sc.stopAfter)})
		}
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, now); err != nil {
				t.Fatal(err)
			}
			j := byID[b.Job]
			j.running, j.end = true, now.Add(j.dur)
		}
		for _, r := range d.Recoveries {
			// Drains and failures: requeue (a kept job runs on).
			if r.Action == 0 || byID[r.Job] == nil || !byID[r.Job].running {
				continue
			}
			if js, ok := s.Job(r.Job); ok && js.State == queue.Running && r.Action.String() != "keep" {
				if err := s.Requeue(r.Job, now); err != nil {
					t.Fatal(err)
				}
				byID[r.Job].running = false
			}
		}
	}
}

func (sc *scenario) order() []string {
	ids := make([]string, len(sc.jobs))
	for i, j := range sc.jobs {
		ids[i] = j.spec.ID
	}
	return ids
}

// decisionText renders the parts of a decision a state must reproduce:
// bindings and every waiting job with its reason. states, if given, says
// the state of the waiting jobs (a loaded Scheduler has requeued jobs as
// pending).
func decisionText(c *topology.Cluster, d gpusched.Decision, states map[string]queue.State) string {
	var b strings.Builder
	for _, x := range d.Bindings {
		fmt.Fprintf(&b, "bind %s (%s) borrowing=%v backfill=%v: %s\n", x.Job, x.Queue, x.Borrowing, x.Backfill, gpusched.FormatPlacement(c, x.Placement))
	}
	for _, p := range d.Pending {
		st := p.State
		if s, ok := states[p.Job]; ok {
			st = s
		}
		fmt.Fprintf(&b, "wait %s (%s, %s) %s\n", p.Job, p.Queue, st, reasonKey(p.Reason))
	}
	return b.String()
}

// placementCodes are the codes of reasons that come from the placer's
// explanation, which the Scheduler caches by job shape.
var placementCodes = map[gpusched.ReasonCode]bool{gpusched.WaitCapacity: true, gpusched.WaitTopology: true, gpusched.WaitFragmentation: true, gpusched.WaitTooLarge: true}

// reasonKey is what of a reason a loaded state reproduces: all of it,
// except that a reason from the placer is only "placement". The Scheduler
// keeps a failed shape's explanation until capacity that could matter is
// freed, so it may report the free GPUs, and even the verdict (capacity
// rather than fragmentation), of an earlier cycle; a loaded Scheduler
// explains afresh.
func reasonKey(r *gpusched.Reason) string {
	switch {
	case r == nil:
		return "<nil>"
	case placementCodes[r.Code]:
		return "placement"
	case r.Code == gpusched.WaitBehindHead && placementCodes[r.Cause]:
		c := *r
		c.Cause = gpusched.WaitCapacity
		return strings.Replace(c.String(), "(capacity)", "(placement)", 1)
	}
	return r.String()
}

// TestRoundTrip: a state captured from a Scheduler driven through a random
// stream encodes, decodes to an equal State, and restores into a
// Scheduler whose own capture is the same state.
func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t, true)
		s := sc.scheduler(t)
		until := t0.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "at")) * time.Minute)
		sc.drive(t, s, until, nil, nil)
		now := until
		opt := CaptureOptions{Placer: sc.placer}
		st, err := Capture(s, now, opt)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, st, "round trip"); err != nil {
			t.Fatal(err)
		}
		got, err := Decode(buf.Bytes(), "state.yaml")
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(got, st) {
			t.Fatalf("decoded state differs from the captured one:\n%s", buf.String())
		}
		l, err := Load(buf.Bytes(), "state.yaml", Options{NoPreemption: true})
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		again, err := Capture(l.Scheduler, now, opt)
		if err != nil {
			t.Fatal(err)
		}
		// A loaded Scheduler holds everything the state says: waiting
		// states, progress, counts, admission times, queue usage.
		want := *st
		want.Notes = nil
		again.Notes = nil
		if !reflect.DeepEqual(again, &want) {
			var a bytes.Buffer
			_ = Encode(&a, again, "")
			t.Fatalf("captured from the loaded Scheduler:\n%s\nwant:\n%s", a.String(), buf.String())
		}
	})
}

// TestReproducesDecision: a state captured just before a cycle of a
// Scheduler driven through a random stream, loaded into a fresh
// Scheduler, gives the same decision at the same time: the same bindings,
// the same waiting jobs in the same order, and the same reasons (see
// reasonKey for what of a placer's explanation). Queues do not backfill
// here: the Scheduler keeps a reservation from cycle to cycle, never
// moving it later, where a loaded one reserves afresh (see the package
// documentation).
func TestReproducesDecision(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t, false)
		s := sc.scheduler(t)
		at := t0.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "at")) * time.Minute)
		var loaded *Loaded
		var text string
		sc.drive(t, s, at.Add(24*time.Hour), func(now time.Time) {
			if loaded != nil || now.Before(at) {
				return
			}
			st, err := Capture(s, now, CaptureOptions{Placer: sc.placer})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := Encode(&buf, st, ""); err != nil {
				t.Fatal(err)
			}
			text = buf.String()
			if loaded, err = Load(buf.Bytes(), "state.yaml", Options{NoPreemption: true}); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
		}, func(now time.Time, d gpusched.Decision) {
			if loaded == nil || !now.Equal(loaded.State.Now) {
				return
			}
			live := decisionText(sc.c, d, nil)
			got := decisionText(loaded.Cluster, loaded.Scheduler.Schedule(now), loaded.States)
			if got != live {
				t.Fatalf("the loaded state decides\n%s\nthe Scheduler decided\n%s\nstate:\n%s", got, live, text)
			}
		})
	})
}
