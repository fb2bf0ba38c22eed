package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// This file wires package preempt into the Scheduler: the Preemptor built
// on its planner, the Scheduler seen as its snapshot, and asking the
// Preemptor in a cycle. Nominations (nominations.go), the victim index
// (victims.go), recovery (recovery.go) and the no-plan verdicts
// (noplan.go) are concerns of their own.

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
	PreemptPlan(v PreemptView, job PreemptCandidate, now time.Time) ([]Preemption, *gang.Placement)
}

// PlanPreemptor is the Preemptor built on package preempt: for a job the
// cycle could not admit (placement or quota), it plans the cheapest
// victims by the rules of preempt.Config (lower priority, reclaim of
// borrowed quota, fair share; minimum run time, preemption caps and
// non-preemptible jobs respected; gang- and topology-aware; minimal lost
// work since checkpoints) and the placement the job gets.
//
// Victims stop whole unless the Scheduler's Config.Elastic is set: then
// an elastic gang above its minimum may be shrunk instead (a Preemption
// with Shrink, reported in Decision.Shrinks; see ElasticConfig for how it
// is priced), unless preempt.Config.NoShrink is set. Without
// Config.Elastic, NoShrink is always set.
//
// Checkpoints come from Scheduler.Checkpointed; for a running job that
// never reported one but has a CheckpointInterval, the last checkpoint is
// estimated as the last whole interval since it started. Jobs admitted in
// the same cycle, jobs being preempted and jobs being recovered are never
// victims; and a plan that would stop a job preempted before and admitted
// again at the same time is not carried out before time advances (no job
// is preempted twice at one instant). A plan that failed is not tried again for the same job until
// the ledger or the quotas change (when it is the Scheduler's
// Config.Preemptor itself: the Scheduler keeps these verdicts, NoPlans).
// It reads the Scheduler only through the PreemptView, as any Preemptor.
type PlanPreemptor struct {
	cfg     preempt.Config
	search  *preempt.Search
	placer  gang.Placer
	shrinks bool // search was built to shrink elastic gangs
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
	if _, err := preempt.New(cfg); err != nil {
		return nil, err
	}
	return &PlanPreemptor{cfg: cfg, maxPlan: maxPerCycle}, nil
}

var _ PlacingPreemptor = (*PlanPreemptor)(nil)

// Preempt returns the victims of PreemptPlan.
func (p *PlanPreemptor) Preempt(v PreemptView, c PreemptCandidate, now time.Time) []Preemption {
	vs, _ := p.PreemptPlan(v, c, now)
	return vs
}

// PreemptPlan plans victims for the candidate with package preempt. It
// reads only through v. (The Scheduler keeps the verdicts of its own
// PlanPreemptor's failed plans — noplan.go — and does not ask again for
// a job whose verdict still holds; a PlanPreemptor called through
// another Preemptor has none.)
func (p *PlanPreemptor) PreemptPlan(v PreemptView, c PreemptCandidate, now time.Time) ([]Preemption, *gang.Placement) {
	vs, pl, _ := p.plan(v, c, now)
	return vs, pl
}

