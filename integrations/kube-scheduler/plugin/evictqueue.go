package plugin

import (
	"context"
	"sync"
)

// evictQueue carries out cycles' evictions off the cycle loop: a cycle
// queues its evictions and goes on, and one goroutine marks and evicts
// each cycle's victims in turn (markVictims, evictAll), as the cycle did
// itself before. A reclaiming cycle's evictions took 1–3 s on a loaded
// apiserver (a mark and an eviction per victim pod), and the cycle after
// it, which binds the jobs whose victims are gone, waited for them
// (TestCycleDoesNotWaitForEvictions). A victim being evicted stays
// marked evicting in the host (carryOut), so later cycles wait for its
// pods to go and never plan on its GPUs before; a refusal is reported
// under the host's lock (evictOne), as before.
type evictQueue struct {
	mu      sync.Mutex
	batches [][]eviction
	wake    chan struct{}
	// do carries out one cycle's evictions.
	do func(ctx context.Context, evs []eviction)
}

func newEvictQueue(do func(context.Context, []eviction)) *evictQueue {
	return &evictQueue{wake: make(chan struct{}, 1), do: do}
}

// put queues one cycle's evictions.
func (q *evictQueue) put(evs []eviction) {
	if len(evs) == 0 {
		return
	}
	q.mu.Lock()
	q.batches = append(q.batches, evs)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run carries out the queued evictions, a cycle's after the other, until
// ctx ends.
func (q *evictQueue) run(ctx context.Context) {
	for {
		q.mu.Lock()
		var evs []eviction
		if len(q.batches) > 0 {
			evs = q.batches[0]
			q.batches = q.batches[1:]
		}
		q.mu.Unlock()
		if evs != nil {
			q.do(ctx, evs)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
	}
}
