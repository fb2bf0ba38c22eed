package sim

import (
	"time"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Scheduler is what the simulator drives: exactly the calls a production
// host makes on a scheduler. Events go in (Submit, Started, Finished,
// Stopped, the health setters); Schedule(now) hands back a Decision that
// the host carries out and reports back on. Times are offsets from the
// start of the simulation.
//
// The root gpusched.Scheduler is adapted to this interface; tests use
// small scripted or naive implementations. Implementations must be
// deterministic: the same calls give the same Decisions.
type Scheduler interface {
	// Submit adds a job. An error rejects it: the simulator records the
	// job as rejected (or stops, if so configured) and never mentions it
	// again.
	Submit(now time.Duration, job workload.Job) error
	// Schedule runs one scheduling cycle.
	Schedule(now time.Duration) Decision
	// Started reports that a binding of the last Decision was carried
	// out: the job now runs on the claimed GPUs.
	Started(now time.Duration, job string) error
	// Finished reports that a running job completed; its resources are
	// free again.
	Finished(now time.Duration, job string) error
	// Stopped reports that a running job was stopped before completion,
	// its resources freed, and that it should be queued again (its
	// progress up to its last checkpoint kept by the host).
	Stopped(now time.Duration, job string, cause StopCause) error
	// Removed reports that a job left for good without completing (its
	// retries exhausted); it was not running.
	Removed(now time.Duration, job string) error
	// SetGPUHealth and SetHostHealth report health changes. Jobs on a
	// failed GPU or host are stopped by the host first (through Stopped).
	SetGPUHealth(now time.Duration, g topology.GPUID, h topology.Health) error
	SetHostHealth(now time.Duration, h topology.HostID, hh topology.Health) error
}

// StopCause says why a running job was stopped.
type StopCause uint8

// Stop causes.
const (
	StopPreempted StopCause = iota // a Decision preempted it
	StopFailure                    // a GPU, host or ToR under it failed
)

// String returns "preempted" or "failure".
func (c StopCause) String() string {
	if c == StopFailure {
		return "failure"
	}
	return "preempted"
}

// Decision is the outcome of one scheduling cycle.
type Decision struct {
	// Bindings start jobs: each names a pending job and the exact claims
	// (one per task) it runs on.
	Bindings []Binding
	// Preemptions stop running jobs after a grace period.
	Preemptions []Preemption
	// Pending explains, for jobs still waiting, why.
	Pending []Pending
}

// Binding places a pending job.
type Binding struct {
	Job    string
	Claims []topology.Claim
}

// Preemption asks the host to stop a running job: signal it, let it
// checkpoint for Grace, then release its resources.
type Preemption struct {
	Job string
	// Grace is the time the job gets to checkpoint; zero means the
	// simulator's default (see PreemptionModel).
	Grace  time.Duration
	Reason string
}

// Pending says why a job waits.
type Pending struct {
	Job    string
	Reason Reason
	Detail string
}

// Reason classifies why a job is not placed.
type Reason uint8

// Reasons a job waits, as scheduling-failure metrics count them.
const (
	ReasonOther         Reason = iota // anything else (ordering, backfill window, …)
	ReasonQuota                       // its queue is at its quota
	ReasonTopology                    // free GPUs exist but not inside the required domain
	ReasonFragmentation               // enough free GPUs in total, but no host has room for a task
	ReasonCapacity                    // not enough free GPUs in the whole cluster
	ReasonModel                       // not enough free GPUs of an acceptable model
	numReasons
)

var reasonNames = [numReasons]string{"other", "quota", "topology", "fragmentation", "capacity", "gpu-model"}

// String returns the reason's metric name.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "other"
}

// Reasons lists every Reason in order.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}
