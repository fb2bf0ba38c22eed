package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestKubeFiltersFirstCycle (issue 26, defect 4): pods whose placement
// kube's InterPodAffinity or PodTopologySpread filters restrict are
// planned, on their first cycle, only where those filters accept: n1
// comes first and has room for each, but a running pod there rules it out
// (required anti-affinity of the new pod, or of the running one against
// the new pod's labels, a DoNotSchedule spread), or a running pod on n2
// is required (pod affinity).
func TestKubeFiltersFirstCycle(t *testing.T) {
	app := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
	}
	term := func(v string) []v1.PodAffinityTerm {
		return []v1.PodAffinityTerm{{LabelSelector: app(v), TopologyKey: "kubernetes.io/hostname"}}
	}
	cases := []struct {
		name    string
		running []*v1.Pod // on n1 unless said
		p       func(*v1.Pod)
	}{
		{"anti-affinity", []*v1.Pod{boundPod("a", "n1", 4, "0,1,2,3", map[string]string{"app": "x"})}, func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term("x")}}
		}},
		{"existing anti-affinity", []*v1.Pod{func() *v1.Pod {
			a := boundPod("a", "n1", 4, "0,1,2,3", nil)
			a.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term("p")}}
			return a
		}()}, func(p *v1.Pod) { p.Labels = map[string]string{"app": "p"} }},
		{"affinity", []*v1.Pod{boundPod("a", "n1", 4, "0,1,2,3", nil), boundPod("b", "n2", 2, "0,1", map[string]string{"app": "y"})}, func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term("y")}}
		}},
		{"topology spread", []*v1.Pod{boundPod("a", "n1", 4, "0,1,2,3", map[string]string{"app": "s"})}, func(p *v1.Pod) {
			p.Labels = map[string]string{"app": "s"}
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: app("s")}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
			p := schedPod("p", 4, nil)
			tc.p(p)
			io.pods = append(tc.running, p)
			step(h, io, 0)
			if a, ok := h.assignmentOf(p.UID); !ok || a.node != "n2" {
				t.Fatalf("p: %+v %v (pending %q), want n2 on the first cycle", a, ok, io.pending["p"])
			}
		})
	}
}

// TestKubeFiltersNoNodeSaysWhy (issue 26, defect 4): a pod kube's filters
// refuse everywhere is not planned, and its pending message names the
// filter.
func TestKubeFiltersNoNodeSaysWhy(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	x := map[string]string{"app": "x"}
	p := schedPod("p", 4, nil)
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: x}, TopologyKey: "kubernetes.io/hostname"}}}}
	io.pods = []*v1.Pod{boundPod("a", "n1", 2, "0,1", x), boundPod("b", "n2", 2, "0,1", x), p}
	step(h, io, 0)
	if a, ok := h.assignmentOf(p.UID); ok {
		t.Fatalf("p planned on %s, where a pod it is anti-affine to runs", a.node)
	}
	if msg := io.pending["p"]; !strings.Contains(msg, "InterPodAffinity") {
		t.Errorf("p's pending message %q does not name kube's InterPodAffinity filter", msg)
	}
}

// TestKubeFiltersCountPlannedPods (issue 26, defect 4): a pod gpusched
// planned in an earlier cycle that kube has not bound yet counts on its
// node: a pod anti-affine to it is planned on the other node.
func TestKubeFiltersCountPlannedPods(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	x := map[string]string{"app": "x"}
	first := schedPod("first", 4, x)
	io.pods = []*v1.Pod{first}
	step(h, io, 0)
	a, ok := h.assignmentOf(first.UID)
	if !ok {
		t.Fatalf("first not planned: %q", io.pending["first"])
	}
	p := schedPod("p", 4, nil)
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: x}, TopologyKey: "kubernetes.io/hostname"}}}}
	io.pods = append(io.pods, p)
	step(h, io, time.Second)
	if b, ok := h.assignmentOf(p.UID); !ok || b.node == a.node {
		t.Fatalf("p: %+v %v (pending %q), want the node other than first's %s", b, ok, io.pending["p"], a.node)
	}
}

// localVolume returns a bound local volume only nodes reach and its
// bound claim (namespace default).
func localVolume(claim string, nodes ...string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + claim}, Spec: v1.PersistentVolumeSpec{
		Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		ClaimRef:    &v1.ObjectReference{Namespace: "default", Name: claim, UID: types.UID("uid-" + claim)},
		NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: nodes}}}}}},
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/data"}},
	}, Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default", UID: types.UID("uid-" + claim),
		Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec:   v1.PersistentVolumeClaimSpec{VolumeName: pv.Name, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	return pv, pvc
}

// withVolumes gives h kube's filters with VolumeBinding, over informers
// of a fake clientset holding objs, synced; they stop with the test.
func withVolumes(t *testing.T, h *host, objs ...runtime.Object) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	inf := informers.NewSharedInformerFactory(cs, 0)
	ctx, cancel := context.WithCancel(context.Background())
	h.kf = newKubeFilters(ctx, inf, cs)
	if h.kf.err != nil {
		cancel()
		t.Fatal(h.kf.err)
	}
	inf.Start(ctx.Done())
	t.Cleanup(func() { cancel(); inf.Shutdown() })
	inf.WaitForCacheSync(ctx.Done())
}

// claimVolume mounts claim in p.
func claimVolume(p *v1.Pod, claim string) {
	p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
}

// TestKubeFiltersVolumeTopology (issue 26, defect 4): a pod whose claim is
// bound to a volume only n2 reaches is planned on n2 on its first cycle
// (kube's VolumeBinding filter, with the scheduler's informers).
func TestKubeFiltersVolumeTopology(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	pv, pvc := localVolume("data", "n2")
	withVolumes(t, h, pv, pvc)
	p := schedPod("p", 4, nil)
	claimVolume(p, "data")
	io.pods = []*v1.Pod{boundPod("a", "n1", 2, "0,1", nil), p}
	step(h, io, 0)
	if a, ok := h.assignmentOf(p.UID); !ok || a.node != "n2" {
		t.Fatalf("p: %+v %v (pending %q), want n2 (its volume's node) on the first cycle", a, ok, io.pending["p"])
	}
}
