package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/sim/simcli"
	"github.com/gpusched/gpusched/topology"
)

// newSimCmd builds "sim": replay traces through the Scheduler (run,
// compare, sweep; see package sim/simcli), with the shared cluster flags.
// `sim compare --inflation` runs the FGD paper's experiment through the
// same code as `place inflation`.
func newSimCmd() *cobra.Command {
	return simcli.Command(simcli.Options{Inflation: simInflation, ClusterFlags: simClusterFlags})
}

// simClusterFlags registers the shared cluster flags on a sim command; the
// simulator's default cluster is openb, not the usual default.
func simClusterFlags(cmd *cobra.Command) simcli.ClusterLoader {
	f := addClusterFlags(cmd)
	cmd.Flags().Lookup("preset").Usage = "built-in cluster (default openb); philly (352 hosts × 8 GPUs) or one of: " + strings.Join(topology.PresetNames(), ", ")
	return f.cluster
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
