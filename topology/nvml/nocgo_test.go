//go:build !cgo

package nvml

import (
	"errors"
	"testing"
)

// Without cgo there is no NVML: DiscoverHost says so and how to go on.
func TestDiscoverHostNeedsCgo(t *testing.T) {
	res, err := DiscoverHost(Options{})
	if res != nil || !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("DiscoverHost = %v, %v", res, err)
	}
	want := "NVML discovery needs a cgo build of gpusched (CGO_ENABLED=1 and a C compiler); use a cluster file or a preset"
	if err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
