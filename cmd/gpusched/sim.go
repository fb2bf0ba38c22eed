package main

import (
	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/sim/simcli"
)

// newSimCmd builds "sim": replay traces through the Scheduler (run,
// compare, sweep; see package sim/simcli). `sim compare --inflation` runs
// the FGD paper's experiment through the same code as `place inflation`.
func newSimCmd() *cobra.Command {
	return simcli.Command(simcli.Options{Inflation: simInflation})
}

// simInflation serves `sim compare --inflation` with the `place inflation`
// command, given the remaining arguments.
func simInflation(parent *cobra.Command, args []string) error {
	c := newInflationCmd()
	c.SetArgs(args)
	c.SetIn(parent.InOrStdin())
	c.SetOut(parent.OutOrStdout())
	c.SetErr(parent.ErrOrStderr())
	c.SilenceUsage, c.SilenceErrors = true, true
	return c.Execute()
}
