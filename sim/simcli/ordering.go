package simcli

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/policy/extproc"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// orderingHelp is --ordering's help: every value it takes.
const orderingHelp = `job ordering: fifo (best-effort FIFO: a job that does not fit lets later ones pass; the default; also best-effort-fifo), ` +
	`strict-fifo (a job that does not fit blocks those behind it; with --backfill, EASY backfill), priority-aging, ` +
	`sjf (shortest job first by runtime estimate; also shortest-first), srtf (shortest remaining time first, preemptive: ` +
	`a job with less time left preempts a running one), las:H1,H2,… (Tiresias' 2D-LAS, thresholds in GPU-hours, preemptive; see --starve-limit), ` +
	`slice:LEASE (Gandiva-style time slicing, e.g. slice:10m, preemptive), themis (finish-time fairness ρ across queues, Themis), ` +
	`gavel[:ROUND] (Gavel's heterogeneity-aware max-min over effective throughput, rounds of ROUND, default 6m: needs --gpu-speeds, job types from --job-types), ` +
	`gavel-agnostic[:ROUND] (the same rounds, allocation blind to GPU models' speeds: Gavel's baseline), ` +
	`goodput[:ROUND] (Pollux-style adaptive sizing: every ROUND, default 1m, each job's GPUs, from 1 to twice what it asks for, chosen to maximize the power mean −1 of speedups under --throughput-model, which it needs; jobs shrink and grow in place, see --resize-cost), ` +
	`exec:COMMAND ARGS (a policy in another process, e.g. exec:python3 my_policy.py: docs/policy-protocol.md)` +
	`; sjf and srtf use --runtime-estimate (1, the true durations, when it is not set); a preemptive ordering turns on --preempt queue when --preempt is off`

// jobOrder is what an --ordering value asks for.
type jobOrder struct {
	queue      queue.Ordering // the leaf queues' ordering
	demote     string         // a --demote value it stands for
	srtf       bool
	ext        policy.OrderingFactory // a registered ordering
	extArg     string
	themis     bool          // finish-time fairness across queues
	gavel      *gavelOrder   // Gavel's rounds (gavel.go)
	goodput    *goodputOrder // Pollux-style sizing (throughput.go)
	estimate   bool          // needs runtime estimates
	preemptive bool          // needs priority preemption
}

// parseOrdering reads an --ordering value; reg adds the registered
// orderings and demotions.
func parseOrdering(v string, reg *policy.Registry) (jobOrder, error) {
	name, arg, hasArg := strings.Cut(v, ":")
	switch {
	case v == "" || v == "fifo" || v == string(queue.BestEffortFIFO):
		return jobOrder{queue: queue.BestEffortFIFO}, nil
	case v == string(queue.StrictFIFO), v == string(queue.PriorityAging):
		return jobOrder{queue: queue.Ordering(v)}, nil
	case v == "sjf" || v == string(queue.ShortestFirst):
		return jobOrder{queue: queue.ShortestFirst, estimate: true}, nil
	case v == "srtf":
		return jobOrder{queue: queue.BestEffortFIFO, srtf: true, estimate: true, preemptive: true}, nil
	case v == "themis":
		return jobOrder{queue: queue.BestEffortFIFO, themis: true}, nil
	case hasArg && (name == "las" || name == "slice"):
		if _, err := parseDemote(v, reg); err != nil {
			return jobOrder{}, fmt.Errorf("--ordering: %w", err)
		}
		return jobOrder{queue: queue.BestEffortFIFO, demote: v, preemptive: true}, nil
	}
	if g, ok, err := parseGavel(name, arg, hasArg); ok {
		if err != nil {
			return jobOrder{}, err
		}
		return jobOrder{queue: queue.BestEffortFIFO, gavel: g, preemptive: true}, nil
	}
	if g, ok, err := parseGoodput(name, arg, hasArg); ok {
		if err != nil {
			return jobOrder{}, err
		}
		return jobOrder{queue: queue.BestEffortFIFO, goodput: g}, nil
	}
	if name == "exec" && hasArg {
		argv := strings.Fields(arg)
		if len(argv) == 0 {
			return jobOrder{}, fmt.Errorf("--ordering %q: want exec:COMMAND [ARGS…]", v)
		}
		start := func(_ string, seed uint64) (policy.Ordering, error) { return extproc.Start(argv, "", seed) }
		return jobOrder{queue: queue.BestEffortFIFO, ext: start}, nil
	}
	if f, ok := reg.LookupOrdering(name); ok {
		return jobOrder{queue: queue.BestEffortFIFO, ext: f, extArg: arg}, nil
	}
	if _, ok := reg.LookupDemotion(name); ok {
		return jobOrder{queue: queue.BestEffortFIFO, demote: v, preemptive: true}, nil
	}
	known := "fifo, strict-fifo, priority-aging, sjf, srtf, las:H1,H2,…, slice:LEASE, themis, gavel[:ROUND], gavel-agnostic[:ROUND], goodput[:ROUND], exec:COMMAND"
	if r := reg.Orderings(); len(r) > 0 {
		known += ", and the registered " + strings.Join(r, ", ")
	}
	return jobOrder{}, fmt.Errorf("--ordering %q: want one of %s", v, known)
}

