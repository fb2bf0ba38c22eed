package plugin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// The live page (issue 26, deliver 3): with Args.LiveAddress set, scheduler
// mode serves one read-only HTML page of what its Scheduler holds: the
// queues with their guarantee, usage and borrowing, the pending jobs with
// their reason token and reason, and the cluster as nested boxes per
// network domain (each topology level, e.g. block and ToR) holding one
// cell per host coloured by occupancy, with a mark per GPU (used, free,
// failed); multi-node NVLink domains (GB200 racks) are drawn as racks.
// Only the leader runs cycles: a standby's page says so.

// pageRows caps the pending jobs the page lists.
const pageRows = 500

// board keeps what the page shows of the last cycle; the cycle writes it
// (record), the page reads it under the host's mu.
type board struct {
	at      time.Time
	pending []gpusched.Pending
	stats   *gpusched.CycleStats
}

// record keeps cycle d's rows and figures (shared with the Decision,
// which the host does not change).
func (b *board) record(d *gpusched.Decision) {
	b.at, b.pending, b.stats = d.Now, d.Pending, d.Stats
}

// servePage serves the live page on addr until ctx ends.
func (h *host) servePage(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s args: liveAddress %q: %w", Name, addr, err)
	}
	srv := &http.Server{Handler: h.pageHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error(err, "Live page server stopped", "address", addr)
		}
	}()
	h.log.Info("Serving the live page", "address", l.Addr().String())
	return nil
}

// pageHandler returns the live page's handler: GET / only.
func (h *host) pageHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		h.writePage(w)
	})
}

// writePage renders the page. It holds mu while it reads the Scheduler.
func (h *host) writePage(w io.Writer) {
	var b strings.Builder
	h.mu.Lock()
	h.renderPage(&b)
	h.mu.Unlock()
	_, _ = io.WriteString(w, b.String())
}

const pageStyle = `body{font:13px sans-serif;margin:16px}table{border-collapse:collapse;margin-bottom:16px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td.l,th.l{text-align:left}
.dom{display:inline-block;vertical-align:top;border:1px solid #888;margin:3px;padding:3px}
.dom>h4{margin:0 0 2px 0;font-size:11px;font-weight:normal}
.host{display:inline-block;width:46px;margin:2px;padding:2px;border:1px solid #555;font-size:9px;overflow:hidden}
.rack .host{display:block}.g{display:inline-block;width:8px;height:8px;margin:1px}
.g.used{background:#1f4e99}.g.free{background:#ddd}.g.failed{background:#c00}
.legend span{margin-right:12px}`

