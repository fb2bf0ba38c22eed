// Command defrag runs the experiment of docs/defrag.md (package
// sim/defragexp) and prints its tables; with -write it replaces the
// generated blocks of the document, with -plots it draws the per-seed
// figures.
//
//	go run ./examples/defrag -write docs/defrag.md -plots docs/img   # regenerate the document's figures
//	go run ./examples/defrag -machine dgx-h100 -seeds 3              # one machine, print only
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpusched/gpusched/sim/defragexp"
)

func main() {
	var o defragexp.Options
	seeds := flag.Int("seeds", 5, "seeds 1..N")
	machine := flag.String("machine", "all", "gb200-nvl72, dgx-h100 (the same GPUs in DGX H100 hosts, big gangs required in one ToR), or all")
	flag.IntVar(&o.Racks, "racks", 16, "GB200 NVL72 racks (or their GPUs' worth of DGX H100 hosts)")
	flag.IntVar(&o.Jobs, "jobs", 3000, "jobs per trace")
	flag.Float64Var(&o.Load, "load", 0.9, "offered GPU load")
	write := flag.String("write", "", "replace the generated blocks of this document (docs/defrag.md)")
	plots := flag.String("plots", "", "write each machine's per-seed plot into this directory")
	flag.Parse()
	o.Progress = func(x defragexp.Outcome) {
		fmt.Fprintf(os.Stderr, "%s seed %d: big p95 %.0f min\n", x.Variant, x.Seed, x.BigP95/60)
	}
	for s := 1; s <= *seeds; s++ {
		o.Seeds = append(o.Seeds, uint64(s))
	}
	machines := defragexp.Machines
	if *machine != "all" {
		machines = []string{*machine}
	}
	var doc string
	if *write != "" {
		b, err := os.ReadFile(*write)
		if err != nil {
			fail(err)
		}
		doc = string(b)
	}
	for _, m := range machines {
		o.Machine = m
		rows, outs, err := defragexp.Run(o)
		if err != nil {
			fail(err)
		}
		block := defragexp.Block(o, rows, outs)
		fmt.Print(block)
		if *write != "" {
			if doc, err = defragexp.Splice(doc, m, block); err != nil {
				fail(fmt.Errorf("%s: %w", *write, err))
			}
		}
		if *plots != "" {
			if err := defragexp.Plot(filepath.Join(*plots, defragexp.PlotName(m)), outs); err != nil {
				fail(err)
			}
		}
	}
	if *write != "" {
		if err := os.WriteFile(*write, []byte(doc), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
