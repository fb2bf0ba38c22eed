package simcli

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// A shard with no grid point writes a header-only CSV into a directory it
// creates, and succeeds; so does a shard with points, into a fresh one.
func TestSweepShardFreshDir(t *testing.T) {
	base := []string{"sweep", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--param", "policy=topology,best-fit"}
	dir := filepath.Join(t.TempDir(), "fresh", "swy")
	out, _, err := execCmd(t, Options{}, append(base, "--shard", "5/8", "--out", dir)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "shard 5/8 has no runs: the grid has 2 points") {
		t.Errorf("output:\n%s", out)
	}
	rows := readCSV(t, filepath.Join(dir, "sweep-5-of-8.csv"))
	if len(rows) != 1 || rows[0][0] != "run" || rows[0][1] != "policy" {
		t.Errorf("empty shard's CSV: %q", rows)
	}
	dir = filepath.Join(t.TempDir(), "other")
	if _, _, err := execCmd(t, Options{}, append(base, "--shard", "1/8", "--out", dir)...); err != nil {
		t.Fatal(err)
	}
	if rows := readCSV(t, filepath.Join(dir, "sweep-1-of-8.csv")); len(rows) != 2 || rows[1][0] != "1" {
		t.Errorf("shard 1/8: %q", rows)
	}
}

// Settings no run would use are errors naming the flag, not ignored.
func TestFlagsNoRunUses(t *testing.T) {
	run := []string{"run", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--no-plots", "--out", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--speed-host", "0.9"}, "--speed-host 0.9 needs --speed"},
		{[]string{"--speed", "--speed-host", "2"}, "--speed-host 2: want a speed factor in (0, 1]"},
		{[]string{"--speed", "--speed-level", "-0.5"}, "--speed-level -0.5"},
		{[]string{"--repeat", "-3"}, "--repeat -3"},
		{[]string{"--trace", "helios:cluster_log.csv", "--map", "submit=t,duration=d,gpus=g"}, "--map applies to csv and jsonl traces, not helios"},
	} {
		_, _, err := execCmd(t, Options{}, append(run, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		compare := append([]string{"compare", "--policies", "topology"}, run[1:]...)
		if _, _, err := execCmd(t, Options{}, append(compare, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compare %q: %v, want %q", c.args, err, c.want)
		}
	}
	// A sweep that turns the speed model on and off may set its factors.
	sweep := []string{"sweep", "--preset", "h100-1k", "--trace", "synthetic:20", "--quiet", "--out", t.TempDir(), "--speed-host", "0.9"}
	if _, _, err := execCmd(t, Options{}, append(sweep, "--param", "speed=false,true")...); err != nil {
		t.Error(err)
	}
	if _, _, err := execCmd(t, Options{}, append(sweep, "--param", "seed=1,2")...); err == nil || !strings.Contains(err.Error(), "needs --speed") {
		t.Errorf("sweep without speed: %v", err)
	}
}

func TestHelpTexts(t *testing.T) {
	out, _, err := execCmd(t, Options{}, "sweep", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--param NAME=V1,V2,…") || strings.Contains(out, "--param sim run") {
		t.Errorf("sweep --help:\n%s", out)
	}
	out, _, err = execCmd(t, Options{}, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "same trace on openb-gpu (the paper's 1,213 GPU") || strings.Contains(out, "same cluster") {
		t.Errorf("sim --help does not name the paper's cluster:\n%s", out)
	}
}

func TestMain(m *testing.M) {
	// Commands that default their output directory must not write into
	// the package directory.
	code := m.Run()
	for _, d := range []string{"sim-out", "sim-compare", "sim-sweep"} {
		if _, err := os.Stat(d); err == nil {
			os.RemoveAll(d)
			if code == 0 {
				println("a test wrote ./" + d)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// TestQuiet: with --quiet a command prints nothing on its standard
// output (no table, no "wrote" line) and still writes its files; errors
// still reach the caller.
func TestQuiet(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--preset", "h100-1k", "--trace", "synthetic:20", "--no-plots", "--out", dir},
		{"compare", "--preset", "h100-1k", "--trace", "synthetic:20", "--policies", "topology,random", "--no-plots", "--out", dir},
		{"sweep", "--preset", "h100-1k", "--trace", "synthetic:20", "--param", "policy=topology,random", "--out", dir},
	} {
		cmd := Command(Options{})
		var out, errb bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		cmd.SetArgs(append(args, "--quiet"))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if out.Len() != 0 || errb.Len() != 0 {
			t.Errorf("%s --quiet printed:\n%s%s", args[0], out.String(), errb.String())
		}
		if got, _, _ := execCmd(t, Options{}, args...); !strings.Contains(got, "wrote") && !strings.Contains(got, "written to") {
			t.Errorf("%s without --quiet printed no table:\n%s", args[0], got)
		}
	}
	cmd := Command(Options{})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"run", "--quiet", "--trace", "philly:no-such-dir/philly.csv", "--out", dir})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "relative to the repository root") || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("missing relative trace: %v", err)
	}
}

// TestSyntheticLoadExact: a synthetic trace offers exactly --load (the
// summary's offeredLoad), not the expectation of its generator (1.17 for
// 1.5 on 300 jobs before).
func TestSyntheticLoadExact(t *testing.T) {
	for _, load := range []string{"0.9", "1.5"} {
		dir := t.TempDir()
		if _, _, err := execCmd(t, Options{}, "run", "--preset", "h100-1k", "--trace", "synthetic:300", "--load", load, "--seed", "1",
			"--no-plots", "--no-jobs-csv", "--out", dir); err != nil {
			t.Fatal(err)
		}
		s := readSummary(t, filepath.Join(dir, "summary.json"))
		want, _ := strconv.ParseFloat(load, 64)
		if math.Abs(s.OfferedLoad-want) > 1e-3 {
			t.Errorf("--load %s: offered load %.4f", load, s.OfferedLoad)
		}
	}
}

// TestSweepIntervals: with seed swept, sweep-intervals.csv has one row per
// point of the other parameters, with each metric's median and interval
// over the seeds.
func TestSweepIntervals(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := execCmd(t, Options{}, "sweep", "--preset", "dgx-h100", "--trace", "synthetic:40", "--load", "1.3",
		"--param", "ordering=fifo,sjf", "--param", "seed=1,2,3,4,5,6", "--out", dir); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "sweep-intervals.csv"))
	if len(rows) != 3 || rows[0][0] != "ordering" || rows[0][1] != "seeds" || rows[1][0] != "fifo" || rows[2][0] != "sjf" || rows[1][1] != "6" {
		t.Fatalf("sweep-intervals.csv: %q", rows)
	}
	h := rows[0]
	i := slices.Index(h, "wait_mean_s_median")
	lo, _ := strconv.ParseFloat(rows[1][i+1], 64)
	med, _ := strconv.ParseFloat(rows[1][i], 64)
	hi, _ := strconv.ParseFloat(rows[1][i+2], 64)
	if i < 0 || h[i+1] != "wait_mean_s_lo" || !(lo <= med && med <= hi) || lo == hi {
		t.Errorf("wait interval [%v, %v], median %v: want a real interval", lo, hi, med)
	}
}

