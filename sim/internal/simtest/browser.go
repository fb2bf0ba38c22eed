package simtest

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// Browser returns the headless browser the HTML report tests render with
// (chromium, chromium-browser or google-chrome on PATH), or "" when none
// is installed.
func Browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Headless runs browser headless on the page file with args (e.g.
// --dump-dom) and returns its standard output; it fails t on error or
// after 90 s.
func Headless(t testing.TB, browser, file string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, append(args, "file://"+file)...)
	out, err := exec.CommandContext(ctx, browser, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", browser, args, err)
	}
	return out
}
