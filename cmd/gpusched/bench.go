package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/benchmarks"
)

// benchPkg is the import path go test prints in the "pkg:" header; the
// in-process run prints the same, so benchstat sees one package.
const benchPkg = "github.com/gpusched/gpusched/benchmarks"

type benchFlags struct {
	filter    string
	short     bool
	all       bool
	benchtime string
	count     int
	jsonOut   bool
	out       string
	data      string
	jobs      int
	list      bool
	check     bool
	quiet     bool
}

// newBenchCmd builds "bench": the benchmark suite of package benchmarks,
// run in this process.
func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the benchmark suite and check the README's performance figures",
		Long: `bench runs gpusched's benchmark suite (package benchmarks) inside this
binary, with the testing package's own benchmark driver: no Go toolchain or
source checkout is needed. By default it runs the cases behind the README's
performance table and prints one row per figure: name, value, unit, target
and whether the target is met. Figures keep their names from release to
release: a name is the go test benchmark name without "Benchmark", e.g.
Ledger/alloc-release/100k, and a case with two figures (time and
allocations, time and memory) has one row per unit.

--all adds the cases without a target (every placement policy, every size).
--filter selects cases, with a target or not, by a regular expression over
their names. --short leaves out the 100k-GPU cases (their fixtures take
seconds and hundreds of MB). Each case has a default -benchtime (1s for fast operations, a count
such as 20x for cases that rebuild a fixture for every operation or take
seconds each); --benchtime overrides it for all.

--out FILE also writes the results in Go's benchmark format, the output of
"go test -bench -benchmem", which benchstat (golang.org/x/perf/cmd/benchstat)
reads: run with --count 10 on two commits and compare the files. The same
names come from

  go test -run '^$' -bench . -benchmem ./benchmarks/

--count N runs N interleaved rounds: each round runs every selected case
once, in order, so that a change in the machine's load (another job, a
thermal limit) reaches every case alike rather than a few cases' every
run. Fixtures are built once, in the first round, and reused by the later
ones; a case that fails or is skipped leaves the later rounds. A case that
measures the process's memory (Sim/synthetic-1m, which drops the cached
fixtures first) runs after the other cases' rounds, in rounds of its own.
Each figure is the median of its case's runs; the table prints beside it
the smallest and largest run, [min–max], and the number of runs.

--json prints, instead of the table, one JSON object per figure:
{"name", "value", "unit", "target", "better", "ok", "issue", "min", "max",
"runs"}: value is the median of the runs, min and max the smallest and
largest, runs how many succeeded; plus "note" where the measured case is a
documented variant of the issue's wording.

--check makes a missed target an error (exit status 1), for CI; a
benchmark that fails (its result check) is always one. --list prints the
selected cases, their default -benchtime, targets and what each measures,
without running them.

Cases that need data from outside the repository (Sim/philly reads
philly/philly.csv) look in --data (default: $GPUSCHED_DATA, ../shared/data)
and are skipped when it is absent. Sim/synthetic-1m replays 1,000,000 jobs
(about 15 s and 2 GB); --synthetic-jobs makes it smaller.`,
		Example: `  gpusched bench --short
  gpusched bench --filter 'Ledger|Place/topology' --benchtime 2s
  gpusched bench --count 5 --json      # median [min–max] of 5 interleaved runs
  gpusched bench --count 10 --out new.txt && benchstat old.txt new.txt
  gpusched bench --json | jq 'select(.ok == false)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.filter, "filter", "", "run only cases whose name matches this regular expression")
	fs.BoolVar(&f.short, "short", false, "leave out the 100k-GPU cases (1k and 10k only)")
	fs.BoolVar(&f.all, "all", false, "also run the cases without a performance target")
	fs.StringVar(&f.benchtime, "benchtime", "", "run each case for this long (e.g. 2s) or this many times (e.g. 10x); default per case")
	fs.IntVar(&f.count, "count", 1, "run this many interleaved rounds of the cases; figures are medians with [min–max] (benchstat wants about 10)")
	fs.BoolVar(&f.jsonOut, "json", false, "print one JSON object per figure instead of the table")
	fs.StringVarP(&f.out, "out", "o", "", `also write Go benchmark format (for benchstat) to this file ("-": standard output)`)
	fs.StringVar(&f.data, "data", "", "directory holding philly/philly.csv (default $GPUSCHED_DATA, else ../shared/data)")
	fs.IntVar(&f.jobs, "synthetic-jobs", 0, "jobs of the Sim/synthetic-1m case (default 1,000,000)")
	fs.BoolVar(&f.list, "list", false, "list the selected cases and their figures without running them")
	fs.BoolVar(&f.check, "check", false, "exit with an error when a figure misses its target")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines on standard error")
	return cmd
}

// benchFigure is one line of --json. Value is the median of the case's
// runs; Min, Max and Runs (added after the others, which keep their
// meaning) are their spread.
type benchFigure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target float64 `json:"target"`
	Better string  `json:"better"`
	OK     bool    `json:"ok"`
	Issue  int     `json:"issue,omitempty"`
	Note   string  `json:"note,omitempty"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Runs   int     `json:"runs"`
}

