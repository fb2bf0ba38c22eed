package simcli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpusched/gpusched/sim/gavel"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/policy/extproc"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// jobTypesHelp is --job-types' help: every value it takes.
const jobTypesHelp = `job types (Gavel's: the network a job trains), naming classes of the --gpu-speeds table (without one, of the --throughput-model), by which each job runs on each GPU model and --ordering gavel allocates (and by which it scales, with --throughput-model): ` +
	`empty (the trace's own type column, e.g. --map …,type=COLUMN, else the table's default factors), ` +
	`uniform (each job a type drawn uniformly from the table's classes by the seed and its ID, as Gavel's simulator draws them), ` +
	`or a file of JOB,TYPE lines (an optional job,type header; # comments); needs --gpu-speeds or --throughput-model`

// gavelAllocHelp is --gavel-allocator's help.
const gavelAllocHelp = `the allocation step of --ordering gavel and gavel-agnostic: empty (the built-in max-min, fairshare.HeteroMaxMin) ` +
	`exec:COMMAND ARGS (a process speaking docs/policy-protocol.md's allocate request, e.g. exec:python3 python/examples/gavel_maxmin.py), ` +
	`or NAME[:ARG] of an allocator registered in a policy.Registry; other orderings ignore it`

// registeredAllocators completes --gavel-allocator's help with the
// registered allocators.
func registeredAllocators(reg *policy.Registry) string {
	if r := reg.Allocators(); len(r) > 0 {
		return "; registered: " + strings.Join(r, ", ")
	}
	return ""
}

// gavelOrder is what an --ordering gavel value asks for.
type gavelOrder struct {
	agnostic bool
	round    time.Duration
}

// name is the ordering's name, without its round.
func (g *gavelOrder) name() string {
	if g.agnostic {
		return "gavel-agnostic"
	}
	return "gavel"
}

// parseGavel reads gavel[:ROUND] and gavel-agnostic[:ROUND]; ok is false
// for other names.
func parseGavel(name, arg string, hasArg bool) (*gavelOrder, bool, error) {
	if name != "gavel" && name != "gavel-agnostic" {
		return nil, false, nil
	}
	g := &gavelOrder{agnostic: name == "gavel-agnostic"}
	if hasArg {
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return nil, true, fmt.Errorf("--ordering %s:%s: want %s:ROUND, a positive round length such as 6m", name, arg, name)
		}
		g.round = d
	}
	return g, true, nil
}

// gavelPolicy builds the run's Gavel policy (nil when the ordering is not
// gavel): its allocation over c's models by the run's speed table and
// the jobs' types.
func (o jobOrder) gavelPolicy(rc runConfig, c *topology.Cluster, jobs []trace.Job) (*gavel.Policy, error) {
	if o.gavel == nil {
		return nil, nil
	}
	speeds, err := readGPUSpeeds(rc.gpuSpeeds)
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for i := range jobs {
		if jobs[i].Type != "" {
			types[jobs[i].Spec.ID] = jobs[i].Type
		}
	}
	cfg := gavel.Config{Cluster: c, Speeds: speeds, Types: types, Round: o.gavel.round, Agnostic: o.gavel.agnostic}
	if rc.gavelAlloc != "" {
		name, arg, _ := strings.Cut(rc.gavelAlloc, ":")
		var err error
		if f, ok := rc.reg.LookupAllocator(name); ok {
			cfg.Allocator, err = f(arg, rc.seed)
		} else if argv := strings.Fields(arg); name == "exec" && len(argv) > 0 {
			cfg.Allocator, err = extproc.StartAllocator(argv, rc.seed)
		} else {
			known := "exec:COMMAND [ARGS…]"
			if r := rc.reg.Allocators(); len(r) > 0 {
				known += ", or the registered " + strings.Join(r, ", ")
			}
			return nil, fmt.Errorf("--gavel-allocator %q: want %s", rc.gavelAlloc, known)
		}
		if err != nil {
			return nil, fmt.Errorf("--gavel-allocator %s: %w", name, err)
		}
	}
	p, err := gavel.New(cfg)
	if err != nil {
		if c, ok := cfg.Allocator.(interface{ Close() error }); ok {
			c.Close()
		}
		return nil, fmt.Errorf("--ordering %s: %w", o.gavel.name(), err)
	}
	return p, nil
}

// gavelEffective completes a gavel ordering's run: it needs --gpu-speeds
// (the jobs' speeds per model, the same for the runs it is compared
// with), preempts across queues (Gavel's rounds share the whole cluster)
// when --preempt is off, and runs a cycle every round unless
// --schedule-every says otherwise.
func (r *runConfig) gavelEffective(o jobOrder) error {
	if o.gavel == nil {
		return nil
	}
	if r.gpuSpeeds == "" {
		return fmt.Errorf("--ordering %s needs --gpu-speeds (e.g. gavel, the embedded table); give the same to the runs it is compared with", r.ordering)
	}
	switch r.preempt {
	case "", "off", "none", "false":
		r.preempt = "cluster"
	}
	if r.scheduleEvery == 0 {
		r.scheduleEvery = o.gavel.round
		if r.scheduleEvery == 0 {
			r.scheduleEvery = gavel.DefaultRound
		}
	}
	return nil
}

// assignJobTypes applies --job-types to a loaded trace and checks every
// job's type against the speed table (or, without one, the throughput
// model): a type the table does not have is an error naming the mapping
// file's (or the trace's) line and field.
func (r *runConfig) assignJobTypes(lt *loadedTrace) error {
	hasTypes := r.jobTypes != ""
	for i := range lt.jobs {
		hasTypes = hasTypes || lt.jobs[i].Type != ""
	}
	if !hasTypes {
		return nil
	}
	known, has, table, err := r.typeClasses() // (throughput.go)
	if err != nil {
		return err
	}
	if has == nil {
		if r.jobTypes != "" {
			return errors.New("--job-types needs --gpu-speeds or --throughput-model: the table whose classes the types name")
		}
		return nil // a trace's type column without a table: types unused
	}
	switch r.jobTypes {
	case "":
	case "uniform":
		if len(known) == 0 {
			return fmt.Errorf("--job-types uniform: the %s has no classes to draw from", table)
		}
		trace.AssignUniform(lt.jobs, known, r.dataSeed())
		lt.name += "+types=uniform"
		return nil
	default:
		f, err := openInput("--job-types", r.jobTypes)
		if err != nil {
			return err
		}
		m, err := trace.ReadJobTypes(f, r.jobTypes)
		f.Close()
		if err != nil {
			return fmt.Errorf("--job-types: %w", err)
		}
		if err := m.Check(has, known); err != nil {
			return fmt.Errorf("--job-types: %w", err)
		}
		// Rows for jobs the trace lacks (a mapping for a longer trace than
		// the one replayed) are counted in the trace's name, not refused.
		if n := m.Assign(lt.jobs); n > 0 {
			lt.name += fmt.Sprintf("+types(%d of %d rows unmatched)", n, len(m.Rows))
		} else {
			lt.name += "+types"
		}
	}
	_, file, _ := strings.Cut(r.traceArg, ":")
	for i := range lt.jobs {
		if t := lt.jobs[i].Type; t != "" && !has(t) {
			return fmt.Errorf("--trace: %w", &trace.ParseError{File: file, Line: lt.jobs[i].Line, Field: "type",
				Msg: fmt.Sprintf("%q is not a job type of the %s (%s)", t, table, strings.Join(known, ", "))})
		}
	}
	return nil
}
