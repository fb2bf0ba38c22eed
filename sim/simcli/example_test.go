package simcli_test

import (
	"fmt"

	"github.com/gpusched/gpusched/sim/simcli"
)

// The command tree cmd/gpusched mounts as `gpusched sim`.
func ExampleCommand() {
	cmd := simcli.Command(simcli.Options{})
	for _, c := range cmd.Commands() {
		fmt.Println(cmd.Name(), c.Name()+":", c.Short)
	}
	// Output:
	// sim compare: Run several placement policies or job orderings on one trace; one table and one set of plots
	// sim run: Run one simulation and write its summary, time series and plots
	// sim sweep: Run a grid of parameters in parallel, optionally one shard of it
}
