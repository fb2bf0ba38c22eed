package policy_test

import (
	"strings"
	"testing"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim/policy"
)

// Names are unique across kinds, never a built-in's, and listed sorted.
func TestRegistryNames(t *testing.T) {
	var r policy.Registry
	d := func(string, uint64) (queue.Demotion, error) { return queue.LAS{Thresholds: []float64{1}}, nil }
	for _, c := range []struct {
		name, want string
	}{{"srtf", "built-in"}, {"best-fit", "built-in"}, {"a:b", "without ':'"}, {"", "non-empty"}} {
		if err := r.Demotion(c.name, d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.name, err)
		}
	}
	if err := r.Demotion("zeta", d); err != nil {
		t.Fatal(err)
	}
	if err := r.Demotion("alpha", d); err != nil {
		t.Fatal(err)
	}
	if err := r.Placer("zeta", nil); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate across kinds: %v", err)
	}
	if got := r.Orderings(); strings.Join(got, ",") != "alpha,zeta" {
		t.Errorf("Orderings %v", got)
	}
	var nilReg *policy.Registry
	if _, ok := nilReg.LookupOrdering("x"); ok || nilReg.Placers() != nil {
		t.Error("a nil Registry is empty")
	}
}
