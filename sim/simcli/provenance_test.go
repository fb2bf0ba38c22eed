package simcli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProvenance: summary.json, provenance.json beside the CSVs and
// report.html name the version, every flag, the input files' SHA-256 and
// the seed, and what the run derived from its flags; two runs with
// different flags have different configs and report titles.
func TestProvenance(t *testing.T) {
	vcs := filepath.Join(t.TempDir(), "vc.csv")
	body := []byte("vc,node num\nresearch,1\n")
	if err := os.WriteFile(vcs, body, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	run := func(ordering string) (string, string) {
		dir := t.TempDir()
		if _, _, err := execCmd(t, Options{}, "run", "--preset", "dgx-h100", "--trace", "synthetic:30", "--queues", "vc:"+vcs, "--ordering", ordering,
			"--seed", "5", "--no-plots", "--out", dir); err != nil {
			t.Fatal(err)
		}
		return dir, readFile(t, filepath.Join(dir, "report.html"))
	}
	dir, page := run("srtf")
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	p := s.Provenance
	if p == nil {
		t.Fatal("summary.json has no provenance")
	}
	if p.Version == "" || p.Command != "sim run" || p.Flags["ordering"] != "srtf" || p.Flags["load"] != "0" || !slices.Contains(p.Set, "queues") ||
		!slices.Equal(p.Seeds, []uint64{5}) || s.Ordering != "srtf" {
		t.Errorf("provenance %+v", p)
	}
	if len(p.Inputs) != 1 || p.Inputs[0].Flag != "queues" || p.Inputs[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("inputs %+v", p.Inputs)
	}
	if p.Run["effective.preempt"] != "queue" || p.Run["effective.runtime-estimate"] != "1" {
		t.Errorf("run settings %v, want the preemption and estimates srtf turned on", p.Run)
	}
	if side := readFile(t, filepath.Join(dir, provenanceFile)); !strings.Contains(side, p.Config) {
		t.Errorf("provenance.json:\n%s", side)
	}
	for _, want := range []string{"config " + p.Config, "ordering srtf", "Metric definitions", hex.EncodeToString(sum[:]), "effective.preempt=queue"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html has no %q", want)
		}
	}
	_, other := run("fifo")
	if title(page) == title(other) {
		t.Errorf("two configurations, one title: %s", title(page))
	}
}

// TestCompareSeedsOutputs: compare --seeds writes each seed's runs and a
// report with the intervals.
func TestCompareSeedsOutputs(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := execCmd(t, Options{}, "compare", "--preset", "dgx-h100", "--trace", "synthetic:30", "--load", "1.2", "--orderings", "fifo,las:1,8",
		"--ckpt-interval", "1h", "--seeds", "1-2", "--no-plots", "--out", dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"seed-1/fifo/summary.json", "seed-2/las-1_8/jobs.csv", "seed-2/las-1_8/provenance.json", "compare-seeds.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	page := readFile(t, filepath.Join(dir, "report.html"))
	if !strings.Contains(page, "Medians over seeds") || !strings.Contains(page, "las:1,8") || !strings.Contains(page, "1, 2") {
		t.Errorf("report.html:\n%s", page)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func title(page string) string {
	a := strings.Index(page, "<title>")
	b := strings.Index(page, "</title>")
	if a < 0 || b < a {
		return ""
	}
	return page[a:b]
}

// TestPerturbedSeeds: on a recorded trace, --seeds with a deterministic
// placer gives one run per policy unless --perturb varies the trace by
// the seed; then the seeds' runs differ (a non-degenerate interval), and
// the paired differences between orderings are printed.
func TestPerturbedSeeds(t *testing.T) {
	var b strings.Builder
	b.WriteString("ts,secs,n\n")
	for i := range 120 {
		fmt.Fprintf(&b, "%d,%d,%d\n", i*60, 600+(i*7919)%5400, 1<<(i%4))
	}
	path := filepath.Join(t.TempDir(), "jobs.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(perturb string) (string, []seedRun) {
		dir := t.TempDir()
		out, _, err := execCmd(t, Options{}, "compare", "--preset", "dgx-h100", "--trace", "csv:"+path, "--map", "submit=ts,duration=secs,gpus=n",
			"--load", "1.4", "--orderings", "fifo,sjf", "--seeds", "1-6", "--perturb", perturb, "--no-plots", "--no-jobs-csv", "--out", dir)
		if err != nil {
			t.Fatal(err)
		}
		var runs []seedRun
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "compare-seeds.json"))), &runs); err != nil {
			t.Fatal(err)
		}
		return out, runs
	}
	waits := func(runs []seedRun) map[float64]bool {
		m := map[float64]bool{}
		for _, r := range runs {
			if r.Label == "fifo" {
				m[r.Summary.Wait.Mean] = true
			}
		}
		return m
	}
	if _, runs := run(""); len(waits(runs)) != 1 {
		t.Errorf("as recorded: %d distinct FIFO waits over 6 seeds, want 1 (nothing random)", len(waits(runs)))
	}
	out, runs := run("bootstrap,jitter=2m")
	if len(waits(runs)) < 4 {
		t.Errorf("perturbed: %d distinct FIFO waits over 6 seeds, want the seeds to differ", len(waits(runs)))
	}
	if !strings.Contains(out, "paired difference from fifo") || !strings.Contains(out, "sjf − fifo") {
		t.Errorf("no paired differences:\n%s", out)
	}
}
