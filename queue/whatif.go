package queue

import "github.com/gpusched/gpusched/fairshare"

// WhatIf is a view of a Tree's usage with some charges taken off (jobs
// that would be preempted) or added (the job that would replace them),
// for planners that ask "would this job fit its quotas if those jobs were
// gone?" without changing the tree. It keeps its own copy of the usage of
// every node it touches; the tree is only read.
//
// A WhatIf reflects the tree's usage when it was Reset: after the tree
// changes (Admit, Start, Release), Reset it before asking again. It is not
// safe for concurrent use; build one per planner with Tree.WhatIf.
type WhatIf struct {
	t *Tree
	// eff and use are the what-if effective usage and used+reserved of
	// touched nodes; ok marks them.
	eff, use []Vector
	ok       []bool
	touched  []NodeID
	delta    Vector
	scratch  Vector
}

// WhatIf returns an empty what-if view of t (no charge taken off).
func (t *Tree) WhatIf() *WhatIf {
	n := len(t.nodes)
	return &WhatIf{t: t, eff: make([]Vector, n), use: make([]Vector, n), ok: make([]bool, n)}
}

// Reset forgets every change, so that the view equals the tree's usage
// now.
func (w *WhatIf) Reset() {
	for _, id := range w.touched {
		w.ok[id] = false
	}
	w.touched = w.touched[:0]
}

// Tree returns the tree the view is of.
func (w *WhatIf) Tree() *Tree { return w.t }

func (w *WhatIf) node(id NodeID) {
	if w.ok[id] {
		return
	}
	nd := &w.t.nodes[id]
	if w.eff[id] == nil {
		w.eff[id] = make(Vector, len(nd.eff))
		w.use[id] = make(Vector, len(nd.eff))
	}
	copy(w.eff[id], nd.eff)
	for r := range nd.used {
		w.use[id][r] = nd.used[r] + nd.reserved[r]
	}
	w.ok[id] = true
	w.touched = append(w.touched, id)
}

// Release takes v off leaf's usage (a job of the leaf that would stop).
// O(depth × dimensions).
func (w *WhatIf) Release(leaf NodeID, v Vector) { w.change(leaf, v, -1) }

// Add puts v on leaf's usage (undoing a Release, or a job that would be
// admitted). O(depth × dimensions).
func (w *WhatIf) Add(leaf NodeID, v Vector) { w.change(leaf, v, 1) }

func (w *WhatIf) change(leaf NodeID, v Vector, sign int64) {
	t := w.t
	if w.delta == nil {
		w.delta = make(Vector, t.dims.Len())
	}
	d := w.delta
	for r := range d {
		d[r] = sign * v[r]
	}
	for id := leaf; id >= 0; id = t.nodes[id].parent {
		w.node(id)
		nd := &t.nodes[id]
		eff, use := w.eff[id], w.use[id]
		for r := range d {
			use[r] += sign * v[r]
			old := eff[r]
			eff[r] += d[r]
			d[r] = max(eff[r], nd.protected[r]) - max(old, nd.protected[r])
		}
	}
}

// Check is Tree.Check against the what-if usage: whether adding v to leaf
// keeps every quota on the path to the root. It changes nothing.
// O(depth × dimensions).
func (w *WhatIf) Check(leaf NodeID, v Vector) *Block {
	t := w.t
	if w.scratch == nil {
		w.scratch = make(Vector, t.dims.Len())
	}
	d := w.scratch
	copy(d, v)
	for id := leaf; id >= 0; id = t.nodes[id].parent {
		nd := &t.nodes[id]
		eff, use := nd.eff, Vector(nil)
		if w.ok[id] {
			eff, use = w.eff[id], w.use[id]
		}
		for r, x := range v {
			if x <= 0 || !t.governed[r] {
				continue
			}
			var u int64
			if use != nil {
				u = use[r]
			} else {
				u = nd.used[r] + nd.reserved[r]
			}
			// Real usage grows by v at every level (see Tree.Check).
			b, up := t.checkStep(id, r, u, x, eff[r], d[r], leaf)
			if b != nil {
				return b
			}
			d[r] = up
		}
	}
	return nil
}

// Excess returns node id's what-if effective usage minus its nominal
// quota in dimension r: positive when the node borrows (uses more than
// its guarantee), zero or negative when it is within it. For a leaf the
// effective usage is what its jobs hold; for an inner node it counts each
// child at least at the part of its nominal quota it may not lend.
func (w *WhatIf) Excess(id NodeID, r int) int64 {
	nd := &w.t.nodes[id]
	if w.ok[id] {
		return w.eff[id][r] - nd.nominal[r]
	}
	return nd.eff[r] - nd.nominal[r]
}

// Borrows reports whether node id uses more than its nominal quota in
// some governed dimension where mask is positive (all governed
// dimensions when mask is nil), in the what-if usage.
func (w *WhatIf) Borrows(id NodeID, mask Vector) bool {
	t := w.t
	for r := range t.governed {
		if !t.governed[r] || mask != nil && mask[r] <= 0 {
			continue
		}
		if w.Excess(id, r) > 0 {
			return true
		}
	}
	return false
}

// Share returns the fair-share standing node id would have among its
// siblings with add put on its what-if usage (nil adds nothing), per the
// tree's fairness policy: the weighted dominant share of its usage (DRF
// and FairTree; for FairTree this is the current share, not the decayed
// usage Key uses), Kueue's borrowed share (Borrowed), or 0 (NoFairness).
// Lower is better off. It changes nothing.
func (w *WhatIf) Share(id NodeID, add Vector) float64 {
	t := w.t
	nd := &t.nodes[id]
	if w.scratch == nil {
		w.scratch = make(Vector, t.dims.Len())
	}
	u := w.scratch
	for r := range u {
		if w.ok[id] {
			u[r] = w.use[id][r]
		} else {
			u[r] = nd.used[r] + nd.reserved[r]
		}
		if add != nil {
			u[r] += add[r]
		}
	}
	switch t.fair.Policy {
	case DRF, FairTree:
		return fairshare.WeightedDominantShare(u, t.capacity, nd.weight)
	case Borrowed:
		if nd.parent < 0 {
			return 0
		}
		s, _ := fairshare.BorrowedShare(u, nd.nominal, t.nodes[nd.parent].lendable, nd.weight)
		return s
	}
	return 0
}
