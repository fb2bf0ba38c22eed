package livepage

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

// The page's markup is stable for tests and scripts: the queue rows are
// <tr data-queue=NAME>, the waiting jobs <tr data-job=ID data-reason=TOKEN>,
// the boxes <div class="dom" data-level=LEVEL data-name=NAME> (racks
// <div class="dom rack" data-level="nvlink" data-name=NAME>), the host
// cells <div class="host" … data-host data-used data-gpus data-failed
// data-free data-stranded> holding a <span class="g CLASS"> per GPU. A
// script sets the body's data-cells and data-gpus to the host cells and
// GPU marks the browser's DOM holds.

const style = `body{font:13px sans-serif;margin:16px}table{border-collapse:collapse;margin-bottom:16px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}
.dom{display:inline-block;vertical-align:top;border:1px solid #888;margin:3px;padding:3px}
.dom>h4{margin:0 0 2px 0;padding:0 2px;font-size:11px;font-weight:normal}.dom>h4.stranded{color:#b45f06;font-weight:bold}
.host{display:inline-block;width:46px;margin:2px;padding:2px;border:1px solid #555;font-size:9px;overflow:hidden}
.host[data-stranded]:not([data-stranded="0"]){border:2px dashed #e69138}
.host[data-health="draining"],.host[data-cordoned]{border-style:dotted}.host[data-health="failed"]{opacity:.45}
.rack{background:#f4f4f4;border:2px solid #333;border-radius:3px}
.rack .host{display:block;width:120px;height:11px;margin:1px;padding:0 2px;white-space:nowrap}
.rack .host br{display:none}.rack .host .g{margin:1px 1px 0 1px}
.g{display:inline-block;width:8px;height:8px;margin:1px}
.g.used{background:#1f4e99}.g.part{background:#6d9eeb}.g.free{background:#ddd}.g.draining{background:#f1c232}.g.failed{background:#c00}
.legend span{margin-right:4px}.legend .sw{display:inline-block;width:14px;height:10px;vertical-align:middle}`

// markClass maps a Host.Marks letter to its mark's class.
var markClass = map[byte]string{'u': "used", 'p': "part", 'f': "free", 'd': "draining", 'x': "failed"}

// WriteHTML writes p as one HTML page (no external resources).
func (p *Page) WriteHTML(w io.Writer) error {
	b := bufio.NewWriter(w)
	e := html.EscapeString
	fmt.Fprintf(b, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gpusched %s</title><style>%s</style></head><body>", e(p.Title), style)
	fmt.Fprintf(b, "<h1>gpusched: %s</h1><p id=\"state\">%s</p>", e(p.Title), e(p.Status))
	if p.Cluster != nil {
		p.writeQueues(b)
		p.writePending(b)
		p.writeCluster(b)
	}
	b.WriteString(`<script>document.body.dataset.cells=document.querySelectorAll(".host").length;` +
		`document.body.dataset.gpus=document.querySelectorAll(".host .g").length;</script></body></html>`)
	return b.Flush()
}

// gpus formats a number of GPUs: whole numbers without a fraction.
func gpus(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(strconv.FormatFloat(x, 'f', 3, 64), "0"), ".")
}

