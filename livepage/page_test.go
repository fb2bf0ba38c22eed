package livepage

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// mixed is 6 DGX H100 hosts in tor1 and tor2 and a GB200 NVL72 rack (18
// trays of 4 GPUs, one multi-node NVLink domain) in tor3.
const mixed = `version: 1
name: mixed
levels: [{name: tor}]
accelerators:
- {model: H100-SXM5-80GB, vendor: nvidia, memoryMiB: 81559}
- {model: GB200-186GB, vendor: nvidia, memoryMiB: 189471}
templates:
- {name: dgx-h100, cpuMilli: 224000, memoryMiB: 2097152, accelerator: H100-SXM5-80GB, gpus: 8,
   fabrics: [{kind: nvswitch, gpus: [0, 1, 2, 3, 4, 5, 6, 7], bandwidthGBps: 450}]}
- {name: gb200-tray, cpuMilli: 144000, memoryMiB: 983040, accelerator: GB200-186GB, gpus: 4}
switches:
- {name: "tor[1-3]", level: tor}
hosts:
- {name: "dgx-h100-[1-6]", template: dgx-h100, parent: "tor[1-2]", perParent: 3}
- {name: "rack1-tray[01-18]", template: gb200-tray, parent: tor3}
fabrics:
- {name: rack1-nvl72, kind: mnnvl, hosts: "rack1-tray[01-18]", bandwidthGBps: 900}
`

var t0 = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

// mixedScheduler runs on the mixed cluster: queue research runs a (2×8
// H100 in one ToR: tor1, dgx-h100-3 cordoned then), b (4 H100, in tor2)
// and r (4×4 GB200 in the rack); evaluation (at most 8 GPUs) runs e1 (8
// H100, in tor2). Then c (2×8 H100 in one ToR) waits for topology (20
// H100s free, no ToR with two free hosts), e2 (8 H100) for evaluation's
// quota; b's host's 4 free GPUs are stranded (every waiting H100 shape
// needs 8 on one host), and so are the free trays (no waiting job takes
// GB200s). It returns the Scheduler and the last cycle.
func mixedScheduler(t *testing.T) (*gpusched.Scheduler, Cycle) {
	t.Helper()
	c, err := topology.Load([]byte(mixed), "mixed.yaml", topology.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	s, err := gpusched.New(gpusched.Config{Cluster: c, Stats: true, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "research", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 24}}},
		{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8, Max: ptr(int64(8))}}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(id, q string, n, gpus int, model, level string) {
		t.Helper()
		j := workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: n, GPUs: gpus, Models: []string{model}}}}
		if level != "" {
			j.Topology = []workload.Constraint{{Level: level, Required: true}}
		}
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	const h100, gb200 = "H100-SXM5-80GB", "GB200-186GB"
	submit("a", "research", 2, 8, h100, "tor")
	submit("e1", "evaluation", 1, 8, h100, "")
	submit("b", "research", 1, 4, h100, "")
	submit("r", "research", 4, 4, gb200, "nvlink")
	if err := s.Cordon("dgx-h100-3"); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t0)
	if err := s.Uncordon("dgx-h100-3"); err != nil {
		t.Fatal(err)
	}
	if len(d.Bindings) != 4 {
		t.Fatalf("%d jobs started, want 4: %+v", len(d.Bindings), d.Pending)
	}
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	submit("c", "research", 2, 8, h100, "tor")
	submit("e2", "evaluation", 1, 8, h100, "")
	d = s.Schedule(t0.Add(time.Minute))
	return s, FromDecision(&d)
}

func ptr[T any](x T) *T { return &x }

