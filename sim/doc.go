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
//     binding: allocate its claims on the simulator's own ledger (two jobs
//     on one GPU is an ErrInvariant), start the job, Scheduler.Started; for
//     each preemption: let the job checkpoint for its grace period, stop it,
//     Scheduler.Stopped;
//   - a job's work done → Scheduler.Finished;
//   - a GPU, host or ToR fails → stop the jobs on it (they keep the work up
//     to their last checkpoint), Scheduler.Stopped(StopFailure), the health
//     setters; repaired → the health setters again.
//
// Package sim/rootsched adapts the root gpusched.Scheduler to the
// Scheduler interface, so what is simulated is what ships.
//
// # Models
//
// Each model is optional, off in its zero value and validated by New:
// CheckpointModel (interval, overhead, restart cost), FailureModel (MTBF per
// GPU, per host, per ToR; repair time; retry cap), Outages (scheduled
// failures: "lose a ToR for 4 hours every week"), DrainModel (maintenance
// drains), SpeedModel (a gang spread beyond one NVLink domain runs slower),
// PreemptionModel (grace period), tenant entitlements and queue mapping.
// Config.MinCycleInterval batches event-triggered cycles as Slurm's
// sched_min_interval does; Config.StrandedByLevel adds per-level
// fragmentation (gang.Stranded) to the samples.
//
// # Metrics and guarantees
//
// Run returns a Result: a Summary (queue wait and JCT distributions overall
// and per queue, slowdown, makespan, allocation and useful utilisation,
// fragmentation, scheduling failures by reason, preemptions and recovery,
// GPU-hours lost, Jain's fairness index against entitlements, locality of
// multi-GPU placements), a time series and one record per job. Package
// sim/report writes them as a table, JSON, CSV and plots.
//
// Every job ends in exactly one of Completed, Rejected, Failed and
// Unfinished; GPU time used + idle + failed equals capacity × makespan; the
// same jobs, configuration and seed give identical results. Config.Audit
// recounts the simulator's bookkeeping after every event, for tests.
//
// A Simulation is single-threaded; run several in parallel goroutines, each
// with its own Scheduler (the Cluster may be shared).
package sim
