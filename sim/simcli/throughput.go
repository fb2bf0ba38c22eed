package simcli

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/goodput"
	"github.com/gpusched/gpusched/sim/policy"
)

// throughputHelp is --throughput-model's help: every value it takes.
const throughputHelp = `a throughput model by which every job's speed follows its GPUs and their placement, non-linearly (sim.Config.Scaling): ` +
	`empty (off: the --speed model and linear scaling of elastic jobs), or pollux (package sim/goodput: Pollux's iteration-time model with ` +
	`parameters fitted to its artifact's measured step times for cifar10, imagenet, bert, yolov3, deepspeech2 and ncf jobs, by --job-types; ` +
	`a job runs at its model throughput over its throughput at the size it asks for, packed); needed by --ordering goodput, and given to the runs it is compared with`

// goodputSizerHelp is --goodput-sizer's help.
const goodputSizerHelp = `the sizing step of --ordering goodput: empty (the built-in search, goodput.Allocator) or NAME[:ARG] of a sizer registered in a policy.Registry (policy.Sizer); other orderings ignore it`

// registeredSizers completes --goodput-sizer's help with the registered
// sizers.
func registeredSizers(reg *policy.Registry) string {
	if r := reg.Sizers(); len(r) > 0 {
		return "; registered: " + strings.Join(r, ", ")
	}
	return ""
}

// sizer builds the run's --goodput-sizer (nil when empty).
func (r *runConfig) sizer() (policy.Sizer, error) {
	if r.goodputSizer == "" {
		return nil, nil
	}
	name, arg, _ := strings.Cut(r.goodputSizer, ":")
	f, ok := r.reg.LookupSizer(name)
	if !ok {
		return nil, r.unknownSizer()
	}
	z, err := f(arg, r.seed)
	if err != nil {
		return nil, fmt.Errorf("--goodput-sizer %s: %w", name, err)
	}
	return z, nil
}

// unknownSizer is the error for a --goodput-sizer no one registered.
func (r *runConfig) unknownSizer() error {
	known := "none is registered"
	if z := r.reg.Sizers(); len(z) > 0 {
		known = "registered: " + strings.Join(z, ", ")
	}
	return fmt.Errorf("--goodput-sizer %q: want the name of a registered sizer (%s)", r.goodputSizer, known)
}

// readThroughputModel reads --throughput-model: nil for "".
func readThroughputModel(v string) (*goodput.Model, error) {
	switch v {
	case "":
		return nil, nil
	case "pollux":
		return goodput.Pollux(), nil
	}
	return nil, fmt.Errorf("--throughput-model %q: want pollux (or empty: off)", v)
}

// typeClasses returns the job types --job-types may name and a check of
// one: the --gpu-speeds table's classes, else the --throughput-model's;
// has is nil with neither. table names where they come from.
func (r *runConfig) typeClasses() (known []string, has func(string) bool, table string, err error) {
	if r.gpuSpeeds != "" {
		speeds, err := readGPUSpeeds(r.gpuSpeeds)
		if err != nil {
			return nil, nil, "", err
		}
		return speeds.ClassNames(), speeds.HasClass, "--gpu-speeds table " + r.gpuSpeeds, nil
	}
	m, err := readThroughputModel(r.throughput)
	if m == nil || err != nil {
		return nil, nil, "", err
	}
	known = m.Classes()
	return known, func(c string) bool { return slices.Contains(known, c) }, "--throughput-model " + r.throughput, nil
}

// goodputOrder is what an --ordering goodput value asks for.
type goodputOrder struct {
	round time.Duration
}

// parseGoodput reads goodput[:ROUND]; ok is false for other names.
func parseGoodput(name, arg string, hasArg bool) (*goodputOrder, bool, error) {
	if name != "goodput" {
		return nil, false, nil
	}
	g := &goodputOrder{}
	if hasArg {
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return nil, true, fmt.Errorf("--ordering goodput:%s: want goodput:ROUND, a positive round length such as 1m", arg)
		}
		g.round = d
	}
	return g, true, nil
}

// goodputEffective checks a goodput ordering's run: it needs the
// throughput model (the same for the runs it is compared with).
func (r *runConfig) goodputEffective(o jobOrder) error {
	if o.goodput == nil {
		return nil
	}
	if r.throughput == "" {
		return fmt.Errorf("--ordering %s needs --throughput-model (e.g. pollux); give the same to the runs it is compared with", r.ordering)
	}
	return nil
}

// checkThroughput rejects a --throughput-model no run can use.
func (r *runConfig) checkThroughput(swept map[string]bool) error {
	if _, err := readThroughputModel(r.throughput); err != nil {
		return err
	}
	if r.throughput != "" && r.speed && !swept["speed"] && !swept["throughput-model"] {
		return errors.New("--speed and --throughput-model both slow jobs by their placement: give one")
	}
	if r.resizeCost < 0 {
		return fmt.Errorf("--resize-cost %v: want ≥ 0", r.resizeCost)
	}
	if name, _, _ := strings.Cut(r.goodputSizer, ":"); name != "" {
		if _, ok := r.reg.LookupSizer(name); !ok {
			return r.unknownSizer()
		}
	}
	return nil
}

// executeGoodput runs one simulation of p under rc (resolved: effective)
// with the goodput Scheduler: every whole-GPU job made elastic from 1 GPU
// up to twice what it asks for (goodput.Elastic), resized every round by
// the throughput model.
func executeGoodput(rc, given runConfig, o jobOrder, p *prepared, progress func(done, total int)) (*sim.Result, error) {
	if p.part != nil {
		return nil, errors.New("--ordering goodput allocates the whole cluster: it does not take hard virtual clusters (--queues vc-hard:…)")
	}
	m, err := readThroughputModel(rc.throughput)
	if err != nil {
		return nil, err
	}
	jobs := slices.Clone(p.lt.jobs)
	_, tenants, qmap, err := rc.queueSetup(jobs)
	if err != nil {
		return nil, err
	}
	scaling := goodput.NewScaling(m, p.c, jobs)
	types := map[string]string{}
	for i := range jobs {
		if jobs[i].Type != "" {
			types[jobs[i].Spec.ID] = jobs[i].Type
		}
	}
	goodput.Elastic(jobs, goodputMaxScale, p.c.NumGPUs()) // new groups: p's jobs keep theirs
	z, err := rc.sizer()
	if err != nil {
		return nil, err
	}
	if c, ok := z.(policy.Closer); ok {
		defer c.Close()
	}
	s, err := goodput.New(goodput.Config{Cluster: p.c, Model: m, Types: types, Round: o.goodput.round, Grace: rc.grace, Sizer: z})
	if err != nil {
		return nil, err
	}
	cfg, err := rc.simConfig()
	if err != nil {
		return nil, err
	}
	cfg.Cluster, cfg.Scheduler, cfg.Tenants, cfg.QueueMap, cfg.Progress, cfg.Scaling = p.c, s, tenants, qmap, progress, scaling
	sm, err := sim.New(cfg, jobs)
	if err != nil {
		return nil, err
	}
	res, err := sm.Run()
	if err != nil {
		return nil, err
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("--goodput-sizer %s: %w", rc.goodputSizer, err)
	}
	label(res, "goodput", rc, given, p) // (command.go)
	return res, nil
}

// goodputMaxScale bounds an elastic job at this many times the GPUs it
// asks for (Pollux: twice the most it was profiled on).
const goodputMaxScale = 2
