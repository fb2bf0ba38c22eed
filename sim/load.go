package sim

import (
	"math"
	"slices"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// loadTracker integrates, exactly and in O(1) per change, what the
// scheduler faced over time: the GPUs allocated and the GPUs demanded by
// waiting jobs, per tenant and in total; the time some job waited (the
// busy window) and the GPU time allocated in it; the number of jobs in
// the system (for finish-time fairness). It closes fixed windows of
// length every and computes Jain's index of each tenant's allocation over
// its demand-capped fair share in the window.
//
// Every change goes through alloc or pend, which first bring the
// integrals up to the engine's current time; the tracker reads nothing
// else of the simulation.
type loadTracker struct {
	gpus    float64 // capacity in GPUs
	every   time.Duration
	weights []float64 // per tenant: its entitlement weight (0: none)

	last      time.Duration
	allocM    int64   // allocated milli-GPUs, all tenants
	pendM     int64   // milli-GPUs demanded by waiting jobs
	pendJobs  int     // jobs waiting
	running   int     // jobs running
	activeInt float64 // ∫ active dt, job-seconds
	busyTime  float64 // seconds with a job waiting
	busyUsed  float64 // GPU-seconds allocated while a job waited
	demandInt float64 // ∫ (allocated + waiting demand) dt, GPU-seconds

	// per tenant: current milli values and their integrals in the open
	// window since tLast[t].
	tAlloc, tPend []int64
	tLast         []time.Duration
	wAlloc, wDem  []float64
	wPend         float64 // ∫ waiting jobs dt in the open window
	win           int     // index of the open window

	windows    int     // windows in which some job waited
	jainSum    float64 // Σ Jain's index over those windows
	jainMin    float64
	shareScr   []float64
	tenantScr  []int
	fairScrDem []float64
}

// defaultFairnessWindow is the window of the per-window fairness index
// when Config.FairnessWindow is 0.
const defaultFairnessWindow = 10 * time.Minute

func (lt *loadTracker) init(gpus int, every time.Duration, weights []float64) {
	lt.gpus = float64(gpus)
	lt.every = every
	lt.weights = weights
	n := len(weights)
	lt.tAlloc, lt.tPend = make([]int64, n), make([]int64, n)
	lt.tLast = make([]time.Duration, n)
	lt.wAlloc, lt.wDem = make([]float64, n), make([]float64, n)
	lt.jainMin = 1
}

// advance integrates the global figures up to now, closing the windows
// that end by then.
func (lt *loadTracker) advance(now time.Duration) {
	for now > lt.last {
		end := time.Duration(lt.win+1) * lt.every
		t := min(now, end)
		dt := (t - lt.last).Seconds()
		lt.activeInt += dt * float64(lt.running+lt.pendJobs)
		alloc := float64(lt.allocM) / topology.MilliPerGPU
		lt.demandInt += dt * (alloc + float64(lt.pendM)/topology.MilliPerGPU)
		if lt.pendJobs > 0 {
			lt.busyTime += dt
			lt.busyUsed += dt * alloc
			lt.wPend += dt
		}
		lt.last = t
		if t == end {
			lt.closeWindow(end, lt.every)
		}
	}
}

// tenant integrates tenant k's figures up to lt.last (within the open
// window: advance closed the earlier ones, having integrated every tenant
// to their ends).
func (lt *loadTracker) tenant(k int) {
	if dt := (lt.last - lt.tLast[k]).Seconds(); dt > 0 {
		a := float64(lt.tAlloc[k]) / topology.MilliPerGPU
		lt.wAlloc[k] += dt * a
		lt.wDem[k] += dt * (a + float64(lt.tPend[k])/topology.MilliPerGPU)
	}
	lt.tLast[k] = lt.last
}

// run records a job of tenant k holding d milli-GPUs starting (sign +1)
// or stopping (-1) at now.
func (lt *loadTracker) run(now time.Duration, k int, d int64, sign int) {
	lt.advance(now)
	lt.tenant(k)
	lt.allocM += int64(sign) * d
	lt.tAlloc[k] += int64(sign) * d
	lt.running += sign
}

// wait records a job of tenant k demanding d milli-GPUs starting (sign
// +1) or ending (-1) a wait at now.
func (lt *loadTracker) wait(now time.Duration, k int, d int64, sign int) {
	lt.advance(now)
	lt.tenant(k)
	lt.pendM += int64(sign) * d
	lt.tPend[k] += int64(sign) * d
	lt.pendJobs += sign
}

// closeWindow ends the window ending at end of length span: when a job
// waited in it, it adds the window's Jain index.
func (lt *loadTracker) closeWindow(end, span time.Duration) {
	for k := range lt.tLast {
		lt.tenant(k)
	}
	if lt.wPend > 0 {
		j := lt.windowJain(span.Seconds())
		lt.windows++
		lt.jainSum += j
		lt.jainMin = min(lt.jainMin, j)
	}
	clear(lt.wAlloc)
	clear(lt.wDem)
	lt.wPend = 0
	lt.win = int(end / lt.every)
}

// windowJain is Jain's index over the tenants with demand in the window
// of x_k / f_k: x_k their mean allocation, f_k their demand-capped fair
// share of the capacity (FairShares over their mean demands and weights).
// Tenants whose fair share is 0 are left out.
func (lt *loadTracker) windowJain(span float64) float64 {
	lt.tenantScr = lt.tenantScr[:0]
	lt.fairScrDem = lt.fairScrDem[:0]
	w := lt.shareScr[:0]
	for k := range lt.wDem {
		if lt.wDem[k] > 0 {
			lt.tenantScr = append(lt.tenantScr, k)
			lt.fairScrDem = append(lt.fairScrDem, lt.wDem[k]/span)
			w = append(w, lt.weights[k])
		}
	}
	lt.shareScr = w
	shares := FairShares(lt.gpus, lt.fairScrDem, w)
	var s, s2 float64
	n := 0
	for i, k := range lt.tenantScr {
		if shares[i] <= 0 {
			continue
		}
		r := lt.wAlloc[k] / span / shares[i]
		s += r
		s2 += r * r
		n++
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(n) * s2)
}

// finish integrates up to now and closes the open window (shorter than
// the others when now is not on the grid).
func (lt *loadTracker) finish(now time.Duration) {
	lt.advance(now)
	start := time.Duration(lt.win) * lt.every
	if now > start {
		lt.closeWindow(now, now-start)
	}
}

// FairShares divides capacity among claimants by weighted max-min
// fairness capped by demand (water-filling): each gets min(demand,
// λ·weight) with λ chosen so the shares add up to min(capacity, Σ
// demand). Claimants of weight 0 share what the weighted ones leave,
// equally, the same way. It returns one share per demand, in order.
// Negative demands count as 0. O(n log n).
//
// With demands 1, 4, 10, equal weights and capacity 9: the first gets
// its 1, the other two 4 each.
func FairShares(capacity float64, demand, weight []float64) []float64 {
	out := make([]float64, len(demand))
	var weighted, unweighted []int
	for i := range demand {
		if demand[i] <= 0 {
			continue
		}
		if i < len(weight) && weight[i] > 0 {
			weighted = append(weighted, i)
		} else {
			unweighted = append(unweighted, i)
		}
	}
	left := waterFill(capacity, demand, weight, weighted, out)
	waterFill(left, demand, nil, unweighted, out)
	return out
}

// waterFill fills out[i] for the claimants idx (weight 1 each when weight
// is nil) from capacity and returns what is left.
func waterFill(capacity float64, demand, weight []float64, idx []int, out []float64) float64 {
	wt := func(i int) float64 {
		if weight == nil {
			return 1
		}
		return weight[i]
	}
	// Satisfy claimants in ascending demand per weight.
	slices.SortStableFunc(idx, func(a, b int) int {
		ra, rb := demand[a]/wt(a), demand[b]/wt(b)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return a - b
	})
	var wsum float64
	for _, i := range idx {
		wsum += wt(i)
	}
	for _, i := range idx {
		if capacity <= 0 {
			break
		}
		fair := capacity * wt(i) / wsum
		give := math.Min(demand[i], fair)
		out[i] = give
		capacity -= give
		wsum -= wt(i)
	}
	return math.Max(capacity, 0)
}
