package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeGroups is a podGroupLookup over a map "namespace/name" → PodGroup.
type fakeGroups map[string]*schedulingv1beta1.PodGroup

func (f fakeGroups) podGroup(ns, name string) (*schedulingv1beta1.PodGroup, bool) {
	pg, ok := f[ns+"/"+name]
	return pg, ok
}

// gangPodGroup is a gang PodGroup of minCount pods in "default", required on
// the domain of the node label topologyKey ("" for none).
func gangPodGroup(name string, minCount int32, topologyKey string) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}},
	}
	if topologyKey != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
			Topology: []schedulingv1beta1.TopologyConstraint{{Key: topologyKey}}}
	}
	return pg
}

// groupPod is schedPod referencing the PodGroup group.
func groupPod(name string, gpus int, group string, labels map[string]string) *v1.Pod {
	p := schedPod(name, gpus, labels)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

// TestHostWorkloadPodGroupGang: pods referencing a gang PodGroup form one
// job, held until minCount of them exist, then let through together.
func TestHostWorkloadPodGroupGang(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.args.groups = fakeGroups{"default/pg": gangPodGroup("pg", 2, "")}
	ctx := context.Background()
	io.pods = []*v1.Pod{groupPod("w-0", 8, "pg", nil)}
	h.cycle(ctx)
	if len(io.activated) != 0 || !strings.Contains(io.pending["w-0"], "1 of 2 exist") {
		t.Fatalf("one pod of a minCount-2 PodGroup: activated %v, reason %q", io.activated, io.pending["w-0"])
	}
	io.pods = append(io.pods, groupPod("w-1", 8, "pg", nil))
	h.cycle(ctx)
	if strings.Join(io.activated, ",") != "w-0,w-1" {
		t.Fatalf("activated %v, want the whole PodGroup w-0,w-1; events %v; pending %v", io.activated, io.events, io.pending)
	}
	if _, ok := h.s.Job("default/podgroup/pg"); !ok {
		t.Errorf("no job default/podgroup/pg")
	}
	bindAll(t, h, io)
	h.cycle(ctx)
	if st, _ := h.s.Job("default/podgroup/pg"); st.State.String() != "running" {
		t.Errorf("PodGroup job %s after its pods bound, want running", st.State)
	}
}

// TestHostWorkloadPodGroupMissingWaits: a pod whose PodGroup does not
// exist (yet) waits for it; it is not bound alone.
func TestHostWorkloadPodGroupMissingWaits(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.args.groups = fakeGroups{}
	io.pods = []*v1.Pod{groupPod("w-0", 8, "pg", nil)}
	h.cycle(context.Background())
	if len(io.activated) != 0 || !strings.Contains(io.pending["w-0"], "PodGroup default/pg") {
		t.Fatalf("a pod of a missing PodGroup: activated %v, reason %q", io.activated, io.pending["w-0"])
	}
	h.args.groups = fakeGroups{"default/pg": gangPodGroup("pg", 1, "")}
	h.cycle(context.Background())
	if strings.Join(io.activated, ",") != "w-0" {
		t.Fatalf("activated %v once the PodGroup exists, want w-0", io.activated)
	}
}

// TestHostWorkloadAPINotServed: without the API (groups nil) a pod's
// schedulingGroup is ignored: it is a job of its own, as before.
func TestHostWorkloadAPINotServed(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io.pods = []*v1.Pod{groupPod("w-0", 8, "pg", nil)}
	h.cycle(context.Background())
	if strings.Join(io.activated, ",") != "w-0" {
		t.Fatalf("activated %v, want w-0 (labels only without the API)", io.activated)
	}
}

// TestHostWorkloadBasicPolicy: a PodGroup with the basic policy is no
// gang: its pods are jobs of their own.
func TestHostWorkloadBasicPolicy(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	pg := gangPodGroup("pg", 1, "")
	pg.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
	h.args.groups = fakeGroups{"default/pg": pg}
	io.pods = []*v1.Pod{groupPod("w-0", 4, "pg", nil), groupPod("w-1", 4, "pg", nil)}
	h.cycle(context.Background())
	if _, ok := h.s.Job("default/w-0"); !ok {
		t.Fatalf("basic PodGroup: no single-pod job default/w-0 (activated %v)", io.activated)
	}
}

// TestHostWorkloadLabelsTakePrecedence: a pod with the gang label and a
// schedulingGroup is formed from its labels; the PodGroup is not read.
func TestHostWorkloadLabelsTakePrecedence(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.args.groups = fakeGroups{"default/pg": gangPodGroup("pg", 3, "")}
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{groupPod("w-0", 8, "pg", g), groupPod("w-1", 8, "pg", g)}
	h.cycle(context.Background())
	if strings.Join(io.activated, ",") != "w-0,w-1" {
		t.Fatalf("activated %v, want the label gang w-0,w-1 (size 2, not the PodGroup's minCount 3); pending %v", io.activated, io.pending)
	}
	if _, ok := h.s.Job("default/gang/g"); !ok {
		t.Errorf("no job default/gang/g: labels must take precedence")
	}
}

// TestWorkloadTopologyConstraint: the PodGroup's topology key maps to the
// level whose node label it is; a key gpusched does not read is an error
// naming the PodGroup and the field.
func TestWorkloadTopologyConstraint(t *testing.T) {
	a := schedArgs()
	a.TopologyLevels = []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}
	for _, c := range []struct{ key, level, err string }{
		{"net.example.com/tor", "tor", ""},
		{"kubernetes.io/hostname", "host", ""},
		{DefaultGPUCliqueLabel, "nvlink", ""},
		{"topology.kubernetes.io/zone", "", "spec.schedulingConstraints.topology[0].key"},
	} {
		a.groups = fakeGroups{"default/pg": gangPodGroup("pg", 2, c.key)}
		pods := []*v1.Pod{groupPod("w-0", 8, "pg", nil), groupPod("w-1", 8, "pg", nil)}
		jobs := jobsOf(pods, a, 0)
		if len(jobs) != 1 {
			t.Fatalf("%s: %d jobs, want one", c.key, len(jobs))
		}
		j := jobs[0]
		if c.err != "" {
			if j.err == nil || !strings.Contains(j.err.Error(), c.err) || !strings.Contains(j.err.Error(), "default/pg") {
				t.Errorf("%s: err %v, want one naming default/pg and %s", c.key, j.err, c.err)
			}
			continue
		}
		if j.err != nil {
			t.Fatalf("%s: %v", c.key, j.err)
		}
		if tc := j.spec.Topology; len(tc) != 1 || tc[0].Level != c.level || !tc[0].Required {
			t.Errorf("%s: topology %+v, want %s required", c.key, tc, c.level)
		}
	}
}

