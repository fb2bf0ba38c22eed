package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/sim/simcli"
	"github.com/gpusched/gpusched/topology"
)

// newSimCmd builds "sim": replay traces through the Scheduler (run,
// compare, sweep; see package sim/simcli), with the shared cluster flags.
// `sim compare --inflation` runs the FGD paper's experiment, the same
// command as `place inflation`.
func newSimCmd() *cobra.Command {
	return simcli.Command(simcli.Options{ClusterFlags: simClusterFlags})
}

// newPlaceInflationCmd builds "place inflation": the FGD paper's
// workload-inflation experiment, simcli's InflationCommand (the code
// `sim compare --inflation` runs) with the shared cluster flags; its
// default cluster is openb-gpu and its default trace openb:builtin.
func newPlaceInflationCmd() *cobra.Command {
	return simcli.InflationCommand(simcli.Options{ClusterFlags: simClusterFlags})
}

// simClusterFlags registers the shared cluster flags on a sim command; the
// simulator's default cluster is openb, not the usual default.
func simClusterFlags(cmd *cobra.Command) simcli.ClusterLoader {
	f := addClusterFlags(cmd)
	cmd.Flags().Lookup("preset").Usage = "built-in cluster (default openb); philly (352 hosts × 8 GPUs) or one of: " + strings.Join(topology.PresetNames(), ", ")
	return f.cluster
}
