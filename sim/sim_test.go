package sim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func box(t testing.TB) *topology.Cluster {
	return simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 1})
}

func small(t testing.TB) *topology.Cluster {
	// 16 DGX H100 hosts, 4 per ToR, 4 ToRs per spine: 128 GPUs.
	return simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 16, HostsPerToR: 4, ToRsPerSpine: 2})
}

func tj(id string, submit, dur time.Duration, prio int32, groups ...workload.TaskGroup) trace.Job {
	return trace.Job{Spec: workload.Job{ID: id, Queue: "q", Priority: prio, Groups: groups}, Submit: submit, Duration: dur}
}

func gpus(n int) workload.TaskGroup { return workload.TaskGroup{Count: 1, GPUs: n} }

func byID(r *sim.Result) map[string]sim.JobRecord {
	m := map[string]sim.JobRecord{}
	for _, j := range r.Jobs {
		m[j.ID] = j
	}
	return m
}

// TestPreemptionCheckpoint works through one preemption with a grace
// period, a final checkpoint and a restart cost.
func TestPreemptionCheckpoint(t *testing.T) {
	c := box(t)
	f := simtest.NewFIFO(c)
	f.Preempt, f.Grace = true, 10*time.Second
	cfg := sim.Config{Cluster: c, Scheduler: f, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Second, Overhead: 5 * time.Second, RestartCost: 10 * time.Second}}
	r := simtest.Run(t, cfg, []trace.Job{
		tj("low", 0, 100*time.Second, 0, gpus(8)),
		tj("high", 50*time.Second, 10*time.Second, 10, gpus(8)),
	})
	got := byID(r)
	// low: works 0-30, checkpoints 30-35, works 35-; notice at 50, grace to
	// 60, final checkpoint 55-60 keeps 30+20 = 50 s of work. high runs
	// 60-70. low restarts at 70: 10 s reload + 50 s work + one 5 s
	// checkpoint after 30 s of work = 65 s, ending at 135.
	if h := got["high"]; h.Start != 60 || h.End != 70 || h.State != sim.StateCompleted {
		t.Errorf("high: %+v", h)
	}
	if l := got["low"]; l.End != 135 || l.Preemptions != 1 || l.State != sim.StateCompleted {
		t.Errorf("low: %+v", l)
	}
	s := r.Summary
	// Nothing lost to preemption: low's final checkpoint completed as it
	// stopped. Its run of 60 s kept 50 s of work; the two 5 s checkpoint
	// pauses are overhead, on 8 GPUs.
	if s.GPUTime.LostPreemption != 0 || s.Preemption.Preemptions != 1 || s.Preemption.Recovered != 1 {
		t.Errorf("preemption summary %+v, lost %v", s.Preemption, s.GPUTime.LostPreemption)
	}
	// Used: low 60 s + 65 s, high 10 s, all on 8 GPUs = 1080 GPU-s of
	// 8 × 135 = 1080: the box never idled.
	if s.GPUTime.Used != 1080 || s.GPUTime.Idle != 0 || s.Makespan != 135 {
		t.Errorf("gpu time %+v makespan %v", s.GPUTime, s.Makespan)
	}
}

// TestFailureRequeue fails the only host under a running job.
func TestFailureRequeue(t *testing.T) {
	c := box(t)
	cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Audit: true, Seed: 3,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Second, Overhead: 5 * time.Second},
		Failures:   sim.FailureModel{HostMTBF: 200 * time.Second, RepairTime: 20 * time.Second}}
	r := simtest.Run(t, cfg, []trace.Job{tj("a", 0, 300*time.Second, 0, gpus(4))})
	a := byID(r)["a"]
	s := r.Summary
	if a.State != sim.StateCompleted || a.FaultStops == 0 || s.Preemption.Faults == 0 {
		t.Fatalf("job %+v, summary %+v", a, s.Preemption)
	}
	if a.End < 300 || s.GPUTime.Failed <= 0 || s.GPUTime.LostFailure <= 0 {
		t.Errorf("end %v, failed %v lost %v", a.End, s.GPUTime.Failed, s.GPUTime.LostFailure)
	}
	checkConservation(t, r, 1)
}

