package queue

import (
	"time"

	"github.com/google/btree"
)

// entryKey is an entry's item in an entryIndex: the fields the leaf's
// order compares, copied beside the pointer when the entry is added (they
// do not change while it is queued: see Entry). A search then compares
// keys held in the index's own nodes instead of loading an entry per
// comparison: in a cold scheduling cycle every such load was a cache
// miss, and removing an admitted job from its leaf's three indexes paid
// about thirty of them.
type entryKey struct {
	e         *Entry
	submitted time.Time
	seq       uint64
	runtime   time.Duration
	priority  int32
}

// keyOf returns e's key as its fields are now.
func keyOf(e *Entry) entryKey {
	return entryKey{e: e, submitted: e.Submitted, seq: e.Seq, runtime: e.Runtime, priority: e.Priority}
}

// entryIndex is a btree of queued entries in one order (a leaf's, or by
// runtime estimate then the leaf's). It holds each entry's key as it was
// when inserted; Delete finds an entry by the same key, so an entry's
// ordered fields must not change while it is indexed.
type entryIndex struct {
	t *btree.BTreeG[entryKey]
}

func newEntryIndex(degree int, less func(a, b entryKey) bool) entryIndex {
	return entryIndex{t: btree.NewG(degree, less)}
}

// Len returns the number of entries.
func (x entryIndex) Len() int { return x.t.Len() }

// Min returns the first entry.
func (x entryIndex) Min() (*Entry, bool) {
	k, ok := x.t.Min()
	return k.e, ok
}

// Ascend calls fn for the entries in order until it returns false.
func (x entryIndex) Ascend(fn func(*Entry) bool) {
	x.t.Ascend(func(k entryKey) bool { return fn(k.e) })
}

// AscendGreaterOrEqual calls fn for the entries from pivot's place on
// (pivot itself, if indexed, first) until it returns false.
func (x entryIndex) AscendGreaterOrEqual(pivot *Entry, fn func(*Entry) bool) {
	x.t.AscendGreaterOrEqual(keyOf(pivot), func(k entryKey) bool { return fn(k.e) })
}

// Insert indexes e.
func (x entryIndex) Insert(e *Entry) { x.t.ReplaceOrInsert(keyOf(e)) }

// Delete removes e, which the index holds. The first entry goes without
// comparisons (DeleteMin): the entry a cycle admits is mostly its class's
// first (and in a strict queue the leaf's).
func (x entryIndex) Delete(e *Entry) {
	if m, _ := x.t.Min(); m.e == e {
		x.t.DeleteMin()
		return
	}
	x.t.Delete(keyOf(e))
}

// keyLess orders keys as policy p orders entries (Leaf.less).
func keyLess(p Policy) func(a, b entryKey) bool {
	ord, tau := p.Ordering, p.AgingInterval
	return func(a, b entryKey) bool { return orderLess(ord, tau, &a, &b) }
}

// keyLessByRuntime orders keys by runtime estimate, then as policy p
// orders entries.
func keyLessByRuntime(p Policy) func(a, b entryKey) bool {
	ord, tau := p.Ordering, p.AgingInterval
	return func(a, b entryKey) bool {
		if a.runtime != b.runtime {
			return a.runtime < b.runtime
		}
		return orderLess(ord, tau, &a, &b)
	}
}

// orderLess reports whether a goes before b in a leaf of ordering ord
// (aging interval tau): aged priority (PriorityAging), or priority then
// runtime estimate (ShortestFirst) then submission time; the sequence
// number breaks ties.
func orderLess(ord Ordering, tau time.Duration, a, b *entryKey) bool {
	if ord == PriorityAging {
		if c := agedCompare(a.priority, b.priority, a.submitted, b.submitted, tau); c != 0 {
			return c < 0
		}
	} else {
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if ord == ShortestFirst {
			if c := runtimeCompare(a.runtime, b.runtime); c != 0 {
				return c < 0
			}
		}
		if !a.submitted.Equal(b.submitted) {
			return a.submitted.Before(b.submitted)
		}
	}
	return a.seq < b.seq
}
