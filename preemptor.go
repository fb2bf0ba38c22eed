package gpusched

import (
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Preemptor proposes victims for a pending job that a cycle could not
// place. It is the extension point the preemption planner (package
// preempt) plugs into; nil means the Scheduler never preempts.
//
// Preempt is called during Schedule with a read-only view of the
// Scheduler (PreemptView: cluster, ledger, queues, job records, clock,
// no-plan verdicts; it has no method that changes anything) for
// a job that is its queue's next candidate, fits its quotas and did not
// place. It returns the jobs to stop, each with a grace period, or nil.
// The Scheduler reports them in Decision.Preemptions, marks the victims as
// being preempted (they are not offered again), and keeps the pending job
// waiting with reason WaitPreemption until the host reports the victims
// Preempted and the job places. It takes the plan as it is where it is
// valid, and drops an entry that names no holding job, the pending job
// itself or a job already being stopped, or has a negative Grace (or a
// Shrink the gang may not give back: Preemption.Shrink); a plan with a
// dropped entry makes no nomination (PlacingPreemptor), and one whose
// entries are all dropped asks for no stop (the job waits as the cycle
// explained it).
type Preemptor interface {
	Preempt(v PreemptView, job PreemptCandidate, now time.Time) []Preemption
}

// PreemptView is what a Preemptor sees of the Scheduler: the reads a
// planner needs, and nothing that changes the Scheduler (every method
// only reads; the values it returns are copies or read-only views). It is
// valid during the Preempt call it is passed to; the Scheduler changes
// after. A Preemptor holding the *Scheduler itself (a closure) may read it
// too, but any change it calls during Schedule returns ErrReentrant.
type PreemptView struct{ src planSource }

// planSource is all a PreemptView reads: the Scheduler's public reads,
// and the few more the PlanPreemptor plans from (STYLE.md, habit 25: the
// built-in Preemptor sees what any Preemptor sees, not the Scheduler's
// fields). Every method only reads; each is written in the file of the
// concern that owns what it reads. The Scheduler implements it.
type planSource interface {
	Now() time.Time
	Cluster() *topology.Cluster
	Ledger() topology.LedgerReader
	Tree() queue.TreeReader
	Queues() []queue.View
	Job(id string) (JobStatus, bool)
	Holding(fn func(id string, st JobStatus) bool)
	Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool)
	NoPlans(ids []string) []NoPlan

	// planCycle numbers the scheduling cycles (cycle.go).
	planCycle() uint64
	// planPlacer is the placer the cycle places with (scheduler.go).
	planPlacer() gang.Placer
	// shrinkOn says elastic gangs may be shrunk (Config.Elastic;
	// elastic.go).
	shrinkOn() bool
	// demandOf is the quota estimate of a request before placement
	// (admission.go).
	demandOf(r *gang.Request) queue.Vector
	// planSnapshot is the Scheduler seen by package preempt at now
	// (preemption.go).
	planSnapshot(now time.Time) preempt.Snapshot
	// noPlanHeld reports whether job id's standing no-plan verdict still
	// holds at now, its possible victims judged by the rule lower
	// (noplan.go).
	noPlanHeld(id string, lower preempt.Scope, now time.Time) bool
}

// Now returns the Scheduler's latest time (Scheduler.Now).
func (v PreemptView) Now() time.Time { return v.src.Now() }

// Cluster returns the cluster (Scheduler.Cluster; immutable).
func (v PreemptView) Cluster() *topology.Cluster { return v.src.Cluster() }

// Ledger returns the read-only ledger (Scheduler.Ledger).
func (v PreemptView) Ledger() topology.LedgerReader { return v.src.Ledger() }

// Tree returns the read-only queue tree (Scheduler.Tree).
func (v PreemptView) Tree() queue.TreeReader { return v.src.Tree() }

// Queues returns the quota view of every queue, root first
// (Scheduler.Queues).
func (v PreemptView) Queues() []queue.View { return v.src.Queues() }

// Job returns a copy of a live job's status (Scheduler.Job).
func (v PreemptView) Job(id string) (JobStatus, bool) { return v.src.Job(id) }

// Holding calls fn for every holding job in order of estimated end
// (Scheduler.Holding).
func (v PreemptView) Holding(fn func(id string, st JobStatus) bool) { v.src.Holding(fn) }

// Progress returns a job's last checkpoint and the run time it saved
// (Scheduler.Progress).
func (v PreemptView) Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool) {
	return v.src.Progress(id)
}

// NoPlans returns the standing no-plan verdicts of jobs ids
// (Scheduler.NoPlans).
func (v PreemptView) NoPlans(ids []string) []NoPlan { return v.src.NoPlans(ids) }

// PreemptCandidate is the pending job a Preemptor is asked to make room
// for.
type PreemptCandidate struct {
	// Job is the waiting job's spec; Request its resolved gang request,
	// with the job's model filter of this cycle (AllowHost: the models
	// whose per-model quota has room; nil when none narrows them), valid
	// during the call only; Queue its leaf queue. Read them only.
	Job     *workload.Job
	Request *gang.Request // resolved against the cluster
	Queue   string        // the job's leaf queue
	// Why is the placer's explanation of why it does not fit now.
	Why *gang.Explanation
}
