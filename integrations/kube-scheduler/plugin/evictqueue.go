package plugin

import (
	"context"
	"sync"
)

// cycleQueue carries out cycles' API writes of one kind off the cycle
// loop: a cycle queues its batch and goes on, and one goroutine carries
// out each cycle's batch in turn, in the order the cycles queued them.
//
// Evictions (evictQueue): one goroutine marks and evicts each cycle's
// victims (markVictims, evictAll), as the cycle did itself before. A
// reclaiming cycle's evictions took 1–3 s on a loaded apiserver (a mark
// and an eviction per victim pod), and the cycle after it, which binds
// the jobs whose victims are gone, waited for them
// (TestCycleDoesNotWaitForEvictions). A victim being evicted stays marked
// evicting in the host (carryOut), so later cycles wait for its pods to
// go and never plan on its GPUs before; its pods are asked at most once
// (askedEvictions, evictonce.go); a refusal is reported under the host's
// lock (evictOne), as before.
//
// Gang plans (planQueue): writePlans writes each gang's plan to all its
// members, then lets the gang through (gangplan.go).
type cycleQueue[T any] struct {
	mu      sync.Mutex
	batches [][]T
	running bool // do is running
	wake    chan struct{}
	// do carries out what the cycles queued since it last ran, their
	// batches in order, in one call.
	do func(ctx context.Context, batch []T)
}

// evictQueue carries out cycles' evictions.
type evictQueue = cycleQueue[eviction]

// planQueue writes cycles' gang plans.
type planQueue = cycleQueue[planWrite]

func newCycleQueue[T any](do func(context.Context, []T)) *cycleQueue[T] {
	return &cycleQueue[T]{wake: make(chan struct{}, 1), do: do}
}

func newEvictQueue(do func(context.Context, []eviction)) *evictQueue { return newCycleQueue(do) }

// put queues one cycle's batch.
func (q *cycleQueue[T]) put(batch []T) {
	if len(batch) == 0 {
		return
	}
	q.mu.Lock()
	q.batches = append(q.batches, batch)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run carries out the queued batches until ctx ends: all the cycles'
// batches queued while the previous call ran go in one call, in the order
// they were queued (a reclaim queues a few victims per cycle, every few
// hundred milliseconds; carried out one cycle's after the other, each a
// few rounds of apiWriters round trips, they fell minutes behind at 1,000
// nodes on a loaded apiserver).
func (q *cycleQueue[T]) run(ctx context.Context) {
	for {
		q.mu.Lock()
		var batch []T
		for _, b := range q.batches {
			batch = append(batch, b...)
		}
		q.batches = nil
		q.running = batch != nil
		q.mu.Unlock()
		if batch != nil {
			q.do(ctx, batch)
			q.mu.Lock()
			q.running = false
			q.mu.Unlock()
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
	}
}

// start runs q on a goroutine until ctx ends; the function it returns
// waits until that goroutine is done.
func (q *cycleQueue[T]) start(ctx context.Context) (wait func()) {
	done := make(chan struct{})
	go func() { q.run(ctx); close(done) }()
	return func() { <-done }
}

// busy reports whether batches are queued or being carried out.
func (q *cycleQueue[T]) busy() bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running || len(q.batches) > 0
}
