// Command gpusched is the command line of the gpusched library: it shows
// cluster topologies (presets, cluster files, generated clusters) and, as
// the library grows, runs simulations and benchmarks.
//
// Each command group is built by one constructor in its own file
// (newTopologyCmd in topology.go, …) and added to the root here. Flags that
// several groups share, such as the cluster selection (--preset, --file,
// --machine …), live in clusterflags.go.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/sim/simcli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// newRootCmd builds the whole command tree.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "gpusched",
		Short: "GPU-cluster scheduling algorithms and simulator",
		Long: `gpusched is an embeddable Go library of GPU-cluster scheduling algorithms
(topology-aware gang placement, fair share, quotas, preemption) and a
discrete-event simulator. This command exposes it on the command line.

Start with a built-in cluster:

  gpusched topology presets
  gpusched topology show --preset h100-1k
  gpusched topology matrix --preset dgx-a100`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       simcli.Version(), // --version: the module version, commit and Go version
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())
	})
	root.AddCommand(newTopologyCmd())
	place := newPlaceCmd()
	place.AddCommand(newPlaceInflationCmd())
	root.AddCommand(place)
	root.AddCommand(newExplainCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newSimCmd())
	root.AddCommand(newBenchCmd())
	return root
}

// run executes the command line args and returns the exit status: 0, or 1
// after printing the error to stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(stderr, "gpusched:", err)
		return 1
	}
	return 0
}
