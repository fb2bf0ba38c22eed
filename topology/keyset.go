package topology

// keySet is an ordered set of uint64 keys: the ledger's indexes (hosts by
// free GPUs, domains by free GPUs, shared GPUs by free milli). Keys live in
// sorted chunks of at most chunkMax, every key of a chunk below every key
// of the next, with each chunk's last key in lasts for a binary search:
// a lookup is two binary searches over plain uint64 comparisons, an update
// moves at most a chunk's keys. It replaced a generic B-tree whose
// comparisons were calls through a function value: re-indexing the hosts
// an admission changed was half the placer's time in a cold 100k-GPU
// cycle. Clone copies the keys (O(n)); a Ledger's Clone copies
// O(GPUs + domains) anyway. Not safe for concurrent use, and fn must not
// change the set during an iteration.
type keySet struct {
	chunks [][]uint64 // non-empty, sorted, ascending across chunks
	lasts  []uint64   // lasts[i] is the last key of chunks[i]
	n      int
	back   []uint64 // the array copyFrom carved the chunks from (reused by the next)
}

const chunkMax = 128

// Len returns the number of keys.
func (s *keySet) Len() int { return s.n }

// chunkFor returns the first chunk whose last key is ≥ k (len(chunks) if
// none).
func (s *keySet) chunkFor(k uint64) int { return lowerBound(s.lasts, k) }

// lowerBound returns the first index of a whose key is ≥ k.
func lowerBound(a []uint64, k uint64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Has reports whether k is in the set.
func (s *keySet) Has(k uint64) bool {
	c := s.chunkFor(k)
	if c == len(s.chunks) {
		return false
	}
	ch := s.chunks[c]
	i := lowerBound(ch, k)
	return i < len(ch) && ch[i] == k
}

func newChunk() []uint64 { return make([]uint64, 0, chunkMax+1) }

// ReplaceOrInsert adds k (nothing changes if it is there).
func (s *keySet) ReplaceOrInsert(k uint64) {
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, append(newChunk(), k))
		s.lasts = append(s.lasts, k)
		s.n++
		return
	}
	c := s.chunkFor(k)
	if c == len(s.chunks) {
		c-- // above every key: the last chunk
	}
	ch := s.chunks[c]
	i := lowerBound(ch, k)
	if i < len(ch) && ch[i] == k {
		return
	}
	if cap(ch) == len(ch) { // a chunk from Clone's shared array, or grown
		ch = append(make([]uint64, 0, max(chunkMax+1, len(ch)+1)), ch...)
	}
	ch = ch[:len(ch)+1]
	copy(ch[i+1:], ch[i:])
	ch[i] = k
	s.n++
	if len(ch) <= chunkMax {
		s.chunks[c], s.lasts[c] = ch, ch[len(ch)-1]
		return
	}
	// Split in halves.
	half := len(ch) / 2
	hi := append(newChunk(), ch[half:]...)
	clear(ch[half:])
	ch = ch[:half]
	s.chunks = append(s.chunks, nil)
	copy(s.chunks[c+2:], s.chunks[c+1:])
	s.chunks[c], s.chunks[c+1] = ch, hi
	s.lasts = append(s.lasts, 0)
	copy(s.lasts[c+2:], s.lasts[c+1:])
	s.lasts[c], s.lasts[c+1] = ch[len(ch)-1], hi[len(hi)-1]
}

