package report_test

import (
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/report"
)

// TestHTMLInBrowser writes a comparison's report.html, with intervals
// over seeds, paired differences and the configuration, and loads it in a
// real headless browser (Debian's chromium, which .ci/run installs): the
// summary table is in the page with a column per run, every embedded plot
// decodes (the page's own check sets data-images-ok), and the rendered DOM
// holds the configuration (version, flags, input hashes, seeds), one
// definition per summary row, and the intervals; a screenshot of the page
// is taken into t.TempDir() and must show more than a blank page. It skips
// where no chromium is installed.
func TestHTMLInBrowser(t *testing.T) {
	browser := simtest.Browser()
	dir := t.TempDir()
	runs := []report.Run{{Label: "seed-1", Result: simulate(t, 1)}, {Label: "seed-2", Result: simulate(t, 2)}}
	if err := report.WritePlots(dir, runs...); err != nil {
		t.Fatal(err)
	}
	seeds := []report.SeedRuns{{Label: "fifo"}, {Label: "other"}}
	for s := range uint64(3) {
		seeds[0].Runs = append(seeds[0].Runs, simulate(t, 10+s).Summary)
		seeds[1].Runs = append(seeds[1].Runs, simulate(t, 20+s).Summary)
	}
	prov := &sim.Provenance{Version: "v9.8.7", Commit: "cafe01", Command: "gpusched sim compare", Config: "0123456789ab",
		Flags: map[string]string{"ordering": "srtf", "seeds": "3"}, Set: []string{"ordering", "seeds"}, Seeds: []uint64{10, 11, 12},
		Inputs: []sim.InputFile{{Flag: "trace", Path: "t.csv", SHA256: "feedbeef", Bytes: 3}}}
	if err := report.WriteHTMLPage(dir, report.Page{Title: "runs <compared>", Runs: runs, Seeds: seeds, Provenance: prov}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, report.HTMLFile)
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "<compared>") || strings.Count(string(page), "data:image/png;base64,") != 5 {
		t.Fatalf("report.html: title not escaped or not 5 embedded plots")
	}
	if browser == "" {
		t.Skip("no chromium installed (apt-get install chromium); the page was written but not rendered")
	}
	headless := func(args ...string) []byte {
		t.Helper()
		return simtest.Headless(t, browser, file, args...)
	}
	dom := string(headless("--dump-dom"))
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
	checkRenderedSections(t, dom)
	shot := filepath.Join(t.TempDir(), "report.png")
	headless("--screenshot="+shot, "--window-size=1280,2400")
	checkScreenshot(t, shot)
}

// checkRenderedSections checks the sections of a rendered report.html
// that WriteHTMLPage's Seeds and Provenance add, and its definitions.
func checkRenderedSections(t *testing.T, dom string) {
	t.Helper()
	section := func(open, close string) string {
		i := strings.Index(dom, open)
		if i < 0 {
			t.Errorf("the rendered page has no %s", open)
			return ""
		}
		j := strings.Index(dom[i:], close)
		if j < 0 {
			t.Errorf("the rendered %s is not closed", open)
			return ""
		}
		return dom[i : i+j]
	}
	config := section(`<table id="config">`, "</table>")
	for _, want := range []string{"v9.8.7 commit cafe01", "<td>--ordering</td><td>srtf</td>", "<td>--seeds</td><td>3</td>",
		"t.csv (3 bytes, sha256 feedbeef)", "<td>seeds</td><td>10, 11, 12</td>", "0123456789ab", "gpusched sim compare"} {
		if !strings.Contains(config, want) {
			t.Errorf("the rendered configuration lacks %q", want)
		}
	}
	defs := section(`<dl id="definitions">`, "</dl>")
	dts, dds := strings.Count(defs, "<dt>"), regexp.MustCompile(`<dd>[^<]{20,}</dd>`).FindAllString(defs, -1)
	if rowsInTable := strings.Count(section(`<table id="summary">`, "</table>"), "<tr><td>"); dts == 0 || dts != rowsInTable || len(dds) != dts {
		t.Errorf("the rendered definitions: %d terms, %d definitions of 20 characters or more, for %d summary rows", dts, len(dds), rowsInTable)
	}
	interval := regexp.MustCompile(`<td>[^<\[]+ \[[^<\]]+, [^<\]]+\]</td>`)
	seedRows := strings.Count(section(`<table id="seeds">`, "</table>"), "<tr><td>")
	if n := len(interval.FindAllString(section(`<table id="seeds">`, "</table>"), -1)); n == 0 || n != 2*(seedRows-1) {
		t.Errorf("the rendered seeds table: %d cells with an interval for %d metric rows × 2 labels", n, seedRows-1)
	}
	paired := section(`<table id="paired">`, "</table>")
	if !strings.Contains(paired, "<th>other − fifo</th>") || len(interval.FindAllString(paired, -1)) != seedRows-1 {
		t.Errorf("the rendered paired differences lack a column other − fifo with an interval per metric: %q", paired)
	}
}

// checkScreenshot checks that a screenshot is a PNG of the window's size
// with more than a few colours (text, tables and plots drawn).
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	colours := map[color.RGBA]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if b.Dx() < 1000 || b.Dy() < 2000 || len(colours) < 16 {
		t.Errorf("screenshot %s: %v, %d colours sampled: not the rendered report", path, b, len(colours))
	}
}
