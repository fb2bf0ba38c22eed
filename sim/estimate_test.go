package sim_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/workload"
)

// estimates records the runtime estimates the Scheduler is given.
type estimates struct {
	*simtest.FIFO
	got map[string]time.Duration
}

func (e *estimates) Submit(now time.Duration, j workload.Job) error {
	e.got[j.ID] = j.Runtime
	return e.FIFO.Submit(now, j)
}

func runEstimates(t *testing.T, factor float64, ee sim.EstimateError, jobs []trace.Job) map[string]time.Duration {
	t.Helper()
	c := box(t)
	s := &estimates{FIFO: simtest.NewFIFO(c), got: map[string]time.Duration{}}
	simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, RuntimeEstimate: factor, EstimateError: ee, Seed: 1}, jobs)
	return s.got
}

// TestEstimateError: estimates are the duration × the factor, rounded up
// to the listed round values (past the last, unrounded); a log-normal σ
// scatters them around that median, the same way for the same seed.
func TestEstimateError(t *testing.T) {
	jobs := []trace.Job{tj("a", 0, 30*time.Minute, 0, gpus(1)), tj("b", 0, 90*time.Minute, 0, gpus(1)), tj("c", 0, 3*time.Hour, 0, gpus(1))}
	// ×2: 1h, 3h, 6h → rounded up to 1h, 4h, and 6h (past 4h).
	got := runEstimates(t, 2, sim.EstimateError{RoundUp: []time.Duration{time.Hour, 4 * time.Hour}}, jobs)
	if got["a"] != time.Hour || got["b"] != 4*time.Hour || got["c"] != 6*time.Hour {
		t.Errorf("rounded estimates %v", got)
	}
	var many []trace.Job
	for i := range 401 {
		many = append(many, tj(string(rune('A'+i%26))+string(rune('a'+i/26)), time.Duration(i)*time.Second, time.Hour, 0, gpus(1)))
	}
	noisy := runEstimates(t, 1, sim.EstimateError{Sigma: 1}, many)
	again := runEstimates(t, 1, sim.EstimateError{Sigma: 1}, many)
	var logs []float64
	for id, e := range noisy {
		if again[id] != e {
			t.Fatalf("estimate of %s differs between runs: %v, %v", id, e, again[id])
		}
		logs = append(logs, math.Log(e.Hours()))
	}
	slices.Sort(logs)
	// The median of 401 log-normal factors of σ = 1 is within ±0.2 of 0
	// (its standard error is about 1.25/√401 ≈ 0.06).
	if med := logs[200]; math.Abs(med) > 0.2 {
		t.Errorf("median log factor %.3f, want about 0", med)
	}
	if spread := logs[300] - logs[100]; spread < 1 || spread > 1.7 {
		t.Errorf("interquartile spread of log factors %.2f, want about 1.35 (σ = 1)", spread)
	}
	if _, err := sim.New(sim.Config{Cluster: box(t), Scheduler: simtest.NewFIFO(box(t)), EstimateError: sim.EstimateError{RoundUp: []time.Duration{time.Hour, time.Hour}}}, nil); err == nil {
		t.Error("RoundUp not ascending: no error")
	}
}
