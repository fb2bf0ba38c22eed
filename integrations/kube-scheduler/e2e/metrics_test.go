package e2e

import (
	"context"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/gpusched/gpusched/internal/headless"
)

// quotaQueuesYAML: two queues of 8 GPUs each that may not borrow.
const quotaQueuesYAML = `root:
  children:
  - name: research
    quotas: [{resource: gpu, nominal: 8, borrowingLimit: 0}]
  - name: batch
    quotas: [{resource: gpu, nominal: 8, borrowingLimit: 0}]
`

// scrapeMetrics reads the scheduler's /metrics on its secure port, as the
// apiserver's loopback user (kube-scheduler authenticates and authorizes
// the request through the apiserver).
func scrapeMetrics(ctx context.Context, cp *controlPlane, port string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+port+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+cp.Config.BearerToken)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	return testutil.TextToMetricFamilies(resp.Body)
}

// securePort is the --secure-port a scheduler process was started with.
func securePort(t testing.TB, sp *schedulerProcess) string {
	t.Helper()
	for _, a := range sp.cmd.Args {
		if p, ok := strings.CutPrefix(a, "--secure-port="); ok {
			return p
		}
	}
	t.Fatal("scheduler process without --secure-port")
	return ""
}

// metricValue sums the samples of family name whose labels include want.
func metricValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	var sum float64
	found := false
	for _, m := range mf.GetMetric() {
		if !testutil.LabelsMatch(m, want) {
			continue
		}
		found = true
		switch {
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

// TestSchedulerModeMetrics runs the built binary in scheduler mode and
// checks what its /metrics says against the apiserver's pods: pending
// jobs per queue and reason, each queue's used GPUs and the free GPUs
// are what the bound and waiting pods make them.
func TestSchedulerModeMetrics(t *testing.T) {
	if testing.Short() && os.Getenv("GPUSCHED_KUBE_SCHEDULER") == "" {
		t.Skip("-short: not building the kube-scheduler binary")
	}
	bin := schedulerBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, quotaQueuesYAML)
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	live, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	liveURL := fmt.Sprintf("http://127.0.0.1:%d/", live[0])
	sp := startSchedulerProcess(t, bin, cp, schedModeConfig+fmt.Sprintf("      liveAddress: 127.0.0.1:%d\n", live[0]))
	port := securePort(t, sp)
	q := func(name string) map[string]string { return map[string]string{queueLabel: name} }
	// research: r1 (8) binds, r2 (2) would take it beyond its 8:
	// WaitingForQuota. batch: b1 (4) binds, b2 (8) waits for quota too.
	createPod(ctx, t, c, podSpec{Name: "r1", SchedulerName: schedModeName, GPUs: 8, Labels: q("research")})
	createPod(ctx, t, c, podSpec{Name: "b1", SchedulerName: schedModeName, GPUs: 4, Labels: q("batch")})
	waitBound(ctx, t, c, "default", []string{"r1", "b1"}, 60*time.Second)
	createPod(ctx, t, c, podSpec{Name: "r2", SchedulerName: schedModeName, GPUs: 2, Labels: q("research")})
	createPod(ctx, t, c, podSpec{Name: "b2", SchedulerName: schedModeName, GPUs: 8, Labels: q("batch")})
	waitCondition(ctx, t, c, "default", "r2", "quota")
	waitCondition(ctx, t, c, "default", "b2", "quota")

	// What the apiserver says: per queue, the pods waiting and the GPUs
	// bound.
	pending, bound, boundGPUs := map[string]int{}, map[string]float64{}, 0.0
	for _, p := range listPods(ctx, t, c, "default") {
		gpus := p.Spec.Containers[0].Resources.Requests.Name(gpuResource, "").Value()
		if p.Spec.NodeName == "" {
			pending[p.Labels[queueLabel]]++
		} else {
			bound[p.Labels[queueLabel]] += float64(gpus)
			boundGPUs += float64(gpus)
		}
	}
	prof := map[string]string{"profile": schedModeName}
	with := func(kv ...string) map[string]string {
		m := map[string]string{"profile": schedModeName}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	type check struct {
		name   string
		labels map[string]string
		want   float64
	}
	checks := []check{
		{"gpusched_free_gpus", prof, 16 - boundGPUs},
		// 4 GPUs free on one node, and r2 needs 2: nothing stranded.
		{"gpusched_stranded_gpus", with("level", "host"), 0},
	}
	for _, queue := range []string{"research", "batch"} {
		checks = append(checks,
			check{"gpusched_pending_jobs", with("queue", queue), float64(pending[queue])},
			check{"gpusched_pending_jobs", with("queue", queue, "reason", "WaitingForQuota"), float64(pending[queue])},
			check{"gpusched_queue_gpus", with("queue", queue, "kind", "used"), bound[queue]},
			check{"gpusched_queue_gpus", with("queue", queue, "kind", "nominal"), 8},
			check{"gpusched_admitted_jobs_total", with("queue", queue), 1},
		)
	}
	var last string
	err = waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		mfs, err := scrapeMetrics(ctx, cp, port)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		var bad []string
		for _, ck := range checks {
			if got, ok := metricValue(mfs, ck.name, ck.labels); !ok || got != ck.want {
				bad = append(bad, fmt.Sprintf("%s%v = %v (present %v), want %v", ck.name, ck.labels, got, ok, ck.want))
			}
		}
		if n, _ := metricValue(mfs, "gpusched_cycle_duration_seconds", with("phase", "schedule")); n == 0 {
			bad = append(bad, "gpusched_cycle_duration_seconds{phase=schedule}: no sample")
		}
		last = strings.Join(bad, "\n")
		return len(bad) == 0, nil
	})
	if err != nil {
		t.Fatalf("/metrics disagrees with the apiserver (pending %v, bound GPUs %v):\n%s", pending, bound, last)
	}
	checkLivePage(ctx, t, liveURL, pending, listPods(ctx, t, c, "default"))
	// The waiting pods' PodScheduled reason is the cause's token.
	for _, name := range []string{"r2", "b2"} {
		p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == v1.PodScheduled && cd.Reason != "WaitingForQuota" {
				t.Errorf("%s: PodScheduled reason %q, want WaitingForQuota", name, cd.Reason)
			}
		}
	}
}

