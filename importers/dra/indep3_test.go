package dra

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// indep3Slice is the YAML of a ResourceSlice of NVIDIA's GPU driver as
// it publishes today (no index or minor attribute; the standard
// attributes pciBusID, pcieRoot and numaNode): n GPUs of product with
// memMiB of memory each; with mig, the A30's dynamic MIG (the GPU's
// capacities and counters are its largest profile's: 4g.24gb, 24064 MiB;
// one device per profile and placement, no uuid).
func indep3Slice(node, product string, memMiB int64, n int, mig bool, numa func(int) int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- apiVersion: resource.k8s.io/v1\n  kind: ResourceSlice\n  metadata: {name: %s-gpu.nvidia.com-i3}\n  spec:\n    driver: gpu.nvidia.com\n    nodeName: %s\n    pool: {name: %s, generation: 1, resourceSliceCount: 1}\n", node, node, node)
	engines := func(ind string, sm, ce, dec, jpg, ofa, mem int64, from, size int) string {
		s := fmt.Sprintf("%smultiprocessors: {value: \"%d\"}\n%scopy-engines: {value: \"%d\"}\n%sdecoders: {value: \"%d\"}\n%sjpeg-engines: {value: \"%d\"}\n%sofa-engines: {value: \"%d\"}\n%smemory: {value: \"%dMi\"}\n",
			ind, sm, ind, ce, ind, dec, ind, jpg, ind, ofa, ind, mem)
		for k := from; k < from+size; k++ {
			s += fmt.Sprintf("%smemory-slice-%d: {value: \"1\"}\n", ind, k)
		}
		return s
	}
	if mig {
		b.WriteString("    sharedCounters:\n")
		for i := range n {
			fmt.Fprintf(&b, "    - name: gpu-%d-counter-set\n      counters:\n%s", i, engines("        ", 56, 4, 4, 1, 1, 24064, 0, 4))
		}
	}
	b.WriteString("    devices:\n")
	profiles := []struct {
		name, dev                string
		id                       int
		sm, ce, dec, jpg, ofa, m int64
		size                     int
		starts                   []int
	}{
		{"1g.6gb", "1g6gb", 14, 14, 1, 0, 0, 0, 5836, 1, []int{0, 1, 2, 3}},
		{"1g.6gb+me", "1g6gb-me", 21, 14, 1, 1, 1, 1, 5836, 1, []int{0, 1, 2, 3}},
		{"2g.12gb", "2g12gb", 5, 28, 2, 2, 0, 0, 11904, 2, []int{0, 2}},
		{"2g.12gb+me", "2g12gb-me", 6, 28, 2, 2, 1, 1, 11904, 2, []int{0, 2}},
		{"4g.24gb", "4g24gb", 0, 56, 4, 4, 1, 1, 24064, 4, []int{0}},
	}
	for i := range n {
		uuid := fmt.Sprintf("GPU-%s-%d-i3", node, i)
		attrs := fmt.Sprintf("        productName: {string: %q}\n        architecture: {string: Ampere}\n        cudaComputeCapability: {version: 8.0.0}\n        resource.kubernetes.io/pcieRoot: {string: \"pci0000:%02x\"}\n", product, 0x20*(i+1))
		mem := memMiB
		if mig {
			mem = 24064
		}
		fmt.Fprintf(&b, "    - name: gpu-%d\n      attributes:\n        type: {string: gpu}\n        uuid: {string: %s}\n        resource.kubernetes.io/numaNode: {int: %d}\n        resource.kubernetes.io/pciBusID: {string: \"0000:%02x:00.0\"}\n%s      capacity:\n        memory: {value: \"%dMi\"}\n",
			i, uuid, numa(i), 0x21+0x10*i, attrs, mem)
		if !mig {
			continue
		}
		fmt.Fprintf(&b, "      consumesCounters:\n      - counterSet: gpu-%d-counter-set\n        counters:\n%s", i, engines("          ", 56, 4, 4, 1, 1, 24064, 0, 4))
		for _, p := range profiles {
			for _, st := range p.starts {
				fmt.Fprintf(&b, "    - name: gpu-%d-mig-%s-%d-%d\n      attributes:\n        type: {string: mig}\n        parentUUID: {string: %s}\n        profile: {string: %q}\n%s      capacity:\n        memory: {value: \"%dMi\"}\n      consumesCounters:\n      - counterSet: gpu-%d-counter-set\n        counters:\n%s",
					i, p.dev, p.id, st, uuid, p.name, attrs, p.m, i, engines("          ", p.sm, p.ce, p.dec, p.jpg, p.ofa, p.m, st, p.size))
			}
		}
	}
	return b.String()
}

// indep3Build parses and builds YAML documents (a list of objects).
func indep3Build(t *testing.T, docs ...string) (*Result, *topology.Cluster) {
	t.Helper()
	objs, err := Parse("indep3.yaml", []byte("apiVersion: v1\nkind: List\nitems:\n"+strings.Join(docs, "")))
	if err != nil {
		t.Fatal(err)
	}
	return built(t, objs, Options{CPUMilli: 64000, MemoryMiB: 512 << 10})
}

