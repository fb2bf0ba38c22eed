package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// fakeTracker is kube's claim tracker over a fakeDRA: an assumed claim
// is seen until the fakeDRA holds a newer one (as the assume cache drops
// an assumption once the informer delivers a newer object).
type fakeTracker struct {
	f       *fakeDRA
	assumed map[string]*resourceapi.ResourceClaim
}

func rvOf(c *resourceapi.ResourceClaim) int { n, _ := strconv.Atoi(c.ResourceVersion); return n }

func (t *fakeTracker) Get(ns, name string) (*resourceapi.ResourceClaim, error) {
	c := t.f.claims[ns+"/"+name]
	if c == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "resourceclaims"}, name)
	}
	if a := t.assumed[ns+"/"+name]; a != nil && rvOf(a) >= rvOf(c) {
		return a, nil
	}
	return c, nil
}

func (t *fakeTracker) AssumeClaimAfterAPICall(c *resourceapi.ResourceClaim) error {
	cur, err := t.Get(c.Namespace, c.Name)
	if err != nil {
		return err
	}
	if rvOf(c) < rvOf(cur) {
		return fmt.Errorf("claim %s is out of sync", c.Name)
	}
	t.assumed[c.Namespace+"/"+c.Name] = c
	return nil
}

func (t *fakeTracker) AssumedClaimRestore(ns, name string) { delete(t.assumed, ns+"/"+name) }

// newDRAHarness is a placement-mode harness on the nodes whose GPUs f's
// slices publish.
func newDRAHarness(t *testing.T, f *fakeDRA, nodes ...*v1.Node) (*harness, *fakeTracker) {
	hs := newHarness(t, defaultArgs(), nodes...)
	tr := &fakeTracker{f: f, assumed: map[string]*resourceapi.ResourceClaim{}}
	log := ktesting.NewLogger(t, ktesting.NewConfig())
	hs.p.dra = newPlaceDRA(newDRA(hs.p.args, f, hs.p.st, log), tr, log)
	hs.p.dra.now = func() time.Time { return hs.clock }
	for _, n := range nodes {
		hs.p.onNode(n)
	}
	return hs, tr
}

// placementDRAPod is a placement-mode pod (1 CPU) using the named claims.
func placementDRAPod(name string, claims ...string) *v1.Pod {
	p := pod(name, "", 0, 1000)
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: &c})
	}
	return p
}

// devicesOf returns the devices an allocation names.
func devicesOf(a *resourceapi.AllocationResult) []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, r := range a.Devices.Results {
		out = append(out, r.Device)
	}
	return out
}

// chosen returns the devices of the GPU indices annotation gpusched wrote
// for pod.
func (hs *harness) chosen(pod string) []string {
	var out []string
	for _, i := range strings.Split(hs.annotations[pod][DefaultGPUIndicesAnnotation], ",") {
		out = append(out, "gpu-"+i)
	}
	return out
}

