package simcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim"
)

// TestCompareOrderings: job orderings are a comparison axis. Under
// --load 1.5 on 32 GPUs, SJF and SRTF (true durations) wait less than
// FIFO, SRTF and 2D-LAS preempt (turning --preempt on themselves), and
// each ordering writes its own directory.
func TestCompareOrderings(t *testing.T) {
	dir := t.TempDir()
	out, _, err := execCmd(t, Options{}, "compare", "--preset", "dgx-h100", "--trace", "synthetic:200", "--load", "1.5", "--seed", "3",
		"--orderings", "fifo,sjf,srtf,las:1,8,themis", "--ckpt-interval", "1h", "--no-plots", "--no-jobs-csv", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"fifo", "sjf", "srtf", "las:1,8", "themis"} {
		if !strings.Contains(out, l) {
			t.Errorf("table has no column %s:\n%s", l, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sums []sim.Summary
	if err := json.Unmarshal(b, &sums); err != nil {
		t.Fatal(err)
	}
	if len(sums) != 5 {
		t.Fatalf("%d summaries, want 5", len(sums))
	}
	fifo, sjf, srtf, las := sums[0], sums[1], sums[2], sums[3]
	if !(sjf.Wait.Mean < fifo.Wait.Mean) || !(srtf.JCT.Mean < fifo.JCT.Mean) {
		t.Errorf("mean wait FIFO %.0f SJF %.0f; mean JCT FIFO %.0f SRTF %.0f", fifo.Wait.Mean, sjf.Wait.Mean, fifo.JCT.Mean, srtf.JCT.Mean)
	}
	if fifo.Preemption.Preemptions != 0 || sjf.Preemption.Preemptions != 0 || srtf.Preemption.Preemptions == 0 || las.Preemption.Preemptions == 0 {
		t.Errorf("preemptions fifo %d sjf %d srtf %d las %d", fifo.Preemption.Preemptions, sjf.Preemption.Preemptions, srtf.Preemption.Preemptions, las.Preemption.Preemptions)
	}
	for _, d := range []string{"fifo", "sjf", "srtf", "las-1_8", "themis"} {
		if _, err := os.Stat(filepath.Join(dir, d, "summary.json")); err != nil {
			t.Error(err)
		}
	}
}

// TestParamLists: a swept value keeps its own list (las:1,8), and the
// --ordering axis sweeps.
func TestParamLists(t *testing.T) {
	if got := splitSpecs("fifo,las:1,8,srtf,slice:10m,0.5"); !slices.Equal(got, []string{"fifo", "las:1,8", "srtf", "slice:10m,0.5"}) {
		t.Errorf("splitSpecs: %q", got)
	}
	if got := splitSpecs("0.8,1.2,1.6"); !slices.Equal(got, []string{"0.8", "1.2", "1.6"}) {
		t.Errorf("splitSpecs: %q", got)
	}
	dir := t.TempDir()
	if _, _, err := execCmd(t, Options{}, "sweep", "--preset", "dgx-h100", "--trace", "synthetic:50", "--load", "1.5",
		"--param", "demote=las:1,8,slice:10m", "--param", "ordering=fifo,srtf", "--ckpt-interval", "20m", "--out", dir); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "sweep.csv"))
	if len(rows) != 5 || rows[1][1] != "las:1,8" || rows[3][1] != "slice:10m" || rows[2][2] != "srtf" {
		t.Errorf("sweep.csv: %q", rows)
	}
}

// TestOrderingHelp: --ordering's help lists every value it takes, and a
// bad value's error lists them too.
func TestOrderingHelp(t *testing.T) {
	out, _, err := execCmd(t, Options{}, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"fifo", "strict-fifo", "priority-aging", "sjf", "srtf", "las:H1,H2", "slice:LEASE", "themis", "--starve-limit"} {
		if !strings.Contains(out, v) {
			t.Errorf("run --help does not list %s", v)
		}
	}
	if strings.Contains(out, "priority-aging, …") {
		t.Error("run --help hides orderings behind …")
	}
	_, _, err = execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "synthetic:5", "--ordering", "lottery", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "srtf") || !strings.Contains(err.Error(), "themis") {
		t.Errorf("unknown ordering: %v", err)
	}
	_, _, err = execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "synthetic:5", "--starve-limit", "2", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--starve-limit") {
		t.Errorf("--starve-limit without LAS: %v", err)
	}
	// Time slicing without checkpoints never ends a job longer than a
	// lease: refused, not run forever.
	_, _, err = execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "synthetic:5", "--ordering", "slice:10m", "--out", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "--ckpt-interval") {
		t.Errorf("slice without checkpoints: %v", err)
	}
}
