package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
)

// Machine shapes other than the DGX H100, the H200 capture and the GB200
// tray the e2e tests publish: an A100-SXM4-40GB with its MIG profiles
// (no machine preset: the geometry comes from the slices alone), an
// 8-GPU PCIe server without NVLink (GPUs in pairs under one PCIe root),
// four GPUs on one NUMA node, GPUs without an index attribute.

// a100MIG are the GPU-instance profiles of an A100-SXM4-40GB as NVIDIA's
// MIG user guide lists them (nvidia-smi mig -lgip, -lgipp): 8 memory
// slices of 5 GB, 7 compute slices.
var a100MIG = []nvdra.Profile{
	{Name: "1g.5gb", ID: 19, Starts: []int{0, 1, 2, 3, 4, 5, 6}, Size: 1, MemoryMiB: 4864, SM: 14, CE: 1},
	{Name: "1g.5gb+me", ID: 20, Starts: []int{0, 1, 2, 3, 4, 5, 6}, Size: 1, MemoryMiB: 4864, SM: 14, CE: 1, DEC: 1, JPG: 1, OFA: 1},
	{Name: "1g.10gb", ID: 15, Starts: []int{0, 2, 4, 6}, Size: 2, MemoryMiB: 9856, SM: 14, CE: 1, DEC: 1},
	{Name: "2g.10gb", ID: 14, Starts: []int{0, 2, 4}, Size: 2, MemoryMiB: 9856, SM: 28, CE: 2, DEC: 1},
	{Name: "3g.20gb", ID: 9, Starts: []int{0, 4}, Size: 4, MemoryMiB: 19968, SM: 42, CE: 3, DEC: 2},
	{Name: "4g.20gb", ID: 5, Starts: []int{0}, Size: 4, MemoryMiB: 19968, SM: 56, CE: 4, DEC: 2},
	{Name: "7g.40gb", ID: 0, Starts: []int{0}, Size: 8, MemoryMiB: 40192, SM: 98, CE: 7, DEC: 5, JPG: 1, OFA: 1},
}

// a100Node publishes node with gpus A100-SXM4-40GB and their MIG devices.
func a100Node(node string, gpus int) *fakeDRA {
	f := newFakeDRA()
	f.slices = nvdra.Node{Name: node, GPUs: gpus, Product: "NVIDIA A100-SXM4-40GB", Profiles: a100MIG, Slots: 8}.Slices()
	for _, s := range f.slices {
		s.ResourceVersion = "1"
	}
	return f
}

// TestDRAShapeA100MIG: on an A100-SXM4-40GB (no preset), every profile is
// placed at a start NVIDIA lists for it: a 7g.40gb takes a GPU of its
// own; a 4g.20gb starts at 0 and a 3g.20gb then fills slices 4-7 of the
// same GPU (best fit); 1g.10gb and 2g.10gb start at even slices; a
// second 4g.20gb does not fit beside the first.
func TestDRAShapeA100MIG(t *testing.T) {
	f := a100Node("a100-1", 2)
	for name, prof := range map[string]string{"seven": "7g.40gb", "four": "4g.20gb", "three": "3g.20gb", "four2": "4g.20gb"} {
		f.put(migClaim(name, prof))
	}
	h, io := newDRAHost(t, f, node("a100-1", -1, nil))
	ctx := context.Background()
	for _, name := range []string{"seven", "four", "three"} {
		io.pods = append(io.pods, draPodOf("p-"+name, name))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	_, g7, s7, n7, _ := migOf(t, f, "seven")
	_, g4, s4, n4, _ := migOf(t, f, "four")
	_, g3, s3, n3, _ := migOf(t, f, "three")
	if s7 != 0 || n7 != 8 || g4 == g7 || s4 != 0 || n4 != 4 || g3 != g4 || s3 != 4 || n3 != 4 {
		t.Errorf("7g.40gb on GPU %d at %d (%d slices), 4g.20gb on %d at %d (%d), 3g.20gb on %d at %d (%d)", g7, s7, n7, g4, s4, n4, g3, s3, n3)
	}
	io.pods = append(io.pods, draPodOf("p-four2", "four2"))
	h.cycle(ctx)
	if f.claims["default/four2"].Status.Allocation != nil || slices.Contains(io.activated, "p-four2") {
		t.Errorf("a second 4g.20gb placed on the full A100s")
	}
}

// TestDRAShapeA100MIGChurn is TestDRAMIGChurn on two A100-SXM4-40GB, with
// pods of several MIG devices among them.
func TestDRAShapeA100MIGChurn(t *testing.T) {
	migChurnOn(t, a100Node("a100-1", 2), "a100-1", a100MIG, true)
}

// attrOfDev returns attribute attr of device dev in f's slices.
func attrOfDev(f *fakeDRA, dev, attr string) string {
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			if d.Name == dev {
				return attrValue(&d, DefaultDRADriver, attr)
			}
		}
	}
	return ""
}

