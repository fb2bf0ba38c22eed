package queue

import (
	"time"

	"github.com/google/btree"
)

// runtimeIndex orders the entries of one class whose runtime estimate is
// known (Runtime > 0) by (Runtime, leaf order), for Class.AscendRuntime.
// It keeps one entrySet in leaf order per distinct runtime, and the
// runtimes in a B-tree of their own: a cycle admits a class's jobs in
// leaf order, so the entry removed is mostly the first of its runtime and
// goes without comparing entries (entrySet.Delete), where one tree ordered by
// (Runtime, leaf order) searched through entries scattered in memory.
// Add, remove: O(log runtimes + log n). Its methods are the only writers
// of its fields.
type runtimeIndex struct {
	less  func(a, b *Entry) bool
	free  *btree.FreeListG[*Entry] // the leaf's, shared by the per-runtime trees
	byRT  *btree.BTreeG[*runtimeBucket]
	probe runtimeBucket // lookup key (bucket), no allocation per lookup
}

// runtimeBucket is the class's entries of one runtime, in leaf order.
type runtimeBucket struct {
	rt   time.Duration
	jobs entrySet
}

func newRuntimeIndex(less func(a, b *Entry) bool, free *btree.FreeListG[*Entry]) *runtimeIndex {
	return &runtimeIndex{less: less, free: free,
		byRT: btree.NewG(8, func(a, b *runtimeBucket) bool { return a.rt < b.rt })}
}

// bucket returns the bucket of runtime rt, or nil.
func (x *runtimeIndex) bucket(rt time.Duration) *runtimeBucket {
	x.probe.rt = rt
	b, _ := x.byRT.Get(&x.probe)
	return b
}

// add files e (Runtime > 0).
func (x *runtimeIndex) add(e *Entry) {
	b := x.bucket(e.Runtime)
	if b == nil {
		b = &runtimeBucket{rt: e.Runtime, jobs: newEntrySet(x.less, 8, x.free)}
		x.byRT.ReplaceOrInsert(b)
	}
	b.jobs.Insert(e)
}

// remove unfiles e (Runtime > 0, filed); an emptied runtime goes.
func (x *runtimeIndex) remove(e *Entry) {
	b := x.bucket(e.Runtime)
	if b == nil {
		return
	}
	b.jobs.Delete(e)
	if b.jobs.Len() == 0 {
		x.byRT.Delete(b)
	}
}

// ascend calls fn for the entries with Runtime ≤ max, shortest first, then
// in leaf order, until fn returns false.
func (x *runtimeIndex) ascend(max time.Duration, fn func(*Entry) bool) {
	x.byRT.Ascend(func(b *runtimeBucket) bool {
		if b.rt > max {
			return false
		}
		more := true
		b.jobs.Ascend(func(e *Entry) bool {
			more = fn(e)
			return more
		})
		return more
	})
}
