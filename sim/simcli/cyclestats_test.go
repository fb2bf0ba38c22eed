package simcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim/report"
)

// TestRunCycleStats: `sim run --cycle-stats` writes the library's
// statistics of every cycle (gpusched.CycleStats, one JSON line a cycle)
// beside the run's files, and changes nothing else the run writes but the
// flag's own mention in the provenance; without the flag no file.
func TestRunCycleStats(t *testing.T) {
	tr := writeTrace(t)
	common := []string{"run", "--preset", "h100-1k", "--trace", "csv:" + tr, "--map", "id=id,submit=t,duration=d,gpus=g,queue=team",
		"--skip-bad", "--quiet", "--no-plots", "--queues", "flat"}
	off, on := t.TempDir(), t.TempDir()
	if _, _, err := execCmd(t, Options{}, append(common, "--out", off)...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCmd(t, Options{}, append(common, "--out", on, "--cycle-stats")...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(off, report.CycleStatsFile)); !os.IsNotExist(err) {
		t.Errorf("without --cycle-stats: %s written (%v)", report.CycleStatsFile, err)
	}
	for _, f := range []string{report.Files.Samples, report.Files.Jobs, report.Files.Queues} {
		a, err := os.ReadFile(filepath.Join(off, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(on, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs with --cycle-stats", f)
		}
	}
	sum := readSummary(t, filepath.Join(on, report.Files.Summary))
	b, err := os.ReadFile(filepath.Join(on, report.CycleStatsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines, admitted, last := 0, 0, -1.0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l struct {
			At float64 `json:"atSeconds"`
			gpusched.CycleStats
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		if l.At < last || len(l.Queues) == 0 || len(l.Stranded) == 0 {
			t.Errorf("line %d: %+v", lines+1, l)
		}
		last = l.At
		lines++
		admitted += l.Admitted
	}
	if lines != sum.Cycles {
		t.Errorf("%d lines, %d cycles", lines, sum.Cycles)
	}
	if admitted != sum.Jobs.Completed {
		t.Errorf("%d admissions, %d jobs completed (no preemption)", admitted, sum.Jobs.Completed)
	}
}
