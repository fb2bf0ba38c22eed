// Package goodput is a goodput-style adaptive policy for the simulator,
// after Pollux (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for
// Goodput-Optimized Deep Learning", OSDI'21) and Sia (Jayaram Subramanya
// et al., SOSP'23): a throughput model of data-parallel jobs — how fast a
// job of a type runs on a number of GPUs at a placement, with non-linear
// scaling (Model, Params; Pollux returns one fitted to Pollux's measured
// step times) — and a scheduler that resizes elastic jobs every round to
// maximize the cluster's goodput as Pollux defines its objective
// (Allocator, Scheduler).
//
// The model also drives the simulation itself (Scaling, as
// sim.Config.Scaling), so the adaptive policy and the baselines it is
// compared with run under the same scaling and placement penalties: a
// rigid job placed across hosts runs slower than packed in one; an
// elastic job's speed follows the model at every size.
//
// What is simplified against Pollux: goodput here is throughput only —
// statistical efficiency (the gradient noise scale) and the batch-size
// and learning-rate tuning Pollux's agents do are not modelled; each job
// keeps a fixed global batch, so more GPUs cut the per-GPU batch. The
// throughput model has no compute/communication overlap (Pollux fits γ),
// and its parameters are fixed per job type rather than fitted online per
// job. The allocation is a greedy search for the same objective (the
// power mean −1 of speedups, with Pollux's resize discount) rather than a
// genetic algorithm, and the placement is a packing heuristic, not part
// of the search. Sia's heterogeneity (GPU types) and its ILP are not
// modelled.
//
// Decisions do no I/O and read no clock; the same calls give the same
// Decisions.
package goodput
