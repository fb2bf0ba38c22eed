package plugin

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// cycleTrace measures what a scheduler-mode cycle waits on, for the
// cycle's log line (V(4)): how long after an eviction the victim's
// deletion reached the informer, and how long after its activation a pod
// reached kube's PreFilter and was seen bound. It keeps the time of each
// eviction and activation until the pod's deletion or binding is seen,
// and the lags seen since the last cycle's line. Its own mutex guards it:
// informer handlers and extension points call it.
type cycleTrace struct {
	mu        sync.Mutex
	evicted   map[types.UID]time.Time
	activated map[types.UID]time.Time
	filtered  map[types.UID]bool
	// Lags since the last take: eviction to deletion, activation to
	// PreFilter, activation to binding.
	deleted, prefilter, bound lagStat
}

// lagStat counts lags with their mean and maximum.
type lagStat struct {
	n        int
	sum, max time.Duration
}

func (s *lagStat) add(d time.Duration) {
	s.n++
	s.sum += d
	s.max = max(s.max, d)
}

// mean is the mean lag, rounded to the millisecond (0 when none).
func (s lagStat) mean() time.Duration {
	if s.n == 0 {
		return 0
	}
	return (s.sum / time.Duration(s.n)).Round(time.Millisecond)
}

// kv is the stat as log values under name: the count, mean and maximum.
func (s lagStat) kv(name string) []any {
	return []any{name, s.n, name + "Mean", s.mean(), name + "Max", s.max.Round(time.Millisecond)}
}

func newCycleTrace() *cycleTrace {
	return &cycleTrace{evicted: map[types.UID]time.Time{}, activated: map[types.UID]time.Time{}, filtered: map[types.UID]bool{}}
}

// evict notes that uid's eviction was accepted at t.
func (c *cycleTrace) evict(uid types.UID, t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.evicted[uid] = t
	c.mu.Unlock()
}

// activate notes that uids were activated at t.
func (c *cycleTrace) activate(uids []types.UID, t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	for _, uid := range uids {
		c.activated[uid] = t
		delete(c.filtered, uid)
	}
	c.mu.Unlock()
}

// preFilter notes that uid reached PreFilter at t (its first time since
// its activation counts).
func (c *cycleTrace) preFilter(uid types.UID, t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if at, ok := c.activated[uid]; ok && !c.filtered[uid] {
		c.filtered[uid] = true
		c.prefilter.add(t.Sub(at))
	}
	c.mu.Unlock()
}

// bind notes that the informer saw uid bound at t.
func (c *cycleTrace) bind(uid types.UID, t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if at, ok := c.activated[uid]; ok {
		c.bound.add(t.Sub(at))
		delete(c.activated, uid)
		delete(c.filtered, uid)
	}
	c.mu.Unlock()
}

// gone notes that the informer saw uid deleted at t.
func (c *cycleTrace) gone(uid types.UID, t time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if at, ok := c.evicted[uid]; ok {
		c.deleted.add(t.Sub(at))
	}
	delete(c.evicted, uid)
	delete(c.activated, uid)
	delete(c.filtered, uid)
	c.mu.Unlock()
}

// take returns the lags seen since the last take as log values, and
// starts counting anew.
func (c *cycleTrace) take() []any {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kv := append(append(c.deleted.kv("victimsGone"), c.prefilter.kv("toPreFilter")...), c.bound.kv("toBound")...)
	c.deleted, c.prefilter, c.bound = lagStat{}, lagStat{}, lagStat{}
	return kv
}
