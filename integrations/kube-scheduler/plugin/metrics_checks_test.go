package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
)

// oneQueue is a queue tree of the one leaf pods without a queue label go
// to.
const oneQueue = `
root:
  children:
  - name: default
`

// TestMetricsEvictionsRefusalsWithdrawals (issue 26, deliver 1): the
// counters of stopped jobs and withdrawn plans move as the host acts. A
// preemption whose cheaper victim's eviction a budget refuses counts two
// Preemption evictions (the refused one, then the other victim) and one
// refusal; a job on a node gone NotReady one Recovery; a job not bound
// within admitTimeoutSeconds one Expired withdrawal; a pod given back at
// Unreserve one BindFailed withdrawal.
func TestMetricsEvictionsRefusalsWithdrawals(t *testing.T) {
	h100 := "NVIDIA-H100-80GB-HBM3"
	ctx := context.Background()
	high := func() *v1.Pod {
		p := schedPod("high", 8, nil)
		prio := int32(1000)
		p.Spec.Priority = &prio
		return p
	}

	t.Run("preemption and refusal", func(t *testing.T) {
		h, io, set, _ := metricsHost(t, oneQueue, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
		var pods []*v1.Pod
		for i, name := range []string{"guarded", "free"} {
			pods = append(pods, boundPod(name, fmt.Sprintf("n%d", i+1), 8, "0,1,2,3,4,5,6,7", nil))
		}
		// guarded lost less work (checkpointed just now): it is the
		// planner's first victim.
		pods[0].Annotations[DefaultCheckpointKey] = io.clock.Format(time.RFC3339)
		io.pods = pods
		h.cycle(ctx)
		io.pods = append(io.pods, high())
		io.refuse = map[string]error{"guarded": fmt.Errorf("Cannot evict pod as it would violate the pod's disruption budget")}
		for range 4 {
			io.clock = io.clock.Add(time.Second)
			h.cycle(ctx)
		}
		if io.attempts["guarded"] != 1 || len(io.evicted) != 1 || io.evicted[0] != "free" {
			t.Fatalf("attempts %v, evicted %v; want guarded refused once, then free evicted", io.attempts, io.evicted)
		}
		if got := counterOf(t, set.refusals); got != 1 {
			t.Errorf("eviction_refusals_total = %v, want 1", got)
		}
		if got := counterOf(t, set.evictions, "Preemption"); got != 2 {
			t.Errorf("evictions_total{Preemption} = %v, want 2 (guarded asked and refused, free evicted)", got)
		}
	})

	t.Run("recovery", func(t *testing.T) {
		n1 := gpuNode("n1", 8, h100, nil)
		h, io, set, _ := metricsHost(t, oneQueue, n1, gpuNode("n2", 8, h100, nil))
		io.pods = []*v1.Pod{boundPod("lost", "n1", 8, "0,1,2,3,4,5,6,7", nil)}
		h.cycle(ctx)
		bad := n1.DeepCopy()
		bad.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		io.nodes[0] = bad
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
		if got := counterOf(t, set.evictions, "Recovery"); got != 1 {
			t.Errorf("evictions_total{Recovery} = %v after n1 went NotReady, want 1; events %v", got, io.events)
		}
	})

	t.Run("expired", func(t *testing.T) {
		h, io, set, _ := metricsHost(t, oneQueue, gpuNode("n1", 8, h100, nil))
		h.args.AdmitTimeoutSeconds = 60
		io.pods = []*v1.Pod{schedPod("stuck", 8, nil)}
		h.cycle(ctx)
		for range 62 {
			io.clock = io.clock.Add(time.Second)
			h.cycle(ctx)
		}
		if got := counterOf(t, set.withdrawn, WithdrawnExpired); got < 1 {
			t.Errorf("withdrawn_plans_total{Expired} = %v after the admit timeout, want at least 1; rejected %v", got, io.rejected)
		}
	})

	t.Run("bind failed", func(t *testing.T) {
		h, io, set, _ := metricsHost(t, oneQueue, gpuNode("n1", 8, h100, nil))
		io.pods = []*v1.Pod{schedPod("p", 2, nil)}
		h.cycle(ctx)
		a, ok := h.assignmentOf("uid-p")
		if !ok {
			t.Fatalf("p not planned: pending %v", io.pending)
		}
		p := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
		p.Unreserve(ctx, nil, io.pods[0], a.node)
		p.Unreserve(ctx, nil, io.pods[0], a.node) // nothing more to withdraw
		if got := counterOf(t, set.withdrawn, WithdrawnBindFailed); got != 1 {
			t.Errorf("withdrawn_plans_total{BindFailed} = %v, want 1", got)
		}
	})
}

// TestDashboardLabelsExist: every label the Grafana dashboard in
// deploy/monitoring matches on or groups by is one the metric it queries
// carries, and every value it matches exactly (a GPU kind, a cycle phase,
// a withdrawal cause) is one the plugin writes: a typo there draws an
// empty panel, which TestDashboardUsesExportedMetrics (names only) does
// not see. The variables' queries are checked too.
func TestDashboardLabelsExist(t *testing.T) {
	// The label names each metric has, read back from a registry.
	set := newMetricSet()
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(set.collectors()...)
	set.pending.WithLabelValues("p", "q", "r").Set(1)
	set.queueGPUs.WithLabelValues("p", "q", GPUKindUsed).Set(1)
	set.free.WithLabelValues("p").Set(1)
	set.stranded.WithLabelValues("p", "host").Set(1)
	set.duration.WithLabelValues("p", "cycle").Observe(1)
	set.admitted.WithLabelValues("p", "q").Inc()
	set.evictions.WithLabelValues("p", "Preemption").Inc()
	set.refusals.WithLabelValues("p").Inc()
	set.withdrawn.WithLabelValues("p", WithdrawnExpired).Inc()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]bool{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), metricsSubsystem+"_") {
			continue
		}
		ls := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = true
			}
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			ls["le"] = true
			labels[mf.GetName()+"_bucket"] = ls
		}
		labels[mf.GetName()] = ls
	}
	if len(labels) < 9 {
		t.Fatalf("read the labels of %d metrics, want all 9: %v", len(labels), labels)
	}
	values := map[string][]string{
		"kind":  {GPUKindNominal, GPUKindBorrowed, GPUKindUsed, GPUKindReserved, "Preemption", "Shrink", "Migration", "Recovery"},
		"phase": {"schedule", "cycle"},
		"cause": {WithdrawnExpired, WithdrawnNodeRejected, WithdrawnBindFailed, WithdrawnPlanConflict},
	}

	queries := dashboardQueries(t)
	selector := regexp.MustCompile(`(gpusched_[a-z_]+)(?:\{([^}]*)\})?`)
	matcher := regexp.MustCompile(`([a-zA-Z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	grouping := regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelArg := regexp.MustCompile(`label_values\([^,]+,\s*([a-zA-Z_]+)\)`)
	for _, q := range queries {
		inExpr := map[string]bool{} // the labels of the metrics q queries
		for _, s := range selector.FindAllStringSubmatch(q.expr, -1) {
			ls, ok := labels[s[1]]
			if !ok {
				t.Errorf("%s queries %s, which the plugin does not export", q.where, s[1])
				continue
			}
			for l := range ls {
				inExpr[l] = true
			}
			for _, m := range matcher.FindAllStringSubmatch(s[2], -1) {
				if !ls[m[1]] {
					t.Errorf("%s: %s has no label %q", q.where, s[1], m[1])
				}
				if known, ok := values[m[1]]; ok && m[2] == "=" && !slices.Contains(known, m[3]) {
					t.Errorf("%s: %s{%s=%q}: the plugin writes no such %s (%v)", q.where, s[1], m[1], m[3], m[1], known)
				}
			}
		}
		var grouped []string
		for _, g := range grouping.FindAllStringSubmatch(q.expr, -1) {
			grouped = append(grouped, strings.Split(g[1], ",")...)
		}
		for _, g := range labelArg.FindAllStringSubmatch(q.expr, -1) {
			grouped = append(grouped, g[1])
		}
		for _, l := range grouped {
			if l = strings.TrimSpace(l); l != "" && !inExpr[l] {
				t.Errorf("%s groups by %q, a label none of its metrics has: %s", q.where, l, q.expr)
			}
		}
	}
}

// dashQuery is one PromQL query of the Grafana dashboard: where it is (a
// panel's title, a variable's name) and its text.
type dashQuery struct{ where, expr string }

// dashboardQueries reads deploy/monitoring's Grafana dashboard: its
// panels' targets and its query variables.
func dashboardQueries(t *testing.T) []dashQuery {
	t.Helper()
	b, err := os.ReadFile("../deploy/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	var queries []dashQuery
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries = append(queries, dashQuery{"panel " + p.Title, tg.Expr})
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			queries = append(queries, dashQuery{"variable " + v.Name, q})
		}
	}
	return queries
}