// TestDRAShapePCIePairs: an 8-GPU PCIe server without NVLink, two GPUs
// per PCIe root, GPUs 0-3 on NUMA node 0 and 4-7 on node 1: after a
// 1-GPU pod, a 2-GPU pod gets a pair under one root, a pair constraint
// on the PCIe root is kept, no device is in two claims; and a 4-GPU pod
// after a 1-GPU pod gets one NUMA node.
func TestDRAShapePCIePairs(t *testing.T) {
	const root, numa = "resource.kubernetes.io/pcieRoot", "resource.kubernetes.io/numaNode"
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{shapedSlice("pcie-8", "NVIDIA L40S", 8, func(i int) gpuAttrs {
		return gpuAttrs{"resource.kubernetes.io/numaNode": i / 4, "resource.kubernetes.io/pcieRoot": fmt.Sprintf("pci0000:%02x", 0x10*(i/2+1))}
	})}
	f.put(claimFor("one", DefaultDRADeviceClass, 1))
	f.put(claimFor("two", DefaultDRADeviceClass, 2))
	f.put(constrained("pair", "resource.kubernetes.io/pcieRoot", false, 1, 1))
	h, io := newDRAHost(t, f, node("pcie-8", -1, nil))
	ctx := context.Background()
	seen := map[string]string{}
	for _, name := range []string{"one", "two", "pair"} {
		io.pods = append(io.pods, draPodOf(name, name))
		h.cycle(ctx)
		if !slices.Contains(io.activated, name) {
			t.Fatalf("%s not placed: pending %q", name, io.pending[name])
		}
		bindDRA(h, io)
		devs, _ := claimed(t, f, name, types.UID("uid-"+name))
		for _, d := range strings.Split(devs, ",") {
			if seen[d] != "" {
				t.Errorf("%s in claims %s and %s", d, seen[d], name)
			}
			seen[d] = name
		}
	}
	for _, name := range []string{"two", "pair"} {
		devs, _ := claimed(t, f, name, types.UID("uid-"+name))
		d := strings.Split(devs, ",")
		if attrOfDev(f, d[0], root) != attrOfDev(f, d[1], root) {
			t.Errorf("%s got %v: not one PCIe root", name, d)
		}
	}
	// On a fresh server, after one GPU, four GPUs on the other NUMA node.
	f.claims = map[string]*resourceapi.ResourceClaim{}
	f.put(claimFor("one", DefaultDRADeviceClass, 1))
	f.put(claimFor("four", DefaultDRADeviceClass, 4))
	h, io = newDRAHost(t, f, node("pcie-8", -1, nil))
	io.pods = []*v1.Pod{draPodOf("one", "one")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("four", "four"))
	h.cycle(ctx)
	four, _ := claimed(t, f, "four", "uid-four")
	d := strings.Split(four, ",")
	if slices.ContainsFunc(d, func(x string) bool { return attrOfDev(f, x, numa) != attrOfDev(f, d[0], numa) }) {
		t.Errorf("four got %v: across NUMA nodes", d)
	}
}

