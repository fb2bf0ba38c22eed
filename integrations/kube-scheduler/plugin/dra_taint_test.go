package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/topology"
)

// taintDevice returns f's slices with taint added to device dev, as a
// new generation of them (ResourceVersion rv).
func taintDevice(f *fakeDRA, dev, rv string, taint resourceapi.DeviceTaint) {
	for i, s := range f.slices {
		s = s.DeepCopy()
		s.ResourceVersion = rv
		for k := range s.Spec.Devices {
			if s.Spec.Devices[k].Name == dev {
				s.Spec.Devices[k].Taints = append(s.Spec.Devices[k].Taints, taint)
			}
		}
		f.slices[i] = s
	}
}

// tolerating adds toleration to every request of c.
func tolerating(c *resourceapi.ResourceClaim, t resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
	for i := range c.Spec.Devices.Requests {
		c.Spec.Devices.Requests[i].Exactly.Tolerations = append(c.Spec.Devices.Requests[i].Exactly.Tolerations, t)
	}
	return c
}

// recovered reports whether pod got a GPUSchedRecovery event.
func recovered(io *fakeIO, pod string) bool {
	return slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, pod+" "+ReasonRecovery) })
}

// TestDRAMIGDeviceTaint: two 1g.18gb pods share an H200's GPU. The driver
// taints the first one's MIG device NoExecute: that pod's job is
// recovered (deleted with deleteOnRecovery), the other pod on the GPU runs
// on and the GPU stays healthy; a new 1g.18gb pod does not get the
// tainted device, one whose request tolerates the taint may.
func TestDRAMIGDeviceTaint(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	for _, c := range []string{"a", "b", "c"} {
		f.put(migClaim(c, "1g.18gb"))
	}
	f.put(tolerating(migClaim("d", "1g.18gb"), resourceapi.DeviceToleration{Key: "gpu.nvidia.com/xid", Operator: resourceapi.DeviceTolerationOpExists}))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-a", "a"), draPodOf("p-b", "b")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	devA, gpuA, _, _, _ := migOf(t, f, "a")
	_, gpuB, _, _, _ := migOf(t, f, "b")
	if gpuA != gpuB {
		t.Fatalf("a and b on GPUs %d and %d", gpuA, gpuB)
	}
	taintDevice(f, devA, "2", resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoExecute})
	io.pods = append(io.pods, draPodOf("p-c", "c"))
	h.cycle(ctx)
	h.cycle(ctx)
	if !recovered(io, "p-a") || !slices.Contains(io.deleted, "p-a") {
		t.Errorf("no recovery of p-a on the tainted MIG device %s: events %v, deleted %v", devA, io.events, io.deleted)
	}
	if recovered(io, "p-b") || slices.Contains(io.deleted, "p-b") {
		t.Errorf("p-b, on another MIG device of the GPU, recovered: events %v, deleted %v", io.events, io.deleted)
	}
	if hh := h.s.Ledger().GPU(0).Health; hh != topology.Healthy {
		t.Errorf("the GPU is %s; its other MIG devices should run on", hh)
	}
	if c := f.claims["default/c"]; c.Status.Allocation != nil && c.Status.Allocation.Devices.Results[0].Device == devA {
		t.Errorf("claim c given the tainted device %s", devA)
	}
	// p-a is gone: its device is free in the ledger, and still tainted.
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "p-a" || p.Name == "p-c" })
	// Six pods for the GPU's six free 1g.18gb devices: none gets the
	// tainted one.
	more := []string{"c"}
	for _, c := range []string{"c2", "c3", "c4", "c5", "c6"} {
		f.put(migClaim(c, "1g.18gb"))
		io.pods = append(io.pods, draPodOf("p-"+c, c))
		more = append(more, c)
	}
	io.pods = append(io.pods, draPodOf("p-c", "c"))
	for range 3 {
		h.cycle(ctx)
		bindDRA(h, io)
	}
	for _, c := range more {
		if cl := f.claims["default/"+c]; cl.Status.Allocation != nil && cl.Status.Allocation.Devices.Results[0].Device == devA {
			t.Errorf("claim %s given the tainted device %s", c, devA)
		}
	}
	// A pod tolerating the taint may have it once the others are gone.
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name != "p-b" })
	io.pods = append(io.pods, draPodOf("p-d", "d"))
	for range 2 {
		h.cycle(ctx)
	}
	if f.claims["default/d"].Status.Allocation == nil {
		t.Errorf("p-d, tolerating the taint, not placed: pending %v", io.pending)
	}
}

// TestDRADeviceTaintRule: a DeviceTaintRule an admin creates taints the
// devices its selector names as if the driver had: NoSchedule on the one
// 7g.141gb device of an H200 keeps a pod from it, while a pod whose
// request tolerates the taint gets it; a NoExecute rule on a whole GPU
// recovers the job on it.
func TestDRADeviceTaintRule(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	f.put(migClaim("full", "7g.141gb"))
	f.put(tolerating(migClaim("tol", "7g.141gb"), resourceapi.DeviceToleration{Key: "example.com/maintenance", Operator: resourceapi.DeviceTolerationOpEqual, Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule}))
	var full string
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			if p := d.Attributes["profile"].StringValue; p != nil && *p == "7g.141gb" {
				full = d.Name
			}
		}
	}
	if full == "" {
		t.Fatal("no 7g.141gb device in the slices")
	}
	driver, dev := DefaultDRADriver, full
	f.rules = []*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "maint", ResourceVersion: "1"},
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Device: &dev},
			Taint: resourceapi.DeviceTaint{Key: "example.com/maintenance", Value: "yes", Effect: resourceapi.DeviceTaintEffectNoSchedule}}}}
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-full", "full")}
	h.cycle(ctx)
	if f.claims["default/full"].Status.Allocation != nil {
		t.Fatalf("claim full given %s, tainted by a DeviceTaintRule", full)
	}
	io.pods = append(io.pods, draPodOf("p-tol", "tol"))
	h.cycle(ctx)
	if c := f.claims["default/tol"]; c.Status.Allocation == nil || c.Status.Allocation.Devices.Results[0].Device != full {
		t.Errorf("the tolerating pod did not get %s: pending %v", full, io.pending)
	}

	// A NoExecute rule on a whole GPU: the job on it is recovered.
	h2, io2, f2, gpu := oneRunning(t, map[string]int{"c1": 1}, "one", "c1")
	f2.rules = []*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "broken", ResourceVersion: "1"},
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: new("dgx-1"), Device: &gpu},
			Taint: resourceapi.DeviceTaint{Key: "example.com/broken", Effect: resourceapi.DeviceTaintEffectNoExecute}}}}
	h2.cycle(ctx)
	if !recovered(io2, "one") {
		t.Errorf("no recovery for the pod on %s, tainted NoExecute by a rule: events %v", gpu, io2.events)
	}
}