// TestBuild: the page's model of the mixed cluster: the queues with their
// guarantee, usage and borrowing; the waiting jobs with their tokens; a
// box per ToR, the GB200 trays in one rack inside tor3, a cell per host
// with a mark per GPU; the stranded host marked.
func TestBuild(t *testing.T) {
	s, cyc := mixedScheduler(t)
	p := Build(s, cyc, Options{Title: "test"})
	if p.Status != "Last cycle at 2025-01-01T09:01:00Z." || !p.At.Equal(t0.Add(time.Minute)) {
		t.Errorf("status %q at %v", p.Status, p.At)
	}
	if len(p.Queues) != 3 || p.Queues[1].Name != "research" || p.Queues[2].Name != "evaluation" {
		t.Fatalf("queues %+v", p.Queues)
	}
	if q := p.Queues[1]; !q.Governed || q.Guarantee != 24 || q.Used != 36 || q.Borrowed != 12 || q.Running != 3 || q.Pending != 1 {
		t.Errorf("research %+v, want guarantee 24, 36 used, 12 borrowed, 3 running, 1 pending", q)
	}
	got := map[string]string{}
	for _, w := range p.Pending {
		got[w.Job] = w.Reason
		if w.Why == "" || w.State != "pending" {
			t.Errorf("waiting row %+v", w)
		}
	}
	if want := map[string]string{"c": gpusched.TokenTopologyPlacementFailed, "e2": gpusched.TokenWaitingForQuota}; !reflect.DeepEqual(got, want) || p.PendingTotal != 2 {
		t.Errorf("waiting %v (%d), want %v", got, p.PendingTotal, want)
	}
	root := p.Cluster
	if root.Level != "cluster" || root.GPUs != 120 || root.Free != 120-44 || len(root.Domains) != 3 || len(root.Hosts) != 0 {
		t.Fatalf("root %s %s: %d GPUs, %d free, %d boxes, %d hosts", root.Level, root.Name, root.GPUs, root.Free, len(root.Domains), len(root.Hosts))
	}
	for i, name := range []string{"tor1", "tor2", "tor3"} {
		if d := root.Domains[i]; d.Level != "tor" || d.Name != name {
			t.Errorf("box %d: %s %s, want tor %s", i, d.Level, d.Name, name)
		}
	}
	tor3 := root.Domains[2]
	if len(tor3.Hosts) != 0 || len(tor3.Domains) != 1 {
		t.Fatalf("tor3: %d hosts, %d boxes; want its trays in one rack", len(tor3.Hosts), len(tor3.Domains))
	}
	rack := tor3.Domains[0]
	if !rack.Rack || rack.Level != "nvlink" || rack.Name != "rack1-nvl72" || len(rack.Hosts) != 18 || rack.GPUs != 72 || rack.Free != 56 || rack.Healthy != 72 {
		t.Errorf("rack %+v", rack)
	}
	cells := map[string]Host{}
	var walk func(d *Domain)
	walk = func(d *Domain) {
		for _, h := range d.Hosts {
			if _, dup := cells[h.Name]; dup {
				t.Errorf("host %s drawn twice", h.Name)
			}
			cells[h.Name] = h
		}
		for i := range d.Domains {
			walk(&d.Domains[i])
		}
	}
	walk(root)
	if len(cells) != 24 {
		t.Errorf("%d host cells, want 24", len(cells))
	}
	for name, want := range map[string]string{"dgx-h100-1": "uuuuuuuu", "dgx-h100-3": "ffffffff", "rack1-tray01": "uuuu", "rack1-tray05": "ffff"} {
		if h := cells[name]; h.Marks != want {
			t.Errorf("%s marks %q, want %q", name, h.Marks, want)
		}
	}
	var half []Host
	for _, h := range cells {
		if h.Model == "H100-SXM5-80GB" && h.Used == 4 {
			half = append(half, h)
		}
	}
	if len(half) != 1 || half[0].Free != 4 || half[0].Stranded != 4 || half[0].Health != "healthy" || strings.Count(half[0].Marks, "u") != 4 {
		t.Errorf("hosts running b: %+v, want one with 4 free GPUs, stranded", half)
	}
	if h := cells["dgx-h100-3"]; h.Stranded != 0 {
		t.Errorf("dgx-h100-3 %+v: c's tasks fit it", h)
	}
	if h := cells["rack1-tray05"]; h.Stranded != 4 {
		t.Errorf("rack1-tray05 %+v: no waiting job takes GB200s", h)
	}
	if len(p.Stranded) == 0 {
		t.Error("no stranded levels")
	}
	// The page is its JSON.
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Page
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, p) {
		t.Errorf("the page's JSON does not load back the same (%v)", err)
	}
}

