package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/sim"
)

// HTMLFile is the name of the report WriteHTML writes.
const HTMLFile = "report.html"

// WriteHTML writes dir/report.html: one self-contained page (no file or
// network it needs besides itself) with the summary table of runs, one
// column per run, and the PNG plots WritePlots wrote into dir embedded as
// data URIs (those missing, e.g. with --no-plots, are left out). title
// heads the page. A small inline script marks the body with
// data-images-ok, the number of plots the browser decoded, so a headless
// browser can check the page. The output depends only on its inputs.
func WriteHTML(dir, title string, runs ...Run) error {
	return WriteHTMLPage(dir, Page{Title: title, Runs: runs})
}

// Page is what WriteHTMLPage shows.
type Page struct {
	Title string
	// Runs are the summary table's columns (none: no table, no plots).
	Runs []Run
	// Seeds, when set, adds a table of medians with 95% intervals over
	// seeds, one column per label (as WriteSeedTable).
	Seeds []SeedRuns
	// Provenance, when set, adds the configuration: version, every flag
	// given, input files with their SHA-256, seeds, and each run's own
	// settings.
	Provenance *sim.Provenance
}

// WriteHTMLPage writes dir/report.html as WriteHTML does, with what p
// adds: the intervals over seeds, the configuration, and the metric
// definitions (Definitions).
func WriteHTMLPage(dir string, p Page) error {
	var b bytes.Buffer
	if err := writeHTML(&b, dir, p); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, HTMLFile), b.Bytes(), 0o644)
}

func writeHTML(w io.Writer, dir string, p Page) error {
	esc := html.EscapeString
	title, runs := p.Title, p.Runs
	fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}
