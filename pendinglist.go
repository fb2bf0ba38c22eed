package gpusched

import (
	"slices"

	"github.com/gpusched/gpusched/queue"
)

// pendingList builds Decision.Pending, keeping each leaf's rows across
// cycles: a cycle rewrites only what changed, and a leaf none of whose
// inputs changed is copied as it was. At KAI #315's size (40,000 waiting
// jobs) listing every job afresh costs more than the rest of an
// incremental cycle: each row reads its job, scattered in memory.
//
// A leaf's rows are current when the leaf holds the same jobs in the same
// order (queue.Leaf.Version), its stop reason is the same pointer, and
// the jobs explained in this cycle are exactly those explained in the one
// before, with equal reasons (cycleState.explain keeps the old pointer for
// an equal reason and counts them). Then only the rows whose reason is
// their class's can differ, and they are patched class by class when the
// class's reason pointer changed (cycleState.classFail keeps the old
// pointer for an equal reason). Otherwise the leaf is listed again.
// Reasons are therefore always those cycleState.reason gives
// (TestPendingListIncremental checks it against a full listing).
//
// Its methods are the only writers of its fields. It is part of cycleState
// and reads it.
type pendingList struct {
	// leaves are the rows per leaf, by node ID; cycle is the cycle they
	// were listed in (0: never).
	leaves []leafRows
	cycle  uint64
	// bufs are the backing arrays of the last two Decisions' Pending, used
	// in turn: a Decision's list is never the rows kept here, so a host
	// that edits it changes nothing here.
	bufs [2][]Pending
	turn int
	// kept counts the leaves whose rows were kept (patched or not), for
	// tests and profiles.
	kept uint64
}

// leafRows is one leaf's rows as listed in pendingList.cycle.
type leafRows struct {
	leaf     *queue.Leaf
	version  uint64 // leaf.Version() when listed
	name     string
	stop     *Reason // the leaf's stop reason then
	explicit int     // rows with a reason explained in that cycle
	rows     []Pending
	classes  []classRows
}

// classRows are the rows of a leaf whose reason is their class's.
type classRows struct {
	class  *queue.Class
	reason *Reason // as listed
	rows   []int32 // into leafRows.rows
}

// forget drops every kept row (the queue tree was reconfigured).
func (pl *pendingList) forget() {
	pl.leaves = nil
	pl.cycle = 0
}

// list returns every waiting job of tree with its reason (cs.reason), queue
// by queue in depth-first order and in queue order within each. The slice
// is reused by the Schedule after next. O(leaves + classes + rows changed)
// plus a copy of every row.
func (pl *pendingList) list(tree *queue.Tree, cs *cycleState) []Pending {
	if len(pl.leaves) != tree.NumNodes() || pl.cycle != cs.n-1 {
		pl.leaves = make([]leafRows, tree.NumNodes())
	}
	n := 0
	for _, id := range tree.Leaves() {
		lr, l := &pl.leaves[id], tree.LeafOf(id)
		if lr.current(l, cs, id) {
			pl.kept++
		} else {
			pl.relist(lr, l, cs, id)
		}
		n += len(lr.rows)
	}
	buf := pl.bufs[pl.turn][:0]
	if cap(buf) < n {
		buf = make([]Pending, 0, n+n/4)
	}
	for _, id := range tree.Leaves() {
		buf = append(buf, pl.leaves[id].rows...)
	}
	pl.bufs[pl.turn] = buf
	pl.turn ^= 1
	pl.cycle = cs.n
	return buf
}

// current reports whether lr, listed in the cycle before, still holds
// leaf l's rows once its classes' rows are patched (which it does).
func (lr *leafRows) current(l *queue.Leaf, cs *cycleState, id queue.NodeID) bool {
	if lr.leaf != l || lr.version != l.Version() || lr.name != l.Name() || lr.stop != cs.leaves[id].stop {
		return false
	}
	var e leafExplained
	if int(id) < len(cs.explained) && cs.explained[id].n == cs.n {
		e = cs.explained[id]
	}
	if e.changed || e.same != lr.explicit {
		return false
	}
	for i := range lr.classes {
		c := &lr.classes[i]
		if r := cs.classReason(c.class); r != c.reason {
			c.reason = r
			for _, k := range c.rows {
				lr.rows[k].Reason = r
			}
		}
	}
	return true
}

// relist lists leaf l's rows afresh.
func (pl *pendingList) relist(lr *leafRows, l *queue.Leaf, cs *cycleState, id queue.NodeID) {
	for i := range lr.classes {
		lr.classes[i].rows = lr.classes[i].rows[:0]
	}
	cls := lr.classes[:0]
	rows := lr.rows[:0]
	explicit := 0
	name := l.Name()
	l.Ascend(func(e *queue.Entry) bool {
		j := e.Ref.(*job)
		r, src := cs.reasonOf(j)
		switch src {
		case fromJob:
			explicit++
		case fromClass:
			c := e.ClassOf()
			k := cs.listIndex(c, len(cls))
			if k == len(cls) { // the class's first row
				if k < cap(cls) {
					cls = cls[:k+1]
					cls[k].class, cls[k].reason = c, r
				} else {
					cls = append(cls, classRows{class: c, reason: r})
				}
			}
			cls[k].rows = append(cls[k].rows, int32(len(rows)))
		}
		rows = append(rows, Pending{Job: j.spec.ID, Queue: name, State: j.state, Reason: r})
		return true
	})
	clear(cls[len(cls):cap(cls)]) // no stale class pointers kept
	*lr = leafRows{leaf: l, version: l.Version(), name: name, stop: cs.leaves[id].stop, explicit: explicit, rows: rows, classes: cls}
}

// sameReason reports whether a and b say the same, field by field (the
// placer's explanation by pointer: an explanation from the failure cache
// is the same pointer while it stands).
func sameReason(a, b *Reason) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if (a.Quota == nil) != (b.Quota == nil) || (a.Quota != nil && *a.Quota != *b.Quota) {
		return false
	}
	return a.Code == b.Code && a.Placement == b.Placement && a.Blocker == b.Blocker && a.Queue == b.Queue &&
		a.Cause == b.Cause && a.HeldQueue == b.HeldQueue && a.HeldResource == b.HeldResource &&
		a.Until == b.Until && a.UntilForever == b.UntilForever && slices.Equal(a.Victims, b.Victims) &&
		a.Reserved == b.Reserved && a.ReservedForever == b.ReservedForever && a.HoldsQuota == b.HoldsQuota &&
		a.Detail == b.Detail && a.ExplainedAt == b.ExplainedAt
}
