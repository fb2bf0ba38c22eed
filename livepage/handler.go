package livepage

import (
	"encoding/json"
	"net/http"
)

// Handler serves the page that page returns, built afresh per request:
// GET / as HTML, GET /state.json as the Page's JSON; other paths are not
// found. page runs in the request's goroutine: it builds the page where
// it may read the Scheduler (under the host's lock).
func Handler(page func() *Page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only: GET only", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = page().WriteHTML(w)
		case "/state.json":
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			_ = enc.Encode(page())
		default:
			http.NotFound(w, r)
		}
	})
}
