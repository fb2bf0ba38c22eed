package queue

import (
	"container/heap"
	"math"
	"math/bits"
	"time"

	"github.com/google/btree"
)

// Entry is a pending job in a leaf queue. The owner fills the exported
// fields before Add and must not change them while the entry is queued,
// except through Leaf.SetPriority.
type Entry struct {
	// The fields a listing of the queue reads come first, next to each
	// other (an owner that embeds Entry can keep its own per-row fields
	// just before it): one cache line per row.

	ID string // the job's ID
	// Ref is the owner's handle; the package never looks at it.
	Ref   any
	class *Class
	leaf  *Leaf

	Priority int32 // higher goes first; change it with Leaf.SetPriority
	// Submitted is when the job entered the queue (for FIFO order and
	// aging); Seq breaks ties between equal times. Seq must be unique in
	// the Tree, as queues are compared by their next jobs.
	Submitted time.Time
	Seq       uint64 // unique in the Tree
	// Class groups jobs that are interchangeable for admission: the same
	// demand and placement shape. When one job of a class cannot be placed,
	// none can in the same state, so a cycle skips the rest of the class at
	// once.
	Class string
	// Runtime is the user's runtime estimate; 0 means unknown.
	Runtime time.Duration
	// Demand is what the job adds to its queue's usage if admitted (the
	// owner's best estimate before placement). It decides whether the job
	// borrows, for the order across queues.
	Demand Vector
}

// ClassOf returns the class of a queued entry (nil when not queued).
func (e *Entry) ClassOf() *Class { return e.class }

// Class is the set of pending jobs of one leaf that share a class key, in
// queue order.
type Class struct {
	Key string // the entries' Class
	// Data is the owner's per-class scratch space; the package never looks
	// at it.
	Data any

	jobs      entrySet
	byRuntime *runtimeIndex // nil without Backfill
	// cursor state: headKey is head's orderKey
	after   *Entry
	head    *Entry
	headKey orderKey
	pos     int
}

// Len returns the number of pending jobs in the class.
func (c *Class) Len() int { return c.jobs.Len() }

// Ascend calls fn for the class's jobs in queue order until it returns
// false.
func (c *Class) Ascend(fn func(*Entry) bool) { c.jobs.Ascend(fn) }

// AscendRuntime calls fn for the class's jobs whose runtime estimate is
// known and at most max, shortest first, until fn returns false. It is
// only available in queues with Backfill; otherwise it visits nothing.
func (c *Class) AscendRuntime(max time.Duration, fn func(*Entry) bool) {
	if c.byRuntime == nil {
		return
	}
	c.byRuntime.ascend(max, fn)
}

// Leaf is the pending jobs of one leaf queue, ordered by its policy and
// grouped in classes. Insertion, removal and priority changes cost
// O(log n); a cycle visits classes, not jobs, once a class is known not to
// fit.
type Leaf struct {
	tree    *Tree
	id      NodeID
	policy  Policy
	all     *btree.BTreeG[*Entry]
	free    *btree.FreeListG[*Entry] // nodes of the classes' runtime indexes
	classes map[string]*Class
	list    []*Class // classes in creation order (deterministic)
	// admitted and running count the queue's jobs holding resources, for
	// the view.
	admitted, running int
	cur               Cursor
	// mods counts the changes of the pending set or its order (Version).
	mods uint64
}

func newLeaf(t *Tree, id NodeID, p Policy) *Leaf {
	l := &Leaf{tree: t, id: id, policy: p, classes: map[string]*Class{}}
	l.all = btree.NewG(16, l.less)
	return l
}

// ID returns the leaf's node.
func (l *Leaf) ID() NodeID { return l.id }

// Name returns the leaf's name.
func (l *Leaf) Name() string { return l.tree.nodes[l.id].name }

// Policy returns the leaf's ordering policy (defaults filled).
func (l *Leaf) Policy() Policy { return l.policy }

