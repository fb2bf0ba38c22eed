package simcli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpusched/gpusched/sim"
)

// execCmd runs the sim command with args and returns its standard output
// and error. It drops --quiet, which would silence the output the tests
// read (progress bars never show in tests anyway); TestQuiet tests it.
func execCmd(t *testing.T, opt Options, args ...string) (string, string, error) {
	t.Helper()
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--quiet" })
	cmd := Command(opt)
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func readSummary(t *testing.T, path string) sim.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s sim.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDefault runs `gpusched sim` with no arguments: the openb cluster and
// the embedded openb trace.
func TestDefault(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the default replay takes seconds of CPU (minutes under -race)")
	}
	dir := t.TempDir()
	out, errs, err := execCmd(t, Options{}, "--out", dir, "--quiet")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	for _, want := range []string{"openb", "queue wait mean", "GPU allocation", "fgd", "best-fit", "random",
		// The paper's experiment follows, on the paper's cluster.
		"The same trace on openb-gpu (the paper's 1,213 GPU nodes)", "cluster openb-gpu (1213 hosts, 6212 GPUs)", "gpu-clustering"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	s := readSummary(t, filepath.Join(dir, "fgd", "summary.json"))
	if s.Jobs.Total < 16000 || s.Jobs.Completed+s.Jobs.Rejected+s.Jobs.Failed+s.Jobs.Unfinished != s.Jobs.Total || s.Input == nil {
		t.Errorf("summary jobs %+v input %+v", s.Jobs, s.Input)
	}
	for _, f := range []string{"compare.json", "fgd/timeseries.csv", "best-fit/jobs.csv", "random/queues.csv", "allocation.png", "compare.png", "wait_cdf.png",
		"inflation/inflation.json", "inflation/inflation.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func writeTrace(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "jobs.csv")
	body := "id,t,d,g,team\n"
	for i := range 60 {
		body += strings.Join([]string{"j" + itoa(i), itoa(i * 30), itoa(600 + 37*i), itoa([]int{1, 2, 4, 8, 16}[i%5]), []string{"a", "b"}[i%2]}, ",") + "\n"
	}
	body += "bad,10,-5,1,a\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRunGenericAndBadInput(t *testing.T) {
	tr := writeTrace(t)
	common := []string{"run", "--preset", "h100-1k", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g,queue=team", "--quiet", "--no-plots"}
	// Without --skip-bad the negative duration is an error naming the line.
	_, _, err := execCmd(t, Options{}, append(common, "--out", t.TempDir())...)
	if err == nil || !strings.Contains(err.Error(), "jobs.csv:62") || !strings.Contains(err.Error(), "negative duration") {
		t.Fatalf("want an error naming jobs.csv:62, got %v", err)
	}
	dir := t.TempDir()
	out, _, err := execCmd(t, Options{}, append(common, "--out", dir, "--skip-bad", "--gpu-mtbf", "2000h", "--ckpt-interval", "5m")...)
	if err != nil {
		t.Fatal(err)
	}
	// The "trace …:" line, on stdout with the results.
	if !strings.Contains(out, "trace csv:"+tr+": 60 jobs; skipped 1 malformed (d: 1)") {
		t.Errorf("skip not reported: %s", out)
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	if s.Input.Skipped != 1 || s.Jobs.Total != 60 || s.Jobs.Completed != 60 {
		t.Errorf("input %+v jobs %+v", s.Input, s.Jobs)
	}
	// A job larger than the cluster: rejected and counted, or an error.
	if _, _, err := execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "csv:"+tr, "--map", "id=id,submit=t,duration=d,gpus=g,queue=team",
		"--skip-bad", "--quiet", "--no-plots", "--out", t.TempDir(), "--reject-errors"); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("--reject-errors: %v", err)
	}
	if _, _, err := execCmd(t, Options{}, "run", "--trace", "nope:x", "--quiet"); err == nil {
		t.Error("unknown trace kind accepted")
	}
}

func TestCompareAndSweep(t *testing.T) {
	tr := writeTrace(t)
	base := []string{"--preset", "h100-1k", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g,queue=team", "--skip-bad", "--quiet"}
	dir := t.TempDir()
	out, _, err := execCmd(t, Options{}, append([]string{"compare", "--policies", "topology,best-fit", "--out", dir, "--no-plots"}, base...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "topology") || !strings.Contains(out, "best-fit") {
		t.Errorf("compare table:\n%s", out)
	}
	for _, f := range []string{"compare.json", "topology/summary.json", "best-fit/summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	// A sweep in two shards gives the same rows as the whole sweep.
	whole := t.TempDir()
	sweep := append([]string{"sweep", "--param", "policy=topology,best-fit", "--param", "ckpt-interval=0s,10m", "--parallel", "3"}, base...)
	if _, _, err := execCmd(t, Options{}, append(sweep, "--out", whole)...); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(whole, "sweep.csv"))
	if len(rows) != 5 {
		t.Fatalf("sweep.csv has %d rows, want header + 4", len(rows))
	}
	sharded := t.TempDir()
	for _, sh := range []string{"0/2", "1/2"} {
		if _, _, err := execCmd(t, Options{}, append(sweep, "--out", sharded, "--shard", sh)...); err != nil {
			t.Fatal(err)
		}
	}
	got := append(readCSV(t, filepath.Join(sharded, "sweep-0-of-2.csv")), readCSV(t, filepath.Join(sharded, "sweep-1-of-2.csv"))[1:]...)
	byRun := map[string]string{}
	for _, r := range got[1:] {
		byRun[r[0]] = strings.Join(r, ",")
	}
	for _, r := range rows[1:] {
		if byRun[r[0]] != strings.Join(r, ",") {
			t.Errorf("run %s: sharded %q, whole %q", r[0], byRun[r[0]], strings.Join(r, ","))
		}
	}
	if _, _, err := execCmd(t, Options{}, "sweep", "--param", "colour=red"); err == nil {
		t.Error("unknown sweep parameter accepted")
	}
	if _, _, err := execCmd(t, Options{}, "sweep", "--param", "seed=1", "--shard", "2/2"); err == nil {
		t.Error("bad shard accepted")
	}
}

func readCSV(t *testing.T, p string) [][]string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestSweepSharesTrace: runs of a sweep use common random numbers — the
// same seed and the same synthetic trace — so two runs differing only in
// seed-free parameters agree; --independent-seeds gives each run its own
// seed for its random models, on the same trace.
func TestSweepSharesTrace(t *testing.T) {
	for _, independent := range []bool{false, true} {
		dir := t.TempDir()
		args := []string{"sweep", "--preset", "h100-1k", "--trace", "synthetic:300", "--load", "1.2", "--quiet",
			"--param", "policy=topology,topology", "--out", dir}
		if independent {
			args = append(args, "--independent-seeds")
		}
		if _, _, err := execCmd(t, Options{}, args...); err != nil {
			t.Fatal(err)
		}
		rows := readCSV(t, filepath.Join(dir, "sweep.csv"))
		if len(rows) != 3 || (rows[1][2] == rows[2][2]) == independent {
			t.Fatalf("independent seeds %v: seeds %v", independent, rows)
		}
		if strings.Join(rows[1][3:], ",") != strings.Join(rows[2][3:], ",") {
			t.Errorf("same trace and policy, different results:\n%v\n%v", rows[1], rows[2])
		}
	}
}

func TestQueueFileAndOutage(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.yaml")
	os.WriteFile(q, []byte("root:\n  name: cluster\n  children:\n    - name: a\n      quotas: [{resource: gpu, nominal: 600}]\n    - name: b\n      quotas: [{resource: gpu, nominal: 400}]\n"), 0o644)
	dir := t.TempDir()
	_, errs, err := execCmd(t, Options{}, "run", "--preset", "h100-1k", "--trace", "synthetic:500", "--load", "1.2", "--quiet", "--no-plots",
		"--queues", "config:"+q, "--default-queue", "b", "--outage", "level=tor,every=2h,for=30m", "--out", dir)
	if err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	if len(s.Queues) != 2 || s.Queues[0].Name != "a" || s.Queues[0].Entitlement != 0.6 || s.Preemption.Faults == 0 || s.Jobs.Completed != 500 {
		t.Errorf("queues %+v, faults %d, jobs %+v", s.Queues, s.Preemption.Faults, s.Jobs)
	}
	for _, bad := range [][]string{
		{"--outage", "level=tor"},
		{"--outage", "level=rack,for=1h"},
		{"--queues", "config:" + q, "--default-queue", "zzz"},
		{"--queues", "config:/nonexistent.yaml"},
	} {
		args := append([]string{"run", "--preset", "h100-1k", "--trace", "synthetic:10", "--quiet", "--no-plots", "--out", t.TempDir()}, bad...)
		if _, _, err := execCmd(t, Options{}, args...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestPaperArgs: the bare command follows the replay with the FGD paper's
// experiment, writing inflation.json (and, without --no-plots, its plot)
// under --out; any flag that chooses something else (here --policies)
// leaves it out.
func TestPaperArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for no replay
	}{
		{nil, "--policies " + paperPolicies + " --seeds 42-44 --out " + filepath.Join("sim-out", "inflation")},
		{[]string{"--out", "d", "--no-plots", "--quiet", "--parallel", "2", "--no-jobs-csv"},
			"--policies " + paperPolicies + " --seeds 42-44 --out " + filepath.Join("d", "inflation") + " --no-plots --quiet --jobs 2"},
		{[]string{"--out", "d", "--policies", "fgd"}, ""},
		{[]string{"--horizon", "1h"}, ""},
	} {
		var out outFlags
		var rc runConfig
		fs := pflag.NewFlagSet("sim", pflag.ContinueOnError)
		rc.bind(fs, true)
		out.bind(fs, "sim-out")
		fs.IntVar(&out.par, "parallel", 0, "")
		fs.String("policies", "", "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		args, ok := paperArgs(fs, out)
		if got := strings.Join(args, " "); ok != (c.want != "") || got != c.want {
			t.Errorf("%q: replay %v with %q, want %q", c.args, ok, got, c.want)
		}
	}
}
