package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestEngineOrder(t *testing.T) {
	e := NewEngine()
	var got []string
	rec := func(s string) func(time.Duration) { return func(time.Duration) { got = append(got, s) } }
	e.Schedule(2, rec("b1"))
	e.Schedule(1, rec("a"))
	e.Schedule(2, rec("b2")) // same time: after b1 (sequence order)
	id := e.Schedule(3, rec("canceled"))
	e.Schedule(4, func(now time.Duration) {
		got = append(got, "d")
		e.Schedule(now, rec("d-same-time")) // at Now: fires after the current event
	})
	if !e.Cancel(id) || e.Cancel(id) {
		t.Fatal("Cancel should succeed once")
	}
	if e.Len() != 4 {
		t.Fatalf("Len = %d, want 4", e.Len())
	}
	if n := e.RunUntil(2); n != 3 || e.Now() != 2 {
		t.Fatalf("RunUntil(2) fired %d, now %v", n, e.Now())
	}
	e.Run()
	want := []string{"a", "b1", "b2", "d", "d-same-time"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if e.Cancel(0) || e.Cancel(EventID(1<<40)) {
		t.Fatal("canceling unknown IDs must fail")
	}
	if e.RunUntil(100); e.Now() != 100 {
		t.Fatalf("RunUntil past the last event should advance Now, got %v", e.Now())
	}
}

func TestEnginePastPanics(t *testing.T) {
	e := NewEngine()
	e.RunUntil(10)
	defer func() {
		if recover() == nil {
			t.Fatal("scheduling in the past should panic")
		}
	}()
	e.Schedule(5, func(time.Duration) {})
}

// TestEngineOracle checks the heap against a naive oracle: a sorted list of
// (time, seq) pairs with cancellations removed.
func TestEngineOracle(t *testing.T) {
	defer func(l uint32) { seqLimit = l }(seqLimit)
	rapid.Check(t, func(t *rapid.T) {
		// A low limit on sequence numbers makes the engine renumber its
		// pending events often, inside callbacks too.
		seqLimit = rapid.SampledFrom([]uint32{1<<32 - 1, 7, 60, 150}).Draw(t, "seq-limit")
		e := NewEngine()
		type ev struct {
			at  time.Duration
			seq int
			id  EventID
		}
		var pending []ev
		var fired []int
		seq := 0
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		for range ops {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				at := e.Now() + time.Duration(rapid.IntRange(0, 20).Draw(t, "dt"))
				s := seq
				seq++
				id := e.Schedule(at, func(time.Duration) { fired = append(fired, s) })
				pending = append(pending, ev{at, s, id})
			case 2:
				if len(pending) > 0 {
					i := rapid.IntRange(0, len(pending)-1).Draw(t, "victim")
					if !e.Cancel(pending[i].id) {
						t.Fatalf("cancel of pending event failed")
					}
					pending = slices.Delete(pending, i, i+1)
				}
			case 3:
				slices.SortFunc(pending, func(a, b ev) int {
					if a.at != b.at {
						return cmp.Compare(a.at, b.at)
					}
					return a.seq - b.seq
				})
				if len(pending) > 0 {
					fired = fired[:0]
					if !e.Step() {
						t.Fatal("Step found nothing")
					}
					if len(fired) != 1 || fired[0] != pending[0].seq {
						t.Fatalf("fired %v, want %d", fired, pending[0].seq)
					}
					pending = pending[1:]
				}
			}
			if e.Len() != len(pending) {
				t.Fatalf("Len %d, oracle %d", e.Len(), len(pending))
			}
		}
	})
}

func TestEngineCompaction(t *testing.T) {
	e := NewEngine()
	var ids []EventID
	for i := range 1000 {
		ids = append(ids, e.Schedule(time.Duration(i), func(time.Duration) {}))
	}
	for _, id := range ids[:900] {
		e.Cancel(id)
	}
	if len(e.heap) >= 1000 {
		t.Fatalf("heap not compacted: %d entries", len(e.heap))
	}
	if n := e.Run(); n != 100 {
		t.Fatalf("fired %d, want 100", n)
	}
}

func noop(time.Duration) {}

