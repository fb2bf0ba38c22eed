package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/internal/headless"
	"github.com/gpusched/gpusched/livepage"
)

// serveState is a mixed cluster: 8 DGX H100 hosts in tor1 and tor2, a
// GB200 NVL72 rack (18 trays) in tor3; queues research (borrowing 8 GPUs)
// and evaluation (at its max); running jobs on both kinds, and three
// waiting for quota, topology and capacity.
var serveState = filepath.Join("testdata", "serve", "state.yaml")

// startServe runs `gpusched serve args…` in this process until stop,
// which interrupts it as Ctrl-C does (SIGINT) and returns what it printed
// and its error. It returns the URL serve printed.
func startServe(t *testing.T, args ...string) (url string, stop func() (string, error)) {
	t.Helper()
	pr, pw := io.Pipe()
	root := newRootCmd()
	root.SetArgs(append([]string{"serve"}, args...))
	root.SetIn(strings.NewReader(""))
	root.SetOut(pw)
	root.SetErr(pw)
	done := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(context.Background())
		pw.Close()
		done <- err
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var printed []string
	deadline := time.After(30 * time.Second)
	for url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("gpusched serve stopped before serving: %v\n%s", <-done, strings.Join(printed, "\n"))
			}
			printed = append(printed, l)
			url = regexp.MustCompile(`http://\S+/`).FindString(l)
		case <-deadline:
			t.Fatalf("gpusched serve printed no URL in 30 s:\n%s", strings.Join(printed, "\n"))
		}
	}
	return url, func() (string, error) {
		select {
		case err := <-done: // stopped already: a SIGINT now would end the test binary
			return strings.Join(printed, "\n"), err
		default:
		}
		p, err := os.FindProcess(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		var err2 error
		select {
		case err2 = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("gpusched serve did not stop on SIGINT")
		}
		for l := range lines {
			printed = append(printed, l)
		}
		return strings.Join(printed, "\n"), err2
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// TestServeInBrowser (issue 26, deliver 3): gpusched serve --state FILE
// serves the live page of a saved state and its JSON; headless chromium
// renders the page: the queues table, the waiting jobs with their reason
// tokens, a box per ToR, a cell per host (the 4-GPU trays of the GB200
// rack drawn inside one rack), the hosts whose free GPUs no waiting shape
// can use marked stranded; a screenshot is taken. SIGINT stops it.
func TestServeInBrowser(t *testing.T) {
	url, stop := startServe(t, "--state", serveState, "--addr", "127.0.0.1:0")
	stopped := false
	defer func() {
		if !stopped {
			_, _ = stop()
		}
	}()

	var page livepage.Page
	if err := json.Unmarshal([]byte(get(t, url+"state.json")), &page); err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if page.Cluster == nil || page.Cluster.GPUs != 136 || page.Cluster.Free != 80 || len(page.Queues) != 3 || len(page.Pending) != 3 {
		t.Errorf("state.json: cluster %+v, %d queues, %d pending; want 136 GPUs (80 free), 3 queues, 3 pending", page.Cluster, len(page.Queues), len(page.Pending))
	}

	html := get(t, url)
	browser := headless.Browser()
	if browser == "" {
		t.Skip("no chromium installed (apt-get install chromium): the served page was fetched but not rendered")
	}
	dom := string(headless.Run(t, browser, url, "--dump-dom"))
	for _, want := range []string{
		`<tr data-queue="research">`, `<tr data-queue="evaluation">`,
		// research: guarantee 40, 48 used, 8 borrowed
		`<td>40</td><td>48</td><td>0</td><td>8</td></tr>`,
		`data-job="eval-3" data-reason="WaitingForQuota"`,
		`data-job="pretrain-2" data-reason="TopologyPlacementFailed"`,
		`data-job="nvl-train-2" data-reason="InsufficientCapacity"`,
		`data-level="tor" data-name="tor1"`, `data-level="tor" data-name="tor2"`, `data-level="tor" data-name="tor3"`,
		`data-host="dgx-h100-1" data-used="8" data-gpus="8"`,
		`data-host="rack1-tray01" data-used="4" data-gpus="4"`,
		// 4 free H100s on dgx-h100-5: every waiting H100 shape needs 8 on one host
		`data-host="dgx-h100-5" data-used="4" data-gpus="8" data-failed="0" data-free="4" data-stranded="4"`,
		`data-cells="26" data-gpus="136"`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	if n := strings.Count(dom, `<tr data-job=`); n != 3 {
		t.Errorf("%d pending rows, want 3", n)
	}
	i := strings.Index(dom, `<div class="dom rack" data-level="nvlink" data-name="rack1-nvl72"`)
	if i < 0 {
		t.Fatal("the GB200 rack is not drawn as a rack")
	}
	rack := dom[i:]
	if j := strings.Index(rack, `</div></div></div>`); j >= 0 {
		rack = rack[:j]
	}
	if n := strings.Count(rack, `class="host`); n != 18 {
		t.Errorf("the rack holds %d trays, want 18", n)
	}
	if strings.Count(html, `class="host`) != 26 {
		t.Errorf("the served HTML has %d host cells, want 26", strings.Count(html, `class="host`))
	}
	shot := filepath.Join(t.TempDir(), "serve.png")
	headless.Run(t, browser, url, "--window-size=1400,1000", "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
		t.Errorf("no screenshot: %v", err)
	}

	stopped = true
	out, err := stop()
	if err != nil {
		t.Errorf("serve stopped with %v", err)
	}
	if !strings.Contains(out, url) {
		t.Errorf("serve did not print its URL %s: %s", url, out)
	}
}

// TestServeErrors: a state file that is missing or bad is refused naming
// the file (and the line), before anything is served.
func TestServeErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nnow: 2025-01-01T10:00:00Z\ncluster: {preset: dgx-h100}\nqueues: {root: {children: [{name: a}]}}\njobs:\n- id: x\n  queue: nope\n  groups: [{count: 1, gpus: 1}]\n  submitted: 2025-01-01T09:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--state", filepath.Join(dir, "missing.yaml")}, []string{"missing.yaml"}},
		{[]string{"serve", "--state", bad}, []string{"bad.yaml:6", "nope"}},
		{[]string{"serve"}, []string{"--state"}},
		{[]string{"serve", "--state", serveState, "--addr", "nohost"}, []string{"--addr", "nohost"}},
	} {
		code, _, errOut := gpusched(t, "", tc.args...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errOut, w) {
				t.Errorf("gpusched %v: exit %d, %q; want an error naming %q", tc.args, code, errOut, w)
			}
		}
	}
}
