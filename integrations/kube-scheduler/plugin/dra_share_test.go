package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sharedSlice publishes n H200s of node that allow multiple allocations
// with 80Gi of memory capacity each.
func sharedSlice(node string, n int) *resourceapi.ResourceSlice {
	s := h200Slice(node, n)
	yes := true
	for i := range s.Spec.Devices {
		s.Spec.Devices[i].AllowMultipleAllocations = &yes
		s.Spec.Devices[i].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}
	}
	return s
}

// shareClaim is a claim for a share of one GPU with mem of its memory.
func shareClaim(name, mem string) *resourceapi.ResourceClaim {
	c := claimFor(name, DefaultDRADeviceClass, 1)
	c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{
		Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(mem)}}
	return c
}

// TestDRAShares: claims for a share of a GPU (consumable capacity) share
// GPUs that allow multiple allocations, never past their capacity; a whole
// GPU is never shared; a share larger than a GPU, and a pod asking for a
// share and a whole GPU, wait, saying why.
func TestDRAShares(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{sharedSlice("s-1", 2)}
	for _, n := range []string{"s1", "s2", "s3"} {
		f.put(shareClaim(n, "30Gi"))
	}
	f.put(shareClaim("huge", "100Gi"))
	f.put(claimFor("whole", DefaultDRADeviceClass, 1))
	f.put(shareClaim("mix-share", "10Gi"))
	f.put(claimFor("mix-whole", DefaultDRADeviceClass, 1))
	h, io := newDRAHost(t, f, node("s-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p1", "s1"), draPodOf("p2", "s2"), draPodOf("p3", "s3"), draPodOf("pw", "whole"), draPodOf("ph", "huge"),
		draPodOf("pmix", "mix-share", "mix-whole")}
	h.cycle(context.Background())
	if len(io.activated) != 3 {
		t.Fatalf("activated %v, want three of p1, p2, p3, pw; pending %v", io.activated, io.pending)
	}
	if !strings.Contains(io.pending["ph"], "have the capacity request") {
		t.Errorf("ph: %q", io.pending["ph"])
	}
	if !strings.Contains(io.pending["pmix"], "has no other GPU request") {
		t.Errorf("pmix (a share and a whole GPU): %q", io.pending["pmix"])
	}
	if used := sharedUse(t, f); len(used) != 2 {
		t.Errorf("claims on %v, want both GPUs used", used)
	}

	// Restart: the shares are read back; a new share goes only where
	// there is room.
	bindDRA(h, io)
	h2, io2 := newDRAHost(t, f, node("s-1", -1, nil))
	f.put(shareClaim("s4", "30Gi"))
	f.put(shareClaim("s5", "30Gi"))
	io2.pods = append(io.pods, draPodOf("p4", "s4"), draPodOf("p5", "s5"))
	h2.cycle(context.Background())
	// Both GPUs are shared (two shares and one): one more fits.
	if strings.Join(io2.activated, ",") != "p4" || io2.pending["p5"] == "" {
		t.Errorf("after the restart activated %v, pending %v; want p4 placed, p5 waiting", io2.activated, io2.pending)
	}
	sharedUse(t, f)
}

// sharedUse returns the memory the claims consume per device, failing
// where it exceeds the device's 80Gi, a claim names no share, or two
// shares of a device have one shareID.
func sharedUse(t *testing.T, f *fakeDRA) map[string]int64 {
	t.Helper()
	used := map[string]int64{}
	ids := map[string]string{} // device/shareID → claim
	for _, c := range f.claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			q := r.ConsumedCapacity["memory"]
			if r.ShareID == nil || q.IsZero() {
				t.Errorf("claim %s on a shared GPU: shareID %v, consumed %v", c.Name, r.ShareID, r.ConsumedCapacity)
				continue
			}
			used[r.Device] += q.Value()
			if k := r.Device + "/" + string(*r.ShareID); ids[k] != "" {
				t.Errorf("shareID %s of device %s in claims %s and %s", *r.ShareID, r.Device, ids[k], c.Name)
			} else {
				ids[k] = c.Name
			}
		}
	}
	for dev, b := range used {
		if b > 80<<30 {
			t.Errorf("device %s: %d GiB consumed of 80", dev, b>>30)
		}
	}
	return used
}

// TestDRAShareRequestPolicy: what a share consumes follows the capacity's
// requestPolicy as kube's allocator applies it: rounded up to a valid
// value or a step of the valid range, the default for what it does not
// request, all of a capacity without a policy; a request past the policy
// or the capacity cannot be allocated on the device.
func TestDRAShareRequestPolicy(t *testing.T) {
	q := resource.MustParse
	ptr := func(s string) *resource.Quantity { x := q(s); return &x }
	dev := &resourceapi.Device{Name: "gpu-0", Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		"memory":  {Value: q("80Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr("10Gi"), ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr("10Gi"), Max: ptr("80Gi"), Step: ptr("10Gi")}}},
		"compute": {Value: q("100"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr("25"), ValidValues: []resource.Quantity{q("25"), q("50"), q("100")}}},
		"encoder": {Value: q("2")},
	}}
	for _, c := range []struct {
		req       map[resourceapi.QualifiedName]resource.Quantity
		want      string // memory/compute/encoder consumed; "" when it cannot
		wantMilli int
	}{
		{map[resourceapi.QualifiedName]resource.Quantity{"memory": q("25Gi")}, "30Gi/25/2", 1000},
		{map[resourceapi.QualifiedName]resource.Quantity{"memory": q("5Gi"), "compute": q("30"), "encoder": q("1")}, "10Gi/50/1", 500},
		{map[resourceapi.QualifiedName]resource.Quantity{"compute": q("101")}, "", 0},
		{map[resourceapi.QualifiedName]resource.Quantity{"memory": q("81Gi")}, "", 0},
		{map[resourceapi.QualifiedName]resource.Quantity{"encoder": q("3")}, "", 0},
	} {
		use, err := consumed(dev, c.req)
		got := ""
		if err == nil {
			m, cp, e := use["memory"], use["compute"], use["encoder"]
			got = m.String() + "/" + cp.String() + "/" + e.String()
		}
		if got != c.want {
			t.Errorf("request %v: consumes %q (%v), want %q", c.req, got, err, c.want)
		}
		if err == nil && milliOf(dev, use) != c.wantMilli {
			t.Errorf("request %v: %d milli, want %d", c.req, milliOf(dev, use), c.wantMilli)
		}
	}
}
