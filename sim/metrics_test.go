package sim_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestHorizonCensoredWaits: at the Horizon, jobs that arrived but never
// started are reported as still waiting with their waits so far (which
// the wait distribution leaves out), and jobs due after it as not arrived
// rather than unfinished.
func TestHorizonCensoredWaits(t *testing.T) {
	c := box(t)
	other := tj("other", 30*time.Minute, time.Hour, 0, gpus(1))
	other.Spec.Queue = "r"
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Horizon: 3 * time.Hour, Audit: true}, []trace.Job{
		tj("a", 0, 10*time.Hour, 0, gpus(8)),
		tj("b", time.Hour, time.Hour, 0, gpus(8)),
		other,
		tj("late", 5*time.Hour, time.Hour, 0, gpus(1)),
	})
	checkConservation(t, r, 4)
	s := r.Summary
	if want := (sim.JobCounts{Total: 4, Unfinished: 3, NotArrived: 1}); s.Jobs != want {
		t.Errorf("jobs %+v, want %+v", s.Jobs, want)
	}
	if s.Wait.N != 1 || s.Wait.Max != 0 {
		t.Errorf("wait of started jobs %+v, want only a's 0 s", s.Wait)
	}
	// b waited 2 h, other 2.5 h by the horizon.
	if want := (sim.Censored{Jobs: 2, MeanSeconds: 8100, LongestSeconds: 9000}); s.StillWaiting != want {
		t.Errorf("still waiting %+v, want %+v", s.StillWaiting, want)
	}
	for _, q := range s.Queues {
		want := sim.Censored{Jobs: 1, MeanSeconds: 7200, LongestSeconds: 7200}
		if q.Name == "r" {
			want = sim.Censored{Jobs: 1, MeanSeconds: 9000, LongestSeconds: 9000}
		}
		if q.StillWaiting != want {
			t.Errorf("queue %s still waiting %+v, want %+v", q.Name, q.StillWaiting, want)
		}
	}
	got := byID(r)
	if l := got["late"]; l.State != sim.StateNotArrived || l.Start != -1 || l.State.String() != "not-arrived" {
		t.Errorf("late: %+v", l)
	}
	if got["b"].State != sim.StateUnfinished || got["a"].State != sim.StateUnfinished {
		t.Errorf("a %s, b %s; want unfinished", got["a"].State, got["b"].State)
	}
	if s.Makespan != 3*3600 || r.Samples[len(r.Samples)-1].Time != 3*3600 {
		t.Errorf("makespan %v, last sample at %v; want the horizon", s.Makespan, r.Samples[len(r.Samples)-1].Time)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"notArrived":1`, `"stillWaiting":{"jobs":2,"meanSeconds":8100,"longestSeconds":9000}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary.json lacks %s", want)
		}
	}
}

// TestSampleUtilisation: each row's useful utilisation is the useful work
// since the previous row over the capacity of that period; a preempted
// run's kept work counts up to its final checkpoint, the reload and
// checkpoint pauses not at all.
func TestSampleUtilisation(t *testing.T) {
	c := box(t)
	f := simtest.NewFIFO(c)
	f.Preempt, f.Grace = true, 10*time.Second
	cfg := sim.Config{Cluster: c, Scheduler: f, Audit: true, SampleEvery: 20 * time.Second,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Second, Overhead: 5 * time.Second, RestartCost: 10 * time.Second}}
	r := simtest.Run(t, cfg, []trace.Job{
		tj("low", 0, 100*time.Second, 0, gpus(8)),
		tj("high", 50*time.Second, 10*time.Second, 10, gpus(8)),
	})
	checkConservation(t, r, 2)
	// As in TestPreemptionCheckpoint: low's first run keeps 50 s of work
	// on 8 GPUs, done by 55 s (its final checkpoint ends at 60); high
	// runs 60-70; low reloads 70-80 and does its last 50 s of work by
	// 135. Useful work, spread over [0, 55], [60, 70] and [80, 135]:
	// 400/55 GPU-s per second at 8 GPUs is 10/11 of the box.
	k := 10.0 / 11
	want := []struct{ t, u float64 }{{0, 0}, {20, k}, {40, k}, {60, k * 15 / 20}, {80, 0.5}, {100, k}, {120, k}, {135, k}}
	if len(r.Samples) != len(want) {
		t.Fatalf("%d samples, want %d: %+v", len(r.Samples), len(want), r.Samples)
	}
	for i, w := range want {
		if s := r.Samples[i]; s.Time != w.t || !near(s.Utilisation, w.u) {
			t.Errorf("sample %d at %v: utilisation %v, want %v at %v", i, s.Time, s.Utilisation, w.u, w.t)
		}
	}
	if u := r.Summary.GPUTime.Useful; u != 880 {
		t.Errorf("useful %v GPU-s, want 880", u)
	}
}

