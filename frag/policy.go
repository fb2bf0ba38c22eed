// Package frag is node-level placement for GPU-sharing clusters and the
// fragmentation measure behind it: Fragmentation Gradient Descent (Weng et
// al., USENIX ATC'23, "Beware of Fragmentation") and the baselines that
// paper compares it with, each choosing a host and GPUs for one task at a
// time.
//
// A Task asks for whole GPUs or a share of one GPU (milli-GPU), CPU,
// memory, and optionally a set of GPU models. A Policy picks a host and
// its GPUs for it on the current state of a topology.Ledger and returns a
// topology.Claim; the caller allocates it. Policies are built by name with
// NewPolicy: fgd, best-fit, dot-product, gpu-packing, gpu-clustering,
// random (the paper's six), first-fit and worst-fit.
//
// FGD needs a target workload, a Distribution of task classes, usually
// learned from a trace with Learn. Measure computes the paper's
// fragmentation of a host or a cluster for it: the expected free GPU
// capacity a task drawn from the workload cannot use. FGD places each
// task where that grows least.
//
// RunInflation is the paper's experiment (tasks resampled to 130% of the
// cluster's GPUs, placed one at a time, nothing departing), and
// NewInflationResult gathers runs into the inflation.json contract. On
// the openb cluster and default trace it reproduces the paper's table
// (see docs/fgd-openb.md).
//
// Speed: policies cache per-host state keyed by
// topology.Ledger.HostGeneration, and each host's cost for each task shape
// (FGD's growth of fragmentation, the baselines' scores), so after a
// placement only the host that changed is evaluated again; a Pick costs a
// pass over the hosts in scope reading a few words per host (about 8 µs
// on the 1,213-host openb cluster when every host fits). Host generations
// identify a host's state across all ledgers of a cluster, so a policy may
// serve a ledger, its clones and copies in turn without losing its caches.
//
// Nothing here does I/O, starts goroutines or reads the clock; randomness
// comes from a *rand.Rand the caller passes in.
//
// Package gang builds gang (multi-task, topology-aware) placement on top of
// these per-task policies.
package frag

import "github.com/gpusched/gpusched/topology"

// Task is the demand of one task as node-level policies see it: whole GPUs
// or a share of one GPU (never both), CPU, memory, and the acceptable
// accelerator models.
type Task struct {
	// GPUs is the number of whole GPUs.
	GPUs int
	// GPUMilli is a share of one GPU (1..999) when GPUs is 0.
	GPUMilli int
	// CPUMilli and MemoryMiB are taken from the chosen host.
	CPUMilli  int64
	MemoryMiB int64
	// Models lists acceptable models; nil accepts any (CPU-only tasks
	// accept any host).
	Models []topology.ModelID
}

// Scope limits where a policy may place a task. The zero value means the
// whole cluster with no extra filter.
type Scope struct {
	// Within restricts candidates to the hosts under this domain (a network
	// domain, a host domain, or the root). Zero is the root.
	Within topology.DomainID
	// Allow, if non-nil, must return true for a host to be a candidate (the
	// caller's own filters: quota, reserved cells, hosts already used by
	// this gang).
	Allow func(topology.HostID) bool
}

// Policy chooses where one task goes on the current state of a ledger. It
// returns a claim the caller may pass to Ledger.Allocate, or false when no
// allowed host can take the task. Pick must leave the ledger's state as it
// found it. Policies may keep caches keyed by Ledger.HostGeneration; one
// Policy value serves one ledger at a time and is not safe for concurrent
// use.
type Policy interface {
	Pick(l *topology.Ledger, t Task, s Scope) (topology.Claim, bool)
}
