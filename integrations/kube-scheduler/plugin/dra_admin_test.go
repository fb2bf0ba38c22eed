package plugin

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// TestDRAAdminAccessLeftToKube: a claim whose GPU request asks for admin
// access is kube's allocator's (admin access may take devices in use and
// counts against no capacity): its pod is placed without GPUs on a DGX
// whose GPUs are all taken, gpusched writes nothing in its claim, and an
// admin claim kube allocated over all eight GPUs neither keeps an 8-GPU
// pod off the node nor is released by gpusched.
func TestDRAAdminAccessLeftToKube(t *testing.T) {
	yes := true
	admin := claimFor("admin", DefaultDRADeviceClass, 1)
	admin.Spec.Devices.Requests[0].Exactly.AdminAccess = &yes
	f := oneDGX(map[string]int{"eight": 8, "eight2": 8})
	f.put(admin)
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("eight", "eight")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("mon", "admin"))
	h.cycle(ctx)
	if !slices.Contains(io.activated, "mon") {
		t.Fatalf("admin pod not let through on a full DGX: activated %v, pending %q", io.activated, io.pending["mon"])
	}
	if c := f.claims["default/admin"]; c.Status.Allocation != nil || slices.Contains(f.writes, "status admin") {
		t.Fatalf("gpusched wrote the admin claim: %+v", c.Status)
	}

	// kube's allocator gave it all eight GPUs, in use or not; the 8-GPU
	// pod ends and another takes the node.
	bindDRA(h, io)
	c := f.claims["default/admin"].DeepCopy()
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"} {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "r0", Driver: DefaultDRADriver, Pool: "dgx-1", Device: d, AdminAccess: &yes})
	}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "mon", UID: "uid-mon"}}
	f.put(c)
	io.pods[0].Status.Phase = v1.PodSucceeded
	io.pods = append(io.pods, draPodOf("next", "eight2"))
	h.cycle(ctx)
	h.cycle(ctx)
	if !slices.Contains(io.activated, "next") {
		t.Fatalf("8-GPU pod kept off the node by an admin claim: activated %v, pending %q", io.activated, io.pending["next"])
	}
	if f.claims["default/admin"].Status.Allocation == nil {
		t.Errorf("gpusched released kube's admin claim")
	}
}
