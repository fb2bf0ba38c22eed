package queue

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a queue tree: the cluster at the root, organisations and teams
// below, jobs submitted to the leaves. It is plain data (YAML and JSON tags
// given); Build validates it and fills defaults.
type Config struct {
	// Root is the cluster node. Its name defaults to "cluster".
	Root Node `json:"root" yaml:"root"`
	// PriorityClasses name the priorities jobs may use. When given, a job
	// whose priority is not one of them is rejected; when empty any int32
	// priority is accepted.
	PriorityClasses []PriorityClass `json:"priorityClasses,omitempty" yaml:"priorityClasses,omitempty"`
	// Fairness orders queues against each other.
	Fairness Fairness `json:"fairness,omitempty" yaml:"fairness,omitempty"`
}

// Node is one queue of the tree. Inner nodes group queues; jobs go to
// leaves.
type Node struct {
	// Name is unique in the whole tree; it may not contain "/".
	Name string `json:"name" yaml:"name"`
	// Weight is the node's fair-share weight among its siblings (its
	// "shares"); 0 means 1.
	Weight float64 `json:"weight,omitempty" yaml:"weight,omitempty"`
	// Quotas limit the node per resource. See Quota for the resources and
	// what a node without an entry for a resource gets.
	Quotas []Quota `json:"quotas,omitempty" yaml:"quotas,omitempty"`
	// Policy orders a leaf's jobs. Only leaves have one.
	Policy Policy `json:"policy,omitempty" yaml:"policy,omitempty"`
	// Children are the sub-queues; none for a leaf.
	Children []Node `json:"children,omitempty" yaml:"children,omitempty"`
}

