package simcli

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/goodput"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// Options configure Command and InflationCommand.
type Options struct {
	// ClusterFlags, if set, registers cluster selection flags on a command
	// and returns the function that loads the cluster they select:
	// cmd/gpusched passes its shared --preset/--file/--machine flags. When
	// none of preset, file and machine is given the simulator's default
	// (openb) is used, and --preset philly always means PhillyCluster. Nil
	// means simcli's own --preset and --file.
	ClusterFlags func(cmd *cobra.Command) ClusterLoader
	// Registry holds a researcher's own policies (placers, orderings,
	// demotions), accepted by name wherever a built-in's is (--policy,
	// --policies, --ordering, --orderings, --param); nil: the built-ins
	// only. See package sim/policy.
	Registry *policy.Registry
}

// ClusterLoader loads the cluster a command's flags select.
type ClusterLoader func(cmd *cobra.Command) (*topology.Cluster, error)

// bindRun registers the run flags and, through opt.ClusterFlags or its own
// flags, the cluster selection, and returns how to load the cluster.
func bindRun(cmd *cobra.Command, rc *runConfig, opt Options) func(runConfig) (*topology.Cluster, error) {
	rc.reg = opt.Registry
	if opt.ClusterFlags == nil {
		rc.bind(cmd.Flags(), true)
		return func(r runConfig) (*topology.Cluster, error) { return r.loadCluster() }
	}
	rc.bind(cmd.Flags(), false)
	load := opt.ClusterFlags(cmd)
	return func(r runConfig) (*topology.Cluster, error) {
		fs := cmd.Flags()
		if r.preset != rc.preset || r.file != rc.file {
			return r.loadCluster() // a sweep over preset or file
		}
		if f := fs.Lookup("preset"); f != nil && f.Value.String() == sim.PhillyCluster.Name && !fs.Changed("file") && !fs.Changed("machine") {
			r.preset, r.file = sim.PhillyCluster.Name, ""
			return r.loadCluster()
		}
		// The loader builds the selected cluster, and rejects generator
		// flags (--hosts …) given without --machine rather than ignore them.
		for _, name := range []string{"preset", "file", "machine", "hosts", "hosts-per-tor", "tors-per-spine"} {
			if fs.Changed(name) {
				return load(cmd)
			}
		}
		return r.loadCluster() // the simulator's default preset
	}
}

