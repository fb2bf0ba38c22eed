package report_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim/report"
)

// TestHTMLInBrowser writes a comparison's report.html and loads it in a
// real headless browser (Debian's chromium, which .ci/run installs): the
// summary table is in the page with a column per run, and every embedded
// plot decodes (the page's own check sets data-images-ok). It skips
// where no chromium is installed.
func TestHTMLInBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	dir := t.TempDir()
	runs := []report.Run{{Label: "seed-1", Result: simulate(t, 1)}, {Label: "seed-2", Result: simulate(t, 2)}}
	if err := report.WritePlots(dir, runs...); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(dir, "runs <compared>", runs...); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "<compared>") || strings.Count(string(page), "data:image/png;base64,") != 5 {
		t.Fatalf("report.html: title not escaped or not 5 embedded plots")
	}
	if browser == "" {
		t.Skip("no chromium installed (apt-get install chromium); the page was written but not rendered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=5000", "--dump-dom", "file://"+filepath.Join(dir, report.HTMLFile))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", browser, err)
	}
	dom := string(out)
	if m := regexp.MustCompile(`data-images-ok="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != "5" {
		t.Errorf("the browser decoded %v of 5 plots", m)
	}
	for _, r := range runs {
		if !strings.Contains(dom, "<th>"+r.Label+"</th>") {
			t.Errorf("no column for run %s in the rendered table", r.Label)
		}
	}
	if !strings.Contains(dom, "allocation / useful while jobs wait") {
		t.Error("the rendered table lacks the busy-window row")
	}
}
