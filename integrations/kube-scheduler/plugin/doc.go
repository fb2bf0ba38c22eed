// Package plugin is gpusched inside kube-scheduler: a scheduler framework
// plugin whose placement decisions are gpusched's.
//
// The plugin builds a topology.Cluster from the GPU nodes' labels (NVIDIA GPU
// feature discovery's nvidia.com/gpu.count, .product and .clique, and one
// configurable label per network level), keeps a topology.Ledger of what the
// pods assigned to them hold, and asks a gang.Placer (the policy named in its
// Args: topology-tiered, FGD, best-fit, ...) where each GPU pod and each gang
// of pods goes. It only converts: Kubernetes objects into gpusched requests,
// and gpusched placements back into node choices, Permit decisions and the
// GPU-indices annotation that device plugins read.
//
// Register it in a scheduler binary with
//
//	app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
//
// and enable it in a profile (see the deploy directory of this module).
//
// # Gangs
//
// Pods with the label gpusched.io/gang=NAME form a gang within their
// namespace; gpusched.io/gang-size (label or annotation) says how many pods
// it has, gpusched.io/gang-min how many must run at least, and
// gpusched.io/gang-topology the level all of them must share ("nvlink" for
// one NVLink clique, "host", or a network level such as "tor"). When the
// first member reaches PreFilter, gpusched places the whole gang and holds
// its GPUs; each member is narrowed to its planned node, reserves its slot,
// and waits at Permit until every planned member has, so members are bound
// all together or not at all. A plan whose members do not all reserve within
// the gang timeout is dropped and its GPUs go back.
//
// # Scheduler mode
//
// With Args.Mode "scheduler", New returns a *SchedulerPlugin instead: it
// hosts one gpusched.Scheduler (queues, quotas, fair share, EASY backfill
// with reservations, preemption planning). The profile's pods become jobs;
// PreEnqueue holds them until a gpusched cycle, run on informer events off
// kube-scheduler's per-pod path, binds their job; the extension points then
// steer each pod to its planned node and GPUs. The Scheduler is rebuilt
// from the apiserver at start and whenever the GPU nodes change shape.
package plugin
