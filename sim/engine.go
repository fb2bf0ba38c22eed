package sim

import (
	"fmt"
	"slices"
	"time"
)

// EventID names a scheduled event so that it can be canceled. The zero
// EventID names no event.
type EventID uint64

// Engine is a discrete-event loop: events wait in a four-ary heap ordered
// by (time, sequence number), so two events due at the same time fire in
// the order they were scheduled, and the same schedule always replays the
// same way. It starts no goroutines and never reads the clock; time is the
// simulated offset from zero.
//
// Scheduling and firing an event allocate nothing once the engine has grown
// (closures the caller builds may allocate). Canceled events are dropped
// lazily when they reach the top of the heap, and compacted away when they
// make up more than half of it.
//
// An Engine is not safe for concurrent use.
type Engine struct {
	now time.Duration
	// seq is the sequence number of the last event scheduled; it counts
	// up to seqLimit, then the pending events are numbered afresh from 1
	// in their order (renumber), which keeps the order of ties.
	seq      uint32
	heap     []entry
	slots    []slot
	free     []int32
	live     int
	canceled int
	fired    uint64
	// hole is set while heap[0] is the entry of the event just fired,
	// not yet removed: the next push replaces it, anything else that
	// reads the heap removes it first (settle).
	hole bool
}

// entry is one scheduled event in the heap: 16 bytes, so that the four
// children of a node fill one 64-byte cache line (the heap's array starts
// three entries before a line's start: see grow). The entry is current
// while its slot holds a function and the same sequence number; a canceled
// event's entry stays until it reaches the top or the heap is compacted.
type entry struct {
	at   time.Duration
	seq  uint32
	slot uint32
}

// slot holds a scheduled event's function. gen names the event in its
// EventID (it changes when the slot is freed); seq is the sequence number
// of the event's heap entry.
type slot struct {
	fn  func(now time.Duration)
	gen uint32
	seq uint32
}

// seqLimit is the last sequence number handed out before the pending
// events are numbered afresh; tests lower it to exercise renumber.
var seqLimit uint32 = 1<<32 - 1

// NewEngine returns an empty engine at time zero.
func NewEngine() *Engine { return &Engine{} }

// Now returns the time of the event being fired, or of the last one fired.
func (e *Engine) Now() time.Duration { return e.now }

// Len returns the number of events scheduled and not yet fired or canceled.
func (e *Engine) Len() int { return e.live }

// Fired returns the number of events fired so far.
func (e *Engine) Fired() uint64 { return e.fired }

// Schedule arranges for fn to run at time at and returns its ID. An event
// scheduled in the past (at < Now) is a programmer error and panics; an
// event at Now fires after those already due at Now. fn must not be nil.
// O(log n).
func (e *Engine) Schedule(at time.Duration, fn func(now time.Duration)) EventID {
	if at < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now (%v)", at, e.now))
	}
	if fn == nil {
		panic("sim: nil event function")
	}
	var s int32
	if n := len(e.free); n > 0 {
		s = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		s = int32(len(e.slots))
		e.slots = append(e.slots, slot{gen: 1})
	}
	if e.seq >= seqLimit {
		e.renumber()
	}
	e.seq++
	sl := &e.slots[s]
	sl.fn = fn
	sl.seq = e.seq
	e.push(entry{at: at, seq: e.seq, slot: uint32(s)})
	e.live++
	return EventID(uint64(s)+1)<<32 | EventID(sl.gen)
}

// After schedules fn to run d after Now; d must not be negative.
func (e *Engine) After(d time.Duration, fn func(now time.Duration)) EventID {
	return e.Schedule(e.now+d, fn)
}

// Cancel removes a scheduled event and reports whether it was still
// pending. Canceling an event that fired, was canceled, or the zero ID
// returns false. O(1) amortised.
func (e *Engine) Cancel(id EventID) bool {
	s := int64(id>>32) - 1
	if s < 0 || s >= int64(len(e.slots)) {
		return false
	}
	sl := &e.slots[s]
	if sl.fn == nil || sl.gen != uint32(id) {
		return false
	}
	e.release(int32(s))
	e.live--
	e.canceled++
	if e.canceled > 64 && e.canceled > len(e.heap)/2 {
		e.compact()
	}
	return true
}

func (e *Engine) release(s int32) {
	sl := &e.slots[s]
	sl.fn = nil
	sl.gen++
	if sl.gen == 0 {
		sl.gen = 1
	}
	e.free = append(e.free, s)
}

// Step fires the next event and reports whether there was one.
//
// The fired entry stays at the top of the heap, marked as a hole, until the
// heap is next used: an event the callback schedules (the common case: a
// job's end schedules its next step) then takes its place with one sift
// instead of a pop and a push.
func (e *Engine) Step() bool {
	e.settle()
	for len(e.heap) > 0 {
		top := e.heap[0]
		sl := &e.slots[top.slot]
		if sl.seq != top.seq || sl.fn == nil {
			e.pop()
			e.canceled--
			continue
		}
		fn := sl.fn
		e.release(int32(top.slot))
		e.live--
		e.now = top.at
		e.fired++
		e.hole = true
		fn(top.at)
		return true
	}
	return false
}

// Peek returns the time of the next pending event.
func (e *Engine) Peek() (time.Duration, bool) {
	e.settle()
	for len(e.heap) > 0 {
		top := e.heap[0]
		sl := &e.slots[top.slot]
		if sl.seq == top.seq && sl.fn != nil {
			return top.at, true
		}
		e.pop()
		e.canceled--
	}
	return 0, false
}

