package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/report"
)

func TestWhatIf(t *testing.T) {
	if testing.Short() {
		t.Skip("two simulations of the openb trace take seconds")
	}
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(&out, []string{"-out", dir}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"cluster openb: 1523 hosts, 6212 GPUs", "best-fit   simulated in", "fgd        simulated in", "queue wait", "plots: " + filepath.Join(dir, report.Plots.Compare)} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, name := range []string{report.Plots.Compare, report.Plots.Allocation, report.Plots.WaitCDF} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", name, err)
		}
	}
}

func TestWhatIfBadFlags(t *testing.T) {
	if err := run(&bytes.Buffer{}, []string{"-policies", "fgd"}); err == nil {
		t.Error("one policy accepted")
	}
	if err := run(&bytes.Buffer{}, []string{"-policies", "fgd,tetris"}); err == nil || !strings.Contains(err.Error(), "tetris") {
		t.Errorf("unknown policy: %v", err)
	}
}
