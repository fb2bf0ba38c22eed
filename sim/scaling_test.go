package sim_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// scalingFunc is a sim.Scaling from a function.
type scalingFunc func(id string, gpus int, l topology.Level) float64

func (f scalingFunc) Factor(id string, gpus int, l topology.Level) float64 { return f(id, gpus, l) }

// TestScalingDrivesSpeed: a job runs at its Scaling factor for the GPUs
// it holds and their spread. Two 1-hour 16-GPU jobs on two 8-GPU hosts,
// one after the other, at a factor of 16 GPUs across hosts of 0.5: 2 h
// each; an 8-GPU job on one host at 1: 1 h.
func TestScalingDrivesSpeed(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 2, HostsPerToR: 2})
	var seen []int
	f := scalingFunc(func(_ string, gpus int, l topology.Level) float64 {
		seen = append(seen, gpus)
		if l > topology.LevelHost {
			return 0.5
		}
		return 1
	})
	jobs := []trace.Job{tj("wide", 0, time.Hour, 0, workload.TaskGroup{Count: 2, GPUs: 8}),
		tj("host", 0, time.Hour, 0, workload.TaskGroup{Count: 1, GPUs: 8})}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Scaling: f, Audit: true}, jobs)
	if runs := runTimes(r); !slices.Equal(runs, []float64{3600, 7200}) {
		t.Errorf("run times %v, want 1 h and 2 h", runs)
	}
	if slices.Sort(seen); !slices.Equal(seen, []int{8, 16}) {
		t.Errorf("Factor saw %v GPUs; want 8 and 16", seen)
	}
}

// TestScalingErrors: a Scaling beside the Speed model is refused, and a
// factor that is not a positive finite speed stops the run.
func TestScalingErrors(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 1})
	one := scalingFunc(func(string, int, topology.Level) float64 { return 1 })
	jobs := []trace.Job{tj("a", 0, time.Hour, 0, workload.TaskGroup{Count: 1, GPUs: 2})}
	if _, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Scaling: one, Speed: sim.SpeedModel{Enabled: true}}, jobs); err == nil || !strings.Contains(err.Error(), "Speed.Enabled") {
		t.Errorf("Scaling with Speed: %v", err)
	}
	zero := scalingFunc(func(string, int, topology.Level) float64 { return 0 })
	s, err := sim.New(sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Scaling: zero}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); !errors.Is(err, sim.ErrInvariant) || !strings.Contains(err.Error(), "Scaling.Factor") {
		t.Errorf("zero factor: %v", err)
	}
}

// runTimes returns the jobs' run times (end − start), sorted.
func runTimes(r *sim.Result) []float64 {
	var runs []float64
	for _, j := range r.Jobs {
		runs = append(runs, j.End-j.Start)
	}
	slices.Sort(runs)
	return runs
}