// TestDRAPlacementAllocatesChosenGPUs: in placement mode a pod's GPU claim
// is allocated to the GPUs gpusched chose: assumed in kube's claim tracker
// at PreFilter (so DynamicResources finds it allocated), written at
// PreBind. A 4-GPU pod after a 1-GPU pod gets the other NUMA node whole; a
// 2-GPU pod on the half-used DGX gets a pair on one NUMA node; no device
// is in two claims; the NIC claim is left to kube.
func TestDRAPlacementAllocatesChosenGPUs(t *testing.T) {
	f := oneDGX(map[string]int{"a-gpus": 1, "b-gpus": 4, "c-gpus": 2})
	f.put(claimFor("c-nic", "nic.example.com", 1))
	hs, tr := newDRAHarness(t, f, node("dgx-1", -1, nil))
	taken := map[string]string{}
	for _, x := range []struct {
		pod    string
		claims []string
		gpus   int
	}{{"a", []string{"a-gpus"}, 1}, {"b", []string{"b-gpus"}, 4}, {"c", []string{"c-gpus", "c-nic"}, 2}} {
		p := hs.add(placementDRAPod(x.pod, x.claims...))
		node, st, _ := hs.schedule(p)
		if node != "dgx-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", x.pod, node, st)
		}
		claim := x.claims[0]
		assumed, _ := tr.Get("default", claim)
		if got := devicesOf(assumed.Status.Allocation); len(got) != x.gpus {
			t.Fatalf("%s: after Reserve kube's tracker shows claim %s with %v, want %d GPUs allocated", x.pod, claim, got, x.gpus)
		}
		if len(f.writes) > 0 && strings.HasSuffix(f.writes[len(f.writes)-1], " "+claim) {
			t.Errorf("%s: claim written before PreBind: %v", x.pod, f.writes)
		}
		hs.bind(p, node)
		c := f.claims["default/"+claim]
		devs := devicesOf(c.Status.Allocation)
		if !slices.Equal(devs, hs.chosen(x.pod)) {
			t.Errorf("%s: claim %s names %v; gpusched chose %v", x.pod, claim, devs, hs.chosen(x.pod))
		}
		if !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
			t.Errorf("%s: claim %s has no %s finalizer", x.pod, claim, resourceapi.Finalizer)
		}
		if r := c.Status.Allocation.Devices.Results; r[0].Driver != DefaultDRADriver || r[0].Pool != "dgx-1" {
			t.Errorf("%s: results %+v", x.pod, r)
		}
		if n0 := numaOf(devs[0]); slices.ContainsFunc(devs, func(d string) bool { return numaOf(d) != n0 }) {
			t.Errorf("%s: GPUs %v span NUMA nodes", x.pod, devs)
		}
		for _, d := range devs {
			if prev, ok := taken[d]; ok {
				t.Errorf("device %s in the claims of %s and %s", d, prev, x.pod)
			}
			taken[d] = x.pod
		}
		hs.check()
	}
	if numaOf(devicesOf(f.claims["default/a-gpus"].Status.Allocation)[0]) == numaOf(devicesOf(f.claims["default/b-gpus"].Status.Allocation)[0]) {
		t.Errorf("b's 4 GPUs share a's NUMA node")
	}
	if c := f.claims["default/c-nic"]; c.Status.Allocation != nil || slices.Contains(f.writes, "status c-nic") {
		t.Errorf("gpusched wrote the NIC claim: %+v", c.Status)
	}
}

