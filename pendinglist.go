package gpusched

import (
	"slices"

	"github.com/gpusched/gpusched/queue"
)

// pendingList builds Decision.Pending, keeping each leaf's rows across
// cycles: a cycle rewrites only what changed. At KAI #315's size (40,000
// waiting jobs) listing every job afresh costs more than the rest of an
// incremental cycle: each row reads its job, scattered in memory.
//
// A leaf's rows can be kept when its stop reason is the same pointer and
// the jobs explained in this cycle are exactly those explained in the one
// before, with equal reasons (cycleState.explain keeps the old pointer for
// an equal reason and counts them). Then a row whose job is still queued
// at its place is kept, and only the rows of jobs that joined are listed
// (merge: the leaf's order does not depend on time, so jobs that stay
// keep their relative order; every change must be accounted for by
// queue.Leaf.Version, or the leaf is listed afresh). The rows whose reason
// is their class's are then patched class by class where the class's
// reason pointer changed (cycleState.classFail keeps the old pointer for
// an equal reason). Otherwise the leaf is listed afresh. Reasons are
// therefore always those cycleState.reason gives (TestPendingListIncremental
// checks it against a full listing).
//
// Its methods are the only writers of its fields. It is part of cycleState
// and reads it.
type pendingList struct {
	// leaves are the rows per leaf, by node ID; cycle is the cycle they
	// were listed in (0: never).
	leaves []leafRows
	cycle  uint64
	// spare is merge's scratch, swapped with a leaf's rows.
	spare leafRows
	// recycled is a Decision's Pending array its caller handed back
	// (Scheduler.Recycle), for the next listing; nil: allocate.
	recycled []Pending
	// kept and merged count the leaves whose rows were kept as they were
	// (patched or not) and merged, for tests and profiles.
	kept, merged uint64
	// touched sums what touch read, so that its reads are kept.
	touched int
}

// touch reads the first word of every entry's job (see job: the fields a
// row needs share its cache line) in a loop with nothing else to wait
// for, so that the loads overlap; it returns a sum of what it read.
func touch(ents []*queue.Entry) int {
	n := 0
	for _, e := range ents {
		n += len(e.ID)
	}
	return n
}

