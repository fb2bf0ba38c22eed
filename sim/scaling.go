package sim

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/topology"
)

// Scaling is a throughput model (Config.Scaling): how fast a job runs on
// a number of GPUs placed at a topology level, relative to the speed at
// which its trace duration was recorded. Package sim/goodput has one
// with Pollux's measured per-model parameters.
type Scaling interface {
	// Factor returns the speed of the trace job id on gpus GPUs whose
	// innermost common topology level is level (-1: a single GPU),
	// relative to the speed its trace duration was recorded at (1: the
	// same; a job at its requested size on the best placement usually
	// runs at 1). It must be positive and finite.
	Factor(id string, gpus int, level topology.Level) float64
}

// jobSpeed is j's speed on its claims: Scaling's factor (when set, for a
// job with GPUs) or the Speed model's placement factor and the linear
// scaling of its size, times its GPU models' factor.
func (s *Simulation) jobSpeed(j *job) float64 {
	if s.cfg.Scaling == nil || j.gpuMilli <= 0 {
		return s.speedFor(j.level) * s.modelSpeed(j.claims, j) * sizeSpeed(j)
	}
	gpus := max(1, int((j.gpuMilli+topology.MilliPerGPU/2)/topology.MilliPerGPU))
	f := s.cfg.Scaling.Factor(j.spec.ID, gpus, j.level)
	if !(f > 0) || math.IsInf(f, 0) {
		s.fail(fmt.Errorf("%w: Scaling.Factor(%s, %d GPUs, level %d) = %g; want a positive finite speed", ErrInvariant, j.spec.ID, gpus, j.level, f))
		f = 1
	}
	return f * s.modelSpeed(j.claims, j)
}
