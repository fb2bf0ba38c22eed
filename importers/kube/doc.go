// Package kube reads what Kubernetes batch users already have — their
// Kueue, Volcano or KAI-Scheduler configuration and a dump of their
// cluster — into gpusched's vocabulary, so that they can ask of a pending
// job "will it fit, when, and why not" and try a quota change before it
// reaches production.
//
// [Read] maps configuration objects (multi-document YAML or JSON;
// `kubectl get -o yaml` Lists are expanded) to an [Import]: a queue.Config,
// the preemption settings, the topology levels and a mapping report
// ([Note]s) that lists every field not read and every approximation:
//
//   - Kueue (kueue.x-k8s.io v1beta1/v1beta2): ClusterQueues are leaves,
//     Cohorts (hierarchical, with quota of their own) inner nodes; each
//     flavor's GPU quota becomes a per-model quota ("gpu/MODEL", the model
//     from the ResourceFlavor's nvidia.com/gpu.product label), cpu and
//     memory are summed over flavors; nominalQuota, borrowingLimit and
//     lendingLimit map one to one; queueingStrategy to the leaf's ordering;
//     fairSharing weights to weights, and a manager Configuration with
//     fairSharing to the "borrowed" fair policy with fair-sharing
//     preemption; LocalQueues, WorkloadPriorityClasses and Topologies are
//     kept for reading dumps.
//   - Volcano: Queues (deserved → nominal, guarantee → the part never lent,
//     capability → max, weight, parent) and HyperNodes (tiers → levels).
//   - KAI-Scheduler: Queues (quota, limit, overQuotaWeight, parentQueue)
//     and Topology levels.
//
// [ReadDump] turns `kubectl get nodes,pods -A -o yaml` (plus Kueue
// Workloads) into a package snapshot state: hosts with their GPUs (GPU
// Feature Discovery labels), placed under the imported topology levels;
// running jobs on their nodes; pending jobs with their queue, priority and
// runtime estimate (the gpusched.io/runtime annotation, or
// maximumExecutionTimeSeconds / activeDeadlineSeconds). [Run] drives the
// loaded Scheduler forward to forecast when each waiting job starts, and
// [Compare] does so under two configurations.
//
// The package imports no k8s.io module: it reads YAML into its own
// structs. Reading does I/O (ReadDir, ReadDumpDir); the decisions are the
// gpusched Scheduler's.
package kube
