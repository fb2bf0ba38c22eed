package sim

import (
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Scheduler is what the simulator drives: exactly the calls a production
// host makes on a scheduler. Events go in (Submit, Started, Checkpointed,
// Finished, Stopped, Removed, the health setters); Schedule(now) hands
// back a Decision that the host carries out and reports back on. Times
// are offsets from the start of the simulation.
//
// The root gpusched.Scheduler is adapted to this interface (package
// sim/rootsched); tests use small scripted or naive implementations.
// Implementations must be deterministic: the same calls give the same
// Decisions.
//
// Faults follow the Scheduler's recovery path, not one of the
// simulator's own: when a GPU or host fails or is drained the simulator
// reports the health change, and the jobs on it keep their resources
// (a job on a failed part makes no progress from the failure on) until
// the next Decision's Recoveries say what to do with each — requeue it
// from its last checkpoint, drain it after a grace period, let it run on,
// or end it as failed. The simulator runs that cycle at the time of the
// failure.
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
	// Checkpointed reports that a running job completed a checkpoint at
	// at (≤ now): a stop loses only the work since. The simulator reports
	// every checkpoint of its CheckpointModel as it completes (and the
	// final one a job takes in a grace period); it is the Scheduler's
	// only source of checkpoints, so the specs it submits carry no
	// CheckpointInterval.
	Checkpointed(now time.Duration, job string, at time.Duration) error
	// Finished reports that a running job completed; its resources are
	// free again.
	Finished(now time.Duration, job string) error
	// Stopped reports that a running job was stopped before completion,
	// its resources freed, and that it should be queued again (its
	// progress up to its last checkpoint kept by the host): after a
	// Preemption (StopPreempted) or a Recovery that requeues
	// (StopFailure) or drains it (StopDrain).
	Stopped(now time.Duration, job string, cause StopCause) error
	// Removed reports that a running job was stopped and ended as
	// failed, as a RecoverEnd recovery asked; its resources are free.
	Removed(now time.Duration, job string) error
	// SetGPUHealth and SetHostHealth report health changes. The jobs on
	// a failed or draining part are left to the next Decision's
	// Recoveries.
	SetGPUHealth(now time.Duration, g topology.GPUID, h topology.Health) error
	SetHostHealth(now time.Duration, h topology.HostID, hh topology.Health) error
}

// ProgressReporter is implemented by Schedulers that keep the progress of
// stopped jobs (the root Scheduler's Progress). With Config.Audit the
// simulator checks, after every stop, that Saved equals its own account:
// the sum over the job's stopped runs of the running time from the run's
// start to its last checkpoint.
type ProgressReporter interface {
	// Saved returns the running time that checkpoints of the job's
	// earlier runs saved, and whether the job is known.
	Saved(job string) (time.Duration, bool)
}

// StopCause says why a running job was stopped.
type StopCause uint8

// Stop causes.
const (
	StopPreempted StopCause = iota // a Decision preempted it
	StopFailure                    // a GPU, host or ToR under it failed (RecoverRequeue)
	StopDrain                      // a host or GPU under it was drained (RecoverDrain)
	StopMigrated                   // a Decision moved it (Preemption.Migrate): it binds elsewhere later
)