// Command returns the `sim` command with its run, compare and sweep
// subcommands. `sim` without a subcommand compares placement policies on
// the built-in default (see its help).
func Command(opt Options) *cobra.Command {
	rc := defaultRun()
	// The built-in default: two out-of-phase copies of the openb default
	// trace with their arrivals compressed into 20 minutes, which fills the
	// openb cluster (the trace alone never uses more than a third of it),
	// observed for 6 hours.
	rc.repeat, rc.arrivalSpan, rc.horizon = 2, 20*time.Minute, 6*time.Hour
	var out outFlags
	var policies string
	var cluster func(runConfig) (*topology.Cluster, error)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a trace on a cluster through the scheduler",
		Long: `Replay a job trace on a cluster through the gpusched Scheduler, with optional
checkpoint, failure, drain, speed and preemption models, and report queue
wait, JCT, allocation, fragmentation, fairness and locality.

Without a subcommand, compares placement policies on the built-in default:
the openb cluster (1,523 nodes, 6,212 GPUs) and the Alibaba openb default
trace shipped inside gpusched, two out-of-phase copies with arrivals
compressed into 20 minutes so that the cluster fills up, observed for 6
hours (jobs still running then are reported unfinished). Every flag of
"sim compare" applies.

With no flags but --out, --quiet, --no-plots, --no-jobs-csv and
--parallel, it then runs the same trace on openb-gpu (the paper's 1,213 GPU
nodes of that cluster, 6,212 GPUs) through the experiment of the FGD paper
(Weng et al., ATC'23: tasks resampled to 130% of the GPUs and placed with
no departures, seeds 42-44), prints the unallocated GPU share as load
grows, where the policies differ most, and writes inflation.json (and,
unless --no-plots, inflation.png) to OUT/inflation; "gpusched sim compare
--inflation" runs it in full.`,
		Example: `  gpusched sim
  gpusched sim --policies fgd,best-fit,random --out /tmp/openb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietOutput(cmd, out.quiet)
			if err := compare(cmd, rc, out, variants(splitSpecs(policies), nil, rc.ordering), cluster); err != nil {
				return err
			}
			return paperReplay(cmd, opt, out)
		},
	}
	// A researcher's own main mounts this command as its root: --version
	// names the gpusched it was built with (Version).
	cmd.Version = Version()
	cmd.SetVersionTemplate("{{.Version}}\n")
	cluster = bindRun(cmd, &rc, opt)
	out.bind(cmd.Flags(), "sim-out")
	cmd.Flags().IntVar(&out.par, "parallel", 0, "runs at once (0: GOMAXPROCS)")
	cmd.Flags().StringVar(&policies, "policies", "fgd,best-fit,random", "comma-separated placement policies")
	cmd.AddCommand(runCmd(opt), compareCmd(opt), sweepCmd(opt))
	return cmd
}

// paperPolicies are the policies of the FGD paper's experiment.
const paperPolicies = "fgd,best-fit,dot-product,gpu-packing,gpu-clustering,random"

// paperReplay follows the bare `gpusched sim` with the FGD paper's
// experiment on the same trace and the paper's cluster (openb-gpu), unless
// a flag other than the output ones chose something else.
func paperReplay(cmd *cobra.Command, opt Options, out outFlags) error {
	args, ok := paperArgs(cmd.Flags(), out)
	if !ok {
		return nil
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The same trace on openb-gpu (the paper's 1,213 GPU nodes) in the FGD paper's experiment")
	fmt.Fprintln(w, "(Weng et al., ATC'23): tasks resampled to 130% of the GPUs, placed one by one with no")
	fmt.Fprintln(w, "departures; unallocated GPU % as arrived demand reaches each share of capacity, median")
	fmt.Fprintln(w, "of seeds 42-44.")
	return execInflation(cmd, inflationCmd(opt, ""), args)
}

// paperArgs returns the arguments of the bare command's paper replay, or
// false when a flag other than the output ones was given. The replay
// writes OUT/inflation/inflation.json always, and inflation.png unless
// --no-plots.
func paperArgs(fs *pflag.FlagSet, out outFlags) ([]string, bool) {
	changed := false
	fs.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "out", "quiet", "no-plots", "no-jobs-csv", "parallel":
		default:
			changed = true
		}
	})
	if changed {
		return nil, false
	}
	args := []string{"--policies", paperPolicies, "--seeds", "42-44", "--out", filepath.Join(out.dir, "inflation")}
	if out.noPlots {
		args = append(args, "--no-plots")
	}
	if out.quiet {
		args = append(args, "--quiet")
	}
	if out.par > 0 {
		args = append(args, "--jobs", strconv.Itoa(out.par))
	}
	return args, true
}

// execInflation runs the inflation command c with args and the streams
// of parent.
func execInflation(parent, c *cobra.Command, args []string) error {
	c.SetArgs(args)
	c.SetIn(parent.InOrStdin())
	c.SetOut(parent.OutOrStdout())
	c.SetErr(parent.ErrOrStderr())
	c.SilenceUsage, c.SilenceErrors = true, true
	return c.Execute()
}

type outFlags struct {
	dir     string
	noPlots bool
	quiet   bool
	noJobs  bool
	par     int
}

func (o *outFlags) bind(fs interface {
	StringVar(*string, string, string, string)
	BoolVar(*bool, string, bool, string)
}, def string) {
	fs.StringVar(&o.dir, "out", def, "directory for summary.json, CSV time series and plots")
	fs.BoolVar(&o.noPlots, "no-plots", false, "do not write PNG plots")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing but errors (no table, no progress bar); the files are written as usual")
	fs.BoolVar(&o.noJobs, "no-jobs-csv", false, "do not write jobs.csv (one row per job)")
}

func runCmd(opt Options) *cobra.Command {
	rc := defaultRun()
	var out outFlags
	var saveState []string
	var kr kubeRun
	var cluster func(runConfig) (*topology.Cluster, error)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one simulation and write its summary, time series and plots",
		Long: `Replay a trace through the gpusched Scheduler and write summary.json,
timeseries.csv, jobs.csv, queues.csv and plots (with --cycle-stats also
cyclestats.jsonl: the library's statistics of every cycle, the figures an
embedder exports; opt-in, it makes a run about 1.7× as long).

The Scheduler decides everything a production one would: where jobs go,
whom to preempt (--preempt: its planner, package preempt, picks the victims
that lose the least work since their last checkpoints, gang- and
topology-aware; victims get --grace to checkpoint), and what becomes of jobs
on failed or drained parts (its recovery: requeue from the last checkpoint,
drain within --drain-grace, or end a job stopped by failures more than
--max-restarts times). The simulator only models time: checkpoints
(--ckpt-*), which it reports to the Scheduler as they complete; failures
(--gpu-mtbf, --host-mtbf, --tor-mtbf, --outage) and drains (--drain-*);
speed (--speed). Priorities come from the trace: --qos-priority maps the
openb QoS classes, --high-priority-share gives synthetic traces a share of
high-priority jobs.

--save-state AT saves the Scheduler's state at AT since the trace start
(the first arrival) as OUT/state-AT.yaml: the cluster, the queues, health
and every job with its state, times and placement, as the Scheduler's
cycle at AT sees it, after what happens at AT and before that cycle.
"gpusched explain OUT/state-AT.yaml" then says why each job waits. Give
it several times (repeated, or AT1,AT2). The state's notes say what it
cannot carry (preemptions in progress, …; see gpusched explain --help).`,
		Example: `  gpusched sim run
  gpusched sim run --preset h100-1k --trace philly:../shared/data/philly/philly.csv --queues vc:philly_vc.csv --policy best-fit
  gpusched sim run --trace synthetic:20000 --load 1.2 --gpu-mtbf 5000h --ckpt-interval 30m --ckpt-overhead 1m
  gpusched sim run --qos-priority default --preempt --repeat 2 --arrival-span 20m --horizon 1h
  gpusched sim run --trace synthetic:5000 --load 1.3 --high-priority-share 0.2 --preempt=cluster --ckpt-interval 30m --host-mtbf 2000h --max-restarts 3
  gpusched sim run --trace synthetic:2000 --load 1.2 --save-state 2h,6h --out out/ && gpusched explain out/state-2h.yaml
  gpusched sim run --kube dump.yaml --baseline kueue/ --config kueue-changed/ --horizon 48h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kr.dump != "" {
				return kr.run(cmd, rc.horizon) // writes no files: its table is its output
			}
			quietOutput(cmd, out.quiet)
			return runOne(cmd, rc, out, saveState, cluster)
		},
	}
	kr.bind(cmd)
	// A researcher's own main mounts this command as its root: --version
	// names the gpusched it was built with (Version).
	cmd.Version = Version()
	cmd.SetVersionTemplate("{{.Version}}\n")
	cluster = bindRun(cmd, &rc, opt)
	out.bind(cmd.Flags(), "sim-out")
	cmd.Flags().StringArrayVar(&saveState, "save-state", nil, "save the Scheduler's state `AT` (a duration since the trace start, e.g. 2h) to OUT/state-AT.yaml, for gpusched explain; repeatable, or AT1,AT2,…")
	return cmd
}

