package simcli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/policy"
)

// polluxCluster is Pollux's simulated cluster (16 nodes of 4 GPUs).
const polluxCluster = "../../testdata/clusters/pollux-16x4.yaml"

// TestCompareGoodput: goodput is an ordering of compare; against 2D-LAS
// at the sizes asked for, under the same throughput model, it resizes
// jobs and finishes them sooner on average (60 synthetic jobs at load
// 1.0, seed 1); a second run gives the same summaries.
func TestCompareGoodput(t *testing.T) {
	run := func() []byte {
		dir := t.TempDir()
		out, errs, err := execCmd(t, Options{}, "compare", "--file", polluxCluster, "--max-gpus-per-task", "4", "--trace", "synthetic:60", "--load", "1.0",
			"--seed", "1", "--throughput-model", "pollux", "--job-types", "uniform", "--ckpt-interval", "10m", "--resize-cost", "30s",
			"--orderings", "las:1,8,goodput", "--no-plots", "--no-jobs-csv", "--out", dir)
		if err != nil {
			t.Fatalf("%v %s", err, errs)
		}
		if !strings.Contains(out, "goodput") {
			t.Errorf("table has no goodput column:\n%s", out)
		}
		sums := readCompare(t, dir, 2)
		las, gp := sums[0], sums[1]
		if !(gp.JCT.Mean < las.JCT.Mean) {
			t.Errorf("mean JCT goodput %.0f s, las %.0f s: want goodput lower", gp.JCT.Mean, las.JCT.Mean)
		}
		if gp.Preemption.Shrinks == 0 || gp.Preemption.Grows == 0 {
			t.Errorf("goodput: %d shrinks, %d grows: want both", gp.Preemption.Shrinks, gp.Preemption.Grows)
		}
		if gp.Ordering != "goodput" || gp.Jobs.Completed != 60 {
			t.Errorf("goodput: ordering %q, %d of 60 completed", gp.Ordering, gp.Jobs.Completed)
		}
		for i := range sums {
			sums[i].Provenance = nil
		}
		b, _ := json.Marshal(sums)
		return b
	}
	if a, b := run(), run(); string(a) != string(b) {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
}

// TestGoodputFlagErrors: goodput and --throughput-model refuse what no
// run can use, naming the flag.
func TestGoodputFlagErrors(t *testing.T) {
	base := []string{"run", "--file", polluxCluster, "--trace", "synthetic:5", "--no-plots", "--out", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ordering", "goodput"}, "needs --throughput-model"},
		{[]string{"--ordering", "goodput:soon", "--throughput-model", "pollux"}, "goodput:ROUND"},
		{[]string{"--throughput-model", "amdahl"}, "want pollux"},
		{[]string{"--throughput-model", "pollux", "--speed"}, "give one"},
		{[]string{"--throughput-model", "pollux", "--job-types", filepath.Join(t.TempDir(), "none.csv")}, "--job-types"},
		{[]string{"--resize-cost", "-1s"}, "--resize-cost"},
	} {
		_, errs, err := execCmd(t, Options{}, append(base, c.args...)...)
		if err == nil || !strings.Contains(err.Error()+errs, c.want) {
			t.Errorf("%v: error %v %s; want one with %q", c.args, err, errs, c.want)
		}
	}
}

// greedySizer gives every job its Max, whatever the GPUs: a sizer that
// over-allocates.
type greedySizer struct{}

func (greedySizer) Size(jobs []policy.SizeJob, _ int, _ func(string, int) float64) ([]int, error) {
	out := make([]int, len(jobs))
	for i, j := range jobs {
		out[i] = j.Max
	}
	return out, nil
}

// TestGoodputSizerErrors: a registered sizer's over-allocation stops the
// run with the sizer and the violation named; an unregistered name is
// refused before any run.
func TestGoodputSizerErrors(t *testing.T) {
	reg := &policy.Registry{}
	if err := reg.Sizer("greedy", func(string, uint64) (policy.Sizer, error) { return greedySizer{}, nil }); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--file", polluxCluster, "--max-gpus-per-task", "4", "--trace", "synthetic:100", "--load", "2",
		"--throughput-model", "pollux", "--ordering", "goodput", "--no-plots", "--out", t.TempDir()}
	_, errs, err := execCmd(t, Options{Registry: reg}, append(base, "--goodput-sizer", "greedy")...)
	if err == nil || !strings.Contains(err.Error()+errs, "--goodput-sizer greedy") || !strings.Contains(err.Error()+errs, "usable") {
		t.Errorf("over-allocating sizer: %v %s", err, errs)
	}
	_, errs, err = execCmd(t, Options{Registry: reg}, append(base, "--goodput-sizer", "nobody")...)
	if err == nil || !strings.Contains(err.Error()+errs, "registered: greedy") {
		t.Errorf("unregistered sizer: %v %s", err, errs)
	}
}