// Len returns the number of pending jobs.
func (l *Leaf) Len() int { return l.all.Len() }

// Version changes whenever the pending jobs or their order change (Add,
// Remove, SetPriority): equal versions of one Leaf mean the same jobs in
// the same order, which lets the owner keep per-job listings across cycles.
func (l *Leaf) Version() uint64 { return l.mods }

// Head returns the first pending job in queue order.
func (l *Leaf) Head() (*Entry, bool) { return l.all.Min() }

// Ascend calls fn for the pending jobs in queue order until it returns
// false.
func (l *Leaf) Ascend(fn func(*Entry) bool) { l.all.Ascend(fn) }

// Count adjusts the leaf's counts of admitted and running jobs, shown by
// Tree.View.
func (l *Leaf) Count(admitted, running int) {
	l.admitted += admitted
	l.running += running
}

// Classes calls fn for the leaf's classes that hold pending jobs, in a
// deterministic order (not queue order), until fn returns false. O(classes).
func (l *Leaf) Classes(fn func(*Class) bool) {
	for _, c := range l.list {
		if c.jobs.Len() > 0 && !fn(c) {
			return
		}
	}
}

// First returns the class's first job in queue order, or false when the
// class is empty. O(log n).
func (c *Class) First() (*Entry, bool) { return c.jobs.Min() }

// Add queues e. It panics if e is already queued (a programmer error).
func (l *Leaf) Add(e *Entry) {
	if e.leaf != nil {
		panic("queue: Leaf.Add: entry " + e.ID + " is already queued")
	}
	e.leaf = l
	l.mods++
	c := l.classes[e.Class]
	if c == nil {
		c = &Class{Key: e.Class, jobs: newEntrySet(l.less, 8, nil)}
		if l.policy.Backfill {
			if l.free == nil {
				l.free = btree.NewFreeListG[*Entry](btree.DefaultFreeListSize)
			}
			c.byRuntime = newRuntimeIndex(l.less, l.free)
		}
		l.classes[e.Class] = c
		c.pos = len(l.list)
		l.list = append(l.list, c)
	}
	e.class = c
	l.all.ReplaceOrInsert(e)
	c.jobs.Insert(e)
	if c.byRuntime != nil && e.Runtime > 0 {
		c.byRuntime.add(e)
	}
}

// Remove takes e out of the queue; it reports whether e was queued here.
func (l *Leaf) Remove(e *Entry) bool {
	if e.leaf != l {
		return false
	}
	c := e.class
	l.mods++
	deleteEntry(l.all, e)
	c.jobs.Delete(e)
	if c.byRuntime != nil && e.Runtime > 0 {
		c.byRuntime.remove(e)
	}
	e.leaf, e.class = nil, nil
	if c.jobs.Len() == 0 && !l.cur.active {
		l.dropClass(c)
	}
	return true
}

// deleteEntry deletes e from t, which holds it. The entry a cycle admits
// is mostly its class's first (and in a strict queue the leaf's): that one
// goes without comparisons (DeleteMin), the others by search.
func deleteEntry(t *btree.BTreeG[*Entry], e *Entry) {
	if m, _ := t.Min(); m == e {
		t.DeleteMin()
		return
	}
	t.Delete(e)
}

func (l *Leaf) dropClass(c *Class) {
	delete(l.classes, c.Key)
	last := l.list[len(l.list)-1]
	l.list[c.pos] = last
	last.pos = c.pos
	l.list = l.list[:len(l.list)-1]
}

// SetPriority changes the priority of a queued entry and reorders it.
func (l *Leaf) SetPriority(e *Entry, p int32) {
	if e.leaf != l {
		e.Priority = p
		return
	}
	c := e.class
	l.mods++
	l.all.Delete(e)
	c.jobs.Delete(e)
	if c.byRuntime != nil && e.Runtime > 0 {
		c.byRuntime.remove(e)
	}
	e.Priority = p
	if c.head == e {
		c.headKey = keyOf(e) // as compares read it
	}
	l.all.ReplaceOrInsert(e)
	c.jobs.Insert(e)
	if c.byRuntime != nil && e.Runtime > 0 {
		c.byRuntime.add(e)
	}
}

