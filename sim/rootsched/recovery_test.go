package rootsched_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// recorder wraps the adapted Scheduler and records what the simulator
// does not report: the Scheduler's own figure of the work each recovery
// loses, and the progress a job had kept when it (re)started.
type recorder struct {
	*rootsched.Scheduler
	lost    map[sim.RecoveryAction]float64 // GPU-seconds
	gpus    map[sim.RecoveryAction]float64 // of the jobs recovered
	count   map[sim.RecoveryAction]int
	started map[string]time.Duration // last start
	saved   map[string]time.Duration // progress kept at the last start
}

func newRecorder(s *rootsched.Scheduler) *recorder {
	return &recorder{Scheduler: s, lost: map[sim.RecoveryAction]float64{}, gpus: map[sim.RecoveryAction]float64{}, count: map[sim.RecoveryAction]int{},
		started: map[string]time.Duration{}, saved: map[string]time.Duration{}}
}

func (r *recorder) Schedule(now time.Duration) sim.Decision {
	d := r.Scheduler.Schedule(now)
	for _, x := range d.Recoveries {
		r.lost[x.Action] += x.Lost
		r.count[x.Action]++
		st, _ := r.S.Job(x.Job)
		r.gpus[x.Action] += float64(st.Spec.Demand().GPUMilli) / 1000
	}
	return d
}

func (r *recorder) Started(now time.Duration, id string) error {
	_, saved, _ := r.S.Progress(id)
	r.started[id], r.saved[id] = now, saved
	return r.Scheduler.Started(now, id)
}

// faultyRun replays a loaded synthetic trace with a fifth of high-priority
// jobs on 128 GPUs in two queues (a guaranteed 96 GPUs, b 32, each free to
// borrow) through the root Scheduler with preemption (priority within a
// queue, reclaim across), random GPU, host and ToR failures, a ToR outage
// every 6 hours, maintenance drains, checkpoints and the speed model, a
// job ended once a second failure stops it, with the simulator's audit
// after every event.
func faultyRun(t testing.TB, seed uint64) (*sim.Result, *recorder) {
	t.Helper()
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 16, HostsPerToR: 4, ToRsPerSpine: 2})
	syn := trace.Synthetic{Seed: 4, Jobs: 400, Queues: []trace.Weighted[string]{{Value: "a", Weight: 2}, {Value: "b", Weight: 1}},
		MedianDuration: 20 * time.Minute, MaxDuration: 8 * time.Hour, Priorities: trace.HighPriority(0.2, 10)}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 1.3)
	jobs := simtest.Jobs(t, syn)
	pp, err := gpusched.NewPlanPreemptor(preempt.Config{Grace: 3 * time.Minute}, 0)
	if err != nil {
		t.Fatal(err)
	}
	vcs := []trace.VC{{Name: "a", GPUs: 96}, {Name: "b", GPUs: 32}}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Seed: seed, Preemptor: pp, MaxRestarts: 1, DrainGrace: 5 * time.Minute,
		Queues: rootsched.VCQueues(vcs, nil, queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(s)
	res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: rec, Seed: seed, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Minute, Overhead: time.Minute, RestartCost: 2 * time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 200 * time.Hour, HostMTBF: 400 * time.Hour, ToRMTBF: 1000 * time.Hour, RepairTime: 30 * time.Minute},
		Outages:    []sim.Outage{{Level: "tor", At: 2 * time.Hour, Every: 6 * time.Hour, For: 30 * time.Minute}},
		Drain:      sim.DrainModel{MeanInterval: 4 * time.Hour, Duration: time.Hour},
		Speed:      sim.SpeedModel{Enabled: true},
		Tenants:    rootsched.VCTenants(vcs),
	}, jobs)
	return res, rec
}

// TestRootPreemptionAndFaults runs priorities, failures and preemption
// through the real Scheduler: every job ends in exactly one terminal
// state, GPU time adds up, the recovery counts are the Scheduler's, the
// GPU-hours lost to failures are what its recoveries said they would
// lose, and jobs ended by failures say why.
func TestRootPreemptionAndFaults(t *testing.T) {
	r, rec := faultyRun(t, 7)
	s := r.Summary
	j := s.Jobs
	if j.Total != 400 || j.Completed+j.Rejected+j.Failed+j.Unfinished+j.NotArrived != 400 {
		t.Errorf("jobs %+v do not add up", j)
	}
	states := map[sim.JobState]int{}
	for _, rec := range r.Jobs {
		states[rec.State]++
		if rec.State == sim.StateFailed && !strings.Contains(rec.EndReason, "more than the 1 allowed") {
			t.Errorf("job %s failed with reason %q", rec.ID, rec.EndReason)
		}
	}
	if states[sim.StateCompleted] != j.Completed || states[sim.StateFailed] != j.Failed || len(r.Jobs) != 400 {
		t.Errorf("records %v, summary %+v", states, j)
	}
	g := s.GPUTime
	if math.Abs(g.Used+g.Idle+g.Failed-g.Capacity) > 1e-9*g.Capacity || g.Idle < 0 || g.Overhead < 0 {
		t.Errorf("GPU time %+v does not add up", g)
	}
	p := s.Preemption
	want := sim.RecoveryCounts{Requeue: rec.count[sim.RecoverRequeue], Drain: rec.count[sim.RecoverDrain], Keep: rec.count[sim.RecoverKeep], End: rec.count[sim.RecoverEnd]}
	if p.Recoveries != want {
		t.Errorf("recoveries %+v, the Scheduler decided %+v", p.Recoveries, want)
	}
	if p.Preemptions == 0 || want.Requeue == 0 || want.Drain == 0 || want.End == 0 || j.Failed != want.End {
		t.Errorf("not every path ran: %+v, %d failed", p, j.Failed)
	}
	// A requeued or ended job stops at the failure; a drained job hit by
	// a failure during its grace stops too, without a recovery of its own.
	if p.FaultStops < want.Requeue+want.End || p.DrainStops > want.Drain {
		t.Errorf("stops %+v, recoveries %+v", p, want)
	}
	// The simulator's lost GPU time of failures is the Scheduler's (which
	// counts whole seconds), plus the runs of drained jobs a failure
	// stopped in their grace period.
	schedLost := rec.lost[sim.RecoverRequeue] + rec.lost[sim.RecoverEnd]
	if g.LostFailure < schedLost || schedLost == 0 {
		t.Errorf("lost to failures %v GPU-s, the Scheduler's recoveries %v", g.LostFailure, schedLost)
	}
	if math.Abs(p.GPUHoursLostFailure*3600-g.LostFailure) > 1e-6*g.LostFailure {
		t.Errorf("GPU-hours lost %v vs %v GPU-s", p.GPUHoursLostFailure, g.LostFailure)
	}
	// High-priority jobs are preempted only to reclaim borrowed quota.
	if len(s.Priorities) != 2 || s.Priorities[0].Priority != 10 || s.Priorities[1].Preemptions <= s.Priorities[0].Preemptions {
		t.Errorf("per priority %+v", s.Priorities)
	}
	t.Logf("jobs %+v\npreemption %+v\nGPU time %+v\nwait by priority: %v %v", j, p, g, s.Priorities[0].Wait, s.Priorities[1].Wait)
}

