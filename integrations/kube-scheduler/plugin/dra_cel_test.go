package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// h200Slice publishes n H200 GPUs of node as NVIDIA's DRA driver does
// (gpu-0 …, type gpu, index, productName "NVIDIA H200").
func h200Slice(node string, n int) *resourceapi.ResourceSlice {
	s := dgxSlice(node)
	s.Spec.Devices = s.Spec.Devices[len(s.Spec.Devices)-n:]
	for i := range s.Spec.Devices {
		p := "NVIDIA H200"
		s.Spec.Devices[i].Attributes["productName"] = resourceapi.DeviceAttribute{StringValue: &p}
	}
	return s
}

// withCEL sets the CEL selectors of c's first request.
func withCEL(c *resourceapi.ResourceClaim, exprs ...string) *resourceapi.ResourceClaim {
	for _, e := range exprs {
		c.Spec.Devices.Requests[0].Exactly.Selectors = append(c.Spec.Devices.Requests[0].Exactly.Selectors,
			resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	return c
}

// TestDRACELSelectors: a whole-GPU request's CEL selectors, evaluated
// with kube's DRA CEL library, decide the nodes gpusched places it on:
// the H200 claim goes to the H200 node though the DGX H100 is emptier and
// first by name; a selector no node's GPUs all match, one that only some
// GPUs of a node match, and one that does not compile make the pod wait,
// saying why; gpusched writes nothing for them.
func TestDRACELSelectors(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("a-dgx"), h200Slice("b-h200", 4)}
	f.put(withCEL(claimFor("h200", DefaultDRADeviceClass, 2), `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'`))
	f.put(withCEL(claimFor("h100", DefaultDRADeviceClass, 1), `device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')`, `device.driver == 'gpu.nvidia.com'`))
	f.put(withCEL(claimFor("b200", DefaultDRADeviceClass, 1), `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA B200'`))
	f.put(withCEL(claimFor("low", DefaultDRADeviceClass, 1), `device.attributes['gpu.nvidia.com'].index < 2`))
	f.put(withCEL(claimFor("bad", DefaultDRADeviceClass, 1), `device.attributes['gpu.nvidia.com'].productName ==`))
	h, io := newDRAHost(t, f, node("a-dgx", -1, nil), node("b-h200", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p200", "h200"), draPodOf("p100", "h100"), draPodOf("pb", "b200"), draPodOf("pl", "low"), draPodOf("pbad", "bad")}
	h.cycle(context.Background())
	if got := strings.Join(io.activated, ","); got != "p200,p100" && got != "p100,p200" {
		t.Fatalf("activated %q, want p200 and p100; pending %v", got, io.pending)
	}
	if devs, node := claimed(t, f, "h200", "uid-p200"); node != "b-h200" || len(strings.Split(devs, ",")) != 2 {
		t.Errorf("claim h200: %s on %s, want 2 GPUs of b-h200", devs, node)
	}
	if devs, node := claimed(t, f, "h100", "uid-p100"); node != "a-dgx" {
		t.Errorf("claim h100: %s on %s, want a-dgx", devs, node)
	}
	for pod, want := range map[string]string{
		"pb":   "no node's GPUs all match the CEL selectors of request \"r0\"",
		"pl":   "no node's GPUs all match the CEL selectors of request \"r0\"",
		"pbad": "CEL selector",
	} {
		if !strings.Contains(io.pending[pod], want) {
			t.Errorf("%s: reason %q, want %q", pod, io.pending[pod], want)
		}
	}
	for _, c := range []string{"b200", "low", "bad"} {
		if f.claims["default/"+c].Status.Allocation != nil {
			t.Errorf("claim %s allocated", c)
		}
	}
}