// checkLivePage reads the binary's live page (args liveAddress) and checks
// it against the apiserver's pods: a WaitingForQuota row per waiting pod,
// and per node a cell whose used GPUs are those bound there; then, when
// chromium is installed, renders it headless and checks the DOM its
// script counted.
func checkLivePage(ctx context.Context, t *testing.T, url string, pending map[string]int, pods []v1.Pod) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("live page: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if got, want := strings.Count(page, `data-reason="WaitingForQuota"`), pending["research"]+pending["batch"]; got != want {
		t.Errorf("live page: %d WaitingForQuota rows, want %d (the waiting pods)", got, want)
	}
	usedOn := map[string]int64{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			usedOn[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Name(gpuResource, "").Value()
		}
	}
	for _, n := range []string{"n1", "n2"} {
		if want := fmt.Sprintf(`data-host="%s" data-used="%d" data-gpus="8"`, n, usedOn[n]); !strings.Contains(page, want) {
			t.Errorf("live page lacks %s", want)
		}
	}
	browser := headless.Browser()
	if browser == "" {
		t.Log("no chromium: the live page was not rendered")
		return
	}
	out := headless.Run(t, browser, url, "--dump-dom")
	if !strings.Contains(string(out), `data-cells="2" data-gpus="16"`) {
		t.Errorf("chromium's DOM of the live page lacks the 2 host cells and 16 GPU marks")
	}
	// And a screenshot of the page as chromium draws it for this cluster:
	// a PNG of the window's size with the page's colours (the host cells,
	// coloured by occupancy, and the tables' text), not a blank page.
	shot := filepath.Join(t.TempDir(), "live.png")
	headless.Run(t, browser, url, "--screenshot="+shot, "--window-size=1280,1024")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot of the live page: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot of the live page: %v", err)
	}
	r := img.Bounds()
	colours := map[color.RGBA]bool{}
	for y := r.Min.Y; y < r.Max.Y; y += 5 {
		for x := r.Min.X; x < r.Max.X; x += 5 {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if r.Dx() != 1280 || r.Dy() != 1024 || len(colours) < 8 {
		t.Errorf("screenshot of the live page: %v, %d colours sampled: not the rendered page", r, len(colours))
	}
}
