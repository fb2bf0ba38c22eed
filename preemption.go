package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// This file wires package preempt into the Scheduler: the Preemptor built
// on its planner, nominations (the placement a preempting job will get,
// held for it until its victims are gone), checkpoints and progress, and
// recovery actions for faults.

// PlacingPreemptor is a Preemptor that also says where the pending job
// goes once its victims are gone. The Scheduler then nominates the job to
// that placement: while the victims stop it keeps other jobs off the
// placement's free parts (GPUs, and the CPU and memory of its hosts) and
// counts the job's demand against its queue's quotas, and it binds the job
// to the placement at the start of the first cycle in which every victim
// has released, before any other job is considered. (If the plan also
// counted on another stop in progress for quota, as it counts every stop
// in progress as done, the job waits for that one too.) So a job is not
// preempted for only to find its room or its quota taken. PlanPreemptor
// implements it.
type PlacingPreemptor interface {
	Preemptor
	// PreemptPlan is Preempt with the placement the job gets once the
	// victims are gone; nil victims means no plan.
	PreemptPlan(s *Scheduler, job PreemptCandidate, now time.Time) ([]Preemption, *gang.Placement)
}

// PlanPreemptor is the Preemptor built on package preempt: for a job the
// cycle could not admit (placement or quota), it plans the cheapest
// victims by the rules of preempt.Config (lower priority, reclaim of
// borrowed quota, fair share; minimum run time, preemption caps and
// non-preemptible jobs respected; gang- and topology-aware; minimal lost
// work since checkpoints) and the placement the job gets.
//
// Victims stop whole: the Scheduler has no event for stopping part of an
// elastic gang, so preempt.Config.NoShrink is always set.
//
// Checkpoints come from Scheduler.Checkpointed; for a running job that
// never reported one but has a CheckpointInterval, the last checkpoint is
// estimated as the last whole interval since it started. Jobs admitted in
// the same cycle, jobs being preempted and jobs being recovered are never
// victims. A plan that failed is not tried again for the same job until
// the ledger or the quotas change.
type PlanPreemptor struct {
	cfg     preempt.Config
	search  *preempt.Search
	placer  gang.Placer
	maxPlan int

	cycle uint64
	plans int
	// testMemo, if set, is called with a fresh plan whenever a no-plan
	// memo held (tests: the plan must have no victims).
	testMemo func(job string, p *preempt.Plan)
}

// NewPlanPreemptor validates cfg and returns the Preemptor. A nil
// cfg.Placer means the Scheduler's placer. maxPerCycle bounds the plans
// made per scheduling cycle (each costs a pass over the running jobs);
// 0 means 8.
func NewPlanPreemptor(cfg preempt.Config, maxPerCycle int) (*PlanPreemptor, error) {
	if maxPerCycle < 0 {
		return nil, fmt.Errorf("gpusched: NewPlanPreemptor: negative maxPerCycle %d", maxPerCycle)
	}
	if maxPerCycle == 0 {
		maxPerCycle = 8
	}
	cfg.NoShrink = true
	if _, err := preempt.New(cfg); err != nil {
		return nil, err
	}
	return &PlanPreemptor{cfg: cfg, maxPlan: maxPerCycle}, nil
}

var _ PlacingPreemptor = (*PlanPreemptor)(nil)

// Preempt returns the victims of PreemptPlan.
func (p *PlanPreemptor) Preempt(s *Scheduler, c PreemptCandidate, now time.Time) []Preemption {
	v, _ := p.PreemptPlan(s, c, now)
	return v
}

