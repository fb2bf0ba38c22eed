package queue_test

import (
	"math"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// TestNoDecay: under FairTree with NoDecay (Slurm's
// PriorityDecayHalfLife=0) usage is kept however long ago it was used;
// with a half-life it halves per half-life.
func TestNoDecay(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		fair queue.Fairness
		want float64
	}{{queue.Fairness{Policy: queue.FairTree, NoDecay: true, HalfLife: time.Hour}, 100}, {queue.Fairness{Policy: queue.FairTree, HalfLife: time.Hour}, 50}} {
		tree, err := queue.Build(queue.Config{Fairness: tc.fair, Root: queue.Node{Children: []queue.Node{{Name: "a"}}}},
			queue.Capacity{Resources: workload.Resources{GPUMilli: 8000, CPUMilli: 8000, MemoryMiB: 8000}})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := tree.Lookup("a")
		if err := tree.RestoreUsage(a, fairshare.Usage{Value: 100, At: t0}); err != nil {
			t.Fatal(err)
		}
		tree.Advance(t0.Add(time.Hour))
		if got := tree.History(a).Value; math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%+v: usage after an hour %v, want %v", tc.fair, got, tc.want)
		}
	}
}
