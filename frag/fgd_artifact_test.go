package frag

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestArtifactFragMatchesMeasure: ScoreArtifact's float fragmentation is
// the Measure's up to rounding, on random host states (8 GPUs, shares,
// CPU short of some classes, a model some classes do not accept), and
// artCost is the artifact's ⌊100·σ(ΔF/1000)⌋: 50 for no growth, 49 for a
// growth a hair above zero.
func TestArtifactFragMatchesMeasure(t *testing.T) {
	c, err := topology.Build(topology.Spec{
		Version: topology.SpecVersion, Name: "eight",
		Accelerators: []topology.AcceleratorSpec{{Model: "A"}, {Model: "B"}},
		Templates:    []topology.HostTemplate{{Name: "a", CPUMilli: 64000, MemoryMiB: 1 << 20, Accelerator: "A", GPUs: 8}},
		Hosts:        []topology.HostGroup{{Name: "h[0-1]", Template: "a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.ModelByName("B")
	d := Distribution{Classes: []Class{
		{Task{CPUMilli: 8000}, 0.2}, {Task{GPUs: 1, CPUMilli: 4000}, 0.3}, {Task{GPUMilli: 300, CPUMilli: 2000}, 0.25},
		{Task{GPUs: 4, CPUMilli: 32000}, 0.15}, {Task{GPUs: 1, CPUMilli: 1000, Models: []topology.ModelID{b}}, 0.1},
	}}
	pol, err := NewPolicy(FGD, Options{Distribution: d, Scoring: ScoreArtifact, TieBreak: TieLowestID})
	if err != nil {
		t.Fatal(err)
	}
	p := pol.(*policy)
	l := topology.NewLedger(c)
	p.bind(l)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		free := make([]int16, 8)
		for i := range free {
			free[i] = []int16{0, 1000, int16(rng.IntN(1001))}[rng.IntN(3)]
		}
		cpu := rng.Int64N(64001)
		exact := float64(p.meas.frag(c.HostModel(0), cpu, 1<<20, true, free)) / float64(p.meas.wsum)
		if got := p.artFrag(c.HostModel(0), cpu, free); math.Abs(got-exact) > 1e-6*max(1, exact) {
			t.Fatalf("free %v cpu %d: artifact %v, measure %v", free, cpu, got, exact)
		}
	}
	if artCost(100, 100) != -50 || artCost(100, 100+1e-9) != -49 || artCost(100, 0) != -52 {
		t.Errorf("artCost: %v %v %v, want -50 -49 -52", artCost(100, 100), artCost(100, 100+1e-9), artCost(100, 0))
	}
}
