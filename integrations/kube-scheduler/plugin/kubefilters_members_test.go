package plugin

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
)

// Constraints between the pods planned in one cycle (issue 26, defect
// 4): between the members of one gang, and between jobs planned
// together. kube's filters see a pod only with the pods bound or planned
// before it; a plan that puts two such pods where kube rejects the second
// sends the job through PostFilter and a backoff instead of binding.

// appSel selects the pods labelled app=v.
func appSel(v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
}

// antiAffine makes p require no pod labelled app=v in its domain of key.
func antiAffine(p *v1.Pod, v, key string) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: appSel(v), TopologyKey: key}}}}
	return p
}

// gangMembers returns the n pods of gang name, each wanting gpus GPUs and
// labelled app=name.
func gangMembers(name string, n, gpus int) []*v1.Pod {
	var out []*v1.Pod
	for i := range n {
		out = append(out, schedPod(name+"-"+string(rune('0'+i)), gpus, map[string]string{
			DefaultGangLabel: name, DefaultGangSizeKey: string(rune('0' + n)), "app": name}))
	}
	return out
}

// nodesOf returns the planned node of each pod, by name ("" if none).
func nodesOf(h *host, pods []*v1.Pod) map[string]string {
	m := map[string]string{}
	for _, p := range pods {
		a, _ := h.assignmentOf(p.UID)
		m[p.Name] = a.node
	}
	return m
}

// TestKubeFiltersGangSelfConstraint (issue 26, defect 4): a gang whose
// members require pod anti-affinity against each other on the hostname
// (one member per node, the usual shape of distributed training), or
// spread over the hostname with maxSkew 1, is planned on distinct nodes
// on its first cycle, although one node has room for two members.
func TestKubeFiltersGangSelfConstraint(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*v1.Pod)
	}{
		{"anti-affinity", func(p *v1.Pod) { antiAffine(p, "g", "kubernetes.io/hostname") }},
		{"spread", func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSel("g")}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
			pods := gangMembers("g", 2, 4)
			for _, p := range pods {
				tc.set(p)
			}
			io.pods = pods
			step(h, io, 0)
			got := nodesOf(h, pods)
			if got["g-0"] == "" || got["g-1"] == "" || got["g-0"] == got["g-1"] {
				t.Fatalf("members planned on %v (pending %q), want two distinct nodes on the first cycle", got, io.pending["g-0"])
			}
		})
	}
}

// TestKubeFiltersGangSelfAntiAffinityTooFewNodes (issue 26, defect 4): a
// gang of three members anti-affine to each other on the hostname does
// not fit two nodes, however many GPUs they have: it is not planned, no
// member is activated, and its pending message says one pod per node.
func TestKubeFiltersGangSelfAntiAffinityTooFewNodes(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	pods := gangMembers("g", 3, 2)
	for _, p := range pods {
		antiAffine(p, "g", "kubernetes.io/hostname")
	}
	io.pods = pods
	for range 3 {
		step(h, io, time.Second)
	}
	if len(io.activated) != 0 {
		t.Fatalf("activated %v: three members anti-affine on the hostname cannot share two nodes", io.activated)
	}
	if msg := io.pending["g-0"]; !strings.Contains(msg, "at most 1 of its pods per node") {
		t.Errorf("g-0's pending message %q does not say one pod per node", msg)
	}
}

// TestKubeFiltersSameCycleAntiAffinity (issue 26, defect 4): two pods
// waiting together, one anti-affine to the other (either way round), both
// fitting n1: both are planned on distinct nodes in the first cycle (the
// plan that put the second next to the first is taken back before any
// activation and made again at once), no pod is activated more than
// once, and the plan taken back is counted (PlanConflict).
func TestKubeFiltersSameCycleAntiAffinity(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b *v1.Pod
	}{
		{"new anti-affine to new", schedPod("a", 4, map[string]string{"app": "x"}), antiAffine(schedPod("b", 4, nil), "x", "kubernetes.io/hostname")},
		{"reversed", antiAffine(schedPod("a", 4, nil), "x", "kubernetes.io/hostname"), schedPod("b", 4, map[string]string{"app": "x"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
			set := newMetricSet()
			metrics.NewKubeRegistry().MustRegister(set.collectors()...)
			h.metrics = newCycleMetrics(set, "gpusched")
			io.pods = []*v1.Pod{tc.a, tc.b}
			step(h, io, time.Second)
			got := nodesOf(h, io.pods)
			if got["a"] == "" || got["b"] == "" || got["a"] == got["b"] {
				t.Fatalf("planned %v after the first cycle (pending a %q, b %q), want a and b on distinct nodes", got, io.pending["a"], io.pending["b"])
			}
			if io.pending["a"] != "" || io.pending["b"] != "" {
				t.Errorf("planned pods marked pending: a %q, b %q", io.pending["a"], io.pending["b"])
			}
			for _, n := range []string{"a", "b"} {
				if c := strings.Count(","+strings.Join(io.activated, ",")+",", ","+n+","); c > 1 {
					t.Errorf("%s activated %d times: %v", n, c, io.activated)
				}
			}
			if got := counterOf(t, set.withdrawn, WithdrawnPlanConflict); got != 1 {
				t.Errorf("withdrawn{PlanConflict} = %v, want 1 (the second plan of the first decision)", got)
			}
		})
	}
}

