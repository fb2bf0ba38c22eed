package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
)

// gpuAttrs are the attributes of one GPU of shapedSlice: nil values are
// left out (an "index" of nil: the device has no index attribute).
type gpuAttrs map[string]any

// shapedSlice publishes n GPUs gpu-0..gpu-(n-1) of product on node, with
// each GPU's attributes from attrs(i) (int, int64, string or bool
// values; nil left out) beside type "gpu", index i and a uuid.
func shapedSlice(node, product string, n int, attrs func(i int) gpuAttrs) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRADriver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := range n {
		a := gpuAttrs{"type": "gpu", "index": i, "productName": product, "uuid": fmt.Sprintf("GPU-%s-%d", node, i)}
		if attrs != nil {
			for k, v := range attrs(i) {
				a[k] = v
			}
		}
		dev := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{}}
		for _, k := range sortedKeys(a) {
			var da resourceapi.DeviceAttribute
			switch v := a[k].(type) {
			case nil:
				continue
			case int:
				x := int64(v)
				da.IntValue = &x
			case int64:
				da.IntValue = &v
			case string:
				da.StringValue = &v
			case bool:
				da.BoolValue = &v
			}
			dev.Attributes[resourceapi.QualifiedName(k)] = da
		}
		s.Spec.Devices = append(s.Spec.Devices, dev)
	}
	return s
}

// constrained is claimFor with one constraint over all its requests:
// matchAttribute attr, or distinctAttribute when distinct.
func constrained(name string, attr string, distinct bool, counts ...int) *resourceapi.ResourceClaim {
	c := claimFor(name, DefaultDRADeviceClass, counts...)
	q := resourceapi.FullyQualifiedName(attr)
	k := resourceapi.DeviceConstraint{MatchAttribute: &q}
	if distinct {
		k = resourceapi.DeviceConstraint{DistinctAttribute: &q}
	}
	c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{k}
	return c
}

// TestDRAConstraints: a claim's matchAttribute and distinctAttribute are
// honoured on a DGX H100 (its slices: two GPUs per PCIe root): a pair on
// one PCIe root, GPUs of one productName, GPUs of distinct uuids are
// allocated so; four GPUs on one PCIe root, or two on distinct roots
// (gpusched picks GPUs close together), wait saying why, and nothing is
// written for them.
func TestDRAConstraints(t *testing.T) {
	const root, product, uuid = "resource.kubernetes.io/pcieRoot", "gpu.nvidia.com/productName", "gpu.nvidia.com/uuid"
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("dgx-1")}
	f.put(constrained("pair", root, false, 1, 1)) // (two requests: both covered)
	f.put(constrained("quad", root, false, 4))
	f.put(constrained("same", product, false, 4))
	f.put(constrained("apart", uuid, true, 2))
	f.put(constrained("spread", root, true, 2))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("pair", "pair"), draPodOf("quad", "quad"), draPodOf("same", "same"), draPodOf("apart", "apart"), draPodOf("spread", "spread")}
	h.cycle(context.Background())
	for _, name := range []string{"pair", "same", "apart"} {
		if !slices.Contains(io.activated, name) {
			t.Fatalf("%s not placed: activated %v, pending %q", name, io.activated, io.pending[name])
		}
	}
	pair, _ := claimed(t, f, "pair", "uid-pair")
	if d := strings.Split(pair, ","); len(d) != 2 || gpuIndex(d[0])/2 != gpuIndex(d[1])/2 {
		t.Errorf("pair got %v: not on one PCIe root", d)
	}
	if same, _ := claimed(t, f, "same", "uid-same"); len(strings.Split(same, ",")) != 4 {
		t.Errorf("same got %s", same)
	}
	for pod, want := range map[string]string{"quad": "no node has 4 free GPUs of one resource.kubernetes.io/pcieRoot", "spread": "distinctAttribute"} {
		if slices.Contains(io.activated, pod) || !strings.Contains(io.pending[pod], want) {
			t.Errorf("%s: activated %v, reason %q, want %q", pod, io.activated, io.pending[pod], want)
		}
		if c := f.claims["default/"+pod]; c.Status.Allocation != nil {
			t.Errorf("%s written: %+v", pod, c.Status.Allocation)
		}
	}
}

