package rootsched_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

func synthetic(t testing.TB, n int, gpus int, load float64) []trace.Job {
	syn := trace.Synthetic{Seed: 4, Jobs: n, Queues: []trace.Weighted[string]{{Value: "a", Weight: 2}, {Value: "b", Weight: 1}},
		MedianDuration: 20 * time.Minute, MaxDuration: 8 * time.Hour}
	syn.MeanInterarrival = syn.InterarrivalFor(gpus, load)
	return simtest.Jobs(t, syn)
}

func simulate(t testing.TB, policy string, seed uint64, audit bool) *sim.Result {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 16, HostsPerToR: 4, ToRsPerSpine: 2})
	jobs := synthetic(t, 400, c.NumGPUs(), 1.3)
	p, err := rootsched.Placer(c, policy, jobs)
	if err != nil {
		t.Fatal(err)
	}
	vcs := []trace.VC{{Name: "a", GPUs: 96}, {Name: "b", GPUs: 32}}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Placer: p, Seed: seed, MaxRestarts: 5,
		Queues: rootsched.VCQueues(vcs, nil, queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	return simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Seed: seed, Audit: audit,
		Checkpoint: sim.CheckpointModel{Interval: 30 * time.Minute, Overhead: time.Minute, RestartCost: 2 * time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 1000 * time.Hour, HostMTBF: 2000 * time.Hour, ToRMTBF: 4000 * time.Hour, RepairTime: 30 * time.Minute},
		Drain:      sim.DrainModel{MeanInterval: 4 * time.Hour, Duration: time.Hour},
		Speed:      sim.SpeedModel{Enabled: true},
		Tenants:    rootsched.VCTenants(vcs),
	}, jobs)
}

// TestRootConservation drives the real Scheduler with every model on and
// the simulator's audit after each event: each job ends in exactly one
// terminal state and GPU time adds up.
func TestRootConservation(t *testing.T) {
	for _, policy := range []string{"topology", "best-fit", "fgd"} {
		r := simulate(t, policy, 7, true)
		s := r.Summary
		j := s.Jobs
		if j.Total != 400 || j.Completed+j.Rejected+j.Failed+j.Unfinished+j.NotArrived != 400 || j.Completed < 390 {
			t.Errorf("%s: jobs %+v", policy, j)
		}
		g := s.GPUTime
		if math.Abs(g.Used+g.Idle+g.Failed-g.Capacity) > 1e-6*g.Capacity {
			t.Errorf("%s: GPU time %+v does not add up", policy, g)
		}
		if s.Preemption.Faults == 0 || s.Locality.MultiGPUPlacements == 0 {
			t.Errorf("%s: models idle: %+v", policy, s.Preemption)
		}
	}
}

func TestRootDeterminism(t *testing.T) {
	enc := func(r *sim.Result) []byte {
		var b bytes.Buffer
		json.NewEncoder(&b).Encode(r)
		return b.Bytes()
	}
	if !bytes.Equal(enc(simulate(t, "topology", 3, false)), enc(simulate(t, "topology", 3, false))) {
		t.Fatal("two runs of one seed differ")
	}
}

func TestVCQueues(t *testing.T) {
	cfg := rootsched.VCQueues([]trace.VC{{Name: "x", GPUs: 16}}, []string{"x", "y"}, queue.Policy{})
	if len(cfg.Root.Children) != 2 || cfg.Root.Children[0].Quotas[0].Nominal != 16 || cfg.Root.Children[1].Name != "y" {
		t.Fatalf("%+v", cfg)
	}
	if got := rootsched.Tenants([]trace.Job{{}, {Spec: trace.Job{}.Spec}}); len(got) != 1 || got[0] != "default" {
		t.Errorf("tenants %v", got)
	}
}

// TestPhillySample replays the first rows of the real Philly trace with
// one queue per VC, when the shared data is there.
func TestPhillySample(t *testing.T) {
	f, err := os.Open("../../../shared/data/philly/philly.csv")
	if err != nil {
		t.Skip("../shared/data/philly not present: ", err)
	}
	defer f.Close()
	r, _ := trace.NewPhillyCSV(f, trace.Options{})
	var jobs []trace.Job
	for len(jobs) < 2000 {
		j, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	vf, _ := os.Open("../../../shared/data/philly/philly_vc.csv")
	defer vf.Close()
	vcs, err := trace.ReadVCs(vf, 8, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := simtest.Cluster(t, sim.PhillyCluster)
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.VCQueues(vcs, rootsched.Tenants(jobs), queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Tenants: rootsched.VCTenants(vcs), Audit: testing.Short()}, jobs)
	if res.Summary.Jobs.Completed != 2000 {
		t.Errorf("jobs %+v", res.Summary.Jobs)
	}
}