// Delete removes k and reports whether it was there (nothing changes if
// not).
func (s *keySet) Delete(k uint64) (uint64, bool) {
	c := s.chunkFor(k)
	if c == len(s.chunks) {
		return 0, false
	}
	ch := s.chunks[c]
	i := lowerBound(ch, k)
	if i >= len(ch) || ch[i] != k {
		return 0, false
	}
	copy(ch[i:], ch[i+1:])
	ch = ch[:len(ch)-1]
	s.n--
	switch {
	case len(ch) == 0:
		s.chunks = append(s.chunks[:c], s.chunks[c+1:]...)
		s.chunks[len(s.chunks):cap(s.chunks)][0] = nil
		s.lasts = append(s.lasts[:c], s.lasts[c+1:]...)
	case len(ch) < chunkMax/4 && c+1 < len(s.chunks) && len(ch)+len(s.chunks[c+1]) <= chunkMax:
		// Merge with the next chunk, so that chunks stay well filled.
		if cap(ch) < len(ch)+len(s.chunks[c+1]) {
			ch = append(make([]uint64, 0, chunkMax+1), ch...)
		}
		ch = append(ch, s.chunks[c+1]...)
		s.chunks[c], s.lasts[c] = ch, ch[len(ch)-1]
		s.chunks = append(s.chunks[:c+1], s.chunks[c+2:]...)
		s.chunks[len(s.chunks):cap(s.chunks)][0] = nil
		s.lasts = append(s.lasts[:c+1], s.lasts[c+2:]...)
	default:
		s.chunks[c], s.lasts[c] = ch, ch[len(ch)-1]
	}
	return k, true
}

// AscendGreaterOrEqual calls fn for the keys ≥ k in ascending order until
// it returns false.
func (s *keySet) AscendGreaterOrEqual(k uint64, fn func(uint64) bool) {
	c := s.chunkFor(k)
	if c == len(s.chunks) {
		return
	}
	i := lowerBound(s.chunks[c], k)
	for ; c < len(s.chunks); c, i = c+1, 0 {
		for _, x := range s.chunks[c][i:] {
			if !fn(x) {
				return
			}
		}
	}
}

// DescendLessOrEqual calls fn for the keys ≤ k in descending order until
// it returns false.
func (s *keySet) DescendLessOrEqual(k uint64, fn func(uint64) bool) {
	c := s.chunkFor(k)
	i := 0
	if c == len(s.chunks) {
		if c == 0 {
			return
		}
		c--
		i = len(s.chunks[c]) - 1
	} else {
		ch := s.chunks[c]
		i = lowerBound(ch, k)
		if i == len(ch) || ch[i] != k {
			i--
		}
	}
	s.descendFrom(c, i, fn)
}

// Descend calls fn for every key in descending order until it returns
// false.
func (s *keySet) Descend(fn func(uint64) bool) {
	if c := len(s.chunks) - 1; c >= 0 {
		s.descendFrom(c, len(s.chunks[c])-1, fn)
	}
}

// descendFrom walks down from key i of chunk c (i may be -1: the chunk
// before's last).
func (s *keySet) descendFrom(c, i int, fn func(uint64) bool) {
	for c >= 0 {
		ch := s.chunks[c]
		for ; i >= 0; i-- {
			if !fn(ch[i]) {
				return
			}
		}
		if c--; c >= 0 {
			i = len(s.chunks[c]) - 1
		}
	}
}

// Clone returns an independent copy.
func (s *keySet) Clone() *keySet {
	n := &keySet{}
	n.copyFrom(s)
	return n
}

// copyFrom makes s a copy of src: one array holds every chunk, each with
// room for one more key (a chunk that grows past it moves out on its own).
// The array is s's own from its last copyFrom when large enough (only s's
// chunks, all replaced here, point into it), so a ledger that CopyFroms
// again and again allocates nothing once grown.
func (s *keySet) copyFrom(src *keySet) {
	if src == s {
		return
	}
	nc := len(src.chunks)
	need := nc * (chunkMax + 1)
	if cap(s.back) < need {
		s.back = make([]uint64, need+need/4)
	}
	back := s.back[:need]
	if cap(s.chunks) >= nc {
		clear(s.chunks[nc:cap(s.chunks)][:cap(s.chunks)-nc])
		s.chunks = s.chunks[:nc]
	} else {
		s.chunks = make([][]uint64, nc)
	}
	for i, ch := range src.chunks {
		lo := i * (chunkMax + 1)
		s.chunks[i] = back[lo : lo+copy(back[lo:], ch) : lo+chunkMax+1]
	}
	s.lasts = append(s.lasts[:0], src.lasts...)
	s.n = src.n
}
