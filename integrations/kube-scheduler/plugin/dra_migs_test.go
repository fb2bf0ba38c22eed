package plugin

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/topology"
)

// severalMIGs puts claims for several MIG devices of profiles a and b and
// returns their names: shape 0, one request of count 2 (profile a); 1,
// two requests (a, b); 2, two claims (a; b).
func severalMIGs(f *fakeDRA, name string, shape int, a, b string) []string {
	sel := func(p string) string { return fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p) }
	switch shape {
	case 0:
		f.put(withCEL(claimFor(name, DefaultDRAMIGDeviceClass, 2), sel(a)))
	case 1:
		c := withCEL(claimFor(name, DefaultDRAMIGDeviceClass, 1, 1), sel(a))
		c.Spec.Devices.Requests[1].Exactly.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: sel(b)}}}
		f.put(c)
	default:
		f.put(migClaim(name, a))
		f.put(migClaim(name+"-b", b))
		return []string{name, name + "-b"}
	}
	return []string{name}
}

// TestDRAMIGSeveral: a pod asks for three MIG devices (two 3g.71gb in one
// request, a 1g.18gb in another) of two H200s; gpusched gives each
// request devices of its profile on one node, at legal starts, never two
// on a memory slice; a restarted scheduler holds all three from the
// claim's allocation and places a 7g.141gb (a whole GPU's MIG) only if
// a GPU is left free.
func TestDRAMIGSeveral(t *testing.T) {
	f := h200MIG(t, "h200-1", 2)
	severalMIGs(f, "multi", 1, "3g.71gb", "1g.18gb")
	f.claims["default/multi"].Spec.Devices.Requests[0].Exactly.Count = 2
	f.put(migClaim("seven", "7g.141gb"))
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p-multi", "multi")}
	h.cycle(ctx)
	if len(io.activated) != 1 {
		t.Fatalf("activated %v, want p-multi; pending %v", io.activated, io.pending)
	}
	devs := map[string]resourceapi.Device{}
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			devs[d.Name] = d
		}
	}
	c := f.claims["default/multi"]
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 3 {
		t.Fatalf("claim multi: %+v", c.Status.Allocation)
	}
	masks := map[int]uint16{}
	for i, r := range c.Status.Allocation.Devices.Results {
		d := devs[r.Device]
		want := map[bool]string{true: "3g.71gb", false: "1g.18gb"}[i < 2]
		if p := d.Attributes["profile"].StringValue; p == nil || *p != want || r.Request != map[bool]string{true: "r0", false: "r1"}[i < 2] {
			t.Errorf("result %d: %s for %s, want a %s", i, r.Device, r.Request, want)
		}
		gpu, start, size := migPlace(d)
		m := uint16((1<<size - 1) << start)
		if masks[gpu]&m != 0 {
			t.Errorf("%s overlaps memory slices %08b of GPU %d", r.Device, masks[gpu], gpu)
		}
		masks[gpu] |= m
	}
	used := 0
	for _, m := range masks {
		used += bits.OnesCount16(m)
	}
	bindDRA(h, io)
	h.cycle(ctx)

	// Restart: the three devices are held; the 7g.141gb gets a GPU only
	// if gpusched left one whole.
	h2, io2 := newDRAHost(t, f, node("h200-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), draPodOf("p-seven", "seven"))
	h2.cycle(ctx)
	slots := 0
	for g := range topology.GPUID(2) {
		slots += bits.OnesCount16(h2.s.Ledger().GPU(g).MIGSlots & 0xff)
	}
	if slots != used {
		t.Errorf("after the restart the ledger holds %d MIG slots, the claim %d", slots, used)
	}
	if whole := len(masks) == 1; whole != slices.Contains(io2.activated, "p-seven") {
		t.Errorf("7g.141gb activated %v with the claim on GPUs %v", io2.activated, masks)
	}
}