func runBench(cmd *cobra.Command, f *benchFlags) error {
	var re *regexp.Regexp
	if f.filter != "" {
		var err error
		if re, err = regexp.Compile(f.filter); err != nil {
			return fmt.Errorf("--filter: %w", err)
		}
	}
	if f.count < 1 {
		return fmt.Errorf("--count %d: want at least 1", f.count)
	}
	if f.benchtime != "" && !validBenchtime(f.benchtime) {
		return fmt.Errorf("--benchtime %q: want a duration (2s) or a count (10x)", f.benchtime)
	}
	// A filter selects among every case, with a target or not.
	cases := benchmarks.Select(re, f.short, f.all || re != nil)
	if len(cases) == 0 {
		return errors.New("no benchmark matches (see gpusched bench --list --all)")
	}
	stdout := cmd.OutOrStdout()
	if f.list {
		return listBench(stdout, cases)
	}
	benchmarks.DataDir = f.data
	benchmarks.SyntheticJobs = f.jobs

	var bench io.Writer
	if f.out == "-" {
		bench = stdout
	} else if f.out != "" {
		fh, err := os.Create(f.out)
		if err != nil {
			return err
		}
		defer fh.Close()
		bw := bufio.NewWriter(fh)
		defer bw.Flush()
		bench = bw
	}
	if bench != nil {
		writeBenchHeader(bench)
	}

	stderr := cmd.ErrOrStderr()
	failed := 0
	results := benchRounds(cases, f.count, func(c benchmarks.Case, round int) benchmarks.Result {
		if !f.quiet {
			if f.count > 1 {
				fmt.Fprintf(stderr, "bench: round %d/%d: %s …\n", round, f.count, c.Name)
			} else {
				fmt.Fprintf(stderr, "bench: %s …\n", c.Name)
			}
		}
		r := benchmarks.Run(c, f.benchtime)
		switch {
		case r.Skipped:
			fmt.Fprintf(stderr, "bench: %s skipped: %v\n", c.Name, r.Err)
		case r.Err != nil:
			failed++
			fmt.Fprintf(stderr, "bench: %s FAILED: %v\n", c.Name, r.Err)
		default:
			if bench != nil {
				fmt.Fprintf(bench, "%s\t%s\t%s\n", benchLineName(c.Name), r.R.String(), r.R.MemString())
			}
		}
		return r
	})

	figs, missed := collectFigures(results)
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, fg := range figs {
			if err := enc.Encode(fg); err != nil {
				return err
			}
		}
	} else {
		printBenchTable(stdout, results, figs)
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d benchmark(s) failed", failed)
	case f.check && missed > 0:
		return fmt.Errorf("%d figure(s) missed their target", missed)
	}
	return nil
}

// benchRounds runs cases count times in interleaved rounds and returns
// every run's result in the order run: round 1 runs each case once, in the
// order of cases, then round 2, and so on. A case that fails or is skipped
// is not run in the later rounds. The cases marked OwnHeap run after the
// rounds of the others, in rounds of their own: they drop the cached
// fixtures, which the others would otherwise rebuild in every round. run
// runs one case; round counts from 1.
func benchRounds(cases []benchmarks.Case, count int, run func(c benchmarks.Case, round int) benchmarks.Result) []benchmarks.Result {
	var shared, own []benchmarks.Case
	for _, c := range cases {
		if c.OwnHeap {
			own = append(own, c)
		} else {
			shared = append(shared, c)
		}
	}
	var results []benchmarks.Result
	for _, live := range [][]benchmarks.Case{shared, own} {
		for round := 1; round <= count && len(live) > 0; round++ {
			var next []benchmarks.Case
			for _, c := range live {
				r := run(c, round)
				results = append(results, r)
				if r.Err == nil {
					next = append(next, c)
				}
			}
			live = next
		}
	}
	return results
}

// validBenchtime reports whether s is a -benchtime value: a positive
// duration or a positive count followed by x.
func validBenchtime(s string) bool {
	if n, ok := strings.CutSuffix(s, "x"); ok {
		var k int
		_, err := fmt.Sscanf(n, "%d", &k)
		return err == nil && k > 0 && fmt.Sprint(k) == n
	}
	d, err := time.ParseDuration(s)
	return err == nil && d > 0
}