// plan is PreemptPlan with what the Scheduler's noplan concern records
// of it (noPlanOutcome): the job's standing verdict held, or no plan
// exists and why.
func (p *PlanPreemptor) plan(v PreemptView, c PreemptCandidate, now time.Time) ([]Preemption, *gang.Placement, noPlanOutcome) {
	src := v.src
	if n := src.planCycle(); p.cycle != n {
		p.cycle, p.plans = n, 0
	}
	if p.plans >= p.maxPlan {
		return nil, nil, noPlanOutcome{}
	}
	placer := src.planPlacer()
	shrinks := src.shrinkOn() && !p.cfg.NoShrink
	if p.search == nil || p.cfg.Placer == nil && !samePlacer(p.placer, placer) || p.shrinks != shrinks {
		cfg := p.cfg
		if cfg.Placer == nil {
			cfg.Placer = placer
		}
		cfg.NoShrink = !shrinks
		p.search, _ = preempt.New(cfg) // validated by NewPlanPreemptor
		p.placer, p.shrinks = placer, shrinks
	}
	pending := func() *preempt.Pending {
		return &preempt.Pending{Request: c.Request, Queue: c.Queue, Priority: c.Job.Priority, Demand: src.demandOf(c.Request), Unplaced: c.Why != nil}
	}
	if src.noPlanHeld(c.Job.ID, p.cfg.LowerPriority, now) {
		if p.testMemo != nil {
			plan, _ := p.search.Plan(src.planSnapshot(now), pending(), now)
			p.testMemo(c.Job.ID, plan)
		}
		return nil, nil, noPlanOutcome{held: true} // nothing that matters changed since the last plan failed
	}
	p.plans++
	pend := pending()
	plan, why := p.search.Plan(src.planSnapshot(now), pend, now)
	if plan == nil || len(plan.Victims) == 0 {
		return nil, nil, noPlanOutcome{why: why, quota: c.Why == nil}
	}
	out := make([]Preemption, 0, len(plan.Victims))
	for _, v := range plan.Victims {
		out = append(out, Preemption{Job: v.Job, Grace: v.Grace, Reason: victimReason(&v, c.Job.Priority, c.Queue), Shrink: slices.Clone(v.Tasks)})
	}
	return out, plan.Placement, noPlanOutcome{}
}

