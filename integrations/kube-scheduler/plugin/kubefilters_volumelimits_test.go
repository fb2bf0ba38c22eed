package plugin

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// limitedDriver is the CSI driver of the volume-limit tests.
const limitedDriver = "attach.example.com"

// csiVolume returns a bound volume of limitedDriver any node reaches and
// its bound claim (namespace default, ReadWriteOnce).
func csiVolume(claim string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	return boundCSIVolume(claim, limitedDriver, v1.ReadWriteOnce)
}

// csiNode returns node's CSINode: limitedDriver attaches at most limit
// volumes there.
func csiNode(node string, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
		Name: limitedDriver, NodeID: node, Allocatable: &storagev1.VolumeNodeResources{Count: &limit}}}}}
}

// volumeObjects returns the volumes and claims of claims (csiVolume),
// with more.
func volumeObjects(claims []string, more ...runtime.Object) []runtime.Object {
	objs := more
	for _, c := range claims {
		pv, pvc := csiVolume(c)
		objs = append(objs, pv, pvc)
	}
	return objs
}

// TestKubeFiltersNodeVolumeLimits (issue 26, defect 4): kube's
// NodeVolumeLimits refuses a node whose CSI driver would attach more
// volumes than its CSINode allows. n1 attaches one volume of the driver
// and runs pod a, which mounts one: p, mounting another, is not planned
// on n1 (alone: it waits, saying why; beside n2: it goes to n2, though
// n1 has room and packing prefers it). Two pods waiting together, each
// with a volume of the driver, on two such empty nodes, go one per node
// (the plans of one cycle count on their nodes).
func TestKubeFiltersNodeVolumeLimits(t *testing.T) {
	t.Run("one node", func(t *testing.T) {
		h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
		withVolumes(t, h, volumeObjects([]string{"va", "vp"}, csiNode("n1", 1))...)
		a := boundPod("a", "n1", 2, "0,1", nil)
		claimVolume(a, "va")
		p := schedPod("p", 4, nil)
		claimVolume(p, "vp")
		io.pods = []*v1.Pod{a, p}
		for range 3 {
			step(h, io, time.Second)
			if b, ok := h.assignmentOf(p.UID); ok {
				t.Fatalf("p planned on %s: its volume would exceed n1's attach limit", b.node)
			}
		}
		if msg := io.pending["p"]; !strings.Contains(msg, "NodeVolumeLimits") {
			t.Errorf("p's pending message %q does not name NodeVolumeLimits", msg)
		}
	})
	t.Run("two nodes", func(t *testing.T) {
		h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
		withVolumes(t, h, volumeObjects([]string{"va", "vp"}, csiNode("n1", 1), csiNode("n2", 1))...)
		a := boundPod("a", "n1", 2, "0,1", nil)
		claimVolume(a, "va")
		p := schedPod("p", 4, nil)
		claimVolume(p, "vp")
		io.pods = []*v1.Pod{a, p}
		step(h, io, time.Second)
		if b, ok := h.assignmentOf(p.UID); !ok || b.node != "n2" {
			t.Fatalf("p: %+v %v (pending %q), want n2 (n1 attaches no more volumes of %s)", b, ok, io.pending["p"], limitedDriver)
		}
	})
	t.Run("same cycle", func(t *testing.T) {
		h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
		withVolumes(t, h, volumeObjects([]string{"vp", "vq"}, csiNode("n1", 1), csiNode("n2", 1))...)
		p, q := schedPod("p", 2, nil), schedPod("q", 2, nil)
		claimVolume(p, "vp")
		claimVolume(q, "vq")
		io.pods = []*v1.Pod{p, q}
		for range 3 {
			step(h, io, time.Second)
			bp, okP := h.assignmentOf(p.UID)
			bq, okQ := h.assignmentOf(q.UID)
			if okP && okQ && bp.node == bq.node {
				t.Fatalf("p and q both planned on %s: one volume of %s attaches there", bp.node, limitedDriver)
			}
		}
		bp, okP := h.assignmentOf(p.UID)
		bq, okQ := h.assignmentOf(q.UID)
		if !okP || !okQ {
			t.Fatalf("p %+v %v, q %+v %v (pending %v): want both planned, one per node", bp, okP, bq, okQ, io.pending)
		}
	})
}
