package gang

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// TestTrialPlacementLeavesNoTrace checks that placing requests without
// committing them leaves a placer as it was: after any number of Place
// calls (which trial-allocate and release, and report both to a tracking
// node policy such as gpu-clustering), a used placer places the next
// request exactly as a fresh one does on the same ledger.
func TestTrialPlacementLeavesNoTrace(t *testing.T) {
	kinds := []TaskKind{TaskWhole, TaskWhole, TaskShare, TaskMIG, TaskCPU}
	for _, name := range []string{"gpu-clustering", "fgd", "gpu-packing", "best-fit"} {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				c := randomCluster(t)
				l := topology.NewLedger(c)
				randomFill(t, l)
				used := newPolicy(t, name, c)
				var p Placement
				for i, n := 0, rapid.IntRange(1, 4).Draw(t, "warm"); i < n; i++ {
					r, err := NewRequest(c, randomJob(t, c, "w", kinds))
					if err == nil {
						used.Place(l, r, &p)
					}
				}
				r, err := NewRequest(c, randomJob(t, c, "j", kinds))
				if err != nil {
					return
				}
				var p1, p2 Placement
				x1 := used.Place(l, r, &p1)
				x2 := newPolicy(t, name, c).Place(l, r, &p2)
				if (x1 == nil) != (x2 == nil) || x1 != nil && *x1 != *x2 {
					t.Fatalf("used placer %v, fresh %v", x1, x2)
				}
				if !reflect.DeepEqual(p1.Claims, p2.Claims) {
					t.Fatalf("used placer:\n%+v\nfresh:\n%+v", p1.Claims, p2.Claims)
				}
			})
		})
	}
}
