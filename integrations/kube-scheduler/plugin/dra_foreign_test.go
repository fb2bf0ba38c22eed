package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// kubeHeld puts claim (count devices of class) allocated by kube's
// allocator the devices devs on node, for a pod "other" of
// default-scheduler bound there, which it returns.
func kubeHeld(f *fakeDRA, claim, class, node string, devs ...string) *v1.Pod {
	f.put(claimFor(claim, class, len(devs)))
	other := draPodOf("other", claim)
	other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", node
	indep3KubeAllocated(f, claim, node, other, devs...)
	return other
}

// kubeReleased ends the pod "other" and deallocates claim, as kube
// does, then runs a cycle.
func kubeReleased(h *host, io *fakeIO, f *fakeDRA, claim string) {
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "other" })
	c := f.claims["default/"+claim].DeepCopy()
	c.Status.Allocation, c.Status.ReservedFor = nil, nil
	f.put(c)
	indep3Run(h, io)
}

// TestDRAForeignReleased: the GPUs another scheduler's claim holds
// (TestIndep3ForeignDRAPod) come back once its allocation goes: the
// 8-GPU pod that waited beside them then gets all eight.
func TestDRAForeignReleased(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-1", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	other := kubeHeld(f, "kube2", DefaultDRADeviceClass, "b200-1", "gpu-3", "gpu-6")
	f.put(claimFor("eight", DefaultDRADeviceClass, 8))
	h, io := newDRAHost(t, f, node("b200-1", -1, nil))
	io.pods = []*v1.Pod{other}
	indep3Run(h, io, draPodOf("eight", "eight"))
	if got := indepCheck(t, f, io, nil); len(got["eight"]) != 0 {
		t.Fatalf("eight got %v beside the other scheduler's gpu-3, gpu-6", names(got["eight"]))
	}
	kubeReleased(h, io, f, "kube2")
	if got := indepCheck(t, f, io, nil); len(got["eight"]) != 8 {
		t.Errorf("eight: %v once the other claim is gone; pending %q", names(got["eight"]), io.pending["eight"])
	}
}

// TestDRAForeignMIG: another scheduler's claim holds a MIG device of an
// H200 with dynamic MIG: no pod of gpusched's gets that GPU whole; once
// the allocation goes, the pod gets it.
func TestDRAForeignMIG(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	var mig string
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			if mig == "" && strings.Contains(d.Name, "-mig-") {
				mig = d.Name
			}
		}
	}
	other := kubeHeld(f, "kubemig", DefaultDRAMIGDeviceClass, "h200-1", mig)
	f.put(claimFor("whole", DefaultDRADeviceClass, 1))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	io.pods = []*v1.Pod{other}
	indep3Run(h, io, draPodOf("whole", "whole"))
	if a := f.claims["default/whole"].Status.Allocation; a != nil {
		t.Fatalf("whole got %v beside the other scheduler's %s", a.Devices.Results, mig)
	}
	kubeReleased(h, io, f, "kubemig")
	if a := f.claims["default/whole"].Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != "gpu-0" {
		t.Errorf("whole: %v once the other claim is gone; pending %q", a, io.pending["whole"])
	}
}
