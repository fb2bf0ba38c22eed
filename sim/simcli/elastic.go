package simcli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gpusched/gpusched"
)

// elasticFlags are the elastic-gang knobs on the command line: which
// trace jobs are elastic (sim.Config.Elastic) and whether the Scheduler
// shrinks and grows them (gpusched.ElasticConfig). Plain values, so a
// sweep can copy and change them.
type elasticFlags struct {
	share  float64
	shrink bool
	noGrow bool
}

// bind registers the flags on fs.
func (f *elasticFlags) bind(fs *pflag.FlagSet) {
	fs.Float64Var(&f.share, "elastic", f.share, "make every task group of more than one task elastic, down to this share of its tasks (0: off; e.g. 0.5): it binds with as many tasks as fit")
	fs.BoolVar(&f.shrink, "shrink", f.shrink, "with --preempt, the Scheduler shrinks elastic gangs above their minimum instead of preempting them when that loses less work (only the stopped tasks lose their work since checkpoint), and grows them back when nothing else waits for the room")
	fs.BoolVar(&f.noGrow, "shrink-no-grow", f.noGrow, "with --shrink, shrunk gangs never grow back")
}

// check rejects values no run can use, naming the flag.
func (f *elasticFlags) check(preempt string, swept map[string]bool) error {
	if !(f.share >= 0 && f.share <= 1) {
		return fmt.Errorf("--elastic %g: want a share of a group's tasks in [0, 1] (0: off)", f.share)
	}
	if f.noGrow && !f.shrink && !swept["shrink"] {
		return fmt.Errorf("--shrink-no-grow needs --shrink")
	}
	if f.shrink && (preempt == "off" || preempt == "none" || preempt == "false") && !swept["preempt"] {
		return fmt.Errorf("--shrink needs --preempt: a shrink is chosen by the preemption planner, and preemption is off")
	}
	return nil
}

// config is the Scheduler's ElasticConfig; nil without --shrink.
func (f *elasticFlags) config() *gpusched.ElasticConfig {
	if !f.shrink {
		return nil
	}
	return &gpusched.ElasticConfig{NoGrow: f.noGrow}
}
