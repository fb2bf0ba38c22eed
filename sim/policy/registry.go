package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// PlacerFactory builds a gang placer for one run: c is the run's cluster,
// jobs the trace it replays (what a placer that learns the workload, as
// FGD does, learns from), seed the run's seed.
type PlacerFactory func(c *topology.Cluster, jobs []trace.Job, seed uint64) (gang.Placer, error)

// OrderingFactory builds an Ordering for one run. arg is what follows
// the name and a colon in the flag ("" for the bare name): --ordering
// NAME:ARG. Each run gets its own Ordering.
type OrderingFactory func(arg string, seed uint64) (Ordering, error)

// DemotionFactory builds a queue.Demotion for one run (see
// OrderingFactory for arg). The simulator counts each job's attained
// service and lowers its priority by its level, as for --demote las:….
type DemotionFactory func(arg string, seed uint64) (queue.Demotion, error)

// Registry is a set of named policies. The zero value is empty and ready
// to use; it is not safe for concurrent registration (register in main,
// before the command runs), and safe for concurrent lookups after.
type Registry struct {
	placers   map[string]PlacerFactory
	orderings map[string]OrderingFactory
	demotions map[string]DemotionFactory
	// allocators are in allocator.go, sizers in sizer.go.
	allocators map[string]AllocatorFactory
	sizers     map[string]SizerFactory
}

// reserved are the built-in orderings' names (sim --ordering, --demote),
// which a registered policy may not take, nor a placer's
// (gang.PolicyNames).
var reserved = []string{
	"fifo", "strict-fifo", "best-effort-fifo", "priority-aging", "shortest-first", "sjf", "srtf", "themis", "las", "slice", "exec", "gavel", "gavel-agnostic", "goodput",
}

func checkName(kind, name string) error {
	switch {
	case name == "" || strings.ContainsAny(name, ":,= \t"):
		return fmt.Errorf("policy: %s name %q: want a non-empty name without ':', ',', '=' or spaces", kind, name)
	case slices.Contains(reserved, name) || slices.Contains(gang.PolicyNames(), name):
		return fmt.Errorf("policy: %s name %q is a built-in's", kind, name)
	}
	return nil
}

func register[F any](m *map[string]F, kind, name string, f F, taken func(string) bool) error {
	if err := checkName(kind, name); err != nil {
		return err
	}
	if taken(name) {
		return fmt.Errorf("policy: %q registered twice", name)
	}
	if *m == nil {
		*m = map[string]F{}
	}
	(*m)[name] = f
	return nil
}

func (r *Registry) taken(name string) bool {
	_, p := r.placers[name]
	_, o := r.orderings[name]
	_, d := r.demotions[name]
	_, a := r.allocators[name]
	_, z := r.sizers[name]
	return p || o || d || a || z
}

// Placer registers a placement policy under name: --policy NAME,
// --policies a,NAME, --param policy=NAME. Names are unique across kinds
// and may not be a built-in's.
func (r *Registry) Placer(name string, f PlacerFactory) error {
	return register(&r.placers, "placer", name, f, r.taken)
}

// Ordering registers a job ordering under name: --ordering NAME[:ARG],
// --orderings a,NAME, --param ordering=NAME.
func (r *Registry) Ordering(name string, f OrderingFactory) error {
	return register(&r.orderings, "ordering", name, f, r.taken)
}

// Demotion registers a demotion policy under name, used as an ordering:
// --ordering NAME[:ARG] (it turns on priority preemption within queues,
// as las: does).
func (r *Registry) Demotion(name string, f DemotionFactory) error {
	return register(&r.demotions, "demotion", name, f, r.taken)
}

// LookupPlacer returns the placer registered under name.
func (r *Registry) LookupPlacer(name string) (PlacerFactory, bool) {
	if r == nil {
		return nil, false
	}
	f, ok := r.placers[name]
	return f, ok
}

// LookupOrdering returns the ordering registered under name.
func (r *Registry) LookupOrdering(name string) (OrderingFactory, bool) {
	if r == nil {
		return nil, false
	}
	f, ok := r.orderings[name]
	return f, ok
}

// LookupDemotion returns the demotion registered under name.
func (r *Registry) LookupDemotion(name string) (DemotionFactory, bool) {
	if r == nil {
		return nil, false
	}
	f, ok := r.demotions[name]
	return f, ok
}

// Placers returns the registered placers' names, sorted.
func (r *Registry) Placers() []string {
	return sortedKeys(r, func(r *Registry) []string { return keys(r.placers) })
}

// Orderings returns the registered orderings' and demotions' names,
// sorted.
func (r *Registry) Orderings() []string {
	return sortedKeys(r, func(r *Registry) []string { return append(keys(r.orderings), keys(r.demotions)...) })
}

func sortedKeys(r *Registry, f func(*Registry) []string) []string {
	if r == nil {
		return nil
	}
	k := f(r)
	slices.Sort(k)
	return k
}

func keys[F any](m map[string]F) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
