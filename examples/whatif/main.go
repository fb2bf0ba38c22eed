// Command whatif is a what-if study in a few dozen lines: the same trace on
// the same cluster under two placement policies, compared in one table and
// in plots.
//
//	go run ./examples/whatif                          # best-fit vs fgd
//	go run ./examples/whatif -policies topology,fgd -out results/
//
// The trace is the Alibaba openb default pod list shipped inside gpusched
// (package sim/data: 8,152 jobs of whole GPUs, GPU shares and CPU only) on
// the matching openb cluster (1,523 hosts, 6,212 GPUs of several models).
// As `gpusched sim` does by default, two out-of-phase copies of the trace
// arrive within 20 minutes so the cluster fills up (the trace alone never
// uses more than a third of it), and the run is observed for 6 hours.
//
// Each policy gets its own Scheduler (package gpusched) driven by the
// simulator (package sim) through the same calls a production host makes;
// package sim/report writes the table and the PNGs (allocation over time,
// queue length, CDFs of queue wait and completion time, a bar chart of the
// two runs) into -out, a new temporary directory by default.
//
// On this trace the time-based replay is bounded by arrivals more than by
// placement, so the policies come out close. The program then asks the
// question the way the FGD paper does (package frag's RunInflation): the
// trace's tasks arrive until they ask for 130% of the GPU nodes' capacity,
// nothing departs, and what counts is the capacity left unallocated. It
// prints the median over three seeds at 90-130% load and plots the curves
// (inflation.png).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "whatif:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("whatif", flag.ContinueOnError)
	fs.SetOutput(w)
	policies := fs.String("policies", "best-fit,fgd", "the two (or more) placement policies to compare, comma-separated")
	out := fs.String("out", "", "directory for the plots (default: a new temporary directory)")
	seed := fs.Uint64("seed", 42, "seed of the trace copies and of randomised policies")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := strings.Split(*policies, ",")
	if len(names) < 2 {
		return fmt.Errorf("-policies %q: name at least two policies", *policies)
	}

	// The cluster and the trace, once.
	c, err := topology.LoadPreset("openb")
	if err != nil {
		return err
	}
	base, _, err := trace.ReadOpenB(data.OpenBDefault(), trace.OpenBOptions{File: data.OpenBDefaultName})
	if err != nil {
		return err
	}
	// Jobs the trace gives no duration cannot be replayed in time.
	timed := slices.DeleteFunc(slices.Clone(base), func(j trace.Job) bool { return j.Duration <= 0 })
	jobs, err := trace.Replicate(timed, 2, *seed)
	if err != nil {
		return err
	}
	trace.Rebase(jobs)
	if err := trace.ScaleArrivals(jobs, float64(20*time.Minute)/float64(jobs[len(jobs)-1].Submit)); err != nil {
		return err
	}
	fmt.Fprintf(w, "cluster %s: %d hosts, %d GPUs; trace %s × 2 (%d jobs) arriving within 20 minutes, observed for 6 hours\n\n",
		c.Name(), c.NumHosts(), c.NumGPUs(), data.OpenBDefaultName, len(jobs))

	// One simulation per policy.
	var runs []report.Run
	for _, name := range names {
		name = strings.TrimSpace(name)
		start := time.Now()
		res, err := simulate(c, slices.Clone(jobs), name, *seed)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res.Summary.Trace = data.OpenBDefaultName + " ×2"
		fmt.Fprintf(w, "%-10s simulated in %.1fs: %d jobs completed, GPU allocation %.1f%% while arriving, mean queue wait %.0fs\n",
			name, time.Since(start).Seconds(), res.Summary.Jobs.Completed, 100*res.Summary.ArrivalAllocation, res.Summary.Wait.Mean)
		runs = append(runs, report.Run{Label: name, Result: res})
	}
	fmt.Fprintln(w)
	if err := report.WriteTable(w, runs...); err != nil {
		return err
	}

	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "whatif-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := report.WritePlots(dir, runs...); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nplots: %s (the runs side by side), %s, %s, %s, %s\n",
		filepath.Join(dir, report.Plots.Compare), report.Plots.Allocation, report.Plots.Queue, report.Plots.WaitCDF, report.Plots.JCTCDF)

	// The same question under the FGD paper's experiment, where placement
	// alone decides: tasks of the trace arrive until their GPU demand is
	// 130% of the GPU nodes' capacity, nothing departs, and what matters is
	// how much capacity stays unallocated.
	return inflation(w, dir, names, base)
}