// PreemptPlan plans victims for the candidate with package preempt.
func (p *PlanPreemptor) PreemptPlan(s *Scheduler, c PreemptCandidate, now time.Time) ([]Preemption, *gang.Placement) {
	if p.cycle != s.cycle {
		p.cycle, p.plans = s.cycle, 0
	}
	if p.plans >= p.maxPlan {
		return nil, nil
	}
	j := s.jobs[c.Job.ID]
	if p.search == nil || p.cfg.Placer == nil && p.placer != s.placer {
		cfg := p.cfg
		if cfg.Placer == nil {
			cfg.Placer = s.placer
		}
		p.search, _ = preempt.New(cfg) // validated by NewPlanPreemptor
		p.placer = s.placer
	}
	pending := func() *preempt.Pending {
		return &preempt.Pending{Request: c.Request, Queue: c.Queue, Priority: c.Job.Priority, Demand: s.demandVector(c.Request), Unplaced: c.Why != nil}
	}
	if j != nil && p.stillNoPlan(s, j, now) {
		if p.testMemo != nil {
			plan, _ := p.search.Plan(schedSnapshot{s, now}, pending(), now)
			p.testMemo(j.spec.ID, plan)
		}
		return nil, nil // nothing that matters changed since the last plan failed
	}
	p.plans++
	pend := pending()
	plan, why := p.search.Plan(schedSnapshot{s, now}, pend, now)
	if plan == nil || len(plan.Victims) == 0 {
		if j != nil && why != nil {
			p.noPlan(s, j, why, c.Why == nil)
		}
		return nil, nil
	}
	out := make([]Preemption, 0, len(plan.Victims))
	for _, v := range plan.Victims {
		out = append(out, Preemption{Job: v.Job, Grace: v.Grace, Reason: victimReason(&v, c.Job.Priority, c.Queue)})
	}
	return out, plan.Placement
}

// noPlanMemo is a PlanPreemptor's last "no plan" for a waiting job and
// what it depends on (see stillNoPlan).
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
}

// noPlan records why no plan exists for j. A verdict that the search
// reached by trying every possible victim (too large, protected,
// placement) holds until something that could change it happens; a budget
// verdict only while nothing changes. One that depends on the quotas
// (the queue tree governs some resource, or the job waits for quota) holds
// only while the tree's usage does not change.
func (p *PlanPreemptor) noPlan(s *Scheduler, j *job, why *preempt.NoPlan, quota bool) {
	m := &j.pre.noPlan
	*m = noPlanMemo{ok: why.Err == nil, gen: s.ledger.Generation(), eligSeq: s.pre.eligSeq, epoch: s.quotaEpoch(), drops: s.pre.drops, commits: s.pre.commits,
		until: why.Until, prio: j.spec.Priority, queues: quota || why.Verdict == preempt.VerdictQuota || s.tree.GovernsAny(),
		exact: why.Verdict == preempt.VerdictBudget}
}

// stillNoPlan reports whether j's last "no plan" still holds: no minimum
// run time ended, j's priority did not rise, no nomination was dropped,
// the quotas' usage did not change (when it matters), and since then no
// host gained capacity, nor did a job on it become a possible victim,
// where j could then take a task (hostCouldMatter). The placers are
// monotone in free capacity and place a gang in one domain, and the
// search found no victim set even with every possible victim gone; so a
// change on a host that could not take a task of j either way leaves that
// true. When the verdict depends on the quotas, a job that became a
// possible victim anywhere matters (its stop frees quota wherever it
// runs). When it holds, the memo is fast-forwarded. O(changes since).
func (p *PlanPreemptor) stillNoPlan(s *Scheduler, j *job, now time.Time) bool {
	m := &j.pre.noPlan
	if !m.ok || !m.until.IsZero() && !now.Before(m.until) || j.spec.Priority > m.prio || m.drops != s.pre.drops {
		return false
	}
	gen := s.ledger.Generation()
	if m.exact || m.queues {
		if m.epoch != s.quotaEpoch() || m.commits != s.pre.commits {
			return false
		}
		if m.exact {
			return m.gen == gen && m.eligSeq == s.pre.eligSeq
		}
	}
	if m.gen != gen {
		if m.gen < s.gainBase {
			return false
		}
		for i := len(s.gains) - 1; i >= 0 && s.gains[i].gen > m.gen; i-- {
			if p.hostCouldMatter(s, s.gains[i].host, j, m.queues) {
				return false
			}
		}
	}
	if m.eligSeq != s.pre.eligSeq {
		if m.eligSeq < s.pre.eligBase {
			return false
		}
		el := s.pre.elig
		for i := len(el) - 1; i >= 0 && el[i].seq > m.eligSeq; i-- {
			if m.queues && p.hostHasVictim(s, el[i].host, j) || p.hostCouldMatter(s, el[i].host, j, m.queues) {
				return false
			}
		}
	}
	m.gen, m.eligSeq = gen, s.pre.eligSeq
	return true
}

