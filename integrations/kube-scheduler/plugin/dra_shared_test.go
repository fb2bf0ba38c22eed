package plugin

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// twoDGX is a fakeDRA with two DGX H100s, dgx-1 and dgx-2, and a GPU
// claim per name with that many GPUs (one request).
func twoDGX(gpuClaims map[string]int) *fakeDRA {
	f := oneDGX(gpuClaims)
	f.slices = append(f.slices, dgxSlice("dgx-2"))
	return f
}

// reserveAsKube adds pod to the reservedFor of each of its allocated
// claims that does not list it, as kube's DynamicResources PreBind does.
func reserveAsKube(f *fakeDRA, p *v1.Pod) {
	for _, rc := range p.Spec.ResourceClaims {
		c := f.claims["default/"+*rc.ResourceClaimName]
		if c == nil || c.Status.Allocation == nil || reservedFor(c, p.UID) {
			continue
		}
		x := c.DeepCopy()
		x.Status.ReservedFor = append(x.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
		f.put(x)
	}
}

// dgxFiller binds p, naming claim "fill", on node with 7 GPUs its claim
// holds; it returns p.
func dgxFiller(f *fakeDRA, p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	f.put(allocatedOn(claimFor("fill", DefaultDRADeviceClass, 7), DefaultDRADriver, node, p.UID, "gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6"))
	return p
}

// sharedClaimCheck checks claim "shared" after pods a and b, which
// both name it, are bound: allocated once (the devices first written,
// alloc), reserved for both, both pods on its node; and that gpusched
// holds its GPUs once (free GPUs, of 16).
func sharedClaimCheck(t *testing.T, f *fakeDRA, alloc []string, nodeOf map[string]string, free int) {
	t.Helper()
	c := f.claims["default/shared"]
	if got := devicesOf(c.Status.Allocation); !slices.Equal(got, alloc) {
		t.Errorf("claim shared names %v, first allocated %v: allocated twice", got, alloc)
	}
	for _, uid := range []types.UID{"uid-a", "uid-b"} {
		if !reservedFor(c, uid) {
			t.Errorf("claim shared not reserved for %s: %+v", uid, c.Status.ReservedFor)
		}
	}
	node := c.Status.Allocation.Devices.Results[0].Pool
	if nodeOf["a"] != node || nodeOf["b"] != node {
		t.Errorf("a on %q, b on %q; claim shared is allocated on %s", nodeOf["a"], nodeOf["b"], node)
	}
	if want := 16 - 2 - 7 - 1; free != want {
		t.Errorf("%d GPUs free, want %d (16 - shared 2 - filler 7 - b's own 1): the shared claim's GPUs held once", free, want)
	}
}

// TestDRASharedClaim (scheduler mode): pods a and b name one claim of 2
// GPUs ("shared"), b also a claim of 1 GPU of its own. The claim is
// allocated once, for the pod placed first; b is placed on the node that
// allocation names (not the node best fit would give its own GPU: dgx-2,
// 1 GPU free after a 7-GPU filler), gets no second allocation, and the
// shared GPUs are held once in gpusched's ledger.
func TestDRASharedClaim(t *testing.T) {
	f := twoDGX(map[string]int{"shared": 2, "b-own": 1})
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil), node("dgx-2", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("a", "shared")}
	h.cycle(ctx)
	bindDRA(h, io)
	aNode := io.pods[0].Spec.NodeName
	alloc := devicesOf(f.claims["default/shared"].Status.Allocation)
	if aNode == "" || len(alloc) != 2 {
		t.Fatalf("a: node %q, claim %v", aNode, alloc)
	}
	other := map[string]string{"dgx-1": "dgx-2", "dgx-2": "dgx-1"}[aNode]
	io.pods = append(io.pods, dgxFiller(f, draPodOf("filler", "fill"), other), draPodOf("b", "shared", "b-own"))
	for range 3 {
		h.cycle(ctx)
		bindDRA(h, io)
		for _, p := range io.pods {
			if p.Spec.NodeName != "" {
				reserveAsKube(f, p)
			}
		}
	}
	nodeOf := map[string]string{}
	for _, p := range io.pods {
		nodeOf[p.Name] = p.Spec.NodeName
	}
	free := 0
	for _, n := range []string{"dgx-1", "dgx-2"} {
		k, _ := ledgerGPUs{h}.freeGPUs(n)
		free += k
	}
	sharedClaimCheck(t, f, alloc, nodeOf, free)
}

