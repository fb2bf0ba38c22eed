// Package conformance checks gpusched's queue tree against a real Kueue:
// the same ClusterQueues, Cohorts, ResourceFlavors and LocalQueues are
// created in a kube-apiserver that Kueue's manager watches and imported
// into a gpusched Scheduler with package importers/kube; the same
// sequence of Workloads is submitted to both, and after every step the
// harness compares which workloads are admitted, on which flavor (GPU
// model), how much each ClusterQueue borrows and which workloads were
// preempted.
//
// The scenarios are data ([Scenarios]); [RunGpusched] plays one on
// gpusched. The Kueue side lives in the tests (it needs an apiserver,
// etcd and the manager binary built from ../manager), which also write
// docs/kueue-conformance.md from what Kueue did.
package conformance