// renderPage writes the page under mu.
func (h *host) renderPage(b *strings.Builder) {
	fmt.Fprintf(b, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gpusched %s</title><style>%s</style></head><body>", html.EscapeString(h.profile), pageStyle)
	fmt.Fprintf(b, "<h1>gpusched: profile %s</h1>", html.EscapeString(h.profile))
	switch {
	case h.s == nil || h.topo == nil:
		b.WriteString(`<p id="state">No gpusched cycle ran yet (this replica does not lead, or there is no GPU topology).</p></body></html>`)
		return
	case h.refused != nil:
		fmt.Fprintf(b, `<p id="state">Refused: %s</p>`, html.EscapeString(h.refused.Error()))
	default:
		fmt.Fprintf(b, `<p id="state">Last cycle %s.</p>`, html.EscapeString(h.page.at.UTC().Format(time.RFC3339)))
	}
	h.renderQueues(b)
	h.renderPending(b)
	h.renderCluster(b)
	b.WriteString(`<script>document.body.dataset.cells=document.querySelectorAll(".host").length;` +
		`document.body.dataset.gpus=document.querySelectorAll(".host .g").length;</script></body></html>`)
}

// renderQueues writes the queue table: every queue of the tree with its
// GPUs (guarantee, used, reserved, borrowed) and jobs.
func (h *host) renderQueues(b *strings.Builder) {
	views := h.s.Queues()
	b.WriteString(`<h2>Queues</h2><table id="queues"><tr><th class="l">queue</th><th>pending</th><th>admitted</th><th>running</th>` +
		`<th>GPU guarantee</th><th>GPUs used</th><th>reserved</th><th>borrowed</th></tr>`)
	var gpus []gpusched.QueueGPUs
	if h.page.stats != nil {
		gpus = h.page.stats.Queues
	}
	for i, v := range views {
		name := v.Queue
		if v.Depth == 0 {
			name = "(cluster)"
		}
		nominal, used, reserved, borrowed := "", "", "", ""
		if i < len(gpus) && gpus[i].Queue == v.Queue {
			g := gpus[i]
			used, reserved = fmtGPUs(g.Used), fmtGPUs(g.Reserved)
			if g.Governed {
				nominal, borrowed = fmtGPUs(g.Nominal), fmtGPUs(g.Borrowed)
			}
		}
		fmt.Fprintf(b, `<tr data-queue="%s"><td class="l" style="padding-left:%dpx">%s</td><td>%d</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			html.EscapeString(v.Queue), 6+12*v.Depth, html.EscapeString(name), v.Pending, v.Admitted, v.Running, nominal, used, reserved, borrowed)
	}
	b.WriteString("</table>")
}

func fmtGPUs(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", x), "0"), ".")
}

// renderPending writes the pending jobs of the last cycle with their
// reason token and reason.
func (h *host) renderPending(b *strings.Builder) {
	rows := h.page.pending
	fmt.Fprintf(b, `<h2>Pending jobs (%d)</h2><table id="pending"><tr><th class="l">job</th><th class="l">queue</th><th class="l">reason</th><th class="l">why</th></tr>`, len(rows))
	for i, p := range rows {
		if i == pageRows {
			fmt.Fprintf(b, `<tr><td class="l" colspan="4">… %d more</td></tr>`, len(rows)-pageRows)
			break
		}
		fmt.Fprintf(b, `<tr data-job="%s" data-reason="%s"><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td></tr>`,
			html.EscapeString(p.Job), p.Reason.Token(), html.EscapeString(p.Job), html.EscapeString(p.Queue), p.Reason.Token(), html.EscapeString(p.Reason.String()))
	}
	b.WriteString("</table>")
}

// renderCluster writes the cluster picture: the network tree from the
// root, a box per domain, a cell per host; then the multi-node NVLink
// domains as racks.
func (h *host) renderCluster(b *strings.Builder) {
	c, l := h.topo.Cluster, h.s.Ledger()
	root := c.DomainsAt(c.LevelCluster())[0]
	fmt.Fprintf(b, `<h2>Cluster (%d of %d GPUs free)</h2><p class="legend"><span class="g used"></span> used <span class="g free"></span> free <span class="g failed"></span> failed; a host's colour: its share of GPUs in use</p><div id="cluster">`,
		l.FreeGPUs(root), c.NumGPUs())
	h.renderDomain(b, root)
	b.WriteString("</div>")
	var racks []topology.DomainID
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		if hostsOf(c, d) > 1 {
			racks = append(racks, d)
		}
	}
	if len(racks) == 0 {
		return
	}
	b.WriteString(`<h2>NVLink domains</h2><div id="nvlink">`)
	for _, d := range racks {
		fmt.Fprintf(b, `<div class="dom rack" data-level="nvlink" data-name="%s"><h4>%s</h4>`, html.EscapeString(c.DomainName(d)), html.EscapeString(c.DomainName(d)))
		last := topology.HostID(-1)
		for _, g := range c.DomainGPUs(d) {
			if hid := c.GPUHost(g); hid != last {
				last = hid
				h.renderHost(b, hid)
			}
		}
		b.WriteString("</div>")
	}
	b.WriteString("</div>")
}

// hostsOf counts the hosts of fabric domain d.
func hostsOf(c *topology.Cluster, d topology.DomainID) int {
	n, last := 0, topology.HostID(-1)
	for _, g := range c.DomainGPUs(d) {
		if hid := c.GPUHost(g); hid != last {
			n, last = n+1, hid
		}
	}
	return n
}

// renderDomain writes network (or cluster) domain d: its child domains,
// or its hosts at the innermost level.
func (h *host) renderDomain(b *strings.Builder, d topology.DomainID) {
	c, l := h.topo.Cluster, h.s.Ledger()
	info := c.Domain(d)
	fmt.Fprintf(b, `<div class="dom" data-level="%s" data-name="%s"><h4>%s %s: %d/%d free</h4>`,
		html.EscapeString(c.LevelName(info.Level)), html.EscapeString(info.Name), html.EscapeString(c.LevelName(info.Level)),
		html.EscapeString(info.Name), l.FreeGPUs(d), l.HealthyGPUs(d))
	nets := false
	for _, ch := range c.DomainChildren(d) {
		if c.DomainKindOf(ch) == topology.KindNetwork {
			nets = true
			h.renderDomain(b, ch)
		}
	}
	if !nets {
		for _, hid := range c.DomainHostList(d) {
			h.renderHost(b, hid)
		}
	}
	b.WriteString("</div>")
}

// renderHost writes host hid's cell: coloured by the share of its GPUs in
// use, a mark per GPU.
func (h *host) renderHost(b *strings.Builder, hid topology.HostID) {
	c, l := h.topo.Cluster, h.s.Ledger()
	first, n := c.HostGPUs(hid)
	used, failed := 0, 0
	var marks strings.Builder
	for i := range n {
		st := l.GPU(first + topology.GPUID(i))
		class := "free"
		switch {
		case st.Health == topology.Failed:
			class = "failed"
			failed++
		case st.Mode != topology.ModeFree:
			class = "used"
			used++
		}
		fmt.Fprintf(&marks, `<span class="g %s"></span>`, class)
	}
	share := 0.0
	if n > 0 {
		share = float64(used) / float64(n)
	}
	// White (idle) to blue (full); a host in part used is where
	// fragmentation lives.
	light := 95 - int(share*45)
	name := c.HostName(hid)
	fmt.Fprintf(b, `<div class="host" title="%s: %d/%d GPUs used, %d failed" data-host="%s" data-used="%d" data-gpus="%d" data-failed="%d" style="background:hsl(215,60%%,%d%%)">%s<br>%s</div>`,
		html.EscapeString(name), used, n, failed, html.EscapeString(name), used, n, failed, light, html.EscapeString(name), marks.String())
}