// TestRootLostEqualsSchedulers: without drains (whose grace periods let a
// failure stop a job the Scheduler is already draining), the GPU time the
// simulator counts lost to failures is what the Scheduler's recoveries
// said, to its rounding (whole seconds per job).
func TestRootLostEqualsSchedulers(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4})
	jobs := synthetic(t, 200, c.NumGPUs(), 1.0)
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues(rootsched.Tenants(jobs), queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(s)
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: rec, Seed: 3, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 20 * time.Minute, Overhead: 30 * time.Second, RestartCost: time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 200 * time.Hour, HostMTBF: 400 * time.Hour, ToRMTBF: 800 * time.Hour}}, jobs)
	n := rec.count[sim.RecoverRequeue]
	lost := rec.lost[sim.RecoverRequeue]
	if d := r.Summary.GPUTime.LostFailure - lost; n == 0 || r.Summary.Preemption.FaultStops != n || d < 0 || d > rec.gpus[sim.RecoverRequeue] {
		t.Errorf("%d requeues losing %v GPU-s by the Scheduler; the simulator: %d fault stops, %v GPU-s", n, lost, r.Summary.Preemption.FaultStops, r.Summary.GPUTime.LostFailure)
	}
}

// TestRootProgressAgrees: with checkpoints that cost nothing (no pause,
// no reload, full speed) the running time the Scheduler says a job's
// checkpoints saved is exactly the work the simulator kept: each job's
// last run is its duration less the progress the Scheduler reported when
// it started. (The audit also compares the two after every stop, with
// any checkpoint model.)
func TestRootProgressAgrees(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4})
	syn := trace.Synthetic{Seed: 5, Jobs: 300, MedianDuration: 40 * time.Minute, MaxDuration: 6 * time.Hour, Priorities: trace.HighPriority(0.3, 5)}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 1.4)
	jobs := simtest.Jobs(t, syn)
	pp, err := gpusched.NewPlanPreemptor(preempt.Config{Grace: time.Minute}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Preemptor: pp, Queues: rootsched.FlatQueues([]string{"default"}, queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(s)
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: rec, Seed: 9, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 300 * time.Hour, HostMTBF: 600 * time.Hour}}, jobs)
	restarted := 0
	for _, j := range r.Jobs {
		if j.State != sim.StateCompleted {
			t.Fatalf("job %s: %s", j.ID, j.State)
		}
		saved := rec.saved[j.ID]
		if saved > 0 {
			restarted++
		}
		last := j.End - rec.started[j.ID].Seconds()
		if math.Abs(last-(j.Duration-saved.Seconds())) > 1e-6 {
			t.Errorf("job %s: last run %v s; duration %v s less the %v the Scheduler kept is %v", j.ID, last, j.Duration, saved, j.Duration-saved.Seconds())
		}
	}
	p := r.Summary.Preemption
	if restarted < 10 || p.Preemptions == 0 || p.FaultStops == 0 {
		t.Errorf("%d jobs restarted with progress; %+v", restarted, p)
	}
}

// TestRootPreemptionFaultsDeterminism: with preemption and faults on, one
// seed gives byte-identical summary.json; another seed a different one.
func TestRootPreemptionFaultsDeterminism(t *testing.T) {
	enc := func(seed uint64) []byte {
		r, _ := faultyRun(t, seed)
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r.Summary); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, c := enc(11), enc(11), enc(12)
	if !bytes.Equal(a, b) {
		t.Error("two runs with one seed give different summary.json")
	}
	if bytes.Equal(a, c) {
		t.Error("two seeds give the same summary.json")
	}
}

func TestPreemptorModes(t *testing.T) {
	for _, m := range rootsched.PreemptModes {
		p, err := rootsched.Preemptor(m, time.Minute, 0)
		if err != nil || (p == nil) != (m == "off") {
			t.Errorf("%s: %v %v", m, p, err)
		}
	}
	if _, err := rootsched.Preemptor("sometimes", 0, 0); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := rootsched.Preemptor("queue", 0, -1); err == nil {
		t.Error("negative plans per cycle accepted")
	}
}
