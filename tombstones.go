package gpusched

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// ErrAlreadyApplied: the event was applied already, or its job has ended
// since — a redelivered message (Started for a running job, Preempted or
// Requeue for a job already waiting again, any event or a Submit for a job
// remembered as ended). Nothing changes; a host that retries its messages
// can take it as done. It is checked before the event's time, since a
// redelivery carries its first delivery's time.
var ErrAlreadyApplied = errors.New("gpusched: event already applied")

// DefaultMaxTombstones is Config.MaxTombstones's default.
const DefaultMaxTombstones = 10000

// Tombstone is an ended job the Scheduler remembers (Scheduler.Tombstones):
// an event for it is ErrAlreadyApplied, and its ID cannot be submitted
// again while it is remembered.
type Tombstone struct {
	Job   string
	State queue.State // Succeeded, Failed or Cancelled
	At    time.Time   // when it ended
}

// tombstones remembers the last ended jobs, at most max of them, oldest
// forgotten first (a ring, so the order is that of the ends: the same
// events remember the same jobs). Its methods are the only writers of its
// fields. Invariant: len(byID) == len(ring) ≤ max, byID maps each
// entry's ID to its slot, and the entries from next on, then those
// before it, are in the order the jobs ended.
type tombstones struct {
	max  int
	ring []Tombstone
	next int // the slot of the oldest once the ring is full; 0 before
	byID map[string]int
}

// newTombstones remembers up to max ended jobs: 0 means
// DefaultMaxTombstones, negative none.
func newTombstones(max int) tombstones {
	if max == 0 {
		max = DefaultMaxTombstones
	}
	return tombstones{max: max, byID: map[string]int{}}
}

// add remembers t, forgetting the oldest if full. O(1) amortised.
func (x *tombstones) add(t Tombstone) {
	if x.max <= 0 {
		return
	}
	if i, ok := x.byID[t.Job]; ok { // cannot happen (an ID ends once while remembered); keep the entry's place
		x.ring[i] = t
		return
	}
	if len(x.ring) < x.max {
		x.ring = append(x.ring, t)
		x.byID[t.Job] = len(x.ring) - 1
		return
	}
	delete(x.byID, x.ring[x.next].Job)
	x.ring[x.next] = t
	x.byID[t.Job] = x.next
	x.next = (x.next + 1) % x.max
}

// lookup returns the remembered end of job id.
func (x *tombstones) lookup(id string) (Tombstone, bool) {
	i, ok := x.byID[id]
	if !ok {
		return Tombstone{}, false
	}
	return x.ring[i], true
}

// remove forgets id's end, keeping the others in their order. It
// reports whether id was remembered. O(remembered): rare (ForgetEnded).
func (x *tombstones) remove(id string) bool {
	if _, ok := x.byID[id]; !ok {
		return false
	}
	kept := x.list()
	x.ring, x.next = x.ring[:0], 0
	clear(x.byID)
	for _, t := range kept {
		if t.Job != id {
			x.ring = append(x.ring, t)
			x.byID[t.Job] = len(x.ring) - 1
		}
	}
	return true
}

// list returns the remembered ends, oldest first.
func (x *tombstones) list() []Tombstone {
	out := make([]Tombstone, 0, len(x.ring))
	out = append(out, x.ring[x.next:]...)
	return append(out, x.ring[:x.next]...)
}

// Tombstones returns the ended jobs the Scheduler remembers, oldest first
// (at most Config.MaxTombstones): what a saved state carries so that a
// restarted Scheduler refuses their redelivered events and submissions
// as this one does.
func (s *Scheduler) Tombstones() []Tombstone { return s.ended.list() }

// RestoreTombstone remembers an ended job, for a Scheduler rebuilt from
// saved state: restore them oldest first (as Tombstones lists them). A
// live job's ID, a state that is not an end, or a zero time is an error,
// and nothing changes.
func (s *Scheduler) RestoreTombstone(t Tombstone) error {
	if err := s.mutating("RestoreTombstone", t.Job); err != nil {
		return err
	}
	defer s.cb.leave()
	if _, live := s.jobs.byID[t.Job]; live {
		return jobErr(t.Job, fmt.Errorf("%w: a live job cannot be remembered as ended", ErrDuplicateJob))
	}
	if t.State != queue.Succeeded && t.State != queue.Failed && t.State != queue.Cancelled {
		return jobErr(t.Job, fmt.Errorf("%w: tombstone state %s is not an end", ErrState, t.State))
	}
	if t.At.IsZero() {
		return jobErr(t.Job, fmt.Errorf("%w: tombstone without its time", ErrState))
	}
	s.ended.add(t)
	return nil
}

// ForgetEnded forgets that job id ended, so that its ID may be submitted
// (or restored) again; it reports whether the end was remembered. It is
// for a host whose own record says the ID is reused on purpose, not
// redelivered: a Kubernetes gang recreated under its name, whose pods in
// the API server are the record. A host that replays messages does not
// call it — the tombstone is what refuses their redeliveries.
func (s *Scheduler) ForgetEnded(id string) (bool, error) {
	if err := s.mutating("ForgetEnded", id); err != nil {
		return false, err
	}
	defer s.cb.leave()
	return s.ended.remove(id), nil
}

// applied returns ErrAlreadyApplied for an event on job id that was
// applied already: the job ended and is remembered, or it is in the state
// the event would put it in (Started for a running job; Preempted,
// Requeue or Migrated for a job already waiting again after a stop).
// Events ask it before their time is checked.
func (s *Scheduler) applied(event, id string) error {
	if j, ok := s.jobs.byID[id]; ok {
		again := false
		switch event {
		case "Started":
			again = j.state == queue.Running
		case "Preempted", "Requeue":
			again = j.state == queue.Preempted || j.state == queue.Requeued
		}
		if again {
			return jobErr(id, fmt.Errorf("%w: %s for a %s job", ErrAlreadyApplied, event, j.state))
		}
		return nil
	}
	if t, ok := s.ended.lookup(id); ok {
		return jobErr(id, fmt.Errorf("%w: %s: the job ended (%s) at %s", ErrAlreadyApplied, event, t.State, stamp(t.At)))
	}
	return nil
}

// saveTombstones fills st.Tombstones (Tombstones).
func (s *Scheduler) saveTombstones(st *State) { st.Tombstones = s.Tombstones() }

// restoreTombstones restores st.Tombstones oldest first, none after the
// State's time (RestoreTombstone).
func (s *Scheduler) restoreTombstones(st *State) error {
	for i, t := range st.Tombstones {
		if t.At.After(st.Now) {
			return stateErr(fmt.Errorf("%s is after now", stamp(t.At)), "tombstones[%d].at", i)
		}
		if err := s.RestoreTombstone(t); err != nil {
			return stateErr(err, "tombstones[%d]", i)
		}
	}
	return nil
}
