package plugin

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func nodeInfo(n *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

func podInfo(t *testing.T, p *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// TestPreemptionDryRunAfterFailedPreFilter replays what kube-scheduler's
// DefaultPreemption does for a GPU pod that PreFilter rejected on a full
// cluster: Filter on every node, RemovePod of victims on clones of the
// cycle state, Filter again. Before the fix Filter dereferenced a nil
// cluster here and took the scheduler down.
func TestPreemptionDryRunAfterFailedPreFilter(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	hs := newHarness(t, defaultArgs(), n1, n2)
	var victims []*v1.Pod
	for i, n := range []string{"n1", "n1", "n2", "n2"} {
		// n1: 4+4 GPUs, n2: 4+4 GPUs: full.
		victims = append(victims, hs.add(pod("low-"+string(rune('a'+i)), n, 4, 1000)))
	}
	big := pod("high", "", 8, 1000)
	ctx := context.Background()
	cs := framework.NewCycleState()
	if _, st := hs.p.PreFilter(ctx, cs, big, nil); st.Code() != fwk.Unschedulable {
		t.Fatalf("PreFilter on a full cluster: %v, want Unschedulable", st)
	}
	// Filter on the state the failed PreFilter left: every node full.
	for _, n := range []*v1.Node{n1, n2} {
		if st := hs.p.Filter(ctx, cs, big, nodeInfo(n)); st.Code() != fwk.Unschedulable {
			t.Errorf("Filter %s: %v, want Unschedulable (no GPU free)", n.Name, st)
		}
	}
	// Dry run on n1: removing one victim is not enough, both are.
	c1 := cs.Clone()
	if st := hs.p.PreFilterExtensions().RemovePod(ctx, c1, big, podInfo(t, victims[0]), nodeInfo(n1)); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := hs.p.Filter(ctx, c1, big, nodeInfo(n1)); st.Code() != fwk.Unschedulable {
		t.Errorf("Filter n1 without one victim: %v, want Unschedulable (4 of 8 free)", st)
	}
	c2 := c1.Clone()
	if st := hs.p.PreFilterExtensions().RemovePod(ctx, c2, big, podInfo(t, victims[1]), nodeInfo(n1)); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := hs.p.Filter(ctx, c2, big, nodeInfo(n1)); !st.IsSuccess() {
		t.Errorf("Filter n1 without both victims: %v, want success", st)
	}
	// Clones are independent: c1 still lacks room, and the original state
	// was not touched.
	if st := hs.p.Filter(ctx, c1, big, nodeInfo(n1)); st.IsSuccess() {
		t.Error("RemovePod on a clone changed its parent")
	}
	// A nominated pod added back takes the room again.
	if st := hs.p.PreFilterExtensions().AddPod(ctx, c2, big, podInfo(t, pod("nominated", "", 2, 0)), nodeInfo(n1)); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := hs.p.Filter(ctx, c2, big, nodeInfo(n1)); st.Code() != fwk.Unschedulable {
		t.Errorf("Filter n1 with a nominated 2-GPU pod: %v, want Unschedulable", st)
	}
	hs.check()
}

// TestExtensionPointsWithoutPreFilter calls every extension point on a cycle
// state that PreFilter never wrote (it was skipped, or another plugin
// rejected the pod first), and on pods PreFilter rejected for bad input: no
// panic, and no GPUs taken.
func TestExtensionPointsWithoutPreFilter(t *testing.T) {
	n1 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	hs := newHarness(t, defaultArgs(), n1)
	ctx := context.Background()
	bad := pod("bad", "", 2, 1000)
	bad.Labels = map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "zero"}
	huge := pod("huge", "", 300, 0)
	for _, p := range []*v1.Pod{pod("plain", "", 2, 1000), bad, huge} {
		for _, prefilter := range []bool{false, true} {
			cs := framework.NewCycleState()
			if prefilter {
				hs.p.PreFilter(ctx, cs, p, nil)
			}
			ni := nodeInfo(n1)
			ext := hs.p.PreFilterExtensions()
			ext.AddPod(ctx, cs, p, podInfo(t, pod("x", "n1", 1, 0)), ni)
			ext.RemovePod(ctx, cs, p, podInfo(t, pod("y", "n1", 1, 0)), ni)
			hs.p.Filter(ctx, cs, p, ni)
			hs.p.PostFilter(ctx, cs, p, nil)
			hs.p.PreScore(ctx, cs, p, []fwk.NodeInfo{ni})
			hs.p.Score(ctx, cs, p, ni)
			hs.p.Unreserve(ctx, cs, p, "n1")
			hs.p.Permit(ctx, cs, p, "n1")
			hs.p.PreBindPreFlight(ctx, cs, p, "n1")
			hs.p.PreBind(ctx, cs, p, "n1")
		}
	}
	hs.check()
	if free := hs.p.st.ledger.HostFreeGPUs(0); free != 8 {
		t.Errorf("%d of 8 GPUs free after the calls, want 8", free)
	}
}

// TestGangFilterRejectsUnusableNodes: a gang member without a plan can use no
// node and a planned one only its planned node, both unresolvable, so
// DefaultPreemption never evicts pods for a gang gpusched cannot place.
func TestGangFilterRejectsUnusableNodes(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	hs := newHarness(t, defaultArgs(), n1, n2)
	hs.add(pod("busy", "n1", 6, 0))
	member := func(name string) *v1.Pod {
		p := pod(name, "", 8, 0)
		p.Labels = map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
		return p
	}
	a, b := hs.add(member("a")), hs.add(member("b"))
	ctx := context.Background()
	cs := framework.NewCycleState()
	if _, st := hs.p.PreFilter(ctx, cs, a, nil); st.IsSuccess() {
		t.Fatal("a 2×8-GPU gang placed with 10 GPUs free")
	}
	for _, n := range []*v1.Node{n1, n2} {
		if st := hs.p.Filter(ctx, cs, a, nodeInfo(n)); st.Code() != fwk.UnschedulableAndUnresolvable {
			t.Errorf("Filter %s for an unplaced gang: %v, want UnschedulableAndUnresolvable", n.Name, st)
		}
	}
	// Room for the gang: it is planned, and its members may use their node only.
	hs.p.onPodDelete(pod("busy", "n1", 6, 0))
	cs = framework.NewCycleState()
	res, st := hs.p.PreFilter(ctx, cs, b, nil)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	for _, n := range []*v1.Node{n1, n2} {
		st := hs.p.Filter(ctx, cs, b, nodeInfo(n))
		if res.NodeNames.Has(n.Name) != st.IsSuccess() {
			t.Errorf("Filter %s: %v; planned %v", n.Name, st, res.NodeNames.UnsortedList())
		}
		if !st.IsSuccess() && st.Code() != fwk.UnschedulableAndUnresolvable {
			t.Errorf("Filter %s off the plan: %v, want UnschedulableAndUnresolvable", n.Name, st)
		}
	}
}