// node is an element of a parsed page.
type node struct {
	tag      string
	attr     map[string]string
	text     string
	children []*node
}

var (
	tagRE  = regexp.MustCompile(`<(/?)([a-zA-Z0-9]+)((?:\s+[a-z-]+="[^"]*")*)\s*>|<!DOCTYPE html>`)
	attrRE = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	voids  = map[string]bool{"meta": true, "br": true}
)

// parse parses the page's markup into elements, failing t on a tag
// closed out of order or left open.
func parse(t *testing.T, page string) *node {
	t.Helper()
	root := &node{tag: "#document"}
	stack := []*node{root}
	last := 0
	for _, m := range tagRE.FindAllStringSubmatchIndex(page, -1) {
		if m[0] < last {
			continue // inside a script or style
		}
		top := stack[len(stack)-1]
		top.text += page[last:m[0]]
		last = m[1]
		if m[4] < 0 { // doctype
			continue
		}
		tag := page[m[4]:m[5]]
		if m[3] > m[2] { // closing
			if top.tag != tag {
				t.Fatalf("</%s> closes <%s> at %d: %s", tag, top.tag, m[0], page[max(0, m[0]-200):m[0]])
			}
			stack = stack[:len(stack)-1]
			continue
		}
		n := &node{tag: tag, attr: map[string]string{}}
		for _, a := range attrRE.FindAllStringSubmatch(page[m[6]:m[7]], -1) {
			n.attr[a[1]] = a[2]
		}
		top.children = append(top.children, n)
		if !voids[tag] && tag != "script" && tag != "style" {
			stack = append(stack, n)
		} else if tag == "script" || tag == "style" {
			end := strings.Index(page[m[1]:], "</"+tag+">")
			if end < 0 {
				t.Fatalf("<%s> not closed", tag)
			}
			last = m[1] + end + len(tag) + 3
		}
	}
	if len(stack) != 1 {
		t.Fatalf("<%s> left open", stack[len(stack)-1].tag)
	}
	return root
}

// find returns the elements under n (n included) that match.
func (n *node) find(match func(*node) bool) []*node {
	var out []*node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(match)...)
	}
	return out
}

func hasClass(class string) func(*node) bool {
	return func(n *node) bool { return n.attr["class"] == class }
}

// TestWriteHTML: the page's markup nests as its model does: the queues
// table has a row per queue, the pending table a row per waiting job with
// its token, each ToR a box, the rack a box inside tor3 holding the 18
// trays, every host cell a mark per GPU, the stranded host styled; the
// counting script is there.
func TestWriteHTML(t *testing.T) {
	s, cyc := mixedScheduler(t)
	p := Build(s, cyc, Options{Title: "test <mixed>"})
	var b strings.Builder
	if err := p.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	doc := parse(t, page)
	if !strings.Contains(page, "<h1>gpusched: test &lt;mixed&gt;</h1>") {
		t.Error("the title is not escaped")
	}
	byID := func(id string) *node {
		ns := doc.find(func(n *node) bool { return n.attr["id"] == id })
		if len(ns) != 1 {
			t.Fatalf("%d elements #%s", len(ns), id)
		}
		return ns[0]
	}
	rows := byID("queues").find(func(n *node) bool { return n.attr["data-queue"] != "" })
	if len(rows) != 3 || rows[1].attr["data-queue"] != "research" {
		t.Errorf("%d queue rows", len(rows))
	} else if cells := rows[1].children; len(cells) != 8 || cells[4].text != "24" || cells[5].text != "36" || cells[7].text != "12" {
		t.Errorf("research's row: %d cells", len(cells))
	}
	reasons := map[string]string{}
	for _, r := range byID("pending").find(func(n *node) bool { return n.attr["data-job"] != "" }) {
		reasons[r.attr["data-job"]] = r.attr["data-reason"]
	}
	if reasons["c"] != "TopologyPlacementFailed" || reasons["e2"] != "WaitingForQuota" || len(reasons) != 2 {
		t.Errorf("pending rows %v", reasons)
	}
	cluster := byID("cluster")
	tors := cluster.find(func(n *node) bool { return n.attr["data-level"] == "tor" })
	if len(tors) != 3 {
		t.Fatalf("%d ToR boxes, want 3", len(tors))
	}
	racks := tors[2].find(hasClass("dom rack"))
	if len(racks) != 1 || racks[0].attr["data-name"] != "rack1-nvl72" {
		t.Fatalf("tor3 holds %d racks, want rack1-nvl72", len(racks))
	}
	if n := len(racks[0].find(hasClass("host"))); n != 18 {
		t.Errorf("the rack holds %d trays, want 18", n)
	}
	hosts := cluster.find(hasClass("host"))
	gpus := 0
	for _, h := range hosts {
		marks := h.find(func(n *node) bool { return strings.HasPrefix(n.attr["class"], "g ") })
		gpus += len(marks)
		if want := h.attr["data-gpus"]; want != strconv.Itoa(len(marks)) {
			t.Errorf("host %s: %d marks, data-gpus %s", h.attr["data-host"], len(marks), want)
		}
	}
	if len(hosts) != 24 || gpus != 120 {
		t.Errorf("%d host cells with %d GPU marks, want 24 and 120", len(hosts), gpus)
	}
	for _, h := range hosts {
		stranded := h.attr["data-stranded"] != "0"
		if orange := strings.Contains(h.attr["style"], "hsl(30,"); stranded != orange {
			t.Errorf("host %s: stranded %v, drawn orange %v", h.attr["data-host"], stranded, orange)
		}
	}
	if !strings.Contains(page, `document.body.dataset.cells=document.querySelectorAll(".host").length`) {
		t.Error("no counting script")
	}
}

