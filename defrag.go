package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// DefragConfig turns on defragmentation: a gang blocked only by
// fragmentation (its Reason is WaitFragmentation) for at least After gets
// running jobs moved elsewhere (Decision.Migrations), chosen by
// preempt.Search.Defragment at the least lost work, within Budget.
//
// The host protocol (Migration's doc says it in order): the destination
// of each migrated job is held for it from the Decision that issues the
// move; when it is free then (Migration.Ready) the host may start the
// job there first (make-before-break); the old copy checkpoints within
// Grace, stops, and the host calls Migrated; the Scheduler then binds
// the job on its destination in the next cycle (Decision.Bindings), and the gang, nominated on the room the
// moves make, binds once every migrated job has left. A host that cannot
// move a job calls Preempted instead: the job waits in its queue again
// (its destination is not held), and the gang waits for the others.
type DefragConfig struct {
	// After is how long a gang must have waited (since it was submitted)
	// before migrations are planned for it; 0 means at once.
	After time.Duration
	// Budget bounds the migrations per hour, the GPU time they lose per
	// hour and the value a plan must have (preempt.DefragBudget).
	Budget preempt.DefragBudget
	// MaxPerJob is how often one job may be migrated; 0 means no limit.
	MaxPerJob int
	// Grace is how long a migrated job gets to checkpoint; 0 means the
	// preempt package's default (2 minutes).
	Grace time.Duration
	// Consolidate, if set, also packs running jobs when nothing waits, to
	// free whole domains before a big gang asks (ConsolidateConfig,
	// consolidate.go); nil is off.
	Consolidate *ConsolidateConfig
}

func (c *DefragConfig) validate() error {
	switch {
	case c.After < 0:
		return fmt.Errorf("gpusched: Config.Defrag.After: negative %v", c.After)
	case c.MaxPerJob < 0:
		return fmt.Errorf("gpusched: Config.Defrag.MaxPerJob: negative %d", c.MaxPerJob)
	case c.Grace < 0:
		return fmt.Errorf("gpusched: Config.Defrag.Grace: negative %v", c.Grace)
	}
	if err := c.Budget.Validate(); err != nil {
		return fmt.Errorf("gpusched: Config.Defrag: %w", err)
	}
	if c.Consolidate != nil {
		return c.Consolidate.validate()
	}
	return nil
}

// Migration is a running job to move so that a blocked gang can start.
// From the Decision that issues it until the host calls Migrated (or
// Preempted, Finished, Failed or Cancel), To is held for the job: no
// other job is placed on what of it is free.
//
// The host's duties, in order:
//
//  1. When Ready (make-before-break: To was wholly free when the
//     migration was issued, and it is held), it may start the job's new
//     copy on To at once (pull, load, warm up), before the old one
//     stops. Otherwise To frees only as other moves leave, and the new
//     copy starts after step 3.
//  2. Checkpoint the old copy within Grace and stop it, releasing From.
//  3. Call Migrated: the Scheduler releases From and binds the job on To
//     in the next cycle (a Binding, which a host that started the copy
//     in step 1 confirms rather than starts again); the copy resumes
//     from the checkpoint of step 2.
//
// A host that cannot move the job calls Preempted instead of Migrated
// (and stops any copy of step 1): the job waits in its queue again.
type Migration struct {
	Job string
	// For is the gang the move makes room for; empty for a move of
	// consolidation when idle (ConsolidateConfig).
	For string
	// From is what it releases (its current claims); To where it goes,
	// one claim per task. Both are copies.
	From, To []topology.Claim
	// Grace is its time to checkpoint.
	Grace time.Duration
	// Lost is the GPU time lost since its last checkpoint.
	Lost preempt.GPUTime
	// Ready says To is free now and held for the job: the host may start
	// it there before stopping it on From (make-before-break).
	Ready bool
}

// defragger is the defragmentation concern: the planner, the budget's log
// of migrations issued, and the moves in flight. Its methods are the only
// writers of its fields.
type defragger struct {
	cfg    *DefragConfig // nil: off
	search *preempt.Search
	placer gang.Placer // the placer search was built with
	log    preempt.DefragLog
	// moving maps a job being migrated to its destination. Invariant: a
	// job is in moving iff a Migration for it was issued and neither
	// Migrated nor any other event that ends its run came since.
	moving map[string]*gang.Placement
	// order lists the jobs of moving in the order their migrations were
	// issued (holds are taken in it).
	order []string
	// held is what the destinations of moving jobs hold in the ledger in
	// the current cycle (trial allocations, given back at its end).
	held pieces
	// moves counts the migrations each live job has completed.
	moves map[string]int
	// failed maps a job to the ledger generation and the time at which
	// its last plan failed: it is not planned again at that time while
	// the ledger is as it was. A pure cache: a plan depends on the time
	// too (minimum run times, refusals and fresh admissions lapse), so a
	// failure holds for its instant only, and planning again then fails
	// as well (a Scheduler restored without it decides the same).
	// Dropped when the job leaves or gets a plan.
	failed map[string]planFailed
}

