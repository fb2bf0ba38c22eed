package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
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
		if m.exact && !s.noPlanHolds(j, pp.cfg.LowerPriority, s.now) || !s.noPlanStands(j, s.now) {
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
// what it depends on (see noPlanHolds): the job's noPlan part, a concern
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

// noPlanOutcome is what a PlanPreemptor's plan for a job tells the
// noplan concern (recordNoPlan): the job's standing verdict held, or the
// search found no plan (why; quota: the job waits for quota, not for
// room). Zero: nothing to record (a plan, or none made).
type noPlanOutcome struct {
	held  bool
	why   *preempt.NoPlan
	quota bool
}

// recordNoPlan records, after the cycle asked the PlanPreemptor for j,
// what its plan found. A verdict that held is fast-forwarded: nothing
// that matters changed since it was reached. A new one is stamped with
// the state it depends on: a verdict that the search reached by trying
// every possible victim (too large, protected, placement) holds until
// something that could change it happens; a budget verdict only while
// nothing changes. One that depends on the quotas (the queue tree governs
// some resource, or the job waits for quota) holds only while the tree's
// usage does not change.
func (s *Scheduler) recordNoPlan(j *job, o noPlanOutcome) {
	switch {
	case o.held:
		j.noPlan.fastForward(s.ledger.Generation(), s.victims.elig.latest())
	case o.why != nil:
		v := s.noPlanStamp()
		v.ok, v.until, v.prio = o.why.Err == nil, o.why.Until, j.spec.Priority
		v.queues = o.quota || o.why.Verdict == preempt.VerdictQuota || s.tree.GovernsAny()
		v.exact = o.why.Verdict == preempt.VerdictBudget
		j.noPlan.reached(v)
	}
}

// noPlanHeld reports whether live job id's standing verdict still holds
// at now (noPlanHolds; planSource: the PlanPreemptor asks before it
// plans). Only the Scheduler's own PlanPreemptor has verdicts (one that
// another Preemptor calls has none: recordNoPlan is not called for it).
// It only reads.
func (s *Scheduler) noPlanHeld(id string, lower preempt.Scope, now time.Time) bool {
	if _, ok := s.cfg.Preemptor.(*PlanPreemptor); !ok {
		return false
	}
	j, ok := s.jobs.byID[id]
	return ok && s.noPlanHolds(j, lower, now)
}

// noPlanHolds reports whether j's last "no plan" still holds: no minimum
// run time ended, j's priority did not rise, no nomination was dropped,
// the quotas' usage did not change (when it matters), and since then no
// host gained capacity, nor did a job on it become a possible victim,
// where j could then take a task (hostCouldMatter). The placers are
// monotone in free capacity and place a gang in one domain, and the
// search found no victim set even with every possible victim gone; so a
// change on a host that could not take a task of j either way leaves that
// true. When the verdict depends on the quotas, a job that became a
// possible victim anywhere matters (its stop frees quota wherever it
// runs). Possible victims are judged by the rule lower
// (preempt.Config.LowerPriority; mayBeVictim). It only reads.
// O(changes since).
func (s *Scheduler) noPlanHolds(j *job, lower preempt.Scope, now time.Time) bool {
	m := &j.noPlan
	if !s.noPlanStands(j, now) {
		return false
	}
	// Jobs the next cycle files again as possible victims count as logged
	// (NoPlans reads between cycles; in a cycle there are none).
	matters := func(h topology.HostID) bool {
		return m.exact || m.queues && s.hostHasVictim(h, j, lower) || s.hostCouldMatter(h, j, lower, m.queues)
	}
	if s.victims.anyDue(now, matters) {
		return false
	}
	if m.exact {
		return true // (noPlanStands: nothing changed)
	}
	gained := func(h topology.HostID) bool { return s.hostCouldMatter(h, j, lower, m.queues) }
	if m.gen != s.ledger.Generation() && s.fit.gains.anySince(m.gen, gained) || slices.ContainsFunc(m.gained, gained) {
		return false
	}
	eligible := func(h topology.HostID) bool {
		return m.queues && s.hostHasVictim(h, j, lower) || s.hostCouldMatter(h, j, lower, m.queues)
	}
	if m.eligSeq != s.victims.elig.latest() && s.victims.elig.anySince(m.eligSeq, eligible) || slices.ContainsFunc(m.eligible, eligible) {
		return false
	}
	return true
}

// noPlanStands reports whether j's verdict stands on the checks that,
// once failed, fail for good: a minimum run time ended, j's priority
// rose, a nomination was dropped, the quotas' usage changed (when it
// matters), anything changed (an exact verdict). The others ask whether
// a host where something changed could now matter, which depends on when
// they are asked (noPlanHolds).
func (s *Scheduler) noPlanStands(j *job, now time.Time) bool {
	m := &j.noPlan
	if !m.ok || !m.until.IsZero() && !now.Before(m.until) || j.spec.Priority > m.prio || m.drops != s.noms.drops {
		return false
	}
	if m.exact || m.queues {
		if m.epoch != s.noms.quotaEpoch(s.tree) || m.commits != s.commits() {
			return false
		}
		if m.exact {
			return m.gen == s.ledger.Generation() && m.eligSeq == s.victims.elig.latest()
		}
	}
	return true
}

// hostCouldMatter reports whether host h could take a task of waiting job
// j with every job there that may be its victim gone (an optimistic test:
// priorities only, no minimum run times; with the quotas, any job of
// another queue; a shared GPU a victim uses counts as freed).
func (s *Scheduler) hostCouldMatter(h topology.HostID, j *job, lower preempt.Scope, queues bool) bool {
	l := s.ledger
	if l.HostHealth(h) != topology.Healthy {
		return false
	}
	if allow := s.adm.filter(j); allow != nil && !allow(h) {
		return false
	}
	var cpu, mem int64
	gpus := 0
	for _, v := range s.jobs.onHost[h] {
		if !mayBeVictim(v, j, lower, queues) {
			continue
		}
		for _, cl := range v.placement.Claims {
			if cl.Host == h {
				cpu += cl.CPUMilli
				mem += cl.MemoryMiB
				gpus += len(cl.GPUs)
			}
		}
	}
	m := s.c.HostModel(h)
	for i := range j.req.Groups {
		g := &j.req.Groups[i]
		if g.Kind != gang.TaskCPU && !g.Accepts(m) {
			continue
		}
		if l.CPUFree(h)+cpu < g.CPUMilli || l.MemoryFree(h)+mem < g.MemoryMiB {
			continue
		}
		switch g.Kind {
		case gang.TaskCPU:
			return true
		case gang.TaskWhole:
			if l.HostFreeGPUs(h)+gpus >= g.GPUs {
				return true
			}
		default:
			if gpus > 0 {
				return true
			}
			first, n := s.c.HostGPUs(h)
			for k := 0; k < n; k++ {
				if l.GPUFreeMilli(first+topology.GPUID(k)) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// hostHasVictim reports whether a job on host h may be a victim of
// waiting job j, with the quotas (mayBeVictim).
func (s *Scheduler) hostHasVictim(h topology.HostID, j *job, lower preempt.Scope) bool {
	for _, v := range s.jobs.onHost[h] {
		if mayBeVictim(v, j, lower, true) {
			return true
		}
	}
	return false
}

// mayBeVictim reports whether holding job v could be a victim of waiting
// job j by the rule lower (preempt.Config.LowerPriority; optimistic: minimum run times and fresh
// admissions ignored; with the quotas, any job of another queue). Its
// protections are preempt's one rule (preempt.Job.Protection), on a
// view without a start time.
func mayBeVictim(v, j *job, lower preempt.Scope, queues bool) bool {
	sp := &v.spec
	view := preempt.Job{Spec: sp, Preemptions: v.preemptions, Stopping: v.vic.preempting || v.rec.recovering || v.ref.excludes(v)}
	if _, protected := view.Protection(time.Time{}); protected {
		return false // (a stop in progress frees its host later: a gain then)
	}
	if queues && v.leaf != j.leaf {
		return true
	}
	switch lower {
	case preempt.WithinQueue:
		return v.leaf == j.leaf && sp.Priority < j.spec.Priority
	case preempt.AnyQueue:
		return sp.Priority < j.spec.Priority
	}
	return false
}

// saveNoPlans fills st.NoPlans (NoPlans of st's jobs).
func (s *Scheduler) saveNoPlans(st *State) { st.NoPlans = s.NoPlans(st.ids()) }

// restoreNoPlans restores st.NoPlans after everything else they depend
// on: each holds from the restored state on (RestoreNoPlan).
func (s *Scheduler) restoreNoPlans(st *State) error {
	return restoreEach(st, "noPlans", st.NoPlans, func(n NoPlan) string { return n.Job }, s.RestoreNoPlan)
}
