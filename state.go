package gpusched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/topology"
)

// Config returns the configuration the Scheduler runs with: the one New
// was given, with New's defaults filled (MaxGrace, MaxReservations,
// Placer), the queue tree as last reconfigured (Reconfigure) and the
// cluster as last changed (AddHosts, RemoveHosts, SetHostGPUs). It is
// the caller's: Queues, Defrag and Elastic are deep copies; Cluster,
// Placer and Preemptor are the Scheduler's own (not copied). This is
// what a restart must run with, and what snapshot.Capture saves.
func (s *Scheduler) Config() Config {
	cfg := s.cfg
	cfg.Queues = cfg.Queues.Clone()
	if d := cfg.Defrag; d != nil {
		dc := *d
		if k := d.Consolidate; k != nil {
			kc := *k
			kc.Levels = slices.Clone(k.Levels)
			dc.Consolidate = &kc
		}
		cfg.Defrag = &dc
	}
	if e := cfg.Elastic; e != nil {
		ec := *e
		cfg.Elastic = &ec
	}
	return cfg
}

// Submissions returns the IDs of the live jobs in the order they were
// submitted to the Scheduler (Submit, Restore, RestoreJob): the order it
// breaks ties between jobs submitted at the same time with. O(jobs log
// jobs).
func (s *Scheduler) Submissions() []string {
	js := make([]*job, 0, len(s.jobs.byID))
	for _, j := range s.jobs.byID {
		js = append(js, j)
	}
	slices.SortFunc(js, func(a, b *job) int { return cmp.Compare(a.entry.Seq, b.entry.Seq) })
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.spec.ID
	}
	return ids
}

// State is everything a Scheduler carries from call to call, as plain
// data: what a restart needs to continue where it stopped. Scheduler.State
// returns it; Restore builds a Scheduler from it. Package snapshot
// encodes it in a file (names for IDs, a version and a seal); a host that
// keeps its own records may build one itself.
//
// Each concern of the Scheduler fills its own part and restores it (in
// its own file, beside its Restore… method), in the order of the fields
// below: a new concern adds its part here and to stateParts.
type State struct {
	// Now is the time of the state: the latest time the Scheduler had
	// seen (State), the time of the records (Restore). Required.
	Now time.Time
	// Config is the configuration as last reconfigured (Scheduler.Config):
	// the cluster as last changed, the queue tree as reconfigured, New's
	// defaults filled. Its Placer and Preemptor are code: State gives the
	// Scheduler's own, which a Restore in the same process may share only
	// if they keep no state of their own (a placer that is a gang.Tracker
	// must be a fresh one); a restarted process sets its own.
	Config Config
	// Jobs are the live jobs in order of submission (ties broken by the
	// order they were submitted in): waiting ones with their counts and
	// progress, holding ones with their claims (restore.go). Their Now is
	// the State's: Restore sets it.
	Jobs []RestoredJob
	// Resizes are the resized elastic jobs (elastic_state.go).
	Resizes []Resize
	// Nominations are the preemptions in flight (inflight.go).
	Nominations []Nomination
	// Tombstones are the ended jobs remembered, oldest first
	// (tombstones.go).
	Tombstones []Tombstone
	// Refusals are the refused stops in force (refusals_state.go).
	Refusals []Refusal
	// Defrag is the defragmentation concern's state, zero when it is off
	// (defrag_state.go); Restore sets its Now to the State's.
	Defrag DefragState
	// Stopping are the jobs asked to stop that nothing else in flight
	// names (nominations, migrations, shrinks); Fresh the holding jobs
	// admitted in the last cycle (stopping_state.go).
	Stopping, Fresh []string
	// Usage is the decayed Fair Tree usage of the queues that have any,
	// root first (restore.go); none unless the tree is ordered by Fair
	// Tree.
	Usage []QueueUsage
	// Health lists the hosts, then the GPUs, that are not healthy
	// (health_state.go).
	Health []Unhealthy
	// Cordoned lists the cordoned hosts by name, in host order; Leaving
	// the hosts waiting to leave or to change shape, in the order asked
	// (live_state.go).
	Cordoned []string
	Leaving  []LeavingHost
	// Recovery is the recovery concern's: the faults noted since the last
	// cycle and the recoveries in flight (recovery_state.go). Health alone
	// plans nothing: a host building a State whose jobs on unhealthy parts
	// the first cycle should recover lists those parts' faults here.
	Recovery RecoveryState
	// Reservations are the backfill reservations kept from the last cycle
	// (reserve_state.go).
	Reservations []Reservation
	// NoPlans are the PlanPreemptor's standing verdicts (noplan.go).
	NoPlans []NoPlan
	// Consolidation is consolidation's state, zero when it is off
	// (consolidate_state.go); Restore sets its Now to the State's.
	Consolidation ConsolidateState
}

// QueueUsage is one queue's decayed Fair Tree usage; Queue "" is the root.
type QueueUsage struct {
	Queue string
	Usage fairshare.Usage
}

