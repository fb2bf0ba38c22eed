package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestDRASlicesChangeLive (issue 27, deliver 1: slices changing are live
// changes): the running Scheduler follows the driver's ResourceSlices
// without a rebuild. A DGX whose slice appears joins (an 8-GPU pod binds
// there while dgx-1 runs a pod); a GPU whose device leaves dgx-2's slice
// reshapes dgx-2 to 7 GPUs once the pod on it is gone (no new pod is
// given 8 there); dgx-1's slice withdrawn while its pod runs recovers
// that pod's job, and no pod is placed on dgx-1 again.
func TestDRASlicesChangeLive(t *testing.T) {
	h, io, f, _ := oneRunning(t, map[string]int{"c1": 1, "c8": 8, "d8": 8, "e1": 1}, "one", "c1")
	ctx := context.Background()
	s := h.s

	// dgx-2's node and slice appear: a live join.
	io.nodes = append(io.nodes, node("dgx-2", -1, nil))
	f.slices = append(f.slices, dgxSlice("dgx-2"))
	io.pods = append(io.pods, draPodOf("eight", "c8"))
	h.cycle(ctx)
	if a, ok := h.assignmentOf("uid-eight"); !ok || a.node != "dgx-2" {
		t.Fatalf("eight: %+v %v, want dgx-2 (joined through its slice); pending %v", a, ok, io.pending)
	}
	bindDRA(h, io)
	h.cycle(ctx)
	if h.s != s {
		t.Fatal("a slice added rebuilt the Scheduler, want a live change")
	}

	// dgx-2's slice loses gpu-7, and eight is deleted: dgx-2 comes back with
	// 7 GPUs, so another 8-GPU pod does not fit anywhere.
	d2 := dgxSlice("dgx-2")
	d2.ResourceVersion = "2"
	d2.Spec.Devices = slices.DeleteFunc(d2.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == "gpu-7" })
	f.slices[1] = d2
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "eight" })
	for range 3 {
		h.cycle(ctx)
	}
	io.pods = append(io.pods, draPodOf("again", "d8"))
	for range 2 {
		h.cycle(ctx)
	}
	if a, ok := h.assignmentOf("uid-again"); ok {
		t.Errorf("again (8 GPUs) placed on %s, but dgx-2 publishes 7 GPUs and dgx-1 runs a pod", a.node)
	}

	// dgx-1's slice is withdrawn while one runs there: one's job is
	// recovered, and a new 1-GPU pod goes to dgx-2.
	f.slices = f.slices[1:]
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "again" })
	io.pods = append(io.pods, draPodOf("next", "e1"))
	for range 3 {
		h.cycle(ctx)
	}
	if !slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, "one "+ReasonRecovery) }) {
		t.Errorf("no recovery for one, whose node's slice went: events %v", io.events)
	}
	if a, ok := h.assignmentOf("uid-next"); !ok || a.node != "dgx-2" {
		t.Errorf("next: %+v %v, want dgx-2 (dgx-1 publishes no GPUs); pending %v", a, ok, io.pending)
	}
	if h.s != s {
		t.Error("a slice changed or withdrawn rebuilt the Scheduler, want live changes")
	}
}