// effective returns the run's configuration with its --ordering resolved:
// ordering the leaf queues' ordering, demote set for a demotion,
// --runtime-estimate 1 when the ordering needs estimates and none is set,
// --preempt queue when the ordering is preemptive and preemption is off.
// The summary's configuration records the result.
func (r runConfig) effective() (runConfig, jobOrder, error) {
	o, err := parseOrdering(r.ordering, r.reg)
	if err != nil {
		return r, o, err
	}
	if o.demote != "" {
		if r.demote != "" && r.demote != o.demote {
			return r, o, fmt.Errorf("--ordering %s and --demote %s: give the demotion once", r.ordering, r.demote)
		}
		r.demote = o.demote
	}
	if o.estimate && r.runtimeEst == 0 {
		r.runtimeEst = 1
	}
	if err := r.gavelEffective(o); err != nil {
		return r, o, err
	}
	if err := r.goodputEffective(o); err != nil {
		return r, o, err
	}
	if r.demote != "" || o.preemptive {
		switch r.preempt {
		case "", "off", "none", "false":
			r.preempt = "queue"
		}
	}
	r.ordering = string(o.queue)
	return r, o, nil
}

// apply sets o's job-level ordering on the run's Scheduler (themis is
// the queue tree's, set with it).
func (o jobOrder) apply(s *rootsched.Scheduler, seed uint64) error {
	switch {
	case o.srtf:
		s.Order(rootsched.SRTF{})
	case o.ext != nil:
		ord, err := o.ext(o.extArg, seed)
		if err != nil {
			return fmt.Errorf("--ordering: %w", err)
		}
		s.Order(ord)
	}
	return nil
}

// placer builds the run's placer: a registered one, or a built-in by
// name (rootsched.Placer).
func (r *runConfig) placer(c *topology.Cluster, jobs []trace.Job, node *extproc.NodePicker) (gang.Placer, error) {
	if node != nil {
		return gang.New(frag.GPUPacking, gang.Options{Node: node})
	}
	if f, ok := r.reg.LookupPlacer(r.policy); ok {
		p, err := f(c, jobs, r.seed)
		if err != nil {
			return nil, fmt.Errorf("--policy %s: %w", r.policy, err)
		}
		return p, nil
	}
	return rootsched.Placer(c, r.policy, jobs, r.defrag.placer)
}

// execPlacer starts the process of an --policy exec:COMMAND ARGS (nil
// for other policies): a node picker (extproc.NodePicker) under the gang
// placer.
func (r *runConfig) execPlacer(c *topology.Cluster) (*extproc.NodePicker, error) {
	name, arg, ok := strings.Cut(r.policy, ":")
	if !ok || name != "exec" {
		return nil, nil
	}
	argv := strings.Fields(arg)
	if len(argv) == 0 {
		return nil, fmt.Errorf("--policy %q: want exec:COMMAND [ARGS…]", r.policy)
	}
	n, err := extproc.StartNodePicker(argv, c, r.seed)
	if err != nil {
		return nil, fmt.Errorf("--policy %s: %w", r.policy, err)
	}
	return n, nil
}

// policyHelp is --policy's help, with the registered placers.
func policyHelp(reg *policy.Registry) string {
	s := "placement policy: " + strings.Join(gang.PolicyNames(), ", ") +
		", exec:COMMAND ARGS (a node picker in another process, e.g. exec:python3 python/examples/worst_fit.py: docs/policy-protocol.md)"
	if r := reg.Placers(); len(r) > 0 {
		s += ", and the registered " + strings.Join(r, ", ")
	}
	return s
}

// splitSpecs splits a comma-separated list of values, keeping a value's
// own list together: a piece that starts with a digit or '.' after a
// piece with a colon continues it, so "fifo,las:1,8,srtf" is fifo,
// las:1,8 and srtf.
func splitSpecs(s string) []string {
	var out []string
	for _, p := range splitList(s) {
		if n := len(out); n > 0 && strings.Contains(out[n-1], ":") && (p[0] >= '0' && p[0] <= '9' || p[0] == '.') {
			out[n-1] += "," + p
			continue
		}
		out = append(out, p)
	}
	return out
}

// registeredOrderings completes --ordering's help with the registered
// orderings.
func registeredOrderings(reg *policy.Registry) string {
	if r := reg.Orderings(); len(r) > 0 {
		return "; registered: " + strings.Join(r, ", ")
	}
	return ""
}