// hostCouldMatter reports whether host h could take a task of waiting job
// j with every job there that may be its victim gone (an optimistic test:
// priorities only, no minimum run times; with the quotas, any job of
// another queue; a shared GPU a victim uses counts as freed).
func (p *PlanPreemptor) hostCouldMatter(s *Scheduler, h topology.HostID, j *job, queues bool) bool {
	l := s.ledger
	if l.HostHealth(h) != topology.Healthy {
		return false
	}
	if allow := j.req.AllowHost; allow != nil && !allow(h) {
		return false
	}
	var cpu, mem int64
	gpus := 0
	for _, v := range s.onHost[h] {
		if !p.mayBeVictim(v, j, queues) {
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
func (p *PlanPreemptor) hostHasVictim(s *Scheduler, h topology.HostID, j *job) bool {
	for _, v := range s.onHost[h] {
		if p.mayBeVictim(v, j, true) {
			return true
		}
	}
	return false
}

// mayBeVictim reports whether holding job v could be a victim of waiting
// job j by the rules of p (optimistic: minimum run times and fresh
// admissions ignored; with the quotas, any job of another queue).
func (p *PlanPreemptor) mayBeVictim(v, j *job, queues bool) bool {
	sp := &v.spec
	switch {
	case v.preempting || v.pre.recovering || sp.NonPreemptible || sp.MaxPreemptions > 0 && v.preemptions >= sp.MaxPreemptions:
		return false // (a stop in progress frees its host later: a gain then)
	case queues && v.leaf != j.leaf:
		return true
	}
	switch p.cfg.LowerPriority {
	case preempt.WithinQueue:
		return v.leaf == j.leaf && sp.Priority < j.spec.Priority
	case preempt.AnyQueue:
		return sp.Priority < j.spec.Priority
	}
	return false
}

func victimReason(v *preempt.Victim, prio int32, q string) string {
	var why string
	switch v.Ground {
	case preempt.GroundPriority:
		why = fmt.Sprintf("priority %d < %d", v.Priority, prio)
	case preempt.GroundReclaim:
		why = fmt.Sprintf("queue %s borrows quota %s reclaims", v.Queue, q)
	case preempt.GroundFairShare:
		why = fmt.Sprintf("queue %s is above its fair share", v.Queue)
	default:
		why = v.Ground.String()
	}
	if !v.Whole() {
		why += fmt.Sprintf("; shrink by %d task(s)", len(v.Tasks))
	}
	return why + "; loses " + v.Lost.String() + " since its last checkpoint"
}

// schedSnapshot is the Scheduler seen as a preempt.Snapshot.
type schedSnapshot struct {
	s   *Scheduler
	now time.Time
}

func (x schedSnapshot) Ledger() *topology.Ledger { return x.s.ledger }
func (x schedSnapshot) Queues() *queue.Tree      { return x.s.tree }

// Jobs lists the holding jobs in order of estimated end (deterministic).
func (x schedSnapshot) Jobs(fn func(*preempt.Job) bool) {
	s := x.s
	s.ends.Ascend(func(j *job) bool {
		return fn(s.preemptJob(j))
	})
}

// Roster returns the index of the holding jobs, built on first use and
// kept in step by the events since (preempt.Indexed).
func (x schedSnapshot) Roster() *preempt.Roster {
	s := x.s
	if s.pre.noRoster {
		return nil
	}
	if s.pre.roster == nil {
		s.pre.roster = preempt.NewRoster()
		s.ends.Ascend(func(j *job) bool {
			s.ensureIndexed(j)
			return true
		})
	}
	return s.pre.roster
}

// Commitments lists the charges of jobs being preempted or recovered (to
// be released) and the demands of nominated jobs (to be charged).
func (x schedSnapshot) Commitments(fn func(q string, v queue.Vector, release bool)) {
	s := x.s
	keep := s.pre.stopping[:0]
	for _, j := range s.pre.stopping {
		if j.state.Holding() && (j.preempting || j.pre.recovering) {
			fn(j.leaf.Name(), j.charged, true)
			keep = append(keep, j)
		} else {
			j.pre.listed = false
		}
	}
	clear(s.pre.stopping[len(keep):])
	s.pre.stopping = keep
	for _, n := range s.pre.noms {
		if !n.charged { // (else the tree has it: see hold)
			fn(n.job.leaf.Name(), n.charge, false)
		}
	}
}

// preemptJob refreshes j's preempt.Job view (and its filing in the
// roster).
func (s *Scheduler) preemptJob(j *job) *preempt.Job {
	pj := &j.pre.pj
	pj.Spec, pj.Placement, pj.Started = &j.spec, j.placement, j.started
	pj.Checkpoint, pj.CheckpointInterval = j.pre.checkpoint, j.spec.CheckpointInterval
	pj.Preemptions, pj.Restarts, pj.Charge = j.preemptions, j.pre.restarts, j.charged
	pj.Stopping = j.preempting || j.pre.recovering || j.fresh(s.now)
	pj.End = time.Time{}
	if j.endKnown {
		pj.End = j.end
	}
	if s.pre.roster != nil && j.pre.indexed {
		s.pre.roster.Update(pj)
	}
	return pj
}

// fresh reports whether j was admitted in the cycle at now: it is not a
// victim before the next one.
func (j *job) fresh(now time.Time) bool {
	return j.state == queue.Admitted && !j.admitted.Before(now)
}

// The roster of holding jobs (schedSnapshot.Roster) is kept in step by
// these hooks of the events: preIndex when a job takes its placement,
// preUnindex when it releases it, preUpdate when what the planner
// classifies it by changes (started, priority, being preempted or
// recovered). A job admitted in a cycle is a candidate from the next on:
// startPreemption files it again then.

// preIndex files a job that has just taken its placement.
func (s *Scheduler) preIndex(j *job) {
	j.pre.prio = j.spec.Priority
	if j.fresh(s.now) {
		s.pre.fresh = append(s.pre.fresh, j)
	}
	if s.pre.roster == nil || j.pre.indexed {
		return
	}
	if err := s.pre.roster.Add(s.preemptJob(j)); err != nil {
		panic("gpusched: filing a holding job for preemption: " + err.Error())
	}
	j.pre.indexed = true
}

// ensureIndexed files a holding job the roster does not hold yet (the
// roster is built on first use).
func (s *Scheduler) ensureIndexed(j *job) {
	if !j.pre.indexed {
		if err := s.pre.roster.Add(s.preemptJob(j)); err != nil {
			panic("gpusched: filing a holding job for preemption: " + err.Error())
		}
		j.pre.indexed = true
	}
}

// preUnindex forgets a job that released its placement.
func (s *Scheduler) preUnindex(j *job) {
	if j.pre.indexed {
		s.pre.roster.Remove(&j.pre.pj)
		j.pre.indexed = false
	}
}

// preUpdate files a holding job again after a change.
func (s *Scheduler) preUpdate(j *job) {
	if (j.preempting || j.pre.recovering) && !j.pre.listed {
		s.pre.stopping = append(s.pre.stopping, j)
		j.pre.listed = true
		s.pre.commits++
	}
	if j.state.Holding() && j.pre.prio != j.spec.Priority {
		s.logElig(j) // it may have become a victim
		j.pre.prio = j.spec.Priority
	}
	if j.pre.indexed {
		s.preemptJob(j)
	}
}

// refreshFresh files again the jobs admitted in earlier cycles, now
// candidates.
func (s *Scheduler) refreshFresh() {
	keep := s.pre.fresh[:0]
	for _, j := range s.pre.fresh {
		switch {
		case !j.state.Holding():
		case j.fresh(s.now):
			keep = append(keep, j)
		default:
			s.logElig(j) // a possible victim from now on
			if j.pre.indexed {
				s.preemptJob(j)
			}
		}
	}
	clear(s.pre.fresh[len(keep):])
	s.pre.fresh = keep
}

// lastCheckpoint is j's last checkpoint in its current run: reported, or
// estimated from its CheckpointInterval.
func (s *Scheduler) lastCheckpoint(j *job, now time.Time) time.Time {
	if j.started.IsZero() {
		return time.Time{}
	}
	cp := j.pre.checkpoint
	if iv := j.spec.CheckpointInterval; iv > 0 && now.After(j.started) {
		if est := j.started.Add(now.Sub(j.started) / iv * iv); est.After(cp) && est.After(j.started) {
			cp = est
		}
	}
	if !cp.After(j.started) {
		return time.Time{}
	}
	return cp
}

// jobPreempt is the per-job state of preemption and recovery.
type jobPreempt struct {
	pj         preempt.Job
	indexed    bool           // pj is in the roster
	listed     bool           // in schedPreempt.stopping
	checkpoint time.Time      // last reported checkpoint of the current run
	progress   time.Duration  // work saved by checkpoints of earlier runs
	restarts   int            // stops by failures
	recovering bool           // a recovery action was issued
	recovery   preempt.Action // which
	nominated  *nomination
	noPlan     noPlanMemo // the last failed plan
	prio       int32      // the priority pj was last filed with
}

// schedPreempt is the Scheduler's state of preemption and recovery.
type schedPreempt struct {
	noms   []*nomination
	faults []preempt.Fault
	// roster indexes the holding jobs for the planner (nil until a plan
	// asks); fresh lists the jobs admitted in the last cycles, filed as
	// stopping until a later cycle; stopping the jobs being preempted or
	// recovered (their charges are commitments), pruned lazily.
	roster   *preempt.Roster
	fresh    []*job
	stopping []*job
	noRoster bool // (tests) plan by visiting every holding job
	// elig logs the hosts of jobs that became possible victims without a
	// release (admitted in an earlier cycle, priority changed), for the
	// no-plan memos; eligSeq numbers the entries, eligBase is the first
	// kept. drops counts the nominations dropped.
	elig     []eligChange
	eligSeq  uint64
	eligBase uint64
	drops    uint64
	// commits counts changes to the commitments (stops in progress,
	// nominations) the planner's quota view includes.
	commits uint64
	// holdEpochs counts the tree epochs spent on the nominations' quota
	// holds (see quotaEpoch).
	holdEpochs uint64
}

// eligChange is an entry of schedPreempt.elig.
type eligChange struct {
	seq  uint64
	host topology.HostID
}

const maxElig = 1 << 14

// logElig notes that a job on j's hosts may have become a victim.
func (s *Scheduler) logElig(j *job) {
	for _, h := range j.hosts {
		if len(s.pre.elig) >= maxElig {
			half := len(s.pre.elig) / 2
			s.pre.eligBase = s.pre.elig[half-1].seq + 1
			s.pre.elig = append(s.pre.elig[:0], s.pre.elig[half:]...)
		}
		s.pre.eligSeq++
		s.pre.elig = append(s.pre.elig, eligChange{seq: s.pre.eligSeq, host: h})
	}
}

// nomination is a placement promised to a waiting job once its victims
// have released.
type nomination struct {
	job     *job
	p       *gang.Placement
	victims []*job
	held    []topology.Claim // trial-held in the current cycle
	// charge is what p charges to the job's queue; charged whether it is
	// charged in the current cycle (see hold).
	charge  queue.Vector
	charged bool
	// due is when every victim should have stopped (the latest grace
	// period, twice over, at least a minute past the plan); a host that
	// has not reported them by then lost a stop, and the nomination no
	// longer holds quota, CPU or memory for its job (only the GPUs, as
	// victims still hold theirs), so a lost stop cannot block the other
	// jobs of its queue path for ever.
	due time.Time
}

// overdue reports whether n's victims should have stopped by now.
func (n *nomination) overdue(now time.Time) bool { return now.After(n.due) }

// Recovery is what the host should do with a job hit by a fault (see
// Decision.Recoveries).
type Recovery struct {
	Job string
	// Action: preempt.ActionRequeue (stop now, then report Requeue),
	// ActionDrain (signal, wait Grace for a checkpoint, stop, report
	// Requeue), ActionKeep (let it run; it ends before the drain matters)
	// or ActionEnd (stop, report Failed: it was stopped by failures more
	// often than allowed).
	Action preempt.Action
	Grace  time.Duration
	// Lost is the GPU time lost since its last checkpoint; RestartFrom that
	// checkpoint (zero: from the beginning).
	Lost        preempt.GPUTime
	RestartFrom time.Time
	Reason      string
}

// Checkpointed reports that a running job completed a checkpoint at at
// (≤ now): a preemption or failure then loses only the work since, and a
// requeued job keeps its progress up to it (its runtime estimate shrinks
// by the work saved).
func (s *Scheduler) Checkpointed(id string, at, now time.Time) error {
	now = s.advance(now)
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if j.state != queue.Running {
		return jobErr(id, fmt.Errorf("%w: Checkpointed for a %s job", ErrState, j.state))
	}
	if at.Before(j.started) || at.After(now) {
		return jobErr(id, fmt.Errorf("%w: checkpoint at %s outside its run (%s..%s)", ErrState, at.UTC().Format(time.RFC3339), j.started.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	if at.After(j.pre.checkpoint) {
		j.pre.checkpoint = at
		j.pre.pj.Checkpoint = at
	}
	return nil
}

// Progress returns a live job's last checkpoint in its current run (zero
// when none) and the work its earlier runs saved by checkpoints.
func (s *Scheduler) Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool) {
	j, ok := s.jobs[id]
	if !ok {
		return time.Time{}, 0, false
	}
	return s.lastCheckpoint(j, s.now), j.pre.progress, true
}

// stopped updates a holding job that stops and waits again (Preempted or
// Requeue): it keeps the work up to its last checkpoint as progress, and
// a job requeued after a failure counts a restart (drains do not).
func (s *Scheduler) stopped(j *job, now time.Time) {
	if cp := s.lastCheckpoint(j, now); !cp.IsZero() {
		j.pre.progress += cp.Sub(j.started)
	}
	j.pre.checkpoint = time.Time{}
	if j.pre.recovering && j.pre.recovery == preempt.ActionRequeue {
		j.pre.restarts++
	}
	j.pre.recovering = false
}

// remaining is j's runtime estimate less its saved progress.
func (j *job) remaining(rt time.Duration) time.Duration {
	if p := j.pre.progress; p > 0 && p < rt {
		return rt - p
	}
	return rt
}

// noteGPU and noteHost record a health change for the next cycle's
// recovery plan.
func (s *Scheduler) noteGPU(g topology.GPUID, h topology.Health) {
	s.pre.faults = append(s.pre.faults, preempt.GPUFault(g, h, ""))
}

func (s *Scheduler) noteHost(h topology.HostID, hh topology.Health) {
	s.pre.faults = append(s.pre.faults, preempt.HostFault(h, hh, ""))
}

// startPreemption runs at the start of a cycle: recovery actions for the
// faults since the last cycle, nominated jobs whose victims are gone bound
// to their placement, and the free parts of the other nominations held.
func (s *Scheduler) startPreemption(d *Decision, now time.Time) {
	s.refreshFresh()
	if len(s.pre.faults) > 0 {
		s.recover(d, now)
	}
	// Bind first, then hold what the others need: a bind is checked
	// against the quotas as they are, not with the demands of other
	// nominations added (their victims still hold their charges; the plan
	// that nominated each job counted the others).
	noms := s.pre.noms[:0]
	for _, n := range s.pre.noms {
		j := n.job
		if j.pre.nominated != n || !j.state.Waiting() {
			s.dropNomination(n)
			continue
		}
		if s.victimStillHolding(j) != "" {
			noms = append(noms, n)
			continue
		}
		// Every victim is gone: bind the job to its placement now. The
		// plan counted every stop in progress as done; if a quota still
		// binds while a job stopping below it holds, wait for that one.
		lid := j.leaf.ID()
		b := s.tree.Check(lid, j.demand)
		if b == nil && !slices.Equal(n.charge, j.demand) {
			b = s.tree.Check(lid, n.charge)
		}
		if b != nil {
			if w := s.stoppingUnder(b); w != nil {
				s.jobReason(j, &Reason{Code: WaitPreemption, Blocker: w.spec.ID, Quota: b,
					Detail: fmt.Sprintf("(its victims are gone; queue %s's %s quota comes free when %s stops)", b.Queue, b.Resource, w.spec.ID)})
				noms = append(noms, n)
				continue
			}
		}
		j.waitingFor = nil
		j.pre.nominated = nil
		s.pre.commits++
		if b != nil {
			s.dropNomination(n)
			continue
		}
		s.scratch = *n.p.Clone()
		if !s.admit(d, j.leaf, j, nil, now) {
			s.dropNomination(n)
		}
	}
	clear(s.pre.noms[len(noms):])
	s.pre.noms = noms
	for _, n := range noms {
		s.hold(n)
	}
}

// endPreemption gives back what the nominations held in the cycle: their
// free parts of the ledger and their charges to the quotas.
func (s *Scheduler) endPreemption() {
	for i := len(s.pre.noms) - 1; i >= 0; i-- {
		s.unhold(s.pre.noms[i])
	}
}

// hold keeps what n's job will take off limits to the other jobs of the
// cycle while its victims stop. It trial-allocates the parts of n's
// placement that are free now: whole claims where they are free, else
// each GPU of the claim that is, and of the host's CPU and memory as much
// of the claim's as is free (a victim still holds the rest, which it
// releases to n). And it charges n's demand to its queue, as if admitted:
// no job admitted meanwhile takes the quota n's victims free, so n's bind
// passes the quota check when they are gone. A victim's charge stays
// until it stops, so the quotas on n's path count both meanwhile (a
// conservative hold, for a grace period). endPreemption undoes both.
func (s *Scheduler) hold(n *nomination) {
	l := s.ledger
	for _, cl := range n.p.Claims {
		if l.TrialAllocate(cl) == nil {
			n.held = append(n.held, cl)
			continue
		}
		for _, g := range cl.GPUs {
			part := topology.Claim{Host: cl.Host, GPUs: []topology.GPUClaim{g}}
			if l.TrialAllocate(part) == nil {
				n.held = append(n.held, part)
			}
		}
		if n.overdue(s.now) {
			continue
		}
		part := topology.Claim{Host: cl.Host, CPUMilli: min(cl.CPUMilli, l.CPUFree(cl.Host)), MemoryMiB: min(cl.MemoryMiB, l.MemoryFree(cl.Host))}
		if (part.CPUMilli > 0 || part.MemoryMiB > 0) && l.TrialAllocate(part) == nil {
			n.held = append(n.held, part)
		}
	}
	if !n.charged && !n.overdue(s.now) && s.tree.GovernsAny() {
		s.tree.Admit(n.job.leaf.ID(), n.charge, s.now)
		n.charged = true
		s.pre.holdEpochs++
	}
}

// unhold gives back what hold took.
func (s *Scheduler) unhold(n *nomination) {
	if len(n.held) > 0 {
		if err := s.ledger.TrialRelease(n.held...); err != nil {
			panic("gpusched: releasing a nomination's hold failed: " + err.Error())
		}
		clear(n.held)
		n.held = n.held[:0]
	}
	if n.charged {
		s.tree.Release(n.job.leaf.ID(), n.charge, false, s.now)
		n.charged = false
		s.pre.holdEpochs++
	}
}

// heldDetail notes, for a quota block b met in a cycle, the nominated
// jobs whose held demand b's usage counts ("" when none).
func (s *Scheduler) heldDetail(b *queue.Block) string {
	if len(s.pre.noms) == 0 {
		return ""
	}
	node, ok := s.tree.Lookup(b.Queue)
	if !ok {
		return ""
	}
	var ids []string
	for _, n := range s.pre.noms {
		if !n.charged {
			continue
		}
		for id := n.job.leaf.ID(); id >= 0; id = s.tree.Parent(id) {
			if id == node {
				ids = append(ids, n.job.spec.ID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("(in use counts what is held for %s while its victims stop)", strings.Join(ids, ", "))
}

// quotaEpoch is the tree's usage epoch less the changes of the
// nominations' quota holds, which are taken and given back every cycle
// (the commitment counter follows the nominations themselves).
func (s *Scheduler) quotaEpoch() uint64 {
	return s.tree.Epoch() - s.pre.holdEpochs
}

// dropNomination forgets a nomination whose job will not take it; what it
// held is free again, so cached placement failures may be stale.
func (s *Scheduler) dropNomination(n *nomination) {
	if n.job.pre.nominated == n {
		n.job.pre.nominated = nil
	}
	clear(s.fails)
	s.pre.drops++
	s.pre.commits++
}

// maybePreempt asks the Preemptor, if any, for victims for j, which the
// cycle could not admit (x is the placer's explanation, nil for a quota
// block). With a PlacingPreemptor the job is nominated to the planned
// placement.
func (s *Scheduler) maybePreempt(d *Decision, leaf *queue.Leaf, j *job, x *gang.Explanation, now time.Time) {
	if s.cfg.Preemptor == nil || j.pre.nominated != nil {
		return
	}
	c := PreemptCandidate{Job: &j.spec, Request: j.req, Queue: leaf.Name(), Why: x}
	var vs []Preemption
	var p *gang.Placement
	if pp, ok := s.cfg.Preemptor.(PlacingPreemptor); ok {
		vs, p = pp.PreemptPlan(s, c, now)
	} else {
		vs = s.cfg.Preemptor.Preempt(s, c, now)
	}
	var asked []string
	var victims []*job
	for _, v := range vs {
		vj, ok := s.jobs[v.Job]
		if !ok || !vj.state.Holding() || vj.preempting || vj == j {
			continue
		}
		vj.preempting = true
		s.preUpdate(vj)
		v.For = j.spec.ID
		d.Preemptions = append(d.Preemptions, v)
		asked = append(asked, v.Job)
		victims = append(victims, vj)
	}
	if len(asked) == 0 {
		return
	}
	j.waitingFor = asked
	s.jobReason(j, &Reason{Code: WaitPreemption, Blocker: asked[0], Placement: x, Victims: asked})
	if p != nil && len(asked) == len(vs) {
		var grace time.Duration
		for _, v := range vs {
			grace = max(grace, v.Grace)
		}
		n := &nomination{job: j, p: p.Clone(), victims: victims, due: now.Add(grace + max(grace, time.Minute))}
		n.charge = s.chargeVector(n.p)
		j.pre.nominated = n
		s.pre.noms = append(s.pre.noms, n)
		s.pre.commits++
		s.hold(n)
	}
}

// stoppingUnder returns a job being preempted or recovered that still
// holds a charge of b's resource below b's queue (its stop lowers the
// usage that binds), or nil.
func (s *Scheduler) stoppingUnder(b *queue.Block) *job {
	node, ok := s.tree.Lookup(b.Queue)
	if !ok {
		return nil
	}
	r := s.dimOf(b.Resource)
	for _, w := range s.pre.stopping {
		if !w.state.Holding() || !w.preempting && !w.pre.recovering || w.charged[r] <= 0 {
			continue
		}
		for id := w.leaf.ID(); id >= 0; id = s.tree.Parent(id) {
			if id == node {
				return w
			}
		}
	}
	return nil
}

func (s *Scheduler) victimStillHolding(j *job) string {
	for _, id := range j.waitingFor {
		if v, ok := s.jobs[id]; ok && v.state.Holding() && v.preempting {
			return id
		}
	}
	return ""
}

// recover turns the faults noted since the last cycle into recovery
// actions for the jobs still holding resources on failed or draining
// parts (the ledger already has the health).
func (s *Scheduler) recover(d *Decision, now time.Time) {
	faults := s.pre.faults
	s.pre.faults = nil
	snap := recoverySnapshot{schedSnapshot{s, now}}
	plan, err := preempt.Recover(snap, faults, now, preempt.RecoveryConfig{NoShrink: true, MaxRestarts: s.cfg.MaxRestarts,
		DrainGrace: s.cfg.DrainGrace, KeepIfEndsWithin: s.cfg.DrainKeep})
	if err != nil {
		// The faults were checked by the health setters.
		panic("gpusched: recovery plan: " + err.Error())
	}
	for _, a := range plan.Actions {
		j := s.jobs[a.Job]
		if a.Action != preempt.ActionKeep {
			j.pre.recovering, j.pre.recovery = true, a.Action
			s.preUpdate(j)
		}
		d.Recoveries = append(d.Recoveries, Recovery{Job: a.Job, Action: a.Action, Grace: a.Grace, Lost: a.Lost, RestartFrom: a.RestartFrom, Reason: a.Reason})
	}
}

var _ preempt.Commitments = schedSnapshot{}

// recoverySnapshot lists the holding jobs not already being recovered.
type recoverySnapshot struct{ schedSnapshot }

func (x recoverySnapshot) Jobs(fn func(*preempt.Job) bool) {
	x.s.ends.Ascend(func(j *job) bool {
		if j.pre.recovering {
			return true
		}
		return fn(x.s.preemptJob(j))
	})
}

// formatRecovery renders a recovery for Decision.Format.
func formatRecovery(b *strings.Builder, r *Recovery) {
	fmt.Fprintf(b, "recover %s: %s", r.Job, r.Action)
	if r.Grace > 0 {
		fmt.Fprintf(b, " (grace %v)", r.Grace)
	}
	fmt.Fprintf(b, ", loses %s", r.Lost)
	if !r.RestartFrom.IsZero() {
		fmt.Fprintf(b, ", restarts from %s", r.RestartFrom.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(b, ": %s\n", r.Reason)
}
