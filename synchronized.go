package gpusched

import (
	"sync"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Synchronized is a Scheduler that several goroutines may use at once: a
// service whose API handlers report events and answer queries while its
// loop runs Schedule. Calls that change the Scheduler (the events,
// Schedule, the health setters, the live changes — Cordon, Uncordon,
// AddHosts, RemoveHosts, SetHostGPUs, SetDomainHealth, Reconfigure —,
// SetHostFilter, ForgetEnded, Write) are serialised under a
// sync.RWMutex's write lock; the reads (Job, Holding, Len, Now, Progress,
// Queues, Tombstones, Config) run concurrently with each other under its
// read lock; Read, which hands out the live views (Ledger, Tree), and
// State run alone. Everything it hands
// out is the caller's (a Decision, a JobStatus and its copies), so it
// may be kept and used after the call without the lock.
//
// A Scheduler decides the same whichever goroutine calls it; the order of
// the calls is what makes the Decisions, so a host that must replay them
// logs the calls in the order they returned. Callbacks run under a lock:
// Read's and Write's fn must not call the Synchronized (a deadlock), and
// changes from inside Read's fn are refused (ErrReentrant). Holding's fn
// runs after the lock is released, and may call anything.
type Synchronized struct {
	mu sync.RWMutex
	s  *Scheduler
}

// Synchronize wraps s. From then on, s must be used only through the
// returned Synchronized (or inside its Read and Write).
func Synchronize(s *Scheduler) *Synchronized { return &Synchronized{s: s} }

// write runs fn under the write lock.
func write[T any](x *Synchronized, fn func(s *Scheduler) T) T {
	x.mu.Lock()
	defer x.mu.Unlock()
	return fn(x.s)
}

// read runs fn under the read lock.
func read[T any](x *Synchronized, fn func(s *Scheduler) T) T {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return fn(x.s)
}

// Write runs fn with the Scheduler under the write lock, for what the
// Synchronized does not wrap (the Restore calls), or for several calls
// that no other may come between: no other call runs meanwhile. fn must
// not call the Synchronized.
func (x *Synchronized) Write(fn func(s *Scheduler) error) error { return write(x, fn) }

// Read runs fn with the Scheduler, for reads the Synchronized does not
// wrap (Ledger, Tree, Reservations, …). It runs alone, under the write
// lock: the ledger's queries bring its lazy indexes up to date, so two
// of them may not run at once. fn must only read (a change returns
// ErrReentrant), keep nothing the Scheduler hands out as a view (Ledger
// and Tree are live: use them inside fn only), and not call the
// Synchronized.
func (x *Synchronized) Read(fn func(s *Scheduler)) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.s.cb.enter()
	defer x.s.cb.leave()
	fn(x.s)
}

// Schedule runs a cycle (Scheduler.Schedule) under the write lock.
func (x *Synchronized) Schedule(now time.Time) Decision {
	return write(x, func(s *Scheduler) Decision { return s.Schedule(now) })
}

// Recycle is Scheduler.Recycle under the write lock: once no goroutine
// reads d any more, a later cycle may reuse its Pending array.
func (x *Synchronized) Recycle(d Decision) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.s.Recycle(d)
}

// Submit is Scheduler.Submit under the write lock.
func (x *Synchronized) Submit(spec workload.Job, now time.Time) error {
	return write(x, func(s *Scheduler) error { return s.Submit(spec, now) })
}

// event runs a job's event under the write lock.
func (x *Synchronized) event(ev func(s *Scheduler, id string, now time.Time) error, id string, now time.Time) error {
	return write(x, func(s *Scheduler) error { return ev(s, id, now) })
}

// Started is Scheduler.Started under the write lock.
func (x *Synchronized) Started(id string, now time.Time) error {
	return x.event((*Scheduler).Started, id, now)
}

// Finished is Scheduler.Finished under the write lock.
func (x *Synchronized) Finished(id string, now time.Time) error {
	return x.event((*Scheduler).Finished, id, now)
}

// Failed is Scheduler.Failed under the write lock.
func (x *Synchronized) Failed(id string, now time.Time) error {
	return x.event((*Scheduler).Failed, id, now)
}

// Cancel is Scheduler.Cancel under the write lock.
func (x *Synchronized) Cancel(id string, now time.Time) error {
	return x.event((*Scheduler).Cancel, id, now)
}

// Requeue is Scheduler.Requeue under the write lock.
func (x *Synchronized) Requeue(id string, now time.Time) error {
	return x.event((*Scheduler).Requeue, id, now)
}

// Preempted is Scheduler.Preempted under the write lock.
func (x *Synchronized) Preempted(id string, now time.Time) error {
	return x.event((*Scheduler).Preempted, id, now)
}

// Migrated is Scheduler.Migrated under the write lock.
func (x *Synchronized) Migrated(id string, now time.Time) error {
	return x.event((*Scheduler).Migrated, id, now)
}

// Shrunk is Scheduler.Shrunk under the write lock.
func (x *Synchronized) Shrunk(id string, now time.Time) error {
	return x.event((*Scheduler).Shrunk, id, now)
}

// Grown is Scheduler.Grown under the write lock.
func (x *Synchronized) Grown(id string, now time.Time) error {
	return x.event((*Scheduler).Grown, id, now)
}

// Checkpointed is Scheduler.Checkpointed under the write lock.
func (x *Synchronized) Checkpointed(id string, at, now time.Time) error {
	return write(x, func(s *Scheduler) error { return s.Checkpointed(id, at, now) })
}

// EvictionRefused is Scheduler.EvictionRefused under the write lock.
func (x *Synchronized) EvictionRefused(victim string, now time.Time, reason string) error {
	return write(x, func(s *Scheduler) error { return s.EvictionRefused(victim, now, reason) })
}