// TestAutoSampleCap: with the period left to the simulator, a long tail
// after a short arrival span keeps the time series within the cap, on a
// regular grid, with the rows a run asking for the final period gets.
func TestAutoSampleCap(t *testing.T) {
	c := box(t)
	var jobs []trace.Job
	for i := range 10 {
		jobs = append(jobs, tj(string(rune('a'+i)), time.Duration(i)*time.Minute+7*time.Second, time.Duration(i+1)*17*time.Minute+3*time.Second, 0, gpus(2)))
	}
	jobs = append(jobs, tj("tail", 13*time.Second, 2000*time.Hour+11*time.Second, 0, gpus(1)))
	run := func(every time.Duration) *sim.Result {
		js := make([]trace.Job, len(jobs))
		copy(js, jobs)
		return simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), SampleEvery: every}, js)
	}
	auto := run(0)
	checkConservation(t, auto, len(jobs))
	n := len(auto.Samples)
	if n > 5001 || n < 2500 {
		t.Fatalf("%d samples over %.0f h; want 2,500..5,000 and the last", n, auto.Summary.Makespan/3600)
	}
	period := auto.Samples[1].Time - auto.Samples[0].Time
	if ratio := period / 60; ratio != math.Exp2(math.Round(math.Log2(ratio))) || ratio < 2 {
		t.Errorf("period %v s is not a minute doubled", period)
	}
	for i := 1; i < n-1; i++ {
		if auto.Samples[i].Time != float64(i)*period {
			t.Fatalf("sample %d at %v, want %v", i, auto.Samples[i].Time, float64(i)*period)
		}
	}
	fixed := run(time.Duration(period) * time.Second)
	if len(fixed.Samples) != n {
		t.Fatalf("%d samples with the period given, %d chosen", len(fixed.Samples), n)
	}
	for i := range n {
		a, b := auto.Samples[i], fixed.Samples[i]
		if a.Time != b.Time || a.Allocation != b.Allocation || a.Running != b.Running || a.Pending != b.Pending || !near(a.Utilisation, b.Utilisation) {
			t.Fatalf("sample %d: chosen %+v, given %+v", i, a, b)
		}
	}
	if a, b := auto.Summary.Fragmentation, fixed.Summary.Fragmentation; a.Samples != b.Samples || !near(a.MeanFreeGPUs, b.MeanFreeGPUs) {
		t.Errorf("fragmentation %+v, with the period given %+v", a, b)
	}
}

// reasonScheduler reports every pending job of the wrapped FIFO with the
// reasons of its cycle, in turn.
type reasonScheduler struct {
	*simtest.FIFO
	reasons []sim.Reason
	n       int
}

func (r *reasonScheduler) Schedule(now time.Duration) sim.Decision {
	d := r.FIFO.Schedule(now)
	for i := range d.Pending {
		d.Pending[i].Reason = r.reasons[r.n%len(r.reasons)]
	}
	if len(d.Pending) > 0 {
		r.n++
	}
	return d
}

// TestFailureReasons: backfill windows, strict-FIFO heads and victims
// being preempted are counted under their own names; a reason the
// simulator does not know counts as other.
func TestFailureReasons(t *testing.T) {
	names := map[string]bool{}
	for _, r := range sim.Reasons() {
		names[r.String()] = true
	}
	for _, n := range []string{"backfill-window", "behind-head", "waiting-for-victims"} {
		if !names[n] {
			t.Errorf("sim.Reasons() lacks %s", n)
		}
	}
	c := box(t)
	s := &reasonScheduler{FIFO: simtest.NewFIFO(c), reasons: []sim.Reason{sim.ReasonBackfill, sim.ReasonBehindHead, sim.ReasonVictims, sim.Reason(200)}}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s}, []trace.Job{
		tj("a", 0, time.Hour, 0, gpus(8)),
		tj("b", time.Second, time.Hour, 0, gpus(8)),
		tj("c", 2*time.Second, time.Hour, 0, gpus(8)),
		tj("d", 3*time.Second, time.Hour, 0, gpus(8)),
	})
	got := map[string]sim.ReasonCount{}
	for _, f := range r.Summary.Failures {
		got[f.Reason] = f
	}
	for _, n := range []string{"backfill-window", "behind-head", "waiting-for-victims", "other"} {
		if got[n].JobCycles == 0 || got[n].Jobs == 0 {
			t.Errorf("%s: %+v; failures %+v", n, got[n], r.Summary.Failures)
		}
	}
	for _, j := range r.Jobs {
		if j.ID != "a" && !names[j.LastReason] {
			t.Errorf("job %s: last reason %q", j.ID, j.LastReason)
		}
	}
}

// TestInputStatsIgnoredColumns: summary.json's input lists the columns a
// reader ignored, and has no such key when there are none.
func TestInputStatsIgnoredColumns(t *testing.T) {
	in := sim.NewInputStats(trace.Stats{Read: 3, Skipped: 1, FirstSkip: errors.New("line 2: bad"), IgnoredColumns: []string{"gpu_modle", "extra"}})
	b, _ := json.Marshal(in)
	if !strings.Contains(string(b), `"ignoredColumns":["gpu_modle","extra"]`) || in.Read != 3 || in.FirstSkip != "line 2: bad" {
		t.Errorf("input %s", b)
	}
	b, _ = json.Marshal(sim.NewInputStats(trace.Stats{Read: 3}))
	if strings.Contains(string(b), "ignored") {
		t.Errorf("input without ignored columns: %s", b)
	}
}
