package sim_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
)

// TestSchedulerMetricsGolden works the metrics that measure the
// scheduler rather than the trace through a trace small enough to
// compute by hand, on one 8-GPU host under FIFO:
//
//	a (queue x): 4 GPUs, submitted at 0, runs 1 h: [0, 1h]
//	b (queue y): 8 GPUs, submitted at 30m, waits for a (4 GPUs free),
//	             runs [1h, 2h]
func TestSchedulerMetricsGolden(t *testing.T) {
	c := box(t)
	a := tj("a", 0, time.Hour, 0, gpus(4))
	a.Spec.Queue = "x"
	b := tj("b", 30*time.Minute, time.Hour, 0, gpus(8))
	b.Spec.Queue = "y"
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), FairnessWindow: time.Hour, Audit: true}, []trace.Job{a, b})
	s := r.Summary
	checkConservation(t, r, 2)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		// Whole run: (4 GPU-h + 8 GPU-h) / (8 GPUs × 2 h).
		{"AllocationRate", s.AllocationRate, 0.75},
		// Offered: (4×1h + 8×1h) GPU-h over 8 GPUs × the 30-minute arrival span.
		{"OfferedLoad", s.OfferedLoad, 3},
		// Achieved: over [0, 30m] 4 GPUs allocated, none waiting: 4/8.
		{"AchievedLoad", s.AchievedLoad, 0.5},
		// Busy window: b waits [30m, 1h], 1800 s, with a's 4 GPUs allocated.
		{"BusyTime", s.BusyTime, 1800},
		{"BusyAllocation", s.BusyAllocation, 0.5},
		// a's useful 4 GPU-h, half of its segment busy: 7200 GPU-s / (8 × 1800).
		{"BusyUtilisation", s.BusyUtilisation, 0.5},
		// Window [0, 1h]: x holds 4 and demands 4; y holds 0 and demands
		// 8 × 1800/3600 = 4; fair shares of 8 capped by demand: 4 and 4;
		// ratios 1 and 0: Jain = 1² / (2 × 1) = 0.5. Nobody waits in
		// [1h, 2h]: not counted.
		{"Windows", float64(s.Fairness.Windows), 1},
		{"WindowJain", s.Fairness.WindowJain, 0.5},
		{"WindowJainMin", s.Fairness.WindowJainMin, 0.5},
		{"WindowSeconds", s.Fairness.WindowSeconds, 3600},
		// ρ of b: life 5400 s; jobs in the system: 2 over [30m, 1h], 1
		// over [1h, 2h]: N = 7200/5400 = 4/3; ideal = 3600 × max(1, 8 ×
		// 4/3 / 8) = 4800; ρ = 5400/4800 = 1.125. ρ of a: N = (1800 +
		// 3600)/3600 = 1.5, 4 × 1.5/8 < 1: ideal 3600 = its JCT: 1.
		{"MaxQueueRho", s.Fairness.MaxQueueRho, 1.125},
		{"FinishTimeFairness.Mean", s.FinishTimeFairness.Mean, 1.0625},
		{"FinishTimeFairness.Max", s.FinishTimeFairness.Max, 1.125},
	} {
		if !near(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	got := byID(r)
	if !near(got["a"].Rho, 1) || !near(got["b"].Rho, 1.125) {
		t.Errorf("ρ a %v b %v, want 1 and 1.125", got["a"].Rho, got["b"].Rho)
	}
	for _, q := range s.Queues {
		want := map[string]float64{"x": 1, "y": 1.125}[q.Name]
		if q.Rho.N != 1 || !near(q.Rho.Mean, want) {
			t.Errorf("queue %s ρ %+v, want one job of %v", q.Name, q.Rho, want)
		}
	}
}

// TestFairShares: weighted max-min water-filling capped by demand.
func TestFairShares(t *testing.T) {
	for _, tc := range []struct {
		name           string
		capacity       float64
		demand, weight []float64
		want           []float64
	}{
		// 1 is satisfied; 8 left for two: 4 each.
		{"equal", 9, []float64{1, 4, 10}, []float64{1, 1, 1}, []float64{1, 4, 4}},
		// weights 1:3 of 8: 2 and 6; the first wants only 1, so 7 to the second.
		{"weighted", 8, []float64{1, 10}, []float64{1, 3}, []float64{1, 7}},
		{"weighted-capped", 8, []float64{5, 10}, []float64{1, 3}, []float64{2, 6}},
		// Enough for all: everyone's demand.
		{"uncontended", 100, []float64{1, 2, 3}, []float64{1, 1, 1}, []float64{1, 2, 3}},
		// Zero weight shares what the weighted leave: 10 − 6 = 4.
		{"unweighted", 10, []float64{6, 9, 0}, []float64{2, 0, 1}, []float64{6, 4, 0}},
	} {
		got := sim.FairShares(tc.capacity, tc.demand, tc.weight)
		for i := range got {
			if !near(got[i], tc.want[i]) {
				t.Errorf("%s: shares %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
