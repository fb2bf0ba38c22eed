package gpusched

import (
	"fmt"
	"time"
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
}

// NoPlans returns, in the order of ids, the verdicts of the live jobs of
// ids that still hold now: the ones a cycle run now would rely on. Only a
// Config.Preemptor that is a *PlanPreemptor keeps verdicts; with another
// (or none) it returns nil. It only reads. O(ids × changes since each
// verdict).
func (s *Scheduler) NoPlans(ids []string) []NoPlan {
	pp, ok := s.cfg.Preemptor.(*PlanPreemptor)
	if !ok {
		return nil
	}
	var out []NoPlan
	for _, id := range ids {
		j, ok := s.jobs.byID[id]
		if !ok || !pp.noPlanHolds(s, j, s.now) {
			continue
		}
		m := &j.noPlan
		out = append(out, NoPlan{Job: id, Until: m.until, Priority: m.prio, Quotas: m.queues, Exact: m.exact})
	}
	return out
}

// RestoreNoPlan restores a verdict of NoPlans after everything else of a
// state is restored (jobs, nominations, usage, health, reservations): it
// holds from the Scheduler's present state on, until something that could
// change it happens, as it did in the Scheduler it was read from. An
// unknown job is ErrUnknownJob; a priority above the job's is an error
// (the verdict would already have lapsed). Without a *PlanPreemptor it is
// kept but never read.
func (s *Scheduler) RestoreNoPlan(n NoPlan) error {
	j, err := s.lookup(n.Job)
	if err != nil {
		return err
	}
	if j.spec.Priority > n.Priority {
		return jobErr(n.Job, fmt.Errorf("%w: a verdict reached at priority %d, below the job's %d", ErrState, n.Priority, j.spec.Priority))
	}
	j.noPlan = noPlanMemo{ok: true, gen: s.ledger.Generation(), eligSeq: s.victims.elig.latest(), epoch: s.noms.quotaEpoch(s.tree),
		drops: s.noms.drops, commits: s.commits(), until: n.Until, prio: n.Priority, queues: n.Quotas, exact: n.Exact}
	return nil
}
