// Package gpusched is an embeddable library of GPU-cluster scheduling
// algorithms. This root package composes them into the scheduling cycle:
// a Scheduler takes events, and on Schedule(now) returns a Decision —
// which waiting jobs start on which exact GPUs, which running jobs to
// preempt, and why every other job waits.
//
// It is shaped like etcd raft's RawNode: the library decides, the host
// acts. The host's duties, in order:
//
//  1. Report what happens: Submit new jobs; Started when a bound job runs;
//     Finished, Failed or Cancel when one ends; Requeue or Preempted when
//     one stops and should wait again; SetGPUHealth and SetHostHealth on
//     faults (they return the affected jobs); SetPriority.
//  2. Call Schedule(now) when something changed (or periodically).
//  3. Carry out the Decision: bind each Binding's tasks to its claims and
//     report Started (or Requeue if it cannot); stop each Preemption's job
//     within its grace period and report Preempted; show Pending reasons to
//     users.
//
// The Scheduler does no I/O, starts no goroutines and never reads a
// clock; every time is an argument, and the same calls give
// byte-identical Decisions. It is not safe for concurrent use;
// Synchronize wraps it for a service whose goroutines share it.
//
// Inside a cycle, package queue says who goes next (quotas with
// guarantees, borrowing and lending; priorities, FIFO or aging; fair share
// across queues with package fairshare), package gang says where a gang
// goes and, if it does not fit, why; the Scheduler adds EASY backfill
// reservations, a cache of placement failures by job shape (a shape that
// failed is not tried again until capacity that could matter is freed),
// and the pending reasons. See Scheduler.Schedule for the order of checks.
package gpusched