// inflation runs frag.RunInflation for each policy over three seeds on
// openb-gpu (the paper's 1,213 GPU nodes), prints the median unallocated
// GPU share at 90-130% arrived load, and plots the curves.
func inflation(w io.Writer, dir string, names []string, jobs []trace.Job) error {
	c, err := topology.LoadPreset("openb-gpu")
	if err != nil {
		return err
	}
	var tasks []frag.Task
	for _, j := range jobs {
		for gi := range j.Spec.Groups {
			g := &j.Spec.Groups[gi]
			t, err := frag.TaskFor(c, g)
			if err != nil {
				return err
			}
			for range g.Count {
				tasks = append(tasks, t)
			}
		}
	}
	seeds := []uint64{42, 43, 44}
	var runs []*frag.InflationRun
	for _, name := range names {
		for _, seed := range seeds {
			r, err := frag.RunInflation(c, tasks, strings.TrimSpace(name), seed, frag.InflationOptions{})
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
	}
	res := frag.NewInflationResult(c.Name(), data.OpenBDefaultName, runs)
	loads := []int{90, 100, 110, 120, 130}
	fmt.Fprintf(w, "\nFGD paper's experiment on %s: unallocated GPU %% (median of %d seeds) as arrived demand grows\n%-10s", c.Name(), len(seeds), "policy")
	for _, k := range loads {
		fmt.Fprintf(w, " %6d%%", k)
	}
	fmt.Fprintln(w)
	p := plot.New()
	p.Title.Text = "unallocated GPUs on " + c.Name() + " (FGD paper's experiment)"
	p.X.Label.Text = "arrived GPU demand (% of capacity)"
	p.Y.Label.Text = "unallocated GPUs (%)"
	p.Add(plotter.NewGrid())
	var ticks []plot.Tick
	for k := 70; k <= 130; k += 10 {
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: fmt.Sprint(k)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	for i, name := range names {
		m := res.Policies[strings.TrimSpace(name)].Median
		fmt.Fprintf(w, "%-10s", strings.TrimSpace(name))
		for _, k := range loads {
			fmt.Fprintf(w, " %7.2f", m[k])
		}
		fmt.Fprintln(w)
		var pts plotter.XYs
		for k := 70; k < len(m); k++ {
			pts = append(pts, plotter.XY{X: float64(k), Y: m[k]})
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(strings.TrimSpace(name), line)
	}
	p.Legend.Top = true
	png := filepath.Join(dir, "inflation.png")
	if err := p.Save(6*vg.Inch, 4*vg.Inch, png); err != nil {
		return err
	}
	fmt.Fprintf(w, "plot: %s\n", png)
	return nil
}

// simulate replays jobs on c with placement policy name: one flat queue,
// the root Scheduler behind the simulator's host loop.
func simulate(c *topology.Cluster, jobs []trace.Job, name string, seed uint64) (*sim.Result, error) {
	placer, err := rootsched.Placer(c, name, jobs) // fgd learns its workload from the trace
	if err != nil {
		return nil, err
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Placer: placer, Seed: seed,
		Queues: rootsched.FlatQueues([]string{"default"}, queue.Policy{Ordering: queue.BestEffortFIFO})})
	if err != nil {
		return nil, err
	}
	sm, err := sim.New(sim.Config{Cluster: c, Scheduler: s, Seed: seed, Horizon: 6 * time.Hour, DefaultQueue: "default"}, jobs)
	if err != nil {
		return nil, err
	}
	res, err := sm.Run()
	if err != nil {
		return nil, err
	}
	res.Summary.Policy = name
	return res, nil
}
