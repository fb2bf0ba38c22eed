package goodput

import "time"

// Demand is one live job as the allocator sees it.
type Demand struct {
	// Type is the job's type in the Model.
	Type string
	// Min and Max bound the GPUs it runs on (1 ≤ Min ≤ Max).
	Min, Max int
	// Current is the GPUs it holds now (0: it waits).
	Current int
	// Age is the time since it arrived; Resizes the re-allocations it
	// has had (a resize, or a start after its first).
	Age     time.Duration
	Resizes int
}

// Allocator computes a round's job sizes in the manner of Pollux: it
// maximizes the power mean with exponent −1 of the jobs' speedups (each
// job's throughput over its one-GPU throughput, Model.Speedup at the
// packed placement of its size) — that is, it minimizes Σ 1/speedup, which
// favours the jobs that have the least — and, as Pollux's simulator does,
// discounts the speedup of a running job at any size other than its
// current one by (age − resizes × delay) / (age + delay), with delay
// RestartDelay: a young or often-resized job is not resized again lightly.
//
// The search is greedy, not Pollux's genetic algorithm: in arrival order
// each job gets its Min while GPUs are left (a job whose Min does not fit
// waits, and later smaller ones may pass it); then the GPUs left go, a
// step at a time, to the job whose next size gains most per GPU added,
// the next size being the best of all larger sizes up to its Max (so a
// job whose speedup dips past a host's GPUs can still jump to two
// hosts), until no step gains. It runs twice — from scratch, and with
// the running jobs kept at their current sizes first — and returns the
// start whose result has the better objective (Objective; a waiting job
// counts as a speedup of 0, as in Pollux's power mean).
type Allocator struct {
	// Model gives the speedups; HostGPUs is the GPUs of a host, for the
	// packed placements (Packed).
	Model    *Model
	HostGPUs int
	// RestartDelay is the delay of Pollux's resize discount; 0: none.
	RestartDelay time.Duration
}

// Allocate returns each demand's GPUs, in ds's order (arrival order):
// 0, or between its Min and Max; their sum is at most gpus.
func (a *Allocator) Allocate(ds []Demand, gpus int) []int {
	fresh := a.greedy(ds, gpus, false)
	kept := a.greedy(ds, gpus, true)
	if a.Objective(ds, kept) < a.Objective(ds, fresh) {
		return kept
	}
	return fresh
}

// Objective is what Allocate minimizes: Σ 1 / (discounted speedup +
// 0.001) over the jobs, a job of size 0 counting 1,000.
func (a *Allocator) Objective(ds []Demand, sizes []int) float64 {
	sum := 0.0
	for i := range ds {
		sum += a.inverse(&ds[i], sizes[i])
	}
	return sum
}

// greedy is one start of the search: keep false starts every job at 0;
// keep true starts the running jobs at their current size (as long as
// the GPUs last, in arrival order).
func (a *Allocator) greedy(ds []Demand, gpus int, keep bool) []int {
	out := make([]int, len(ds))
	left := gpus
	if keep {
		for i, d := range ds {
			if d.Current >= d.Min && d.Current <= d.Max && d.Current <= left {
				out[i] = d.Current
				left -= d.Current
			}
		}
	}
	for i, d := range ds {
		if out[i] == 0 && d.Min >= 1 && d.Min <= d.Max && d.Min <= left {
			out[i] = d.Min
			left -= d.Min
		}
	}
	type step struct {
		k    int     // the next size
		gain float64 // per GPU added; ≤ 0: none
	}
	next := func(i int) step {
		best := step{}
		d := &ds[i]
		cur := a.inverse(d, out[i])
		for k := out[i] + 1; k <= min(d.Max, out[i]+left); k++ {
			if g := (cur - a.inverse(d, k)) / float64(k-out[i]); g > best.gain {
				best = step{k, g}
			}
		}
		return best
	}
	steps := make([]step, len(ds))
	for i := range ds {
		if out[i] > 0 {
			steps[i] = next(i)
		}
	}
	for left > 0 {
		pick := -1
		for i := range steps {
			if steps[i].gain > 1e-12 && (pick < 0 || steps[i].gain > steps[pick].gain) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		if need := steps[pick].k - out[pick]; need > left {
			steps[pick] = next(pick) // fewer GPUs left than when it was computed
			continue
		}
		left -= steps[pick].k - out[pick]
		out[pick] = steps[pick].k
		steps[pick] = next(pick)
	}
	return out
}

// inverse is 1 / (d's discounted speedup on k GPUs + 0.001), the term of
// the sum the allocation minimizes (Pollux adds the same 0.001).
func (a *Allocator) inverse(d *Demand, k int) float64 {
	if k <= 0 {
		return 1 / 1e-3
	}
	s := a.Model.Speedup(d.Type, k, Packed(k, a.HostGPUs))
	if d.Current > 0 && k != d.Current {
		s *= a.discount(d)
	}
	return 1 / (s + 1e-3)
}

// discount is the resize discount of a running job.
func (a *Allocator) discount(d *Demand) float64 {
	age, delay := d.Age.Seconds(), a.RestartDelay.Seconds()
	if age+delay <= 0 {
		return 1
	}
	return max(age-float64(d.Resizes)*delay, 0) / (age + delay)
}