// RunUntil fires every event due at or before t, in order, then sets Now to
// t if it is later, and returns how many events fired. Events scheduled
// while running are fired too when they are due by t.
func (e *Engine) RunUntil(t time.Duration) int {
	n := 0
	for {
		at, ok := e.Peek()
		if !ok || at > t {
			break
		}
		e.Step()
		n++
	}
	if t > e.now {
		e.now = t
	}
	return n
}

// Run fires events until none are left and returns how many fired.
func (e *Engine) Run() int {
	n := 0
	for e.Step() {
		n++
	}
	return n
}

func less(a, b *entry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// The heap is four-ary: the children of entry i are 4i+1 … 4i+4, its
// parent (i-1)/4. Half the levels of a binary heap, and a node's children
// share one cache line.

// push adds x to the heap: into the hole a fired event left at the top if
// there is one (replace-top, one sift down), else at the end (sift up).
func (e *Engine) push(x entry) {
	if e.hole {
		e.hole = false
		e.fill(x)
		return
	}
	if len(e.heap) == cap(e.heap) {
		e.grow()
	}
	e.heap = e.heap[:len(e.heap)+1]
	e.up(len(e.heap)-1, x)
}

// grow doubles the heap's capacity. The array is allocated a power of two
// entries long (at least four), which Go's allocator places on a 64-byte
// boundary, and the heap starts three entries into it, so that each group
// of four siblings, 4i+1 … 4i+4, lies on one cache line.
func (e *Engine) grow() {
	n := 4
	for n-3 <= len(e.heap) {
		n *= 2
	}
	h := make([]entry, n)[3:][:len(e.heap)]
	copy(h, e.heap)
	e.heap = h
}

// settle removes the fired entry left at the top, if any.
func (e *Engine) settle() {
	if e.hole {
		e.hole = false
		e.pop()
	}
}

// pop removes the top entry.
func (e *Engine) pop() {
	h := e.heap
	n := len(h) - 1
	x := h[n]
	e.heap = h[:n]
	if n > 0 {
		e.fill(x)
	}
}

// fill puts x at the top in place of the entry there, restoring the heap
// order bottom-up: the vacancy walks down to a leaf along the least
// children, then x sifts up from there. x is usually late (the last entry,
// or an event scheduled ahead of now), so it rarely climbs far.
func (e *Engine) fill(x entry) {
	h := e.heap
	n := len(h)
	i := 0
	// All four children exist: the least of each pair by time, then of
	// the two pairs, held in registers and picked without branches; a tie
	// in time (rare) takes the exact comparison.
	for c := 1; c+3 < n; c = 4*i + 1 {
		g := h[c : c+4 : c+4]
		t0, t1, t2, t3 := g[0].at, g[1].at, g[2].at, g[3].at
		d01, d23 := b2i(t1 < t0), b2i(t3 < t2)
		m, q := min(t0, t1), min(t2, t3)
		d := b2i(q < m)
		j := d01 ^ ((d01 ^ (2 + d23)) & -d)
		if b2i(t0 == t1)|b2i(t2 == t3)|b2i(q == m) != 0 {
			j = least4(g)
		}
		h[i] = g[j&3]
		i = c + j
	}
	if c := 4*i + 1; c < n { // a last group of one to three children
		m := c
		for k := c + 1; k < n; k++ {
			if less(&h[k], &h[m]) {
				m = k
			}
		}
		h[i] = h[m]
		i = m
	}
	e.up(i, x)
}

// b2i returns 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	i := 0
	if b {
		i = 1
	}
	return i
}

// least4 returns the index of the least of four entries, in full order.
func least4(g []entry) int {
	m := 0
	for k := 1; k < 4; k++ {
		if less(&g[k], &g[m]) {
			m = k
		}
	}
	return m
}

// up places x at index i or above, moving larger parents down.
func (e *Engine) up(i int, x entry) {
	h := e.heap
	for i > 0 {
		p := (i - 1) / 4
		if !less(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// compact drops canceled entries (and a fired one left at the top) and
// re-heapifies. O(n).
func (e *Engine) compact() {
	h := e.heap[:0]
	for _, x := range e.heap {
		sl := &e.slots[x.slot]
		if sl.seq == x.seq && sl.fn != nil {
			h = append(h, x)
		}
	}
	e.heap = h
	e.canceled = 0
	e.hole = false
	if len(h) > 1 {
		for i := (len(h) - 2) / 4; i >= 0; i-- {
			e.down(i)
		}
	}
}

// renumber compacts the heap and numbers the pending events afresh, 1 … n
// in their order, so that sequence numbers never wrap (once in four
// billion events). The heap stays a heap: a sorted array is one.
func (e *Engine) renumber() {
	e.compact()
	h := e.heap
	slices.SortFunc(h, func(a, b entry) int {
		if less(&a, &b) {
			return -1
		}
		return 1
	})
	for i := range h {
		h[i].seq = uint32(i + 1)
		e.slots[h[i].slot].seq = uint32(i + 1)
	}
	e.seq = uint32(len(h))
}

// down sifts the entry at i down (classic, for heapify).
func (e *Engine) down(i int) {
	h := e.heap
	n := len(h)
	x := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if less(&h[k], &h[m]) {
				m = k
			}
		}
		if !less(&h[m], &x) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
