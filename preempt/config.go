package preempt

import (
	"fmt"
	"time"

	"github.com/gpusched/gpusched/gang"
)

// Scope says where lower-priority jobs may be preempted.
type Scope uint8

// Scopes.
const (
	// WithinQueue: only jobs of the pending job's own leaf queue (Kueue's
	// withinClusterQueue: LowerPriority). The default: a queue's
	// guarantee is not touched by another queue's priorities.
	WithinQueue Scope = iota
	// AnyQueue: lower-priority jobs of any queue, as long as the pending
	// job then fits its own queue's quotas. A job of another queue only
	// if the pending job's queue does not borrow once it is admitted, or
	// else if the victim's queue borrows (and still does with the victims
	// taken from it gone but the largest, as for reclaim) and fair sharing
	// does not apply to the two: a borrower does not take a queue's
	// guarantee on priority, which that queue would reclaim.
	AnyQueue
	// NeverByPriority: priority alone is never a ground.
	NeverByPriority
)

// ReclaimPolicy says which jobs of borrowing queues a queue within its
// guarantee may preempt to take its quota back.
type ReclaimPolicy uint8

// Reclaim policies.
const (
	// ReclaimAny: any job of a queue that borrows, whatever its priority
	// (Kueue's reclaimWithinCohort: Any). The default.
	ReclaimAny ReclaimPolicy = iota
	// ReclaimLowerPriority: only borrowing jobs of lower priority.
	ReclaimLowerPriority
	// ReclaimNever: no reclaim.
	ReclaimNever
)

// Config configures a Search. The zero value is valid: priority preemption
// within a queue, reclaim of borrowed quota, no fair-share preemption,
// elastic gangs shrunk before they are stopped.
type Config struct {
	// Placer places the pending gang on the what-if ledger; nil means
	// gang.New("topology") with brief explanations. Use the placer the
	// scheduler places with, so that a plan's placement is one it would
	// find.
	Placer gang.Placer
	// Grace is how long a victim gets between SIGTERM and the release of
	// its resources, to write a checkpoint; Job.Grace overrides it.
	// 0 means 2 minutes.
	Grace time.Duration
	// LowerPriority says where lower-priority jobs may be preempted.
	LowerPriority Scope
	// Reclaim says which jobs of borrowing queues may be preempted by a
	// queue within its guarantee.
	Reclaim ReclaimPolicy
	// FairSharing allows preempting jobs of a borrowing queue whose
	// fair-share standing, with its victims gone, is still at least that
	// of the pending job's queue with the pending job admitted (Kueue's
	// LessThanOrEqualToFinalShare), compared at the children of the two
	// queues' closest common ancestor. Needs a queue tree whose fairness
	// policy is not "none".
	FairSharing bool
	// NoShrink stops the planner from shrinking elastic gangs (stopping
	// members above their minimum while the rest runs on); a victim gang
	// then always stops whole.
	NoShrink bool
	// MaxExact is the largest number of candidate victims (jobs, and
	// members of elastic gangs) in one domain that is searched
	// exhaustively by branch and bound; larger domains are searched
	// greedily. 0 means 16.
	MaxExact int
	// MaxPlacements bounds the placement attempts per plan; when it is
	// reached the search returns the best plan found so far (not Exact),
	// or VerdictBudget. 0 means 512.
	MaxPlacements int
	// MaxNodes bounds the branch-and-bound nodes per plan; a domain whose
	// exhaustive search hits it falls back to the greedy search. 0 means
	// 50,000.
	MaxNodes int
	// FragAware makes Plan prefer, among the minimal victim sets whose
	// lost work is at most Band(least, FragEpsilon), the one after which
	// the fewest free GPUs are stranded at the gang's level (see
	// StrandedAt), then the cheapest. Off by default.
	FragAware bool
	// FragEpsilon is the relative slack of FragAware, in [0, 10]: sets
	// losing up to (1 + ε) times the least lost work compete on stranded
	// GPUs. 0 means ties of lost work only.
	FragEpsilon float64
	// MaxMigrations is how often Defragment may move one job (Job.Migrations);
	// 0 means no limit.
	MaxMigrations int
}

// New returns a Search with cfg's defaults filled. It fails only for
// values out of range.
func New(cfg Config) (*Search, error) {
	if cfg.Grace < 0 {
		return nil, fmt.Errorf("preempt: Config.Grace: negative %v", cfg.Grace)
	}
	if cfg.Grace == 0 {
		cfg.Grace = 2 * time.Minute
	}
	if cfg.LowerPriority > NeverByPriority {
		return nil, fmt.Errorf("preempt: Config.LowerPriority: unknown scope %d", cfg.LowerPriority)
	}
	if cfg.Reclaim > ReclaimNever {
		return nil, fmt.Errorf("preempt: Config.Reclaim: unknown policy %d", cfg.Reclaim)
	}
	if cfg.MaxExact < 0 || cfg.MaxExact > 30 {
		return nil, fmt.Errorf("preempt: Config.MaxExact: %d outside 0..30", cfg.MaxExact)
	}
	if cfg.MaxExact == 0 {
		cfg.MaxExact = 16
	}
	if cfg.MaxPlacements < 0 {
		return nil, fmt.Errorf("preempt: Config.MaxPlacements: negative %d", cfg.MaxPlacements)
	}
	if cfg.MaxPlacements == 0 {
		cfg.MaxPlacements = 512
	}
	if cfg.MaxNodes < 0 {
		return nil, fmt.Errorf("preempt: Config.MaxNodes: negative %d", cfg.MaxNodes)
	}
	if cfg.MaxNodes == 0 {
		cfg.MaxNodes = 50000
	}
	if cfg.MaxMigrations < 0 {
		return nil, fmt.Errorf("preempt: Config.MaxMigrations: negative %d", cfg.MaxMigrations)
	}
	if !(cfg.FragEpsilon >= 0 && cfg.FragEpsilon <= 10) {
		return nil, fmt.Errorf("preempt: Config.FragEpsilon: %v outside 0..10", cfg.FragEpsilon)
	}
	if cfg.Placer == nil {
		p, err := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
		if err != nil {
			return nil, err
		}
		cfg.Placer = p
	}
	return &Search{cfg: cfg}, nil
}

// Config returns the configuration with defaults filled.
func (s *Search) Config() Config { return s.cfg }

func (s *Search) grace(j *Job) time.Duration {
	if j.Grace > 0 {
		return j.Grace
	}
	return s.cfg.Grace
}

// Planner makes room for a pending gang. Plan returns a plan, or the
// reasons no plan exists; it does no I/O, reads no clock (now is an
// argument), is deterministic for the same Snapshot state, and leaves the
// Snapshot as it found it.
type Planner interface {
	Plan(s Snapshot, p *Pending, now time.Time) (*Plan, *NoPlan)
}

var _ Planner = (*Search)(nil)