// leafRows is one leaf's rows as listed in pendingList.cycle.
type leafRows struct {
	leaf     *queue.Leaf
	version  uint64 // leaf.Version() when listed
	name     string
	stop     *Reason // the leaf's stop reason then
	explicit int     // rows with a reason explained in that cycle
	rows     []Pending
	ents     []*queue.Entry // per row: its job's entry
	cls      []int32        // per row: its class in classes, or -1 (explained or behind the stop)
	classes  []classRows
	stamp    uint64 // the cycle that numbered classes (cycleState.listIndex)
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
// is reused by the Schedule after next. O(leaves + classes + rows of
// changed leaves) plus a copy of every row.
func (pl *pendingList) list(tree *queue.Tree, cs *cycleState) []Pending {
	if len(pl.leaves) != tree.NumNodes() || pl.cycle != cs.n-1 {
		pl.leaves = make([]leafRows, tree.NumNodes())
	}
	n := 0
	for _, id := range tree.Leaves() {
		lr, l := &pl.leaves[id], tree.LeafOf(id)
		switch {
		case !lr.same(l, cs, id):
			pl.relist(lr, l, cs, id)
		case lr.version == l.Version():
			pl.kept++
			lr.patch(cs)
		case pl.merge(lr, l, cs):
			pl.merged++
			lr.patch(cs)
		default:
			pl.relist(lr, l, cs, id)
		}
		n += len(lr.rows)
	}
	// A new array every cycle, or one its caller handed back: the
	// Decision is the caller's (a later cycle never writes it unless given
	// back), and never the rows kept here (a host that edits it changes
	// nothing here).
	buf := pl.recycled[:0]
	pl.recycled = nil
	if cap(buf) < n {
		buf = make([]Pending, 0, n+n/8)
	}
	for _, id := range tree.Leaves() {
		buf = append(buf, pl.leaves[id].rows...)
	}
	pl.cycle = cs.n
	return buf
}

// same reports whether lr, listed in the cycle before, is leaf l's and
// nothing but its jobs and its classes' reasons can have changed: the
// same stop reason, and the same jobs explained with the same reasons.
func (lr *leafRows) same(l *queue.Leaf, cs *cycleState, id queue.NodeID) bool {
	if lr.leaf != l || lr.name != l.Name() || lr.stop != cs.leaves[id].stop {
		return false
	}
	var e leafExplained
	if int(id) < len(cs.explained) && cs.explained[id].n == cs.n {
		e = cs.explained[id]
	}
	return !e.changed && e.same == lr.explicit
}

// patch gives the rows of each class whose reason changed the new one.
func (lr *leafRows) patch(cs *cycleState) {
	for i := range lr.classes {
		c := &lr.classes[i]
		if r := cs.classReason(c.class); r != c.reason {
			c.reason = r
			for _, k := range c.rows {
				lr.rows[k].Reason = r
			}
		}
	}
}

// merge brings lr up to date with leaf l, whose jobs changed since: rows
// of jobs still queued are kept in order, rows of jobs that joined are
// listed, and the changes found must be exactly the leaf's (its version's
// count), or it reports false and lr is left as it was.
func (pl *pendingList) merge(lr *leafRows, l *queue.Leaf, cs *cycleState) bool {
	sp := &pl.spare
	rows, ents, cls := sp.rows[:0], sp.ents[:0], sp.cls[:0]
	nclasses := len(lr.classes)
	i, changes, ok := 0, uint64(0), true
	l.Ascend(func(e *queue.Entry) bool {
		for i < len(lr.ents) && lr.ents[i] != e && lr.ents[i].ClassOf() == nil { // left the queue
			i++
			changes++
		}
		if i < len(lr.ents) && lr.ents[i] == e {
			rows, ents, cls = append(rows, lr.rows[i]), append(ents, e), append(cls, lr.cls[i])
			i++
			return true
		}
		changes++ // joined
		j := e.Ref.(*job)
		r, src := cs.reasonOf(j)
		k := int32(-1)
		switch src {
		case fromJob:
			ok = false // a job explained for the first time: list afresh
			return false
		case fromClass:
			c := e.ClassOf()
			k = int32(cs.listIndex(c, lr.stamp, len(lr.classes)))
			if int(k) == len(lr.classes) {
				lr.classes = append(lr.classes, classRows{class: c, reason: r})
			}
		}
		rows = append(rows, Pending{Job: j.spec.ID, Queue: lr.name, State: j.state, Reason: r})
		ents, cls = append(ents, e), append(cls, k)
		return true
	})
	for ; ok && i < len(lr.ents); i++ {
		if lr.ents[i].ClassOf() != nil { // still queued, but not met in order
			ok = false
		}
		changes++
	}
	if !ok || changes != l.Version()-lr.version {
		for k := nclasses; k < len(lr.classes); k++ {
			lr.classes[k] = classRows{}
		}
		lr.classes = lr.classes[:nclasses]
		sp.rows, sp.ents, sp.cls = rows, ents, cls
		lr.stamp = 0 // classes numbered in this merge are forgotten: renumber
		return false
	}
	sp.rows, sp.ents, sp.cls, lr.rows, lr.ents, lr.cls = lr.rows, lr.ents, lr.cls, rows, ents, cls
	for k := range lr.classes {
		lr.classes[k].rows = lr.classes[k].rows[:0]
	}
	for row, k := range cls {
		if k >= 0 {
			lr.classes[k].rows = append(lr.classes[k].rows, int32(row))
		}
	}
	lr.version = l.Version()
	return true
}

// relist lists leaf l's rows afresh.
func (pl *pendingList) relist(lr *leafRows, l *queue.Leaf, cs *cycleState, id queue.NodeID) {
	for i := range lr.classes {
		lr.classes[i].rows = lr.classes[i].rows[:0]
	}
	cls := lr.classes[:0]
	rows, ents, rcls := lr.rows[:0], lr.ents[:0], lr.cls[:0]
	if n := l.Len(); cap(rows) < n { // sized once, not grown row by row
		rows, ents, rcls = make([]Pending, 0, n), make([]*queue.Entry, 0, n), make([]int32, 0, n)
	}
	explicit := 0
	name := l.Name()
	// A class's row list, when it has no room, is carved from one array
	// for the leaf with room for every job of the class: the classes'
	// jobs add up to the leaf's, and no list grows row by row.
	var back []int32
	// The entries first, then their rows: the btree's walk does not read
	// an entry, so each row's first read would wait for memory, one at a
	// time. Read from a tight loop over the gathered pointers, the
	// entries (one cache line each: see job) load side by side.
	l.Ascend(func(e *queue.Entry) bool {
		ents = append(ents, e)
		return true
	})
	pl.touched += touch(ents)
	for _, e := range ents {
		j := e.Ref.(*job)
		r, src := cs.reasonIn(j, id)
		k := int32(-1)
		switch src {
		case fromJob:
			explicit++
		case fromClass:
			c := e.ClassOf()
			k = int32(cs.listIndex(c, cs.n, len(cls)))
			if int(k) == len(cls) { // the class's first row
				if int(k) < cap(cls) {
					cls = cls[:k+1]
					cls[k].class, cls[k].reason = c, r
				} else {
					cls = append(cls, classRows{class: c, reason: r})
				}
				if n := c.Len(); cap(cls[k].rows) < n {
					if len(back) < n {
						back = make([]int32, l.Len())
					}
					cls[k].rows, back = back[:0:n], back[n:]
				}
			}
			cls[k].rows = append(cls[k].rows, int32(len(rows)))
		}
		rows = append(rows, Pending{Job: e.ID, Queue: name, State: j.state, Reason: r}) // e.ID is j.spec.ID, nearer
		rcls = append(rcls, k)
	}
	clear(cls[len(cls):cap(cls)]) // no stale class pointers kept
	*lr = leafRows{leaf: l, version: l.Version(), name: name, stop: cs.leaves[id].stop, explicit: explicit,
		rows: rows, ents: ents, cls: rcls, classes: cls, stamp: cs.n}
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

// recycle keeps rows, a Pending array its caller is done with, for the
// next listing (the larger of it and one kept already).
func (pl *pendingList) recycle(rows []Pending) {
	if cap(rows) > cap(pl.recycled) {
		pl.recycled = rows
	}
}

// Recycle hands back a Decision the caller is done with: a later
// Schedule may reuse its Pending array instead of allocating one (at tens
// of thousands of waiting jobs, listing them all every cycle allocates
// megabytes a cycle, and the garbage collector's work grows with it).
// After Recycle the caller must not read or keep d.Pending; without it,
// a Decision stays the caller's for ever. O(1).
func (s *Scheduler) Recycle(d Decision) {
	if s.mutating("Recycle", "") != nil {
		return
	}
	defer s.cb.leave()
	s.cyc.list.recycle(d.Pending)
}
