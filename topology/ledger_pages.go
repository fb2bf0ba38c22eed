package topology

// Copy-on-write state arrays. A Ledger keeps its per-GPU, per-host and
// per-domain state in pages of pageLen entries that ledgers made by Clone
// and CopyFrom share until one of them writes: the writer copies just that
// page. A reservation's what-if ledger (package gpusched) or a planner's
// scratch copy then costs the page tables plus the pages it changes, not
// the whole state (at 100k GPUs, about 6 MB per copy, most of it the
// counters of 250,000 domains).
//
// Ownership: a page a ledger may write in place is marked mine; sharing a
// page (Clone, CopyFrom) clears the mark on both sides, so neither writes
// it again. Pages are plain values without pointers: the garbage collector
// never scans them.

const (
	pageShift = 7
	pageLen   = 1 << pageShift
	pageMask  = pageLen - 1
	// slabPages is how many pages are allocated at once: a what-if that
	// touches a few hundred scattered hosts copies thousands of pages, and
	// one allocation per page would cost more than the copies.
	slabPages = 32
)

// pages is a copy-on-write array of n values of T indexed by I.
//
// Invariants: len(p) == len(mine) == ceil(n / pageLen); entries at n and
// beyond in the last page are zero; spare is nil or as long as p, and
// spare[i], when set, is a page no other ledger references (kept from an
// earlier copyFrom to be written into instead of allocating).
type pages[I ~int32 | ~int, T any] struct {
	p     []*[pageLen]T
	mine  []bool
	spare []*[pageLen]T
	slab  [][pageLen]T // pages allocated and not used yet (this ledger's)
	n     int
}

// newPages returns n entries of value v, every page owned.
func newPages[I ~int32 | ~int, T any](n int, v T) pages[I, T] {
	var a pages[I, T]
	a.grow(n, v)
	return a
}

// len returns the number of entries.
func (a *pages[I, T]) len() int { return a.n }

// at returns entry i (panics when out of range, as a slice does).
func (a *pages[I, T]) at(i I) T { return a.p[int(i)>>pageShift][int(i)&pageMask] }

// ptr returns entry i for writing: its page is copied first unless it
// is this ledger's alone.
func (a *pages[I, T]) ptr(i I) *T {
	k := int(i) >> pageShift
	if !a.mine[k] {
		a.own(k)
	}
	return &a.p[k][int(i)&pageMask]
}

// set sets entry i to v.
func (a *pages[I, T]) set(i I, v T) { *a.ptr(i) = v }

// own gives this ledger its own copy of page k, in a spare page if one
// is kept.
func (a *pages[I, T]) own(k int) {
	var np *[pageLen]T
	if a.spare != nil && a.spare[k] != nil {
		np, a.spare[k] = a.spare[k], nil
	} else {
		np = a.newPage()
	}
	*np = *a.p[k]
	a.p[k], a.mine[k] = np, true
}

// newPage returns a page from the slab, allocating a slab when it is empty.
func (a *pages[I, T]) newPage() *[pageLen]T {
	if len(a.slab) == 0 {
		a.slab = make([][pageLen]T, slabPages)
	}
	np := &a.slab[0]
	a.slab = a.slab[1:]
	return np
}

// grow appends n entries of value v.
func (a *pages[I, T]) grow(n int, v T) {
	for range n {
		if a.n&pageMask == 0 {
			a.p = append(a.p, a.newPage())
			a.mine = append(a.mine, true)
			if a.spare != nil {
				a.spare = append(a.spare, nil)
			}
		}
		a.set(I(a.n), v)
		a.n++
	}
}

// share returns a copy of a that shares its pages; neither side writes
// them in place from then on. O(pages).
func (a *pages[I, T]) share() pages[I, T] {
	clear(a.mine)
	return pages[I, T]{p: append([]*[pageLen]T(nil), a.p...), mine: make([]bool, len(a.mine)), n: a.n}
}

// copyFrom makes a equal to src by sharing src's pages, keeping the pages
// a owned as spares for its next writes. Both must have the same length.
// O(pages).
func (a *pages[I, T]) copyFrom(src *pages[I, T]) {
	if a.n != src.n {
		panic("topology: copying ledger state of another size")
	}
	clear(src.mine)
	for k, pg := range src.p {
		if a.mine[k] && a.p[k] != pg {
			if a.spare == nil {
				a.spare = make([]*[pageLen]T, len(a.p))
			}
			a.spare[k] = a.p[k]
		}
		a.p[k], a.mine[k] = pg, false
	}
}
