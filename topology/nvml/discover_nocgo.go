//go:build !cgo

package nvml

// DiscoverHost would discover this host through NVML, which needs cgo; in
// this build (without cgo) it always returns ErrNeedsCgo.
func DiscoverHost(opts Options) (*Result, error) {
	return nil, ErrNeedsCgo
}
