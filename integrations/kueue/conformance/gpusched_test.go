package conformance

import (
	"fmt"
	"testing"
)

// TestGpuschedSide plays every scenario on gpusched alone (no apiserver):
// the imports and the runs must work everywhere.
func TestGpuschedSide(t *testing.T) {
	for _, s := range Scenarios() {
		obs, err := RunGpusched(&s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for i, o := range obs {
			t.Logf("%s step %d: %s never=%v", s.Name, i+1, o, o.Never)
		}
	}
	_ = fmt.Sprint
}
