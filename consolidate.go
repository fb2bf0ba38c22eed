package gpusched

import (
	"cmp"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
)

// ConsolidateConfig turns on consolidation when idle
// (DefragConfig.Consolidate): in a cycle after which no job waits, and
// none has for Idle, with no migration in flight, the Scheduler moves the
// running jobs of one domain elsewhere so that the domain becomes wholly
// free (every healthy GPU free) for a gang that will need it — packing
// the cluster before the big gang arrives rather than after
// (preempt.Search.Consolidate chooses the domain: the least lost work,
// then the fewest moves). The moves are Decision.Migrations with an empty
// For, carried out as defragmentation's are (same protocol, Migrated,
// make-before-break: every destination is free when issued, so every
// move is Ready), within both DefragConfig's budget and Budget, and
// DefragConfig.MaxPerJob. A plan never moves a job into a wholly free
// domain of the level, so each one carried out adds at least one wholly
// free domain to those of the ledger as the cycle that issued it left it
// (the jobs bound in that cycle, such as the last plan's moved jobs on
// their destinations, included). At most one plan is issued per cycle.
type ConsolidateConfig struct {
	// Levels are the levels whose domains it frees, in order of
	// preference when two plans cost the same; nil means the NVLink
	// domains (LevelFabric) and the innermost network level (the ToR),
	// those that exist.
	Levels []topology.Level
	// Idle is how long no job must have waited before a pass; 0 means a
	// pass may run in the first cycle after which nothing waits.
	Idle time.Duration
	// Budget bounds consolidation's own migrations per hour and the GPU
	// time they lose per hour (PerHour, LostPerHour); they count against
	// DefragConfig.Budget too. MinValue must be 0: no gang is served.
	Budget preempt.DefragBudget
	// Target stops consolidating a level once this many of its domains
	// are wholly free; 0 means no bound.
	Target int
	// MaxDomains bounds the candidate domains tried per level and pass
	// (preempt.ConsolidateOptions.MaxDomains); 0 means 8.
	MaxDomains int
}

func (c *ConsolidateConfig) validate() error {
	switch {
	case c.Idle < 0:
		return fmt.Errorf("gpusched: Config.Defrag.Consolidate.Idle: negative %v", c.Idle)
	case c.Target < 0:
		return fmt.Errorf("gpusched: Config.Defrag.Consolidate.Target: negative %d", c.Target)
	case c.MaxDomains < 0:
		return fmt.Errorf("gpusched: Config.Defrag.Consolidate.MaxDomains: negative %d", c.MaxDomains)
	case c.Budget.MinValue != 0:
		return fmt.Errorf("gpusched: Config.Defrag.Consolidate.Budget.MinValue: %v, must be 0 (consolidation serves no gang)", c.Budget.MinValue)
	}
	for i, lv := range c.Levels {
		if lv < topology.LevelFabric {
			return fmt.Errorf("gpusched: Config.Defrag.Consolidate.Levels[%d]: invalid level %d", i, lv)
		}
	}
	if err := c.Budget.Validate(); err != nil {
		return fmt.Errorf("gpusched: Config.Defrag.Consolidate: %w", err)
	}
	return nil
}

// consolidator is the consolidation concern: its budget's log, when
// something last waited, and the ledger generation of the last pass that
// found nothing. Its methods are the only writers of its fields.
type consolidator struct {
	cfg *ConsolidateConfig // nil: off
	log preempt.DefragLog
	// busy is the last cycle's time at which a job waited (zero: none
	// yet).
	busy time.Time
	// failed says the last pass found no plan, at ledger generation
	// failedGen with the budgets leaving failedRoom: nothing is tried
	// again until the ledger changes or the budgets leave more room.
	failed     bool
	failedGen  uint64
	failedRoom room
}

// room is what the budgets leave for one plan: migrations and lost GPU
// time, 0 meaning no bound.
type room struct {
	moves int
	lost  preempt.GPUTime
}

// wider reports whether r leaves more than o in some dimension.
func (r room) wider(o room) bool {
	more := func(a, b int64) bool { return b != 0 && (a == 0 || a > b) }
	return more(int64(r.moves), int64(o.moves)) || more(int64(r.lost), int64(o.lost))
}

func newConsolidator(cfg *DefragConfig) consolidator {
	if cfg == nil || cfg.Consolidate == nil {
		return consolidator{}
	}
	return consolidator{cfg: cfg.Consolidate}
}

// idle reports whether a pass may run at now, given whether a job waits;
// it notes a wait.
func (k *consolidator) idle(waiting bool, now time.Time) bool {
	if waiting {
		k.busy = now
		return false
	}
	return k.busy.IsZero() || now.Sub(k.busy) >= k.cfg.Idle
}

// worthTrying reports whether a pass at ledger generation gen with room
// r may find what the last one did not.
func (k *consolidator) worthTrying(gen uint64, r room) bool {
	return !k.failed || k.failedGen != gen || r.wider(k.failedRoom)
}