// planFailed is when a job's last defragmentation plan failed: ledger
// generation and time.
type planFailed struct {
	gen uint64
	at  time.Time
}

func newDefragger(cfg *DefragConfig) (defragger, error) {
	if cfg == nil {
		return defragger{}, nil
	}
	if err := cfg.validate(); err != nil {
		return defragger{}, err
	}
	return defragger{cfg: cfg, moving: map[string]*gang.Placement{}, moves: map[string]int{}, failed: map[string]planFailed{}}, nil
}

// planner returns the search, built for placer p.
func (x *defragger) planner(p gang.Placer) *preempt.Search {
	if x.search == nil || !samePlacer(x.placer, p) {
		x.search, _ = preempt.New(preempt.Config{Placer: p, Grace: x.cfg.Grace, MaxMigrations: 0}) // validated fields only
		x.placer = p
	}
	return x.search
}

// admissible reports whether plan p may be issued at now: no job of it
// already moving or at its cap, and within the budget. The second result
// says why not.
func (x *defragger) admissible(p *preempt.DefragPlan, now time.Time) (bool, string) {
	for _, m := range p.Migrations {
		if _, ok := x.moving[m.Job]; ok {
			return false, m.Job + " is already moving"
		}
		if x.cfg.MaxPerJob > 0 && x.moves[m.Job] >= x.cfg.MaxPerJob {
			return false, fmt.Sprintf("%s was migrated %d times", m.Job, x.moves[m.Job])
		}
	}
	if r := x.cfg.Budget.Admit(&x.log, p, now); r != nil {
		return false, r.Error()
	}
	return true, ""
}

// inFlight reports whether some migration is in flight.
func (x *defragger) inFlight() bool { return len(x.order) > 0 }

// mayMove reports whether job id may be given a migration: not moving
// and under MaxPerJob.
func (x *defragger) mayMove(id string) bool {
	if _, ok := x.moving[id]; ok {
		return false
	}
	return x.cfg.MaxPerJob == 0 || x.moves[id] < x.cfg.MaxPerJob
}

// headroom returns the migrations and lost GPU time the budget leaves in
// the hour before now (0: no bound), and false when it leaves none.
func (x *defragger) headroom(now time.Time) (int, preempt.GPUTime, bool) {
	return headroomOf(x.cfg.Budget, &x.log, now)
}

// issue records plan p as issued at now.
func (x *defragger) issue(p *preempt.DefragPlan, now time.Time) {
	x.log.Record(p, now)
	for _, m := range p.Migrations {
		x.moving[m.Job] = m.To.Clone()
		x.order = append(x.order, m.Job)
	}
}

// holdAll holds, at the start of a cycle's placements, the destinations
// of the jobs being moved: each task's claim that is wholly free is taken
// in the ledger (a trial allocation), so no other job is placed there. A
// claim on room another move has yet to free is held once it is free.
func (x *defragger) holdAll(l *topology.Ledger) {
	for _, id := range x.order {
		x.hold(l, x.moving[id])
	}
}

// hold takes the claims of destination p that are free in the ledger and
// reports whether that was all of them.
func (x *defragger) hold(l *topology.Ledger, p *gang.Placement) bool {
	all := true
	for _, cl := range p.Claims {
		all = x.held.trialTake(l, cl) && all
	}
	return all
}

// unholdAll gives back what the cycle's holds took.
func (x *defragger) unholdAll(l *topology.Ledger) {
	if err := x.held.trialGiveBack(l); err != nil {
		panic("gpusched: releasing a migration destination's hold failed: " + err.Error())
	}
}

// gone drops id from moving and order.
func (x *defragger) gone(id string) {
	delete(x.moving, id)
	if i := slices.Index(x.order, id); i >= 0 {
		x.order = slices.Delete(x.order, i, i+1)
	}
}

// arrived takes the destination of a job that reports Migrated.
func (x *defragger) arrived(id string) (*gang.Placement, bool) {
	to, ok := x.moving[id]
	if ok {
		x.gone(id)
		x.moves[id]++
	}
	return to, ok
}

// forget drops what the concern knows of a job whose run ended or was
// stopped otherwise (its move, if any, is off).
func (x *defragger) forget(id string, ended bool) {
	if x.cfg == nil {
		return
	}
	x.gone(id)
	if ended {
		delete(x.moves, id)
		delete(x.failed, id)
	}
}