// TestDRAPlacementSharedClaim: TestDRASharedClaim in placement mode; b's
// PreFilter neither allocates the shared claim again nor finds it
// refused, and kube's DynamicResources (here: reserveAsKube) adds b to
// its reservedFor. Then c and d share a claim not allocated yet: d,
// placed while c is being bound, is refused for now (its PreFilter does
// not take c's assumption over), and placed on c's claim once c's
// allocation is written.
func TestDRAPlacementSharedClaim(t *testing.T) {
	f := twoDGX(map[string]int{"shared": 2, "b-own": 1, "shared2": 1})
	hs, tr := newDRAHarness(t, f, node("dgx-1", -1, nil), node("dgx-2", -1, nil))
	a := hs.add(placementDRAPod("a", "shared"))
	aNode, st, _ := hs.schedule(a)
	if st != nil {
		t.Fatalf("a: %v", st)
	}
	reserveAsKube(f, hs.bind(a, aNode))
	alloc := devicesOf(f.claims["default/shared"].Status.Allocation)
	other := map[string]string{"dgx-1": "dgx-2", "dgx-2": "dgx-1"}[aNode]
	hs.add(dgxFiller(f, placementDRAPod("filler", "fill"), other))
	b := hs.add(placementDRAPod("b", "shared", "b-own"))
	bNode, st, _ := hs.schedule(b)
	if st != nil {
		t.Fatalf("b: %v", st)
	}
	if c, _ := tr.Get("default", "shared"); !slices.Equal(devicesOf(c.Status.Allocation), alloc) {
		t.Errorf("b's PreFilter assumed claim shared with %v, allocated %v", devicesOf(c.Status.Allocation), alloc)
	}
	reserveAsKube(f, hs.bind(b, bNode))
	hs.check()
	sharedClaimCheck(t, f, alloc, map[string]string{"a": aNode, "b": bNode}, hs.freeGPUs())

	c, d := hs.add(placementDRAPod("c", "shared2")), hs.add(placementDRAPod("d", "shared2"))
	cNode, st, _ := hs.schedule(c)
	if st != nil {
		t.Fatalf("c: %v", st)
	}
	held, _ := tr.Get("default", "shared2")
	if _, st, _ := hs.schedule(d); st == nil {
		t.Errorf("d placed while c, with whom it shares claim shared2, is being bound")
	}
	if now, _ := tr.Get("default", "shared2"); !slices.Equal(devicesOf(now.Status.Allocation), devicesOf(held.Status.Allocation)) {
		t.Errorf("d's PreFilter changed c's assumed claim: %v, was %v", devicesOf(now.Status.Allocation), devicesOf(held.Status.Allocation))
	}
	reserveAsKube(f, hs.bind(c, cNode))
	dNode, st, _ := hs.schedule(d)
	if st != nil && !st.IsSkip() {
		t.Fatalf("d after c is bound: %v", st)
	}
	if dNode != "" && dNode != cNode {
		t.Errorf("d on %s, its shared claim on %s", dNode, cNode)
	}
	if got := devicesOf(f.claims["default/shared2"].Status.Allocation); !slices.Equal(got, devicesOf(held.Status.Allocation)) {
		t.Errorf("claim shared2 names %v, c was given %v", got, devicesOf(held.Status.Allocation))
	}
	if free := hs.freeGPUs(); free != 16-2-7-1-1 {
		t.Errorf("%d GPUs free, want %d: shared2 held once", free, 16-2-7-1-1)
	}
}