// benchLineName is the name go test prints for a case: "Benchmark", the
// name, and "-GOMAXPROCS" when that is not 1.
func benchLineName(name string) string {
	n := "Benchmark" + name
	if p := runtime.GOMAXPROCS(0); p != 1 {
		n += fmt.Sprintf("-%d", p)
	}
	return n
}

// writeBenchHeader writes the configuration lines go test prints before
// benchmark results; benchstat uses them to label and group results.
func writeBenchHeader(w io.Writer) {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: %s\n", runtime.GOOS, runtime.GOARCH, benchPkg)
	if cpu := cpuModel(); cpu != "" {
		fmt.Fprintf(w, "cpu: %s\n", cpu)
	}
}

// cpuModel returns the processor's model name where the system says it
// (Linux /proc/cpuinfo), else "".
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// collectFigures turns results into figures, in the order their cases
// first appear: for a case run several times, the median of its
// successful runs, with their smallest, largest and number. It returns
// them with the number that miss their target.
func collectFigures(results []benchmarks.Result) ([]benchFigure, int) {
	var figs []benchFigure
	missed := 0
	seen := map[string]bool{}
	for _, r := range results {
		c := r.Case
		if seen[c.Name] || len(c.Figures) == 0 {
			continue
		}
		seen[c.Name] = true
		for _, fg := range c.Figures {
			var vals []float64
			for _, o := range results {
				if o.Case.Name == c.Name && o.Err == nil {
					if v, ok := fg.Value(o.R); ok {
						vals = append(vals, v)
					}
				}
			}
			if len(vals) == 0 {
				continue
			}
			v := median(vals)
			ok := fg.Met(v)
			if !ok {
				missed++
			}
			figs = append(figs, benchFigure{Name: c.Name, Value: v, Unit: fg.Unit, Target: fg.Target, Better: fg.Better.String(), OK: ok, Issue: fg.Issue, Note: fg.Note,
				Min: slices.Min(vals), Max: slices.Max(vals), Runs: len(vals)})
		}
	}
	return figs, missed
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// printBenchTable prints one row per figure and, for cases without
// figures (--all), one row with their time per op: the median of the
// runs, [the smallest–the largest] and the number of runs.
func printBenchTable(w io.Writer, results []benchmarks.Result, figs []benchFigure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tvalue\t[min–max]\truns\tunit\ttarget\tok")
	fi := 0
	seen := map[string]bool{}
	for _, r := range results {
		c := r.Case
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if r.Err != nil {
			status := "FAILED"
			if r.Skipped {
				status = "skipped"
			}
			fmt.Fprintf(tw, "%s\t-\t\t\t\t%s\t%s\n", c.Name, targets(c), status)
			continue
		}
		if len(c.Figures) == 0 {
			var ns []float64
			for _, o := range results {
				if o.Case.Name == c.Name && o.Err == nil {
					ns = append(ns, float64(o.R.NsPerOp()))
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\tns/op\t-\t\n", c.Name, benchmarks.FormatValue(median(ns)), spreadCell(slices.Min(ns), slices.Max(ns)), len(ns))
			continue
		}
		for ; fi < len(figs) && figs[fi].Name == c.Name; fi++ {
			fg := figs[fi]
			ok := "ok"
			if !fg.OK {
				ok = "MISSED"
			}
			op := "≤"
			if fg.Better == "higher" {
				op = "≥"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s %s\t%s\n", fg.Name, benchmarks.FormatValue(fg.Value), spreadCell(fg.Min, fg.Max), fg.Runs, fg.Unit, op, benchmarks.FormatValue(fg.Target), ok)
		}
	}
	tw.Flush()
}

// spreadCell renders the smallest and largest run: "[1.2–1.5]".
func spreadCell(lo, hi float64) string {
	return "[" + benchmarks.FormatValue(lo) + "–" + benchmarks.FormatValue(hi) + "]"
}

func targets(c benchmarks.Case) string {
	var s []string
	for _, f := range c.Figures {
		s = append(s, f.TargetString())
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

// listBench prints the selected cases: name, default benchtime, targets
// and what each measures.
func listBench(w io.Writer, cases []benchmarks.Case) error {
	for _, c := range cases {
		fmt.Fprintf(w, "%s\t[%s]\t%s\n    %s\n", c.Name, c.BenchTime, targets(c), c.Doc)
		for _, f := range c.Figures {
			if f.Note != "" {
				fmt.Fprintf(w, "    note (%s): %s\n", f.Unit, f.Note)
			}
		}
	}
	return nil
}