// TestWorkloadMinCountBelowPods: more pods than minCount make an elastic
// gang: all its pods, at least minCount of them placed together; an edit
// of minCount applies without a pod changing.
func TestWorkloadMinCountBelowPods(t *testing.T) {
	a := schedArgs()
	pg := gangPodGroup("pg", 2, "")
	a.groups = fakeGroups{"default/pg": pg}
	pods := []*v1.Pod{groupPod("w-0", 1, "pg", nil), groupPod("w-1", 1, "pg", nil), groupPod("w-2", 1, "pg", nil)}
	var c jobCache
	j := c.jobsOf(pods, a, 0)[0]
	if j.err != nil || j.spec.Groups[0].Count != 3 || j.spec.Groups[0].MinCount != 2 {
		t.Fatalf("job %+v (err %v), want 3 tasks, minimum 2", j.spec.Groups, j.err)
	}
	pg2 := gangPodGroup("pg", 3, "")
	pg2.ResourceVersion = "2"
	a.groups = fakeGroups{"default/pg": pg2}
	if j := c.jobsOf(pods, a, 0)[0]; j.spec.Groups[0].MinCount != 0 {
		t.Fatalf("after minCount 3: minimum %d, want the whole gang (0)", j.spec.Groups[0].MinCount)
	}
}
