package simcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gpusched/gpusched/topology"
)

// inflationPods is a small openb pod list: whole GPUs, a share, a model
// constraint, a CPU-only task and a full 8-GPU host.
const inflationPods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec
p0,4000,8192,1,1000,
p1,2000,4096,1,500,
p2,8000,16384,2,1000,G2|V100M32
p3,1000,1024,0,0,
p4,32000,65536,8,1000,G2
`

// Rows no host of openb-gpu can take: more GPUs than any host has, a
// model the cluster lacks, and (the one kind the real gpuspec lists have)
// more CPU than any host with 8 G2 GPUs has.
const (
	pod16GPUs  = "big,8000,16384,16,1000,\n"
	podXYZ     = "xyz,1000,1024,1,1000,XYZ999\n"
	podManyCPU = "cpu,120000,737280,8,1000,G2\n"
)

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// inflationArgs runs a quick experiment: two policies, two seeds, to 40%
// load.
func inflationArgs(pods string, more ...string) []string {
	return append([]string{"compare", "--inflation", "--trace", "openb:" + pods, "--policies", "fgd,best-fit", "--seeds", "1-2", "--max-load", "40", "--quiet"}, more...)
}

func readInflation(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// `sim compare --inflation` writes inflation.json and its plot to
// ./sim-compare, like plain compare, when not given --out; --no-plots
// leaves out the plot only.
func TestInflationModeWrites(t *testing.T) {
	dir := t.TempDir()
	pods := writeFile(t, dir, "pods.csv", inflationPods)
	t.Chdir(dir)
	out, errs, err := execCmd(t, Options{}, inflationArgs(pods)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	if !strings.HasPrefix(out, "cluster openb-gpu (1213 hosts, 6212 GPUs); trace openb:"+pods+" (5 tasks)\nunallocated GPU % (median of 2 seeds)") {
		t.Errorf("output:\n%s", out)
	}
	for _, f := range []string{"sim-compare/inflation.json", "sim-compare/inflation.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if v := readInflation(t, filepath.Join(dir, "sim-compare", "inflation.json")); v["cluster"] != "openb-gpu" {
		t.Errorf("inflation.json: %v", v)
	}
	if _, _, err := execCmd(t, Options{}, inflationArgs(pods, "--out", "np", "--no-plots")...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "np", "inflation.json")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "np", "inflation.png")); !os.IsNotExist(err) {
		t.Errorf("--no-plots wrote inflation.png (%v)", err)
	}
}

// A task that can never be placed is an error naming file, line and
// column, or with --skip-bad a counted, reported skip that gives the
// result of the list without it; one whose CPU no host with its GPUs has
// counts as arrived, as in the paper, with a warning (--strict: an error).
func TestInflationUnplaceableTasks(t *testing.T) {
	dir := t.TempDir()
	clean := writeFile(t, dir, "clean.csv", inflationPods)
	for _, c := range []struct{ row, want string }{
		{pod16GPUs, "big.csv:7: field num_gpu: 16 GPUs on one host, but the largest host of cluster openb-gpu with such GPUs has 8 (--skip-bad"},
		{podXYZ, "xyz.csv:7: field gpu_spec: GPU models XYZ999: cluster openb-gpu has none of them (it has "},
	} {
		name := strings.SplitN(c.row, ",", 2)[0] + ".csv"
		p := writeFile(t, dir, name, inflationPods+c.row)
		_, _, err := execCmd(t, Options{}, inflationArgs(p, "--out", t.TempDir())...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}

	// --skip-bad: the result of the list without the bad rows.
	bad := writeFile(t, dir, "bad.csv", strings.Replace(inflationPods, "p1,", pod16GPUs+podXYZ+"p1,", 1)+podManyCPU+"broken,1,2\n")
	want, got := t.TempDir(), t.TempDir()
	if _, _, err := execCmd(t, Options{}, inflationArgs(clean, "--out", want)...); err != nil {
		t.Fatal(err)
	}
	out, _, err := execCmd(t, Options{}, inflationArgs(bad, "--out", got, "--skip-bad")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"(5 tasks)", "trace openb:" + bad + ": skipped 4 (cpu_milli fits no host: 1, gpu_spec fits no host: 1, num_gpu fits no host: 1, record: 1) (first: " + bad + ":3: field num_gpu: 16 GPUs"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	w, g := readInflation(t, filepath.Join(want, "inflation.json")), readInflation(t, filepath.Join(got, "inflation.json"))
	wj, _ := json.Marshal(w["policies"])
	gj, _ := json.Marshal(g["policies"])
	if !bytes.Equal(wj, gj) {
		t.Errorf("--skip-bad curves differ from the clean list's:\n%s\n%s", gj, wj)
	}

	// CPU beyond every host with the task's GPUs: kept, with a warning.
	cpu := writeFile(t, dir, "cpu.csv", inflationPods+podManyCPU)
	out, _, err = execCmd(t, Options{}, inflationArgs(cpu, "--out", t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	if s := "(6 tasks)\ntrace openb:" + cpu + ": warning: 1 task fits no host by CPU or memory (first: " + cpu + ":7: field cpu_milli: 120000 milli-CPU, but the hosts of cluster openb-gpu with 8 G2 GPUs have at most 96000)"; !strings.Contains(out, s) {
		t.Errorf("output lacks %q:\n%s", s, out)
	}
	if _, _, err := execCmd(t, Options{}, inflationArgs(cpu, "--out", t.TempDir(), "--strict")...); err == nil || !strings.Contains(err.Error(), "cpu.csv:7: field cpu_milli") {
		t.Errorf("--strict: %v", err)
	}
}

// A column the openb reader does not know is reported on the "trace …:"
// line (a misspelt gpu_spec drops every model constraint); --strict makes
// it an error.
func TestInflationIgnoredColumns(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "pods.csv", strings.Replace(inflationPods, "gpu_spec", "gpuspec", 1))
	out, _, err := execCmd(t, Options{}, inflationArgs(p, "--out", t.TempDir())...)
	if err != nil {
		t.Fatal(err)
	}
	if s := "trace openb:" + p + `: warning: ignored 1 column the reader does not know: "gpuspec"`; !strings.Contains(out, s) {
		t.Errorf("output lacks %q:\n%s", s, out)
	}
	if _, _, err := execCmd(t, Options{}, inflationArgs(p, "--out", t.TempDir(), "--strict")...); err == nil || !strings.Contains(err.Error(), "pods.csv:1: field gpuspec: unknown column") {
		t.Errorf("--strict: %v", err)
	}
}

// The time-based commands report unknown columns on their "trace …:" line
// too, on stdout: run, compare and each trace of a sweep.
func TestReplayIgnoredColumns(t *testing.T) {
	tr := writeTrace(t)
	dir := t.TempDir()
	base := []string{"--preset", "h100-1k", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g", "--skip-bad", "--quiet", "--no-plots", "--out", dir}
	want := `: 60 jobs; skipped 1 malformed (d: 1) (first: jobs.csv:62: field d: negative duration -5s); warning: ignored 1 column the reader does not know: "team"`
	for _, args := range [][]string{
		append([]string{"run"}, base...),
		append([]string{"compare", "--policies", "best-fit"}, base...),
		append([]string{"sweep", "--param", "policy=best-fit,topology"}, base...),
	} {
		out, _, err := execCmd(t, Options{}, args...)
		if err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
		if strings.Count(out, want) != 1 {
			t.Errorf("%s: output has not one %q:\n%s", args[0], want, out)
		}
		if args[0] == "run" {
			// And in summary.json's input section.
			if s := readSummary(t, filepath.Join(dir, "summary.json")); s.Input == nil || strings.Join(s.Input.IgnoredColumns, ",") != "team" {
				t.Errorf("summary input %+v", s.Input)
			}
		}
	}
}

// Flags of the time-based replay are rejected in inflation mode with a
// message that says so; the mode has its own help.
func TestInflationModeFlags(t *testing.T) {
	_, _, err := execCmd(t, Options{}, "compare", "--inflation", "--load", "1.2")
	if err == nil || !strings.Contains(err.Error(), "--load is a flag of the time-based replay, not of --inflation, which takes --coverage, --file") {
		t.Errorf("--load: %v", err)
	}
	if _, _, err := execCmd(t, Options{}, "compare", "--inflation", "--colour"); err == nil || !strings.Contains(err.Error(), "unknown flag: --colour") {
		t.Errorf("--colour: %v", err)
	}
	out, _, err := execCmd(t, Options{}, "compare", "--inflation", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"--skip-bad", "--strict", "--no-plots", "--max-load", "(default \"sim-compare\")", "default openb-gpu"} {
		if !strings.Contains(out, s) {
			t.Errorf("--inflation --help lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "--load") {
		t.Errorf("--inflation --help lists --load:\n%s", out)
	}
	out, _, _ = execCmd(t, Options{}, "compare", "--help")
	if !strings.Contains(out, "--inflation rejects them") {
		t.Errorf("compare --help does not say which flags inflation mode takes:\n%s", out)
	}
}

// With cluster flags from the caller (cmd/gpusched's), the experiment
// still defaults to openb-gpu, and a cluster flag selects another.
func TestInflationClusterFlags(t *testing.T) {
	var loaded []string
	opt := Options{ClusterFlags: func(cmd *cobra.Command) ClusterLoader {
		preset := cmd.Flags().String("preset", "", "a preset")
		return func(*cobra.Command) (*topology.Cluster, error) {
			loaded = append(loaded, *preset)
			return topology.LoadPreset(*preset)
		}
	}}
	pods := writeFile(t, t.TempDir(), "pods.csv", inflationPods)
	out, _, err := execCmd(t, opt, inflationArgs(pods, "--out", t.TempDir())...)
	if err != nil || len(loaded) != 0 || !strings.HasPrefix(out, "cluster openb-gpu ") {
		t.Errorf("default cluster: %v, loader called for %q:\n%s", err, loaded, out)
	}
	out, _, err = execCmd(t, opt, inflationArgs(pods, "--out", t.TempDir(), "--preset", "openb")...)
	if err != nil || strings.Join(loaded, ",") != "openb" || !strings.HasPrefix(out, "cluster openb ") {
		t.Errorf("--preset openb: %v, loader called for %q:\n%s", err, loaded, out)
	}
	cmd := InflationCommand(opt)
	if u := cmd.Flags().Lookup("preset").Usage; !strings.Contains(u, "default openb-gpu") {
		t.Errorf("--preset usage %q", u)
	}
	if cmd.Flags().Lookup("out").DefValue != "" {
		t.Error("place inflation writes files without --out")
	}
}
