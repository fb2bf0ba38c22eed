package preempt

import (
	"cmp"
	"slices"
	"strings"
)

// restartPrice is what the restart of a victim taken from another queue
// (the reclaim and fair-share grounds) is expected to stop in turn: see
// priceRestarts.
type restartPrice struct {
	lost  GPUTime
	stops int32
}

// priceRestarts adds to the price of every whole-gang candidate taken on
// the reclaim or fair-share ground what its own restart is expected to
// stop. Such a victim waits again in its queue; where priority is a
// ground (Config.LowerPriority is not NeverByPriority) it preempts
// lower-priority jobs of that queue to start again, so stopping it costs
// its own lost work and theirs: reclaim that stops a queue's
// high-priority job, which then stops the queue's low-priority one, makes
// two stops where stopping the low-priority one needed one.
//
// The restart's stops are priced as the fractional cover of the victim's
// GPUs by its queue's candidates of lower priority (the jobs the plan may
// stop), cheapest lost work per GPU first (then job ID), the last one
// counted in proportion: a lower bound on the lost work of any way to
// free that many GPUs among them, and the number of jobs the cover
// touches as stops. None when they cannot cover its GPUs (it would wait
// rather than preempt) or it holds no GPU. Shrinks restart nothing: the
// gang runs on.
//
// O(U log U) for U candidate units, plus O(candidates of the queue) per
// priced unit whose queue has a lower priority than its own.
func (r *run) priceRestarts() {
	if r.tree == nil || r.s.cfg.LowerPriority == NeverByPriority {
		return
	}
	priced := false
	for i := range r.units {
		if u := &r.units[i]; u.task < 0 && u.milli > 0 && u.leaf >= 0 && (u.ground == GroundReclaim || u.ground == GroundFairShare) {
			priced = true
			break
		}
	}
	if !priced {
		return
	}
	// The whole-gang candidates holding GPUs, by queue, cheapest per GPU
	// first.
	by := r.rsort[:0]
	for i := range r.units {
		if u := &r.units[i]; u.task < 0 && u.milli > 0 && u.leaf >= 0 {
			by = append(by, int32(i))
		}
	}
	slices.SortFunc(by, func(a, b int32) int {
		ua, ub := &r.units[a], &r.units[b]
		if c := cmp.Compare(ua.leaf, ub.leaf); c != 0 {
			return c
		}
		// lost/milli ascending, compared without division.
		if c := cmp.Compare(int64(ua.lost)*ub.milli, int64(ub.lost)*ua.milli); c != 0 {
			return c
		}
		return strings.Compare(r.jobID(ua), r.jobID(ub))
	})
	r.rsort = by
	r.restarts = slices.Grow(r.restarts[:0], len(r.jobs))[:len(r.jobs)]
	clear(r.restarts)
	// Prices first, then added: a candidate's cover reads the others'
	// own lost work.
	for lo := 0; lo < len(by); {
		leaf := r.units[by[lo]].leaf
		hi, minPrio := lo, r.units[by[lo]].prio
		for ; hi < len(by) && r.units[by[hi]].leaf == leaf; hi++ {
			minPrio = min(minPrio, r.units[by[hi]].prio)
		}
		for _, vi := range by[lo:hi] {
			v := &r.units[vi]
			if v.prio > minPrio && (v.ground == GroundReclaim || v.ground == GroundFairShare) {
				r.restarts[v.ji] = r.cover(v, by[lo:hi])
			}
		}
		lo = hi
	}
	for i := range r.units {
		if u := &r.units[i]; u.task < 0 {
			u.lost += r.restarts[u.ji].lost
		}
	}
}

// cover prices the restart of v among cands, its queue's candidates in
// ascending lost work per GPU (see priceRestarts).
func (r *run) cover(v *unit, cands []int32) restartPrice {
	var p restartPrice
	need := v.milli
	for _, wi := range cands {
		w := &r.units[wi]
		if w.ji == v.ji || w.prio >= v.prio {
			continue
		}
		p.stops++
		if w.milli >= need {
			p.lost += GPUTime(int64(w.lost) * need / w.milli)
			return p
		}
		p.lost += w.lost
		need -= w.milli
	}
	return restartPrice{}
}

// restartOf returns the restart price of unit u (none for a shrink, or
// when no restart was priced).
func (r *run) restartOf(u *unit) restartPrice {
	if u.task >= 0 || len(r.restarts) == 0 {
		return restartPrice{}
	}
	return r.restarts[u.ji]
}