// Unhealthy is a host (Host, by name) or a GPU (GPU, when Host is empty)
// whose health is not topology.Healthy.
type Unhealthy struct {
	Host   string
	GPU    topology.GPUID
	Health topology.Health
}

// StateError is a State that Restore refused: the path of the field at
// fault, as "jobs[3].submitted", "nominations[0]" or "config" (the
// State's field names in lower camel case, indexes of its slices), and
// what is wrong.
type StateError struct {
	Field string
	Err   error
}

// Error returns "FIELD: ERR".
func (e *StateError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *StateError) Unwrap() error { return e.Err }

// stateErr is a *StateError for field f (fmt-formatted with args).
func stateErr(err error, f string, args ...any) error {
	return &StateError{Field: fmt.Sprintf(f, args...), Err: err}
}

// statePart is one concern's part of a State: save fills it from the
// Scheduler, restore gives it back to a Scheduler being rebuilt. Both run
// in the order of stateParts (a part may read the parts before it).
type statePart struct {
	save    func(s *Scheduler, st *State)
	restore func(s *Scheduler, st *State) error
}

// stateParts are the concerns' parts, in the order they are saved and
// restored: jobs first, then what is in flight for them, then health
// and cordons, then the recoveries (their faults replace those restoring
// the health noted), then what is computed from all that (reservations' what-if
// ledgers, the preemption verdicts, consolidation's memo).
var stateParts = [...]statePart{
	{(*Scheduler).saveJobs, (*Scheduler).restoreJobs},
	{(*Scheduler).saveResizes, (*Scheduler).restoreResizes},
	{(*Scheduler).saveNominations, (*Scheduler).restoreNominations},
	{(*Scheduler).saveTombstones, (*Scheduler).restoreTombstones},
	{(*Scheduler).saveRefusals, (*Scheduler).restoreRefusals},
	{(*Scheduler).saveDefrag, (*Scheduler).restoreDefrag},
	{(*Scheduler).saveStopping, (*Scheduler).restoreStopping},
	{(*Scheduler).saveUsage, (*Scheduler).restoreUsage},
	{(*Scheduler).saveHealth, (*Scheduler).restoreHealth},
	{(*Scheduler).saveHosts, (*Scheduler).restoreHosts},
	{(*Scheduler).saveRecovery, (*Scheduler).restoreRecovery},
	{(*Scheduler).saveReservations, (*Scheduler).restoreReservations},
	{(*Scheduler).saveNoPlans, (*Scheduler).restoreNoPlans},
	{(*Scheduler).saveConsolidation, (*Scheduler).restoreConsolidation},
}

// State returns the Scheduler's state as of the latest time it has seen:
// its configuration (Config), its live jobs and every concern's part (see
// State). The result is the caller's (deep copies) but for Config's
// Cluster, Placer and Preemptor. It only reads. O(jobs × tasks + hosts +
// GPUs).
func (s *Scheduler) State() State {
	st := State{Now: s.now, Config: s.Config()}
	for _, p := range stateParts {
		p.save(s, &st)
	}
	return st
}

// Restore builds a Scheduler from a State (see State): New(st.Config),
// then each part restored in order. A State the Scheduler could not have
// been in is a *StateError naming the field: a job submitted or started
// after Now, placements that collide or break a quota, an in-flight entry
// naming no job of the state, a time after Now. The Scheduler's latest
// time is the State's Now, as the original's was (an event before it is
// refused with ErrTimeBackwards, MaxClockSkew counts from it); run its
// first cycle at Now.
func Restore(st State) (*Scheduler, error) {
	if st.Now.IsZero() {
		return nil, stateErr(errors.New("missing: the time of the state"), "now")
	}
	s, err := New(st.Config)
	if err != nil {
		return nil, stateErr(err, "config")
	}
	for _, p := range stateParts {
		if err := p.restore(s, &st); err != nil {
			return nil, err
		}
	}
	s.advance(st.Now) // (the parts restored no time after it)
	return s, nil
}

// ids returns the IDs of st's jobs, in order.
func (st *State) ids() []string {
	out := make([]string, len(st.Jobs))
	for i := range st.Jobs {
		out[i] = st.Jobs[i].Spec.ID
	}
	return out
}

// hasJob says whether st has a job id; an error naming field f if not.
func (st *State) hasJob(id, f string, args ...any) error {
	for i := range st.Jobs {
		if st.Jobs[i].Spec.ID == id {
			return nil
		}
	}
	return stateErr(fmt.Errorf("no job %q in the state", id), f, args...)
}

// restoreEach restores the entries of part name of st in order: each
// names a job of st (jobOf; field name[i].job if not), then restore
// restores it (field name[i] on error).
func restoreEach[T any](st *State, name string, entries []T, jobOf func(T) string, restore func(T) error) error {
	for i, e := range entries {
		if err := st.hasJob(jobOf(e), "%s[%d].job", name, i); err != nil {
			return err
		}
		if err := restore(e); err != nil {
			return stateErr(err, "%s[%d]", name, i)
		}
	}
	return nil
}