// Quota limits one resource at one node. Resources and units:
//
//	"gpu"          whole GPUs (fractional shares and MIG instances count
//	               by their fraction)
//	"gpu/MODEL"    GPUs of one accelerator model, e.g. "gpu/H100-SXM5-80GB"
//	"cpu"          cores
//	"memory"       GiB
//
// A resource that no node lists is not limited at all. A resource listed
// anywhere is governed in the whole tree: a leaf without an entry for it
// owns none (nominal 0) but may borrow; an inner node without an entry
// gets the sum of its children's nominal quotas and no limits; the root
// without an entry gets the cluster's capacity.
type Quota struct {
	// Resource is "gpu", "gpu/MODEL", "cpu" or "memory".
	Resource string `json:"resource" yaml:"resource"`
	// Nominal is the guaranteed amount. The children's nominal quotas may
	// not add up to more than their parent's; what is left over at a parent
	// is a pool its children borrow from first.
	Nominal int64 `json:"nominal" yaml:"nominal"`
	// BorrowingLimit caps how far the node's usage may go beyond Nominal by
	// borrowing unused quota of others; nil means no cap.
	BorrowingLimit *int64 `json:"borrowingLimit,omitempty" yaml:"borrowingLimit,omitempty"`
	// LendingLimit caps how much of the node's unused Nominal others may
	// borrow; nil means all of it. The rest stays free for the node alone.
	LendingLimit *int64 `json:"lendingLimit,omitempty" yaml:"lendingLimit,omitempty"`
	// Max is a hard cap on the node's usage whatever it could borrow; nil
	// means no cap.
	Max *int64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Limit returns a pointer to v, for the optional Quota fields.
func Limit(v int64) *int64 { return &v }

// Ordering is how a leaf queue orders and admits its jobs.
type Ordering string

// Orderings. Within every ordering a higher priority goes first.
const (
	// BestEffortFIFO admits in (priority, submission) order, and a job that
	// cannot be admitted does not block those behind it. The default.
	BestEffortFIFO Ordering = "best-effort-fifo"
	// StrictFIFO admits in (priority, submission) order and stops at the
	// first job that cannot be admitted: nothing behind it starts, except,
	// with Backfill, jobs that cannot delay its reserved start.
	StrictFIFO Ordering = "strict-fifo"
	// PriorityAging orders by effective priority = priority + waiting time
	// / AgingInterval, so a job that waits long enough overtakes any job of
	// a higher priority submitted later: waiting is bounded. Blocked jobs
	// do not block others; with Backfill the first blocked job holds a
	// reservation that later jobs may not delay.
	PriorityAging Ordering = "priority-aging"
	// ShortestFirst orders by runtime estimate (Entry.Runtime), shortest
	// first, then submission; jobs without an estimate go after those with
	// one. It is shortest-job-first (SJF) with the user's estimates or
	// true durations; with the remaining time as the estimate
	// (Entry.Runtime minus the work a preempted job kept, which the root
	// Scheduler sets when it requeues a job) it is
	// shortest-remaining-time-first (SRTF). Blocked jobs do not block
	// others. Across queues with no fairness policy the shorter head goes
	// first when both queues order this way. Source: the SJF baseline of
	// Hu et al., "Characterization and Prediction of Deep Learning
	// Workloads in Large-Scale GPU Datacenters" (Helios), SC'21, which
	// reports it cutting Philly's mean JCT from FIFO's 86,072 s to
	// 34,272 s.
	ShortestFirst Ordering = "shortest-first"
)

// Policy is the ordering policy of a leaf queue.
type Policy struct {
	// Ordering defaults to BestEffortFIFO.
	Ordering Ordering `json:"ordering,omitempty" yaml:"ordering,omitempty"`
	// AgingInterval is, for PriorityAging, the waiting time that adds one
	// point of priority (> 0). Ignored otherwise.
	AgingInterval time.Duration `json:"agingInterval,omitempty" yaml:"agingInterval,omitempty"`
	// Backfill turns on EASY backfill: the first job of the queue that
	// cannot start gets a reservation (the earliest time and place it can
	// start, from the runtime estimates of running jobs), and a later job
	// may start only if it cannot delay that reservation: it ends before it
	// by its runtime estimate, or uses nothing the reservation needs.
	Backfill bool `json:"backfill,omitempty" yaml:"backfill,omitempty"`
}

// PriorityClass names a job priority.
type PriorityClass struct {
	Name  string `json:"name" yaml:"name"`   // e.g. "urgent"
	Value int32  `json:"value" yaml:"value"` // the job priority it names
}

// FairPolicy orders queues against each other.
type FairPolicy string

// Fair-share policies. Whatever the policy, queues whose next job fits in
// their guarantee are served before queues that would have to borrow.
const (
	// DRF serves siblings in ascending weighted dominant share of current
	// usage (hierarchical DRF). The default.
	DRF FairPolicy = "drf"
	// FairTree serves siblings in descending Slurm Level Fairshare:
	// normalised weight over normalised usage decayed with HalfLife.
	FairTree FairPolicy = "fair-tree"
	// Borrowed serves siblings in ascending Kueue borrowed share: what they
	// use beyond their nominal quota relative to what their parent can lend,
	// over their weight.
	Borrowed FairPolicy = "borrowed"
	// NoFairness serves queues by their next job's priority and submission
	// time, as if all were one queue.
	NoFairness FairPolicy = "none"
	// FinishTime serves siblings in descending finish-time fairness ρ of
	// their next job (Themis: Mahajan et al., "Themis: Fair and Efficient
	// GPU Cluster Scheduling", NSDI'20): the queue whose work is furthest
	// behind what its fair share alone would give it goes first. See
	// Tree.FinishTimeRho for the estimate. The host must call Tree.Advance
	// at the start of each cycle (the estimate grows with waiting time).
	FinishTime FairPolicy = "finish-time"
)

// Fairness configures the order across queues.
type Fairness struct {
	// Policy defaults to DRF.
	Policy FairPolicy `json:"policy,omitempty" yaml:"policy,omitempty"`
	// HalfLife is how fast usage is forgotten under FairTree; 0 means the
	// default of 7 days (Slurm's PriorityDecayHalfLife default).
	HalfLife time.Duration `json:"halfLife,omitempty" yaml:"halfLife,omitempty"`
	// NoDecay keeps usage forever under FairTree (Slurm's
	// PriorityDecayHalfLife=0); HalfLife is then ignored.
	NoDecay bool `json:"noDecay,omitempty" yaml:"noDecay,omitempty"`
	// Runtime is, under FinishTime, the runtime assumed for a job without
	// an estimate (Entry.Runtime 0); 0 means DefaultFinishTimeRuntime.
	Runtime time.Duration `json:"runtime,omitempty" yaml:"runtime,omitempty"`
}

// DefaultFinishTimeRuntime is the runtime FinishTime assumes for a job
// without an estimate when Fairness.Runtime is not set.
const DefaultFinishTimeRuntime = time.Hour

// DefaultHalfLife is the FairTree usage half-life when none is given.
const DefaultHalfLife = 7 * 24 * time.Hour

// ErrInvalidConfig is the sentinel every *ConfigError unwraps to.
var ErrInvalidConfig = errors.New("invalid queue config")

// ConfigError names the field of a Config that is wrong and why. Field is
// a path such as "root.children[1].quotas[0].nominal".
type ConfigError struct {
	Field string // path of the field, e.g. "root.children[1].quotas[0].nominal"
	Msg   string // what is wrong with it
}

// Error returns "queue config: FIELD: MSG".
func (e *ConfigError) Error() string { return "queue config: " + e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Resource names.
const (
	ResourceGPU    = "gpu"
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
	// ResourceGPUModelPrefix starts a per-model GPU resource: "gpu/MODEL".
	ResourceGPUModelPrefix = "gpu/"
)

// Units of the Quota values in the package's internal units (milli-GPU,
// milli-CPU, MiB).
const (
	unitGPU    = 1000
	unitCPU    = 1000
	unitMemory = 1024
)

// validateShape checks what can be checked without the cluster: names,
// weights, policies, priority classes and the form of quota entries.
func (c *Config) validateShape() error {
	names := map[string]string{}
	var walk func(n *Node, field string, root bool) error
	walk = func(n *Node, field string, root bool) error {
		if n.Name == "" && !root {
			return cfgErr(field+".name", "empty queue name")
		}
		if strings.Contains(n.Name, "/") {
			return cfgErr(field+".name", "queue name %q contains \"/\"", n.Name)
		}
		if prev, ok := names[n.Name]; ok {
			return cfgErr(field+".name", "queue name %q already used at %s", n.Name, prev)
		}
		names[n.Name] = field
		if n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0) {
			return cfgErr(field+".weight", "weight %v; want a finite value ≥ 0", n.Weight)
		}
		seen := map[string]bool{}
		for i, q := range n.Quotas {
			qf := field + ".quotas[" + strconv.Itoa(i) + "]"
			if !validResource(q.Resource) {
				return cfgErr(qf+".resource", "unknown resource %q (want gpu, gpu/MODEL, cpu or memory)", q.Resource)
			}
			if seen[q.Resource] {
				return cfgErr(qf+".resource", "resource %q listed twice", q.Resource)
			}
			seen[q.Resource] = true
			if err := q.check(qf); err != nil {
				return err
			}
		}
		if len(n.Children) > 0 && n.Policy != (Policy{}) {
			return cfgErr(field+".policy", "queue %q has children; only leaf queues have a policy", n.Name)
		}
		if len(n.Children) == 0 {
			if err := n.Policy.check(field + ".policy"); err != nil {
				return err
			}
		}
		for i := range n.Children {
			if err := walk(&n.Children[i], field+".children["+strconv.Itoa(i)+"]", false); err != nil {
				return err
			}
		}
		return nil
	}
	if len(c.Root.Children) == 0 {
		return cfgErr("root.children", "a queue tree needs at least one leaf queue below the root")
	}
	if err := walk(&c.Root, "root", true); err != nil {
		return err
	}
	pc := map[string]bool{}
	pv := map[int32]bool{}
	for i, p := range c.PriorityClasses {
		f := "priorityClasses[" + strconv.Itoa(i) + "]"
		if p.Name == "" {
			return cfgErr(f+".name", "empty priority class name")
		}
		if pc[p.Name] {
			return cfgErr(f+".name", "priority class %q listed twice", p.Name)
		}
		if pv[p.Value] {
			return cfgErr(f+".value", "priority value %d listed twice", p.Value)
		}
		pc[p.Name], pv[p.Value] = true, true
	}
	switch c.Fairness.Policy {
	case "", DRF, FairTree, Borrowed, NoFairness, FinishTime:
	default:
		return cfgErr("fairness.policy", "unknown policy %q (want drf, fair-tree, borrowed, finish-time or none)", c.Fairness.Policy)
	}
	if c.Fairness.Runtime < 0 {
		return cfgErr("fairness.runtime", "negative runtime %v", c.Fairness.Runtime)
	}
	if c.Fairness.HalfLife < 0 {
		return cfgErr("fairness.halfLife", "negative half-life %v", c.Fairness.HalfLife)
	}
	return nil
}

func validResource(r string) bool {
	switch r {
	case ResourceGPU, ResourceCPU, ResourceMemory:
		return true
	}
	return strings.HasPrefix(r, ResourceGPUModelPrefix) && len(r) > len(ResourceGPUModelPrefix)
}

func (q *Quota) check(f string) error {
	if q.Nominal < 0 {
		return cfgErr(f+".nominal", "negative nominal quota %d", q.Nominal)
	}
	const maxQuota = 1 << 40
	if q.Nominal > maxQuota {
		return cfgErr(f+".nominal", "nominal quota %d is absurd (over 2^40)", q.Nominal)
	}
	for _, l := range []struct {
		name string
		v    *int64
	}{{"borrowingLimit", q.BorrowingLimit}, {"lendingLimit", q.LendingLimit}, {"max", q.Max}} {
		if l.v != nil && (*l.v < 0 || *l.v > maxQuota) {
			return cfgErr(f+"."+l.name, "%s %d outside 0..2^40", l.name, *l.v)
		}
	}
	if q.LendingLimit != nil && *q.LendingLimit > q.Nominal {
		return cfgErr(f+".lendingLimit", "lending limit %d above nominal quota %d", *q.LendingLimit, q.Nominal)
	}
	if q.Max != nil && *q.Max < q.Nominal {
		return cfgErr(f+".max", "max %d below nominal quota %d", *q.Max, q.Nominal)
	}
	return nil
}

func (p *Policy) check(f string) error {
	switch p.Ordering {
	case "", BestEffortFIFO, StrictFIFO, ShortestFirst:
	case PriorityAging:
		if p.AgingInterval <= 0 {
			return cfgErr(f+".agingInterval", "priority-aging needs an aging interval > 0, got %v", p.AgingInterval)
		}
	default:
		return cfgErr(f+".ordering", "unknown ordering %q (want best-effort-fifo, strict-fifo, priority-aging or shortest-first)", p.Ordering)
	}
	if p.AgingInterval < 0 {
		return cfgErr(f+".agingInterval", "negative aging interval %v", p.AgingInterval)
	}
	return nil
}

// models returns the GPU models named by quotas anywhere in the tree,
// sorted.
func (c *Config) models() []string {
	var out []string
	var walk func(n *Node)
	walk = func(n *Node) {
		for _, q := range n.Quotas {
			if strings.HasPrefix(q.Resource, ResourceGPUModelPrefix) {
				out = append(out, strings.TrimPrefix(q.Resource, ResourceGPUModelPrefix))
			}
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&c.Root)
	slices.Sort(out)
	return slices.Compact(out)
}

// Clone returns a deep copy of c: it shares no slice or pointer with c.
func (c Config) Clone() Config {
	c.Root = c.Root.clone()
	c.PriorityClasses = slices.Clone(c.PriorityClasses)
	return c
}

// clone returns a deep copy of n and its subtree.
func (n Node) clone() Node {
	if n.Quotas != nil {
		qs := make([]Quota, len(n.Quotas))
		for i, q := range n.Quotas {
			q.BorrowingLimit, q.LendingLimit, q.Max = clonePtr(q.BorrowingLimit), clonePtr(q.LendingLimit), clonePtr(q.Max)
			qs[i] = q
		}
		n.Quotas = qs
	}
	if n.Children != nil {
		ch := make([]Node, len(n.Children))
		for i, k := range n.Children {
			ch[i] = k.clone()
		}
		n.Children = ch
	}
	return n
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
