package extproc_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/sim/policy/extproc"
)

// TestPythonAllocatorMatchesGo: python/examples/gavel_maxmin.py (pure
// Python, one LP) reaches the max-min value fairshare.HeteroMaxMin does,
// on random problems of up to 8 groups over 3 models, within what it
// may use; it reports the cost per call.
func TestPythonAllocatorMatchesGo(t *testing.T) {
	a, err := extproc.StartAllocator([]string{python(t), example(t, "gavel_maxmin.py")}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Name() != "gavel-maxmin-python" {
		t.Errorf("name %q", a.Name())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := fairshare.HeteroCluster{Models: []string{"V100", "P100", "K80"}, GPUs: []int{36, 36, 36}}
	for trial := range 30 {
		var jobs []fairshare.HeteroJob
		for k := range 1 + rng.IntN(8) {
			jobs = append(jobs, fairshare.HeteroJob{ID: fmt.Sprintf("g%d", k), GPUs: 1 << rng.IntN(4), Count: 1 + rng.IntN(20),
				Throughput: []float64{1, 0.3 + 2*rng.Float64(), 0.1 + 1.5*rng.Float64()}})
		}
		want, err := fairshare.HeteroMaxMin(jobs, c)
		if err != nil {
			t.Fatal(err)
		}
		x, err := a.Allocate(jobs, c)
		if err != nil {
			t.Fatal(err)
		}
		// The Python rows' smallest normalised throughput, by the Go
		// equal shares (eff / normalised of the Go allocation).
		got := math.Inf(1)
		used := make([]float64, 3)
		for k, j := range jobs {
			var eff, goEff float64
			for m := range 3 {
				eff += x[k][m] * j.Throughput[m]
				goEff += want.Time[k][m] * j.Throughput[m]
				used[m] += float64(j.Count*j.GPUs) * x[k][m]
			}
			if want.Normalised[k] > 0 {
				got = min(got, eff/(goEff/want.Normalised[k]))
			}
		}
		if math.Abs(got-want.MinNormalised) > 1e-6*max(1, want.MinNormalised) {
			t.Errorf("trial %d: min normalised Python %.9f, Go %.9f", trial, got, want.MinNormalised)
		}
		for m, u := range used {
			if u > float64(c.GPUs[m])+1e-6 {
				t.Errorf("trial %d: model %s: %g GPUs allocated", trial, c.Models[m], u)
			}
		}
	}
	n, spent := a.CallStats()
	t.Logf("%d allocate calls, %v per call", n, spent/time.Duration(max(n, 1)))
	if _, err := a.Allocate([]fairshare.HeteroJob{{ID: "x", GPUs: 1, Throughput: []float64{1}}}, c); err == nil || !strings.Contains(err.Error(), "allocate") {
		t.Errorf("a malformed request: %v", err)
	}
}