thead th{background:#f0f0f0}
img{max-width:100%%;display:block;margin:1em 0}
dt{font-weight:bold;margin-top:.4em}
</style></head>
<body>
<h1>%s</h1>
`, esc(title), esc(title))
	if len(p.Seeds) > 0 {
		writeSeedsHTML(w, p.Seeds)
	}
	if len(runs) > 0 {
		writeRunsHTML(w, runs)
		if err := writePlotsHTML(w, dir); err != nil {
			return err
		}
	}
	writeConfigHTML(w, p.Provenance, runs)
	writeDefinitionsHTML(w)
	_, err := fmt.Fprint(w, `<script>
window.addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("img.plot").forEach(function (i) { if (i.complete && i.naturalWidth > 0) n++; });
  document.body.setAttribute("data-images-ok", String(n));
});
</script>
</body></html>
`)
	return err
}

func writeRunsHTML(w io.Writer, runs []Run) {
	esc := html.EscapeString
	fmt.Fprint(w, "<table id=\"summary\">\n<thead><tr><th>metric</th>")
	for _, r := range runs {
		fmt.Fprintf(w, "<th>%s</th>", esc(r.Label))
	}
	fmt.Fprint(w, "</tr></thead>\n<tbody>\n")
	for _, rw := range rows {
		fmt.Fprintf(w, "<tr><td>%s</td>", esc(rw.name))
		for _, r := range runs {
			fmt.Fprintf(w, "<td>%s</td>", esc(rw.f(&r.Result.Summary)))
		}
		fmt.Fprint(w, "</tr>\n")
	}
	fmt.Fprint(w, "</tbody></table>\n")
}

func writePlotsHTML(w io.Writer, dir string) error {
	esc := html.EscapeString
	for _, name := range []string{Plots.Compare, Plots.Allocation, Plots.Queue, Plots.WaitCDF, Plots.JCTCDF} {
		png, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		alt := strings.TrimSuffix(name, ".png")
		fmt.Fprintf(w, "<h2>%s</h2>\n<img class=\"plot\" alt=\"%s\" src=\"data:image/png;base64,%s\">\n", esc(alt), esc(alt), base64.StdEncoding.EncodeToString(png))
	}
	return nil
}

// writeSeedsHTML writes the medians and 95% intervals over seeds.
func writeSeedsHTML(w io.Writer, labels []SeedRuns) {
	esc := html.EscapeString
	fmt.Fprint(w, "<h2>Medians over seeds [95% interval]</h2>\n<table id=\"seeds\">\n<thead><tr><th>metric</th>")
	stats := make([]map[string]Interval, len(labels))
	for i, l := range labels {
		fmt.Fprintf(w, "<th>%s</th>", esc(l.Label))
		stats[i] = SeedStats(l)
	}
	fmt.Fprint(w, "</tr></thead>\n<tbody>\n")
	for _, m := range SeedMetrics {
		fmt.Fprintf(w, "<tr><td>%s</td>", esc(m.Name))
		for i := range labels {
			iv := stats[i][m.Name]
			fmt.Fprintf(w, "<td>%s [%s, %s]</td>", esc(m.Fmt(iv.Median)), esc(m.Fmt(iv.Lo)), esc(m.Fmt(iv.Hi)))
		}
		fmt.Fprint(w, "</tr>\n")
	}
	fmt.Fprint(w, "<tr><td>seeds / interval coverage</td>")
	for i := range labels {
		iv := stats[i][SeedMetrics[0].Name]
		fmt.Fprintf(w, "<td>%d / %s</td>", iv.N, esc(pct(iv.Coverage)))
	}
	fmt.Fprint(w, "</tr>\n</tbody></table>\n<p>Intervals are distribution-free (order statistics of the per-seed values); each seed's runs are in seed-S/.</p>\n")
	if len(labels) < 2 {
		return
	}
	fmt.Fprintf(w, "<h2>Paired differences from %s [95%% interval]</h2>\n<table id=\"paired\">\n<thead><tr><th>metric</th>", esc(labels[0].Label))
	for i := 1; i < len(labels); i++ {
		fmt.Fprintf(w, "<th>%s − %s</th>", esc(labels[i].Label), esc(labels[0].Label))
		stats[i] = PairedStats(labels[0], labels[i])
	}
	fmt.Fprint(w, "</tr></thead>\n<tbody>\n")
	for _, m := range SeedMetrics {
		fmt.Fprintf(w, "<tr><td>%s</td>", esc(m.Name))
		for i := 1; i < len(labels); i++ {
			iv := stats[i][m.Name]
			fmt.Fprintf(w, "<td>%s [%s, %s]</td>", esc(signed(m.Fmt, iv.Median)), esc(signed(m.Fmt, iv.Lo)), esc(signed(m.Fmt, iv.Hi)))
		}
		fmt.Fprint(w, "</tr>\n")
	}
	fmt.Fprint(w, "</tbody></table>\n<p>Each difference is taken seed by seed (common random numbers: the same trace and draws), then summarised; an interval that excludes 0 is the policies' difference, not the seeds'.</p>\n")
}

// writeConfigHTML writes the configuration: version, flags given, inputs
// and seeds (p), and each run's own settings.
func writeConfigHTML(w io.Writer, p *sim.Provenance, runs []Run) {
	if p == nil {
		return
	}
	esc := html.EscapeString
	fmt.Fprint(w, "<h2>Configuration</h2>\n<table id=\"config\">\n<tbody>\n")
	kv := func(k, v string) { fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td></tr>\n", esc(k), esc(v)) }
	ver := p.Version
	if p.Commit != "" {
		ver += " commit " + p.Commit
		if p.Modified {
			ver += " (modified)"
		}
	}
	kv("version", strings.TrimSpace(ver+" "+p.GoVersion))
	if p.Program != "" {
		kv("program", p.Program)
	}
	if len(p.Registered) > 0 {
		kv("registered policies", strings.Join(p.Registered, ", "))
	}
	kv("command", p.Command)
	kv("config", p.Config)
	for _, name := range p.Set {
		kv("--"+name, p.Flags[name])
	}
	for _, in := range p.Inputs {
		kv("input --"+in.Flag, fmt.Sprintf("%s (%d bytes, sha256 %s)", in.Path, in.Bytes, in.SHA256))
	}
	if len(p.Seeds) > 0 {
		parts := make([]string, len(p.Seeds))
		for i, s := range p.Seeds {
			parts[i] = strconv.FormatUint(s, 10)
		}
		kv("seeds", strings.Join(parts, ", "))
	}
	for _, r := range runs {
		rp := r.Result.Summary.Provenance
		if rp == nil || len(rp.Run) == 0 {
			continue
		}
		keys := make([]string, 0, len(rp.Run))
		for k := range rp.Run {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + rp.Run[k]
		}
		kv("run "+r.Label, strings.Join(parts, ", "))
	}
	fmt.Fprint(w, "</tbody></table>\n<p>Every flag with its value, given or default, is in each run's provenance.json and summary.json.</p>\n")
}

// writeDefinitionsHTML writes what each metric of the summary table is.
func writeDefinitionsHTML(w io.Writer) {
	esc := html.EscapeString
	fmt.Fprint(w, "<h2>Metric definitions</h2>\n<dl id=\"definitions\">\n")
	for _, rw := range rows {
		fmt.Fprintf(w, "<dt>%s</dt><dd>%s</dd>\n", esc(rw.name), esc(Definitions[rw.name]))
	}
	fmt.Fprint(w, "</dl>\n")
}