// TestIndep3A30DynamicMIG: two A30 of dynamic MIG as NVIDIA's driver
// publishes them (device names gpu-0-mig-1g6gb-me-21-0, no MIG uuid, the
// engines as counters) give the A30's MIG geometry: four slots, each
// profile's legal starts, the media-extension profiles exclusive.
func TestIndep3A30DynamicMIG(t *testing.T) {
	res, _ := indep3Build(t, indep3Slice("a30-1", "NVIDIA A30", 24576, 2, true, func(int) int { return 0 }))
	var mig *topology.MIGSpec
	for _, a := range res.Spec.Accelerators {
		mig = a.MIG
	}
	if mig == nil || mig.Slots != 4 {
		t.Fatalf("MIG %+v, want 4 slots", mig)
	}
	want := map[string]string{"1g.6gb": "1 [0 1 2 3] false", "1g.6gb+me": "1 [0 1 2 3] true", "2g.12gb": "2 [0 2] false", "2g.12gb+me": "2 [0 2] true", "4g.24gb": "4 [0] false"}
	for _, p := range mig.Profiles {
		if got := fmt.Sprintf("%d %v %t", p.Size, p.Starts, p.Exclusive != ""); got != want[p.Name] {
			t.Errorf("profile %s: %s, want %s", p.Name, got, want[p.Name])
		}
		delete(want, p.Name)
	}
	if len(want) != 0 || len(res.MIG) != 2*(4+4+2+2+1) {
		t.Errorf("profiles missing %v; %d MIG devices", want, len(res.MIG))
	}
}

// TestIndep3A30MixedNodes: a cluster of A30 nodes, one of dynamic MIG
// (its GPUs publish the largest profile's memory, 24064 MiB, as NVIDIA's
// driver does for a partitionable GPU) and one of plain GPUs (their whole
// memory, 24576 MiB): both are A30 hosts; neither is refused.
func TestIndep3A30MixedNodes(t *testing.T) {
	_, c := indep3Build(t, indep3Slice("a30-mig", "NVIDIA A30", 24576, 2, true, func(int) int { return 0 }),
		indep3Slice("a30-plain", "NVIDIA A30", 24576, 4, false, func(i int) int { return i / 2 }))
	if c.NumHosts() != 2 || c.NumGPUs() != 6 {
		t.Errorf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
}

// TestIndep3HGXNPS2: an HGX H100 (the DGX H100's model and count) whose
// GPUs publish four NUMA nodes (EPYC in NPS2) keeps the preset's NVSwitch
// and takes the published NUMA nodes: GPUs 0 and 1 share one, 1 and 2 do
// not.
func TestIndep3HGXNPS2(t *testing.T) {
	_, c := indep3Build(t, indep3Slice("hgx-1", "NVIDIA H100 80GB HBM3", 81559, 8, false, func(i int) int { return i / 2 }))
	if got := c.Link(0, 7).Kind; got != topology.LinkFabric {
		t.Errorf("GPUs 0-7: %v, want the NVSwitch", got)
	}
	if c.GPU(0).NUMA != c.GPU(1).NUMA || c.GPU(1).NUMA == c.GPU(2).NUMA {
		t.Errorf("NUMA of GPUs 0, 1, 2: %s, %s, %s", c.DomainName(c.GPU(0).NUMA), c.DomainName(c.GPU(1).NUMA), c.DomainName(c.GPU(2).NUMA))
	}
}

// TestIndep3AmpereMIGOnly: an A30 node as NVIDIA's driver publishes it
// with dynamic MIG on an Ampere GPU in MIG mode: the counter sets and
// the MIG devices, not the GPUs (their MIG mode cannot change without a
// reset). It is a node of two A30s with the A30's MIG geometry.
func TestIndep3AmpereMIGOnly(t *testing.T) {
	var keep []string
	skip := false
	for _, l := range strings.Split(indep3Slice("a30-m", "NVIDIA A30", 24576, 2, true, func(int) int { return 0 }), "\n") {
		if strings.HasPrefix(l, "    - name: ") {
			skip = !strings.Contains(l, "-mig-") && !strings.Contains(l, "counter-set")
		}
		if !skip {
			keep = append(keep, l)
		}
	}
	res, c := indep3Build(t, strings.Join(keep, "\n")+"\n")
	if c.NumHosts() != 1 || c.NumGPUs() != 2 {
		t.Errorf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
	if mig := res.Spec.Accelerators[0].MIG; mig == nil || mig.Slots != 4 || len(mig.Profiles) != 5 || len(res.MIG) != 26 {
		t.Errorf("MIG %+v, %d MIG devices", mig, len(res.MIG))
	}
	if g := res.GPUs; len(g) != 2 || g[0].Device != "gpu-0" || g[1].Device != "gpu-1" || g[1].UUID != "GPU-a30-m-1-i3" {
		t.Errorf("GPUs %+v", g)
	}
}
