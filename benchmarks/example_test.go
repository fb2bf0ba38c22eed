package benchmarks_test

import (
	"fmt"

	"github.com/gpusched/gpusched/benchmarks"
)

// The figures of the README's performance table: the case that measures
// each, and its target. `gpusched bench` runs them and checks the
// targets; `go test -bench . ./benchmarks/` prints the same names.
func ExampleCases() {
	for _, c := range benchmarks.Cases() {
		for _, f := range c.Figures {
			fmt.Printf("%-48s %s (issue %d)\n", c.Name, f.TargetString(), f.Issue)
		}
	}
	// Output:
	// Topology/load-file/100k                          ≤ 1 s/op (issue 2)
	// Ledger/alloc-release/100k                        ≤ 300 ns/op (issue 2)
	// Ledger/alloc-release/100k                        ≤ 0 allocs/op (issue 2)
	// Ledger/best-host-tor/100k                        ≤ 1000 ns/op (issue 2)
	// Place/topology/1gpu/100k                         ≤ 2 µs/op (issue 4)
	// Place/topology/1gpu/100k                         ≤ 0 allocs/op (issue 4)
	// Place/topology/8gpu-host/100k                    ≤ 5 µs/op (issue 4)
	// Place/topology/256gpu-tor/100k                   ≤ 50 µs/op (issue 4)
	// Place/topology/4096gpu-tor-infeasible-cold/100k  ≤ 100 µs/op (issue 4)
	// Place/topology/3072gpu-spine-infeasible-brief/100k ≤ 100 µs/op (issue 4)
	// Place/topology/512gpu-tor/100k-tor64             ≤ 50 µs/op (issue 4)
	// Place/fgd/openb-task                             ≤ 50 µs/op (issue 4)
	// Preempt/plan-512gpu-tor/100k-tor64               ≤ 1 ms/op (issue 5)
	// Preempt/no-plan-512gpu-tor/100k-tor64            ≤ 2 ms/op (issue 5)
	// Preempt/plan-256gpu-tor/100k                     ≤ 1 ms/op (issue 5)
	// Schedule/full-10000-pending/10k                  ≤ 10 ms/op (issue 8)
	// Schedule/incremental-10000-pending/10k           ≤ 1 ms/op (issue 8)
	// Schedule/full-10000-pending/100k                 ≤ 10 ms/op (issue 14)
	// Schedule/kai315/full                             ≤ 50 ms/op (issue 14)
	// Schedule/kai315/incremental                      ≤ 2 ms/op (issue 14)
	// Schedule/kai315/incremental-listed               ≤ 2 ms/op (issue 14)
	// Sim/engine-noop                                  ≥ 1e+07 events/s (issue 6)
	// Sim/openb-inflation-fgd                          ≤ 2 s/op (issue 6)
	// Sim/philly                                       ≤ 10 s/op (issue 6)
	// Sim/synthetic-1m/100k                            ≤ 60 s/op (issue 6)
	// Sim/synthetic-1m/100k                            ≤ 4096 peak-MiB (issue 6)
	// Sim/default-command                              ≤ 60 s/op (issue 7)
	// Live/add-host-tor/100k                           ≤ 1 ms/op (issue 14)
	// Live/remove-host/100k                            ≤ 1 ms/op (issue 14)
	// Live/reconfigure-queues/100k                     ≤ 1 ms/op (issue 14)
	// Live/scheduler-add-host/100k                     ≤ 1 ms/op (issue 14)
	// Live/scheduler-remove-host/100k                  ≤ 1 ms/op (issue 14)
	// Live/scheduler-reconfigure/100k                  ≤ 1 ms/op (issue 14)
	// Place/topology/1gpu-protected/100k-nvl72         ≤ 2 µs/op (issue 15)
	// Place/topology/1gpu-protected/100k-nvl72         ≤ 0 allocs/op (issue 15)
	// Preempt/defrag-64gpu-nvlink/100k-nvl72           ≤ 2 ms/op (issue 15)
}