// TestDRAPlacementUndo: a pod whose cycle ends before Reserve leaves no
// assumption in kube's tracker; a pod unreserved after PreBind (its
// binding failed) has the allocation gpusched wrote cleared; a restarted
// plugin reads the GPUs of bound pods back from their claims.
func TestDRAPlacementUndo(t *testing.T) {
	f := oneDGX(map[string]int{"a-gpus": 2, "b-gpus": 2})
	hs, tr := newDRAHarness(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()

	// a's cycle stops after PreFilter (another filter rejected the node).
	a := hs.add(placementDRAPod("a", "a-gpus"))
	if _, st := hs.p.PreFilter(ctx, framework.NewCycleState(), a, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter a: %v", st)
	}
	if c, _ := tr.Get("default", "a-gpus"); c.Status.Allocation == nil {
		t.Fatalf("a's claim not assumed allocated after PreFilter")
	}
	b := hs.add(placementDRAPod("b", "b-gpus"))
	node, st, _ := hs.schedule(b)
	if st != nil {
		t.Fatalf("b: %v", st)
	}
	if c, _ := tr.Get("default", "a-gpus"); c.Status.Allocation != nil {
		t.Errorf("a's assumption outlived its cycle: %v", devicesOf(c.Status.Allocation))
	}

	// b's PreBind writes its claim; its binding fails: Unreserve.
	if st := hs.p.PreBind(ctx, hs.states[b.UID], b, node); !st.IsSuccess() {
		t.Fatalf("PreBind b: %v", st)
	}
	if f.claims["default/b-gpus"].Status.Allocation == nil {
		t.Fatalf("b's claim not written at PreBind")
	}
	hs.p.Unreserve(ctx, hs.states[b.UID], b, node)
	if c := f.claims["default/b-gpus"]; c.Status.Allocation != nil {
		t.Errorf("b unreserved, its claim still allocated: %v", devicesOf(c.Status.Allocation))
	}
	if c, _ := tr.Get("default", "b-gpus"); c.Status.Allocation != nil {
		t.Errorf("b unreserved, kube's tracker still shows its claim allocated")
	}
	if free := hs.freeGPUs(); free != 8 {
		t.Errorf("%d GPUs free after the undo, want 8", free)
	}

	// b placed again and bound; a restarted plugin holds its GPUs from
	// its claim (no annotation), and places a on others.
	node, st, _ = hs.schedule(b)
	if st != nil {
		t.Fatalf("b again: %v", st)
	}
	hs.bind(b, node)
	devB := devicesOf(f.claims["default/b-gpus"].Status.Allocation)
	bound := b.DeepCopy()
	bound.Spec.NodeName = node
	hs2, _ := newDRAHarness(t, f, node0("dgx-1"))
	hs2.add(bound)
	a2 := hs2.add(placementDRAPod("a", "a-gpus"))
	if _, st, _ := hs2.schedule(a2); st != nil {
		t.Fatalf("a after the restart: %v", st)
	}
	hs2.bind(a2, "dgx-1")
	for _, d := range devicesOf(f.claims["default/a-gpus"].Status.Allocation) {
		if slices.Contains(devB, d) {
			t.Errorf("after a restart a got %s, which b's claim holds (%v)", d, devB)
		}
	}
	hs2.check()
}

func node0(name string) *v1.Node { return node(name, -1, nil) }

// TestDRAPlacementPreFilterOrder: a profile running DynamicResources'
// PreFilter before GPUSched's is refused, naming the fix.
func TestDRAPlacementPreFilterOrder(t *testing.T) {
	if err := preFilterOrder([]string{"NodeAffinity", "DynamicResources", "GPUSched"}); err == nil || !strings.Contains(err.Error(), "preFilter: {enabled: [{name: GPUSched}]}") {
		t.Errorf("DynamicResources first: %v", err)
	}
	for _, ok := range [][]string{{"GPUSched", "NodeAffinity", "DynamicResources"}, {"NodeAffinity", "GPUSched"}} {
		if err := preFilterOrder(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}

// TestDRAPlacementPreBind: PreBind after DynamicResources' (which wrote
// the assumed allocation and reservedFor, without the finalizer) adds the
// finalizer only; a claim taken by another pod before PreBind fails it,
// and Unreserve leaves that pod's allocation alone and the tracker as the
// apiserver has it.
func TestDRAPlacementPreBind(t *testing.T) {
	f := oneDGX(map[string]int{"a-gpus": 2, "b-gpus": 2})
	hs, tr := newDRAHarness(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()

	a := hs.add(placementDRAPod("a", "a-gpus"))
	node, st, _ := hs.schedule(a)
	if st != nil {
		t.Fatalf("a: %v", st)
	}
	assumed, _ := tr.Get("default", "a-gpus")
	kube := f.claims["default/a-gpus"].DeepCopy() // DynamicResources' PreBind
	kube.Status = *assumed.Status.DeepCopy()
	kube.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "a", UID: a.UID}}
	if _, err := f.updateStatus(ctx, kube); err != nil {
		t.Fatal(err)
	}
	f.writes = nil
	hs.bind(a, node)
	c := f.claims["default/a-gpus"]
	if !slices.Equal(f.writes, []string{"update a-gpus"}) || !slices.Contains(c.Finalizers, resourceapi.Finalizer) || len(c.Status.ReservedFor) != 1 {
		t.Errorf("PreBind after kube's: writes %v, claim %+v %+v", f.writes, c.Finalizers, c.Status)
	}
	if !slices.Equal(devicesOf(c.Status.Allocation), hs.chosen("a")) {
		t.Errorf("claim a-gpus names %v; gpusched chose %v", devicesOf(c.Status.Allocation), hs.chosen("a"))
	}

	b := hs.add(placementDRAPod("b", "b-gpus"))
	node, st, _ = hs.schedule(b)
	if st != nil {
		t.Fatalf("b: %v", st)
	}
	other := f.claims["default/b-gpus"].DeepCopy() // another scheduler's
	other.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "r0", Driver: DefaultDRADriver, Pool: "dgx-1", Device: "gpu-7"}}}}
	other.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "x", UID: "uid-x"}}
	if _, err := f.updateStatus(ctx, other); err != nil {
		t.Fatal(err)
	}
	if st := hs.p.PreBind(ctx, hs.states[b.UID], b, node); st.IsSuccess() {
		t.Fatalf("PreBind b succeeded on a claim reserved for another pod")
	}
	hs.p.Unreserve(ctx, hs.states[b.UID], b, node)
	c = f.claims["default/b-gpus"]
	if got := devicesOf(c.Status.Allocation); !slices.Equal(got, []string{"gpu-7"}) || len(c.Status.ReservedFor) != 1 {
		t.Errorf("Unreserve touched another pod's claim: %v %+v", got, c.Status.ReservedFor)
	}
	if cur, _ := tr.Get("default", "b-gpus"); cur != c {
		t.Errorf("tracker after Unreserve shows %v, not the apiserver's claim", devicesOf(cur.Status.Allocation))
	}
	if free := hs.freeGPUs(); free != 6 {
		t.Errorf("%d GPUs free after b's undo, want 6 (a's 2 held)", free)
	}
}

