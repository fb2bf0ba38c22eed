package frag

import (
	"math"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestLearnArtifact: with Labels, GPU tasks of one model set but two
// labels are two classes (CPU-only tasks ignore labels); with
// ArtifactOrder, classes of equal count come by decreasing CPU, share,
// GPU count and label, and the cut-off follows that order.
func TestLearnArtifact(t *testing.T) {
	v := []topology.ModelID{1, 2}
	tasks := []Task{
		{GPUs: 1, CPUMilli: 4000, Models: v}, {GPUs: 1, CPUMilli: 4000, Models: v}, {GPUs: 1, CPUMilli: 4000, Models: v},
		{GPUMilli: 500, CPUMilli: 2000}, {GPUMilli: 500, CPUMilli: 2000},
		{CPUMilli: 8000}, {CPUMilli: 8000},
	}
	labels := []string{"A|B", "A|B|B", "A|B", "", "", "x", "y"}
	d, err := Learn(tasks, LearnOptions{Coverage: 1})
	if err != nil || len(d.Classes) != 3 {
		t.Fatalf("without labels: %v classes, %v; want 3", len(d.Classes), err)
	}
	d, err = Learn(tasks, LearnOptions{Coverage: 1, Labels: labels, ArtifactOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	// Counts: A|B 2, share 2, CPU-only 2 (labels ignored), A|B|B 1. Equal
	// counts by decreasing CPU: the CPU-only class (8000), the GPU class
	// (4000), the share (2000).
	want := []struct {
		cpu int64
		w   float64
	}{{8000, 2.0 / 7}, {4000, 2.0 / 7}, {2000, 2.0 / 7}, {4000, 1.0 / 7}}
	if len(d.Classes) != len(want) {
		t.Fatalf("with labels: %d classes %+v, want %d", len(d.Classes), d.Classes, len(want))
	}
	for i, w := range want {
		if c := d.Classes[i]; c.Task.CPUMilli != w.cpu || math.Abs(c.Weight-w.w) > 1e-12 {
			t.Errorf("class %d: %+v, want CPU %d weight %.4f", i, c, w.cpu, w.w)
		}
	}
	// A cut-off at 6 of 7 tasks keeps the first three, renormalised.
	d, _ = Learn(tasks, LearnOptions{Coverage: 0.8, Labels: labels, ArtifactOrder: true})
	if len(d.Classes) != 3 || math.Abs(d.Classes[0].Weight-1.0/3) > 1e-12 {
		t.Errorf("coverage 0.8: %+v, want three classes of weight 1/3", d.Classes)
	}
	if _, err := Learn(tasks, LearnOptions{Labels: labels[:2]}); err == nil {
		t.Error("2 labels for 7 tasks accepted")
	}
}