// Before reports whether a comes before b in the leaf's order.
func (l *Leaf) Before(a, b *Entry) bool { return l.less(a, b) }

func (l *Leaf) less(a, b *Entry) bool {
	ka, kb := keyOf(a), keyOf(b)
	return l.lessKey(&ka, &kb)
}

// orderKey is what a leaf's order compares of an entry. A class in a
// cycle keeps its head's (Cursor), so that ordering the classes reads no
// entry: a head is mostly a job not yet looked at in the cycle, on a line
// of its own elsewhere in memory.
type orderKey struct {
	sub time.Time
	seq uint64
	rt  time.Duration
	pri int32
}

func keyOf(e *Entry) orderKey {
	return orderKey{sub: e.Submitted, seq: e.Seq, rt: e.Runtime, pri: e.Priority}
}

// lessKey is the leaf's order on keys.
func (l *Leaf) lessKey(a, b *orderKey) bool {
	if l.policy.Ordering == PriorityAging {
		if c := agedCompare(a.pri, b.pri, a.sub, b.sub, l.policy.AgingInterval); c != 0 {
			return c < 0
		}
	} else {
		if a.pri != b.pri {
			return a.pri > b.pri
		}
		if l.policy.Ordering == ShortestFirst {
			if c := runtimeCompare(a.rt, b.rt); c != 0 {
				return c < 0
			}
		}
		if !a.sub.Equal(b.sub) {
			return a.sub.Before(b.sub)
		}
	}
	return a.seq < b.seq
}

// runtimeCompare orders runtime estimates shortest first, unknown (0 or
// negative) last.
func runtimeCompare(a, b time.Duration) int {
	switch {
	case a == b, a <= 0 && b <= 0:
		return 0
	case a <= 0:
		return 1
	case b <= 0:
		return -1
	case a < b:
		return -1
	}
	return 1
}

// agedCompare orders two jobs by effective priority p + wait/tau at any
// common time: a goes first (−1) when pa·tau − ta > pb·tau − tb, that is
// when (pa−pb)·tau > ta−tb. The order does not depend on the time it is
// evaluated at, so the index never needs re-sorting. The product is taken
// in 128 bits, so no priorities or intervals overflow.
func agedCompare(pa, pb int32, ta, tb time.Time, tau time.Duration) int {
	dp := int64(pa) - int64(pb)
	dt := int64(ta.Sub(tb)) // saturates at ±292 years
	neg := dp < 0
	m := uint64(dp)
	if neg {
		m = uint64(-dp)
	}
	hi, lo := bits.Mul64(m, uint64(tau))
	// lhs = ±(hi:lo); compare with dt.
	switch {
	case !neg && dt < 0:
		return -1 // lhs ≥ 0 > dt
	case !neg:
		if hi > 0 || lo > uint64(dt) {
			return -1
		}
		if lo == uint64(dt) {
			return 0
		}
		return 1
	case dt >= 0: // lhs ≤ 0 ≤ dt
		if hi == 0 && lo == 0 && dt == 0 {
			return 0
		}
		return 1
	default: // lhs = −(hi:lo) vs dt < 0: lhs > dt ⇔ (hi:lo) < −dt
		ndt := uint64(^dt) + 1
		if hi == 0 && lo < ndt {
			return -1
		}
		if hi == 0 && lo == ndt {
			return 0
		}
		return 1
	}
}

// EffectivePriority returns e's priority as the leaf orders it at time
// now: its priority, plus under PriorityAging the waiting time over the
// aging interval.
func (l *Leaf) EffectivePriority(e *Entry, now time.Time) float64 {
	p := float64(e.Priority)
	if l.policy.Ordering == PriorityAging && now.After(e.Submitted) {
		p += float64(now.Sub(e.Submitted)) / float64(l.policy.AgingInterval)
	}
	if math.IsInf(p, 0) {
		return math.MaxFloat64
	}
	return p
}