// TestPageWithoutScheduler: a page with no cluster (a standby replica)
// draws its title and status only; a long pending list is cut with a
// row saying how many more wait.
func TestPageWithoutScheduler(t *testing.T) {
	var b strings.Builder
	if err := (&Page{Title: "standby", Status: "No cycle ran yet."}).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, b.String())
	if len(doc.find(func(n *node) bool { return n.tag == "table" })) != 0 || !strings.Contains(b.String(), `<p id="state">No cycle ran yet.</p>`) {
		t.Errorf("standby page:\n%s", b.String())
	}
	s, cyc := mixedScheduler(t)
	p := Build(s, cyc, Options{MaxPending: 1, Status: "custom"})
	if len(p.Pending) != 1 || p.PendingTotal != 2 || p.Status != "custom" {
		t.Fatalf("%d rows of %d, status %q", len(p.Pending), p.PendingTotal, p.Status)
	}
	b.Reset()
	_ = p.WriteHTML(&b)
	parse(t, b.String())
	if !strings.Contains(b.String(), "… 1 more") {
		t.Error("the cut list does not say how many more wait")
	}
	// Without figures nothing is marked stranded.
	p = Build(s, Cycle{At: cyc.At, Pending: cyc.Pending}, Options{})
	if len(p.Stranded) != 0 || p.Cluster.Domains[1].Hosts[0].Stranded != 0 {
		t.Error("stranded marks without Cycle.Stats")
	}
}

// TestHandler: GET / is the page, GET /state.json its JSON; other paths
// are not found; it is read-only.
func TestHandler(t *testing.T) {
	s, cyc := mixedScheduler(t)
	p := Build(s, cyc, Options{Title: "h"})
	srv := httptest.NewServer(Handler(func() *Page { return p }))
	defer srv.Close()
	get := func(path string) (int, string, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	if code, ct, body := get("/"); code != 200 || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, `<table id="queues">`) {
		t.Errorf("GET /: %d %s", code, ct)
	}
	code, ct, body := get("/state.json")
	var back Page
	if code != 200 || ct != "application/json" || json.Unmarshal([]byte(body), &back) != nil || back.Title != "h" || back.PendingTotal != 2 {
		t.Errorf("GET /state.json: %d %s %.200s", code, ct, body)
	}
	if code, _, _ := get("/other"); code != http.StatusNotFound {
		t.Errorf("GET /other: %d, want 404", code)
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
}
