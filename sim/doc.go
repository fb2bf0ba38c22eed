// Package sim is a discrete-event simulator of a GPU cluster: it replays a
// job trace (package sim/trace) on a cluster (package topology) through a
// Scheduler driven by exactly the calls a production host makes, and
// measures what a GPU platform is judged by.
//
// # The loop
//
// Engine is the event loop: events in a heap ordered by (time, sequence),
// cancelable, no goroutines. Simulation uses it to play the host's part:
//
//   - a job arrives → Scheduler.Submit (a rejected job is counted, or an
//     error with Config.RejectErrors);
//   - after every arrival, completion, stop and health change (and every
//     Config.ScheduleEvery) → Scheduler.Schedule(now), then for each
//     recovery: carry it out (below); for each binding: allocate its
//     claims on the simulator's own ledger (two jobs on one GPU is an
//     ErrInvariant), start the job, Scheduler.Started; for each
//     preemption: let the job checkpoint for its grace period, stop it,
//     Scheduler.Stopped;
//   - a running job completes a checkpoint (CheckpointModel) →
//     Scheduler.Checkpointed: the Scheduler's one source of checkpoints,
//     so its view of the work a stop loses is the simulator's;
//   - a job's work done → Scheduler.Finished;
//   - a GPU, host or ToR fails → its jobs stop making progress, the
//     health setters, and a cycle at once; the Decision's Recoveries say
//     what becomes of each job: requeue it from its last checkpoint
//     (Scheduler.Stopped with StopFailure) or end it as failed
//     (Scheduler.Removed; the root Scheduler does so past its
//     Config.MaxRestarts, and the job's record keeps the reason). A host
//     drained for maintenance → the health setter; its jobs are drained
//     (checkpoint within the recovery's grace, Stopped with StopDrain) or
//     kept, as the Recoveries say. Repaired or back → the health setters
//     again. The simulator never stops a job on a fault by itself: a job
//     on a failed part that the next Decision does not recover is an
//     ErrInvariant.
//
// Config.Snapshot reads the Scheduler at chosen times (Config.Snapshots),
// as the cycle due then would see it, without changing the run: `gpusched
// sim run --save-state` saves the root Scheduler's state there (package
// snapshot) for `gpusched explain`.
//
// Package sim/rootsched adapts the root gpusched.Scheduler to the
// Scheduler interface, so what is simulated is what ships.
//
// # Models
//
// Each model is optional, off in its zero value and validated by New:
// CheckpointModel (interval, overhead, restart cost), FailureModel (MTBF per
// GPU, per host, per ToR; repair time), Outages (scheduled failures: "lose
// a ToR for 4 hours every week"), DrainModel (maintenance drains),
// SpeedModel (a gang spread beyond one NVLink domain runs slower),
// PreemptionModel (default grace period), tenant entitlements and queue
// mapping. What to preempt, and what to do with the jobs a fault hits
// (how many restarts a job gets, how long a drain's grace is), is the
// Scheduler's to decide; see package sim/rootsched and gpusched.Config.
// Config.MinCycleInterval batches event-triggered cycles as Slurm's
// sched_min_interval does; Config.StrandedByLevel adds per-level
// fragmentation (gang.Stranded, the simulator's own placement-based
// measure) to the samples. A Scheduler whose Decisions carry the
// library's cycle statistics (Decision.Stats: rootsched with
// gpusched.Config.Stats, `gpusched sim run --cycle-stats`) has them kept
// in Result.CycleStats, cycle by cycle: the figures an embedder of the
// same Scheduler exports, its per-level stranded GPUs included.
//
// # Metrics and guarantees
//
// Run returns a Result: a Summary (queue wait and JCT distributions overall,
// per queue and per priority, with the jobs still waiting at the end and
// their waits so far, slowdown, makespan, allocation and useful
// utilisation, fragmentation, scheduling failures by reason, preemptions,
// the Scheduler's recovery actions and how stopped jobs recovered,
// GPU-hours lost to preemptions, failures and drains, Jain's fairness
// index against entitlements, locality of multi-GPU placements), a time
// series (allocation, useful utilisation, queue, fragmentation) and one
// record per job. Package sim/report writes them as a
// table, JSON, CSV and plots.
//
// Every job ends in exactly one of Completed, Rejected, Failed, Unfinished
// and NotArrived (due after the Horizon); GPU time used + idle + failed equals capacity × makespan; the
// same jobs, configuration and seed give identical results. Config.Audit
// recounts the simulator's bookkeeping after every event, for tests, and
// checks the progress the Scheduler keeps for stopped jobs against the
// simulator's (ProgressReporter).
//
// A Simulation is single-threaded; run several in parallel goroutines, each
// with its own Scheduler (the Cluster may be shared).
package sim