// SetPriority is Scheduler.SetPriority under the write lock.
func (x *Synchronized) SetPriority(id string, p int32) error {
	return write(x, func(s *Scheduler) error { return s.SetPriority(id, p) })
}

// results holds a call's two results.
type results[A, B any] struct {
	a A
	b B
}

// change runs fn, a change that returns the IDs of the jobs it affects,
// under the write lock.
func (x *Synchronized) change(fn func(s *Scheduler) ([]string, error)) ([]string, error) {
	r := write(x, func(s *Scheduler) results[[]string, error] {
		ids, err := fn(s)
		return results[[]string, error]{ids, err}
	})
	return r.a, r.b
}

// SetGPUHealth is Scheduler.SetGPUHealth under the write lock.
func (x *Synchronized) SetGPUHealth(g topology.GPUID, h topology.Health) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.SetGPUHealth(g, h) })
}

// SetHostHealth is Scheduler.SetHostHealth under the write lock.
func (x *Synchronized) SetHostHealth(name string, h topology.Health) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.SetHostHealth(name, h) })
}

// SetDomainHealth is Scheduler.SetDomainHealth under the write lock.
func (x *Synchronized) SetDomainHealth(domain string, h topology.Health) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.SetDomainHealth(domain, h) })
}

// Cordon is Scheduler.Cordon under the write lock.
func (x *Synchronized) Cordon(name string) error {
	return write(x, func(s *Scheduler) error { return s.Cordon(name) })
}

// Uncordon is Scheduler.Uncordon under the write lock.
func (x *Synchronized) Uncordon(name string) error {
	return write(x, func(s *Scheduler) error { return s.Uncordon(name) })
}

// AddHosts is Scheduler.AddHosts under the write lock.
func (x *Synchronized) AddHosts(ch topology.Change, now time.Time) error {
	return write(x, func(s *Scheduler) error { return s.AddHosts(ch, now) })
}

// RemoveHosts is Scheduler.RemoveHosts under the write lock.
func (x *Synchronized) RemoveHosts(names []string, now time.Time) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.RemoveHosts(names, now) })
}

// SetHostGPUs is Scheduler.SetHostGPUs under the write lock.
func (x *Synchronized) SetHostGPUs(name, template string, templates []topology.HostTemplate, now time.Time) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.SetHostGPUs(name, template, templates, now) })
}

// Reconfigure is Scheduler.Reconfigure under the write lock.
func (x *Synchronized) Reconfigure(cfg queue.Config, moves []queue.Move, now time.Time) ([]string, error) {
	return x.change(func(s *Scheduler) ([]string, error) { return s.Reconfigure(cfg, moves, now) })
}

// SetHostFilter is Scheduler.SetHostFilter under the write lock. The
// filter runs during Schedule, under the lock: it must not call the
// Synchronized.
func (x *Synchronized) SetHostFilter(id string, f HostFilter) error {
	return write(x, func(s *Scheduler) error { return s.SetHostFilter(id, f) })
}

// ForgetEnded is Scheduler.ForgetEnded under the write lock.
func (x *Synchronized) ForgetEnded(id string) (bool, error) {
	r := write(x, func(s *Scheduler) results[bool, error] {
		ok, err := s.ForgetEnded(id)
		return results[bool, error]{ok, err}
	})
	return r.a, r.b
}

// State is Scheduler.State, alone under the write lock (it reads the
// ledger, as Read does): what a service saves (package snapshot's
// FromState) while its handlers run.
func (x *Synchronized) State() State { return write(x, (*Scheduler).State) }

// Config is Scheduler.Config under the read lock.
func (x *Synchronized) Config() Config { return read(x, (*Scheduler).Config) }

// Job is Scheduler.Job under the read lock; the status is a deep copy.
func (x *Synchronized) Job(id string) (JobStatus, bool) {
	r := read(x, func(s *Scheduler) results[JobStatus, bool] {
		st, ok := s.Job(id)
		return results[JobStatus, bool]{st, ok}
	})
	return r.a, r.b
}

// Holding is Scheduler.Holding with fn called after the read lock is
// released, on the holding jobs as they were under it: fn may call
// anything, events included. O(holding jobs) copies, whatever fn stops at.
func (x *Synchronized) Holding(fn func(id string, st JobStatus) bool) {
	sts := read(x, func(s *Scheduler) []JobStatus {
		var out []JobStatus
		s.Holding(func(_ string, st JobStatus) bool { out = append(out, st); return true })
		return out
	})
	for _, st := range sts {
		if !fn(st.Spec.ID, st) {
			return
		}
	}
}

// Len is Scheduler.Len under the read lock.
func (x *Synchronized) Len() int { return read(x, (*Scheduler).Len) }

// Now is Scheduler.Now under the read lock.
func (x *Synchronized) Now() time.Time { return read(x, (*Scheduler).Now) }

// Queues is Scheduler.Queues under the read lock.
func (x *Synchronized) Queues() []queue.View { return read(x, (*Scheduler).Queues) }

// Tombstones is Scheduler.Tombstones under the read lock.
func (x *Synchronized) Tombstones() []Tombstone { return read(x, (*Scheduler).Tombstones) }

// progress is Progress's result.
type progress struct {
	cp    time.Time
	saved time.Duration
	ok    bool
}

// Progress is Scheduler.Progress under the read lock.
func (x *Synchronized) Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool) {
	r := read(x, func(s *Scheduler) progress { cp, sv, ok := s.Progress(id); return progress{cp, sv, ok} })
	return r.cp, r.saved, r.ok
}
