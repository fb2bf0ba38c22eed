package sim

import (
	"fmt"
	"time"
)

// EventID names a scheduled event so that it can be canceled. The zero
// EventID names no event.
type EventID uint64

// Engine is a discrete-event loop: events wait in a binary heap ordered by
// (time, sequence number), so two events due at the same time fire in the
// order they were scheduled, and the same schedule always replays the same
// way. It starts no goroutines and never reads the clock; time is the
// simulated offset from zero.
//
// Scheduling and firing an event allocate nothing once the engine has grown
// (closures the caller builds may allocate). Canceled events are dropped
// lazily when they reach the top of the heap, and compacted away when they
// make up more than half of it.
//
// An Engine is not safe for concurrent use.
type Engine struct {
	now      time.Duration
	seq      uint64
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

type entry struct {
	at   time.Duration
	seq  uint64
	slot int32
	gen  uint32
}

type slot struct {
	fn  func(now time.Duration)
	gen uint32
}

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
	sl := &e.slots[s]
	sl.fn = fn
	e.seq++
	e.push(entry{at: at, seq: e.seq, slot: s, gen: sl.gen})
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
		if sl.gen != top.gen || sl.fn == nil {
			e.pop()
			e.canceled--
			continue
		}
		fn := sl.fn
		e.release(top.slot)
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
		if sl.gen == top.gen && sl.fn != nil {
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

// push adds x to the heap: into the hole a fired event left at the top if
// there is one (replace-top, one sift down), else at the end (sift up).
func (e *Engine) push(x entry) {
	if e.hole {
		e.hole = false
		e.fill(x)
		return
	}
	e.heap = append(e.heap, x)
	e.up(len(e.heap)-1, x)
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
// order bottom-up: the vacancy walks down to a leaf along the smaller
// children (one comparison per level), then x sifts up from there. x is
// usually late (the last entry, or an event scheduled ahead of now), so it
// rarely climbs far: about half the comparisons of a classic sift down.
func (e *Engine) fill(x entry) {
	h := e.heap
	n := len(h)
	i := 0
	// Both children exist: pick the smaller without a hard-to-predict
	// branch (ties in time are rare; their sequence decides apart).
	for c := 1; c+1 < n; c = 2*i + 1 {
		l, r := &h[c], &h[c+1]
		d := 0
		if r.at < l.at {
			d = 1
		}
		if r.at == l.at && r.seq < l.seq {
			d = 1
		}
		c += d
		h[i] = h[c]
		i = c
	}
	if c := 2*i + 1; c < n { // a last child alone
		h[i] = h[c]
		i = c
	}
	e.up(i, x)
}

// up places x at index i or above, moving larger parents down.
func (e *Engine) up(i int, x entry) {
	h := e.heap
	for i > 0 {
		p := (i - 1) / 2
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
		if sl.gen == x.gen && sl.fn != nil {
			h = append(h, x)
		}
	}
	e.heap = h
	e.canceled = 0
	e.hole = false
	for i := len(h)/2 - 1; i >= 0; i-- {
		e.down(i)
	}
}

// down sifts the entry at i down (classic, for heapify).
func (e *Engine) down(i int) {
	h := e.heap
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && less(&h[r], &h[c]) {
			c = r
		}
		if !less(&h[c], &x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
