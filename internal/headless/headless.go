// Package headless runs the headless browser that the HTML tests of this
// repository render their pages with (the sim reports, the live page of
// gpusched serve and of the kube-scheduler plugin): chromium, which
// .ci/run installs. Tests skip, saying so, where none is installed.
package headless

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Browser returns the headless browser to render with (chromium,
// chromium-browser or google-chrome on PATH), or "" when none is
// installed.
func Browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Run runs browser headless on target with args (e.g. --dump-dom,
// --screenshot=FILE) and returns its standard output; it fails t on error
// or after 90 s. target is a URL (http://…, file://…) or a file's path.
// Scripts get 5 s of virtual time.
func Run(t testing.TB, browser, target string, args ...string) []byte {
	t.Helper()
	if !strings.Contains(target, "://") {
		target = "file://" + target
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, append(args, target)...)
	out, err := exec.CommandContext(ctx, browser, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", browser, args, err)
	}
	return out
}
