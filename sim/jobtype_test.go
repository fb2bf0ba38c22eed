package sim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/workload"
)

// TestGPUSpeedsByType: a job runs at its type's factor. Two 1-hour 8-GPU
// jobs that accept only the K80 host, one after the other: type fast
// (K80 2) takes 30 min, type slow (K80 0.5) 2 h; the default factor
// (0.25) would give 4 h each.
func TestGPUSpeedsByType(t *testing.T) {
	c := twoModels(t)
	tab, err := sim.ReadSpeedTable(strings.NewReader("models: {K80: 0.25}\nclasses:\n  fast: {K80: 2}\n  slow: {K80: 0.5}\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k80 := workload.TaskGroup{Count: 1, GPUs: 8, Models: []string{"K80"}}
	a, b := tj("a", 0, time.Hour, 0, k80), tj("b", 0, time.Hour, 0, k80)
	a.Type, b.Type = "fast", "slow"
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), GPUSpeeds: tab, Audit: true}, []trace.Job{a, b})
	runs := runTimes(r) // (scaling_test.go)
	if !slices.Equal(runs, []float64{1800, 7200}) {
		t.Errorf("run times %v, want 30 min and 2 h", runs)
	}
	if got := tab.ClassNames(); !slices.Equal(got, []string{"fast", "slow"}) || !tab.HasClass("fast") || tab.HasClass("") {
		t.Errorf("classes %v", got)
	}
}
