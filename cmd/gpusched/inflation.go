package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// inflationPreset is the cluster of the paper's experiment.
const inflationPreset = "openb-gpu"

// builtinTrace names the embedded openb default pod list (sim/data), the
// trace of the paper's main experiment.
const builtinTrace = "openb:builtin"

// inflationLoads are the arrived loads the table shows.
var inflationLoads = []int{90, 95, 100, 110, 120, 130}

type inflationFlags struct {
	cluster  *clusterFlags
	trace    string
	policies string
	seeds    string
	maxLoad  int
	sampling string
	tie      string
	scoring  string
	coverage float64
	out      string
	jobs     int
	markdown bool
}

// newInflationCmd builds "inflation": the FGD paper's workload-inflation
// experiment (see frag.RunInflation).
func newInflationCmd() *cobra.Command {
	f := &inflationFlags{}
	cmd := &cobra.Command{
		Use:   "inflation",
		Short: "The FGD paper's experiment: unallocated GPUs as a trace is inflated to 130% load",
		Long: `inflation runs the experiment of "Beware of Fragmentation" (Weng et al.,
USENIX ATC'23): the tasks of an openb pod list are resampled until they ask
for --max-load percent of the cluster's GPUs, shuffled with each seed, and
placed one at a time with no departures by each policy. After each arrival
it records the unallocated share of GPU capacity (fractional shares
counted), and reports u_k, the unallocated % when arrived demand first
reaches k% of capacity, per seed and as the median over seeds.

It prints the cluster and trace it ran on and a table at 90, 95, 100,
110, 120 and 130% load; only with --out does it also write
DIR/inflation.json ({"cluster", "trace", "policies": {P: {"seeds": {S:
[u0..]}, "median": [u0..]}}}) and DIR/inflation.png (the median curves).
The default cluster is openb-gpu, the paper's 1,213 GPU nodes;
the default trace is openb:builtin, the openb default pod list embedded in
gpusched (8,152 tasks), so the command runs with no arguments.

  gpusched place inflation --out out/
  gpusched place inflation --trace openb:../shared/data/cluster-trace-gpu-v2023/csv/openb_pod_list_gpuspec33.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInflation(cmd, f) },
	}
	f.cluster = addClusterFlags(cmd)
	fs := cmd.Flags()
	// The experiment's default cluster is the paper's, not the usual default.
	fs.Lookup("preset").Usage = "built-in cluster (default " + inflationPreset + ", the paper's 1,213 GPU nodes); one of: " + strings.Join(topology.PresetNames(), ", ")
	fs.StringVar(&f.trace, "trace", builtinTrace, "openb pod list, as openb:PATH (or just PATH); "+builtinTrace+" is the embedded default")
	fs.StringVar(&f.policies, "policies", strings.Join(frag.PaperPolicies(), ","), "comma-separated policies; known: "+strings.Join(frag.PolicyNames(), ", "))
	fs.StringVar(&f.seeds, "seeds", "42-51", "seeds: a list and ranges, e.g. 42-51 or 1,5,9")
	fs.IntVar(&f.maxLoad, "max-load", 130, "target arrived GPU demand, percent of capacity")
	fs.StringVar(&f.sampling, "sampling", "paper", "arrival sequence: paper (the trace shuffled, topped up by draws) or iid")
	fs.StringVar(&f.tie, "tie", "shuffled", "tie-break among equal scores: shuffled (a seeded host order, as the paper's simulator), lowest (HostID) or random")
	fs.StringVar(&f.scoring, "scoring", "paper", "scores: paper (the artifact's 0-100 integers) or exact")
	fs.Float64Var(&f.coverage, "coverage", 0.95, "FGD's workload: keep the most frequent task classes covering this share of tasks")
	fs.StringVar(&f.out, "out", "", "directory for inflation.json and inflation.png")
	fs.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "runs in parallel")
	fs.BoolVar(&f.markdown, "markdown", false, "print the table as Markdown")
	return cmd
}

func runInflation(cmd *cobra.Command, f *inflationFlags) error {
	c, err := inflationCluster(cmd, f.cluster)
	if err != nil {
		return err
	}
	if f.trace == "" {
		f.trace = builtinTrace
	}
	path := f.trace
	if kind, rest, ok := strings.Cut(f.trace, ":"); ok {
		switch {
		case kind == "openb":
			path = rest
		case !strings.ContainsAny(kind, `/\.`):
			return fmt.Errorf("--trace %s: the inflation experiment reads openb pod lists (openb:PATH)", f.trace)
		}
	}
	tasks, err := readOpenBTasks(c, path)
	if err != nil {
		return err
	}
	policies := strings.Split(f.policies, ",")
	for i, p := range policies {
		policies[i] = strings.TrimSpace(p)
		if !slices.Contains(frag.PolicyNames(), policies[i]) {
			return fmt.Errorf("--policies: unknown policy %q (known: %s)", policies[i], strings.Join(frag.PolicyNames(), ", "))
		}
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if f.maxLoad < 1 || f.maxLoad > 1000 {
		return fmt.Errorf("--max-load %d outside 1..1000", f.maxLoad)
	}
	opt := frag.InflationOptions{MaxLoad: f.maxLoad}
	switch f.sampling {
	case "paper":
	case "iid":
		opt.Sampling = frag.SampleIID
	default:
		return fmt.Errorf("--sampling %q: want paper or iid", f.sampling)
	}
	tie := frag.TieShuffled
	switch f.tie {
	case "shuffled":
	case "lowest":
		tie = frag.TieLowestID
	case "random":
		tie = frag.TieRandom
	default:
		return fmt.Errorf("--tie %q: want shuffled, lowest or random", f.tie)
	}
	opt.TieBreak = &tie
	switch f.scoring {
	case "paper":
	case "exact":
		opt.Scoring = frag.ScoreExact
	default:
		return fmt.Errorf("--scoring %q: want paper or exact", f.scoring)
	}
	if slices.Contains(policies, frag.FGD) {
		d, err := frag.Learn(tasks, frag.LearnOptions{Coverage: f.coverage})
		if err != nil {
			return fmt.Errorf("--coverage: %w", err)
		}
		opt.Distribution = &d
	}

	runs, err := inflationRuns(c, tasks, policies, seeds, opt, max(f.jobs, 1))
	if err != nil {
		return err
	}
	res := frag.NewInflationResult(c.Name(), f.trace, runs)
	printInflationHeader(cmd.OutOrStdout(), c, f.trace, path, len(tasks), f.markdown)
	printInflationTable(cmd.OutOrStdout(), res, policies, f.maxLoad, f.markdown)
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(f.out, "inflation.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	png := filepath.Join(f.out, "inflation.png")
	if err := plotInflation(res, policies, f.maxLoad, png); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s and %s\n", filepath.Join(f.out, "inflation.json"), png)
	return nil
}

// inflationCluster is the cluster the flags select, openb-gpu by default.
func inflationCluster(cmd *cobra.Command, cf *clusterFlags) (*topology.Cluster, error) {
	if cf.sources(cmd) > 0 {
		return cf.cluster(cmd)
	}
	if err := cf.checkGenerator(cmd); err != nil {
		return nil, err
	}
	return topology.LoadPreset(inflationPreset)
}

// readOpenBTasks reads an openb pod list as tasks of c; path "builtin" is
// the embedded default pod list.
func readOpenBTasks(c *topology.Cluster, path string) ([]frag.Task, error) {
	var r io.Reader
	if path == "builtin" {
		path = data.OpenBDefaultName
		r = data.OpenBDefault()
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	jobs, _, err := trace.ReadOpenB(r, trace.OpenBOptions{File: path})
	if err != nil {
		return nil, err
	}
	tasks := make([]frag.Task, 0, len(jobs))
	for _, j := range jobs {
		for gi := range j.Spec.Groups {
			g := &j.Spec.Groups[gi]
			t, err := frag.TaskFor(c, g)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, j.Line, err)
			}
			for range g.Count {
				tasks = append(tasks, t)
			}
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", path)
	}
	return tasks, nil
}

// parseSeeds reads "42-51", "1,5,9" or a mix.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range of seeds", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a || b-a >= 10000 {
				return nil, fmt.Errorf("%q is not a range of at most 10000 seeds", part)
			}
		}
		for v := a; v <= b; v++ {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no seeds")
	}
	return out, nil
}

// inflationRuns runs every (policy, seed) pair, jobs at a time. Each run
// is deterministic and independent, so the result does not depend on jobs.
func inflationRuns(c *topology.Cluster, tasks []frag.Task, policies []string, seeds []uint64, opt frag.InflationOptions, jobs int) ([]*frag.InflationRun, error) {
	type work struct {
		i      int
		policy string
		seed   uint64
	}
	var todo []work
	for _, p := range policies {
		for _, s := range seeds {
			todo = append(todo, work{len(todo), p, s})
		}
	}
	runs := make([]*frag.InflationRun, len(todo))
	errs := make([]error, len(todo))
	ch := make(chan work)
	var wg sync.WaitGroup
	for range min(jobs, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range ch {
				runs[w.i], errs[w.i] = frag.RunInflation(c, tasks, w.policy, w.seed, opt)
			}
		}()
	}
	for _, w := range todo {
		ch <- w
	}
	close(ch)
	wg.Wait()
	return runs, errors.Join(errs...)
}

// printInflationHeader names the cluster and the trace the experiment ran
// on, above its table.
func printInflationHeader(w io.Writer, c *topology.Cluster, traceArg, path string, tasks int, markdown bool) {
	what := fmt.Sprintf("%d tasks", tasks)
	if path == "builtin" {
		what = "the embedded " + data.OpenBDefaultName + ", " + what
	}
	line := fmt.Sprintf("cluster %s (%d hosts, %d GPUs); trace %s (%s)", c.Name(), c.NumHosts(), c.NumGPUs(), traceArg, what)
	if markdown {
		fmt.Fprintf(w, "%s\n\n", line)
		return
	}
	fmt.Fprintln(w, line)
}

// printInflationTable prints the median u_k of each policy at the table's
// loads (those not above maxLoad).
func printInflationTable(w io.Writer, res *frag.InflationResult, policies []string, maxLoad int, markdown bool) {
	var loads []int
	for _, k := range inflationLoads {
		if k <= maxLoad {
			loads = append(loads, k)
		}
	}
	if markdown {
		fmt.Fprint(w, "| unallocated GPU % |")
		for _, k := range loads {
			fmt.Fprintf(w, " %d%% |", k)
		}
		fmt.Fprint(w, "\n|---|")
		for range loads {
			fmt.Fprint(w, "---|")
		}
		fmt.Fprintln(w)
		for _, p := range policies {
			fmt.Fprintf(w, "| %s |", p)
			for _, k := range loads {
				fmt.Fprintf(w, " %.2f |", res.Policies[p].Median[k])
			}
			fmt.Fprintln(w)
		}
		return
	}
	fmt.Fprintf(w, "unallocated GPU %% (median of %d seeds) at arrived load\n%-15s", len(res.Policies[policies[0]].Seeds), "policy")
	for _, k := range loads {
		fmt.Fprintf(w, " %6d%%", k)
	}
	fmt.Fprintln(w)
	for _, p := range policies {
		fmt.Fprintf(w, "%-15s", p)
		for _, k := range loads {
			fmt.Fprintf(w, " %7.2f", res.Policies[p].Median[k])
		}
		fmt.Fprintln(w)
	}
}

// plotInflation draws the median curves, unallocated % against arrived
// load, from 70% load on (below it every policy allocates everything).
func plotInflation(res *frag.InflationResult, policies []string, maxLoad int, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s", res.Cluster, filepath.Base(res.Trace))
	p.X.Label.Text = "arrived GPU demand (% of capacity)"
	p.Y.Label.Text = "unallocated GPUs (%)"
	from := min(70, maxLoad)
	p.X.Min, p.X.Max = float64(from), float64(maxLoad)
	p.Y.Min = 0
	var ticks []plot.Tick
	for k := from; k <= maxLoad; k++ {
		switch {
		case k%10 == 0:
			ticks = append(ticks, plot.Tick{Value: float64(k), Label: strconv.Itoa(k)})
		case k%5 == 0:
			ticks = append(ticks, plot.Tick{Value: float64(k)})
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	palette := []color.RGBA{
		{R: 0xd6, G: 0x27, B: 0x28, A: 255}, {R: 0x1f, G: 0x77, B: 0xb4, A: 255}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 255},
		{R: 0xff, G: 0x7f, B: 0x0e, A: 255}, {R: 0x94, G: 0x67, B: 0xbd, A: 255}, {R: 0x7f, G: 0x7f, B: 0x7f, A: 255},
		{R: 0x8c, G: 0x56, B: 0x4b, A: 255}, {R: 0x17, G: 0xbe, B: 0xcf, A: 255},
	}
	ymax := 0.0
	for i, name := range policies {
		m := res.Policies[name].Median
		pts := make(plotter.XYs, 0, maxLoad-from+1)
		for k := from; k <= maxLoad && k < len(m); k++ {
			pts = append(pts, plotter.XY{X: float64(k), Y: m[k]})
			ymax = max(ymax, m[k])
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		if i >= len(palette) || i == 4 {
			// gpu-clustering runs close to gpu-packing: dash it.
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(line)
		p.Legend.Add(name, line)
	}
	p.Y.Max = ymax * 1.05
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = -vg.Points(4)
	p.Legend.Padding = vg.Points(1)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(18)
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}
