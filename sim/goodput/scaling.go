package goodput

import (
	"math"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// Scaling is a Model as the simulator's throughput model
// (sim.Config.Scaling): a job's speed on k GPUs placed as p is its
// Model throughput there over its throughput at the size its trace
// duration was recorded at — the GPUs the trace job asks for, packed onto
// as few of the cluster's largest hosts as possible, under one switch.
type Scaling struct {
	m        *Model
	hostGPUs int
	jobs     map[string]ref
}

// ref is what Scaling keeps of a trace job.
type ref struct {
	typ  string
	gpus int
	tput float64 // its throughput at its recorded size
}

// NewScaling returns m as the throughput model of jobs (their Type and
// the GPUs they ask for, before any elastic rewrite) on c. m must be
// valid (Model.Validate).
func NewScaling(m *Model, c *topology.Cluster, jobs []trace.Job) *Scaling {
	s := &Scaling{m: m, hostGPUs: maxHostGPUs(c), jobs: make(map[string]ref, len(jobs))}
	for i := range jobs {
		g := requested(&jobs[i])
		s.jobs[jobs[i].Spec.ID] = ref{typ: jobs[i].Type, gpus: g, tput: m.Throughput(jobs[i].Type, g, Packed(g, s.hostGPUs))}
	}
	return s
}

// requested is the whole GPUs a trace job asks for, at least 1.
func requested(j *trace.Job) int {
	return max(1, int(math.Round(float64(j.Spec.Demand().GPUMilli)/topology.MilliPerGPU)))
}

// maxHostGPUs is the most GPUs one host of c has (at least 1).
func maxHostGPUs(c *topology.Cluster) int {
	n := 1
	for h := range c.NumHosts() {
		_, k := c.HostGPUs(topology.HostID(h))
		n = max(n, k)
	}
	return n
}

// Factor returns job id's speed on gpus GPUs at level (sim.Scaling); 1
// for a job it was not built with.
func (s *Scaling) Factor(id string, gpus int, level topology.Level) float64 {
	r, ok := s.jobs[id]
	if !ok {
		return 1
	}
	return s.m.Throughput(r.typ, gpus, PlacementAt(level)) / r.tput
}