// String returns "preempted", "failure", "drain" or "migrated".
func (c StopCause) String() string {
	switch c {
	case StopFailure:
		return "failure"
	case StopDrain:
		return "drain"
	case StopMigrated:
		return "migrated"
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
	// Recoveries say what to do with the running jobs on GPUs and hosts
	// that failed or are draining since the last cycle, one per job.
	Recoveries []Recovery
	// Shrinks stop some tasks of running elastic gangs after a grace
	// period (the rest runs on); Grows extend running gangs with new
	// tasks. Only a Scheduler that implements Resizer may ask for them.
	Shrinks []Shrink
	Grows   []Grow
	// Pending explains, for jobs still waiting, why.
	Pending []Pending
	// Wake, when later than the cycle, asks for another cycle then even
	// if no event comes before (a running job's priority drops at that
	// time, say, under queue.Demotion); each Decision's Wake replaces the
	// last. Zero: none.
	Wake time.Duration
	// Stats are the cycle's library statistics, when the Scheduler
	// computes them (package rootsched's with gpusched.Config.Stats: the
	// Decision.Stats an embedder exports); the simulation keeps them in
	// Result.CycleStats. Nil: none.
	Stats *gpusched.CycleStats
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
	// Migrate says the job moves (the Scheduler's Decision.Migrations):
	// it checkpoints and stops as a preempted job does, is reported as
	// Stopped with StopMigrated, and binds on its destination in a later
	// cycle, paying the restart cost there.
	Migrate bool
	// Ready (with Migrate) says the destination is free and held: the new
	// copy starts loading there at once (make-before-break), so the
	// restart cost overlaps the old copy's grace and only what of it is
	// left when the job binds there is paid.
	Ready bool
}

// Shrink asks the host to stop some tasks of a running elastic gang: to
// signal them, let them checkpoint for Grace, then release Claims (each
// one of the job's claims) and report Resizer.Shrunk. The other tasks run
// on; so does the job's work (see Resizer).
type Shrink struct {
	Job    string
	Claims []topology.Claim
	Grace  time.Duration
}

// Grow extends a running gang with new tasks on Claims, which the host
// takes at once and reports with Resizer.Grown.
type Grow struct {
	Job    string
	Claims []topology.Claim
}

// Resizer is implemented by Schedulers whose Decisions shrink and grow
// elastic gangs (Decision.Shrinks, Decision.Grows): the host reports a
// shrink done with Shrunk, once the tasks stopped and released their
// claims, and a grow with Grown, once the new tasks started.
//
// How the simulator models a resize: a job with an elastic group runs at
// a speed proportional to the tasks it holds (linear scaling: its trace
// duration is at its full size; bound at its minimum, or shrunk to it, it
// runs at that share of full speed; Config.Scaling, when set, gives the
// speed instead), so a resize ends the job's segment without a stop — the
// work done so far is kept — and starts one at the new speed with the new
// GPUs, without a reload (after Checkpoint.ResizeCost's pause, if set). A shrink's stopped tasks
// checkpoint in their grace period as a preempted job does (when
// checkpoints are on and the grace covers the pause), else they lose the
// work since the job's last checkpoint on their GPUs (GPU time lost to
// shrinks); the job's progress is kept either way. New tasks start at
// once.
type Resizer interface {
	Shrunk(now time.Duration, job string) error
	Grown(now time.Duration, job string) error
}

// Recovery is what to do with a running job hit by a fault.
type Recovery struct {
	Job    string
	Action RecoveryAction
	// Grace is the time a drained job gets to checkpoint before it
	// stops (RecoverDrain).
	Grace time.Duration
	// Lost is the GPU time, in GPU-seconds, the Scheduler expects the
	// stop to lose (since the job's last checkpoint); informational.
	Lost float64
	// Reason says what hit the job; it is recorded for jobs that end.
	Reason string
}

// RecoveryAction is what a Recovery asks for.
type RecoveryAction uint8

// Recovery actions.
const (
	// RecoverRequeue: stop the job now (its GPUs failed) and report it
	// Stopped(StopFailure); it restarts from its last checkpoint.
	RecoverRequeue RecoveryAction = iota + 1
	// RecoverDrain: let the job checkpoint for Grace, stop it and report
	// it Stopped(StopDrain).
	RecoverDrain
	// RecoverKeep: let it run on.
	RecoverKeep
	// RecoverEnd: stop the job and report it Removed: it failed for
	// good (e.g. stopped by failures more often than allowed).
	RecoverEnd
	numActions
)

var actionNames = [numActions]string{"", "requeue", "drain", "keep", "end"}

// String returns the action's lower-case name.
func (a RecoveryAction) String() string {
	if a < numActions && a > 0 {
		return actionNames[a]
	}
	return "unknown"
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
	ReasonOther         Reason = iota // anything the others do not name
	ReasonQuota                       // its queue is at its quota
	ReasonTopology                    // free GPUs exist but not inside the required domain
	ReasonFragmentation               // enough free GPUs in total, but no host has room for a task
	ReasonCapacity                    // not enough free GPUs in the whole cluster
	ReasonModel                       // not enough free GPUs of an acceptable model
	ReasonBackfill                    // it fits now but would delay a job holding a reservation
	ReasonBehindHead                  // its queue is strict FIFO and an earlier job cannot start
	ReasonVictims                     // running jobs are being preempted to make room for it
	numReasons
)

var reasonNames = [numReasons]string{"other", "quota", "topology", "fragmentation", "capacity", "gpu-model",
	"backfill-window", "behind-head", "waiting-for-victims"}

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
