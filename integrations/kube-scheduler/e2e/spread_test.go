package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// testGangZoneSpreadBeyondMaxSkew: a gang of five 4-GPU members with a
// DoNotSchedule spread on the zone label, maxSkew 1, over zones a and b
// of two 8-GPU nodes each, zone a already running one pod the spread's
// selector matches: kube's PodTopologySpread accepts 3+3 (a: the running
// pod and 2 members, b: 3), never more than maxSkew above the least
// loaded zone at each pod's turn. Every member binds, 2 in a and 3 in b,
// each accepted by kube-scheduler's own filters at its own scheduling
// cycle: no member is rejected (gpusched lets them through in waves).
func testGangZoneSpreadBeyondMaxSkew(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	const zone = "topology.kubernetes.io/zone"
	for _, z := range []string{"a", "b"} {
		for i := range 2 {
			createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("z%s-%d", z, i), GPUs: 8, Product: h100, Labels: map[string]string{zone: z}})
		}
	}
	old := createPod(ctx, t, c, podSpec{Name: "spread-old", Labels: map[string]string{"app": "spread"}})
	{
		// (no scheduler has started: bound by hand to za-0)
		b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace}, Target: v1.ObjectReference{Kind: "Node", Name: "za-0"}}
		if err := c.CoreV1().Pods(old.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind spread-old: %v", err)
		}
	}
	start()
	got := spreadGangBound(ctx, t, c, "spread", 5, 4, zone)
	per := map[string]int{}
	for _, p := range got {
		per[p.Spec.NodeName[1:2]]++
	}
	if per["a"] != 2 || per["b"] != 3 {
		t.Errorf("members per zone %v, want a=2 b=3 (3+3 with the running pod)", per)
	}
}

// spreadGangBound creates a gang app of n members of gpus GPUs each, with
// a DoNotSchedule spread on key, maxSkew 1, over the pods labelled
// app=app, and waits until every member is bound; it fails the test if
// kube's own filters rejected a member on the way.
func spreadGangBound(ctx context.Context, t *testing.T, c kubernetes.Interface, app string, n, gpus int, key string) map[string]*v1.Pod {
	t.Helper()
	spread := []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", app, i)
		names = append(names, name)
		createPod(ctx, t, c, podSpec{Name: name, SchedulerName: schedModeName, GPUs: gpus, Spread: spread,
			Labels: map[string]string{gangLabelKey: app, plugin.DefaultGangSizeKey: fmt.Sprint(n), queueLabel: "batch", "app": app}})
	}
	got := waitBound(ctx, t, c, "default", names, 90*time.Second)
	if ev := describeEvents(ctx, c, "default"); strings.Contains(ev, "didn't match pod topology spread") || strings.Contains(ev, "rejected by kube-scheduler") {
		t.Errorf("kube's PodTopologySpread rejected a member:\n%s", ev)
	}
	return got
}

// testGangHostnameSpreadBeyondMaxSkew: a gang of six 2-GPU members with
// a DoNotSchedule spread on the hostname, maxSkew 1, over three 8-GPU
// nodes: more members than maxSkew × the nodes, which a cap of maxSkew
// per node cannot hold (such a gang used to wait for ever), but kube's
// PodTopologySpread accepts two per node once every node has one. Every
// member binds, two on each node, each accepted by kube-scheduler's own
// filters at its own scheduling cycle (gpusched lets them through in
// waves).
func testGangHostnameSpreadBeyondMaxSkew(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for i := range 3 {
		createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("h%d", i), GPUs: 8, Product: h100})
	}
	start()
	per := map[string]int{}
	for _, p := range spreadGangBound(ctx, t, c, "hspread", 6, 2, v1.LabelHostname) {
		per[p.Spec.NodeName]++
	}
	if per["h0"] != 2 || per["h1"] != 2 || per["h2"] != 2 {
		t.Errorf("members per node %v, want two on each of h0, h1, h2", per)
	}
}
