package simcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/sim/policy"
)

// gavelCluster is Gavel's 36:36:36 cluster (nine 4-GPU servers of V100,
// P100 and K80).
const gavelCluster = "../../testdata/clusters/gavel-36x3.yaml"

// TestCompareGavel: gavel and gavel-agnostic are orderings of compare;
// on Gavel's cluster, with job types drawn uniformly from the embedded
// table, the heterogeneity-aware allocation finishes jobs sooner on
// average than the agnostic one (200 synthetic jobs at load 1.5, seed 2:
// 1.8 h against 2.3 h; FIFO 2.4 h), and both preempt (rounds).
func TestCompareGavel(t *testing.T) {
	dir := t.TempDir()
	out, _, err := execCmd(t, Options{}, "compare", "--file", gavelCluster, "--trace", "synthetic:200", "--load", "1.5", "--seed", "2",
		"--max-gpus-per-task", "4", "--gpu-speeds", "gavel", "--job-types", "uniform", "--ckpt-interval", "10m",
		"--orderings", "gavel,gavel-agnostic", "--no-plots", "--no-jobs-csv", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "gavel-agnostic") {
		t.Errorf("table has no gavel-agnostic column:\n%s", out)
	}
	sums := readCompare(t, dir, 2)
	aware, agnostic := sums[0], sums[1]
	if !(aware.JCT.Mean < agnostic.JCT.Mean) {
		t.Errorf("mean JCT aware %.0f s, agnostic %.0f s: want aware lower", aware.JCT.Mean, agnostic.JCT.Mean)
	}
	if aware.Preemption.Preemptions == 0 || agnostic.Preemption.Preemptions == 0 {
		t.Errorf("preemptions %d and %d: rounds preempt", aware.Preemption.Preemptions, agnostic.Preemption.Preemptions)
	}
	if !strings.Contains(aware.Trace, "types=uniform") {
		t.Errorf("trace name %q does not say the types were drawn", aware.Trace)
	}
}