// prepared is a cluster and trace loaded once and shared (read-only) by
// the runs of a command.
type prepared struct {
	c    *topology.Cluster
	lt   *loadedTrace
	part *sim.Partition  // hard VCs (--queues vc-hard:PATH), else nil
	prov *sim.Provenance // the command's, for its runs' summaries; nil: none
}

func prepare(rc runConfig, cluster func(runConfig) (*topology.Cluster, error)) (*prepared, error) {
	c, err := cluster(rc)
	if err != nil {
		return nil, err
	}
	c, part, err := rc.partition(c)
	if err != nil {
		return nil, err
	}
	lt, err := rc.loadTrace(c.NumGPUs())
	if err != nil {
		return nil, err
	}
	if err := rc.assignJobTypes(lt); err != nil { // (gavel.go)
		return nil, err
	}
	replayable(lt)
	if len(lt.jobs) == 0 {
		return nil, fmt.Errorf("trace %s: no job to replay", lt.name)
	}
	if pt, err := trace.ParsePerturbation(rc.perturb); err != nil {
		return nil, fmt.Errorf("--perturb: %w", err)
	} else if pt != (trace.Perturbation{}) {
		if strings.HasPrefix(rc.traceArg, "synthetic:") {
			return nil, errors.New("--perturb varies a recorded trace; a synthetic one is drawn anew from each seed")
		}
		if lt.jobs, err = trace.Perturb(lt.jobs, pt, rc.dataSeed()); err != nil {
			return nil, fmt.Errorf("--perturb: %w", err)
		}
		lt.name += "~" + pt.String()
	}
	if rc.repeat > 1 {
		if lt.jobs, err = trace.Replicate(lt.jobs, rc.repeat, rc.dataSeed()); err != nil {
			return nil, err
		}
		lt.name += fmt.Sprintf("x%d", rc.repeat)
	}
	if rc.synLoad < 0 || rc.arrivalSpan < 0 {
		return nil, errors.New("--load and --arrival-span must not be negative")
	}
	if rc.arrivalSpan > 0 && !strings.HasPrefix(rc.traceArg, "synthetic:") {
		trace.Rebase(lt.jobs)
		last := lt.jobs[len(lt.jobs)-1].Submit
		if last <= 0 {
			return nil, errors.New("--arrival-span: every job arrives at once; nothing to scale")
		}
		if err := trace.ScaleArrivals(lt.jobs, float64(rc.arrivalSpan)/float64(last)); err != nil {
			return nil, err
		}
		lt.name += "@span=" + rc.arrivalSpan.String()
	}
	if rc.synLoad > 0 && !strings.HasPrefix(rc.traceArg, "synthetic:") {
		trace.Rebase(lt.jobs)
		f, err := trace.ScaleToLoad(lt.jobs, c.NumGPUs(), rc.synLoad)
		if err != nil {
			return nil, fmt.Errorf("--load: %w", err)
		}
		lt.name += fmt.Sprintf("@load=%g(x%.4g)", rc.synLoad, f)
	}
	if rc.vcLoad != 0 || rc.vcLoadOf != "" {
		if err := rc.scalePerVC(lt); err != nil {
			return nil, err
		}
	}
	return &prepared{c: c, lt: lt, part: part}, nil
}

// scalePerVC applies --vc-load and --vc-load-of: each VC's arrivals
// scaled to its load on its own GPUs.
func (rc runConfig) scalePerVC(lt *loadedTrace) error {
	path, ok := strings.CutPrefix(rc.queues, hardVCPrefix)
	if !ok {
		path, ok = strings.CutPrefix(rc.queues, "vc:")
	}
	switch {
	case !ok:
		return fmt.Errorf("--vc-load needs --queues vc:PATH or vc-hard:PATH (the VCs' GPUs), not %q", rc.queues)
	case rc.synLoad != 0 || rc.arrivalSpan != 0:
		return errors.New("--vc-load scales each VC on its own: give it without --load and --arrival-span")
	case !(rc.vcLoad >= 0):
		return fmt.Errorf("--vc-load %g: want a positive load (0: off)", rc.vcLoad)
	}
	vcs, err := rc.readVCs(path)
	if err != nil {
		return err
	}
	capacity := map[string]int{}
	for _, v := range vcs {
		capacity[v.Name] = v.GPUs
	}
	loads, err := rc.vcLoads(capacity)
	if err != nil {
		return err
	}
	trace.Rebase(lt.jobs)
	if _, err := trace.ScaleToLoadEachQueue(lt.jobs, capacity, loads); err != nil {
		return fmt.Errorf("--vc-load: %w", err)
	}
	if rc.vcLoad != 0 {
		lt.name += fmt.Sprintf("@vc-load=%g", rc.vcLoad)
	}
	if rc.vcLoadOf != "" {
		lt.name += "@vc-load-of=" + rc.vcLoadOf
	}
	return nil
}

// testWrap, when set (by tests), wraps the Scheduler of every run.
var testWrap func(*rootsched.Scheduler) sim.Scheduler

