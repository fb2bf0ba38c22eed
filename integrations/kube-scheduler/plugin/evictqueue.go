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
	wake    chan struct{}
	// do carries out one cycle's batch.
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

// run carries out the queued batches, a cycle's after the other, until
// ctx ends.
func (q *cycleQueue[T]) run(ctx context.Context) {
	for {
		q.mu.Lock()
		var batch []T
		if len(q.batches) > 0 {
			batch = q.batches[0]
			q.batches = q.batches[1:]
		}
		q.mu.Unlock()
		if batch != nil {
			q.do(ctx, batch)
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
