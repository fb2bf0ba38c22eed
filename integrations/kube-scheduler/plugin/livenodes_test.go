package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched/topology"
)

// TestHostNodesJoinAndLeaveLive: while pods run, a node joins (into the
// ToR of an existing one) and a node running a pod is deleted. Both are
// live changes of the running Scheduler (no rebuild: the same Scheduler,
// its jobs kept): the new node takes a new pod, the deleted one takes
// nothing and leaves the cluster once its pod is gone; no pod is lost and
// no GPU is bound twice.
func TestHostNodesJoinAndLeaveLive(t *testing.T) {
	tor := func(v string) map[string]string { return map[string]string{"rack": v} }
	n1 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", tor("r1"))
	n2 := gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", tor("r1"))
	h, io := newTestHost(t, n1, n2)
	h.args.TopologyLevels = []TopologyLevel{{Name: "tor", NodeLabel: "rack"}}
	ctx := context.Background()
	step := func() { cycleBind(ctx, t, h, io) }
	io.pods = []*v1.Pod{schedPod("a", 8, nil), schedPod("b", 8, nil)}
	step()
	used(t, io.pods)
	s := h.s
	if s == nil || len(used(t, io.pods)) != 16 {
		t.Fatalf("a and b not bound: %v", used(t, io.pods))
	}
	onN2 := ""
	for _, p := range io.pods {
		if p.Spec.NodeName == "n2" {
			onN2 = p.Name
		}
	}

	// n3 joins rack r1; n2 (running onN2) is deleted; c is created.
	n3 := gpuNode("n3", 8, "NVIDIA-H100-80GB-HBM3", tor("r1"))
	io.nodes = []*v1.Node{n1, n3}
	io.pods = append(io.pods, schedPod("c", 8, nil))
	step()
	if h.s != s {
		t.Fatal("the Scheduler was rebuilt; want live changes")
	}
	u := used(t, io.pods)
	if u["n3/0"] != "c" {
		t.Fatalf("c not bound on the new node n3: %v", u)
	}
	for _, id := range []string{"default/a", "default/b"} {
		if st, ok := h.s.Job(id); !ok || !st.State.Holding() {
			t.Errorf("job %s lost by the live change: %+v %v", id, st, ok)
		}
	}
	hid, ok := h.s.Cluster().HostByName("n2")
	if !ok || h.s.Cluster().Removed(hid) {
		t.Fatal("n2 left while its pod runs; want it draining")
	}
	if got := h.s.Ledger().HostHealth(hid); got != topology.Draining {
		t.Errorf("n2 health %v, want draining", got)
	}

	// A new pod does not go to the leaving n2 (nor anywhere: full).
	io.pods = append(io.pods, schedPod("d", 8, nil))
	step()
	if _, ok := h.assignmentOf("uid-d"); ok {
		t.Fatal("d was placed; every remaining node is full")
	}
	// onN2's pod goes: n2 leaves the cluster; d still waits.
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == onN2 })
	step()
	step()
	if !h.s.Cluster().Removed(hid) {
		t.Error("n2 still in the cluster after its pod went")
	}
	if h.s != s {
		t.Fatal("the Scheduler was rebuilt; want live changes")
	}
	used(t, io.pods)
}

// cycleBind runs a cycle, binds what it placed, and runs another (which
// reports the bindings started).
func cycleBind(ctx context.Context, t *testing.T, h *host, io *fakeIO) {
	t.Helper()
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	bindAll(t, h, io)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
}

// TestHostGPUsBackLive: allocatable GPUs that drop and come back are GPU
// health changes, no rebuild.
func TestHostGPUsBackLive(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n)
	ctx := context.Background()
	h.cycle(ctx)
	s := h.s
	lost := n.DeepCopy()
	lost.Status.Allocatable[DefaultGPUResource] = *resource.NewQuantity(6, resource.DecimalSI)
	io.nodes = []*v1.Node{lost}
	io.pods = []*v1.Pod{schedPod("big", 8, nil)}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if h.s != s {
		t.Fatal("rebuilt")
	}
	if _, ok := h.assignmentOf("uid-big"); ok {
		t.Fatal("big placed on a node with 6 allocatable GPUs")
	}
	io.nodes = []*v1.Node{n}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if h.s != s {
		t.Fatal("rebuilt")
	}
	if a, ok := h.assignmentOf("uid-big"); !ok || len(a.gpus) != 8 {
		t.Fatalf("big not placed once the GPUs came back: %+v %v", a, ok)
	}
}

// TestHostNodeReshapedLive: a node running a pod changes shape (8 → 4
// GPUs): it is drained (the pod left running, deleteOnRecovery off), takes
// nothing meanwhile, and comes back with 4 GPUs once the pod is gone; a
// new pod binds there. The Scheduler is never rebuilt.
func TestHostNodeReshapedLive(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n)
	ctx := context.Background()
	step := func() { cycleBind(ctx, t, h, io) }
	io.pods = []*v1.Pod{schedPod("a", 2, nil)}
	step()
	s := h.s
	if len(used(t, io.pods)) != 2 {
		t.Fatal("a not bound")
	}
	small := gpuNode("n1", 4, "NVIDIA-H100-80GB-HBM3", nil)
	io.nodes = []*v1.Node{small}
	io.pods = append(io.pods, schedPod("b", 4, nil))
	step()
	if h.s != s {
		t.Fatal("rebuilt; want a live reshape")
	}
	if _, ok := h.assignmentOf("uid-b"); ok {
		t.Fatal("b placed on a node being reshaped")
	}
	io.pods = io.pods[1:] // a ends
	step()
	step()
	if h.s != s {
		t.Fatal("rebuilt; want a live reshape")
	}
	hid, ok := h.s.Cluster().HostByName("n1")
	if !ok {
		t.Fatal("n1 gone")
	}
	if _, count := h.s.Cluster().HostGPUs(hid); count != 4 {
		t.Fatalf("n1 has %d GPUs, want 4", count)
	}
	if u := used(t, io.pods); len(u) != 4 || u["n1/3"] != "b" {
		t.Fatalf("GPUs in use %v, want b on the 4 GPUs of the reshaped n1", u)
	}
}