// execute runs one simulation of p under rc. It is safe to call from
// several goroutines: everything mutable is its own.
func execute(rc runConfig, p *prepared, progress func(done, total int), ss *stateSaver) (*sim.Result, error) {
	given := rc
	rc, order, err := rc.effective()
	if err != nil {
		return nil, err
	}
	if order.goodput != nil {
		if ss != nil {
			return nil, errors.New("--ordering goodput runs its own scheduler, not the root Scheduler --save-state captures")
		}
		if rc.cycleStats {
			return nil, errors.New("--ordering goodput runs its own scheduler, not the root Scheduler whose statistics --cycle-stats records")
		}
		return executeGoodput(rc, given, order, p, progress) // (throughput.go)
	}
	jobs := slices.Clone(p.lt.jobs)
	qcfg, tenants, qmap, err := rc.queueSetup(jobs)
	if p.part != nil {
		qcfg, tenants, qmap, err = rc.hardVCQueues(p.part, jobs)
	}
	if err != nil {
		return nil, err
	}
	node, err := rc.execPlacer(p.c)
	if err != nil {
		return nil, err
	}
	if node != nil {
		defer node.Close()
	}
	placer, err := rc.placer(p.c, jobs, node)
	if err != nil {
		return nil, err
	}
	if placer, err = rc.slurmPlacer(placer); err != nil {
		return nil, err
	}
	gav, err := order.gavelPolicy(rc, p.c, jobs)
	if err != nil {
		return nil, err
	}
	if gav != nil {
		placer = gav.Placer(placer) // each job on its allocation's GPU model
	}
	scfg, err := rc.schedConfig()
	if err != nil {
		return nil, err
	}
	if order.themis {
		qcfg.Fairness.Policy = queue.FinishTime
	}
	scfg.Cluster, scfg.Queues, scfg.Placer = p.c, qcfg, placer
	s, err := rootsched.New(scfg)
	if err != nil {
		return nil, err
	}
	if d, err := parseDemoteSeed(rc.demote, rc.reg, rc.seed); err != nil {
		return nil, err
	} else if d != nil {
		s.Demote(d)
		s.StarveLimit(rc.starveLimit)
	}
	if err := order.apply(s, rc.seed); err != nil {
		return nil, err
	}
	if gav != nil {
		s.Order(gav)
	}
	defer s.CloseOrder()
	cfg, err := rc.simConfig()
	if err != nil {
		return nil, err
	}
	cfg.Cluster, cfg.Scheduler, cfg.Tenants, cfg.QueueMap, cfg.Progress = p.c, s, tenants, qmap, progress
	if m, err := readThroughputModel(rc.throughput); err != nil {
		return nil, err
	} else if m != nil {
		cfg.Scaling = goodput.NewScaling(m, p.c, jobs)
	}
	if testWrap != nil {
		cfg.Scheduler = testWrap(s)
	}
	if ss != nil {
		var w *frag.Distribution
		if rc.policy == "fgd" {
			d, err := rootsched.Workload(p.c, jobs) // what Placer learned
			if err != nil {
				return nil, err
			}
			w = &d
		}
		cfg.Snapshots, cfg.Snapshot = ss.ats, ss.hook(s.S, rc.policy, w)
	}
	sm, err := sim.New(cfg, jobs)
	if err != nil {
		return nil, err
	}
	res, err := sm.Run()
	if err != nil {
		return nil, err
	}
	if err := s.OrderErr(); err != nil {
		return nil, fmt.Errorf("--ordering %s: %w", given.ordering, err)
	}
	if node != nil && node.Err() != nil {
		return nil, fmt.Errorf("--policy %s: %w", rc.policy, node.Err())
	}
	label(res, rc.policy, rc, given, p)
	return res, nil
}

// label records what ran in a run's summary: its policy, trace, input,
// ordering as asked, and provenance.
func label(res *sim.Result, policy string, rc, given runConfig, p *prepared) {
	res.Summary.Policy, res.Summary.Trace, res.Summary.Input = policy, p.lt.name, sim.NewInputStats(p.lt.stats)
	res.Summary.Ordering = cmp.Or(given.ordering, "fifo")
	if p.prov != nil {
		res.Summary.Provenance = runProvenance(p.prov, given, rc)
	}
}

