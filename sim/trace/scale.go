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

// ScaleToLoadPerQueue scales each queue's arrivals on its own, so that
// the jobs of queue q offer load on capacity[q] GPUs (OfferedLoad over
// the queue's own arrival span): each virtual cluster of a partitioned
// cluster at the same load on its partition, where one factor for the
// whole trace would leave some far above their capacity and others idle.
// Arrivals are scaled from the trace's first arrival. Jobs of queues
// without a capacity keep their times. It returns each scaled queue's
// factor, and fails for a queue with jobs but no arrival span or demand.
func ScaleToLoadPerQueue(jobs []Job, capacity map[string]int, load float64) (map[string]float64, error) {
	if !(load > 0) || math.IsInf(load, 0) {
		return nil, errors.New("trace: target load must be positive and finite")
	}
	loads := make(map[string]float64, len(capacity))
	for q := range capacity {
		loads[q] = load
	}
	return ScaleToLoadEachQueue(jobs, capacity, loads)
}

// ScaleToLoadEachQueue is ScaleToLoadPerQueue with a load of its own for
// each queue: the jobs of queue q offer loads[q] on capacity[q] GPUs.
// Jobs of queues without a load or a capacity keep their times.
func ScaleToLoadEachQueue(jobs []Job, capacity map[string]int, loads map[string]float64) (map[string]float64, error) {
	for q, l := range loads {
		if !(l > 0) || math.IsInf(l, 0) {
			return nil, errors.New("trace: queue " + q + ": target load must be positive and finite")
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	lo := jobs[0].Submit
	groups := map[string][]int{}
	var names []string
	for i := range jobs {
		lo = min(lo, jobs[i].Submit)
		q := jobs[i].Spec.Queue
		if _, ok := capacity[q]; !ok {
			continue
		}
		if _, ok := loads[q]; !ok {
			continue
		}
		if _, ok := groups[q]; !ok {
			names = append(names, q)
		}
		groups[q] = append(groups[q], i)
	}
	slices.Sort(names)
	out := map[string]float64{}
	for _, q := range names {
		g := make([]Job, len(groups[q]))
		for k, i := range groups[q] {
			g[k] = jobs[i]
		}
		cur := OfferedLoad(g, capacity[q])
		if cur == 0 {
			return nil, errors.New("trace: queue " + q + ": no arrival span or no GPU demand to scale")
		}
		f := cur / loads[q]
		for _, i := range groups[q] {
			jobs[i].Submit = lo + time.Duration(float64(jobs[i].Submit-lo)*f)
		}
		out[q] = f
	}
	return out, nil
}
