package gpusched

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/preempt"
)

// ConsolidateState is what consolidation when idle
// (DefragConfig.Consolidate) carries from cycle to cycle, as a saved state
// (package snapshot) holds it: its own budget's log, when a job last
// waited, and whether the last pass found nothing on the cluster as it
// still is (so that no pass is tried again until something changes).
type ConsolidateState struct {
	// Issued is the log of consolidation's own budget
	// (ConsolidateConfig.Budget): its migrations issued in the hour before
	// Now, oldest first.
	Issued []preempt.DefragIssued
	// Busy is the last cycle's time at which a job waited; zero: none
	// yet.
	Busy time.Time
	// NothingFound says the last pass found no plan and nothing placed or
	// released since (the ledger is as it was), with the budgets leaving
	// FoundMoves migrations and FoundLost GPU time (0: no bound): no pass
	// runs again until the ledger changes or the budgets leave more.
	NothingFound bool
	FoundMoves   int
	FoundLost    preempt.GPUTime
	// Now is the time of the state (RestoreConsolidate: required when
	// Issued is not empty, and no entry after it); ConsolidateState sets
	// the latest time the Scheduler has seen.
	Now time.Time
}

// ErrConsolidateOff: consolidation state for a Scheduler without
// DefragConfig.Consolidate.
var ErrConsolidateOff = errors.New("gpusched: consolidation is off (Config.Defrag.Consolidate)")

// ConsolidateState returns consolidation's state as of the latest time
// seen; the zero value when it is off. It only reads. O(log).
func (s *Scheduler) ConsolidateState() ConsolidateState {
	k := &s.cons
	var st ConsolidateState
	if k.cfg == nil {
		return st
	}
	st.Issued, st.Now, st.Busy = k.log.Issued(s.now), s.now, k.busy
	if k.failed && k.failedGen == s.ledger.Generation() {
		st.NothingFound, st.FoundMoves, st.FoundLost = true, k.failedRoom.moves, k.failedRoom.lost
	}
	return st
}

// RestoreConsolidate restores consolidation's state, after everything
// else that places, releases or changes the health of GPUs (a
// NothingFound memo holds for the ledger as it is at the call). Errors
// name the field; nothing changes on error.
func (s *Scheduler) RestoreConsolidate(st ConsolidateState) error {
	if err := s.mutating("RestoreConsolidate", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	k := &s.cons
	if k.cfg == nil {
		if len(st.Issued) == 0 && st.Busy.IsZero() && !st.NothingFound {
			return nil
		}
		return ErrConsolidateOff
	}
	var log preempt.DefragLog
	for i, e := range st.Issued {
		if st.Now.IsZero() || e.At.After(st.Now) {
			return fmt.Errorf("gpusched: RestoreConsolidate: issued[%d] at %s is after now (%s)", i, stamp(e.At), stamp(st.Now))
		}
		if err := log.Add(e.At, e.Lost); err != nil {
			return fmt.Errorf("gpusched: RestoreConsolidate: issued[%d]: %w", i, err)
		}
	}
	switch {
	case !st.Busy.IsZero() && !st.Now.IsZero() && st.Busy.After(st.Now):
		return fmt.Errorf("gpusched: RestoreConsolidate: busy %s is after now (%s)", stamp(st.Busy), stamp(st.Now))
	case st.FoundMoves < 0:
		return fmt.Errorf("gpusched: RestoreConsolidate: foundMoves: negative %d", st.FoundMoves)
	case st.FoundLost < 0:
		return fmt.Errorf("gpusched: RestoreConsolidate: foundLost: negative %d", st.FoundLost)
	}
	k.restore(log, st.Busy, st.NothingFound, s.ledger.Generation(), room{moves: st.FoundMoves, lost: st.FoundLost})
	return nil
}

// restore replaces the state with a saved one's.
func (k *consolidator) restore(log preempt.DefragLog, busy time.Time, failed bool, gen uint64, r room) {
	k.log, k.busy = log, busy
	k.failed, k.failedGen, k.failedRoom = failed, gen, r
}

// saveConsolidation fills st.Consolidation (ConsolidateState).
func (s *Scheduler) saveConsolidation(st *State) { st.Consolidation = s.ConsolidateState() }

// restoreConsolidation restores st.Consolidation at the State's time,
// last: its "nothing found" memo holds for the ledger as restored
// (RestoreConsolidate).
func (s *Scheduler) restoreConsolidation(st *State) error {
	cs := st.Consolidation
	cs.Now = st.Now
	for i, e := range cs.Issued {
		if e.At.IsZero() {
			return stateErr(errors.New("missing: when the migration was issued"), "consolidation.issued[%d].at", i)
		}
	}
	if err := s.RestoreConsolidate(cs); err != nil {
		return stateErr(err, "consolidation")
	}
	return nil
}
