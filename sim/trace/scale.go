package trace

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// OfferedLoad returns the GPU time jobs ask for as a share of what gpus
// GPUs offer over the span of their arrivals: Σ GPUs × Duration / (gpus ×
// (last Submit − first Submit)). It is 0 for fewer than two distinct
// arrival times. Shares of a GPU count as their fraction.
func OfferedLoad(jobs []Job, gpus int) float64 {
	if len(jobs) == 0 || gpus <= 0 {
		return 0
	}
	lo, hi := jobs[0].Submit, jobs[0].Submit
	var demand float64
	for i := range jobs {
		lo, hi = min(lo, jobs[i].Submit), max(hi, jobs[i].Submit)
		demand += float64(jobs[i].Spec.Demand().GPUMilli) / 1000 * jobs[i].Duration.Seconds()
	}
	span := (hi - lo).Seconds()
	if span <= 0 {
		return 0
	}
	return demand / (float64(gpus) * span)
}

// ScaleArrivals multiplies every job's Submit by f: f < 1 compresses the
// trace in time (the same jobs arrive faster, raising the load), f > 1
// stretches it. Durations are unchanged. f must be positive and finite.
func ScaleArrivals(jobs []Job, f float64) error {
	if !(f > 0) || math.IsInf(f, 0) {
		return errors.New("trace: arrival scale must be positive and finite")
	}
	for i := range jobs {
		jobs[i].Submit = time.Duration(float64(jobs[i].Submit) * f)
	}
	return nil
}

// ScaleToLoad scales arrivals (see ScaleArrivals) so that OfferedLoad on
// gpus GPUs becomes load, and returns the factor used. It fails when the
// trace has no arrival span or no GPU demand.
func ScaleToLoad(jobs []Job, gpus int, load float64) (float64, error) {
	if !(load > 0) || math.IsInf(load, 0) {
		return 0, errors.New("trace: target load must be positive and finite")
	}
	cur := OfferedLoad(jobs, gpus)
	if cur == 0 {
		return 0, errors.New("trace: no arrival span or no GPU demand to scale")
	}
	f := cur / load
	return f, ScaleArrivals(jobs, f)
}

// Replicate returns k copies of jobs, for replaying a trace at k times its
// load: copy 0 is jobs itself; copy c > 0 has IDs suffixed "#c" and every
// arrival shifted by one offset drawn uniformly in [0, span) from seed
// and wrapped around the arrival span, so each copy keeps the original's
// arrival pattern, out of phase with the others. The result is in no
// particular order (see Rebase). k must be at least 1.
func Replicate(jobs []Job, k int, seed uint64) ([]Job, error) {
	if k < 1 {
		return nil, errors.New("trace: replicate: k must be at least 1")
	}
	if len(jobs) == 0 || k == 1 {
		return slices.Clone(jobs), nil
	}
	lo, hi := jobs[0].Submit, jobs[0].Submit
	for i := range jobs {
		lo, hi = min(lo, jobs[i].Submit), max(hi, jobs[i].Submit)
	}
	span := hi - lo + 1
	rng := rand.New(rand.NewPCG(seed, 0x7e91))
	out := make([]Job, 0, len(jobs)*k)
	out = append(out, jobs...)
	for c := 1; c < k; c++ {
		shift := time.Duration(rng.Int64N(int64(span)))
		suffix := "#" + strconv.Itoa(c)
		for _, j := range jobs {
			j.Spec.ID += suffix
			j.Submit = lo + (j.Submit-lo+shift)%span
			out = append(out, j)
		}
	}
	return out, nil
}