// maybeDefrag plans migrations for blocked job j (Reason x) when
// defragmentation is on, j has waited long enough and is blocked by
// fragmentation only; it issues them within the budget and nominates j on
// the room they make. It reports whether it did.
//
// A capacity verdict is planned for too: x may be a cached failure's
// explanation from an earlier cycle (Reason.ExplainedAt), which GPUs
// freed since on hosts that cannot take a task of j leave cached though
// they may have turned it into fragmentation; Defragment itself answers
// capacity, without a plan, when the free GPUs are too few. So the
// decision does not depend on the cache.
func (s *Scheduler) maybeDefrag(d *Decision, leaf *queue.Leaf, j *job, req *gang.Request, x *gang.Explanation, now time.Time) bool {
	g := &s.dfg
	if g.cfg == nil || x == nil || x.Verdict != gang.VerdictFragmentation && x.Verdict != gang.VerdictCapacity || j.nom.nominated != nil || len(j.nom.waitingFor) > 0 {
		return false
	}
	if now.Sub(j.entry.Submitted) < g.cfg.After {
		return false
	}
	at := planFailed{gen: s.ledger.Generation(), at: now}
	if f, ok := g.failed[j.spec.ID]; ok && f.gen == at.gen && f.at.Equal(now) {
		return false // nothing changed since the last plan failed
	}
	pend := &preempt.Pending{Request: req, Queue: leaf.Name(), Priority: j.spec.Priority, Demand: s.adm.demand(req)}
	plan, _ := g.planner(s.placer).Defragment(schedSnapshot{s, now}, pend, now)
	if plan == nil || len(plan.Migrations) == 0 {
		g.failed[j.spec.ID] = at
		return false
	}
	var victims []*job
	for _, m := range plan.Migrations {
		vj, ok := s.jobs.byID[m.Job]
		if !ok || !vj.state.Holding() || vj.vic.preempting || vj == j {
			return false
		}
		victims = append(victims, vj)
	}
	if ok, _ := g.admissible(plan, now); !ok {
		return false // the budget may allow it later: planned again
	}
	delete(g.failed, j.spec.ID)
	g.issue(plan, now)
	var ids []string
	var grace time.Duration
	for i, m := range plan.Migrations {
		s.victims.ask(victims[i], now)
		ready := g.hold(s.ledger, m.To)
		d.Migrations = append(d.Migrations, Migration{Job: m.Job, For: j.spec.ID, From: cloneClaims(m.From), To: cloneClaims(m.To.Claims), Grace: m.Grace, Lost: m.Lost, Ready: ready})
		ids = append(ids, m.Job)
		grace = max(grace, m.Grace)
	}
	s.noms.waitFor(j, ids)
	s.cyc.explain(j, &Reason{Code: WaitPreemption, Blocker: ids[0], Placement: x, Victims: ids})
	p := plan.Placement.Clone()
	n := s.noms.nominate(j, p, victims, s.adm.charge(p), now.Add(grace+max(grace, time.Minute)))
	s.noms.hold(n, s.ledger, s.tree, now)
	return true
}

func cloneClaims(cs []topology.Claim) []topology.Claim {
	out := make([]topology.Claim, len(cs))
	for i, c := range cs {
		c.GPUs = append([]topology.GPUClaim(nil), c.GPUs...)
		out[i] = c
	}
	return out
}

// ErrNotMoving is returned by Migrated for a live job with no migration
// in flight (ErrUnknownJob for a job that is not live, ErrAlreadyApplied
// for one remembered as ended).
var ErrNotMoving = errors.New("no migration in flight")

// Migrated reports that job id, asked to move by a Decision.Migrations
// entry, has checkpointed and stopped at its old placement, at now. Its
// old claims are released; its destination is held for it and it binds
// there in the next cycle (a Binding), restarting from its checkpoint. If
// the destination was taken meanwhile, or a host filter set since the
// move was planned forbids it (SetHostFilter), it waits in its queue as
// a requeued job would.
func (s *Scheduler) Migrated(id string, now time.Time) error {
	if err := s.mutating("Migrated", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Migrated", id); err != nil {
		return err
	}
	if _, err := s.lookup(id); err != nil {
		return err
	}
	to, ok := s.dfg.arrived(id)
	if !ok {
		return jobErr(id, ErrNotMoving)
	}
	if err := s.back(id, now, queue.Requeued, "Migrated"); err != nil {
		return err
	}
	j := s.jobs.byID[id]
	if !s.hosts.allows(j, to) {
		return nil // a filter set since the move forbids its destination (hostfilter.go): it waits
	}
	s.noms.nominate(j, to, nil, s.adm.charge(to), now.Add(time.Hour))
	return nil
}
