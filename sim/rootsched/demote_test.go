package rootsched_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// demoted runs jobs on c in one queue under the root Scheduler, with
// priority preemption within the queue and d (nil: FIFO, no demotion).
// Jobs checkpoint every hour (10 s each) and save their progress in
// their 30-second grace period when preempted.
func demoted(t testing.TB, c *topology.Cluster, d queue.Demotion, jobs []trace.Job) *sim.Result {
	t.Helper()
	s := oneQueue(t, c)
	if d != nil {
		s.Demote(d)
	}
	return simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: time.Hour, Overhead: 10 * time.Second}}, jobs)
}

func job8(id string, submit, dur time.Duration) trace.Job {
	return trace.Job{Spec: workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, Submit: submit, Duration: dur}
}

// TestDemoteLAS: on one 8-GPU host, a 10-hour job passes the 4-GPU-hour
// threshold of 2D-LAS after 30 minutes (8 GPUs × 1800 s = 14,400
// GPU-s): a cycle then (Decision.Wake) drops it to priority −1. A short
// job arriving at 1 h (priority 0) preempts it: 30 s of grace, then it
// runs its 30 minutes and completes at 1h30m30s (JCT 1830 s). Under FIFO
// it waits for the long job: JCT over 9 hours.
func TestDemoteLAS(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	jobs := func() []trace.Job {
		return []trace.Job{job8("long", 0, 10*time.Hour), job8("short", time.Hour, 30*time.Minute)}
	}
	las := demoted(t, c, queue.LAS{Thresholds: []float64{14400}}, jobs())
	got := byRecord(las)
	if s := got["short"]; s.State != sim.StateCompleted || s.End-s.Submit != 1830 {
		t.Errorf("LAS: short %+v, want completed with JCT 1830 s", s)
	}
	if l := got["long"]; l.State != sim.StateCompleted || l.Preemptions != 1 {
		t.Errorf("LAS: long %+v, want completed after one preemption", l)
	}
	fifo := byRecord(demoted(t, c, nil, jobs()))
	if s := fifo["short"]; s.End-s.Submit < 9*3600 || fifo["long"].Preemptions != 0 {
		t.Errorf("FIFO: short %+v, long %+v; want short behind long, no preemption", s, fifo["long"])
	}
}

// TestDemoteTimeSlice: two 1-hour 8-GPU jobs on one host with a
// 10-minute lease take turns: b, submitted a second after a, starts when
// a's first lease ends (+30 s grace) instead of after a's whole hour, and
// both complete.
func TestDemoteTimeSlice(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	r := demoted(t, c, queue.TimeSlice{Lease: 10 * time.Minute}, []trace.Job{job8("a", 0, time.Hour), job8("b", time.Second, time.Hour)})
	got := byRecord(r)
	if b := got["b"]; b.Start-b.Submit != 10*60+30-1 {
		t.Errorf("b waited %v s, want 629 (a's lease, then its grace)", b.Start-b.Submit)
	}
	if r.Summary.Jobs.Completed != 2 || r.Summary.Preemption.Preemptions < 4 {
		t.Errorf("jobs %+v, %d preemptions; want both completed after several turns", r.Summary.Jobs, r.Summary.Preemption.Preemptions)
	}
}

// TestTiresiasBeatsFIFO reproduces Tiresias' qualitative result (Gu et
// al., NSDI'19, §6): on heavy-tailed traces (log-normal durations,
// median 20 minutes, σ = 2, up to 2 days) arriving at 1.5 × the
// capacity of 32 GPUs, without knowing any duration, 2D-LAS (thresholds
// 1 and 8 GPU-hours) gives a lower mean JCT than FIFO on every seed, and
// a third lower over the three, because short jobs no longer wait behind
// long ones. Measured: FIFO 8278 / 7755 / 16777 s, 2D-LAS 5952 / 6864 /
// 9008 s.
func TestTiresiasBeatsFIFO(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 4})
	var sumFIFO, sumLAS float64
	for seed := uint64(1); seed <= 3; seed++ {
		syn := trace.Synthetic{Seed: seed, Jobs: 300, MedianDuration: 20 * time.Minute, DurationSigma: 2, MaxDuration: 2 * 24 * time.Hour,
			Sizes: []trace.Weighted[int]{{Value: 1, Weight: 60}, {Value: 2, Weight: 15}, {Value: 4, Weight: 15}, {Value: 8, Weight: 10}}}
		syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 1.5)
		read := func() []trace.Job {
			jobs := simtest.Jobs(t, syn)
			for i := range jobs {
				jobs[i].Spec.Queue = "q"
			}
			return jobs
		}
		fifo := demoted(t, c, nil, read()).Summary
		las := demoted(t, c, queue.LAS{Thresholds: []float64{3600, 8 * 3600}}, read()).Summary
		t.Logf("seed %d: mean JCT FIFO %.0f s, 2D-LAS %.0f s (p50 %.0f vs %.0f; %d preemptions)", seed, fifo.JCT.Mean, las.JCT.Mean, fifo.JCT.P50, las.JCT.P50, las.Preemption.Preemptions)
		if fifo.Jobs.Completed != 300 || las.Jobs.Completed != 300 {
			t.Fatalf("seed %d: completed FIFO %d, LAS %d of 300", seed, fifo.Jobs.Completed, las.Jobs.Completed)
		}
		if !(las.JCT.Mean < fifo.JCT.Mean) {
			t.Errorf("seed %d: 2D-LAS mean JCT %.0f s is not below FIFO's %.0f s", seed, las.JCT.Mean, fifo.JCT.Mean)
		}
		sumFIFO += fifo.JCT.Mean
		sumLAS += las.JCT.Mean
	}
	if !(sumLAS < 0.75*sumFIFO) {
		t.Errorf("2D-LAS mean JCTs add up to %.0f s, not a quarter below FIFO's %.0f s", sumLAS, sumFIFO)
	}
}

func byRecord(r *sim.Result) map[string]sim.JobRecord {
	m := map[string]sim.JobRecord{}
	for _, j := range r.Jobs {
		m[j.ID] = j
	}
	return m
}
