package simcli

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
)

// defragFlags are the knobs of issue 15 on the command line: the
// Scheduler's migrations (gpusched.DefragConfig), the planner's
// fragmentation-aware victims and the placer's protected domains. Plain
// values, so a sweep can copy and change them.
type defragFlags struct {
	on          bool
	after       time.Duration
	perHour     int
	lostPerHour float64 // GPU-hours per hour
	maxPerJob   int
	minValue    float64
	dgrace      time.Duration
	fragAware   bool
	fragEpsilon float64
	noProtect   bool
	// consolidation when idle (gpusched.ConsolidateConfig)
	consolidate  bool
	cPerHour     int
	cLostPerHour float64 // GPU-hours per hour
	cIdle        time.Duration
	cTarget      int
}

// bind registers the flags on fs.
func (f *defragFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.on, "defrag", f.on, "the Scheduler moves running jobs (checkpoint, stop, restart elsewhere with --restart-cost) so that a gang blocked only by fragmentation can start (see the --defrag-* budgets)")
	fs.DurationVar(&f.after, "defrag-after", f.after, "with --defrag, how long a gang waits before migrations are planned for it (0: at once); they are planned in a scheduling cycle, so with a long wait between events set --schedule-every")
	fs.IntVar(&f.perHour, "defrag-per-hour", f.perHour, "with --defrag, the most migrations in any hour (0: no limit)")
	fs.Float64Var(&f.lostPerHour, "defrag-gpu-hours-per-hour", f.lostPerHour, "with --defrag, the most GPU-hours of work since checkpoint migrations may lose in any hour (0: no limit)")
	fs.IntVar(&f.maxPerJob, "defrag-max-per-job", f.maxPerJob, "with --defrag, how often one job may be migrated (0: no limit)")
	fs.Float64Var(&f.minValue, "defrag-min-value", f.minValue, "with --defrag, the least GPUs a blocked gang must get per GPU-hour its migrations lose (0: any)")
	fs.DurationVar(&f.dgrace, "defrag-grace", f.dgrace, "with --defrag, a migrated job's time to checkpoint (0: 2m)")
	fs.BoolVar(&f.fragAware, "frag-aware-victims", f.fragAware, "with --preempt, prefer among victim sets within --frag-epsilon of the least lost work the one that strands the fewest free GPUs")
	fs.Float64Var(&f.fragEpsilon, "frag-epsilon", f.fragEpsilon, "with --frag-aware-victims, the relative slack over the least lost work, in [0, 10] (0: equal cost only)")
	fs.BoolVar(&f.consolidate, "consolidate", f.consolidate, "with --defrag, when nothing waits the Scheduler also packs running jobs to free whole NVLink domains and ToRs before a big gang asks (its own budget: --consolidate-*; the --defrag-* budgets count these moves too)")
	fs.IntVar(&f.cPerHour, "consolidate-per-hour", f.cPerHour, "with --consolidate, the most consolidation moves in any hour (0: no limit but --defrag-per-hour)")
	fs.Float64Var(&f.cLostPerHour, "consolidate-gpu-hours-per-hour", f.cLostPerHour, "with --consolidate, the most GPU-hours of work since checkpoint its moves may lose in any hour (0: no limit)")
	fs.DurationVar(&f.cIdle, "consolidate-idle", f.cIdle, "with --consolidate, how long nothing must have waited before a pass (0: the first cycle after which nothing waits)")
	fs.IntVar(&f.cTarget, "consolidate-target", f.cTarget, "with --consolidate, stop packing a level once this many of its domains are wholly free (0: no bound)")
	fs.BoolVar(&f.noProtect, "no-protect", f.noProtect, "turn off protected domains: let jobs much smaller than an NVLink domain or ToR take wholly free ones (the topology policy protects them by default)")
}

