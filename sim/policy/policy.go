// Package policy is how a researcher's own job-level policies reach the
// simulator: the interfaces a policy implements, and Registry, a set of
// named policies (placers, orderings, demotions, allocators, sizers) that `gpusched sim`
// accepts wherever it accepts a built-in's name — in run, in compare's
// axes (--policies, --orderings), in sweeps (--param ordering=…), with
// --seeds, --load, virtual clusters and the HTML report.
//
// A Registry is a value, not a global: a researcher's own main builds one,
// registers their policies and passes it to simcli.Command through
// simcli.Options.Registry (see the package example and
// docs/research-policies.md). Policies outside Go run in their own
// process behind Ordering (see package sim/policy/extproc).
//
// Decisions here do no I/O and read no clock: time is the simulated time
// passed in.
package policy

import (
	"time"
)

// Job is what an ordering sees of one job. The simulator fills it; an
// ordering must not keep it past the call.
type Job struct {
	// ID and Queue are the job's and its queue's (tenant's) names.
	ID, Queue string
	// GPUs is the number of GPUs the job asks for (fractions for shares).
	GPUs float64
	// Priority is the priority the job was submitted with (the trace's).
	Priority int32
	// Submit is the job's arrival, in simulated time since the trace
	// start.
	Submit time.Duration
	// Runtime is the job's runtime estimate at submission (0: none; see
	// --runtime-estimate).
	Runtime time.Duration
	// Ran is the job's running time over all its runs so far, work lost
	// to preemptions included: its attained service (GPU time is Ran ×
	// GPUs).
	Ran time.Duration
	// Done is the work the job has kept: what its checkpoints saved, plus
	// the running time of its current run. Runtime − Done is its
	// remaining time.
	Done time.Duration
	// Running is true for a running job, false for a waiting one.
	Running bool
}

// Remaining returns the job's remaining time by its estimate, Runtime −
// Done, and false when it has no estimate. It is at least one second.
func (j Job) Remaining() (time.Duration, bool) {
	if j.Runtime <= 0 {
		return 0, false
	}
	return max(j.Runtime-j.Done, time.Second), true
}

// Ordering sets job priorities: in its queue a job of a higher priority
// goes first (ties in submission order), and with preemption on
// (--preempt) it may preempt a running job of a lower priority. The
// priorities it returns replace the trace's.
//
// The simulator calls Enqueued once per scheduling cycle, before the
// cycle, with the jobs that entered a queue since the last one (submitted,
// or requeued after a preemption or a failure), in the order they
// entered; it must return one priority per job, in the same order. An
// error stops the run and is reported with the ordering's name.
type Ordering interface {
	Enqueued(now time.Duration, jobs []Job) ([]int32, error)
}

// Reorderer is an Ordering whose running jobs' priorities change as they
// run (shortest-remaining-time-first: remaining time shrinks). The
// simulator calls Running, after Enqueued, with every running job in each
// cycle in which some job waits (a running job's priority matters only
// against a waiting one's: whether it may preempt it), and sets the
// priorities that changed. Each call costs a pass over the running jobs;
// an Ordering without it costs nothing per running job.
type Reorderer interface {
	Ordering
	Running(now time.Duration, jobs []Job) ([]int32, error)
}

// Closer is an Ordering that holds resources (an external process) to
// release when its run ends.
type Closer interface {
	Close() error
}
