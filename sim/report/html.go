package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	var b bytes.Buffer
	if err := writeHTML(&b, dir, title, runs); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, HTMLFile), b.Bytes(), 0o644)
}

func writeHTML(w io.Writer, dir, title string, runs []Run) error {
	esc := html.EscapeString
	fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}
thead th{background:#f0f0f0}
img{max-width:100%%;display:block;margin:1em 0}
</style></head>
<body>
<h1>%s</h1>
`, esc(title), esc(title))
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
