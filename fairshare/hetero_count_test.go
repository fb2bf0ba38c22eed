package fairshare_test

import (
	"math"
	"testing"

	"github.com/gpusched/gpusched/fairshare"
)

// TestHeteroMaxMinCount: jobs grouped by Count get the allocation the
// same jobs get one by one. Three V100s, three K80s; two jobs of type a
// (V100 1, K80 0.2) and three of type b (V100 1, K80 0.9), one GPU each.
// Equal shares: 0.5 of each model, a 0.6 and b 0.95; the max-min gives a
// α of a V100 and b 1 − 2α/3, equal normalised throughputs at α = 0.5125.
func TestHeteroMaxMinCount(t *testing.T) {
	c := fairshare.HeteroCluster{Models: []string{"V100", "K80"}, GPUs: []int{3, 3}}
	a, b := []float64{1, 0.2}, []float64{1, 0.9}
	var one []fairshare.HeteroJob
	for _, id := range []string{"a1", "a2"} {
		one = append(one, fairshare.HeteroJob{ID: id, GPUs: 1, Throughput: a})
	}
	for _, id := range []string{"b1", "b2", "b3"} {
		one = append(one, fairshare.HeteroJob{ID: id, GPUs: 1, Throughput: b})
	}
	grouped := []fairshare.HeteroJob{{ID: "a", GPUs: 1, Throughput: a, Count: 2}, {ID: "b", GPUs: 1, Throughput: b, Count: 3}}
	x, err := fairshare.HeteroMaxMin(one, c)
	if err != nil {
		t.Fatal(err)
	}
	g, err := fairshare.HeteroMaxMin(grouped, c)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x.MinNormalised-g.MinNormalised) > 1e-6 {
		t.Fatalf("min normalised %.6f one by one, %.6f grouped", x.MinNormalised, g.MinNormalised)
	}
	// The grouped rows use no more than the cluster: 2·a + 3·b ≤ 3 per model.
	for m := range c.GPUs {
		if used := 2*g.Time[0][m] + 3*g.Time[1][m]; used > 3+1e-6 {
			t.Errorf("model %s: %.4f GPUs used, 3 exist", c.Models[m], used)
		}
	}
	// The second stage's sum of normalised throughputs is the same:
	// each group counts Count times.
	var sx float64
	for _, v := range x.Normalised {
		sx += v
	}
	if sg := 2*g.Normalised[0] + 3*g.Normalised[1]; math.Abs(sx-sg) > 1e-5 {
		t.Errorf("sum of normalised throughputs %.6f one by one, %.6f grouped", sx, sg)
	}
	if _, err := fairshare.HeteroMaxMin([]fairshare.HeteroJob{{ID: "x", GPUs: 1, Throughput: a, Count: -1}}, c); err == nil {
		t.Error("a negative count was accepted")
	}
}
