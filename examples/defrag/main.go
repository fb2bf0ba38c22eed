// Command defrag runs the experiment of docs/defrag.md (package
// sim/defragexp) and prints its table; with -plot it also draws the
// per-seed figures.
//
//	go run ./examples/defrag                       # 16 NVL72 racks, 3,000 jobs, seeds 1-5
//	go run ./examples/defrag -plot docs/img/defrag.png
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gpusched/gpusched/sim/defragexp"
)

func main() {
	var o defragexp.Options
	seeds := flag.Int("seeds", 5, "seeds 1..N")
	flag.StringVar(&o.Machine, "machine", "gb200-nvl72", "gb200-nvl72, or dgx-h100 (the same GPUs in DGX H100 hosts, big gangs required in one ToR)")
	flag.IntVar(&o.Racks, "racks", 16, "GB200 NVL72 racks (or their GPUs' worth of DGX H100 hosts)")
	flag.IntVar(&o.Jobs, "jobs", 3000, "jobs per trace")
	flag.Float64Var(&o.Load, "load", 0.9, "offered GPU load")
	plot := flag.String("plot", "", "write the per-seed plot to this PNG")
	flag.Parse()
	for s := 1; s <= *seeds; s++ {
		o.Seeds = append(o.Seeds, uint64(s))
	}
	rows, outs, err := defragexp.Run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(defragexp.Table(rows))
	for _, x := range outs {
		fmt.Printf("%s seed %d: big p95 %.0f min (p50 %.0f), %d/%d big gangs started, %.1f GPU-h lost, %.1f GPU-h overhead, %d preemptions, %d migrations (%.1f GPU-h lost), allocation %.1f%%\n",
			x.Variant, x.Seed, x.BigP95/60, x.BigP50/60, x.BigStarted, x.BigJobs, x.LostGPUHours, x.OverheadGPUHours, x.Preemptions, x.Migrations, x.MigrationLostHours, 100*x.Allocation)
	}
	if *plot != "" {
		if err := defragexp.Plot(*plot, outs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
