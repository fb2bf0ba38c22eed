package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const inflationTestPods = `name,cpu_milli,memory_mib,num_gpu,gpu_milli
p0,12000,16384,1,1000
p1,6000,12288,1,460
p2,8000,30517,0,0
p3,88000,327680,8,1000
p4,4000,8192,1,230
`

// runInflationCmd runs `gpusched place inflation ARGS…` (simcli's
// InflationCommand, mounted in main.go) and returns its output and, for a
// non-zero exit, the error it printed. (No --quiet: with --out it would
// silence the table the tests read.)
func runInflationCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	code, out, errOut := gpusched(t, "", append([]string{"place", "inflation"}, args...)...)
	if code != 0 {
		return out, errOut, errors.New(strings.TrimSpace(errOut))
	}
	return out, errOut, nil
}

func TestInflationCommand(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(pods, []byte(inflationTestPods), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runInflationCmd(t, "--trace", "openb:"+pods, "--policies", "fgd,best-fit", "--seeds", "1-2,7", "--max-load", "100", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "median of 3 seeds") || !strings.Contains(out, "fgd") || !strings.Contains(out, "best-fit") || !strings.Contains(out, "100%") || strings.Contains(out, "110%") {
		t.Errorf("table:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "inflation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cluster  string
		Trace    string
		Policies map[string]struct {
			Seeds  map[string][]float64
			Median []float64
		}
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Cluster != "openb-gpu" || res.Trace != "openb:"+pods || len(res.Policies) != 2 {
		t.Fatalf("%s", data)
	}
	for name, pc := range res.Policies {
		if len(pc.Seeds) != 3 || len(pc.Median) != 101 || pc.Median[0] != 100 || len(pc.Seeds["7"]) != 101 {
			t.Errorf("%s: %+v", name, pc)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "inflation.png")); err != nil || st.Size() == 0 || st.Size() > 200<<10 {
		t.Errorf("png: %v %v", st, err)
	}
	// The same run again gives the same bytes, whatever the parallelism.
	dir2 := t.TempDir()
	if _, _, err := runInflationCmd(t, "--trace", "openb:"+pods, "--policies", "fgd,best-fit", "--seeds", "1-2,7", "--max-load", "100", "--out", dir2, "--jobs", "1"); err != nil {
		t.Fatal(err)
	}
	data2, _ := os.ReadFile(filepath.Join(dir2, "inflation.json"))
	if !bytes.Equal(data, data2) {
		t.Errorf("inflation.json differs between runs")
	}
	// Markdown table.
	out, _, err = runInflationCmd(t, "--trace", pods, "--policies", "random", "--seeds", "3", "--max-load", "95", "--markdown")
	if err != nil || !strings.HasPrefix(out, "cluster openb-gpu (1213 hosts, 6212 GPUs); trace "+pods+" (5 tasks)\n\n| unallocated GPU % | 90% | 95% |\n|---|---|---|\n| random |") {
		t.Errorf("markdown %q %v", out, err)
	}
}

// Without --trace the embedded openb default pod list is replayed.
func TestInflationBuiltinTrace(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runInflationCmd(t, "--policies", "fgd,best-fit", "--seeds", "42", "--max-load", "100", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "cluster openb-gpu (1213 hosts, 6212 GPUs); trace openb:builtin (the embedded openb_pod_list_default.csv, 8152 tasks)\n") ||
		!strings.Contains(out, "median of 1 seeds") || !strings.Contains(out, "fgd") {
		t.Errorf("table:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "inflation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Cluster, Trace string
		Policies       map[string]struct{ Median []float64 }
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Cluster != "openb-gpu" || res.Trace != "openb:builtin" {
		t.Errorf("cluster %q trace %q", res.Cluster, res.Trace)
	}
	// On the real trace FGD leaves fewer GPUs unallocated at full load.
	if f, b := res.Policies["fgd"].Median[100], res.Policies["best-fit"].Median[100]; !(f < b) {
		t.Errorf("u100: fgd %.2f, best-fit %.2f", f, b)
	}
}

func TestInflationCommandErrors(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	if err := os.WriteFile(pods, []byte(inflationTestPods), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,1,1,2,500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.csv")
	if err := os.WriteFile(huge, []byte(inflationTestPods+"p5,8000,16384,16,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", "philly:x.csv"}, "openb pod lists"},
		// simcli's input checks: a task no host could hold names its row
		// and column, and --skip-bad.
		{[]string{"--trace", huge}, "huge.csv:7: field num_gpu: 16 GPUs on one host, but the largest host of cluster openb-gpu with such GPUs has 8 (--skip-bad leaves such tasks out)"},
		{[]string{"--trace", pods, "--policies", "tetris"}, "unknown policy"},
		{[]string{"--trace", pods, "--seeds", "9-1"}, "--seeds"},
		{[]string{"--trace", pods, "--max-load", "0"}, "--max-load"},
		{[]string{"--trace", pods, "--tie", "coin"}, "--tie"},
		{[]string{"--trace", pods, "--scoring", "fuzzy"}, "--scoring"},
		{[]string{"--trace", pods, "--sampling", "x"}, "--sampling"},
		{[]string{"--trace", bad}, "bad.csv:2: field gpu_milli"},
		{[]string{"--trace", filepath.Join(dir, "none.csv")}, "no such file"},
	} {
		_, _, err := runInflationCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// place inflation is simcli's experiment: unknown columns are reported
// (and rejected with --strict), and --skip-bad leaves out tasks that fit no
// host.
func TestInflationInputChecks(t *testing.T) {
	dir := t.TempDir()
	pods := filepath.Join(dir, "pods.csv")
	// gpu_sepc is a misspelt gpu_spec; p5 asks for 16 GPUs on one host.
	body := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_sepc\n" +
		"p0,12000,16384,1,1000,G2\np1,6000,12288,1,460,\np2,8000,30517,0,0,\np3,88000,327680,8,1000,\np4,4000,8192,1,230,\np5,8000,16384,16,1000,\n"
	if err := os.WriteFile(pods, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--trace", "openb:" + pods, "--policies", "best-fit", "--seeds", "1", "--max-load", "50"}
	out, _, err := runInflationCmd(t, append(args, "--skip-bad")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(5 tasks)", "skipped 1 (num_gpu fits no host: 1)", `warning: ignored 1 column the reader does not know: "gpu_sepc"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runInflationCmd(t, append(args, "--skip-bad", "--strict")...); err == nil || !strings.Contains(err.Error(), "gpu_sepc") {
		t.Errorf("--strict: %v", err)
	}
}

// The --preset help names the experiment's own default cluster.
func TestInflationPresetHelp(t *testing.T) {
	out, _, err := runInflationCmd(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "(default openb-gpu,") || strings.Contains(out, "(default "+defaultPreset+")") || strings.Contains(out, "(default openb)") {
		t.Errorf("--preset help does not name openb-gpu as the default:\n%s", out)
	}
}

// --sampling artifact replays the FGD artifact's own draws and reading:
// gpu-packing with seed 42 on the embedded default list gives the
// authors' published values for that seed (100 − allocation % in their
// experiments/analysis/expected_results/analysis_allo_discrete.csv).
func TestInflationArtifactSampling(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runInflationCmd(t, "--policies", "gpu-packing", "--seeds", "42", "--sampling", "artifact", "--out", dir, "--no-plots"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "inflation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Policies map[string]struct{ Median []float64 }
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	u := res.Policies["gpu-packing"].Median
	for i, k := range []int{90, 95, 100, 110, 120, 130} {
		want := []float64{10.02, 8.70, 8.63, 8.58, 8.51, 8.43}[i]
		if len(u) <= k || math.Abs(u[k]-want) > 0.001 {
			t.Fatalf("u%d: got %v, the artifact %.2f", k, u, want)
		}
	}
}
