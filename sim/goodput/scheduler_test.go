package goodput_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/goodput"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// jobs is a small synthetic trace of seed, its jobs given Pollux's
// types in turn.
func jobs(t *testing.T, seed uint64, n int) []trace.Job {
	t.Helper()
	r, err := trace.NewSynthetic(trace.Synthetic{Seed: seed, Jobs: n, MeanInterarrival: 3 * time.Minute,
		Sizes:          []trace.Weighted[int]{{Value: 1, Weight: 4}, {Value: 2, Weight: 2}, {Value: 4, Weight: 2}, {Value: 8, Weight: 1}},
		MedianDuration: 40 * time.Minute, DurationSigma: 1})
	if err != nil {
		t.Fatal(err)
	}
	js, err := trace.Collect(r)
	if err != nil {
		t.Fatal(err)
	}
	types := goodput.Pollux().Classes()
	for i := range js {
		js[i].Type = types[i%len(types)]
	}
	return js
}

// checker wraps the Scheduler and checks every Decision against the
// jobs' bounds and the cluster's GPUs.
type checker struct {
	*goodput.Scheduler
	t        *testing.T
	c        *topology.Cluster
	min, max map[string]int
	size     map[string]int // GPUs held, a shrink's until it is done
	shrink   map[string]int
	resizes  int
}

func (k *checker) Submit(now time.Duration, j workload.Job) error {
	k.min[j.ID], k.max[j.ID] = j.Groups[0].Min(), j.Groups[0].Count
	return k.Scheduler.Submit(now, j)
}

func (k *checker) Schedule(now time.Duration) sim.Decision {
	d := k.Scheduler.Schedule(now)
	for _, b := range d.Bindings {
		k.size[b.Job] = len(b.Claims)
		k.bounds(b.Job, len(b.Claims))
	}
	for _, g := range d.Grows {
		k.size[g.Job] += len(g.Claims)
		k.bounds(g.Job, k.size[g.Job])
		k.resizes++
	}
	for _, s := range d.Shrinks {
		k.shrink[s.Job] = len(s.Claims)
		k.bounds(s.Job, k.size[s.Job]-len(s.Claims))
		k.resizes++
	}
	held := 0
	for _, n := range k.size {
		held += n
	}
	if held > k.c.NumGPUs() {
		k.t.Fatalf("at %v: %d GPUs held of %d", now, held, k.c.NumGPUs())
	}
	return d
}

func (k *checker) bounds(id string, n int) {
	if n < k.min[id] || n > k.max[id] {
		k.t.Fatalf("job %s at %d GPUs; its bounds are [%d, %d]", id, n, k.min[id], k.max[id])
	}
}

func (k *checker) Shrunk(now time.Duration, id string) error {
	k.size[id] -= k.shrink[id]
	delete(k.shrink, id)
	return k.Scheduler.Shrunk(now, id)
}

func (k *checker) end(id string) { delete(k.size, id); delete(k.shrink, id) }

func (k *checker) Finished(now time.Duration, id string) error {
	k.end(id)
	return k.Scheduler.Finished(now, id)
}
func (k *checker) Removed(now time.Duration, id string) error {
	k.end(id)
	return k.Scheduler.Removed(now, id)
}
func (k *checker) Stopped(now time.Duration, id string, c sim.StopCause) error {
	k.end(id)
	return k.Scheduler.Stopped(now, id, c)
}

// run replays js (rewritten elastic) on c with the goodput Scheduler
// under the model, the simulator auditing its ledger and accounts.
func run(t *testing.T, c *topology.Cluster, js []trace.Job, seed uint64, faults ...sim.FailureModel) (*sim.Result, *checker) {
	t.Helper()
	m := goodput.Pollux()
	scaling := goodput.NewScaling(m, c, js)
	types := map[string]string{}
	for i := range js {
		types[js[i].Spec.ID] = js[i].Type
	}
	goodput.Elastic(js, 2, c.NumGPUs())
	s, err := goodput.New(goodput.Config{Cluster: c, Model: m, Types: types, Grace: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	k := &checker{Scheduler: s, t: t, c: c, min: map[string]int{}, max: map[string]int{}, size: map[string]int{}, shrink: map[string]int{}}
	cfg := sim.Config{Cluster: c, Scheduler: k, Seed: seed, Scaling: scaling, Audit: true,
		Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute, ResizeCost: 30 * time.Second}}
	for _, f := range faults {
		cfg.Failures = f
	}
	sm, err := sim.New(cfg, js)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sm.Run()
	if err != nil {
		t.Fatal(err)
	}
	return res, k
}

// TestSchedulerRespectsBounds: over a replay with faults-free contention
// the Scheduler never holds more GPUs than exist nor sizes a job outside
// its bounds (checker), every job completes, and it does resize.
func TestSchedulerRespectsBounds(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 4, HostsPerToR: 2})
	res, k := run(t, c, jobs(t, 1, 60), 1)
	if got := res.Summary.Jobs.Completed; got != 60 {
		t.Errorf("%d of 60 jobs completed", got)
	}
	if k.resizes == 0 {
		t.Error("no job was resized")
	}
}

// TestSchedulerFaults: with hosts and GPUs failing, the jobs hit are
// requeued and every job still completes within its bounds.
func TestSchedulerFaults(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 4, HostsPerToR: 2})
	res, _ := run(t, c, jobs(t, 3, 60), 3, sim.FailureModel{HostMTBF: 10 * time.Hour, GPUMTBF: 50 * time.Hour})
	if res.Summary.Jobs.Completed != 60 || res.Summary.Preemption.FaultStops == 0 {
		t.Errorf("%d of 60 completed, %d fault stops: want all, and some stops", res.Summary.Jobs.Completed, res.Summary.Preemption.FaultStops)
	}
}

// TestSchedulerDeterministic: the same trace and seed give the same
// summary.
func TestSchedulerDeterministic(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 2})
	a, _ := run(t, c, jobs(t, 7, 30), 7)
	b, _ := run(t, c, jobs(t, 7, 30), 7)
	ja, _ := json.Marshal(a.Summary)
	jb, _ := json.Marshal(b.Summary)
	if string(ja) != string(jb) {
		t.Errorf("two runs differ:\n%s\n%s", ja, jb)
	}
}

// TestSchedulerRefuses: jobs it cannot resize by the GPU are refused at
// Submit, with the job named.
func TestSchedulerRefuses(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 1})
	s, err := goodput.New(goodput.Config{Cluster: c, Model: goodput.Pollux()})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []workload.Job{
		{ID: "two-groups", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}, {Count: 1, GPUs: 1}}},
		{ID: "share", Groups: []workload.TaskGroup{{Count: 1, GPUMilli: 500}}},
		{ID: "big", Groups: []workload.TaskGroup{{Count: 9, GPUs: 1}}},
		{ID: "model", Groups: []workload.TaskGroup{{Count: 2, GPUs: 1, Models: []string{"x"}}}},
	} {
		if err := s.Submit(0, j); err == nil {
			t.Errorf("%s: accepted", j.ID)
		}
	}
	if _, err := goodput.New(goodput.Config{Cluster: c}); err == nil {
		t.Error("New without a model: no error")
	}
}