// samePlacer reports whether placers a and b are the same value. A
// placer whose values cannot be compared (a struct holding a func or a
// slice) is never the same as another: the caller builds its search
// again rather than panic.
func samePlacer(a, b gang.Placer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
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

// planSnapshot is the Scheduler seen by package preempt at now
// (planSource).
func (s *Scheduler) planSnapshot(now time.Time) preempt.Snapshot { return schedSnapshot{s, now} }

func (x schedSnapshot) Ledger() *topology.Ledger { return x.s.ledger }
func (x schedSnapshot) Queues() *queue.Tree      { return x.s.tree }

// Jobs lists the holding jobs in order of estimated end (deterministic).
func (x schedSnapshot) Jobs(fn func(*preempt.Job) bool) {
	x.s.jobs.ascendEnds(func(j *job) bool {
		return fn(x.s.victims.view(j, x.now))
	})
}

// Roster returns the index of the holding jobs, built on first use and
// kept in step by the events since (preempt.Indexed).
func (x schedSnapshot) Roster() *preempt.Roster {
	return x.s.victims.buildRoster(&x.s.jobs, x.now)
}

// Commitments lists the charges of jobs being preempted or recovered (to
// be released) and the demands of nominated jobs (to be charged).
func (x schedSnapshot) Commitments(fn func(q string, v queue.Vector, release bool)) {
	s := x.s
	s.victims.stoppingJobs(func(j *job) { fn(j.leaf.Name(), s.elastic.releasing(s, j), true) })
	for _, n := range s.noms.list {
		if !n.charged { // (else the tree has it: see hold)
			fn(n.job.leaf.Name(), n.charge, false)
		}
	}
}

// commits counts the changes to what the planner's quota view commits
// to: stops begun (victim index) and nominations made, bound or dropped.
// Both counters only grow, so their sum changes whenever either does.
func (s *Scheduler) commits() uint64 { return s.victims.stops + s.noms.changes }

// maybePreempt asks the Preemptor, if any, for victims for j, which the
// cycle could not admit (x is the placer's explanation, nil for a quota
// block; allow is j's own model filter of this cycle). With a
// PlacingPreemptor the job is nominated to the planned placement. It
// reports whether it asked for stops (or moves) for j: j then waits for
// them, explained as WaitPreemption.
func (s *Scheduler) maybePreempt(d *Decision, leaf *queue.Leaf, j *job, x *gang.Explanation, allow func(topology.HostID) bool, now time.Time) bool {
	req := s.cyc.request(j, allow)
	if s.maybeDefrag(d, leaf, j, req, x, now) { // moving jobs first (defrag.go)
		return true
	}
	if s.cfg.Preemptor == nil || j.nom.nominated != nil {
		return false
	}
	c := PreemptCandidate{Job: &j.spec, Request: req, Queue: leaf.Name(), Why: x}
	var vs []Preemption
	var p *gang.Placement
	switch pp := s.cfg.Preemptor.(type) {
	case *PlanPreemptor:
		var o noPlanOutcome
		vs, p, o = pp.plan(PreemptView{s}, c, now)
		s.recordNoPlan(j, o) // (noplan.go)
	case PlacingPreemptor:
		vs, p = pp.PreemptPlan(PreemptView{s}, c, now)
	default:
		vs = s.cfg.Preemptor.Preempt(PreemptView{s}, c, now)
	}
	for _, v := range vs {
		if vj, ok := s.jobs.byID[v.Job]; ok && vj.readmittedAt(now) {
			return false // j waits for time to advance
		}
	}
	var asked []string
	var victims []*job
	for _, v := range vs {
		vj := s.victimOf(&v, j)
		if vj == nil {
			continue
		}
		v.For = j.spec.ID
		if v.Shrink != nil {
			if !s.shrinkVictim(d, vj, v, now) { // (elastic.go)
				continue
			}
		} else {
			s.victims.ask(vj, now)
			d.Preemptions = append(d.Preemptions, v)
		}
		asked = append(asked, v.Job)
		victims = append(victims, vj)
	}
	if len(asked) == 0 {
		return false
	}
	s.noms.waitFor(j, asked)
	s.cyc.explain(j, &Reason{Code: WaitPreemption, Blocker: asked[0], Placement: x, Victims: asked})
	if p != nil && len(asked) == len(vs) {
		var grace time.Duration
		for _, v := range vs {
			grace = max(grace, v.Grace)
		}
		p = p.Clone()
		n := s.noms.nominate(j, p, victims, s.adm.charge(p), now.Add(grace+max(grace, time.Minute)))
		s.noms.hold(n, s.ledger, s.tree, now)
	}
	return true
}

// victimOf returns the holding job a Preemptor's entry v for j asks to
// stop, or nil for an entry the Scheduler drops (see Preemptor): one
// naming no holding job, j itself or a job already being stopped, or
// with a negative Grace.
func (s *Scheduler) victimOf(v *Preemption, j *job) *job {
	vj, ok := s.jobs.byID[v.Job]
	if !ok || !vj.state.Holding() || vj.vic.preempting || vj == j || v.Grace < 0 {
		return nil
	}
	return vj
}

// readmittedAt reports whether j, preempted before, was admitted again at
// now. No plan that stops it is carried out before time advances: no job
// is preempted twice at one instant, so the cycles at one time settle
// even where the planner's grounds would take a room back and forth (a
// preemption ping-pong, each stop reported at once). It reads only what a
// saved state holds (Admitted, Preemptions).
func (j *job) readmittedAt(now time.Time) bool {
	return j.preemptions > 0 && j.state.Holding() && !j.admitted.Before(now)
}

// dropNomination forgets a nomination whose job will not take it; what it
// held is free again, so cached placement failures may be stale.
func (s *Scheduler) dropNomination(n *nomination) {
	s.noms.drop(n)
	s.fit.invalidateAll()
}

// stoppingUnder returns a job being preempted or recovered that still
// holds a charge of b's resource below b's queue (its stop lowers the
// usage that binds), or nil.
func (s *Scheduler) stoppingUnder(b *queue.Block) *job {
	node, ok := s.tree.Lookup(b.Queue)
	if !ok {
		return nil
	}
	return s.victims.stoppingUnder(s.tree, node, s.adm.dimOf(b.Resource))
}

// victimStillHolding returns a victim asked for j that still holds, or "".
func (s *Scheduler) victimStillHolding(j *job) string {
	for _, id := range j.nom.waitingFor {
		if v, ok := s.jobs.byID[id]; ok && v.state.Holding() && v.vic.preempting {
			return id
		}
	}
	return ""
}

var _ preempt.Commitments = schedSnapshot{}