// TestGavelFlagErrors: the gavel orderings and --job-types refuse bad
// input with the flag, file, line and field.
func TestGavelFlagErrors(t *testing.T) {
	dir := t.TempDir()
	types := filepath.Join(dir, "types.csv")
	if err := os.WriteFile(types, []byte("job,type\nj1,resnet50-bs64\nj2,resnet-51\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("j1 resnet50-bs64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(trace, []byte("t,d,g,net\n0,60,1,lm-bs20\n5,60,1,gpt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--file", gavelCluster, "--trace", "synthetic:20", "--no-plots", "--out", dir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ordering", "gavel"}, "--ordering gavel needs --gpu-speeds"},
		{[]string{"--ordering", "gavel:soon", "--gpu-speeds", "gavel"}, "want gavel:ROUND, a positive round length"},
		{[]string{"--job-types", types}, "--job-types needs --gpu-speeds"},
		{[]string{"--job-types", types, "--gpu-speeds", "gavel"}, "types.csv:3: field type: \"resnet-51\" is not a job type of the speed table (a3c, cyclegan,"},
		{[]string{"--job-types", bad, "--gpu-speeds", "gavel"}, "bad.csv:1: \"j1 resnet50-bs64\" is not JOB,TYPE"},
		{[]string{"--job-types", filepath.Join(dir, "none.csv"), "--gpu-speeds", "gavel"}, "none.csv"},
	} {
		_, _, err := execCmd(t, Options{}, append(append([]string{}, base...), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	vcs := filepath.Join(dir, "vcs.csv")
	if err := os.WriteFile(vcs, []byte("vc,node num\na,4\nb,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := execCmd(t, Options{}, "run", "--file", gavelCluster, "--trace", "synthetic:20", "--queues", "vc-hard:"+vcs, "--gpus-per-node", "4",
		"--gpu-speeds", "gavel", "--ordering", "gavel-agnostic", "--no-plots", "--out", dir)
	if err == nil || !strings.Contains(err.Error(), "--ordering gavel-agnostic: gavel: model") || !strings.Contains(err.Error(), "hard partition") {
		t.Errorf("gavel over hard VCs: %v", err)
	}
	_, _, err = execCmd(t, Options{}, "run", "--file", gavelCluster, "--trace", "csv:"+trace, "--map", "submit=t,duration=d,gpus=g,type=net",
		"--gpu-speeds", "gavel", "--no-plots", "--out", dir)
	if err == nil || !strings.Contains(err.Error(), "trace.csv:3: field type: \"gpt\" is not a job type") {
		t.Errorf("a trace's unknown type: %v", err)
	}
}

// TestOrderingHelpGavel: --ordering's and --job-types' help list their
// values.
func TestOrderingHelpGavel(t *testing.T) {
	for _, v := range []string{"gavel[:ROUND]", "gavel-agnostic[:ROUND]"} {
		if !strings.Contains(orderingHelp, v) {
			t.Errorf("--ordering help lacks %s", v)
		}
	}
	for _, v := range []string{"empty", "uniform", "JOB,TYPE"} {
		if !strings.Contains(jobTypesHelp, v) {
			t.Errorf("--job-types help lacks %s", v)
		}
	}
}

// TestGavelPythonAllocator: --gavel-allocator runs the allocation step in
// a Python process (python/examples/gavel_maxmin.py) through a whole run;
// a value that is not exec:COMMAND is refused.
func TestGavelPythonAllocator(t *testing.T) {
	dir := t.TempDir()
	base := []string{"run", "--file", gavelCluster, "--max-gpus-per-task", "4", "--trace", "synthetic:40", "--load", "1.5",
		"--gpu-speeds", "gavel", "--job-types", "uniform", "--ordering", "gavel", "--no-plots", "--out", dir}
	_, _, err := execCmd(t, Options{}, append(base, "--gavel-allocator", "python3 x.py")...)
	if err == nil || !strings.Contains(err.Error(), "want exec:COMMAND") {
		t.Errorf("a value without exec: %v", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not on PATH")
	}
	if _, errs, err := execCmd(t, Options{}, append(base, "--gavel-allocator", "exec:"+py+" ../../python/examples/gavel_maxmin.py")...); err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	if s.Jobs.Completed != s.Jobs.Total || s.Jobs.Total != 40 {
		t.Errorf("jobs %+v, want all 40 completed", s.Jobs)
	}
}

// halves is a registered Go allocator: every group half a share of the
// first model its throughput is positive on, scaled to fit.
type halves struct{ calls *int }

func (h halves) Allocate(jobs []fairshare.HeteroJob, c fairshare.HeteroCluster) ([][]float64, error) {
	*h.calls++
	var need float64
	for _, j := range jobs {
		need += float64(max(j.Count, 1) * j.GPUs)
	}
	out := make([][]float64, len(jobs))
	for k := range jobs {
		out[k] = make([]float64, len(c.Models))
		out[k][0] = min(0.5, float64(c.GPUs[0])/need)
	}
	return out, nil
}

// TestGavelRegisteredAllocator: an allocator registered by name serves
// --gavel-allocator NAME:ARG, gets its arg, and --gavel-allocator's help
// lists it.
func TestGavelRegisteredAllocator(t *testing.T) {
	var reg policy.Registry
	calls, gotArg := 0, ""
	if err := reg.Allocator("halves", func(arg string, _ uint64) (policy.Allocator, error) {
		gotArg = arg
		return halves{&calls}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Allocator("exec", nil); err == nil {
		t.Error("a built-in's name was registered")
	}
	dir := t.TempDir()
	if _, errs, err := execCmd(t, Options{Registry: &reg}, "run", "--file", gavelCluster, "--max-gpus-per-task", "4", "--trace", "synthetic:30",
		"--gpu-speeds", "gavel", "--ordering", "gavel", "--gavel-allocator", "halves:x", "--no-plots", "--out", dir); err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	if calls == 0 || gotArg != "x" {
		t.Errorf("allocator called %d times with arg %q", calls, gotArg)
	}
	if s := readSummary(t, filepath.Join(dir, "summary.json")); s.Jobs.Completed != 30 {
		t.Errorf("jobs %+v", s.Jobs)
	}
	_, _, err := execCmd(t, Options{Registry: &reg}, "run", "--file", gavelCluster, "--trace", "synthetic:5", "--gpu-speeds", "gavel",
		"--ordering", "gavel", "--gavel-allocator", "nope", "--no-plots", "--out", dir)
	if err == nil || !strings.Contains(err.Error(), "or the registered halves") {
		t.Errorf("an unknown allocator: %v", err)
	}
	if h := gavelAllocHelp + registeredAllocators(&reg); !strings.Contains(h, "registered: halves") {
		t.Errorf("help %q does not list halves", h)
	}
}
