package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestDRADeviceClasses: the DeviceClasses are read from the API and their
// selectors ANDed with the request's. A claim of a class gpusched was not
// told of (h200.example.com, selecting the H200s of the GPU driver) is
// allocated by gpusched on the H200 node; a class of MIG devices of one
// profile gets a MIG device of that profile; a class's selectors and the
// request's that no node's GPUs meet together, and a class that does not
// exist, leave the pod waiting, saying why; a NIC claim stays kube's.
func TestDRADeviceClasses(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("a-dgx")}
	f.slices = append(f.slices, h200MIG(t, "b-h200", 2).slices...)
	f.putClass("h200.example.com", `device.driver == 'gpu.nvidia.com'`, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H200'`,
		`device.attributes['gpu.nvidia.com'].type == 'gpu'`)
	f.putClass("small-mig.example.com", `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`,
		`device.attributes['gpu.nvidia.com'].profile == '1g.18gb'`)
	f.put(claimFor("h200", "h200.example.com", 1))
	f.put(claimFor("small", "small-mig.example.com", 1))
	f.put(withCEL(claimFor("none", "h200.example.com", 1), `device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')`))
	f.put(claimFor("ghost", "ghost.example.com", 1))
	f.put(claimFor("nic", "nic.example.com", 1))
	h, io := newDRAHost(t, f, node("a-dgx", -1, nil), node("b-h200", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p-h200", "h200"), draPodOf("p-small", "small"), draPodOf("p-none", "none"), draPodOf("p-ghost", "ghost", "nic")}
	h.cycle(context.Background())
	if got := strings.Join(io.activated, ","); got != "p-h200,p-small" && got != "p-small,p-h200" {
		t.Fatalf("activated %q, want p-h200 and p-small; pending %v", got, io.pending)
	}
	if devs, node := claimed(t, f, "h200", "uid-p-h200"); node != "b-h200" || !strings.HasPrefix(devs, "gpu-") {
		t.Errorf("claim h200: %s on %s, want a GPU of b-h200", devs, node)
	}
	if dev, _, _, _, prof := migOf(t, f, "small"); prof != "1g.18gb" {
		t.Errorf("claim small: %s (%s), want a 1g.18gb MIG device", dev, prof)
	}
	for pod, want := range map[string]string{
		"p-none":  `no node's GPUs all match the CEL selectors of request "r0"`,
		"p-ghost": `request "r0": DeviceClass "ghost.example.com" does not exist`,
	} {
		if !strings.Contains(io.pending[pod], want) {
			t.Errorf("%s: reason %q, want %q", pod, io.pending[pod], want)
		}
	}
	for _, c := range []string{"none", "ghost", "nic"} {
		if f.claims["default/"+c].Status.Allocation != nil {
			t.Errorf("claim %s allocated", c)
		}
	}
}

// TestDRAClassSelectorsANDed: the selectors of the GPU class named in
// Args, as its DeviceClass object has them, restrict a plain request: with
// gpu.nvidia.com selecting H100s only, a 1-GPU claim goes to the DGX H100,
// not to the node of one H200 (its best fit).
func TestDRAClassSelectorsANDed(t *testing.T) {
	for _, order := range [][2]string{{"a-dgx", "b-h200"}, {"b-dgx", "a-h200"}} {
		f := newFakeDRA()
		f.slices = []*resourceapi.ResourceSlice{dgxSlice(order[0]), h200Slice(order[1], 1)}
		f.putClass(DefaultDRADeviceClass, `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')`)
		f.put(claimFor("one", DefaultDRADeviceClass, 1))
		h, io := newDRAHost(t, f, node(order[0], -1, nil), node(order[1], -1, nil))
		io.pods = []*v1.Pod{draPodOf("p", "one")}
		h.cycle(context.Background())
		if _, node := claimed(t, f, "one", "uid-p"); node != order[0] {
			t.Errorf("claim one on %s, want the DGX H100 %s", node, order[0])
		}
	}
}
