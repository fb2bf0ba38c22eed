package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/topology"
)

// tolerant is claimFor whose requests tolerate taints of key (any value
// and effect).
func tolerant(name, key string, counts ...int) *resourceapi.ResourceClaim {
	return tolerating(claimFor(name, DefaultDRADeviceClass, counts...), resourceapi.DeviceToleration{Key: key, Operator: resourceapi.DeviceTolerationOpExists})
}

// TestDRATaintedGPUTolerated: a new pod whose request tolerates the taint
// of a free whole GPU gets it: an 8-GPU pod tolerating gpu-7's NoSchedule
// taint takes the whole DGX. With gpu-0..6 taken and gpu-7 tainted
// NoExecute, a pod that does not tolerate it and one that does wait
// together: the tolerating one gets gpu-7 (the other is kept off the node
// while the GPU is lent), runs on without being recovered, and once it
// ends the GPU is failed again.
func TestDRATaintedGPUTolerated(t *testing.T) {
	const key = "example.com/maintenance"
	ctx := context.Background()

	f := oneDGX(nil)
	taintDevice(f, "gpu-7", "2", resourceapi.DeviceTaint{Key: key, Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule})
	f.put(tolerant("all", key, 8))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("all", "all")}
	h.cycle(ctx)
	h.cycle(ctx)
	if !slices.Contains(io.activated, "all") {
		t.Fatalf("8-GPU pod tolerating gpu-7's taint not placed: pending %q", io.pending["all"])
	}
	if devs, _ := claimed(t, f, "all", "uid-all"); !strings.Contains(devs, "gpu-7") {
		t.Errorf("all got %s", devs)
	}

	f = oneDGX(map[string]int{"seven": 7, "plain": 1})
	taintDevice(f, "gpu-7", "2", resourceapi.DeviceTaint{Key: key, Value: "true", Effect: resourceapi.DeviceTaintEffectNoExecute})
	f.put(tolerant("tol", key, 1))
	h, io = newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("seven", "seven")}
	h.cycle(ctx)
	bindDRA(h, io)
	if seven, _ := claimed(t, f, "seven", "uid-seven"); strings.Contains(seven, "gpu-7") {
		t.Fatalf("seven got the tainted gpu-7: %s", seven)
	}
	io.pods = append(io.pods, draPodOf("plain", "plain"), draPodOf("tol", "tol"))
	h.cycle(ctx)
	if !slices.Contains(io.activated, "tol") || slices.Contains(io.activated, "plain") {
		t.Fatalf("activated %v, want tol and not plain; pending %v", io.activated, io.pending)
	}
	if devs, _ := claimed(t, f, "tol", "uid-tol"); devs != "gpu-7" {
		t.Errorf("tol got %s, want gpu-7", devs)
	}
	if c := f.claims["default/plain"]; c.Status.Allocation != nil {
		t.Errorf("plain allocated %+v", c.Status.Allocation)
	}
	bindDRA(h, io)
	h.cycle(ctx)
	h.cycle(ctx)
	if recovered(io, "tol") || len(io.evicted) > 0 || f.claims["default/tol"].Status.Allocation == nil {
		t.Errorf("tol recovered or released: evicted %v, events %v", io.evicted, io.events)
	}
	if st := h.s.Ledger().GPU(7); st.Health != topology.Healthy || st.Mode != topology.ModeWhole {
		t.Errorf("gpu-7 held by tol: %+v", st)
	}
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "tol" || p.Name == "plain" })
	h.cycle(ctx)
	h.cycle(ctx)
	if st := h.s.Ledger().GPU(7); st.Health != topology.Failed {
		t.Errorf("gpu-7 free again and tainted NoExecute: %+v, want failed", st)
	}
}