// TestKubeFiltersGangMemberVolumes (issue 26, defect 4): each member of a
// gang has its own claim, bound to a volume only some nodes reach (g-0's:
// n2 or n3; g-1's: n3 alone): no member is planned on a node its volume
// does not reach, although n2 comes first and g-0 alone fits it.
func TestKubeFiltersGangMemberVolumes(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil), gpuNode("n3", 8, h100, nil))
	pv0, pvc0 := localVolume("data-0", "n2", "n3")
	pv1, pvc1 := localVolume("data-1", "n3")
	withVolumes(t, h, pv0, pvc0, pv1, pvc1)
	pods := gangMembers("g", 2, 4)
	for i, p := range pods {
		claimVolume(p, "data-"+string(rune('0'+i)))
	}
	// n1 is taken in part, so that a packing planner would start on n2.
	io.pods = append([]*v1.Pod{boundPod("a", "n1", 2, "0,1", nil)}, pods...)
	step(h, io, 0)
	got := nodesOf(h, pods)
	if !slices.Contains([]string{"n2", "n3"}, got["g-0"]) || got["g-1"] != "n3" {
		t.Fatalf("members planned on %v (pending %q), want g-0 on n2 or n3 and g-1 on n3", got, io.pending["g-0"])
	}
}

// TestKubeFiltersGangZoneAntiAffinityNeverActivatedWrong (issue 26,
// defect 4): a gang whose members are anti-affine to each other on a zone
// label (not the hostname) is never activated on nodes where kube would
// reject a member, cycle after cycle, and its pending message says why;
// once planned, its members are in distinct zones.
func TestKubeFiltersGangZoneAntiAffinityNeverActivatedWrong(t *testing.T) {
	zone := "topology.kubernetes.io/zone"
	h, io := newTestHost(t, gpuNode("n1", 8, h100, map[string]string{zone: "a"}), gpuNode("n2", 8, h100, map[string]string{zone: "a"}),
		gpuNode("n3", 8, h100, map[string]string{zone: "b"}))
	pods := gangMembers("g", 2, 4)
	for _, p := range pods {
		antiAffine(p, "g", zone)
	}
	io.pods = pods
	zoneOf := map[string]string{"n1": "a", "n2": "a", "n3": "b"}
	for i := range 8 {
		step(h, io, time.Second)
		got := nodesOf(h, pods)
		if got["g-0"] != "" && zoneOf[got["g-0"]] == zoneOf[got["g-1"]] {
			t.Fatalf("cycle %d: members planned on %v, one zone", i, got)
		}
	}
	if len(io.activated) > 2 {
		t.Errorf("activated %v: more than once each", io.activated)
	}
	if len(io.activated) == 0 && io.pending["g-0"] == "" {
		t.Errorf("not planned and no pending message")
	}
}

// TestKubeFiltersGangWaitForFirstConsumer (issue 26, defect 4): each
// member of a gang has its own claim, not bound yet, of a
// WaitForFirstConsumer class whose volumes can be provisioned in zone b
// alone: the gang is planned in zone b (n1, in zone a, comes first and
// has room), whichever member kube binds first.
func TestKubeFiltersGangWaitForFirstConsumer(t *testing.T) {
	zone := "topology.kubernetes.io/zone"
	h, io := newTestHost(t, gpuNode("n1", 8, h100, map[string]string{zone: "a"}), gpuNode("n2", 8, h100, map[string]string{zone: "b"}),
		gpuNode("n3", 8, h100, map[string]string{zone: "b"}))
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: "example.com/csi", VolumeBindingMode: &wffc,
		AllowedTopologies: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: zone, Values: []string{"b"}}}}}}
	objs := []runtime.Object{sc}
	pods := gangMembers("g", 2, 8)
	for i, p := range pods {
		name := "data-" + string(rune('0'+i))
		class := "zonal"
		objs = append(objs, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
			Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
			Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}})
		claimVolume(p, name)
	}
	withVolumes(t, h, objs...)
	io.pods = pods
	step(h, io, 0)
	got := nodesOf(h, pods)
	if got["g-0"] == got["g-1"] || !slices.Contains([]string{"n2", "n3"}, got["g-0"]) || !slices.Contains([]string{"n2", "n3"}, got["g-1"]) {
		t.Fatalf("members planned on %v (pending %q), want n2 and n3 (zone b)", got, io.pending["g-0"])
	}
}
