package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestSchedulerModeNodeConstraints runs the scheduler-mode scenarios of
// issue 26, defect 4 (node constraints kube's own filters check) against
// a fresh etcd and kube-apiserver, with the scheduler in this process and
// as the binary.
func TestSchedulerModeNodeConstraints(t *testing.T) {
	runScenarios(t, []scenario{
		{"GangMembersNoCommonNode", testGangMembersNoCommonNode},
		{"NodeVolumeLimits", testNodeVolumeLimits},
		{"GangZoneSpreadBeyondMaxSkew", testGangZoneSpreadBeyondMaxSkew},
		{"GangHostnameSpreadBeyondMaxSkew", testGangHostnameSpreadBeyondMaxSkew},
	}, schedModeConfig, func(ctx context.Context, t *testing.T, cp *controlPlane) {
		createNamespace(ctx, t, cp.Client, systemNS)
		createQueueConfigMap(ctx, t, cp.Client, queuesYAML)
	})
}

// testGangMembersNoCommonNode: a gang of two 8-GPU members whose node
// selectors share no node (zone a, zone b; one node each) binds, each
// member in its own zone.
func testGangMembersNoCommonNode(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	const zone = "topology.kubernetes.io/zone"
	for _, z := range []string{"a", "b"} {
		createNode(ctx, t, c, nodeSpec{Name: "n" + z, GPUs: 8, Product: h100, Labels: map[string]string{zone: z}})
	}
	start()
	var names []string
	for i, z := range []string{"a", "b"} {
		name := fmt.Sprintf("split-%d", i)
		names = append(names, name)
		createPod(ctx, t, c, podSpec{Name: name, SchedulerName: schedModeName, GPUs: 8, NodeSelector: map[string]string{zone: z},
			Labels: map[string]string{gangLabelKey: "split", plugin.DefaultGangSizeKey: "2", queueLabel: "batch"}})
	}
	got := waitBound(ctx, t, c, "default", names, 60*time.Second)
	if got["split-0"].Spec.NodeName != "na" || got["split-1"].Spec.NodeName != "nb" {
		t.Errorf("split-0 on %s, split-1 on %s; want na and nb (their selectors')", got["split-0"].Spec.NodeName, got["split-1"].Spec.NodeName)
	}
}

// limitedDriver is the CSI driver of testNodeVolumeLimits.
const limitedDriver = "attach.example.com"

// testNodeVolumeLimits: n1 and n2 each attach one volume of a CSI driver
// (their CSINode's allocatable count); pod a, bound to n1, mounts one. Pod
// p (4 GPUs, a claim of the driver) binds to n2 on the first try, though
// n1 has room for its GPUs: gpusched plans it where kube's NodeVolumeLimits
// accepts it, so kube never rejects it on n1.
func testNodeVolumeLimits(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
		limit := int32(1)
		csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: limitedDriver, NodeID: n, Allocatable: &storagev1.VolumeNodeResources{Count: &limit}}}}}
		if _, err := c.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CSINode %s: %v", n, err)
		}
	}
	for _, claim := range []string{"va", "vp"} {
		createBoundClaim(ctx, t, c, claim)
	}
	a := volumePod("a", 2, "va")
	a.Spec.NodeName = "n1"
	if _, err := c.CoreV1().Pods("default").Create(ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod a: %v", err)
	}
	start()
	p := volumePod("p", 4, "vp")
	p.Spec.SchedulerName, p.Labels = schedModeName, map[string]string{queueLabel: "batch"}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod p: %v", err)
	}
	got := waitBound(ctx, t, c, "default", []string{"p"}, 30*time.Second)
	if n := got["p"].Spec.NodeName; n != "n2" {
		t.Errorf("p bound to %s, want n2 (n1 attaches no more volumes of %s)", n, limitedDriver)
	}
	if ev := describeEvents(ctx, c, "default"); strings.Contains(ev, "volume count") || strings.Contains(ev, "rejected by kube-scheduler") {
		t.Errorf("kube's NodeVolumeLimits rejected a plan:\n%s", ev)
	}
}

// createBoundClaim creates a volume of limitedDriver and claim (namespace
// default) bound to it, with the statuses the PV controller would write.
func createBoundClaim(ctx context.Context, t *testing.T, c kubernetesClient, claim string) {
	t.Helper()
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	pvc, err := c.CoreV1().PersistentVolumeClaims("default").Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default", Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + claim, AccessModes: rwo, StorageClassName: new(string), Resources: v1.VolumeResourceRequirements{Requests: size}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create claim %s: %v", claim, err)
	}
	pv, err := c.CoreV1().PersistentVolumes().Create(ctx, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim}, Spec: v1.PersistentVolumeSpec{
		Capacity: size, AccessModes: rwo,
		ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: claim, UID: pvc.UID},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: limitedDriver, VolumeHandle: "vol-" + claim}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create volume for %s: %v", claim, err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := c.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("volume status for %s: %v", claim, err)
	}
	pvc.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: rwo, Capacity: size}
	if _, err := c.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("claim status for %s: %v", claim, err)
	}
}

// volumePod is pod name (namespace default) of gpus GPUs mounting claim.
func volumePod(name string, gpus int64, claim string) *v1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi"), gpuResource: q}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{
		Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: req, Limits: v1.ResourceList{gpuResource: q}}}},
		Volumes:                       []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		TerminationGracePeriodSeconds: new(int64)}}
}
