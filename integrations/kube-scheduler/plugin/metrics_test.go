package plugin

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// metricsHost is a test host whose figures go to a registry of its own.
func metricsHost(t *testing.T, queues string, nodes ...*v1.Node) (*host, *fakeIO, *metricSet, metrics.KubeRegistry) {
	t.Helper()
	h, io := newTestHost(t, nodes...)
	cfg, err := ParseQueueConfig([]byte(queues), "test")
	if err != nil {
		t.Fatal(err)
	}
	h.queues = cfg
	set := newMetricSet()
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(set.collectors()...)
	h.metrics = newCycleMetrics(set, "gpusched")
	return h, io, set, reg
}

// gaugeOf reads one series of v.
func gaugeOf(t *testing.T, v *metrics.GaugeVec, labels ...string) float64 {
	t.Helper()
	x, err := testutil.GetGaugeMetricValue(v.WithLabelValues(append([]string{"gpusched"}, labels...)...))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func counterOf(t *testing.T, v *metrics.CounterVec, labels ...string) float64 {
	t.Helper()
	x, err := testutil.GetCounterMetricValue(v.WithLabelValues(append([]string{"gpusched"}, labels...)...))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

const twoQueues = `
root:
  children:
  - name: a
    quotas: [{resource: gpu, nominal: 8, borrowingLimit: 4}]
  - name: b
    quotas: [{resource: gpu, nominal: 8}]
`

// TestMetricsFromCycleStats: the figures on the registry are the cycle's
// (Decision.Stats) as the pods make them.
func TestMetricsFromCycleStats(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io, set, reg := metricsHost(t, twoQueues, n1, n2)
	ctx := context.Background()
	qa := map[string]string{DefaultQueueLabel: "a"}
	// a1 (8) and a2 (4) fit: queue a borrows 4 beyond its nominal 8; a3
	// (2) would take a to 14 > 8 + 4: it waits for quota.
	io.pods = append(io.pods, schedPod("a1", 8, qa), schedPod("a2", 4, qa), schedPod("a3", 2, qa))
	h.cycle(ctx)
	if got := gaugeOf(t, set.pending, "a", "WaitingForQuota"); got != 1 {
		t.Errorf("pending{a,WaitingForQuota} = %v, want 1 (a3); pending %v", got, io.pending)
	}
	if got := gaugeOf(t, set.pending, "b", "WaitingForQuota"); got != 0 {
		t.Errorf("pending{b,WaitingForQuota} = %v, want 0", got)
	}
	if got := counterOf(t, set.admitted, "a"); got != 2 {
		t.Errorf("admitted{a} = %v, want 2", got)
	}
	// Bound but not started: reserved 12 (8 + 4), borrowed 4.
	for _, c := range []struct {
		kind string
		want float64
	}{{GPUKindNominal, 8}, {GPUKindReserved, 12}, {GPUKindUsed, 0}, {GPUKindBorrowed, 4}} {
		if got := gaugeOf(t, set.queueGPUs, "a", c.kind); got != c.want {
			t.Errorf("queue_gpus{a,%s} = %v, want %v", c.kind, got, c.want)
		}
	}
	bindAll(t, h, io)
	h.cycle(ctx)
	if got := gaugeOf(t, set.queueGPUs, "a", GPUKindUsed); got != 12 {
		t.Errorf("queue_gpus{a,used} = %v after the pods bound, want 12", got)
	}
	// 16 − 12 = 4 free, all on n2: a3 (2 GPUs) could use them, nothing
	// is stranded at the host level.
	if got := gaugeOf(t, set.free); got != 4 {
		t.Errorf("free_gpus = %v, want 4", got)
	}
	if got := gaugeOf(t, set.stranded, "host"); got != 0 {
		t.Errorf("stranded_gpus{host} = %v, want 0", got)
	}

	// a3 goes, an 8-GPU pod of a waits: no host has 8 free, so n2's 4
	// free GPUs are stranded at the host level; its reason is quota.
	io.pods = slicesDeleteName(io.pods, "a3")
	io.pods = append(io.pods, schedPod("a4", 8, qa))
	h.cycle(ctx)
	if got := gaugeOf(t, set.stranded, "host"); got != 4 {
		t.Errorf("stranded_gpus{host} = %v, want 4 (n2's free GPUs, smaller than the 8 a4 needs)", got)
	}
	if got := gaugeOf(t, set.pending, "a", "WaitingForQuota"); got != 1 {
		t.Errorf("pending{a,WaitingForQuota} = %v, want 1 (a4)", got)
	}
	n, err := testutil.GetHistogramMetricCount(set.duration.WithLabelValues("gpusched", "schedule"))
	if err != nil || n != 3 {
		t.Errorf("cycle_duration_seconds{schedule} count = %d (%v), want 3", n, err)
	}
	if n, _ := testutil.GetHistogramMetricCount(set.duration.WithLabelValues("gpusched", "cycle")); n != 3 {
		t.Errorf("cycle_duration_seconds{cycle} count = %d, want 3", n)
	}
	// The names on the registry.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"gpusched_pending_jobs", "gpusched_queue_gpus", "gpusched_free_gpus", "gpusched_stranded_gpus",
		"gpusched_cycle_duration_seconds", "gpusched_admitted_jobs_total"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("registry lacks %s: %v", want, names)
		}
	}
}

