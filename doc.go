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
// The event contract, for a host whose messages may arrive late, twice or
// from a wrong clock:
//
//   - Time never goes backwards: an event before Now() is ErrTimeBackwards;
//     one more than Config.MaxClockSkew (default a day) ahead of it is
//     ErrClockSkew. Both name the event, the job and the times, and change
//     nothing. Schedule's time is the host's own clock: it clamps, and
//     moves Now() without a limit.
//   - Events are idempotent: Started for a running job, Preempted or
//     Requeue for a job already waiting again, and any event or Submit for
//     an ended job still remembered (Tombstones, Config.MaxTombstones,
//     carried in saved state) is ErrAlreadyApplied — checked before the
//     time, changing nothing — distinct from ErrUnknownJob for an ID never
//     seen or long forgotten.
//   - A reported checkpoint (Checkpointed) is authoritative; a job's
//     CheckpointInterval only estimates one for a run that reported none.
//   - Callbacks read, they do not change: a change called from inside
//     Holding's fn, a Tree or Ledger reader's Ascend, or a Preemptor or
//     Placer is ErrReentrant (Schedule returns an empty Decision), never a
//     panic.
//   - A Decision is the caller's: no later cycle writes it.
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