// Cursor walks one leaf's pending jobs for one scheduling cycle in queue
// order, class by class: Peek shows the next candidate; after deciding on
// it the caller calls Advance (the job was admitted, or only this job is
// out for the cycle), DropClass (no job of its class can be admitted this
// cycle) or Stop (nothing more from this queue this cycle). A leaf has one
// cursor; Begin resets it. While a cursor is active, Remove keeps empty
// classes until End.
type Cursor struct {
	leaf   *Leaf
	heap   classHeap
	active bool
}

// Begin starts a cycle over the leaf and returns its cursor.
// O(classes log classes).
func (l *Leaf) Begin() *Cursor {
	c := &l.cur
	c.leaf = l
	c.active = true
	c.heap = classHeap{leaf: l, items: c.heap.items[:0]}
	for _, cl := range l.list {
		cl.after = nil
		cl.head, _ = cl.jobs.Min()
		if cl.head != nil {
			cl.headKey = keyOf(cl.head)
			c.heap.items = append(c.heap.items, cl)
		}
	}
	heap.Init(&c.heap)
	l.tree.invalidate(l.id)
	return c
}

// End finishes the cycle, dropping classes that became empty.
func (c *Cursor) End() {
	c.active = false
	l := c.leaf
	for i := 0; i < len(l.list); {
		if cl := l.list[i]; cl.jobs.Len() == 0 {
			l.dropClass(cl)
			continue
		}
		i++
	}
	c.heap.items = c.heap.items[:0]
	l.tree.invalidate(l.id)
}

// Peek returns the next candidate, or false when the cycle is done with
// this leaf.
func (c *Cursor) Peek() (*Entry, bool) {
	if len(c.heap.items) == 0 {
		return nil, false
	}
	return c.heap.items[0].head, true
}

// Advance moves past the current candidate within its class.
func (c *Cursor) Advance() {
	if len(c.heap.items) == 0 {
		return
	}
	c.leaf.tree.invalidate(c.leaf.id)
	cl := c.heap.items[0]
	cl.after = cl.head
	cl.head = nil
	// Mostly the candidate was admitted (removed) and was its class's
	// first: then the class's first is the next, found without a search.
	// (headKey is still the candidate's.)
	if m, ok := cl.jobs.Min(); ok {
		if mk := keyOf(m); c.leaf.lessKey(&cl.headKey, &mk) {
			cl.head, cl.headKey = m, mk
			heap.Fix(&c.heap, 0)
			return
		}
	}
	cl.jobs.AscendGreaterOrEqual(cl.after, func(e *Entry) bool {
		if e == cl.after {
			return true
		}
		cl.head, cl.headKey = e, keyOf(e)
		return false
	})
	if cl.head == nil {
		heap.Pop(&c.heap)
		return
	}
	heap.Fix(&c.heap, 0)
}

// DropClass removes the current candidate's class from the cycle.
func (c *Cursor) DropClass() {
	if len(c.heap.items) > 0 {
		heap.Pop(&c.heap)
	}
	c.leaf.tree.invalidate(c.leaf.id)
}

// Stop ends the cycle for this leaf: Peek reports nothing more.
func (c *Cursor) Stop() {
	c.heap.items = c.heap.items[:0]
	c.leaf.tree.invalidate(c.leaf.id)
}

// classHeap orders a leaf's classes in a cycle by their heads, as the
// leaf orders them (by the heads' keys: Class.headKey).
type classHeap struct {
	items []*Class
	leaf  *Leaf
}

func (h *classHeap) Len() int { return len(h.items) }
func (h *classHeap) Less(i, j int) bool {
	return h.leaf.lessKey(&h.items[i].headKey, &h.items[j].headKey)
}
func (h *classHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *classHeap) Push(x any)    { h.items = append(h.items, x.(*Class)) }
func (h *classHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
