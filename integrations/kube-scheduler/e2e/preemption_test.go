package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// createPriorityClass creates a PriorityClass of the given value.
func createPriorityClass(ctx context.Context, t *testing.T, c kubernetesClient, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PriorityClass %s: %v", name, err)
	}
}

// testPriorityOnFullCluster fills two 8-GPU nodes with low-priority pods
// placed by gpusched, then asks for room with high-priority pods:
//
//   - a 2×8-GPU gang gpusched cannot place: kube-scheduler's DefaultPreemption
//     must evict nothing for it (gpusched's Filter rejects every node for a
//     gang without a plan);
//   - a single 8-GPU pod: PreFilter rejects it (no host has 8 free), and
//     DefaultPreemption's dry run re-runs Filter on that cycle state. Before
//     the fix this dereferenced a nil cluster and crashed the scheduler; now
//     RemovePod shows Filter the victims' GPUs free, two 4-GPU pods of one
//     node are evicted and the pod binds there, on GPUs no one else holds.
func testPriorityOnFullCluster(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	createPriorityClass(ctx, t, c, "gpu-low", 100)
	createPriorityClass(ctx, t, c, "gpu-high", 1000)
	start()
	var low []string
	for i := range 4 {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("low-%d", i), SchedulerName: "gpusched", GPUs: 4, PriorityClassName: "gpu-low"})
		low = append(low, p.Name)
	}
	waitBound(ctx, t, c, "default", low, 60*time.Second)

	// A high-priority gang that gpusched cannot place: no eviction.
	var gang []string
	for i := range 2 {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("gang-%d", i), SchedulerName: "gpusched", GPUs: 8, PriorityClassName: "gpu-high",
			Labels: map[string]string{gangLabelKey: "hi", plugin.DefaultGangSizeKey: "2"}})
		gang = append(gang, p.Name)
	}
	assertNoneBound(ctx, t, c, "default", gang, 2*time.Second)
	for _, n := range low {
		p, err := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("%s evicted for a gang gpusched cannot place (err %v)\n%s", n, err, describeEvents(ctx, c, "default"))
		}
	}
	for _, n := range gang {
		if err := c.CoreV1().Pods("default").Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A high-priority 8-GPU pod: preemption makes room on one node.
	createPod(ctx, t, c, podSpec{Name: "high", SchedulerName: "gpusched", GPUs: 8, PriorityClassName: "gpu-high"})
	got := waitBound(ctx, t, c, "default", []string{"high"}, 60*time.Second)
	node := got["high"].Spec.NodeName
	var left []v1.Pod
	for _, p := range listPods(ctx, t, c, "default") {
		if slices.Contains(low, p.Name) && p.DeletionTimestamp == nil {
			left = append(left, p)
		}
	}
	if len(left) != 2 {
		t.Errorf("%d low-priority pods left, want 2 (two 4-GPU victims free one node)\n%s", len(left), describeEvents(ctx, c, "default"))
	}
	used := map[int]string{}
	for _, i := range indices(t, got["high"]) {
		used[i] = "high"
	}
	if len(used) != 8 {
		t.Errorf("high: %s=%q, want 8 GPU indices", indicesKey, got["high"].Annotations[indicesKey])
	}
	for _, p := range left {
		if p.Spec.NodeName == node {
			t.Errorf("%s still on %s beside the 8-GPU pod", p.Name, node)
		}
	}
	// The victims' eviction was kube-scheduler's preemption.
	var preempted int
	for _, n := range low {
		evs, err := podEvents(ctx, c, "default", n)
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Reason == "Preempted" {
				preempted++
				break
			}
		}
	}
	if preempted != 2 {
		t.Errorf("%d Preempted events on low-priority pods, want 2\n%s", preempted, describeEvents(ctx, c, "default"))
	}
}
