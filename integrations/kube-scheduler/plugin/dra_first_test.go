package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// firstClaim is a claim with one request "gpus" of subrequests, each
// (name, class, count, CEL expression or "").
func firstClaim(name string, subs ...[4]any) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("claim-" + name)}}
	r := resourceapi.DeviceRequest{Name: "gpus"}
	for _, s := range subs {
		sub := resourceapi.DeviceSubRequest{Name: s[0].(string), DeviceClassName: s[1].(string), AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(s[2].(int))}
		if e := s[3].(string); e != "" {
			sub.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: e}}}
		}
		r.FirstAvailable = append(r.FirstAvailable, sub)
	}
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{r}
	return c
}

// results returns the Request of each result of claim name's allocation.
func results(f *fakeDRA, name string) []string {
	var out []string
	if a := f.claims["default/"+name].Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			out = append(out, r.Request)
		}
	}
	return out
}

// TestDRAFirstAvailable: a firstAvailable request gets its first
// subrequest gpusched can place: with 4 of the DGX's 8 GPUs held, "eight"
// cannot be placed and "two" is (2 GPUs, one NUMA node, results naming
// "gpus/two"); a subrequest no node's GPUs match (an H200) is passed
// over; a restarted scheduler reads the GPUs back from the results and
// places a new pod around them.
func TestDRAFirstAvailable(t *testing.T) {
	f := oneDGX(map[string]int{"c4": 4, "c2": 2})
	f.put(firstClaim("fa", [4]any{"eight", DefaultDRADeviceClass, 8, ""}, [4]any{"two", DefaultDRADeviceClass, 2, ""}))
	f.put(firstClaim("fb", [4]any{"h200", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'`},
		[4]any{"one", DefaultDRADeviceClass, 1, ""}))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p4", "c4")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	io.pods = append(io.pods, draPodOf("pa", "fa"), draPodOf("pb", "fb"))
	h.cycle(ctx)
	if !slices.Contains(io.activated, "pa") || !slices.Contains(io.activated, "pb") {
		t.Fatalf("activated %v, want pa and pb; pending %v", io.activated, io.pending)
	}
	if got := strings.Join(results(f, "fa"), ","); got != "gpus/two,gpus/two" {
		t.Errorf("claim fa results %q, want gpus/two twice", got)
	}
	if got := strings.Join(results(f, "fb"), ","); got != "gpus/one" {
		t.Errorf("claim fb results %q, want gpus/one", got)
	}
	four, _ := claimed(t, f, "c4", "uid-p4")
	two, _ := claimed(t, f, "fa", "uid-pa")
	one, _ := claimed(t, f, "fb", "uid-pb")
	seen := map[string]string{}
	for claim, devs := range map[string]string{"c4": four, "fa": two, "fb": one} {
		for _, d := range strings.Split(devs, ",") {
			if seen[d] != "" {
				t.Errorf("device %s in claims %s and %s", d, seen[d], claim)
			}
			seen[d] = claim
		}
	}
	if p := strings.Split(two, ","); numaOf(p[0]) != numaOf(p[1]) {
		t.Errorf("fa got %v, want a pair on one NUMA node", p)
	}
	bindDRA(h, io)
	h.cycle(ctx)

	// Restart: 7 GPUs held by the claims' allocations; a 2-GPU pod waits,
	// a 1-GPU pod gets the last GPU.
	h2, io2 := newDRAHost(t, f, node("dgx-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), draPodOf("p2", "c2"))
	h2.cycle(ctx)
	if len(io2.activated) != 0 {
		t.Fatalf("after the restart activated %v; 7 of 8 GPUs are held", io2.activated)
	}
	if free := h2.s.Ledger().HostFreeGPUs(0); free != 1 {
		t.Errorf("after the restart %d free GPUs, want 1", free)
	}
}

// TestDRAAllocationModeAll: a whole-GPU request of allocation mode All
// gets all the GPUs of a node its selectors match: the H200 node's 4
// with a productName selector, a DGX's 8 without one.
func TestDRAAllocationModeAll(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("a-dgx"), h200Slice("b-h200", 4)}
	all := func(name string, exprs ...string) *resourceapi.ResourceClaim {
		c := withCEL(claimFor(name, DefaultDRADeviceClass, 0), exprs...)
		c.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
		return c
	}
	f.put(all("h200", `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'`))
	f.put(all("any"))
	h, io := newDRAHost(t, f, node("a-dgx", -1, nil), node("b-h200", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p200", "h200"), draPodOf("pany", "any")}
	h.cycle(context.Background())
	if len(io.activated) != 2 {
		t.Fatalf("activated %v, want both; pending %v", io.activated, io.pending)
	}
	if devs, node := claimed(t, f, "h200", "uid-p200"); node != "b-h200" || len(strings.Split(devs, ",")) != 4 {
		t.Errorf("claim h200: %s on %s, want the 4 GPUs of b-h200", devs, node)
	}
	if devs, node := claimed(t, f, "any", "uid-pany"); node != "a-dgx" || len(strings.Split(devs, ",")) != 8 {
		t.Errorf("claim any: %s on %s, want the 8 GPUs of a-dgx", devs, node)
	}
}

// TestDRAFirstAvailableMIG: a firstAvailable request whose first
// subrequest names an H100 (no node has one) gets its second, a MIG
// device of the H200; the result names "gpus/mig".
func TestDRAFirstAvailableMIG(t *testing.T) {
	f := h200MIG(t, "h200-1", 1)
	f.put(firstClaim("fm", [4]any{"h100", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')`},
		[4]any{"mig", DefaultDRAMIGDeviceClass, 1, `device.attributes['gpu.nvidia.com'].profile == '3g.71gb'`}))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("pm", "fm")}
	h.cycle(context.Background())
	if len(io.activated) != 1 {
		t.Fatalf("activated %v, want pm; pending %v", io.activated, io.pending)
	}
	if got := strings.Join(results(f, "fm"), ","); got != "gpus/mig" {
		t.Errorf("claim fm results %q, want gpus/mig", got)
	}
	if dev, _, _, _, prof := migOf(t, f, "fm"); prof != "3g.71gb" {
		t.Errorf("claim fm: %s (%s), want a 3g.71gb MIG device", dev, prof)
	}
}

// TestDRAFirstAvailableWaitsThenFits: while no subrequest fits (the DGX's
// 8 GPUs held), the pod waits saying so and nothing is picked; once the
// GPUs are free it gets its first subrequest.
func TestDRAFirstAvailableWaitsThenFits(t *testing.T) {
	f := oneDGX(map[string]int{"c8": 8})
	f.put(firstClaim("fa", [4]any{"four", DefaultDRADeviceClass, 4, ""}, [4]any{"two", DefaultDRADeviceClass, 2, ""}))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p8", "c8")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	io.pods = append(io.pods, draPodOf("pa", "fa"))
	h.cycle(ctx)
	if !strings.Contains(io.pending["pa"], `no firstAvailable subrequest can be placed now`) {
		t.Fatalf("pa: %q", io.pending["pa"])
	}
	io.pods = io.pods[1:] // p8 ends
	h.cycle(ctx)
	h.cycle(ctx)
	if got := strings.Join(results(f, "fa"), ","); got != "gpus/four,gpus/four,gpus/four,gpus/four" {
		t.Errorf("claim fa results %q, want gpus/four 4 times; pending %v", got, io.pending)
	}
}
