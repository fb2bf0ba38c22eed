package plugin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/internal/headless"
	"github.com/gpusched/gpusched/livepage"
)

// liveHost is a test host on three nodes in two ToRs: n1 and n2 in tor-a,
// n3 in tor-b, whose GPU 7 failed (the node names it). Queue a runs a1
// (8 GPUs) and a2 (4) and a3 (2) waits for quota.
func liveHost(t *testing.T) (*host, *fakeIO) {
	t.Helper()
	tor := func(name, d string) *v1.Node {
		return gpuNode(name, 8, "NVIDIA-H100-80GB-HBM3", map[string]string{"net.example.com/tor": d})
	}
	n3 := withLostGPUs(tor("n3", "tor-b"), 7, "7")
	h, io, _, _ := metricsHost(t, twoQueues, tor("n1", "tor-a"), tor("n2", "tor-a"), n3)
	h.args.TopologyLevels = defaultArgs("tor").TopologyLevels
	qa := map[string]string{DefaultQueueLabel: "a"}
	io.pods = []*v1.Pod{schedPod("a1", 8, qa), schedPod("a2", 4, qa)}
	h.cycle(context.Background())
	bindAll(t, h, io)
	io.pods = append(io.pods, schedPod("a3", 2, qa))
	h.cycle(context.Background())
	return h, io
}

// TestLivePage (issue 26, deliver 3): the page lists the queues with
// their guarantee, usage and borrowing, the pending jobs with their
// reason token, and the cluster: a box per ToR, a cell per host with a
// mark per GPU (the failed one marked).
func TestLivePage(t *testing.T) {
	h, _ := liveHost(t)
	srv := httptest.NewServer(h.pageHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, want := range []string{
		// queue a: guarantee 8, 12 used, 4 borrowed
		`<tr data-queue="a"><td class="l" style="padding-left:18px">a</td><td>1</td><td>0</td><td>2</td><td>8</td><td>12</td><td>0</td><td>4</td></tr>`,
		`data-job="default/a3" data-reason="WaitingForQuota"`,
		`data-level="tor" data-name="tor-a"`, `data-level="tor" data-name="tor-b"`,
		`data-host="n3" data-used="4" data-gpus="8" data-failed="1"`, // a2, and the failed GPU 7
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s\n%s", want, page[strings.Index(page, "<h2>Cluster"):])
		}
	}
	if n := strings.Count(page, `class="host"`); n != 3 {
		t.Errorf("%d host cells, want 3", n)
	}
	resp, err = http.Get(srv.URL + "/state.json")
	if err != nil {
		t.Fatal(err)
	}
	var js livepage.Page
	err = json.NewDecoder(resp.Body).Decode(&js)
	resp.Body.Close()
	if err != nil || js.Title != "profile "+h.profile || js.PendingTotal != 1 || js.Cluster == nil || len(js.Cluster.Domains) != 2 {
		t.Errorf("GET /state.json: %v %+v", err, js)
	}
	if resp, err := http.Get(srv.URL + "/other"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %v %v, want 404", resp.Status, err)
	}
}

// TestLivePageInBrowser renders the page in headless chromium (the root
// module's internal/headless, as gpusched serve's TestServeInBrowser
// does): the page's script counted the host cells and GPU marks in the
// DOM, and a screenshot is taken.
func TestLivePageInBrowser(t *testing.T) {
	h, _ := liveHost(t)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "live.html"))
	if err != nil {
		t.Fatal(err)
	}
	h.writePage(f)
	f.Close()
	browser := headless.Browser()
	if browser == "" {
		t.Skip("no chromium installed (apt-get install chromium); the page was written but not rendered")
	}
	dom := string(headless.Run(t, browser, f.Name(), "--dump-dom"))
	if m := regexp.MustCompile(`data-cells="(\d+)" data-gpus="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != "3" || m[2] != "24" {
		t.Errorf("the browser counted %v, want 3 host cells and 24 GPU marks", m)
	}
	shot := filepath.Join(dir, "live.png")
	headless.Run(t, browser, f.Name(), "--window-size=1200,900", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
		t.Errorf("no screenshot: %v", err)
	}
}

// TestLiveAddressValidated: a liveAddress that is no host:port is refused
// naming the field.
func TestLiveAddressValidated(t *testing.T) {
	for addr, ok := range map[string]bool{"": true, ":10270": true, "127.0.0.1:0": true, "10270": false, ":http-ish": false} {
		a := schedArgs()
		a.LiveAddress = addr
		err := a.Validate()
		if (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "liveAddress")) {
			t.Errorf("liveAddress %q: %v, want ok=%v", addr, err, ok)
		}
	}
}

// TestLivePageRacks: the trays of a multi-node NVLink domain (GB200) are
// drawn again as one rack.
func TestLivePageRacks(t *testing.T) {
	clique := map[string]string{DefaultGPUCliqueLabel: "5c9f1d2e-uuid.7", "net.example.com/tor": "rack1"}
	h, io := newTestHost(t, gpuNode("gb-r1-t01", 4, "NVIDIA-GB200", clique), gpuNode("gb-r1-t02", 4, "NVIDIA-GB200", clique),
		gpuNode("gb-r1-t03", 4, "NVIDIA-GB200", clique))
	h.args.TopologyLevels = defaultArgs("tor").TopologyLevels
	io.pods = []*v1.Pod{schedPod("p", 4, nil)}
	h.cycle(context.Background())
	var b strings.Builder
	h.writePage(&b)
	page := b.String()
	i := strings.Index(page, `<div class="dom rack" data-level="nvlink" data-name="5c9f1d2e-uuid.7">`)
	if i < 0 {
		t.Fatalf("no rack for the clique:\n%s", page)
	}
	if n := strings.Count(page[i:], `class="host"`); n != 3 {
		t.Errorf("the rack has %d trays, want 3", n)
	}
}