func checkConservation(t *testing.T, r *sim.Result, n int) {
	t.Helper()
	s := r.Summary
	j := s.Jobs
	if j.Total != n || j.Completed+j.Rejected+j.Failed+j.Unfinished+j.NotArrived != n {
		t.Errorf("job states %+v do not add up to %d", j, n)
	}
	seen := map[string]bool{}
	var counted sim.JobCounts
	for _, rec := range r.Jobs {
		if seen[rec.ID] {
			t.Errorf("job %s recorded twice", rec.ID)
		}
		seen[rec.ID] = true
		counted.Total++
		switch rec.State {
		case sim.StateCompleted:
			counted.Completed++
		case sim.StateRejected:
			counted.Rejected++
		case sim.StateFailed:
			counted.Failed++
		case sim.StateUnfinished:
			counted.Unfinished++
		case sim.StateNotArrived:
			counted.NotArrived++
		}
		switch rec.State {
		case sim.StateCompleted:
			if rec.End-rec.Start < rec.Duration-1e-6 {
				t.Errorf("job %s ran %v s, faster than its duration %v", rec.ID, rec.End-rec.Start, rec.Duration)
			}
		case sim.StateRejected, sim.StateFailed, sim.StateUnfinished, sim.StateNotArrived:
		default:
			t.Errorf("job %s ended in non-terminal state %s", rec.ID, rec.State)
		}
	}
	g := s.GPUTime
	if d := g.Used + g.Idle + g.Failed - g.Capacity; math.Abs(d) > 1e-6*math.Max(1, g.Capacity) {
		t.Errorf("GPU time: used %v + idle %v + failed %v != capacity %v", g.Used, g.Idle, g.Failed, g.Capacity)
	}
	if g.Capacity != float64(s.GPUs)*s.Makespan {
		t.Errorf("capacity %v != %d GPUs × %v s", g.Capacity, s.GPUs, s.Makespan)
	}
	if g.Idle < -1e-6 || g.Useful > g.Used+1e-6 || g.Overhead < -1e-6 {
		t.Errorf("GPU time out of range: %+v", g)
	}
	if counted != j {
		t.Errorf("job records by state %+v, summary %+v", counted, j)
	}
	// The time series covers the run, and its useful utilisation adds up
	// to the useful GPU time.
	if len(r.Samples) == 0 || r.Samples[len(r.Samples)-1].Time != s.Makespan {
		t.Errorf("the time series does not end at the makespan %v", s.Makespan)
	}
	var useful float64
	for i := 1; i < len(r.Samples); i++ {
		sm := r.Samples[i]
		if sm.Utilisation < 0 || sm.Utilisation > 1+1e-9 {
			t.Errorf("sample at %v: utilisation %v", sm.Time, sm.Utilisation)
		}
		useful += sm.Utilisation * float64(s.GPUs) * (sm.Time - r.Samples[i-1].Time)
	}
	if math.Abs(useful-g.Useful) > 1e-6*math.Max(1, g.Useful) {
		t.Errorf("the time series has %v useful GPU-s, the summary %v", useful, g.Useful)
	}
}

func synthetic(t testing.TB, n int, seed uint64, gpus int, load float64) []trace.Job {
	syn := trace.Synthetic{Seed: seed, Jobs: n, Queues: []trace.Weighted[string]{{Value: "a", Weight: 2}, {Value: "b", Weight: 1}, {Value: "c", Weight: 1}},
		MedianDuration: 20 * time.Minute, MaxDuration: 12 * time.Hour}
	syn.MeanInterarrival = syn.InterarrivalFor(gpus, load)
	return simtest.Jobs(t, syn)
}

func fullConfig(c *topology.Cluster, sched sim.Scheduler, seed uint64) sim.Config {
	return sim.Config{Cluster: c, Scheduler: sched, Seed: seed, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Minute, Overhead: time.Minute, RestartCost: 2 * time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 2000 * time.Hour, HostMTBF: 4000 * time.Hour, ToRMTBF: 5000 * time.Hour, RepairTime: 30 * time.Minute},
		Drain:      sim.DrainModel{MeanInterval: 6 * time.Hour, Duration: time.Hour},
		Speed:      sim.SpeedModel{Enabled: true},
		Preemption: sim.PreemptionModel{Grace: 2 * time.Minute},
		Tenants:    []sim.Tenant{{Name: "a", GPUs: 64}, {Name: "b", GPUs: 32}, {Name: "c", GPUs: 32}},
	}
}

