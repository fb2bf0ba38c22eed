package gpusched

import (
	"errors"
	"fmt"
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
// The host protocol: each migrated job checkpoints within Grace, stops,
// and the host calls Migrated; the Scheduler then holds its destination
// for it (a nomination without victims) and binds it there in the next
// cycle (Decision.Bindings), and the gang, nominated on the room the
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
	return nil
}

// Migration is a running job to move so that a blocked gang can start:
// checkpoint within Grace, stop, then call Migrated; the job restarts on
// To (a Binding of a later cycle).
type Migration struct {
	Job string
	// For is the gang the move makes room for.
	For string
	// From is what it releases (its current claims); To where it goes,
	// one claim per task. Both are copies.
	From, To []topology.Claim
	// Grace is its time to checkpoint.
	Grace time.Duration
	// Lost is the GPU time lost since its last checkpoint.
	Lost preempt.GPUTime
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
	// moves counts the migrations each live job has completed.
	moves map[string]int
	// failed maps a job to the ledger generation at which its last plan
	// failed: it is not planned again until the ledger changes. Dropped
	// when the job leaves or gets a plan.
	failed map[string]uint64
}

func newDefragger(cfg *DefragConfig) (defragger, error) {
	if cfg == nil {
		return defragger{}, nil
	}
	if err := cfg.validate(); err != nil {
		return defragger{}, err
	}
	return defragger{cfg: cfg, moving: map[string]*gang.Placement{}, moves: map[string]int{}, failed: map[string]uint64{}}, nil
}

// planner returns the search, built for placer p.
func (x *defragger) planner(p gang.Placer) *preempt.Search {
	if x.search == nil || x.placer != p {
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

// issue records plan p as issued at now.
func (x *defragger) issue(p *preempt.DefragPlan, now time.Time) {
	x.log.Record(p, now)
	for _, m := range p.Migrations {
		x.moving[m.Job] = m.To.Clone()
	}
}

// arrived takes the destination of a job that reports Migrated.
func (x *defragger) arrived(id string) (*gang.Placement, bool) {
	to, ok := x.moving[id]
	if ok {
		delete(x.moving, id)
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
	delete(x.moving, id)
	if ended {
		delete(x.moves, id)
		delete(x.failed, id)
	}
}

// maybeDefrag plans migrations for blocked job j (Reason x) when
// defragmentation is on, j has waited long enough and is blocked by
// fragmentation only; it issues them within the budget and nominates j on
// the room they make. It reports whether it did.
func (s *Scheduler) maybeDefrag(d *Decision, leaf *queue.Leaf, j *job, x *gang.Explanation, now time.Time) bool {
	g := &s.dfg
	if g.cfg == nil || x == nil || x.Verdict != gang.VerdictFragmentation || j.nom.nominated != nil || len(j.nom.waitingFor) > 0 {
		return false
	}
	if now.Sub(j.entry.Submitted) < g.cfg.After {
		return false
	}
	gen := s.ledger.Generation()
	if at, ok := g.failed[j.spec.ID]; ok && at == gen {
		return false // nothing changed since the last plan failed
	}
	pend := &preempt.Pending{Request: j.req, Queue: leaf.Name(), Priority: j.spec.Priority, Demand: s.adm.demand(j.req)}
	plan, _ := g.planner(s.placer).Defragment(schedSnapshot{s, now}, pend, now)
	if plan == nil || len(plan.Migrations) == 0 {
		g.failed[j.spec.ID] = gen
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
		d.Migrations = append(d.Migrations, Migration{Job: m.Job, For: j.spec.ID, From: cloneClaims(m.From), To: cloneClaims(m.To.Claims), Grace: m.Grace, Lost: m.Lost})
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

// ErrNotMoving is returned by Migrated for a job with no migration in
// flight.
var ErrNotMoving = errors.New("no migration in flight")

// Migrated reports that job id, asked to move by a Decision.Migrations
// entry, has checkpointed and stopped at its old placement, at now. Its
// old claims are released; its destination is held for it and it binds
// there in the next cycle (a Binding), restarting from its checkpoint. If
// the destination was taken meanwhile, it waits in its queue as a
// requeued job would.
func (s *Scheduler) Migrated(id string, now time.Time) error {
	to, ok := s.dfg.arrived(id)
	if !ok {
		return jobErr(id, ErrNotMoving)
	}
	if err := s.back(id, now, queue.Requeued, "Migrated"); err != nil {
		return err
	}
	j := s.jobs.byID[id]
	s.noms.nominate(j, to, nil, s.adm.charge(to), now.Add(time.Hour))
	return nil
}
