package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// NoPlan is a PlanPreemptor's standing verdict that a job has no
// preemption plan, as a saved state (package snapshot) holds it. While it
// holds, the PlanPreemptor does not plan for the job again, and so does
// not spend on it one of the plans it makes per cycle (NewPlanPreemptor's
// maxPerCycle): which jobs get a plan in a cycle depends on these
// verdicts, and a restarted Scheduler must have them to decide as the
// original would.
type NoPlan struct {
	Job string
	// Until is when a minimum run time the verdict counted on ends (it
	// lapses then); zero for none.
	Until time.Time
	// Priority is the job's priority when the verdict was reached (it
	// lapses when the priority rises above it).
	Priority int32
	// Quotas says the verdict depends on the quotas' usage (it lapses
	// when that changes); Exact that it holds only while nothing at all
	// changes (a search that ran out of its budget).
	Quotas, Exact bool
	// Gained and Eligible are the hosts where, since the verdict,
	// capacity came back (Gained) or a job became a possible victim
	// (Eligible), each once, in host order. Whether such a change ends
	// the verdict is asked when a cycle next plans for the job, of the
	// Scheduler as it is then: a host freed before a cycle may be full
	// again by the time it asks (a nominated job bound there), and the
	// verdict holds. So a verdict carries them. Empty when Exact.
	Gained, Eligible []topology.HostID
}

// NoPlans returns, in the order of ids, the verdicts of the live jobs of
// ids that a cycle run now could still rely on: those that nothing since
// has ended for good, with the hosts where something changed since
// (whether such a change ends a verdict is only known when the cycle
// asks; see NoPlan.Gained). Only a Config.Preemptor that is a
// *PlanPreemptor keeps verdicts; with another (or none) it returns nil.
// It only reads. O(ids × changes since each verdict).
func (s *Scheduler) NoPlans(ids []string) []NoPlan {
	pp, ok := s.cfg.Preemptor.(*PlanPreemptor)
	if !ok {
		return nil
	}
	var out []NoPlan
	for _, id := range ids {
		j, ok := s.jobs.byID[id]
		if !ok {
			continue
		}
		m := &j.noPlan
		if m.exact && !pp.noPlanHolds(s, j, s.now) || !pp.noPlanStands(s, j, s.now) {
			continue // (an exact verdict: every change ends it)
		}
		n := NoPlan{Job: id, Until: m.until, Priority: m.prio, Quotas: m.queues, Exact: m.exact}
		if !m.exact {
			var gained, eligible []topology.HostID
			var complete bool
			if gained, complete = s.fit.gains.hostsSince(m.gen, slices.Clone(m.gained)); !complete {
				continue // (changes were dropped: it lapses when asked)
			}
			if eligible, complete = s.victims.elig.hostsSince(m.eligSeq, slices.Clone(m.eligible)); !complete {
				continue
			}
			// A removed host is failed for good: it never matters.
			n.Gained, n.Eligible = hostSet(slices.DeleteFunc(gained, s.c.Removed)), hostSet(slices.DeleteFunc(eligible, s.c.Removed))
		}
		out = append(out, n)
	}
	return out
}

// hostSet sorts hs and drops repeats; nil when empty.
func hostSet(hs []topology.HostID) []topology.HostID {
	if len(hs) == 0 {
		return nil
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// RestoreNoPlan restores a verdict of NoPlans after everything else of a
// state is restored (jobs, nominations, usage, health, reservations): it
// holds from the Scheduler's present state on, until something that could
// change it happens, as it did in the Scheduler it was read from; the
// hosts of n.Gained and n.Eligible count as changed since. An unknown job
// is ErrUnknownJob; a priority above the job's is an error (the verdict
// would already have lapsed), and so is an unknown or removed host, or
// hosts with Exact. Without a *PlanPreemptor it is kept but never read.
func (s *Scheduler) RestoreNoPlan(n NoPlan) error {
	if err := s.mutating("RestoreNoPlan", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(n.Job)
	if err != nil {
		return err
	}
	if j.spec.Priority > n.Priority {
		return jobErr(n.Job, fmt.Errorf("%w: a verdict reached at priority %d, below the job's %d", ErrState, n.Priority, j.spec.Priority))
	}
	if n.Exact && len(n.Gained)+len(n.Eligible) > 0 {
		return jobErr(n.Job, fmt.Errorf("%w: an exact verdict with changes since (it ended with the first)", ErrState))
	}
	for _, hs := range [][]topology.HostID{n.Gained, n.Eligible} {
		for _, h := range hs {
			if h < 0 || int(h) >= s.c.NumHosts() || s.c.Removed(h) {
				return jobErr(n.Job, fmt.Errorf("%w: verdict names host %d, which the cluster does not have", ErrState, h))
			}
		}
	}
	v := s.noPlanStamp()
	v.until, v.prio, v.queues, v.exact = n.Until, n.Priority, n.Quotas, n.Exact
	v.gained, v.eligible = hostSet(slices.Clone(n.Gained)), hostSet(slices.Clone(n.Eligible))
	j.noPlan.reached(v)
	return nil
}

// noPlanMemo is a PlanPreemptor's last "no plan" for a waiting job and
// what it depends on (see stillNoPlan): the job's noPlan part, a concern
// of its own whose methods (reached, fastForward) are its only writers.
type noPlanMemo struct {
	ok bool
	// gen is the ledger generation it holds at (fast-forwarded while
	// nothing that matters changes); eligSeq the same for the log of
	// jobs that became possible victims; epoch the queue tree's epoch
	// (when it depends on the quotas); drops the nominations dropped.
	gen, eligSeq, epoch, drops, commits uint64
	until                               time.Time // a minimum run time ends
	prio                                int32     // the job's priority then
	queues                              bool      // depends on the quotas' usage
	exact                               bool      // holds only while nothing changes
	// gained and eligible are hosts logged before a restore
	// (RestoreNoPlan) that the verdict still asks about, as gains and
	// as possible victims since gen and eligSeq; cleared when it is
	// fast-forwarded.
	gained, eligible []topology.HostID
}

// noPlanStamp is a verdict reached now, with the state it depends on
// stamped (ledger generation, eligibility log, quota epoch, dropped
// nominations, commitments) and the rest zero.
func (s *Scheduler) noPlanStamp() noPlanMemo {
	return noPlanMemo{ok: true, gen: s.ledger.Generation(), eligSeq: s.victims.elig.latest(), epoch: s.noms.quotaEpoch(s.tree),
		drops: s.noms.drops, commits: s.commits()}
}

// reached records verdict v (noPlanStamp with what it counted on).
func (m *noPlanMemo) reached(v noPlanMemo) { *m = v }

// fastForward moves the verdict to ledger generation gen and eligibility
// sequence eligSeq: nothing that matters changed since it was reached.
func (m *noPlanMemo) fastForward(gen, eligSeq uint64) {
	m.gen, m.eligSeq = gen, eligSeq
	m.gained, m.eligible = nil, nil
}

// saveNoPlans fills st.NoPlans (NoPlans of st's jobs).
func (s *Scheduler) saveNoPlans(st *State) { st.NoPlans = s.NoPlans(st.ids()) }

// restoreNoPlans restores st.NoPlans after everything else they depend
// on: each holds from the restored state on (RestoreNoPlan).
func (s *Scheduler) restoreNoPlans(st *State) error {
	return restoreEach(st, "noPlans", st.NoPlans, func(n NoPlan) string { return n.Job }, s.RestoreNoPlan)
}
