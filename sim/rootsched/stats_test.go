package rootsched_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// embedder is a second, independent Scheduler driven beside the one the
// simulation runs, on the same events, the way a production host drives
// one: host reports through the adapter's translations, and Schedule
// called directly, keeping each Decision.Stats as an embedder exporting
// metrics would.
type embedder struct {
	sim   *rootsched.Scheduler // what the simulation runs
	host  *rootsched.Scheduler // the embedder's own Scheduler
	stats []sim.CycleStats
	t     *testing.T
}

func (e *embedder) check(a, b error) error {
	if (a == nil) != (b == nil) {
		e.t.Errorf("the two Schedulers disagree: %v, %v", a, b)
	}
	return a
}

func (e *embedder) Submit(now time.Duration, j workload.Job) error {
	return e.check(e.sim.Submit(now, j), e.host.Submit(now, j))
}

func (e *embedder) Schedule(now time.Duration) sim.Decision {
	d := e.host.S.Schedule(rootsched.Epoch.Add(now))
	if d.Stats == nil {
		e.t.Fatal("the embedder's Decision carries no Stats")
	}
	e.stats = append(e.stats, sim.CycleStats{At: now, Stats: *d.Stats})
	return e.sim.Schedule(now)
}

func (e *embedder) Started(now time.Duration, id string) error {
	return e.check(e.sim.Started(now, id), e.host.Started(now, id))
}

func (e *embedder) Checkpointed(now time.Duration, id string, ckpt time.Duration) error {
	return e.check(e.sim.Checkpointed(now, id, ckpt), e.host.Checkpointed(now, id, ckpt))
}

func (e *embedder) Finished(now time.Duration, id string) error {
	return e.check(e.sim.Finished(now, id), e.host.Finished(now, id))
}

func (e *embedder) Stopped(now time.Duration, id string, c sim.StopCause) error {
	return e.check(e.sim.Stopped(now, id, c), e.host.Stopped(now, id, c))
}

func (e *embedder) Removed(now time.Duration, id string) error {
	return e.check(e.sim.Removed(now, id), e.host.Removed(now, id))
}

func (e *embedder) SetGPUHealth(now time.Duration, g topology.GPUID, h topology.Health) error {
	return e.check(e.sim.SetGPUHealth(now, g, h), e.host.SetGPUHealth(now, g, h))
}

func (e *embedder) SetHostHealth(now time.Duration, h topology.HostID, hh topology.Health) error {
	return e.check(e.sim.SetHostHealth(now, h, hh), e.host.SetHostHealth(now, h, hh))
}

// TestSimulatorExportsTheEmbeddersStats: the simulator exports the
// library's cycle statistics (Result.CycleStats), and they are exactly
// the Decision.Stats an embedder gets from the same Scheduler on the same
// events — pending by queue and reason, queue GPUs, admissions,
// preemptions, stranded GPUs per level — cycle by cycle.
func TestSimulatorExportsTheEmbeddersStats(t *testing.T) {
	sp, err := topology.Generator{Machine: "dgx-h100", Hosts: 4}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	qs := rootsched.VCQueues([]trace.VC{{Name: "a", GPUs: 16}, {Name: "b", GPUs: 16}}, nil, queue.Policy{})
	build := func() *rootsched.Scheduler {
		p, err := rootsched.Preemptor("reclaim", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: qs, Preemptor: p, Stats: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	job := func(id, q string, tasks, gpus int, submit, run time.Duration) trace.Job {
		return trace.Job{Spec: workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: tasks, GPUs: gpus}}},
			Submit: submit, Duration: run}
	}
	jobs := []trace.Job{
		job("a1", "a", 3, 8, 0, 3*time.Hour),              // a borrows 8 of b's GPUs
		job("a2", "a", 1, 6, time.Minute, 2*time.Hour),    // leaves 2 GPUs stranded on a host
		job("b1", "b", 2, 8, 10*time.Minute, time.Hour),   // reclaims: preempts an a job
		job("b2", "b", 1, 4, 20*time.Minute, time.Hour),   // waits for quota or capacity
		job("a3", "a", 1, 3, 30*time.Minute, time.Hour),   // waits
		job("b3", "b", 4, 8, 40*time.Minute, time.Hour/2), // waits for the whole cluster
	}
	e := &embedder{sim: build(), host: build(), t: t}
	sm, err := sim.New(sim.Config{Cluster: c, Scheduler: e, Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute}}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sm.Run()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.stats) == 0 {
		t.Fatal("no cycle")
	}
	if len(res.CycleStats) != len(e.stats) {
		t.Fatalf("the simulator exports %d cycles' statistics, the embedder saw %d cycles", len(res.CycleStats), len(e.stats))
	}
	var preempted, pending, stranded, borrowed bool
	for i, want := range e.stats {
		got := res.CycleStats[i]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("cycle %d at %v: the simulator exports\n%+v\nthe embedder's Decision.Stats\n%+v", i, want.At, got, want)
		}
		st := want.Stats
		preempted = preempted || st.Preemptions > 0
		pending = pending || len(st.PendingBy) > 0
		for _, l := range st.Stranded {
			stranded = stranded || l.GPUs > 0
		}
		for _, q := range st.Queues {
			borrowed = borrowed || q.Borrowed > 0
		}
	}
	if !preempted || !pending || !stranded || !borrowed {
		t.Errorf("the scenario should exercise preemption %v, pending reasons %v, stranded GPUs %v, borrowing %v", preempted, pending, stranded, borrowed)
	}
}
