package simtest

import (
	"testing"

	"github.com/gpusched/gpusched/internal/headless"
)

// Browser returns the headless browser the HTML report tests render with
// (internal/headless.Browser), or "" when none is installed.
func Browser() string { return headless.Browser() }

// Headless runs browser headless on the page file with args (e.g.
// --dump-dom) and returns its standard output (internal/headless.Run);
// it fails t on error or after 90 s.
func Headless(t testing.TB, browser, file string, args ...string) []byte {
	t.Helper()
	return headless.Run(t, browser, file, args...)
}