// keepsThenFree taints dev, the whole GPU pod "one" holds, with taint,
// checks "one" is not recovered, then replaces it by pod big (claim
// claim) and pod "next" (claim n1), which may take the other GPUs.
func keepsThenFree(t *testing.T, h *host, io *fakeIO, f *fakeDRA, dev string, taint resourceapi.DeviceTaint, big, claim string) {
	t.Helper()
	ctx := context.Background()
	taintDevice(f, dev, "2", taint)
	h.cycle(ctx)
	h.cycle(ctx)
	if recovered(io, "one") || slices.Contains(io.deleted, "one") {
		t.Errorf("the pod on %s, tainted %s, recovered: events %v, deleted %v", dev, taint.Effect, io.events, io.deleted)
	}
	io.pods = []*v1.Pod{draPodOf(big, claim), draPodOf("next", "n1")}
	for range 3 {
		h.cycle(ctx)
		bindDRA(h, io)
	}
}

// TestDRADeviceTaintNoScheduleKeeps: a whole GPU the driver taints
// NoSchedule keeps the pod running on it (kube's NoSchedule evicts
// nothing; with deleteOnRecovery it was deleted, as for NoExecute), and
// once that pod is gone no new pod gets the GPU.
func TestDRADeviceTaintNoScheduleKeeps(t *testing.T) {
	h, io, f, dev := oneRunning(t, map[string]int{"c1": 1, "c6": 6, "n1": 1}, "one", "c1")
	h.args.DeleteOnRecovery = true
	keepsThenFree(t, h, io, f, dev, resourceapi.DeviceTaint{Key: "example.com/maintenance", Effect: resourceapi.DeviceTaintEffectNoSchedule}, "six", "c6")
	n := 0
	for _, c := range []string{"c6", "n1"} {
		cl := f.claims["default/"+c]
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			n++
			if r.Device == dev {
				t.Errorf("claim %s given %s, tainted NoSchedule", c, dev)
			}
		}
	}
	if n != 7 {
		t.Errorf("%d GPUs allocated, want the 7 untainted ones", n)
	}
}

// TestDRATaintRuleOnChannels: a DeviceTaintRule tainting every IMEX
// channel of the ComputeDomain driver leaves no channel to give: a pod
// with a channel claim waits.
func TestDRATaintRuleOnChannels(t *testing.T) {
	f, nodes := nvl72(1)
	driver := DefaultDRAChannelDriver
	f.rules = []*resourceapi.DeviceTaintRule{{ObjectMeta: metav1.ObjectMeta{Name: "imex-down", ResourceVersion: "1"},
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver},
			Taint: resourceapi.DeviceTaint{Key: "example.com/imex", Effect: resourceapi.DeviceTaintEffectNoSchedule}}}}
	h, io := newDRAHost(t, f, nodes...)
	f.put(claimFor("s-gpus", DefaultDRADeviceClass, 2))
	f.put(channelClaim("s-channel", "cd-s"))
	io.pods = append(io.pods, draPodOf("s", "s-gpus", "s-channel"))
	h.cycle(context.Background())
	if a, ok := h.assignmentOf("uid-s"); ok {
		t.Errorf("s placed on %s though every channel is tainted (channel claim %+v)", a.node, f.claims["default/s-channel"].Status.Allocation)
	}
}

// TestDRAWholeGPUTolerated: a pod whose request tolerates NoExecute
// taints keeps running on a whole GPU the driver taints NoExecute (kube
// evicts only pods that do not tolerate it), the allocation carries the
// toleration, and once the pod is gone the GPU is failed: no new pod gets
// it.
func TestDRAWholeGPUTolerated(t *testing.T) {
	f := oneDGX(map[string]int{"c7": 7, "n1": 1})
	f.put(tolerating(claimFor("c1", DefaultDRADeviceClass, 1), resourceapi.DeviceToleration{Key: "gpu.nvidia.com/xid", Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute}))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("one", "c1")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	dev, _ := claimed(t, f, "c1", "uid-one")
	if tols := f.claims["default/c1"].Status.Allocation.Devices.Results[0].Tolerations; len(tols) != 1 {
		t.Errorf("allocation tolerations %+v, want the request's", tols)
	}
	keepsThenFree(t, h, io, f, dev, resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoExecute}, "seven", "c7")
	for _, c := range []string{"c7", "n1"} {
		if cl := f.claims["default/"+c]; cl.Status.Allocation != nil && slices.ContainsFunc(cl.Status.Allocation.Devices.Results, func(r resourceapi.DeviceRequestAllocationResult) bool { return r.Device == dev }) {
			t.Errorf("claim %s given %s, tainted NoExecute", c, dev)
		}
	}
}