// found records the outcome of a pass at ledger generation gen with room
// r.
func (k *consolidator) found(ok bool, gen uint64, r room) {
	k.failed, k.failedGen, k.failedRoom = !ok, gen, r
}

// headroom returns the moves and lost GPU time consolidation's own budget
// leaves in the hour before now (0: no bound), and false when it leaves
// none.
func (k *consolidator) headroom(now time.Time) (int, preempt.GPUTime, bool) {
	return headroomOf(k.cfg.Budget, &k.log, now)
}

// headroomOf returns the migrations and lost GPU time budget b leaves in
// the hour before now, given log (0: no bound), and false when it leaves
// none.
func headroomOf(b preempt.DefragBudget, log *preempt.DefragLog, now time.Time) (int, preempt.GPUTime, bool) {
	n, lost := log.LastHour(now)
	moves, left := 0, preempt.GPUTime(0)
	if b.PerHour > 0 {
		if moves = b.PerHour - n; moves <= 0 {
			return 0, 0, false
		}
	}
	if b.LostPerHour > 0 {
		if left = b.LostPerHour - lost; left <= 0 {
			return 0, 0, false
		}
	}
	return moves, left, true
}

// record notes plan p, issued at now.
func (k *consolidator) record(p *preempt.DefragPlan, now time.Time) { k.log.Record(p, now) }

// levels returns the configured levels, or the defaults for c.
func (k *consolidator) levels(c *topology.Cluster) []topology.Level {
	if k.cfg.Levels != nil {
		return k.cfg.Levels
	}
	lvs := []topology.Level{topology.LevelFabric}
	if inner := topology.LevelHost + 1; inner < c.LevelCluster() {
		lvs = append(lvs, inner)
	}
	return lvs
}

// anyWaiting reports whether a job waits in some queue.
func (s *Scheduler) anyWaiting() bool {
	for _, id := range s.tree.Leaves() {
		if s.tree.LeafOf(id).Len() > 0 {
			return true
		}
	}
	return false
}

// whollyFreeAt counts the domains at lv whose every healthy GPU is free.
func whollyFreeAt(l *topology.Ledger, lv topology.Level) int {
	n := 0
	for _, d := range l.Cluster().DomainsAt(lv) {
		if hg := l.HealthyGPUs(d); hg > 0 && l.FreeGPUs(d) == hg {
			n++
		}
	}
	return n
}

// consolidate runs a consolidation pass at the end of a cycle (after the
// queues were served, with the destinations of moves in flight held):
// when it is on, nothing waits (and nothing has for Idle), no migration
// is in flight and the budgets leave room, it plans one move set per
// level (preempt.Search.Consolidate), keeps the cheapest (lost work, then
// moves, then the order of Levels) and issues it as Decision.Migrations.
func (s *Scheduler) consolidate(d *Decision, now time.Time) {
	k := &s.cons
	if k.cfg == nil || s.dfg.cfg == nil {
		return
	}
	if !k.idle(s.anyWaiting(), now) || s.dfg.inFlight() {
		return
	}
	moves, lost, ok := k.headroom(now)
	if !ok {
		return
	}
	dm, dl, ok := s.dfg.headroom(now)
	if !ok {
		return
	}
	r := room{moves: tighter(moves, dm), lost: tighter(lost, dl)}
	gen := s.ledger.Generation()
	if !k.worthTrying(gen, r) {
		return
	}
	search := s.dfg.planner(s.placer)
	snap := schedSnapshot{s, now}
	var best *preempt.DefragPlan
	for _, lv := range k.levels(s.c) {
		if k.cfg.Target > 0 && whollyFreeAt(s.ledger, lv) >= k.cfg.Target {
			continue
		}
		p := search.Consolidate(snap, preempt.ConsolidateOptions{Level: lv, MaxMoves: r.moves, MaxLost: r.lost,
			MaxDomains: k.cfg.MaxDomains, Skip: func(j *preempt.Job) bool { return !s.dfg.mayMove(j.Spec.ID) }}, now)
		if p != nil && (best == nil || cmp.Or(cmp.Compare(p.Cost.Lost, best.Cost.Lost), cmp.Compare(len(p.Migrations), len(best.Migrations))) < 0) {
			best = p
		}
	}
	k.found(best != nil, gen, r)
	if best == nil {
		return
	}
	var victims []*job
	for _, m := range best.Migrations {
		vj, ok := s.jobs.byID[m.Job]
		if !ok || !vj.state.Holding() || vj.vic.preempting {
			return
		}
		victims = append(victims, vj)
	}
	s.dfg.issue(best, now)
	k.record(best, now)
	for i, m := range best.Migrations {
		s.victims.ask(victims[i], now)
		ready := s.dfg.hold(s.ledger, m.To)
		d.Migrations = append(d.Migrations, Migration{Job: m.Job, From: cloneClaims(m.From), To: cloneClaims(m.To.Claims), Grace: m.Grace, Lost: m.Lost, Ready: ready})
	}
}

// tighter returns the smaller of two bounds where 0 means none.
func tighter[T int | preempt.GPUTime](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
