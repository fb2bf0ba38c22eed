package plugin

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// condWriter writes waiting pods' PodScheduled conditions (setPending)
// off the cycle loop: a cycle queues them and goes on. Each pod keeps
// only its latest condition: one the workers have not written yet is
// replaced, not written twice, so a slow apiserver gets fewer patches,
// never a backlog. A pod about to be let through (settle) first waits
// for its condition being written, and loses the one queued, so that no
// PodScheduled False lands after its binding.
//
// The conditions were written inside the cycle, apiWriters at a time: in
// a queue reclaiming its quota, hundreds of waiting pods' reasons change
// every few seconds, and on a loaded apiserver their patches took 3–6 s of
// each cycle, so the jobs whose victims were gone waited that long for
// the next cycle to bind them (TestCycleDoesNotWaitForConditions).
type condWriter struct {
	mu     sync.Mutex
	queued map[types.UID]podEvent
	order  []types.UID // queued's pods, oldest first
	// writing counts the conditions being written per pod; idle is
	// broadcast when one is done.
	writing map[types.UID]int
	idle    *sync.Cond
	wake    chan struct{}
	// write sets one pod's condition; skip says a pod should not be
	// marked pending any more (a later cycle planned it).
	write func(ctx context.Context, e podEvent)
	skip  func(uid types.UID) bool
	// yield says that writes which let pods run (evictions, gang plans)
	// are under way: conditions wait for them (see run); nil: never.
	yield func() bool
	// workers: the goroutines run started (wait).
	workers sync.WaitGroup
}

func newCondWriter(write func(context.Context, podEvent), skip func(types.UID) bool) *condWriter {
	c := &condWriter{queued: map[types.UID]podEvent{}, writing: map[types.UID]int{}, wake: make(chan struct{}, 1), write: write, skip: skip}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// settle drops the conditions queued for pods and waits until none of
// theirs is being written: they are about to be let through.
func (c *condWriter) settle(pods []*v1.Pod) {
	if c == nil || len(pods) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pods {
		delete(c.queued, p.UID)
		for c.writing[p.UID] > 0 {
			c.idle.Wait()
		}
	}
}

// done says that uid's condition taken by next is written (or skipped).
func (c *condWriter) done(uid types.UID) {
	c.mu.Lock()
	if c.writing[uid]--; c.writing[uid] <= 0 {
		delete(c.writing, uid)
	}
	c.mu.Unlock()
	c.idle.Broadcast()
}

// put queues evs, each replacing what its pod had queued.
func (c *condWriter) put(evs []podEvent) {
	if len(evs) == 0 {
		return
	}
	c.mu.Lock()
	for _, e := range evs {
		if _, ok := c.queued[e.pod.UID]; !ok {
			c.order = append(c.order, e.pod.UID)
		}
		c.queued[e.pod.UID] = e
	}
	c.mu.Unlock()
	c.signal()
}

func (c *condWriter) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest queued condition; the caller calls done.
func (c *condWriter) next() (podEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.order) > 0 {
		uid := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.queued[uid]; ok {
			delete(c.queued, uid)
			c.writing[uid]++
			if len(c.order) > 0 {
				c.signal() // another worker may take the next
			}
			return e, true
		}
	}
	c.order = nil
	return podEvent{}, false
}

// run writes queued conditions on workers goroutines until ctx ends
// (wait waits for them to stop). While yield says evictions or gang plans
// are being written, the workers take no condition: on an apiserver that
// paces the cluster, the writes that free and fill GPUs go first. In the
// scale benchmark's reclaim at 1,000 nodes (load average 20–25), the
// conditions of the 100–140 pods waiting for victims were three quarters
// of the scheduler's writes while the victims' evictions fell behind; a
// condition is only a reason shown, and a pod's latest one is written
// once the rush is over.
func (c *condWriter) run(ctx context.Context, workers int) {
	for range workers {
		c.workers.Add(1)
		go func() {
			defer c.workers.Done()
			for {
				if c.yield != nil && c.yield() {
					select {
					case <-ctx.Done():
						return
					case <-time.After(yieldPoll):
					}
					continue
				}
				e, ok := c.next()
				if !ok {
					select {
					case <-ctx.Done():
						return
					case <-c.wake:
					}
					continue
				}
				if ctx.Err() == nil && (c.skip == nil || !c.skip(e.pod.UID)) {
					c.write(ctx, e)
				}
				c.done(e.pod.UID)
			}
		}()
	}
}

// wait waits until the goroutines run started stopped (their ctx ended).
func (c *condWriter) wait() { c.workers.Wait() }

// yieldPoll is how often a condition worker that yields looks again.
const yieldPoll = 25 * time.Millisecond
