package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// hgxSlice publishes a 16-GPU node (HGX-2 style: 16 SXM GPUs behind
// NVSwitch, 8 per NUMA node, two per PCIe root), gpu-0..gpu-15, listed in
// text order (gpu-0, gpu-1, gpu-10, …, gpu-15, gpu-2, …). With index, the
// devices carry their index attribute; without, their names alone say
// which GPU is which.
func hgxSlice(node string, index bool) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRADriver, NodeName: &node,
		Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	s.Name, s.ResourceVersion = node+"-gpu.nvidia.com", "1"
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	for i := range 16 {
		idx, numa := int64(i), int64(i/8)
		d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str("gpu"), "productName": str("NVIDIA H100 80GB HBM3"), "uuid": str(fmt.Sprintf("GPU-%s-%d", node, i)),
			attrNUMANode: {IntValue: &numa}, attrPCIeRoot: str(fmt.Sprintf("pci0000:%02x", 0x10*(i/2+1))),
		}}
		if index {
			d.Attributes["index"] = resourceapi.DeviceAttribute{IntValue: &idx}
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
	textOrder(s)
	return s
}

// textOrder lists s's devices in text order of their names.
func textOrder(s *resourceapi.ResourceSlice) {
	slices.SortFunc(s.Spec.Devices, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
}

// unindexed drops the index and minor attributes of s's devices.
func unindexed(s *resourceapi.ResourceSlice) {
	for _, d := range s.Spec.Devices {
		delete(d.Attributes, "index")
		delete(d.Attributes, "minor")
	}
}

// fillAllBut binds a pod "filler" on node, its claim "fill" holding every
// GPU of 16 but those of keep (device gpu-N for each N).
func fillAllBut(f *fakeDRA, node string, keep ...int) *v1.Pod {
	var devs []string
	for i := range 16 {
		if !slices.Contains(keep, i) {
			devs = append(devs, fmt.Sprintf("gpu-%d", i))
		}
	}
	p := draPodOf("filler", "fill")
	p.Spec.NodeName = node
	f.put(allocatedOn(claimFor("fill", DefaultDRADeviceClass, len(devs)), DefaultDRADriver, node, p.UID, devs...))
	return p
}

// chosenOn returns the devices gpusched's ledger chose for pod: gpu-N
// for each GPU index N of its assignment.
func chosenOn(t *testing.T, h *host, pod string) string {
	t.Helper()
	a, ok := h.assignmentOf(types.UID("uid-" + pod))
	if !ok {
		t.Fatalf("%s has no assignment", pod)
	}
	var out []string
	for _, i := range a.gpus {
		out = append(out, fmt.Sprintf("gpu-%d", i))
	}
	return strings.Join(out, ",")
}

// TestDRA16GPUNaturalOrder: on a 16-GPU node, GPU index N of gpusched's
// ledger is device gpu-N, whether the devices carry their index attribute
// or only their names (listed in text order, where gpu-10 comes before
// gpu-2): a 2-GPU claim, with 13 GPUs held, gets the NUMA-local pair
// gpu-14,gpu-15 and the ledger holds GPUs 14 and 15; a share of a GPU
// (consumable capacity) goes to the one GPU left, gpu-11, held as GPU 11;
// a MIG device goes to the one GPU left, gpu-12, held as GPU 12.
func TestDRA16GPUNaturalOrder(t *testing.T) {
	for _, index := range []bool{true, false} {
		t.Run(fmt.Sprintf("index=%t", index), func(t *testing.T) {
			ctx := context.Background()

			// Whole GPUs.
			f := newFakeDRA()
			f.slices = []*resourceapi.ResourceSlice{hgxSlice("hgx-1", index)}
			f.put(claimFor("two", DefaultDRADeviceClass, 2))
			h, io := newDRAHost(t, f, node("hgx-1", -1, nil))
			io.pods = []*v1.Pod{fillAllBut(f, "hgx-1", 7, 14, 15), draPodOf("p", "two")}
			h.cycle(ctx)
			devs, _ := claimed(t, f, "two", "uid-p")
			if chosen := chosenOn(t, h, "p"); devs != "gpu-14,gpu-15" || chosen != devs {
				t.Errorf("2 GPUs with gpu-7, gpu-14, gpu-15 free: claim names %s, gpusched's ledger chose %s; want gpu-14,gpu-15 (one NUMA node)", devs, chosen)
			}

			// A share.
			f = newFakeDRA()
			s := hgxSlice("hgx-1", index)
			yes := true
			for i := range s.Spec.Devices {
				s.Spec.Devices[i].AllowMultipleAllocations = &yes
				s.Spec.Devices[i].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}
			}
			f.slices = []*resourceapi.ResourceSlice{s}
			f.put(shareClaim("share", "20Gi"))
			h, io = newDRAHost(t, f, node("hgx-1", -1, nil))
			io.pods = []*v1.Pod{fillAllBut(f, "hgx-1", 11), draPodOf("p", "share")}
			h.cycle(ctx)
			devs, _ = claimed(t, f, "share", "uid-p")
			if chosen := chosenOn(t, h, "p"); devs != "gpu-11" || chosen != devs {
				t.Errorf("a share with gpu-11 free: claim names %s, gpusched's ledger chose %s", devs, chosen)
			}

			// A MIG device (dynamic MIG, partitionable devices).
			f = h200MIG(t, "hgx-1", 16)
			for _, s := range f.slices {
				if !index {
					unindexed(s)
				}
				textOrder(s)
			}
			slices.SortFunc(f.slices, func(a, b *resourceapi.ResourceSlice) int { return strings.Compare(a.Name, b.Name) })
			f.put(migClaim("mig", "1g.18gb"))
			h, io = newDRAHost(t, f, node("hgx-1", -1, nil))
			io.pods = []*v1.Pod{fillAllBut(f, "hgx-1", 12), draPodOf("p", "mig")}
			h.cycle(ctx)
			dev, gpu, _, _, _ := migOf(t, f, "mig")
			if chosen := chosenOn(t, h, "p"); gpu != 12 || chosen != "gpu-12" {
				t.Errorf("a MIG device with gpu-12 free: claim names %s (GPU %d), gpusched's ledger chose %s", dev, gpu, chosen)
			}
		})
	}
}
