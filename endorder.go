package gpusched

import "slices"

// endOrder is the holding jobs' order by estimated end (jobTable.ends):
// their endKeys in sorted chunks of at most endChunkMax, every key of a
// chunk before every key of the next, with each chunk's last key in
// lasts for a binary search. Filing or dropping a key is two binary
// searches over keys compared in line, and moves at most a chunk's keys.
// It replaced a generic B-tree whose every comparison was a call through
// a function value: filing each admitted job by its end was a fifteenth
// of a cold 100k-GPU cycle. Keys are ordered by endKey.less and are
// unique in that order (each carries its job's submission sequence).
// Not safe for concurrent use, and fn must not change the order during
// ascend.
type endOrder struct {
	chunks [][]endKey // non-empty, each sorted, ascending across chunks
	lasts  []endKey   // lasts[i] is the last key of chunks[i]
	n      int
	// spare holds the arrays of chunks that were dropped (emptied or
	// taken into the one before), cleared, for the next chunk to reuse:
	// a job's end and a new job's start, merging and splitting chunks,
	// allocate nothing in turn. At most endSpares.
	spare [][]endKey
}

// endChunkMax is the most keys a chunk holds before it splits in two:
// 64 keys of 32 bytes, so that filing a key moves at most 2 KiB.
const endChunkMax = 64

// endSpares is the most dropped chunks an endOrder keeps for reuse.
const endSpares = 8

// newChunk returns an empty chunk with room for endChunkMax+1 keys: a
// spare one if there is one.
func (o *endOrder) newChunk() []endKey {
	n := len(o.spare)
	if n == 0 {
		return make([]endKey, 0, endChunkMax+1)
	}
	ch := o.spare[n-1]
	o.spare[n-1] = nil
	o.spare = o.spare[:n-1]
	return ch
}

// Len returns the number of keys.
func (o *endOrder) Len() int { return o.n }

// keysFrom returns the first index of a whose key is not before k.
func keysFrom(a []endKey, k endKey) int {
	lo, hi := 0, len(a)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m].less(k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insert files k, replacing a key equal to it in the order.
func (o *endOrder) insert(k endKey) {
	if len(o.chunks) == 0 {
		o.chunks = append(o.chunks, append(o.newChunk(), k))
		o.lasts = append(o.lasts, k)
		o.n++
		return
	}
	c := keysFrom(o.lasts, k)
	if c == len(o.chunks) {
		c-- // after every key: the last chunk
	}
	ch := o.chunks[c]
	i := keysFrom(ch, k)
	if i < len(ch) && !k.less(ch[i]) {
		ch[i] = k
		o.lasts[c] = ch[len(ch)-1]
		return
	}
	ch = slices.Insert(ch, i, k) // in place: a chunk has room for one more
	o.n++
	if len(ch) > endChunkMax {
		o.split(c, ch)
		return
	}
	o.chunks[c], o.lasts[c] = ch, ch[len(ch)-1]
}

// split halves chunk c, which has grown to ch: the upper half moves to a
// chunk of its own, after c.
func (o *endOrder) split(c int, ch []endKey) {
	half := len(ch) / 2
	upper := append(o.newChunk(), ch[half:]...)
	clear(ch[half:]) // keeps no job alive
	lower := ch[:half]
	o.chunks[c], o.lasts[c] = lower, lower[half-1]
	o.chunks = slices.Insert(o.chunks, c+1, upper)
	o.lasts = slices.Insert(o.lasts, c+1, upper[len(upper)-1])
}

// delete drops the key equal to k in the order and reports whether there
// was one.
func (o *endOrder) delete(k endKey) bool {
	c := keysFrom(o.lasts, k)
	if c == len(o.chunks) {
		return false
	}
	ch := o.chunks[c]
	i := keysFrom(ch, k)
	if i == len(ch) || k.less(ch[i]) {
		return false
	}
	copy(ch[i:], ch[i+1:])
	ch[len(ch)-1] = endKey{} // keeps no job alive
	ch = ch[:len(ch)-1]
	o.n--
	switch next := c + 1; {
	case len(ch) == 0:
		o.dropChunk(c)
	case len(ch) < endChunkMax/4 && next < len(o.chunks) && len(ch)+len(o.chunks[next]) <= endChunkMax*3/4:
		// Take in the next chunk, so that chunks stay well filled (its
		// keys all follow ch's; ch has room: cap endChunkMax+1). The
		// merged chunk has room for a quarter more before it splits
		// again.
		ch = append(ch, o.chunks[next]...)
		o.chunks[c], o.lasts[c] = ch, ch[len(ch)-1]
		o.dropChunk(next)
	default:
		o.chunks[c], o.lasts[c] = ch, ch[len(ch)-1]
	}
	return true
}

// dropChunk removes chunk c and its last key (slices.Delete clears the
// slots it frees) and keeps its array, cleared, as a spare: none keeps a
// job alive.
func (o *endOrder) dropChunk(c int) {
	if ch := o.chunks[c]; len(o.spare) < endSpares {
		clear(ch)
		o.spare = append(o.spare, ch[:0])
	}
	o.chunks = slices.Delete(o.chunks, c, c+1)
	o.lasts = slices.Delete(o.lasts, c, c+1)
}

// ascend calls fn for every key in order until it returns false.
func (o *endOrder) ascend(fn func(endKey) bool) {
	for _, ch := range o.chunks {
		for _, k := range ch {
			if !fn(k) {
				return
			}
		}
	}
}