// TestVCLoad: --vc-load scales each VC on its own: both VCs of a
// two-VC file offer the load on their own GPUs, whatever their share of
// the trace; it needs a VC file and refuses --load beside it.
func TestVCLoad(t *testing.T) {
	dir := t.TempDir()
	vcs := filepath.Join(dir, "vc.csv")
	jobs := filepath.Join(dir, "jobs.csv")
	writeTwoVCTrace(t, jobs, vcs)
	base := []string{"run", "--preset", "h100-1k", "--trace", "csv:" + jobs, "--map", "submit=ts,duration=secs,gpus=n,queue=vc", "--no-plots", "--out", t.TempDir()}
	p, err := prepare(func() runConfig {
		r := defaultRun()
		r.preset, r.traceArg, r.mapping, r.queues, r.vcLoad = "h100-1k", "csv:"+jobs, "submit=ts,duration=secs,gpus=n,queue=vc", "vc-hard:"+vcs, 0.7
		return r
	}(), func(r runConfig) (*topology.Cluster, error) { return r.loadCluster() })
	if err != nil {
		t.Fatal(err)
	}
	for vc, gpus := range map[string]int{"big": 16, "small": 8} {
		var g []trace.Job
		for _, j := range p.lt.jobs {
			if j.Spec.Queue == vc {
				g = append(g, j)
			}
		}
		if l := trace.OfferedLoad(g, gpus); math.Abs(l-0.7) > 1e-3 {
			t.Errorf("VC %s offers %.4f on its %d GPUs, want 0.7", vc, l, gpus)
		}
	}
	if _, _, err := execCmd(t, Options{}, append(base, "--vc-load", "0.7", "--queues", "vc-hard:"+vcs)...); err != nil {
		t.Error(err)
	}
	for _, c := range [][]string{{"--vc-load", "0.7"}, {"--vc-load", "0.7", "--queues", "vc:" + vcs, "--load", "0.5"}} {
		if _, _, err := execCmd(t, Options{}, append(base, c...)...); err == nil || !strings.Contains(err.Error(), "--vc-load") {
			t.Errorf("%q: %v", c, err)
		}
	}
}

// writeTwoVCTrace writes a 60-job CSV trace (ts,secs,n,vc) over VCs big
// (every fourth job, 2 nodes) and small (1 node), and its VC file.
func writeTwoVCTrace(t *testing.T, jobs, vcs string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts,secs,n,vc\n")
	for i := range 60 {
		vc := "small"
		if i%4 == 0 {
			vc = "big"
		}
		fmt.Fprintf(&b, "%d,%d,%d,%s\n", i*600, 900+(i*37)%1800, 1+i%2, vc)
	}
	if err := os.WriteFile(jobs, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vcs, []byte("vc,node num\nbig,2\nsmall,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