// BenchmarkEngineNoop schedules and fires no-op events, 4,096 pending at a
// time at random times, and reports events per second.
func BenchmarkEngineNoop(b *testing.B) {
	e := NewEngine()
	rng := rand.New(rand.NewPCG(1, 2))
	const window = 4096
	offs := make([]time.Duration, window)
	for i := range offs {
		offs[i] = time.Duration(rng.IntN(1_000_000))
	}
	for i := range window {
		e.Schedule(offs[i], noop)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		e.Step()
		e.Schedule(e.Now()+offs[i%window], noop)
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if e.Fired() != uint64(b.N) {
		b.Fatalf("fired %d, want %d", e.Fired(), b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if cpu > 0 {
		// On a shared machine wall time includes waiting for a core; the
		// process's own CPU time does not.
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "events/cpu-s")
	}
}

// cpuTime returns the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEngineBulk schedules b.N no-op events up front and runs them.
func BenchmarkEngineBulk(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ats := make([]time.Duration, b.N)
	for i := range ats {
		ats[i] = time.Duration(rng.IntN(1 << 30))
	}
	e := NewEngine()
	b.ReportAllocs()
	b.ResetTimer()
	for _, at := range ats {
		e.Schedule(at, noop)
	}
	if n := e.Run(); n != b.N {
		b.Fatalf("fired %d", n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestEngineOracleReentrant checks the engine against a naive oracle (a
// list of pending (time, seq) pairs, the least fired first) under random
// sequences of Schedule, Cancel, Step, Peek and RunUntil, where fired
// callbacks themselves schedule and cancel events: the fired entry left at
// the top of the heap (replaced by the next push, removed before anything
// else) must never fire again, shadow a due event or count as pending; and
// renumbering the pending events when sequence numbers run out must keep
// their order, ties included.
func TestEngineOracleReentrant(t *testing.T) {
	defer func(l uint32) { seqLimit = l }(seqLimit)
	rapid.Check(t, func(t *rapid.T) {
		// A low limit on sequence numbers makes the engine renumber its
		// pending events often, inside callbacks too.
		seqLimit = rapid.SampledFrom([]uint32{1<<32 - 1, 7, 60, 150}).Draw(t, "seq-limit")
		e := NewEngine()
		type ev struct {
			at  time.Duration
			seq int
			id  EventID
		}
		var pending []ev
		var fired []int
		seq := 0
		first := func() int { // index of the least pending event
			best := -1
			for i, p := range pending {
				if best < 0 || p.at < pending[best].at || (p.at == pending[best].at && p.seq < pending[best].seq) {
					best = i
				}
			}
			return best
		}
		var schedule func(at time.Duration, depth int)
		cancelOne := func(i int) {
			if !e.Cancel(pending[i].id) {
				t.Fatalf("cancel of pending event %d failed", pending[i].seq)
			}
			if e.Cancel(pending[i].id) {
				t.Fatalf("second cancel of %d succeeded", pending[i].seq)
			}
			pending = slices.Delete(pending, i, i+1)
		}
		// massCancel cancels up to 80 pending events, newest first: the
		// Engine compacts its heap when canceled entries pass 64 and half
		// of it — inside a callback, while the fired entry still sits at
		// the top of the heap.
		massCancel := func() {
			for k := 0; k < 80 && len(pending) > 0; k++ {
				cancelOne(len(pending) - 1)
			}
		}
		// Each callback draws what it does when it fires: schedule 0-2
		// events (ahead, or at now), cancel one pending event, peek.
		schedule = func(at time.Duration, depth int) {
			s := seq
			seq++
			nSched := rapid.IntRange(0, 2).Draw(t, "inner-schedules")
			doCancel := rapid.Bool().Draw(t, "inner-cancel")
			doPeek := rapid.Bool().Draw(t, "inner-peek")
			// Rarely, cancel enough events to compact the heap while the
			// fired entry is still at its top.
			doMass := rapid.IntRange(0, 9).Draw(t, "inner-mass") == 0
			var dts []int
			for range nSched {
				dts = append(dts, rapid.IntRange(0, 10).Draw(t, "inner-dt"))
			}
			id := e.Schedule(at, func(now time.Duration) {
				fired = append(fired, s)
				if depth >= 3 {
					return
				}
				if doMass {
					massCancel()
				}
				for _, dt := range dts {
					schedule(now+time.Duration(dt), depth+1)
				}
				if doCancel && len(pending) > 0 {
					cancelOne(len(pending) - 1)
				}
				if doPeek {
					at, ok := e.Peek()
					if i := first(); ok != (i >= 0) || (ok && at != pending[i].at) {
						t.Fatalf("Peek inside a callback = %v %v, oracle index %d", at, ok, i)
					}
				}
			})
			pending = append(pending, ev{at, s, id})
		}
		// fire pops the oracle's least event and checks the engine fired
		// it first (the callbacks then fire nothing else: they only
		// schedule).
		expectStep := func() {
			i := first()
			want := pending[i]
			pending = slices.Delete(pending, i, i+1)
			fired = fired[:0]
			if !e.Step() {
				t.Fatal("Step found nothing")
			}
			if len(fired) != 1 || fired[0] != want.seq {
				t.Fatalf("fired %v, want %d", fired, want.seq)
			}
			if e.Now() != want.at {
				t.Fatalf("Now %v, want %v", e.Now(), want.at)
			}
		}
		ops := rapid.IntRange(1, 200).Draw(t, "ops")
		for range ops {
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0, 1:
				schedule(e.Now()+time.Duration(rapid.IntRange(0, 20).Draw(t, "dt")), 0)
			case 2:
				if len(pending) > 0 {
					cancelOne(rapid.IntRange(0, len(pending)-1).Draw(t, "victim"))
				}
			case 3:
				if len(pending) > 0 {
					expectStep()
				} else if e.Step() {
					t.Fatal("Step fired with nothing pending")
				}
			case 4:
				at, ok := e.Peek()
				if i := first(); ok != (i >= 0) || (ok && at != pending[i].at) {
					t.Fatalf("Peek = %v %v, oracle index %d", at, ok, i)
				}
			case 5:
				// A batch to cancel: 80 events ahead, callbacks inert.
				for range 80 {
					schedule(e.Now()+time.Duration(rapid.IntRange(0, 30).Draw(t, "batch-dt")), 3)
				}
			case 6:
				until := e.Now() + time.Duration(rapid.IntRange(0, 15).Draw(t, "until"))
				for {
					i := first()
					if i < 0 || pending[i].at > until {
						break
					}
					expectStep()
				}
				if n := e.RunUntil(until); n != 0 {
					t.Fatalf("RunUntil fired %d events the oracle had fired already", n)
				}
				if e.Now() != until {
					t.Fatalf("Now %v after RunUntil(%v)", e.Now(), until)
				}
			}
			if e.Len() != len(pending) {
				t.Fatalf("Len %d, oracle %d", e.Len(), len(pending))
			}
		}
		// Drain: everything left fires in oracle order.
		for len(pending) > 0 {
			expectStep()
		}
		if e.Step() {
			t.Fatal("Step fired after the oracle drained")
		}
	})
}