// TestDRAPlacementRestartBeforeSlices: a restarted plugin sees the bound
// pods before the driver's slices and the pods' claims (the informers
// sync in any order): once they are read, the pods hold the GPUs their
// claims name (not the lowest free ones), and a new pod gets the GPU left
// free, no other.
func TestDRAPlacementRestartBeforeSlices(t *testing.T) {
	for _, slicesLate := range []bool{true, false} {
		t.Run(fmt.Sprintf("slicesLate=%v", slicesLate), func(t *testing.T) { restartBeforeClaims(t, slicesLate) })
	}
}

// restartBeforeClaims is TestDRAPlacementRestartBeforeSlices with the
// slices read late too, or from the start.
func restartBeforeClaims(t *testing.T, slicesLate bool) {
	f := oneDGX(map[string]int{"a-gpus": 4, "b-gpus": 3, "e-gpus": 1})
	ctx := context.Background()
	var bound []*v1.Pod
	for name, devs := range map[string][]int{"a": {4, 5, 6, 7}, "b": {0, 1, 2}} {
		c := f.claims["default/"+name+"-gpus"].DeepCopy()
		c.Status.Allocation = &resourceapi.AllocationResult{}
		for _, i := range devs {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: "r0", Driver: DefaultDRADriver, Pool: "dgx-1", Device: fmt.Sprintf("gpu-%d", i)})
		}
		if _, err := f.updateStatus(ctx, c); err != nil {
			t.Fatal(err)
		}
		p := placementDRAPod(name, name+"-gpus")
		p.Spec.NodeName = "dgx-1"
		bound = append(bound, p)
	}
	sortPods(bound)

	// The restart: pods first, with the claims (and slices) not read yet.
	slicesOf, claimsOf := f.slices, f.claims
	f.claims = map[string]*resourceapi.ResourceClaim{}
	if slicesLate {
		f.slices = nil
	}
	hs, _ := newDRAHarness(t, f, node0("dgx-1"))
	for _, b := range bound {
		hs.add(b)
	}
	f.slices, f.claims = slicesOf, claimsOf
	e := hs.add(placementDRAPod("e", "e-gpus"))
	if _, st, _ := hs.schedule(e); st != nil {
		t.Fatalf("e after the restart: %v", st)
	}
	hs.bind(e, "dgx-1")
	if got := devicesOf(f.claims["default/e-gpus"].Status.Allocation); !slices.Equal(got, []string{"gpu-3"}) {
		t.Errorf("after the restart e got %v; a holds gpu-4..7, b gpu-0..2", got)
	}
	hs.check()
}