func (p *Page) writeQueues(b *bufio.Writer) {
	b.WriteString(`<h2>Queues</h2><table id="queues"><tr><th class="l">queue</th><th>pending</th><th>admitted</th><th>running</th>` +
		`<th>GPU guarantee</th><th>GPUs used</th><th>reserved</th><th>borrowed</th></tr>`)
	for _, q := range p.Queues {
		name := q.Name
		if q.Depth == 0 {
			name = "(cluster)"
		}
		guarantee, borrowed := "", ""
		if q.Governed {
			guarantee, borrowed = gpus(q.Guarantee), gpus(q.Borrowed)
		}
		fmt.Fprintf(b, `<tr data-queue="%s"><td class="l" style="padding-left:%dpx">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			html.EscapeString(q.Name), 6+12*q.Depth, html.EscapeString(name), q.Pending, q.Admitted, q.Running, guarantee, gpus(q.Used), gpus(q.Reserved), borrowed)
	}
	b.WriteString("</table>")
}

func (p *Page) writePending(b *bufio.Writer) {
	e := html.EscapeString
	fmt.Fprintf(b, `<h2>Pending jobs (%d)</h2><table id="pending"><tr><th class="l">job</th><th class="l">queue</th><th class="l">reason</th><th class="l">why</th></tr>`, p.PendingTotal)
	for _, w := range p.Pending {
		fmt.Fprintf(b, `<tr data-job="%s" data-reason="%s"><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td></tr>`,
			e(w.Job), e(w.Reason), e(w.Job), e(w.Queue), e(w.Reason), e(w.Why))
	}
	if more := p.PendingTotal - len(p.Pending); more > 0 {
		fmt.Fprintf(b, `<tr><td class="l" colspan="4">… %d more</td></tr>`, more)
	}
	b.WriteString("</table>")
}

func (p *Page) writeCluster(b *bufio.Writer) {
	root := p.Cluster
	fmt.Fprintf(b, `<h2>Cluster (%d of %d GPUs free)</h2><p class="legend">`+
		`<span class="g used"></span>used <span class="g part"></span>in part used <span class="g free"></span>free `+
		`<span class="g draining"></span>draining <span class="g failed"></span>failed; a host's colour: `+
		`<span class="sw" style="background:hsl(215,60%%,95%%)"></span><span class="sw" style="background:hsl(215,60%%,50%%)"></span>its share of GPUs in use, `+
		`<span class="sw" style="background:hsl(30,90%%,75%%)"></span>orange, dashed: its free GPUs are stranded (fewer than any waiting job needs there)</p>`,
		root.Free, root.GPUs)
	if len(p.Stranded) > 0 {
		b.WriteString(`<table id="stranded"><tr><th class="l">level</th><th>stranded free GPUs</th><th>in domains</th><th>fewest a waiting job needs in one</th></tr>`)
		for _, s := range p.Stranded {
			need := strconv.Itoa(s.Need)
			if s.Need == 0 {
				need = ""
			} else if int64(s.Need) > 1<<40 { // int64: the constant overflows a 32-bit int
				need = "∞"
			}
			fmt.Fprintf(b, `<tr data-level="%s"><td class="l">%s</td><td>%d</td><td>%d</td><td>%s</td></tr>`, html.EscapeString(s.Level), html.EscapeString(s.Level), s.GPUs, s.Domains, need)
		}
		b.WriteString("</table>")
	}
	b.WriteString(`<div id="cluster">`)
	writeDomain(b, root)
	b.WriteString("</div>")
}

// writeDomain writes box d: its heading, its child boxes, its hosts.
func writeDomain(b *bufio.Writer, d *Domain) {
	e := html.EscapeString
	class := "dom"
	if d.Rack {
		class = "dom rack"
	}
	h4 := ""
	if d.Stranded > 0 {
		h4 = ` class="stranded"`
	}
	share := 0.0
	if d.Healthy > 0 {
		share = float64(d.Healthy-d.Free) / float64(d.Healthy)
	}
	fmt.Fprintf(b, `<div class="%s" data-level="%s" data-name="%s"><h4%s data-free="%d" data-stranded="%d" style="background:%s">%s %s: %d/%d free</h4>`,
		class, e(d.Level), e(d.Name), h4, d.Free, d.Stranded, colour(share, d.Stranded > 0), e(d.Level), e(d.Name), d.Free, d.Healthy)
	for i := range d.Domains {
		writeDomain(b, &d.Domains[i])
	}
	for i := range d.Hosts {
		writeHost(b, &d.Hosts[i])
	}
	b.WriteString("</div>")
}

// colour is the background of a cell or box whose share of GPUs is in
// use: white (idle) to blue (full), orange when its free GPUs are
// stranded.
func colour(share float64, stranded bool) string {
	hue, sat := 215, 60
	if stranded {
		hue, sat = 30, 90
	}
	return fmt.Sprintf("hsl(%d,%d%%,%d%%)", hue, sat, 95-int(share*45))
}

// writeHost writes host h's cell: coloured by the share of its GPUs in
// use, orange when its free GPUs are stranded; a mark per GPU.
func writeHost(b *bufio.Writer, h *Host) {
	e := html.EscapeString
	share := 0.0
	if h.GPUs > 0 {
		share = float64(h.Used) / float64(h.GPUs)
	}
	cordoned := ""
	if h.Cordoned {
		cordoned = ` data-cordoned="true"`
	}
	fmt.Fprintf(b, `<div class="host" title="%s (%s): %d/%d GPUs used, %d free (%d stranded), %d failed; %s" data-host="%s" data-used="%d" data-gpus="%d" data-failed="%d" data-free="%d" data-stranded="%d" data-health="%s"%s style="background:%s">%s<br>`,
		e(h.Name), e(h.Model), h.Used, h.GPUs, h.Free, h.Stranded, h.Failed, e(h.Health), e(h.Name), h.Used, h.GPUs, h.Failed, h.Free, h.Stranded, e(h.Health), cordoned,
		colour(share, h.Stranded > 0), e(h.Name))
	for i := 0; i < len(h.Marks); i++ {
		class, ok := markClass[h.Marks[i]]
		if !ok {
			class = "free"
		}
		fmt.Fprintf(b, `<span class="g %s"></span>`, class)
	}
	b.WriteString("</div>")
}
