package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
)

// workloadConfig is schedModeConfig with a rack level. The scheduler
// binary runs without the GenericWorkload gate (only the apiserver has it):
// with the gate kube-scheduler schedules a PodGroup's pods in its own
// pod-group cycles, which reserve every pod tentatively and revert
// (Unreserve) before committing, and gpusched withdraws a job's binding on
// Unreserve (see the module README, "The Workload API").
const workloadConfig = schedModeConfig + `      topologyLevels:
      - name: rack
        nodeLabel: topology.example.com/rack
`

// TestWorkloadAPI: kube-apiserver (not the scheduler) with the GenericWorkload (and
// TopologyAwareWorkloadScheduling) gates and scheduling.k8s.io/v1beta1
// served; a Workload whose gang PodGroup (minCount 3, one rack) has three
// 8-GPU pods that name it in spec.schedulingGroup and carry no gpusched
// label. Rack r0 has two free nodes, rack r1 three. Two pods alone wait
// (all or nothing: neither binds); the third makes the gang, which binds
// whole inside r1.
func TestWorkloadAPI(t *testing.T) {
	// The gates are process-wide: the in-process apiserver sees them (the
	// scheduler is another process); they are reset when the test ends.
	if testing.Short() && os.Getenv("GPUSCHED_KUBE_SCHEDULER") == "" {
		t.Skip("-short: not building the kube-scheduler binary")
	}
	bin := schedulerBinary(t)
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload: true, features.TopologyAwareWorkloadScheduling: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cp := startControlPlane(t, "--runtime-config=scheduling.k8s.io/v1beta1=true")
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	for i, rack := range []string{"r0", "r0", "r1", "r1", "r1"} {
		createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Product: h100,
			Labels: map[string]string{"topology.example.com/rack": rack}})
	}
	rack := []schedulingv1beta1.TopologyConstraint{{Key: "topology.example.com/rack"}}
	gang := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}}
	wl := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default"},
		Spec: schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
			Name: "workers", SchedulingPolicy: gang,
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: rack},
		}}},
	}
	if _, err := c.SchedulingV1beta1().Workloads("default").Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Workload (is scheduling.k8s.io/v1beta1 served?): %v", err)
	}
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train-workers", Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: "train", TemplateName: "workers"},
			SchedulingPolicy:      gang,
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: rack},
		},
	}
	if _, err := c.SchedulingV1beta1().PodGroups("default").Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodGroup: %v", err)
	}
	startSchedulerProcess(t, bin, cp, workloadConfig)
	member := func(i int) string {
		return createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("worker-%d", i), SchedulerName: schedModeName, GPUs: 8,
			Labels: map[string]string{queueLabel: "batch"}, PodGroup: pg.Name}).Name
	}
	// A plain pod first: its scheduling proves this scheduler leads
	// (leader.go), which a PodGroup's pods cannot while kube's queue holds
	// them until minCount exist.
	one := createPod(ctx, t, c, podSpec{Name: "single", SchedulerName: schedModeName, GPUs: 1,
		Labels: map[string]string{queueLabel: "batch"}, NodeSelector: map[string]string{"kubernetes.io/hostname": "n0"}})
	waitBound(ctx, t, c, "default", []string{one.Name}, 90*time.Second) // the binary elects itself leader first: slower on a cold machine
	names := []string{member(0), member(1)}
	waitCondition(ctx, t, c, "default", "worker-0", "2 of 3 exist")
	for _, n := range names {
		if p, _ := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{}); p != nil && p.Spec.NodeName != "" {
			t.Fatalf("%s bound to %s before its PodGroup's minCount pods exist", n, p.Spec.NodeName)
		}
	}
	names = append(names, member(2))
	bound := waitBound(ctx, t, c, "default", names, 30*time.Second)
	var nodes []string
	for _, n := range names {
		nodes = append(nodes, bound[n].Spec.NodeName)
		if !strings.HasPrefix(bound[n].Spec.NodeName, "n") || bound[n].Spec.NodeName < "n2" {
			t.Errorf("%s bound to %s, outside rack r1 (n2..n4)", n, bound[n].Spec.NodeName)
		}
	}
	t.Logf("PodGroup %s bound on %v", pg.Name, nodes)
}