// bar returns a progress bar on stderr, or a no-op one when stderr is not
// a terminal or quiet is set.
func bar(cmd *cobra.Command, total int, what string, quiet bool) *progressbar.ProgressBar {
	visible := !quiet
	if f, ok := cmd.ErrOrStderr().(*os.File); !ok || !isTerminal(f) {
		visible = false
	}
	return progressbar.NewOptions(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetPredictTime(true))
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// reportInput prints the "trace …:" line: the jobs read, what was skipped
// or left out, and a warning naming the columns the reader did not know.
func reportInput(w io.Writer, lt *loadedTrace) {
	st := lt.stats
	fmt.Fprintf(w, "trace %s: %d jobs", lt.name, len(lt.jobs))
	if st.Skipped > 0 {
		fmt.Fprintf(w, "; skipped %d malformed %s (first: %v)", st.Skipped, reasons(st.SkipReasons), st.FirstSkip)
	}
	if st.Filtered > 0 {
		fmt.Fprintf(w, "; left out %d %s", st.Filtered, reasons(st.FilterReasons))
	}
	if s := ignoredNote(st.IgnoredColumns); s != "" {
		fmt.Fprintf(w, "; %s", s)
	}
	fmt.Fprintln(w)
}

func reasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func runOne(cmd *cobra.Command, rc runConfig, out outFlags, saveState []string, cluster func(runConfig) (*topology.Cluster, error)) error {
	start := time.Now()
	if err := rc.check(nil); err != nil {
		return err
	}
	var ss *stateSaver
	if len(saveState) > 0 {
		ats, err := parseSaveState(saveState, rc.horizon)
		if err != nil {
			return err
		}
		ss = &stateSaver{dir: out.dir, ats: ats}
	}
	prov, err := newProvenance(cmd, []uint64{rc.seed}, rc.reg)
	if err != nil {
		return err
	}
	p, err := prepare(rc, cluster)
	if err != nil {
		return err
	}
	p.prov = prov
	if ss != nil {
		ss.header = fmt.Sprintf("of gpusched sim run: cluster %s, trace %s, policy %s, seed %d", p.c.Name(), p.lt.name, rc.policy, rc.seed)
	}
	reportInput(cmd.OutOrStdout(), p.lt)
	b := bar(cmd, len(p.lt.jobs), "simulating", out.quiet)
	res, err := execute(rc, p, func(done, _ int) {
		if done%256 == 0 || done == len(p.lt.jobs) {
			b.Set(done)
		}
	}, ss)
	b.Finish()
	if err != nil {
		return err
	}
	runs := []report.Run{{Label: rc.policy, Result: res}}
	if err := writeRun(out, out.dir, res); err != nil {
		return err
	}
	if !out.noPlots {
		if err := report.WritePlots(out.dir, runs...); err != nil {
			return err
		}
	}
	title := fmt.Sprintf("gpusched sim run: cluster %s, trace %s, policy %s, ordering %s, seed %d, config %s", p.c.Name(), p.lt.name, rc.policy, res.Summary.Ordering, rc.seed, prov.Config)
	if err := report.WriteHTMLPage(out.dir, report.Page{Title: title, Runs: runs, Provenance: prov}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s (%d GPUs), trace %s, policy %s, seed %d\n\n", p.c.Name(), p.c.NumGPUs(), p.lt.name, rc.policy, rc.seed)
	if err := report.WriteTable(cmd.OutOrStdout(), runs...); err != nil {
		return err
	}
	if ss != nil {
		fmt.Fprintln(cmd.OutOrStdout())
		for _, name := range ss.wrote {
			fmt.Fprintf(cmd.OutOrStdout(), "saved the Scheduler's state: %s (gpusched explain %s)\n", name, name)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s (%.1fs)\n", out.dir, time.Since(start).Seconds())
	return nil
}

// provenanceFile is the file, beside a run's CSVs, that says what
// produced them (sim.Provenance; summary.json carries it too).
const provenanceFile = "provenance.json"

func writeRun(out outFlags, dir string, res *sim.Result) error {
	if res.Summary.Provenance != nil {
		if err := writeJSONFile(filepath.Join(dir, provenanceFile), res.Summary.Provenance); err != nil {
			return err
		}
	}
	if out.noJobs {
		r := *res
		r.Jobs = nil
		if err := report.WriteDir(dir, &r); err != nil {
			return err
		}
		return os.Remove(filepath.Join(dir, report.Files.Jobs))
	}
	return report.WriteDir(dir, res)
}

func compareCmd(opt Options) *cobra.Command {
	rc := defaultRun()
	var out outFlags
	var policies, orderings, seeds string
	var cluster func(runConfig) (*topology.Cluster, error)
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run several placement policies or job orderings on one trace; one table and one set of plots",
		Long: `Replay one trace once per placement policy (--policies) and job ordering
(--orderings: fifo, sjf, srtf, las:1,8, themis, … as --ordering takes them),
every pair of the two lists, in parallel, and print one table with a column
per pair; writes compare.json, each pair's summary.json and CSVs in a
subdirectory, and plots with one line (or bar) per pair. With --orderings
alone, every ordering runs under --policy.

With --inflation, runs the FGD paper's inflation experiment instead (openb pod
lists resampled to a target load, no departures) and writes inflation.json
and inflation.png to --out (default sim-compare). That mode has flags of its
own, listed by "sim compare --inflation --help": the cluster flags, --trace
(openb:PATH), --policies (default: the paper's six), --seeds, --max-load,
--sampling, --tie, --scoring, --coverage, --skip-bad, --strict, --out,
--no-plots, --jobs, --markdown and --quiet. The other flags listed below
(--load, --repeat, the model flags, …) are the time-based replay's, and
--inflation rejects them.`,
		Example: `  gpusched sim compare --policies topology,best-fit,fgd
  gpusched sim compare --trace synthetic:300 --load 1.5 --orderings fifo,sjf,srtf,las:1,8,themis --ckpt-interval 1h
  gpusched sim compare --inflation --policies fgd,best-fit`,
		// Flags are parsed here so that --inflation can hand the rest
		// to the inflation experiment, whose flags differ.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if slices.Contains(args, "--inflation") || slices.Contains(args, "--inflation=true") {
				return runInflationArgs(cmd, opt, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--inflation" || a == "--inflation=true" }))
			}
			if err := cmd.Flags().Parse(args); err != nil {
				return err
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			if cmd.Flags().NArg() > 0 {
				return fmt.Errorf("unexpected arguments %q", cmd.Flags().Args())
			}
			quietOutput(cmd, out.quiet)
			pols := splitSpecs(policies)
			if orderings != "" && !cmd.Flags().Changed("policies") {
				pols = []string{rc.policy}
			}
			vs := variants(pols, splitSpecs(orderings), rc.ordering)
			if seeds != "" {
				return compareSeeds(cmd, rc, out, vs, seeds, cluster)
			}
			return compare(cmd, rc, out, vs, cluster)
		},
	}
	cluster = bindRun(cmd, &rc, opt)
	out.bind(cmd.Flags(), "sim-compare")
	cmd.Flags().IntVar(&out.par, "parallel", 0, "runs at once (0: GOMAXPROCS)")
	cmd.Flags().StringVar(&policies, "policies", "topology,best-fit,fgd", "comma-separated placement policies (each a --policy value)")
	cmd.Flags().StringVar(&orderings, "orderings", "", "comma-separated job orderings (each an --ordering value: fifo, strict-fifo, priority-aging, sjf, srtf, las:H1,H2,…, slice:LEASE, themis, or a registered one; e.g. fifo,sjf,srtf,las:1,8,themis); empty: --ordering alone")
	cmd.Flags().StringVar(&seeds, "seeds", "", "replicate: run every pair at each of these seeds (e.g. 1-10) and print medians with 95% intervals; the pairs of a seed share its trace and random draws")
	cmd.Flags().Bool("inflation", false, "run the FGD paper's inflation experiment instead of a time-based replay, with that experiment's flags (see --inflation --help)")
	cmd.Flags().BoolP("help", "h", false, "help for compare")
	return cmd
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parallel runs fn(0) … fn(n-1) on at most w goroutines, adds one to the
// progress bar b for each call that succeeds, finishes b, and returns the
// calls' errors joined.
func parallel(n, w int, b *progressbar.ProgressBar, fn func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(w, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = fn(i); errs[i] == nil {
					mu.Lock()
					b.Add(1)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	b.Finish()
	return errors.Join(errs...)
}

// variant is one column of a comparison: a placement policy and a job
// ordering, and its label.
type variant struct {
	label, policy, ordering string
}

// dir is the variant's subdirectory name: its label with '/', ':' and
// ',' replaced.
func (v variant) dir() string {
	return strings.NewReplacer("/", "+", ":", "-", ",", "_").Replace(v.label)
}

// variants pairs every policy with every ordering (none: def). Labels
// name what varies: the policy, the ordering, or policy/ordering.
func variants(policies, orderings []string, def string) []variant {
	many := len(orderings) > 0
	if !many {
		orderings = []string{def}
	}
	var out []variant
	for _, p := range policies {
		for _, o := range orderings {
			label := p
			switch {
			case many && len(policies) == 1:
				label = o
			case many:
				label = p + "/" + o
			}
			out = append(out, variant{label: label, policy: p, ordering: o})
		}
	}
	return out
}

func compare(cmd *cobra.Command, rc runConfig, out outFlags, vs []variant, cluster func(runConfig) (*topology.Cluster, error)) error {
	if len(vs) == 0 {
		return errors.New("--policies: none given")
	}
	for _, v := range vs {
		r := rc
		r.policy, r.ordering = v.policy, v.ordering
		if err := r.check(nil); err != nil {
			return fmt.Errorf("%s: %w", v.label, err)
		}
	}
	start := time.Now()
	prov, err := newProvenance(cmd, []uint64{rc.seed}, rc.reg)
	if err != nil {
		return err
	}
	p, err := prepare(rc, cluster)
	if err != nil {
		return err
	}
	p.prov = prov
	reportInput(cmd.OutOrStdout(), p.lt)
	results := make([]*sim.Result, len(vs))
	b := bar(cmd, len(vs), "runs", out.quiet)
	err = parallel(len(vs), workers(out.par), b, func(i int) error {
		r := rc
		r.policy, r.ordering = vs[i].policy, vs[i].ordering
		res, err := execute(r, p, nil, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", vs[i].label, err)
		}
		results[i] = res
		return nil
	})
	if err != nil {
		return err
	}
	runs := make([]report.Run, len(vs))
	sums := make([]sim.Summary, len(vs))
	for i, v := range vs {
		runs[i] = report.Run{Label: v.label, Result: results[i]}
		sums[i] = results[i].Summary
		if err := writeRun(out, filepath.Join(out.dir, v.dir()), results[i]); err != nil {
			return err
		}
	}
	if err := writeJSONFile(filepath.Join(out.dir, "compare.json"), sums); err != nil {
		return err
	}
	if !out.noPlots {
		if err := report.WritePlots(out.dir, runs...); err != nil {
			return err
		}
	}
	title := fmt.Sprintf("gpusched sim compare: cluster %s, trace %s, seed %d, config %s", p.c.Name(), p.lt.name, rc.seed, prov.Config)
	if err := report.WriteHTMLPage(out.dir, report.Page{Title: title, Runs: runs, Provenance: prov}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "cluster %s (%d GPUs), trace %s, seed %d\n\n", p.c.Name(), p.c.NumGPUs(), p.lt.name, rc.seed)
	if err := report.WriteTable(cmd.OutOrStdout(), runs...); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nwrote %s (%.1fs)\n", out.dir, time.Since(start).Seconds())
	return nil
}

func writeJSONFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := report.WriteJSON(f, v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// param is one swept parameter and its values.
type param struct {
	name   string
	values []string
}

func parseParam(s string) (param, error) {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(strings.TrimPrefix(name, "--"))
	if !ok || name == "" {
		return param{}, fmt.Errorf("--param %q: want NAME=V1,V2,…", s)
	}
	p := param{name: name, values: splitSpecs(vals)}
	if len(p.values) == 0 {
		return param{}, fmt.Errorf("--param %q: no values", s)
	}
	return p, nil
}

// grid expands params into points, the last parameter varying fastest.
func grid(params []param) [][]string {
	points := [][]string{{}}
	for _, p := range params {
		var next [][]string
		for _, pt := range points {
			for _, v := range p.values {
				next = append(next, append(slices.Clone(pt), v))
			}
		}
		points = next
	}
	return points
}

// parseShard parses "i/n" (0 ≤ i < n).
func parseShard(s string) (int, int, error) {
	if s == "" {
		return 0, 1, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 0 ≤ i < n", s)
	}
	return i, n, nil
}

func sweepCmd(opt Options) *cobra.Command {
	rc := defaultRun()
	var out outFlags
	var params []string
	var shard string
	var independent bool
	var cluster func(runConfig) (*topology.Cluster, error)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a grid of parameters in parallel, optionally one shard of it",
		Long: `Run one simulation per point of a grid of parameters (the cartesian product of
the --param lists, the last varying fastest), in parallel goroutines. Runs use
common random numbers: every run of the grid gets --seed (or the swept seed)
for its trace and its random models, so runs that differ in other parameters
replay the same jobs with the same failure and drain draws, and a difference
between two rows is the parameters'. For example --param preempt=off,queue
compares preemption off and on, one row each; --param seed=1,2,3 replicates
the comparison. --independent-seeds gives each run seed = --seed + its index
in the grid for its random models instead. A run has the same result
whichever shard or machine runs it. With --shard i/n
only the points whose index is i modulo n run, so Slurm job arrays or
Kubernetes Indexed Jobs can split a large sweep; each shard writes
sweep-i-of-n.csv. When seed is swept (--param seed=1,2,…,10), an unsharded
sweep also writes sweep-intervals.csv: per point of the other parameters,
each metric's median over the seeds with its 95% interval.`,
		Example: `  gpusched sim sweep --trace synthetic:5000 --param policy=topology,best-fit --param gpu-mtbf=1000h,10000h
  gpusched sim sweep --param load=0.8,1.0,1.2 --param policy=fgd,best-fit --shard 0/4
  gpusched sim sweep --trace synthetic:5000 --load 1.3 --high-priority-share 0.2 --param preempt=off,queue,cluster`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			quietOutput(cmd, out.quiet)
			return sweep(cmd, rc, out, params, shard, independent, cluster)
		},
	}
	cluster = bindRun(cmd, &rc, opt)
	out.bind(cmd.Flags(), "sim-sweep")
	cmd.Flags().IntVar(&out.par, "parallel", 0, "runs at once (0: GOMAXPROCS)")
	cmd.Flags().StringArrayVar(&params, "param", nil, "a swept parameter `NAME=V1,V2,…`, where NAME is a flag of sim run (e.g. policy, load, gpu-mtbf, seed); repeatable")
	cmd.Flags().StringVar(&shard, "shard", "", "run only shard i of n (i/n)")
	cmd.Flags().BoolVar(&independent, "independent-seeds", false, "give each run seed = --seed + its grid index for its random models, instead of common random numbers (the same seed for every run)")
	cmd.AddCommand(mergeCmd())
	return cmd
}

// sweepRow is one run of a sweep, as sweep.csv lists it.
type sweepRow struct {
	index  int
	values []string
	seed   uint64
	sum    sim.Summary
}

func sweep(cmd *cobra.Command, base runConfig, out outFlags, rawParams []string, shard string, independent bool, cluster func(runConfig) (*topology.Cluster, error)) error {
	if len(rawParams) == 0 {
		return errors.New("give at least one --param NAME=V1,V2,…")
	}
	var params []param
	seedSwept := false
	for _, s := range rawParams {
		p, err := parseParam(s)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(params, func(q param) bool { return q.name == p.name }) {
			return fmt.Errorf("--param %s given twice", p.name)
		}
		seedSwept = seedSwept || p.name == "seed"
		params = append(params, p)
	}
	si, sn, err := parseShard(shard)
	if err != nil {
		return err
	}
	swept := map[string]bool{}
	for _, p := range params {
		swept[p.name] = true
	}
	points := grid(params)
	var mine []int
	configs := make([]runConfig, len(points))
	for i, pt := range points {
		r := base
		for k, p := range params {
			if err := r.set(p.name, pt[k]); err != nil {
				return err
			}
		}
		if err := r.check(swept); err != nil {
			return fmt.Errorf("run %d (%s): %w", i, strings.Join(pt, ","), err)
		}
		r.traceSeed, r.hasTraceSeed = r.seed, true // one trace for every run of a seed
		if !seedSwept && independent {
			r.seed = base.seed + uint64(i)
		}
		configs[i] = r
		if i%sn == si {
			mine = append(mine, i)
		}
	}
	start := time.Now()
	// Runs that share the cluster and trace flags share one loaded copy.
	type key struct {
		preset, file, trace, mapping string
		queues                       string // hard VCs partition the cluster; --vc-load reads the VCs
		skip, strict, keep           bool
		per                          int
		cpu                          float64
		mem                          int64
		lvl                          string
		load, vcLoad                 float64
		vcLoadOf                     string
		repeat                       int
		perturb                      string
		span                         time.Duration
		seed                         uint64
	}
	keyOf := func(r runConfig) key {
		k := key{r.preset, r.file, r.traceArg, r.mapping, r.queues, r.skipBad, r.strict, r.keepCPU, r.maxPerTask, r.cpuPerGPU, r.memPerGPU, r.topoLevel,
			r.synLoad, r.vcLoad, r.vcLoadOf, r.repeat, r.perturb, r.arrivalSpan, 0}
		if strings.HasPrefix(r.traceArg, "synthetic:") || r.repeat > 1 || r.perturb != "" {
			k.seed = r.dataSeed() // generation, replication and perturbation draw from it
		}
		return k
	}
	// Load every cluster and trace this shard needs, in grid order, and
	// report each trace once; the runs then share them read-only.
	prov, err := newProvenance(cmd, nil, base.reg)
	if err != nil {
		return err
	}
	cache := map[key]*prepared{}
	loaded := make([]*prepared, len(mine))
	for k, i := range mine {
		kk := keyOf(configs[i])
		p, ok := cache[kk]
		if !ok {
			if p, err = prepare(configs[i], cluster); err != nil {
				return fmt.Errorf("run %d: %w", i, err)
			}
			p.prov = prov
			cache[kk] = p
			reportInput(cmd.OutOrStdout(), p.lt)
		}
		loaded[k] = p
	}
	if err := writeJSONFile(filepath.Join(out.dir, provenanceFile), prov); err != nil {
		return err
	}
	rows := make([]sweepRow, len(mine))
	b := bar(cmd, len(mine), fmt.Sprintf("sweep shard %d/%d", si, sn), out.quiet)
	err = parallel(len(mine), workers(out.par), b, func(k int) error {
		i := mine[k]
		res, err := execute(configs[i], loaded[k], nil, nil)
		if err != nil {
			return fmt.Errorf("run %d (%s): %w", i, strings.Join(points[i], ","), err)
		}
		if err := writeJSONFile(filepath.Join(out.dir, "runs", strconv.Itoa(i), report.Files.Summary), res.Summary); err != nil {
			return err
		}
		rows[k] = sweepRow{index: i, values: points[i], seed: configs[i].seed, sum: res.Summary}
		return nil
	})
	if err != nil {
		return err
	}
	name := "sweep.csv"
	if sn > 1 {
		name = fmt.Sprintf("sweep-%d-of-%d.csv", si, sn)
	}
	f, err := os.Create(filepath.Join(out.dir, name))
	if err != nil {
		return err
	}
	if err := writeSweep(f, params, rows); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if sn == 1 {
		if err := writeIntervalsFile(filepath.Join(out.dir, "sweep-intervals.csv"), params, rows); err != nil {
			return err
		}
	}
	if len(mine) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "shard %d/%d has no runs: the grid has %d %s; wrote the header of %s\n", si, sn, len(points),
			plural(len(points), "point", "points"), filepath.Join(out.dir, name))
		return nil
	}
	if err := writeSweep(cmd.OutOrStdout(), params, rows); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\n%d of %d runs (shard %d/%d) written to %s (%.1fs)\n", len(mine), len(points), si, sn, out.dir, time.Since(start).Seconds())
	return nil
}

// writeIntervalsFile writes sweep-intervals.csv (writeSweepIntervals)
// when seed is swept.
func writeIntervalsFile(path string, params []param, rows []sweepRow) error {
	var b bytes.Buffer
	ok, err := writeSweepIntervals(&b, params, rows)
	if err != nil || !ok {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// sweepColumns are the metrics sweep.csv reports per run.
var sweepColumns = []struct {
	name string
	v    func(*sim.Summary) string
}{
	{"completed", func(s *sim.Summary) string { return strconv.Itoa(s.Jobs.Completed) }},
	{"unfinished", func(s *sim.Summary) string { return strconv.Itoa(s.Jobs.Unfinished + s.Jobs.Failed + s.Jobs.Rejected) }},
	{"wait_mean_s", func(s *sim.Summary) string { return ff(s.Wait.Mean) }},
	{"wait_p95_s", func(s *sim.Summary) string { return ff(s.Wait.P95) }},
	{"jct_mean_s", func(s *sim.Summary) string { return ff(s.JCT.Mean) }},
	{"makespan_s", func(s *sim.Summary) string { return ff(s.Makespan) }},
	{"allocation", func(s *sim.Summary) string { return ff(s.AllocationRate) }},
	{"utilisation", func(s *sim.Summary) string { return ff(s.Utilisation) }},
	{"unusable_free", func(s *sim.Summary) string { return ff(s.Fragmentation.UnusableShareFree) }},
	{"gpu_hours_lost", func(s *sim.Summary) string {
		return ff(s.Preemption.GPUHoursLostFailure + s.Preemption.GPUHoursLostPreemption)
	}},
	{"jain", func(s *sim.Summary) string { return ff(s.Fairness.JainIndex) }},
	{"preemptions", func(s *sim.Summary) string { return strconv.Itoa(s.Preemption.Preemptions) }},
	{"fault_stops", func(s *sim.Summary) string { return strconv.Itoa(s.Preemption.FaultStops) }},
	{"failed", func(s *sim.Summary) string { return strconv.Itoa(s.Jobs.Failed) }},
	{"wait_mean_top_priority_s", func(s *sim.Summary) string {
		if len(s.Priorities) == 0 {
			return ""
		}
		return ff(s.Priorities[0].Wait.Mean)
	}},
	{"migrations", func(s *sim.Summary) string { return strconv.Itoa(s.Preemption.Migrations) }},
	{"gpu_hours_lost_migration", func(s *sim.Summary) string { return ff(s.Preemption.GPUHoursLostMigration) }},
	{"shrinks", func(s *sim.Summary) string { return strconv.Itoa(s.Preemption.Shrinks) }},
	{"grows", func(s *sim.Summary) string { return strconv.Itoa(s.Preemption.Grows) }},
	{"gpu_hours_lost_shrink", func(s *sim.Summary) string { return ff(s.Preemption.GPUHoursLostShrink) }},
	{"total_wait_mean_s", func(s *sim.Summary) string { return ff(s.TotalWait.Mean) }},
	{"partitioned_free", func(s *sim.Summary) string { return ff(s.Fragmentation.PartitionedShareFree) }},
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func writeSweep(w io.Writer, params []param, rows []sweepRow) error {
	cw := csv.NewWriter(w)
	hdr := []string{"run"}
	for _, p := range params {
		hdr = append(hdr, p.name)
	}
	hdr = append(hdr, "run_seed")
	for _, c := range sweepColumns {
		hdr = append(hdr, c.name)
	}
	cw.Write(hdr)
	for _, r := range rows {
		rec := append([]string{strconv.Itoa(r.index)}, r.values...)
		rec = append(rec, strconv.FormatUint(r.seed, 10))
		for _, c := range sweepColumns {
			rec = append(rec, c.v(&r.sum))
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}
