package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/livepage"
)

// The live page (issue 26, deliver 3): with Args.LiveAddress set, scheduler
// mode serves one read-only page of what its Scheduler holds, rendered by
// the root module's package livepage (the page gpusched serve shows for a
// saved state): the queues with their guarantee, usage and borrowing, the
// pending jobs with their reason token and reason, and the cluster as
// nested boxes per network domain (each topology level, e.g. block and
// ToR) holding one cell per host coloured by occupancy (orange where its
// free GPUs are stranded), with a mark per GPU; multi-node NVLink domains
// (GB200 racks) are drawn as racks. Its JSON is at /state.json. Only the
// leader runs cycles: a standby's page says so.

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

// pageHandler returns the live page's handler (package livepage): GET /
// the page, GET /state.json its JSON.
func (h *host) pageHandler() http.Handler {
	return livepage.Handler(h.livePage)
}

// livePage builds the page of the last cycle. It holds mu while it reads
// the Scheduler.
func (h *host) livePage() *livepage.Page {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := livepage.Options{Title: "profile " + h.profile}
	if h.s == nil || h.topo == nil {
		return &livepage.Page{Title: o.Title, Status: "No gpusched cycle ran yet (this replica does not lead, or there is no GPU topology)."}
	}
	if h.refused != nil {
		o.Status = "Refused: " + h.refused.Error()
	}
	return livepage.Build(h.s, livepage.Cycle{At: h.page.at, Pending: h.page.pending, Stats: h.page.stats}, o)
}

// writePage renders the page.
func (h *host) writePage(w io.Writer) {
	_ = h.livePage().WriteHTML(w)
}
