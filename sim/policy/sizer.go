package policy

import "time"

// SizeJob is one live job as a Sizer sees it (--ordering goodput,
// package sim/goodput).
type SizeJob struct {
	// ID is the job's name, Type its type in the throughput model.
	ID, Type string
	// Min and Max bound the GPUs it runs on (1 ≤ Min ≤ Max); Current is
	// what it holds now (0: it waits).
	Min, Max, Current int
	// Age is the time since it arrived; Resizes its re-allocations so
	// far (resizes, and restarts after its first start).
	Age     time.Duration
	Resizes int
}

// Sizer computes a round's job sizes for the goodput ordering in place
// of its built-in allocation (goodput.Allocator): one size per job, in
// jobs' order (arrival order), each 0 or within the job's [Min, Max],
// their sum at most gpus (the caller checks). speedup is the run's
// throughput model: a job type's throughput on k GPUs, packed onto as
// few hosts as possible, over its throughput on one.
type Sizer interface {
	Size(jobs []SizeJob, gpus int, speedup func(typ string, k int) float64) ([]int, error)
}

// SizerFactory builds a Sizer for one run (see OrderingFactory for arg).
type SizerFactory func(arg string, seed uint64) (Sizer, error)

// Sizer registers a sizing policy under name: --goodput-sizer
// NAME[:ARG].
func (r *Registry) Sizer(name string, f SizerFactory) error {
	return register(&r.sizers, "sizer", name, f, r.taken)
}

// LookupSizer returns the sizer registered under name.
func (r *Registry) LookupSizer(name string) (SizerFactory, bool) {
	if r == nil {
		return nil, false
	}
	f, ok := r.sizers[name]
	return f, ok
}

// Sizers returns the registered sizers' names, sorted.
func (r *Registry) Sizers() []string {
	return sortedKeys(r, func(r *Registry) []string { return keys(r.sizers) })
}
