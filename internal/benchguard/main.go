// Command benchguard is the CI regression guard of the README's
// performance targets: it builds the benchmark test binary
// (package benchmarks) for the working tree and for a base commit (the
// parent, HEAD^, by default), runs the targeted cases of both binaries
// interleaved — base then new, new then base, … — for a number of rounds,
// and fails when a case is slower by more than a tolerance beyond the
// noise it measured: the median of the new ns/op over the median of the
// base above 1+tolerance, and a Mann-Whitney U test of the two samples
// with p below alpha (benchstat's test). It prints the table either way.
// A case that regresses is measured again in fresh rounds, and the guard
// fails only when it regresses there too: a burst of load on a shared
// machine does not fail the build, a real slowdown does.
//
//	go run ./internal/benchguard               # HEAD^ vs the working tree
//	go run ./internal/benchguard -base main~3  # any commit
//	go run ./internal/benchguard -base main -bench '^BenchmarkSchedule$/^full-10000-pending$/^100k$' -benchtime 3x
//
// Without a base commit (the first commit, a shallow clone) it says so and
// exits 0. .ci/run runs it; on the project's 2-core CI VM it takes about
// four minutes.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// group is one run of a test binary: the cases its -test.bench pattern
// selects, for benchtime. Cases whose names have a different number of
// "/" levels need separate groups: go test only reports a benchmark whose
// every level the pattern names.
type group struct {
	bench     string
	benchtime string
}

// groups select the cases of the README's targets (issue 29's table),
// except `gpusched sim` (Sim/default-command, seconds per run), which
// would take the guard past its five minutes.
var groups = []group{
	{`^BenchmarkPlace$/^topology$/^(512gpu-tor|256gpu-tor)$/^(100k-tor64|100k)$`, "0.2s"},
	{`^BenchmarkPreempt$/^(plan-512gpu-tor|no-plan-512gpu-tor|plan-256gpu-tor|defrag-64gpu-nvlink)$/^(100k-tor64|100k|100k-nvl72)$`, "0.2s"},
	{`^BenchmarkSchedule$/^full-10000-pending$/^100k$`, "3x"},
	// A fixed count: each op of the incremental case changes the state
	// the next one starts from, so a time-based benchtime would compare
	// different sequences of cycles (a faster binary runs more of them).
	{`^BenchmarkSchedule$/^incremental-10000-pending$/^10k$`, "400x"},
	{`^BenchmarkSim$/^engine-noop$`, "0.2s"},
}