// TestDRAShapeOneNUMA: four GPUs on one NUMA node, each under a PCIe root
// of its own: pods of 2, 1 and 1 GPUs fill it, a 4-GPU pod waits, and
// once the 2-GPU pod ends, a 2-GPU pod gets its GPUs back.
func TestDRAShapeOneNUMA(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{shapedSlice("numa-4", "NVIDIA RTX PRO 6000", 4, func(i int) gpuAttrs {
		return gpuAttrs{"resource.kubernetes.io/numaNode": 0, "resource.kubernetes.io/pcieRoot": fmt.Sprintf("pci0000:%02x", 0x20*(i+1))}
	})}
	for name, n := range map[string]int{"a": 2, "b": 1, "c": 1, "d": 4, "e": 2} {
		f.put(claimFor(name, DefaultDRADeviceClass, n))
	}
	h, io := newDRAHost(t, f, node("numa-4", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("a", "a"), draPodOf("b", "b"), draPodOf("c", "c")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("d", "d"))
	h.cycle(ctx)
	if len(io.activated) != 3 || slices.Contains(io.activated, "d") {
		t.Fatalf("activated %v, want a, b, c; pending %v", io.activated, io.pending)
	}
	a, _ := claimed(t, f, "a", "uid-a")
	io.pods = slices.DeleteFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "a" || p.Name == "d" })
	io.pods = append(io.pods, draPodOf("e", "e"))
	h.cycle(ctx)
	if e, _ := claimed(t, f, "e", "uid-e"); e != a {
		t.Errorf("e got %s, want a's freed %s", e, a)
	}
}

// TestDRAShapeNoIndex: a node whose GPUs publish no index (nor minor),
// listed in shuffled order, ten of them (names gpu-0..gpu-9 and two
// digits: gpu-10, gpu-11): gpusched orders them by name, every claim names
// devices of the node, none twice, and a restarted scheduler reads the
// holdings back from the claims.
func TestDRAShapeNoIndex(t *testing.T) {
	f := newFakeDRA()
	s := shapedSlice("noidx-1", "NVIDIA L4", 12, func(i int) gpuAttrs { return gpuAttrs{"index": nil} })
	rng := rand.New(rand.NewPCG(5, 5))
	rng.Shuffle(len(s.Spec.Devices), func(i, j int) { s.Spec.Devices[i], s.Spec.Devices[j] = s.Spec.Devices[j], s.Spec.Devices[i] })
	f.slices = []*resourceapi.ResourceSlice{s}
	sizes := []int{3, 1, 4, 2, 2}
	for i, n := range sizes {
		f.put(claimFor(fmt.Sprintf("c%d", i), DefaultDRADeviceClass, n))
	}
	f.put(claimFor("late", DefaultDRADeviceClass, 1))
	f.put(claimFor("toomany", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node("noidx-1", -1, nil))
	ctx := context.Background()
	for i := range sizes {
		io.pods = append(io.pods, draPodOf(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i)))
	}
	h.cycle(ctx)
	bindDRA(h, io)
	seen := map[string]bool{}
	for i := range sizes {
		name := fmt.Sprintf("c%d", i)
		devs, node := claimed(t, f, name, types.UID("uid-"+name))
		for _, d := range strings.Split(devs, ",") {
			if seen[d] || node != "noidx-1" || !slices.ContainsFunc(s.Spec.Devices, func(x resourceapi.Device) bool { return x.Name == d }) {
				t.Errorf("claim %s: device %s on %s (seen %t)", name, d, node, seen[d])
			}
			seen[d] = true
		}
	}
	// 12 GPUs, 12 claimed: a restarted scheduler gives the next pods none.
	h2, io2 := newDRAHost(t, f, node("noidx-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), draPodOf("late", "late"))
	h2.cycle(ctx)
	if slices.Contains(io2.activated, "late") {
		t.Errorf("late placed on a node whose 12 GPUs the claims hold")
	}
	var want []string
	for _, r := range f.claims["default/c3"].Status.Allocation.Devices.Results {
		want = append(want, r.Device)
	}
	io2.pods = slices.DeleteFunc(io2.pods, func(p *v1.Pod) bool { return p.Name == "c3" || p.Name == "late" })
	io2.pods = append(io2.pods, draPodOf("toomany", "toomany"))
	h2.cycle(ctx)
	got, _ := claimed(t, f, "toomany", "uid-toomany")
	if g := strings.Split(got, ","); !sameSet(g, want) {
		t.Errorf("after c3 (%v) ended, the 2-GPU pod got %v", want, g)
	}
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
