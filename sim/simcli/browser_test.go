package simcli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim/internal/simtest"
)

// TestCLIReportInBrowser: the report.html that sim compare --seeds
// itself writes, rendered by headless chromium, carries the run's
// configuration (flags, seeds, version), a definition for every metric
// row, and intervals in the per-seed and paired tables, in the DOM the
// browser built. It skips where no chromium is installed.
func TestCLIReportInBrowser(t *testing.T) {
	browser := simtest.Browser()
	if browser == "" {
		t.Skip("no chromium installed (apt-get install chromium): the CLI's report.html is not rendered")
	}
	dir := t.TempDir()
	if _, _, err := execCmd(t, Options{}, "compare", "--preset", "dgx-h100", "--trace", "synthetic:40", "--load", "1.2", "--orderings", "fifo,las:1,8",
		"--ckpt-interval", "1h", "--seeds", "1-3", "--no-plots", "--out", dir); err != nil {
		t.Fatal(err)
	}
	dom := string(simtest.Headless(t, browser, filepath.Join(dir, "report.html"), "--dump-dom"))
	section := func(open string) string {
		i := strings.Index(dom, open)
		if i < 0 {
			t.Errorf("the rendered report has no %s", open)
			return ""
		}
		close := "</table>"
		if strings.HasPrefix(open, "<dl") {
			close = "</dl>"
		}
		j := strings.Index(dom[i:], close)
		if j < 0 {
			t.Errorf("the rendered %s is not closed", open)
			return ""
		}
		return dom[i : i+j]
	}
	config := section(`<table id="config">`)
	for _, want := range []string{"<td>--orderings</td><td>fifo,las:1,8</td>", "<td>--seeds</td><td>1-3</td>", "<td>seeds</td><td>1, 2, 3</td>", "sim compare"} {
		if !strings.Contains(config, want) {
			t.Errorf("the rendered configuration lacks %q:\n%s", want, config)
		}
	}
	defs := section(`<dl id="definitions">`)
	if dts, dds := strings.Count(defs, "<dt>"), len(regexp.MustCompile(`<dd>[^<]{20,}</dd>`).FindAllString(defs, -1)); dts == 0 || dts != dds {
		t.Errorf("the rendered definitions: %d terms, %d definitions of 20 characters or more", dts, dds)
	}
	interval := regexp.MustCompile(`<td>[^<\[]+ \[[^<\]]+, [^<\]]+\]</td>`)
	seeds := section(`<table id="seeds">`)
	rows := strings.Count(seeds, "<tr><td>") - 1 // metric rows; the last counts the runs
	if n := len(interval.FindAllString(seeds, -1)); rows <= 0 || n != 2*rows {
		t.Errorf("the rendered seeds table: %d cells with an interval for %d metric rows × 2 orderings", n, rows)
	}
	paired := section(`<table id="paired">`)
	if !strings.Contains(paired, "las:1,8 − fifo") || len(interval.FindAllString(paired, -1)) != rows {
		t.Errorf("the rendered paired differences lack las:1,8 − fifo with an interval per metric:\n%s", paired)
	}
}
