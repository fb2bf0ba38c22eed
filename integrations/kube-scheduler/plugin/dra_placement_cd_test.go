package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// allocatedOn sets c's allocation to devices of driver on node (its pool)
// and reserves it for pod uid; it returns c.
func allocatedOn(c *resourceapi.ResourceClaim, driver, node string, uid types.UID, devices ...string) *resourceapi.ResourceClaim {
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, d := range devices {
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: c.Spec.Devices.Requests[0].Name, Driver: driver, Pool: node, Device: d})
	}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: string(uid), UID: uid}}
	return c
}

// TestDRAPlacementComputeDomainGang: in placement mode, as in scheduler
// mode, a gang whose pods claim a ComputeDomain channel goes whole into
// one NVLink clique (no topology label needed) on nodes with a free
// channel, and gpusched allocates each member's channel claim with its
// GPU claim: channel-0 of compute-domain.nvidia.com on the member's node,
// assumed in kube's tracker at PreFilter and written at PreBind. Rack 1
// has two trays taken by running pods holding their GPUs and channels,
// so the three members fit only rack 2's clique; then a second such gang
// of three, which no clique has room for (2 and 1 trays free), waits.
func TestDRAPlacementComputeDomainGang(t *testing.T) {
	f, nodes := nvl72(4)
	var busy []*v1.Pod
	for _, n := range []string{"gb-r1-t01", "gb-r1-t02"} {
		name := "busy-" + n[len(n)-3:]
		p := placementDRAPod(name, name+"-gpus", name+"-channel")
		p.Spec.NodeName = n
		f.put(allocatedOn(claimFor(name+"-gpus", DefaultDRADeviceClass, 4), DefaultDRADriver, n, p.UID, "gpu-0", "gpu-1", "gpu-2", "gpu-3"))
		f.put(allocatedOn(channelClaim(name+"-channel", "cd-busy"), DefaultDRAChannelDriver, n, p.UID, "channel-0"))
		busy = append(busy, p)
	}
	ms, late := cdPlacementGang(f, "a"), cdPlacementGang(f, "b")
	hs, tr := newDRAHarness(t, f, nodes...)
	for _, p := range busy {
		hs.add(p)
	}
	for _, p := range ms {
		hs.add(p)
	}
	where := map[string]string{}
	for i, p := range ms {
		node, st, waiting := hs.schedule(p)
		if st != nil || waiting != (i < 2) {
			t.Fatalf("%s: node %q, status %v, waiting %v", p.Name, node, st, waiting)
		}
		if c, _ := tr.Get("default", p.Name+"-channel"); c.Status.Allocation == nil {
			t.Errorf("%s: after Reserve kube's tracker shows its channel claim unallocated", p.Name)
		}
		where[p.Name] = node
	}
	owner := map[string]string{}
	for _, p := range ms {
		node := where[p.Name]
		if !strings.HasPrefix(node, "gb-r2-") {
			t.Errorf("%s on %s, want rack 2's clique (rack 1 has 2 trays free)", p.Name, node)
		}
		if prev, ok := owner[node]; ok {
			t.Errorf("%s and %s on one node %s (one IMEX channel per node)", prev, p.Name, node)
		}
		owner[node] = p.Name
		hs.bind(p, node)
		c := f.claims["default/"+p.Name+"-channel"]
		if c.Status.Allocation == nil {
			t.Fatalf("%s: channel claim not written at PreBind", p.Name)
		}
		r := c.Status.Allocation.Devices.Results
		if len(r) != 1 || r[0].Driver != DefaultDRAChannelDriver || r[0].Pool != node || r[0].Device != "channel-0" || r[0].Request != "channel" {
			t.Errorf("%s: channel claim results %+v, want channel-0 of %s", p.Name, r, node)
		}
		if !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
			t.Errorf("%s: channel claim without the %s finalizer", p.Name, resourceapi.Finalizer)
		}
		if devs := devicesOf(f.claims["default/"+p.Name+"-gpus"].Status.Allocation); len(devs) != 4 {
			t.Errorf("%s: GPU claim names %v", p.Name, devs)
		}
	}
	hs.check()

	for _, p := range late {
		hs.add(p)
	}
	if node, st, _ := hs.schedule(late[0]); st == nil || !strings.Contains(st.Message(), "in one nvlink") {
		t.Errorf("gang b: node %q, status %v; want it to wait, no clique having 3 free trays", node, st)
	}
	hs.check()
}

// cdPlacementGang returns a gang of three placement-mode pods, each with
// a claim of 4 GPUs and a channel claim of the ComputeDomain cd-gang.
func cdPlacementGang(f *fakeDRA, gang string) []*v1.Pod {
	var ms []*v1.Pod
	for i := range 3 {
		m := fmt.Sprintf("%s-%d", gang, i)
		f.put(claimFor(m+"-gpus", DefaultDRADeviceClass, 4))
		f.put(channelClaim(m+"-channel", "cd-"+gang))
		p := placementDRAPod(m, m+"-gpus", m+"-channel")
		p.Labels = map[string]string{DefaultGangLabel: gang, DefaultGangSizeKey: "3"}
		ms = append(ms, p)
	}
	return ms
}