// TestDRAPlacementParts: in placement mode a claim for one MIG device gets
// a partition device of its profile at the start gpusched's MIG engine
// chose, never two on one memory slice; a restarted plugin reads them
// back; claims for a share of a GPU share GPUs without over-committing
// their capacity.
func TestDRAPlacementParts(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	profiles := map[string]string{"m4": "4g.71gb", "m1": "1g.18gb", "late": "1g.18gb"}
	for name, prof := range profiles {
		f.put(migClaim(name, prof))
	}
	hs, _ := newDRAHarness(t, f, node("h200-1", -1, nil))
	used := map[int]string{}
	var bound []*v1.Pod
	for _, name := range []string{"m4", "m1"} {
		p := hs.add(placementDRAPod(name, name))
		node, st, _ := hs.schedule(p)
		if node != "h200-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", name, node, st)
		}
		bound = append(bound, hs.bind(p, node))
		dev, gpu, start, size, prof := migOf(t, f, name)
		if prof != profiles[name] || gpu != 0 {
			t.Errorf("%s: device %s of profile %s on GPU %d, want %s", name, dev, prof, gpu, profiles[name])
		}
		for s := start; s < start+size; s++ {
			if prev, ok := used[s]; ok {
				t.Errorf("memory slice %d in the MIG devices of %s and %s", s, prev, name)
			}
			used[s] = name
		}
		hs.check()
	}

	// Restart: the partitions are read back from the claims; a new
	// 1g.18gb goes to a slice left free.
	hs2, _ := newDRAHarness(t, f, node0("h200-1"))
	for i, b := range bound {
		b.Spec.NodeName = "h200-1"
		b.Annotations = nil // (the claims are the record)
		hs2.add(bound[i])
	}
	late := hs2.add(placementDRAPod("late", "late"))
	where, st, _ := hs2.schedule(late)
	if st != nil {
		t.Fatalf("late after the restart: %v (slices used %v)", st, used)
	}
	hs2.bind(late, where)
	_, _, start, size, _ := migOf(t, f, "late")
	for s := start; s < start+size; s++ {
		if prev, ok := used[s]; ok {
			t.Errorf("after the restart late's MIG device takes slice %d of %s's", s, prev)
		}
	}
	hs2.check()

	// Shares.
	fs := newFakeDRA()
	fs.slices = []*resourceapi.ResourceSlice{sharedSlice("s-1", 2)}
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		fs.put(shareClaim(n, "30Gi"))
	}
	hs3, _ := newDRAHarness(t, fs, node("s-1", -1, nil))
	placed := 0
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		p := hs3.add(placementDRAPod("p"+n, n))
		if node, st, _ := hs3.schedule(p); st == nil {
			hs3.bind(p, node)
			placed++
		}
	}
	if placed != 4 {
		t.Errorf("%d shares of 30Gi placed on two 80Gi GPUs, want 4", placed)
	}
	sharedUse(t, fs)
	hs3.check()
}

// TestDRAPlacementTaintedGPU: a GPU whose device is tainted takes no pod
// in placement mode: a 4-GPU pod goes to the NUMA node without it, and
// the 3 healthy GPUs of the other leave no room for a second.
func TestDRAPlacementTaintedGPU(t *testing.T) {
	f := oneDGX(map[string]int{"a-gpus": 4, "b-gpus": 4})
	for i := range f.slices[0].Spec.Devices {
		if d := &f.slices[0].Spec.Devices[i]; d.Name == "gpu-5" {
			d.Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
	}
	hs, _ := newDRAHarness(t, f, node("dgx-1", -1, nil))
	a := hs.add(placementDRAPod("a", "a-gpus"))
	node, st, _ := hs.schedule(a)
	if st != nil {
		t.Fatalf("a: %v", st)
	}
	hs.bind(a, node)
	if devs := devicesOf(f.claims["default/a-gpus"].Status.Allocation); slices.Contains(devs, "gpu-5") || numaOf(devs[0]) != 0 {
		t.Errorf("a got %v, want NUMA node 0 (gpu-5 is tainted)", devs)
	}
	b := hs.add(placementDRAPod("b", "b-gpus"))
	if _, st, _ := hs.schedule(b); st == nil {
		t.Errorf("b placed on %v with 3 healthy GPUs free", devicesOf(f.claims["default/b-gpus"].Status.Allocation))
	}
	hs.check()
}
