package simcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/sim/data"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// inflationPreset is the cluster of the FGD paper's experiment.
const inflationPreset = "openb-gpu"

// inflationTrace names the embedded openb default pod list (sim/data),
// the trace of the paper's main experiment.
const inflationTrace = "openb:builtin"

// inflationLoads are the arrived loads the table shows.
var inflationLoads = []int{90, 95, 100, 110, 120, 130}

type inflationFlags struct {
	trace    string
	policies string
	seeds    string
	maxLoad  int
	sampling string
	tie      string
	scoring  string
	coverage float64
	out      string
	noPlots  bool
	quiet    bool
	jobs     int
	markdown bool
	skipBad  bool
	strict   bool
}

// InflationCommand returns the `inflation` command: the FGD paper's
// workload-inflation experiment (see frag.RunInflation), for mounting as
// `gpusched place inflation`; `sim compare --inflation` runs the same
// command, which then writes to ./sim-compare unless given --out.
// opt.ClusterFlags registers the cluster flags as for Command; the
// experiment's own default cluster is openb-gpu, the paper's.
func InflationCommand(opt Options) *cobra.Command { return inflationCmd(opt, "") }

func inflationCmd(opt Options, defOut string) *cobra.Command {
	f := &inflationFlags{}
	outHelp := `With --out DIR it also writes DIR/inflation.json ({"cluster", "trace",
"policies": {P: {"seeds": {S: [u0..]}, "median": [u0..]}}}) and, unless
--no-plots, DIR/inflation.png (the median curves).`
	example := `  gpusched place inflation --out out/
  gpusched place inflation --trace openb:../shared/data/cluster-trace-gpu-v2023/csv/openb_pod_list_gpuspec25.csv --skip-bad`
	if defOut != "" {
		outHelp = `It also writes DIR/inflation.json ({"cluster", "trace", "policies":
{P: {"seeds": {S: [u0..]}, "median": [u0..]}}}) and, unless --no-plots,
DIR/inflation.png (the median curves), where DIR is --out, by default
` + defOut + "."
		example = `  gpusched sim compare --inflation --policies fgd,best-fit --seeds 42-44
  gpusched sim compare --inflation --trace openb:../shared/data/cluster-trace-gpu-v2023/csv/openb_pod_list_multigpu40.csv --out multigpu40`
	}
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
110, 120 and 130% load.
` + outHelp + `

The default cluster is openb-gpu, the paper's 1,213 GPU nodes; the default
trace is openb:builtin, the openb default pod list embedded in gpusched
(8,152 tasks), so the command runs with no arguments.

Every task is checked against the cluster. A task whose GPUs no host could
ever hold (more GPUs than the largest host of its models has, or only GPU
models the cluster lacks) is an error naming its file, line and column;
with --skip-bad it is left out, counted and reported, as are malformed
rows. A task whose GPUs some host has but whose CPU or memory no such host
has (the openb gpuspec lists have a few on openb-gpu) counts as arrived and
is never placed, as in the paper's simulator, and is reported; --skip-bad
leaves it out, --strict makes it an error. Columns the openb reader does
not know are reported (--strict rejects them): a misspelt gpu_spec would
drop every GPU-model constraint.`,
		Example: example,
		Args:    cobra.NoArgs,
	}
	cluster := inflationClusterFlags(cmd, opt)
	fs := cmd.Flags()
	fs.StringVar(&f.trace, "trace", inflationTrace, "openb pod list, as openb:PATH (or just PATH); "+inflationTrace+" is the embedded default")
	fs.StringVar(&f.policies, "policies", strings.Join(frag.PaperPolicies(), ","), "comma-separated policies; known: "+strings.Join(frag.PolicyNames(), ", "))
	fs.StringVar(&f.seeds, "seeds", "42-51", "seeds: a list and ranges, e.g. 42-51 or 1,5,9")
	fs.IntVar(&f.maxLoad, "max-load", 130, "target arrived GPU demand, percent of capacity")
	fs.StringVar(&f.sampling, "sampling", "paper", "arrival sequence: paper (the trace shuffled, topped up by draws), iid, or artifact (the authors' simulator's own draws for each seed, its host order and its reading of the curve: reproduces their per-seed results)")
	fs.StringVar(&f.tie, "tie", "shuffled", "tie-break among equal scores: shuffled (a seeded host order, as the paper's simulator), lowest (HostID) or random")
	fs.StringVar(&f.scoring, "scoring", "", "scores: paper (the artifact's 0-100 integers), exact, or artifact (paper's integers with FGD's fragmentation in the artifact's float arithmetic); empty: artifact with --sampling artifact, else paper")
	fs.Float64Var(&f.coverage, "coverage", 0.95, "FGD's workload: keep the most frequent task classes covering this share of tasks")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "leave out malformed rows and tasks that fit no host of the cluster (counted and reported) instead of stopping at the first")
	fs.BoolVar(&f.strict, "strict", false, "reject columns the openb reader does not know, and tasks whose CPU or memory no host with their GPUs has")
	fs.StringVar(&f.out, "out", defOut, "directory for inflation.json and inflation.png")
	fs.BoolVar(&f.noPlots, "no-plots", false, "do not write inflation.png (inflation.json is still written)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar; with --out, print nothing but errors")
	fs.IntVar(&f.jobs, "jobs", 0, "runs in parallel (0: GOMAXPROCS)")
	fs.BoolVar(&f.markdown, "markdown", false, "print the table as Markdown")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if f.out != "" {
			quietOutput(cmd, f.quiet) // without --out the table is the only output
		}
		return runInflation(cmd, f, cluster)
	}
	return cmd
}

// inflationClusterFlags registers the cluster flags of the experiment and
// returns how to load the cluster they select: openb-gpu unless a cluster
// flag is given.
func inflationClusterFlags(cmd *cobra.Command, opt Options) ClusterLoader {
	fs := cmd.Flags()
	if opt.ClusterFlags == nil {
		var preset, file string
		fs.StringVar(&preset, "preset", inflationPreset, "built-in cluster (default "+inflationPreset+", the paper's 1,213 GPU nodes); one of: "+strings.Join(topology.PresetNames(), ", "))
		fs.StringVar(&file, "file", "", "cluster file (YAML or JSON); overrides --preset")
		return func(*cobra.Command) (*topology.Cluster, error) {
			if file != "" {
				return topology.LoadFile(file)
			}
			return topology.LoadPreset(preset)
		}
	}
	load := opt.ClusterFlags(cmd)
	if p := fs.Lookup("preset"); p != nil {
		p.Usage = "built-in cluster (default " + inflationPreset + ", the paper's 1,213 GPU nodes); one of: " + strings.Join(topology.PresetNames(), ", ")
	}
	return func(cmd *cobra.Command) (*topology.Cluster, error) {
		// The loader builds the selected cluster, and rejects generator
		// flags (--hosts …) given without --machine rather than ignore them.
		for _, name := range []string{"preset", "file", "machine", "hosts", "hosts-per-tor", "tors-per-spine"} {
			if cmd.Flags().Changed(name) {
				return load(cmd)
			}
		}
		return topology.LoadPreset(inflationPreset)
	}
}

// runInflationArgs runs the experiment as `sim compare --inflation` with
// args (the command line less --inflation), writing to ./sim-compare by
// default. A flag of the time-based replay is rejected with a message
// that says so.
func runInflationArgs(parent *cobra.Command, opt Options, args []string) error {
	c := inflationCmd(opt, "sim-compare")
	c.Use = parent.CommandPath() + " --inflation"
	c.Flags().BoolP("help", "h", false, "help for "+c.Use)
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		name, ok := strings.CutPrefix(err.Error(), "unknown flag: ")
		if !ok || parent.Flags().Lookup(strings.TrimPrefix(name, "--")) == nil {
			return err
		}
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		return fmt.Errorf("%s is a flag of the time-based replay, not of --inflation, which takes %s (see --inflation --help)", name, strings.Join(names, ", "))
	})
	return execInflation(parent, c, args)
}

// inflationInput is an openb pod list read as tasks of a cluster.
type inflationInput struct {
	path  string // the file, or "builtin"
	tasks []frag.Task
	// labels holds each task's gpu_spec as written (openbSpecLabels), for
	// FGD's workload learned the artifact's way.
	labels []string
	stats  trace.Stats
	// kept counts tasks whose CPU or memory no host with their GPUs has,
	// kept as the paper's simulator keeps them; first is the first one.
	kept  int
	first error
}

func runInflation(cmd *cobra.Command, f *inflationFlags, loadCluster ClusterLoader) error {
	start := time.Now()
	c, err := loadCluster(cmd)
	if err != nil {
		return err
	}
	if f.trace == "" {
		f.trace = inflationTrace
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
	policies := splitList(f.policies)
	if len(policies) == 0 {
		return errors.New("--policies: none given")
	}
	for _, p := range policies {
		if !slices.Contains(frag.PolicyNames(), p) {
			return fmt.Errorf("--policies: unknown policy %q (known: %s)", p, strings.Join(frag.PolicyNames(), ", "))
		}
	}
	seeds, err := parseSeeds(f.seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if f.maxLoad < 1 || f.maxLoad > 1000 {
		return fmt.Errorf("--max-load %d outside 1..1000", f.maxLoad)
	}
	if f.jobs < 0 {
		return fmt.Errorf("--jobs %d: want 0 (GOMAXPROCS) or more", f.jobs)
	}
	opt := frag.InflationOptions{MaxLoad: f.maxLoad}
	switch f.sampling {
	case "paper":
	case "iid":
		opt.Sampling = frag.SampleIID
	case "artifact":
		opt.Sampling, opt.Reading = frag.SampleArtifact, frag.ReadArtifact
	default:
		return fmt.Errorf("--sampling %q: want paper, iid or artifact", f.sampling)
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
	case "":
		if opt.Sampling == frag.SampleArtifact {
			opt.Scoring = frag.ScoreArtifact
		}
	case "paper":
	case "exact":
		opt.Scoring = frag.ScoreExact
	case "artifact":
		opt.Scoring = frag.ScoreArtifact
	default:
		return fmt.Errorf("--scoring %q: want paper, exact or artifact", f.scoring)
	}
	in, err := readInflationTasks(c, path, f.skipBad, f.strict)
	if err != nil {
		return err
	}
	if slices.Contains(policies, frag.FGD) {
		lo := frag.LearnOptions{Coverage: f.coverage}
		if opt.Sampling == frag.SampleArtifact {
			// The artifact's typical pods: classes by gpu_spec as written,
			// its order among equal counts and its weights.
			lo.Labels, lo.ArtifactOrder = in.labels, true
		}
		d, err := frag.Learn(in.tasks, lo)
		if err != nil {
			return fmt.Errorf("--coverage: %w", err)
		}
		opt.Distribution = &d
	}

	type work struct {
		policy string
		seed   uint64
	}
	var todo []work
	for _, p := range policies {
		for _, s := range seeds {
			todo = append(todo, work{p, s})
		}
	}
	runs := make([]*frag.InflationRun, len(todo))
	b := bar(cmd, len(todo), "inflation runs", f.quiet)
	err = parallel(len(todo), workers(f.jobs), b, func(i int) error {
		r, err := frag.RunInflation(c, in.tasks, todo[i].policy, todo[i].seed, opt)
		if err != nil {
			return fmt.Errorf("policy %s, seed %d: %w", todo[i].policy, todo[i].seed, err)
		}
		runs[i] = r
		return nil
	})
	if err != nil {
		return err
	}
	res := frag.NewInflationResult(c.Name(), f.trace, runs)
	w := cmd.OutOrStdout()
	printInflationHeader(w, c, f.trace, in, f.markdown)
	printInflationTable(w, res, policies, f.maxLoad, f.markdown)
	if f.out == "" {
		return nil
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	jsonPath := filepath.Join(f.out, "inflation.json")
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return err
	}
	wrote := jsonPath
	if !f.noPlots {
		png := filepath.Join(f.out, "inflation.png")
		if err := plotInflation(res, policies, f.maxLoad, png); err != nil {
			return err
		}
		wrote += " and " + png
	}
	if !f.markdown {
		fmt.Fprintf(w, "\nwrote %s (%.1fs)\n", wrote, time.Since(start).Seconds())
	}
	return nil
}

// readInflationTasks reads an openb pod list (path "builtin": the embedded
// default) as tasks of c, checking each against the cluster (see the
// command's help for what happens to tasks that fit no host).
func readInflationTasks(c *topology.Cluster, path string, skipBad, strict bool) (*inflationInput, error) {
	in := &inflationInput{path: path}
	var r io.Reader
	name := path
	if path == "builtin" {
		name = data.OpenBDefaultName
		r = data.OpenBDefault()
	} else {
		fh, err := openInput("--trace", path)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	specs := openbSpecLabels(raw)
	rd, err := trace.NewOpenB(bytes.NewReader(raw), trace.OpenBOptions{File: name, SkipMalformed: skipBad, Strict: strict})
	if err != nil {
		return nil, err
	}
	fc := frag.NewFitChecker(c)
	var left trace.Stats // jobs left out here, as fitting no host
	var job []frag.Task
	for {
		j, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		job, err = jobTasks(job[:0], c, fc, name, &j, skipBad, strict, in)
		if err != nil {
			var pe *trace.ParseError
			if !skipBad || !errors.As(err, &pe) {
				return nil, err
			}
			left.Skip(pe.Field+" fits no host", pe)
			continue
		}
		in.tasks = append(in.tasks, job...)
		for range job {
			in.labels = append(in.labels, specs[j.Line])
		}
	}
	st := rd.Stats()
	st.Read -= left.Skipped
	if left.Skipped > 0 {
		if st.SkipReasons == nil {
			st.SkipReasons = map[string]int{}
		}
		for k, v := range left.SkipReasons {
			st.SkipReasons[k] += v
		}
		st.Skipped += left.Skipped
		// The first skip is the one of the earliest line.
		var a, b *trace.ParseError
		if !errors.As(st.FirstSkip, &a) || errors.As(left.FirstSkip, &b) && b.Line < a.Line {
			st.FirstSkip = left.FirstSkip
		}
	}
	in.stats = st
	if len(in.tasks) == 0 {
		return nil, fmt.Errorf("%s: no tasks", name)
	}
	return in, nil
}

// jobTasks appends the tasks of job j to dst, checking each against the
// cluster: a task that fits no host is a *trace.ParseError (which skipBad
// makes the caller skip), unless only its CPU or memory fits no host with
// its GPUs and neither skipBad nor strict is set, in which case it is kept
// and counted in in.kept.
func jobTasks(dst []frag.Task, c *topology.Cluster, fc *frag.FitChecker, file string, j *trace.Job, skipBad, strict bool, in *inflationInput) ([]frag.Task, error) {
	for gi := range j.Spec.Groups {
		g := &j.Spec.Groups[gi]
		t, err := frag.TaskFor(c, g)
		if err != nil {
			return dst, &trace.ParseError{File: file, Line: j.Line, Field: trace.OpenBNumGPU, Msg: err.Error()}
		}
		if err := fc.Check(t); err != nil {
			pe, hard := unplaceable(c, file, j.Line, g, err)
			switch {
			case skipBad:
				return dst, pe
			case hard:
				pe.Msg += " (--skip-bad leaves such tasks out)"
				return dst, pe
			case strict:
				pe.Msg += " (--skip-bad leaves such tasks out; without --strict they count as arrived and are never placed, as in the paper's simulator)"
				return dst, pe
			}
			in.kept += g.Count
			if in.first == nil {
				in.first = pe
			}
		}
		for range g.Count {
			dst = append(dst, t)
		}
	}
	return dst, nil
}

// unplaceable turns a frag.FitChecker error for task group g of the job
// on line into a *trace.ParseError naming the openb column at fault, and
// says whether the task's GPU demand itself fits nowhere (hard) rather
// than its CPU or memory.
func unplaceable(c *topology.Cluster, file string, line int, g *workload.TaskGroup, err error) (*trace.ParseError, bool) {
	pe := &trace.ParseError{File: file, Line: line}
	var fe *frag.FitError
	if !errors.As(err, &fe) {
		pe.Field, pe.Msg = trace.OpenBNumGPU, err.Error()
		return pe, true
	}
	gpus := "GPUs"
	if len(g.Models) > 0 {
		gpus = strings.Join(g.Models, "|") + " GPUs"
	}
	switch fe.Field {
	case frag.FitModels:
		var have []string
		for _, m := range c.Models() {
			have = append(have, m.Model)
		}
		pe.Field = trace.OpenBGPUSpec
		pe.Msg = fmt.Sprintf("GPU models %s: cluster %s has none of them (it has %s)", strings.Join(g.Models, "|"), c.Name(), strings.Join(have, ", "))
		return pe, true
	case frag.FitGPUs:
		pe.Field = trace.OpenBNumGPU
		if g.GPUs == 0 {
			pe.Field = trace.OpenBGPUMilli
			pe.Msg = fmt.Sprintf("a share of one of the %s, but cluster %s has none", gpus, c.Name())
		} else {
			pe.Msg = fmt.Sprintf("%d %s on one host, but the largest host of cluster %s with such GPUs has %d", g.GPUs, gpus, c.Name(), fe.Most)
		}
		return pe, true
	}
	with := "the hosts of cluster " + c.Name()
	switch {
	case g.GPUs > 0:
		with += fmt.Sprintf(" with %d %s", g.GPUs, gpus)
	case g.GPUMilli > 0:
		with += " with " + gpus
	}
	if fe.Field == frag.FitCPU {
		pe.Field = trace.OpenBCPUMilli
		pe.Msg = fmt.Sprintf("%d milli-CPU, but %s have at most %d", fe.Need, with, fe.Most)
	} else {
		pe.Field = trace.OpenBMemoryMiB
		pe.Msg = fmt.Sprintf("%d MiB of memory, but %s and the CPU have at most %d", fe.Need, with, fe.Most)
	}
	return pe, false
}

// parseSeeds reads "42-51", "1,5,9" or a mix.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
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
		for v := a; ; v++ { // to b inclusive, without counting past 2^64−1
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
			if v == b {
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no seeds")
	}
	return out, nil
}

// printInflationHeader names the cluster and the trace the experiment ran
// on, above its table, and then, on a "trace …:" line, what the input
// checks found: skipped rows and tasks, tasks kept though they fit no
// host, columns the reader did not know.
func printInflationHeader(w io.Writer, c *topology.Cluster, traceArg string, in *inflationInput, markdown bool) {
	what := fmt.Sprintf("%d tasks", len(in.tasks))
	if in.path == "builtin" {
		what = "the embedded " + data.OpenBDefaultName + ", " + what
	}
	fmt.Fprintf(w, "cluster %s (%d hosts, %d GPUs); trace %s (%s)\n", c.Name(), c.NumHosts(), c.NumGPUs(), traceArg, what)
	var notes []string
	st := in.stats
	if st.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("skipped %d %s (first: %v)", st.Skipped, reasons(st.SkipReasons), st.FirstSkip))
	}
	if in.kept > 0 {
		notes = append(notes, fmt.Sprintf("warning: %d %s no host by CPU or memory (first: %v); counted as arrived and never placed, as in the paper's simulator (--skip-bad leaves them out, --strict rejects them)",
			in.kept, plural(in.kept, "task fits", "tasks fit"), in.first))
	}
	if s := ignoredNote(st.IgnoredColumns); s != "" {
		notes = append(notes, s)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "trace %s: %s\n", traceArg, strings.Join(notes, "; "))
	}
	if markdown {
		fmt.Fprintln(w)
	}
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
	p.Y.Max = max(ymax*1.05, 1)
	p.Legend.Top = true
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = -vg.Points(4)
	p.Legend.Padding = vg.Points(1)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(18)
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// ignoredNote is the warning about columns a reader did not know, or "".
func ignoredNote(cols []string) string {
	if len(cols) == 0 {
		return ""
	}
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = strconv.Quote(c)
	}
	return fmt.Sprintf("warning: ignored %d %s the reader does not know: %s (a misspelt column changes the result; --strict rejects them)",
		len(cols), plural(len(cols), "column", "columns"), strings.Join(q, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