// TestMetricsQueueRemovedAndWithdrawn: a removed queue's series go; a
// plan withdrawn for a rejected node and an expired one are counted.
func TestMetricsQueueRemovedAndWithdrawn(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io, set, reg := metricsHost(t, twoQueues, n1, n2)
	ctx := context.Background()
	io.pods = []*v1.Pod{schedPod("b1", 2, map[string]string{DefaultQueueLabel: "b"})}
	h.cycle(ctx)
	if got := counterOf(t, set.admitted, "b"); got != 1 {
		t.Fatalf("admitted{b} = %v, want 1; pending %v events %v activated %v", got, io.pending, io.events, io.activated)
	}
	// The planned node is rejected by kube's filters: withdrawn; the
	// next cycle plans b1 again (the other node), and it is admitted
	// again.
	p := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	p.PostFilter(ctx, nil, io.pods[0], nil)
	p.PostFilter(ctx, nil, io.pods[0], nil) // nothing more to withdraw
	h.cycle(ctx)
	if got := counterOf(t, set.admitted, "b"); got != 2 {
		t.Errorf("admitted{b} = %v after the withdrawal, want 2", got)
	}
	if got := counterOf(t, set.withdrawn, WithdrawnNodeRejected); got != 1 {
		t.Errorf("withdrawn{NodeRejected} = %v, want 1", got)
	}
	// Queue a is removed (it runs nothing): its series go.
	cfg, err := ParseQueueConfig([]byte("root:\n  children:\n  - name: b\n    quotas: [{resource: gpu, nominal: 8}]\n"), "edit")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.reconfigure(cfg, io.clock); err != nil {
		t.Fatal(err)
	}
	h.cycle(ctx)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" && l.GetValue() == "a" && strings.HasPrefix(mf.GetName(), "gpusched_") && mf.GetName() != "gpusched_admitted_jobs_total" {
					t.Errorf("%s still has a series of the removed queue a", mf.GetName())
				}
			}
		}
	}
}

func slicesDeleteName(pods []*v1.Pod, name string) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

// TestDashboardUsesExportedMetrics: every gpusched_ metric the Grafana
// dashboard in deploy/monitoring queries is one the plugin exports.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	known := map[string]bool{}
	for _, n := range []string{metricPendingJobs, metricQueueGPUs, metricFreeGPUs, metricStrandedGPUs, metricCycleDuration,
		metricAdmitted, metricEvictions, metricRefusals, metricWithdrawn} {
		known[metricsSubsystem+"_"+n] = true
	}
	used := map[string]bool{}
	re := regexp.MustCompile(`gpusched_[a-z_]+`)
	for _, q := range dashboardQueries(t) {
		for _, m := range re.FindAllString(q.expr, -1) {
			m = strings.TrimSuffix(m, "_bucket")
			used[m] = true
			if !known[m] {
				t.Errorf("%s queries %s, which the plugin does not export", q.where, m)
			}
		}
	}
	for m := range known {
		if !used[m] {
			t.Errorf("the dashboard shows nothing of %s", m)
		}
	}
}

// BenchmarkMetricsRecord measures exporting one cycle's figures: 1,000
// nodes in 20 ToRs, 20 leaf queues, 2,000 pending jobs.
func BenchmarkMetricsRecord(b *testing.B) {
	t := &testing.T{}
	var nodes []*v1.Node
	for i := range 1000 {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%04d", i), 8, "NVIDIA-H100-80GB-HBM3", map[string]string{"net.example.com/tor": fmt.Sprintf("t%02d", i%20)}))
	}
	var q strings.Builder
	q.WriteString("root:\n  children:\n")
	for i := range 20 {
		fmt.Fprintf(&q, "  - name: q%02d\n    quotas: [{resource: gpu, nominal: 400}]\n", i)
	}
	h, io, set, _ := metricsHost(t, q.String(), nodes...)
	h.args.TopologyLevels = defaultArgs("tor").TopologyLevels
	for i := range 2000 {
		io.pods = append(io.pods, schedPod(fmt.Sprintf("p%04d", i), 3+i%6, map[string]string{DefaultQueueLabel: fmt.Sprintf("q%02d", i%20)}))
	}
	h.cycle(context.Background())
	h.mu.Lock()
	d := h.s.Schedule(io.clock.Add(time.Second))
	h.mu.Unlock()
	if d.Stats == nil || d.Stats.Pending == 0 {
		b.Fatalf("no pending jobs: %+v", d.Stats)
	}
	c := newCycleMetrics(set, "gpusched")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.record(&d, time.Millisecond)
	}
}