// TestDRAConstraintBrokenPickNotWritten: where the library's pick breaks a
// constraint (a node of four GPUs, 0 and 1 on NUMA node 0 under roots of
// their own, 2 and 3 on NUMA node 1 under one root: a pair best-fits on
// NUMA node 0), the claim is not written: the binding is withdrawn, the
// node left out for the pod, and it waits saying why. A matchAttribute
// on an attribute the library does not keep together (rails 0,1 / 2,3)
// waits on a fresh node, and is placed once only one rail is free.
func TestDRAConstraintBrokenPickNotWritten(t *testing.T) {
	f := newFakeDRA()
	roots := []string{"pci0000:10", "pci0000:20", "pci0000:30", "pci0000:30"}
	f.slices = []*resourceapi.ResourceSlice{
		shapedSlice("pcie-1", "NVIDIA L40S", 4, func(i int) gpuAttrs {
			return gpuAttrs{"resource.kubernetes.io/numaNode": i / 2, "resource.kubernetes.io/pcieRoot": roots[i]}
		}),
		shapedSlice("rail-1", "NVIDIA L4", 4, func(i int) gpuAttrs { return gpuAttrs{"rail": fmt.Sprintf("r%d", i/2)} }),
	}
	f.put(constrained("pair", "resource.kubernetes.io/pcieRoot", false, 2))
	f.put(constrained("rail", "gpu.nvidia.com/rail", false, 2))
	f.put(claimFor("two", DefaultDRADeviceClass, 2))
	f.put(constrained("rail2", "gpu.nvidia.com/rail", false, 2))
	pcie := node("pcie-1", -1, nil)
	rail := node("rail-1", -1, nil)
	h, io := newDRAHost(t, f, pcie)
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("pair", "pair")}
	h.cycle(ctx)
	h.cycle(ctx)
	if slices.Contains(io.activated, "pair") || f.claims["default/pair"].Status.Allocation != nil {
		t.Fatalf("pair let through or written: activated %v, %+v", io.activated, f.claims["default/pair"].Status)
	}
	if !strings.Contains(io.pending["pair"], "pcie-1") {
		t.Errorf("pair: reason %q, want one naming the node left out", io.pending["pair"])
	}

	// Rails: not a locality the library keeps; a fresh node waits.
	h, io = newDRAHost(t, f, rail)
	io.pods = []*v1.Pod{draPodOf("rail", "rail")}
	h.cycle(ctx)
	if slices.Contains(io.activated, "rail") || !strings.Contains(io.pending["rail"], "matchAttribute") {
		t.Fatalf("rail on a fresh node: activated %v, reason %q", io.activated, io.pending["rail"])
	}
	// Once two GPUs are taken, the free ones may all be of one rail.
	h, io = newDRAHost(t, f, rail)
	io.pods = []*v1.Pod{draPodOf("two", "two")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	taken, _ := claimed(t, f, "two", "uid-two")
	io.pods = append(io.pods, draPodOf("rail2", "rail2"))
	h.cycle(ctx)
	free := map[string]bool{"gpu-0": true, "gpu-1": true, "gpu-2": true, "gpu-3": true}
	for _, d := range strings.Split(taken, ",") {
		delete(free, d)
	}
	if r := slices.Sorted(func(yield func(string) bool) {
		for k := range free {
			if !yield(k) {
				return
			}
		}
	}); gpuIndex(r[0])/2 == gpuIndex(r[1])/2 {
		if !slices.Contains(io.activated, "rail2") {
			t.Fatalf("rail2 not placed with %v free (one rail): reason %q", r, io.pending["rail2"])
		}
		got, _ := claimed(t, f, "rail2", "uid-rail2")
		if got != strings.Join(r, ",") {
			t.Errorf("rail2 got %s, want %v", got, r)
		}
	} else if slices.Contains(io.activated, "rail2") {
		t.Errorf("rail2 placed with %v free (two rails)", r)
	}
}

// gpuIndex is N of "gpu-N".
func gpuIndex(dev string) int {
	var i int
	fmt.Sscanf(dev, "gpu-%d", &i)
	return i
}

// TestDRAConstraintsSchedulerModeOnly: outside scheduler mode (placement
// mode's DRA concern, newDRA, whose allocation does not check them) a
// claim with constraints is not taken: its pod waits, saying why.
func TestDRAConstraintsSchedulerModeOnly(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("dgx-1")}
	f.put(constrained("pair", "resource.kubernetes.io/pcieRoot", false, 2))
	h, _ := newTestHost(t, node("dgx-1", -1, nil))
	d := newDRA(h.args, f, h, ktesting.NewLogger(t, ktesting.NewConfig()))
	d.readSlices()
	if dp := d.pod(draPodOf("pair", "pair")); dp.out != nil || !strings.Contains(dp.why, "honoured in scheduler mode only") {
		t.Errorf("placement mode: pod %v, why %q", dp.out != nil, dp.why)
	}
}
