package queue

import (
	"sort"

	"github.com/google/btree"
)

// runMax is the most entries an entrySet keeps as a sorted run; one more
// turns it into a B-tree for good.
const runMax = 64

// entrySet is a set of entries ordered by less, as a class's jobs or a
// runtime's (Class, runtimeIndex) hold them: a sorted run while it holds
// at most runMax entries, a B-tree beyond. A cycle mostly removes a set's
// first entry and reads the next: in a run that is one slot of an array,
// where a B-tree's leftmost walk reads three or four cold lines per
// admission (node, items, children, again one level down). Insert and
// Delete of other entries cost O(runMax) moves in a run, O(log n) in a
// tree; Min O(1), O(log n). Its methods are the only writers of its
// fields.
type entrySet struct {
	less func(a, b *Entry) bool
	// run[lo:] are the entries in order while tree is nil (run[:lo] are
	// nil: removed from the front).
	run  []*Entry
	lo   int
	tree *btree.BTreeG[*Entry]
	// degree and free are the tree's, when it is made.
	degree int
	free   *btree.FreeListG[*Entry]
}

func newEntrySet(less func(a, b *Entry) bool, degree int, free *btree.FreeListG[*Entry]) entrySet {
	return entrySet{less: less, degree: degree, free: free}
}

// Len returns the number of entries.
func (s *entrySet) Len() int {
	if s.tree != nil {
		return s.tree.Len()
	}
	return len(s.run) - s.lo
}

// Min returns the first entry, or false when s is empty.
func (s *entrySet) Min() (*Entry, bool) {
	if s.tree != nil {
		return s.tree.Min()
	}
	if s.lo == len(s.run) {
		return nil, false
	}
	return s.run[s.lo], true
}

// search returns the index in run of the first entry not before e.
func (s *entrySet) search(e *Entry) int {
	r := s.run[s.lo:]
	return s.lo + sort.Search(len(r), func(i int) bool { return !s.less(r[i], e) })
}

// Insert adds e, which s does not hold.
func (s *entrySet) Insert(e *Entry) {
	if s.tree == nil && s.Len() >= runMax {
		if s.free != nil {
			s.tree = btree.NewWithFreeListG(s.degree, s.less, s.free)
		} else {
			s.tree = btree.NewG(s.degree, s.less)
		}
		for _, x := range s.run[s.lo:] {
			s.tree.ReplaceOrInsert(x)
		}
		s.run, s.lo = nil, 0
	}
	if s.tree != nil {
		s.tree.ReplaceOrInsert(e)
		return
	}
	if s.lo > 0 { // close the gap at the front first
		n := copy(s.run, s.run[s.lo:])
		clear(s.run[n:])
		s.run, s.lo = s.run[:n], 0
	}
	i := s.search(e)
	s.run = append(s.run, nil)
	copy(s.run[i+1:], s.run[i:])
	s.run[i] = e
}

// Delete removes e if s holds it.
func (s *entrySet) Delete(e *Entry) {
	if s.tree != nil {
		deleteEntry(s.tree, e)
		return
	}
	if s.lo < len(s.run) && s.run[s.lo] == e { // mostly: the first
		s.run[s.lo] = nil
		if s.lo++; s.lo == len(s.run) {
			s.run, s.lo = s.run[:0], 0
		}
		return
	}
	i := s.search(e)
	if i == len(s.run) || s.run[i] != e {
		return
	}
	copy(s.run[i:], s.run[i+1:])
	s.run[len(s.run)-1] = nil
	s.run = s.run[:len(s.run)-1]
}

// Ascend calls fn for the entries in order until it returns false.
func (s *entrySet) Ascend(fn func(*Entry) bool) {
	if s.tree != nil {
		s.tree.Ascend(fn)
		return
	}
	for _, e := range s.run[s.lo:] {
		if !fn(e) {
			return
		}
	}
}

// AscendGreaterOrEqual calls fn for the entries not before pivot, in
// order, until it returns false.
func (s *entrySet) AscendGreaterOrEqual(pivot *Entry, fn func(*Entry) bool) {
	if s.tree != nil {
		s.tree.AscendGreaterOrEqual(pivot, fn)
		return
	}
	for _, e := range s.run[s.search(pivot):] {
		if !fn(e) {
			return
		}
	}
}