func main() {
	base := flag.String("base", "HEAD^", "the commit to compare the working tree with")
	rounds := flag.Int("rounds", 5, "interleaved rounds (each runs both binaries once); at least 5 for p < 0.05 to be reachable")
	tol := flag.Float64("tolerance", 0.10, "fail when a median is slower by more than this fraction…")
	alpha := flag.Float64("alpha", 0.05, "…and the Mann-Whitney p-value is below this")
	bench := flag.String("bench", "", "compare only the cases this go test -bench pattern selects (every level named, e.g. '^BenchmarkSchedule$/^full-10000-pending$/^100k$') instead of the targeted ones")
	benchtime := flag.String("benchtime", "0.2s", "the -benchtime of -bench's cases")
	flag.Parse()
	gs := groups
	if *bench != "" {
		gs = []group{{bench: *bench, benchtime: *benchtime}}
	}
	if *rounds < 1 || *rounds > 10 {
		fmt.Fprintln(os.Stderr, "benchguard: -rounds must be 1 to 10")
		os.Exit(2)
	}
	code, err := run(os.Stdout, *base, *rounds, *tol, *alpha, gs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchguard:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// run does the work of main for the cases of groups gs and returns its
// exit code: 0 when no case regressed (or there is no base), 1 when one
// did.
func run(w io.Writer, base string, rounds int, tol, alpha float64, gs []group) (int, error) {
	root, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		return 0, fmt.Errorf("not in a git checkout: %w", err)
	}
	baseRev, err := gitOut(root, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil || baseRev == "" {
		fmt.Fprintf(w, "benchguard: no base commit %q (first commit or shallow clone): nothing to compare, skipped\n", base)
		return 0, nil
	}
	tmp, err := os.MkdirTemp("", "benchguard-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)

	baseTree := filepath.Join(tmp, "base")
	if err := extract(root, baseRev, baseTree); err != nil {
		return 0, err
	}
	bins := [2]string{filepath.Join(tmp, "base.test"), filepath.Join(tmp, "new.test")}
	dirs := [2]string{filepath.Join(baseTree, "benchmarks"), filepath.Join(root, "benchmarks")}
	for i, tree := range []string{baseTree, root} {
		cmd := exec.Command("go", "test", "-c", "-o", bins[i], "./benchmarks")
		cmd.Dir = tree
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			if i == 0 {
				fmt.Fprintf(w, "benchguard: the base %s has no buildable benchmarks package (%v): skipped\n", short(baseRev), err)
				return 0, nil
			}
			return 0, fmt.Errorf("building the working tree's benchmarks: %w", err)
		}
	}

	fmt.Fprintf(w, "benchguard: base %s vs the working tree, %d interleaved rounds\n", short(baseRev), rounds)
	m := measurer{w: w, bins: bins, dirs: dirs}
	return decide(w, gs, rounds, tol, alpha, m.measure)
}

// measureFunc measures the cases of groups gs for rounds interleaved
// rounds (see measurer.measure, which runs the benchmark binaries; tests
// pass synthetic samples).
type measureFunc func(gs []group, rounds int) (order []string, samples [2]map[string][]float64, from map[string]int, err error)

// decide is the guard's rule: it measures gs, prints the table, and when
// a case regressed measures that case's group again in fresh rounds; it
// returns 1 only when a case regressed in both passes, 0 otherwise.
func decide(w io.Writer, gs []group, rounds int, tol, alpha float64, measure measureFunc) (int, error) {
	order, samples, from, err := measure(gs, rounds)
	if err != nil {
		return 0, err
	}
	regressed := report(w, order, samples, tol, alpha)
	if len(regressed) == 0 {
		return 0, nil
	}
	// A regression must show twice: the cases that regressed are measured
	// again, in fresh interleaved rounds, and fail only if they regress in
	// those too. A burst of load on a shared machine that happened to hit
	// one side of a few rounds does not fail the build; a real slowdown
	// does (a false alarm needs two independent p < alpha in a row).
	var again []group
	seen := map[int]bool{}
	for _, name := range regressed {
		if i := from[name]; !seen[i] {
			seen[i] = true
			again = append(again, gs[i])
		}
	}
	fmt.Fprintf(w, "benchguard: %d case(s) regressed; measuring them again to confirm (%d rounds)\n", len(regressed), rounds)
	order2, samples2, _, err := measure(again, rounds)
	if err != nil {
		return 0, err
	}
	keep := map[string]bool{}
	for _, name := range regressed {
		keep[name] = true
	}
	order2 = slices.DeleteFunc(order2, func(name string) bool { return !keep[name] })
	if confirmed := report(w, order2, samples2, tol, alpha); len(confirmed) > 0 {
		fmt.Fprintf(w, "benchguard: FAIL: regressed twice: %s\n", strings.Join(confirmed, ", "))
		return 1, nil
	}
	fmt.Fprintln(w, "benchguard: ok (the first regression did not repeat: noise)")
	return 0, nil
}

// measurer runs the base and the working tree's benchmark binaries.
type measurer struct {
	w    io.Writer
	bins [2]string // base, new
	dirs [2]string
}

// measure runs each group of gs for both binaries, rounds times,
// interleaved group by group (base then new, then new then base, …) so
// that a change in the machine's load reaches both sides alike. It
// returns the cases in the order first seen, their samples (ns/op) for
// base and new, and the index in gs of each case's group.
func (m measurer) measure(gs []group, rounds int) ([]string, [2]map[string][]float64, map[string]int, error) {
	samples := [2]map[string][]float64{{}, {}}
	from := map[string]int{}
	var order []string
	start := time.Now()
	for r := range rounds {
		for gi, g := range gs {
			first := (r + gi) % 2 // alternate which binary goes first
			for k := range 2 {
				which := (first + k) % 2
				res, err := runGroup(m.bins[which], m.dirs[which], g)
				if err != nil {
					if which == 0 {
						fmt.Fprintf(m.w, "benchguard: base round %d, %s: %v (its cases are compared without it)\n", r+1, g.bench, err)
						continue
					}
					return nil, samples, nil, fmt.Errorf("working tree, %s: %w", g.bench, err)
				}
				for _, rs := range res {
					if _, seen := from[rs.name]; !seen {
						from[rs.name] = gi
						order = append(order, rs.name)
					}
					samples[which][rs.name] = append(samples[which][rs.name], rs.ns)
				}
			}
		}
		fmt.Fprintf(m.w, "round %d/%d done (%s)\n", r+1, rounds, time.Since(start).Round(time.Second))
	}
	return order, samples, from, nil
}

// report prints the comparison table and returns the cases that
// regressed.
func report(w io.Writer, order []string, samples [2]map[string][]float64, tol, alpha float64) []string {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tbase ns/op\t±\tnew ns/op\t±\tnew/base\tp\tn\tverdict\t")
	var regressed []string
	for _, name := range order {
		b, n := samples[0][name], samples[1][name]
		if len(n) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t\t-\t\t\t\t\tgone from the working tree\t\n", name, fmtNs(median(b)))
			continue
		}
		if len(b) == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t%s\t±%.0f%%\t\t\t\tnew case, no base\t\n", name, fmtNs(median(n)), 100*spread(n))
			continue
		}
		ratio := median(n) / median(b)
		p := mannWhitneyP(b, n)
		verdict := "ok"
		switch {
		case ratio > 1+tol && p < alpha:
			verdict = "REGRESSED"
			regressed = append(regressed, name)
		case ratio > 1+tol:
			verdict = "slower, within noise"
		case ratio < 1-tol && p < alpha:
			verdict = "faster"
		}
		fmt.Fprintf(tw, "%s\t%s\t±%.0f%%\t%s\t±%.0f%%\t%.2f×\t%.3f\t%d+%d\t%s\t\n",
			name, fmtNs(median(b)), 100*spread(b), fmtNs(median(n)), 100*spread(n), ratio, p, len(b), len(n), verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "rule: REGRESSED when new/base > %.2f and p < %.2f (Mann-Whitney U, two-sided); ± is the farthest sample from the median\n", 1+tol, alpha)
	if len(regressed) == 0 {
		fmt.Fprintln(w, "benchguard: ok")
	}
	return regressed
}

// result is one benchmark line of a run.
type result struct {
	name string
	ns   float64
}

// runGroup runs one group of a test binary in dir and returns its results.
func runGroup(bin, dir string, g group) ([]result, error) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", g.bench, "-test.benchtime", g.benchtime, "-test.benchmem")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var res []result
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		if name, ns, ok := parseBenchLine(sc.Text()); ok {
			res = append(res, result{name, ns})
		}
	}
	if err != nil {
		return res, fmt.Errorf("%w\n%s", err, tail(out.String(), 2000))
	}
	if len(res) == 0 {
		return nil, errors.New("no benchmark matched")
	}
	return res, nil
}

var procSuffix = regexp.MustCompile(`-\d+$`)

// parseBenchLine reads "BenchmarkX/y-N  iters  v ns/op …" and returns the
// name without "Benchmark" and the -N GOMAXPROCS suffix, and the ns/op.
func parseBenchLine(line string) (string, float64, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", 0, false
	}
	for i := 2; i+1 < len(f); i += 2 {
		if f[i+1] == "ns/op" {
			var v float64
			if _, err := fmt.Sscan(f[i], &v); err != nil {
				return "", 0, false
			}
			name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
			return name, v, true
		}
	}
	return "", 0, false
}

// extract writes the tree of commit rev of the repository at root into dir.
func extract(root, rev, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Dir = root
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	untar.Stderr = os.Stderr
	archive.Stderr = os.Stderr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w", short(rev), err)
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("untar %s: %w", short(rev), err)
	}
	return nil
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

func short(rev string) string {
	if len(rev) > 10 {
		return rev[:10]
	}
	return rev
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// fmtNs renders nanoseconds in a readable unit.
func fmtNs(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2fs", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2fms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fµs", ns/1e3)
	}
	return fmt.Sprintf("%.0fns", ns)
}
