package gpusched

import (
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/workload"
)

// Preemptor proposes victims for a pending job that a cycle could not
// place. It is the extension point the preemption planner (package
// preempt) plugs into; nil means the Scheduler never preempts.
//
// Preempt is called during Schedule with read access to the Scheduler
// (Ledger, Job, Holding, Queues; an event, Schedule or any other change
// called from it returns ErrReentrant and changes nothing) for
// a job that is its queue's next candidate, fits its quotas and did not
// place. It returns the jobs to stop, each with a grace period, or nil.
// The Scheduler reports them in Decision.Preemptions, marks the victims as
// being preempted (they are not offered again), and keeps the pending job
// waiting with reason WaitPreemption until the host reports the victims
// Preempted and the job places.
type Preemptor interface {
	Preempt(s *Scheduler, job PreemptCandidate, now time.Time) []Preemption
}

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
