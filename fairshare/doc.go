// Package fairshare computes who deserves what when tenants share a cluster.
// Every function is pure: inputs in, a value out; time is an argument, and
// nothing is read from a clock, logged or kept between calls.
//
// Four families of policy are here, each with where it comes from:
//
//   - Dominant Resource Fairness (Ghodsi et al., "Dominant Resource Fairness:
//     Fair Allocation of Multiple Resource Types", NSDI'11). A tenant's
//     dominant share is the largest of its per-resource shares of the cluster;
//     DRF repeatedly gives a task to the tenant with the smallest (weighted)
//     dominant share. [DRF] runs that progressive filling with whole tasks;
//     [DominantShare] is the measure on its own, for ordering queues.
//     Resources are dimensions of an int64 vector chosen by the caller: GPU,
//     CPU and memory, and a GPU model as a dimension of its own where quotas
//     are per model ([Dimensions] builds such vectors from workload values).
//   - Hierarchical DRF over a tenant tree (after Bhattacharya et al.,
//     "Hierarchical Scheduling for Diverse Datacenter Workloads", SoCC'13):
//     [HDRF] descends from the root, at each level to the child subtree with
//     the smallest weighted dominant share that can still take a task.
//   - Slurm's Fair Tree (Cox and Morrison, BYU; https://slurm.schedmd.com/fair_tree.html):
//     among siblings, Level Fairshare LF = S/U with S the normalised shares
//     and U the share of the siblings' usage; [FairTree] ranks every user by a
//     depth-first walk of the tree sorted by LF, so all users of an
//     under-served account outrank all users of an over-served sibling.
//     Usage decays with a half-life ([Decay], [Usage]).
//   - Kueue's fair sharing among the queues of a cohort
//     (https://kueue.sigs.k8s.io/docs/concepts/preemption/#fair-sharing):
//     [BorrowedShare] is the dominant share of what a queue borrows beyond
//     its nominal quota, relative to what its cohort can lend, divided by the
//     queue's weight.
//
// Numbers are float64 shares in [0, +Inf]; ties are broken by position in
// the input (or by name where the function says so), never by map order.
package fairshare
