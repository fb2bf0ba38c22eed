package dra

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// hgx16 is a 16-GPU node (HGX-2 style: 16 SXM GPUs, 8 per NUMA node) as
// a driver publishes it without index or minor attributes: the GPUs are
// known by their names only (prefix0..prefix15), listed in text order.
func hgx16(prefix string) string {
	var b strings.Builder
	b.WriteString("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: hgx-1-gpus}\nspec:\n  driver: gpu.nvidia.com\n  pool: {name: hgx-1, generation: 1, resourceSliceCount: 1}\n  nodeName: hgx-1\n  devices:\n")
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	slices.Sort(names) // gpu-0, gpu-1, gpu-10, …, gpu-15, gpu-2, …
	for _, n := range names {
		i, _ := strconv.Atoi(strings.TrimPrefix(n, prefix))
		fmt.Fprintf(&b, "    - name: %s\n      attributes: {type: {string: gpu}, productName: {string: NVIDIA H100 80GB HBM3}, uuid: {string: GPU-%d}, "+
			"resource.kubernetes.io/numaNode: {int: %d}, resource.kubernetes.io/pcieRoot: {string: \"pci0000:%02x\"}}\n      capacity: {memory: {value: 80Gi}}\n", n, i, i/8, i/2)
	}
	return b.String()
}

// TestDeviceNamesNaturalOrder: GPUs known only by name are numbered in
// natural order (gpu-2 before gpu-10), so on a 16-GPU node gpu-N is GPU
// index N and its NUMA node is the one its attributes give; NVIDIA's
// gpu-<minor> names and names of another form alike.
func TestDeviceNamesNaturalOrder(t *testing.T) {
	for _, prefix := range []string{"gpu-", "card"} {
		t.Run(prefix, func(t *testing.T) { naturalOrder(t, prefix) })
	}
}

func naturalOrder(t *testing.T, prefix string) {
	objs, err := Parse("hgx16.yaml", []byte(hgx16(prefix)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Build(objs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(res.Spec)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := c.HostByName("hgx-1")
	first, count := c.HostGPUs(h)
	if count != 16 || len(res.GPUs) != 16 {
		t.Fatalf("%d GPUs (%d in the result), want 16", count, len(res.GPUs))
	}
	for _, g := range res.GPUs {
		if want := fmt.Sprintf("%s%d", prefix, g.Index); g.Device != want {
			t.Errorf("GPU index %d is device %s, want %s", g.Index, g.Device, want)
		}
		want := fmt.Sprintf("/numa%d", g.Index/8)
		if name := c.DomainName(c.GPU(first + topology.GPUID(g.Index)).NUMA); !strings.HasSuffix(name, want) {
			t.Errorf("GPU %d (%s) on %s, want …%s", g.Index, g.Device, name, want)
		}
	}
}