// TestConservation runs a loaded synthetic trace with every model on and
// the audit after every event, with and without preemption.
func TestConservation(t *testing.T) {
	for _, preempt := range []bool{false, true} {
		c := small(t)
		jobs := synthetic(t, 400, 11, c.NumGPUs(), 1.2)
		for i := range jobs {
			jobs[i].Spec.Priority = int32(i % 3)
		}
		// One job bigger than the cluster: rejected, counted.
		jobs = append(jobs, tj("huge", time.Hour, time.Hour, 0, workload.TaskGroup{Count: 20, GPUs: 8}))
		f := simtest.NewFIFO(c)
		f.Preempt, f.Grace, f.MaxRestarts, f.DrainGrace = preempt, time.Minute, 3, 2*time.Minute
		r := simtest.Run(t, fullConfig(c, f, 5), jobs)
		checkConservation(t, r, 401)
		s := r.Summary
		if s.Jobs.Rejected != 1 || s.Jobs.Completed < 300 {
			t.Errorf("preempt=%v: jobs %+v", preempt, s.Jobs)
		}
		if preempt && s.Preemption.Preemptions == 0 {
			t.Error("no preemptions with priorities and preemption on")
		}
		if s.Preemption.Faults == 0 || s.Preemption.Drains == 0 || s.Locality.MultiGPUPlacements == 0 || len(r.Samples) < 100 {
			t.Errorf("models idle: %+v %+v samples %d", s.Preemption, s.Locality, len(r.Samples))
		}
	}
}

func TestRejectErrors(t *testing.T) {
	c := box(t)
	s, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), RejectErrors: true},
		[]trace.Job{tj("big", 0, time.Second, 0, gpus(16))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err == nil {
		t.Fatal("a job larger than the cluster should stop the run with RejectErrors")
	}
	if _, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c)}, []trace.Job{tj("a", 0, 1, 0, gpus(1)), tj("a", 0, 1, 0, gpus(1))}); err == nil {
		t.Error("duplicate IDs accepted")
	}
	bad := []sim.Config{
		{Cluster: c},
		{Cluster: c, Scheduler: simtest.NewFIFO(c), Checkpoint: sim.CheckpointModel{Interval: -1}},
		{Cluster: c, Scheduler: simtest.NewFIFO(c), Speed: sim.SpeedModel{Enabled: true, SameHost: 1.5}},
		{Cluster: c, Scheduler: simtest.NewFIFO(c), Failures: sim.FailureModel{ToRMTBF: time.Hour}},
		{Cluster: c, Scheduler: simtest.NewFIFO(c), Drain: sim.DrainModel{MeanInterval: time.Hour}},
	}
	for i, cfg := range bad {
		if _, err := sim.New(cfg, nil); !errors.Is(err, sim.ErrConfig) {
			t.Errorf("config %d: %v", i, err)
		}
	}
}

// badScheduler binds a job twice to the same GPU.
type badScheduler struct{ *simtest.FIFO }

func (b badScheduler) Schedule(now time.Duration) sim.Decision {
	d := b.FIFO.Schedule(now)
	for i := range d.Bindings {
		d.Bindings[i].Claims = []topology.Claim{{Host: 0, GPUs: []topology.GPUClaim{{GPU: 0}}}}
	}
	return d
}

func TestInvariantViolation(t *testing.T) {
	c := box(t)
	s, _ := sim.New(sim.Config{Cluster: c, Scheduler: badScheduler{simtest.NewFIFO(c)}},
		[]trace.Job{tj("a", 0, time.Hour, 0, gpus(1)), tj("b", 0, time.Hour, 0, gpus(1))})
	if _, err := s.Run(); !errors.Is(err, sim.ErrInvariant) {
		t.Fatalf("double allocation not caught: %v", err)
	}
}

// TestSpeedModel: a 16-GPU gang over two hosts of one ToR runs at
// SameSwitch speed.
func TestSpeedModel(t *testing.T) {
	c := small(t)
	cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Speed: sim.SpeedModel{Enabled: true, SameSwitch: 0.5}}
	r := simtest.Run(t, cfg, []trace.Job{
		tj("one-host", 0, 100*time.Second, 0, gpus(8)),
		tj("two-hosts", 0, 100*time.Second, 0, workload.TaskGroup{Count: 2, GPUs: 8}),
	})
	got := byID(r)
	if got["one-host"].End != 100 || got["two-hosts"].End != 200 {
		t.Errorf("ends %v %v, want 100 and 200", got["one-host"].End, got["two-hosts"].End)
	}
	if l := r.Summary.Locality; l.MultiGPUPlacements != 2 || l.InFabric != 0.5 || l.InSwitch != 1 {
		t.Errorf("locality %+v", l)
	}
}

