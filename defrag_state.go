package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
)

// DefragState is what the defragmentation concern (Config.Defrag) carries
// from cycle to cycle, as a saved state (package snapshot) holds it: the
// migrations in flight, how often each job has moved, and the budget's log
// of migrations issued in the last hour.
type DefragState struct {
	// Moving are the migrations issued (Decision.Migrations) and not yet
	// reported Migrated, in the order issued.
	Moving []MigrationInFlight
	// Moves counts the migrations each live job has completed (what
	// DefragConfig.MaxPerJob caps); jobs that never moved are left out.
	Moves []JobMoves
	// Issued is the budget's log (DefragConfig.Budget): the migrations
	// issued in the hour before the state's time, oldest first.
	Issued []preempt.DefragIssued
	// Now is the time of the state (RestoreDefrag: required when Issued
	// is not empty, and no entry after it); DefragState sets the latest
	// time the Scheduler has seen.
	Now time.Time
}

// MigrationInFlight is one migration in flight: the job moving and its
// destination, the claims per task group (as Restore's tasks).
type MigrationInFlight struct {
	Job string
	To  [][]topology.Claim
	// Domain names the domain the destination was placed within (as
	// RestoredJob.Domain); empty means the whole cluster. The job runs
	// there with it after the move.
	Domain string
}

// JobMoves is how many migrations a job has completed.
type JobMoves struct {
	Job   string
	Moves int
}

// ErrDefragOff: defragmentation state for a Scheduler without
// Config.Defrag.
var ErrDefragOff = errors.New("gpusched: defragmentation is off (Config.Defrag)")

// DefragState returns the defragmentation concern's state: the moves in
// flight in the order issued, the completed moves of the live jobs of ids
// in that order, and the budget's log as of the latest time seen. It only
// reads; the zero value when defragmentation is off. O(moves + ids).
func (s *Scheduler) DefragState(ids []string) DefragState {
	x := &s.dfg
	var st DefragState
	if x.cfg == nil {
		return st
	}
	for _, id := range x.order {
		j, ok := s.jobs.byID[id]
		to := x.moving[id]
		if !ok || to == nil {
			continue
		}
		st.Moving = append(st.Moving, MigrationInFlight{Job: id, To: claimsPerGroup(to, len(j.req.Groups)), Domain: s.domainOf(to)})
	}
	for _, id := range ids {
		if n := x.moves[id]; n > 0 {
			if _, live := s.jobs.byID[id]; live {
				st.Moves = append(st.Moves, JobMoves{Job: id, Moves: n})
			}
		}
	}
	st.Issued, st.Now = x.log.Issued(s.now), s.now
	return st
}

// RestoreDefrag restores the defragmentation concern's state after the
// jobs and the nominations (RestoreNomination: the gang each move makes
// room for waits for the moving jobs, which are thereby being preempted):
// each moving job must hold resources and is marked as being preempted if
// it is not yet; its destination must match its groups as Restore's
// tasks do. Errors name the job; nothing changes on error.
func (s *Scheduler) RestoreDefrag(st DefragState) error {
	if err := s.mutating("RestoreDefrag", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	x := &s.dfg
	if x.cfg == nil {
		if len(st.Moving) == 0 && len(st.Moves) == 0 && len(st.Issued) == 0 {
			return nil
		}
		return ErrDefragOff
	}
	var log preempt.DefragLog
	for i, e := range st.Issued {
		if st.Now.IsZero() || e.At.After(st.Now) {
			return fmt.Errorf("gpusched: RestoreDefrag: issued[%d] at %s is after now (%s)", i, stamp(e.At), stamp(st.Now))
		}
		if err := log.Add(e.At, e.Lost); err != nil {
			return fmt.Errorf("gpusched: RestoreDefrag: issued[%d]: %w", i, err)
		}
	}
	moving := make([]*job, len(st.Moving))
	var tos []*movingTo
	for i, m := range st.Moving {
		j, err := s.lookup(m.Job)
		if err != nil {
			return err
		}
		if !j.state.Holding() || x.moving[m.Job] != nil || slices.Contains(moving[:i], j) {
			return jobErr(m.Job, fmt.Errorf("%w: RestoreDefrag: a moving job holds resources and moves once", ErrState))
		}
		p, err := s.placementOf(j, m.To)
		if err != nil {
			return err
		}
		if err := s.placeWithin(p, "migration", m.Domain, m.To); err != nil {
			return err
		}
		moving[i] = j
		tos = append(tos, &movingTo{id: m.Job, to: p})
	}
	for _, m := range st.Moves {
		if _, err := s.lookup(m.Job); err != nil {
			return err
		}
		if m.Moves < 0 {
			return jobErr(m.Job, fmt.Errorf("%w: RestoreDefrag: negative moves %d", ErrState, m.Moves))
		}
	}
	for _, j := range moving {
		if !j.vic.preempting {
			s.victims.ask(j, s.now)
		}
	}
	x.restore(log, tos, st.Moves)
	return nil
}

type movingTo struct {
	id string
	to *gang.Placement
}

// restore replaces the log, the moves in flight (in the order given) and
// the completed moves' counts with a saved state's.
func (x *defragger) restore(log preempt.DefragLog, moving []*movingTo, moves []JobMoves) {
	x.log = log
	for _, m := range moving {
		x.moving[m.id] = m.to
		x.order = append(x.order, m.id)
	}
	for _, m := range moves {
		x.moves[m.Job] = m.Moves
	}
}

// dropMove forgets the move in flight of job id, if any, whose run ended
// or was stopped otherwise than by Migrated (ended: for good, with its
// count of moves). The destination its move held in every cycle is free
// again, which no release logs: cached placement failures may be stale,
// as when a nomination is dropped.
func (s *Scheduler) dropMove(id string, ended bool) {
	if s.dfg.moving[id] != nil {
		s.fit.invalidateAll()
	}
	s.dfg.forget(id, ended)
}

// saveDefrag fills st.Defrag (DefragState of st's jobs).
func (s *Scheduler) saveDefrag(st *State) { st.Defrag = s.DefragState(st.ids()) }

// restoreDefrag restores st.Defrag at the State's time, after the
// nominations that wait for the moving jobs (RestoreDefrag).
func (s *Scheduler) restoreDefrag(st *State) error {
	ds := st.Defrag
	ds.Now = st.Now
	for i, m := range ds.Moving {
		if err := st.hasJob(m.Job, "defrag.moving[%d].job", i); err != nil {
			return err
		}
	}
	for i, e := range ds.Issued {
		if e.At.IsZero() {
			return stateErr(errors.New("missing: when the migration was issued"), "defrag.issued[%d].at", i)
		}
	}
	if err := s.RestoreDefrag(ds); err != nil {
		return stateErr(err, "defrag")
	}
	return nil
}
