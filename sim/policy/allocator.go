package policy

import "github.com/gpusched/gpusched/fairshare"

// Allocator computes a round's allocation for a heterogeneity-aware
// ordering (--ordering gavel, package sim/gavel): for each job group —
// jobs of one type and size, Count of them — its share of time on each
// GPU model, one row per group of len(c.Models), as
// fairshare.HeteroMaxMin's Time. The caller checks the rows (shares in
// [0, 1], each row's sum at most 1, no model's GPUs exceeded).
type Allocator interface {
	Allocate(jobs []fairshare.HeteroJob, c fairshare.HeteroCluster) ([][]float64, error)
}

// AllocatorFactory builds an Allocator for one run (see OrderingFactory
// for arg).
type AllocatorFactory func(arg string, seed uint64) (Allocator, error)

// Allocator registers an allocator under name: --gavel-allocator
// NAME[:ARG]. An Allocator with a Close method is closed when its run
// ends.
func (r *Registry) Allocator(name string, f AllocatorFactory) error {
	return register(&r.allocators, "allocator", name, f, r.taken)
}

// LookupAllocator returns the allocator registered under name.
func (r *Registry) LookupAllocator(name string) (AllocatorFactory, bool) {
	if r == nil {
		return nil, false
	}
	f, ok := r.allocators[name]
	return f, ok
}

// Allocators returns the registered allocators' names, sorted.
func (r *Registry) Allocators() []string {
	return sortedKeys(r, func(r *Registry) []string { return keys(r.allocators) })
}