// TestDeterminism: same inputs and seed, byte-identical summary; another
// seed, a different one.
func TestDeterminism(t *testing.T) {
	out := func(seed uint64) []byte {
		c := small(t)
		r := simtest.Run(t, fullConfig(c, simtest.NewFIFO(c), seed), synthetic(t, 200, 3, c.NumGPUs(), 1.0))
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(r); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, c := out(1), out(1), out(2)
	if !bytes.Equal(a, b) {
		t.Error("two runs with one seed differ")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave identical results; the failure models ignore the seed?")
	}
}

// TestMinCycleInterval: a job arriving 1 s after a cycle waits for the
// next allowed one, 10 s after it.
func TestMinCycleInterval(t *testing.T) {
	c := box(t)
	cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), MinCycleInterval: 10 * time.Second, Audit: true}
	r := simtest.Run(t, cfg, []trace.Job{tj("a", 0, time.Minute, 0, gpus(1)), tj("b", time.Second, time.Minute, 0, gpus(1))})
	got := byID(r)
	if got["a"].Start != 0 || got["b"].Start != 10 {
		t.Errorf("starts %v %v, want 0 and 10", got["a"].Start, got["b"].Start)
	}
}

// TestStrandedByLevel: two 6-GPU jobs leave 2 GPUs free on each of two
// hosts while a 4-GPU task waits: those 4 free GPUs are stranded at every
// level (a task needs 4 free on one host), as the host-level heuristic
// says too.
func TestStrandedByLevel(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 2, HostsPerToR: 2})
	cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), StrandedByLevel: true, SampleEvery: time.Minute}
	r := simtest.Run(t, cfg, []trace.Job{
		tj("a", 0, time.Hour, 0, gpus(6)),
		tj("b", 0, time.Hour, 0, gpus(6)),
		tj("c", 0, time.Hour, 0, gpus(4)),
	})
	f := r.Summary.Fragmentation
	// Mostly 4 stranded; the sample at the hour, after a and b end and
	// before c starts, sees more free GPUs, all usable.
	if len(f.Levels) != 4 || f.MeanUnusableGPUs < 3.5 || f.MeanUnusableGPUs > 4 {
		t.Fatalf("%+v", f)
	}
	for _, l := range f.Levels {
		if l.MeanStrandedGPUs != f.MeanUnusableGPUs {
			t.Errorf("level %s: %v stranded, the host heuristic %v", l.Level, l.MeanStrandedGPUs, f.MeanUnusableGPUs)
		}
	}
}

func TestEmptyTraceAndRunTwice(t *testing.T) {
	c := box(t)
	s, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run()
	if err != nil || r.Summary.Jobs.Total != 0 || r.Summary.Makespan != 0 || r.Summary.AllocationRate != 0 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := s.Run(); err == nil {
		t.Error("second Run accepted")
	}
}

// TestOutage: a scheduled ToR outage stops the gang under it; the gang
// restarts on the other ToR at once and, without checkpoints, runs its
// whole hour again.
func TestOutage(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2})
	cfg := sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Audit: true,
		Outages: []sim.Outage{{Level: "tor", Name: "tor1", At: 10 * time.Minute, For: 30 * time.Minute}}}
	r := simtest.Run(t, cfg, []trace.Job{tj("gang", 0, time.Hour, 0, workload.TaskGroup{Count: 2, GPUs: 8})})
	g := byID(r)["gang"]
	if g.End != 4200 || g.FaultStops != 1 || r.Summary.Preemption.Faults != 1 {
		t.Fatalf("gang %+v, %+v", g, r.Summary.Preemption)
	}
	// 16 GPUs down for 30 minutes; 16 GPUs × 10 minutes of work lost.
	if r.Summary.GPUTime.Failed != 16*1800 || r.Summary.GPUTime.LostFailure != 16*600 {
		t.Errorf("gpu time %+v", r.Summary.GPUTime)
	}
	for _, bad := range []sim.Outage{{Level: "tor", Name: "nope", For: time.Hour}, {Level: "rack", For: time.Hour}, {Level: "host"}, {Level: "gpu", Name: "x/gpu9", For: 1}} {
		if _, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Outages: []sim.Outage{bad}}, nil); !errors.Is(err, sim.ErrConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	// Weekly random host outages keep firing while work remains.
	cfg = sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Seed: 2, Audit: true,
		Outages: []sim.Outage{{Level: "host", Every: 24 * time.Hour, At: time.Hour, For: time.Hour}}}
	r = simtest.Run(t, cfg, []trace.Job{tj("long", 0, 100*time.Hour, 0, gpus(1))})
	// One outage at 1 h, 25 h, 49 h, … while the job is not done (a hit
	// restarts it from scratch, so it may take more than 100 h).
	want := 0
	for at := 3600.0; at < byID(r)["long"].End; at += 24 * 3600 {
		want++
	}
	if f := r.Summary.Preemption.Faults; f != want || want < 5 {
		t.Errorf("%d outages, want %d", f, want)
	}
}
