package gpusched

import (
	"time"

	"github.com/gpusched/gpusched/gang"
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
// Preempted and the job places.
type Preemptor interface {
	Preempt(v PreemptView, job PreemptCandidate, now time.Time) []Preemption
}

// PreemptView is what a Preemptor sees of the Scheduler: the reads a
// planner needs, and nothing that changes the Scheduler (every method
// only reads; the values it returns are copies or read-only views). It is
// valid during the Preempt call it is passed to; the Scheduler changes
// after. A Preemptor holding the *Scheduler itself (a closure) may read it
// too, but any change it calls during Schedule returns ErrReentrant.
type PreemptView struct{ s *Scheduler }

// Now returns the Scheduler's latest time (Scheduler.Now).
func (v PreemptView) Now() time.Time { return v.s.Now() }

// Cluster returns the cluster (Scheduler.Cluster; immutable).
func (v PreemptView) Cluster() *topology.Cluster { return v.s.Cluster() }

// Ledger returns the read-only ledger (Scheduler.Ledger).
func (v PreemptView) Ledger() topology.LedgerReader { return v.s.Ledger() }

// Tree returns the read-only queue tree (Scheduler.Tree).
func (v PreemptView) Tree() queue.TreeReader { return v.s.Tree() }

// Queues returns the quota view of every queue, root first
// (Scheduler.Queues).
func (v PreemptView) Queues() []queue.View { return v.s.Queues() }

// Job returns a copy of a live job's status (Scheduler.Job).
func (v PreemptView) Job(id string) (JobStatus, bool) { return v.s.Job(id) }

// Holding calls fn for every holding job in order of estimated end
// (Scheduler.Holding).
func (v PreemptView) Holding(fn func(id string, st JobStatus) bool) { v.s.Holding(fn) }

// Progress returns a job's last checkpoint and the run time it saved
// (Scheduler.Progress).
func (v PreemptView) Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool) {
	return v.s.Progress(id)
}

// NoPlans returns the standing no-plan verdicts of jobs ids
// (Scheduler.NoPlans).
func (v PreemptView) NoPlans(ids []string) []NoPlan { return v.s.NoPlans(ids) }

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