// check rejects knob values no run can use, naming the flag: a negative
// or non-finite budget, or a knob given while what it tunes is off
// (unless swept names that switch: a sweep may turn it on).
func (f *defragFlags) check(preempt string, swept map[string]bool) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"defrag-after", f.after}, {"defrag-grace", f.dgrace}, {"consolidate-idle", f.cIdle}} {
		if d.v < 0 {
			return fmt.Errorf("--%s %v: must not be negative", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"defrag-per-hour", f.perHour}, {"defrag-max-per-job", f.maxPerJob}, {"consolidate-per-hour", f.cPerHour}, {"consolidate-target", f.cTarget}} {
		if n.v < 0 {
			return fmt.Errorf("--%s %d: must not be negative (0: no limit)", n.name, n.v)
		}
	}
	for _, x := range []struct {
		name string
		v    float64
	}{{"defrag-gpu-hours-per-hour", f.lostPerHour}, {"defrag-min-value", f.minValue}, {"consolidate-gpu-hours-per-hour", f.cLostPerHour}} {
		if !(x.v >= 0) || math.IsInf(x.v, 1) {
			return fmt.Errorf("--%s %g: want a finite number ≥ 0", x.name, x.v)
		}
	}
	if !f.on && !swept["defrag"] {
		set := f.after != 0 || f.perHour != 0 || f.lostPerHour != 0 || f.maxPerJob != 0 || f.minValue != 0 || f.dgrace != 0
		if set {
			return fmt.Errorf("--defrag-after, --defrag-per-hour, --defrag-gpu-hours-per-hour, --defrag-max-per-job, --defrag-min-value and --defrag-grace need --defrag: they are its budgets, and it is off")
		}
	}
	if (f.consolidate || swept["consolidate"]) && !f.on && !swept["defrag"] {
		return fmt.Errorf("--consolidate needs --defrag: its moves are migrations, carried out as --defrag's are")
	}
	if !f.consolidate && !swept["consolidate"] && (f.cPerHour != 0 || f.cLostPerHour != 0 || f.cIdle != 0 || f.cTarget != 0) {
		return fmt.Errorf("--consolidate-per-hour, --consolidate-gpu-hours-per-hour, --consolidate-idle and --consolidate-target need --consolidate: it is off")
	}
	if !(f.fragEpsilon >= 0 && f.fragEpsilon <= 10) {
		return fmt.Errorf("--frag-epsilon %g: want a relative slack in [0, 10]", f.fragEpsilon)
	}
	if f.fragEpsilon != 0 && !f.fragAware && !swept["frag-aware-victims"] {
		return fmt.Errorf("--frag-epsilon %g needs --frag-aware-victims", f.fragEpsilon)
	}
	if f.fragAware && (preempt == "off" || preempt == "none" || preempt == "false") && !swept["preempt"] {
		return fmt.Errorf("--frag-aware-victims needs --preempt: it chooses among preemption victims, and preemption is off")
	}
	return nil
}

// config is the Scheduler's DefragConfig; nil when --defrag is off.
func (f *defragFlags) config() *gpusched.DefragConfig {
	if !f.on {
		return nil
	}
	dc := &gpusched.DefragConfig{After: f.after, MaxPerJob: f.maxPerJob, Grace: f.dgrace,
		Budget: preempt.DefragBudget{PerHour: f.perHour, LostPerHour: gpuHours(f.lostPerHour), MinValue: f.minValue}}
	if f.consolidate {
		dc.Consolidate = &gpusched.ConsolidateConfig{Idle: f.cIdle, Target: f.cTarget,
			Budget: preempt.DefragBudget{PerHour: f.cPerHour, LostPerHour: gpuHours(f.cLostPerHour)}}
	}
	return dc
}

// gpuHours converts GPU-hours to a GPUTime.
func gpuHours(h float64) preempt.GPUTime { return preempt.GPUTime(math.Round(h * 3600 * 1000)) }

// planner sets the preemption planner's fragmentation-aware victims.
func (f *defragFlags) planner(c *preempt.Config) {
	c.FragAware, c.FragEpsilon = f.fragAware, f.fragEpsilon
}

// placer turns protected domains off when --no-protect asks.
func (f *defragFlags) placer(o *gang.Options) {
	if f.noProtect {
		o.Protect = gang.ProtectOff
	}
}
