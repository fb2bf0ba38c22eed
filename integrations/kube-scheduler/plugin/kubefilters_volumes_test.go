package plugin

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// rwopVolume returns a bound volume any node reaches and its bound claim
// (namespace default), ReadWriteOncePod: one pod in the cluster at a time.
func rwopVolume(claim string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	return boundCSIVolume(claim, "example.com/csi", v1.ReadWriteOncePod)
}

// boundCSIVolume returns a bound volume of driver (handle: the claim's
// name) any node reaches and its bound claim (namespace default), of
// access mode.
func boundCSIVolume(claim, driver string, mode v1.PersistentVolumeAccessMode) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	modes := []v1.PersistentVolumeAccessMode{mode}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            modes,
		ClaimRef:               &v1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID("uid-" + claim)},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: claim}},
	}, Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default", UID: types.UID("uid-" + claim),
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: pv.Name, AccessModes: modes},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: modes}}
	return pv, pvc
}

// TestKubeFiltersSameCycleReadWriteOncePod (issue 26, defect 4): two
// pods waiting together that mount the same ReadWriteOncePod claim (kube's
// VolumeRestrictions lets one pod in the cluster use it): only one is
// planned and activated, cycle after cycle, and the other's pending
// message says why; once the first is bound, the second is refused by
// the filters before planning. A gang whose two members share one such
// claim is never activated.
func TestKubeFiltersSameCycleReadWriteOncePod(t *testing.T) {
	t.Run("two jobs", func(t *testing.T) {
		pv, pvc := rwopVolume("data")
		oneOfTwo(t, 4, "data", "ReadWriteOncePod", pv, pvc)
	})
	t.Run("gang", func(t *testing.T) {
		h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
		pv, pvc := rwopVolume("data")
		withVolumes(t, h, pv, pvc)
		pods := gangMembers("g", 2, 4)
		for _, p := range pods {
			claimVolume(p, "data")
		}
		io.pods = pods
		for range 3 {
			step(h, io, time.Second)
		}
		if len(io.activated) != 0 {
			t.Fatalf("activated %v: two members cannot share a ReadWriteOncePod claim", io.activated)
		}
		if msg := io.pending["g-0"]; !strings.Contains(msg, "ReadWriteOncePod") {
			t.Errorf("g-0's pending message %q does not name the ReadWriteOncePod conflict", msg)
		}
	})
}

// unboundClaim returns a WaitForFirstConsumer class and a claim of it not
// bound yet (namespace default).
func unboundClaim(claim string) (*storagev1.StorageClass, *v1.PersistentVolumeClaim) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Provisioner: "example.com/csi", VolumeBindingMode: &wffc}
	class := sc.Name
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default", UID: types.UID("uid-" + claim)},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
	return sc, pvc
}

// TestKubeFiltersSameCycleUnboundClaim (issue 26, defect 4): two 8-GPU
// pods of different jobs mount one WaitForFirstConsumer claim not bound
// yet: kube provisions it for the node of the first bound and refuses
// the other nodes to the second until it is bound, so only one is
// planned (the other would go to the other node), and the other's
// pending message names the claim. Two members of one gang sharing it
// are left to kube (planned as before).
func TestKubeFiltersSameCycleUnboundClaim(t *testing.T) {
	t.Run("two jobs", func(t *testing.T) {
		sc, pvc := unboundClaim("shared")
		oneOfTwo(t, 8, "shared", "claim default/shared is not bound yet", sc, pvc)
	})
	t.Run("gang", func(t *testing.T) {
		h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
		sc, pvc := unboundClaim("shared")
		withVolumes(t, h, sc, pvc)
		pods := gangMembers("g", 2, 8)
		for _, p := range pods {
			claimVolume(p, "shared")
		}
		io.pods = pods
		step(h, io, time.Second)
		if len(io.activated) != 2 {
			t.Fatalf("activated %v (pending %q), want both members: one job's pods are left to kube", io.activated, io.pending["g-0"])
		}
	})
}

// oneOfTwo runs pods a and b (gpus GPUs each, of two 8-GPU nodes), both
// mounting claim (objs: its objects), for three cycles: exactly one of
// them must be planned and activated, never both, and the other's
// pending message must contain why.
func oneOfTwo(t *testing.T, gpus int, claim, why string, objs ...runtime.Object) {
	t.Helper()
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	withVolumes(t, h, objs...)
	a, b := schedPod("a", gpus, nil), schedPod("b", gpus, nil)
	claimVolume(a, claim)
	claimVolume(b, claim)
	io.pods = []*v1.Pod{a, b}
	for range 3 {
		step(h, io, time.Second)
		_, okA := h.assignmentOf(a.UID)
		_, okB := h.assignmentOf(b.UID)
		if okA && okB {
			t.Fatalf("a and b both planned (activated %v): they share claim %s", io.activated, claim)
		}
	}
	if len(io.activated) != 1 {
		t.Fatalf("activated %v, want one of a and b once (pending %v)", io.activated, io.pending)
	}
	waiting := map[bool]string{true: "a", false: "b"}[io.activated[0] == "b"]
	if msg := io.pending[waiting]; !strings.Contains(msg, why) {
		t.Errorf("%s's pending message %q does not say %q", waiting, msg, why)
	}
}
