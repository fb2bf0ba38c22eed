package report_test

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/report"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func simulate(t testing.TB, seed uint64) *sim.Result {
	t.Helper()
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4})
	syn := trace.Synthetic{Seed: 9, Jobs: 120, Queues: []trace.Weighted[string]{{Value: "research", Weight: 3}, {Value: "prod", Weight: 1}}}
	syn.MeanInterarrival = syn.InterarrivalFor(c.NumGPUs(), 1.1)
	jobs := simtest.Jobs(t, syn)
	res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Seed: seed, SampleEvery: 15 * time.Minute,
		Checkpoint: sim.CheckpointModel{Interval: 20 * time.Minute, Overhead: 30 * time.Second, RestartCost: time.Minute},
		Failures:   sim.FailureModel{GPUMTBF: 500 * time.Hour, HostMTBF: 1000 * time.Hour, RepairTime: time.Hour},
		Speed:      sim.SpeedModel{Enabled: true},
		Tenants:    []sim.Tenant{{Name: "research", GPUs: 48}, {Name: "prod", GPUs: 16}},
	}, jobs)
	res.Summary.Policy, res.Summary.Trace = "fifo", "synthetic:120"
	return res
}

// TestGolden: same inputs and seed give byte-identical summary.json and
// CSVs, equal to the checked-in files (regenerate with -update).
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	if err := report.WriteDir(dir, simulate(t, 42)); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if err := report.WriteDir(dir2, simulate(t, 42)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{report.Files.Summary, report.Files.Samples, report.Files.Jobs, report.Files.Queues} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		again, _ := os.ReadFile(filepath.Join(dir2, name))
		if !bytes.Equal(got, again) {
			t.Errorf("%s differs between two runs with one seed", name)
		}
		golden := filepath.Join("testdata", "golden", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run with -update if the change is intended)", name, golden)
		}
	}
}

func TestTableAndPlots(t *testing.T) {
	a, b := simulate(t, 1), simulate(t, 2)
	runs := []report.Run{{Label: "seed-1", Result: a}, {Label: "seed-2", Result: b}}
	var buf bytes.Buffer
	if err := report.WriteTable(&buf, runs...); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"metric", "seed-1", "seed-2", "queue wait p50 / p95 / p99", "fairness (Jain)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if testing.Short() {
		t.Skip("plots skipped in -short")
	}
	dir := os.Getenv("GPUSCHED_PLOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := report.WritePlots(dir, runs...); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{report.Plots.Allocation, report.Plots.Queue, report.Plots.WaitCDF, report.Plots.JCTCDF, report.Plots.Compare} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 100 {
			t.Errorf("%s: not a plot: %v", name, err)
		}
	}
}

// TestTableHorizon: cut off by a horizon, the table says how many jobs
// were still waiting and for how long, and how many had not arrived; the
// time series has the useful utilisation beside the allocation.
func TestTableHorizon(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "dgx-h100", Hosts: 1})
	job := func(id string, submit time.Duration) trace.Job {
		return trace.Job{Spec: workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, Submit: submit, Duration: 10 * time.Hour}
	}
	res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Horizon: 4 * time.Hour},
		[]trace.Job{job("a", 0), job("b", time.Hour), job("c", 90*time.Minute), job("d", 5*time.Hour)})
	var buf bytes.Buffer
	if err := report.WriteTable(&buf, report.Run{Label: "fifo", Result: res}); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(buf.String()), " ")
	for _, want := range []string{"rejected / failed / unfinished 0 / 0 / 3", "not arrived by the horizon 1",
		"still waiting at the end 2, longest so far 3.0h", "GPU allocation (while arriving) 100.0% over 4.0h"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := report.WriteSamples(&buf, res.Samples); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if lines[0] != strings.Join(report.SampleHeader, ",") || !strings.HasPrefix(lines[0], "t_seconds,allocated_gpus,allocation,useful_utilisation,") {
		t.Errorf("header %s", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "14400,8,1,1,") {
		t.Errorf("last row %s, want the horizon, fully allocated and used", last)
	}
}
