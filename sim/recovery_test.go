package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestRecoveryEnd: a job stopped by failures more often than the
// Scheduler allows ends as failed, with the Scheduler's reason; the
// recovery comes at the time of the failure even with cycles batched by
// MinCycleInterval.
func TestRecoveryEnd(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 2, HostsPerToR: 2})
	f := simtest.NewFIFO(c)
	f.MaxRestarts = 1
	cfg := sim.Config{Cluster: c, Scheduler: f, Audit: true, MinCycleInterval: time.Hour,
		Outages: []sim.Outage{
			{Level: "host", Name: "dgx-h100-1", At: 10 * time.Minute, For: 3 * time.Hour},
			{Level: "host", Name: "dgx-h100-2", At: 80 * time.Minute, For: time.Hour},
		}}
	r := simtest.Run(t, cfg, []trace.Job{tj("a", 0, 2*time.Hour, 0, gpus(8))})
	a := byID(r)["a"]
	// a runs on host 1 from 0; host 1 fails at 10 min: requeued in a
	// cycle at once (not at the next the interval allows), it restarts
	// on host 2 in the next allowed cycle, at 70 min; host 2 fails at
	// 80 min: a second failure, more than MaxRestarts 1: it ends.
	if a.State != sim.StateFailed || a.End != 4800 || a.FaultStops != 2 || !strings.Contains(a.EndReason, "stopped by failures 2 times") {
		t.Fatalf("job %+v", a)
	}
	s := r.Summary
	if s.Jobs.Failed != 1 || s.Preemption.Recoveries != (sim.RecoveryCounts{Requeue: 1, End: 1}) {
		t.Errorf("summary %+v %+v", s.Jobs, s.Preemption)
	}
	// No checkpoints: both runs are lost, 8 GPUs × (10 + 10) min.
	if s.GPUTime.LostFailure != 8*1200 {
		t.Errorf("lost %v", s.GPUTime.LostFailure)
	}
	checkConservation(t, r, 1)
}

// TestRecoveryDrain: a job on a drained host checkpoints in the drain's
// grace period, stops and runs on elsewhere with its work.
func TestRecoveryDrain(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 2, HostsPerToR: 2})
	f := simtest.NewFIFO(c)
	f.DrainGrace = 2 * time.Minute
	cfg := sim.Config{Cluster: c, Scheduler: f, Audit: true, Seed: 1,
		Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute, Overhead: time.Minute},
		Drain:      sim.DrainModel{MeanInterval: 20 * time.Minute, Duration: 10 * time.Hour}}
	r := simtest.Run(t, cfg, []trace.Job{tj("a", 0, time.Hour, 0, gpus(8)), tj("b", 0, time.Hour, 0, gpus(8))})
	s := r.Summary
	if s.Preemption.Drains == 0 || s.Preemption.DrainStops == 0 || s.Preemption.Recoveries.Drain != s.Preemption.DrainStops {
		t.Fatalf("%+v", s.Preemption)
	}
	// The final checkpoint of the grace period keeps every minute of
	// work: nothing is lost to the drain, only time.
	if s.GPUTime.LostDrain != 0 || s.Jobs.Completed != 2 {
		t.Errorf("lost %v, jobs %+v", s.GPUTime.LostDrain, s.Jobs)
	}
	checkConservation(t, r, 2)
}

// ignoring is a Scheduler that never recovers anything.
type ignoring struct{ *simtest.FIFO }

func (x ignoring) Schedule(now time.Duration) sim.Decision {
	d := x.FIFO.Schedule(now)
	d.Recoveries = nil
	return d
}

// TestRecoveryMissing: the simulator does not stop jobs on a failure by
// itself; a Scheduler that leaves a job on a failed GPU breaks an
// invariant.
func TestRecoveryMissing(t *testing.T) {
	c := box(t)
	cfg := sim.Config{Cluster: c, Scheduler: ignoring{simtest.NewFIFO(c)},
		Outages: []sim.Outage{{Level: "gpu", Name: "dgx-h100-1/gpu0", At: time.Minute, For: time.Hour}}}
	s, err := sim.New(cfg, []trace.Job{tj("a", 0, time.Hour, 0, gpus(8))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); !errors.Is(err, sim.ErrInvariant) || !strings.Contains(err.Error(), "no recovery") {
		t.Fatalf("got %v", err)
	}
}

// TestCheckpointsReported: the Scheduler hears of every checkpoint as it
// completes, and the specs it gets carry no interval.
func TestCheckpointsReported(t *testing.T) {
	c := box(t)
	ck := &checkpoints{FIFO: simtest.NewFIFO(c)}
	cfg := sim.Config{Cluster: c, Scheduler: ck,
		Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute, Overhead: time.Minute, RestartCost: 2 * time.Minute}}
	j := tj("a", 0, 35*time.Minute, 0, gpus(8))
	j.Spec.CheckpointInterval = 15 * time.Minute // the spec's interval wins over the model's
	simtest.Run(t, cfg, []trace.Job{j})
	// 15 min of work + 1 min pause (a first run has nothing to reload):
	// checkpoints complete at 16 and 32 min; the job ends at 37 min.
	want := []time.Duration{16 * time.Minute, 32 * time.Minute}
	if len(ck.at) != len(want) || ck.at[0] != want[0] || ck.at[1] != want[1] || ck.interval != 0 {
		t.Errorf("checkpoints at %v, spec interval %v", ck.at, ck.interval)
	}
}

type checkpoints struct {
	*simtest.FIFO
	at       []time.Duration
	interval time.Duration
}

func (c *checkpoints) Submit(now time.Duration, j workload.Job) error {
	c.interval = j.CheckpointInterval
	return c.FIFO.Submit(now, j)
}

func (c *checkpoints) Checkpointed(now time.Duration, id string, at time.Duration) error {
	c.at = append(c.at, at)
	return c.FIFO.Checkpointed(now, id, at)
}
