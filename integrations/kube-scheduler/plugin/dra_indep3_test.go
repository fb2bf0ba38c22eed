package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A third independent set of slices and claims, on machine shapes and MIG
// layouts the other DRA tests do not publish, built from the schema
// NVIDIA's k8s-dra-driver-gpu publishes today: GPU devices gpu-<minor>
// with type, uuid, productName, brand, architecture, the versions
// cudaComputeCapability, driverVersion and cudaDriverVersion, and
// Kubernetes' standard attributes resource.kubernetes.io/pciBusID,
// pcieRoot and numaNode, a memory capacity; with dynamic MIG the GPU's
// capacities are the largest profile's (multiprocessors, copyEngines,
// decoders, encoders, jpegEngines, ofaEngines, memory) and it consumes its
// whole counter set gpu-<minor>-counter-set (those capacities as counters
// multiprocessors, copy-engines, … and one memory-slice-K per slice); a
// MIG device gpu-<minor>-mig-<profile, RFC 1123>-<GI profile ID>-<start>
// has no uuid, its parent's attributes, its profile's capacities and
// consumes them and its placement's memory slices. The counters other
// than memory slices are real: one OFA and one JPEG engine per GPU make
// the media-extension profiles ("+me") one per GPU.

// indep3Profile is a MIG GPU-instance profile as nvidia-smi mig -lgip
// lists it: GI profile ID, memory (MiB), SMs, copy engines, decoders,
// encoders, JPEG and OFA engines, size in memory slices and legal starts.
type indep3Profile struct {
	name                     string
	id                       int
	memMiB                   int64
	sm, ce, dec, enc, jpg, o int64
	size                     int
	starts                   []int
}

// indep3A30 are the A30's MIG profiles: four memory slices of 6 GB,
// four compute slices (56 SMs); one OFA and one JPEG engine.
var indep3A30 = []indep3Profile{
	{"1g.6gb", 14, 5836, 14, 1, 1, 0, 0, 0, 1, []int{0, 1, 2, 3}},
	{"1g.6gb+me", 21, 5836, 14, 1, 1, 0, 1, 1, 1, []int{0, 1, 2, 3}},
	{"2g.12gb", 5, 11904, 28, 2, 2, 0, 0, 0, 2, []int{0, 2}},
	{"2g.12gb+me", 6, 11904, 28, 2, 2, 0, 1, 1, 2, []int{0, 2}},
	{"4g.24gb", 0, 24064, 56, 4, 4, 0, 1, 1, 4, []int{0}},
}

// indep3A100 are the A100-SXM4-40GB's MIG profiles: eight memory slices
// of 5 GB, seven compute slices (98 SMs), five decoders, one OFA and
// one JPEG engine.
var indep3A100 = []indep3Profile{
	{"1g.5gb", 19, 4864, 14, 1, 0, 0, 0, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"1g.5gb+me", 20, 4864, 14, 1, 1, 0, 1, 1, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"1g.10gb", 15, 9856, 14, 1, 1, 0, 0, 0, 2, []int{0, 2, 4, 6}},
	{"2g.10gb", 14, 9856, 28, 2, 1, 0, 0, 0, 2, []int{0, 2, 4}},
	{"3g.20gb", 9, 19968, 42, 3, 2, 0, 0, 0, 4, []int{0, 4}},
	{"4g.20gb", 5, 19968, 56, 4, 2, 0, 0, 0, 4, []int{0}},
	{"7g.40gb", 0, 40192, 98, 7, 5, 0, 1, 1, 8, []int{0}},
}

// indep3H100Profiles are the H100 80GB HBM3's MIG profiles, with the
// media-extension 1g.10gb+me: eight memory slices, 132 SMs, seven
// decoders and JPEG engines, one OFA.
var indep3H100Profiles = []indep3Profile{
	{"1g.10gb", 19, 9984, 16, 1, 1, 0, 1, 0, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"1g.10gb+me", 20, 9984, 16, 1, 1, 0, 1, 1, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"1g.20gb", 15, 19968, 26, 1, 1, 0, 1, 0, 2, []int{0, 2, 4, 6}},
	{"2g.20gb", 14, 19968, 32, 2, 2, 0, 2, 0, 2, []int{0, 2, 4}},
	{"3g.40gb", 9, 40192, 60, 3, 3, 0, 3, 0, 4, []int{0, 4}},
	{"4g.40gb", 5, 40192, 64, 4, 4, 0, 4, 0, 4, []int{0}},
	{"7g.80gb", 0, 80896, 132, 8, 7, 0, 7, 1, 8, []int{0}},
}

// indep3Checked turns profiles into indepCheck's.
func indep3Checked(ps []indep3Profile) []indepProfile {
	var out []indepProfile
	for _, p := range ps {
		out = append(out, indepProfile{name: p.name, id: p.id, size: p.size, starts: p.starts})
	}
	return out
}

// indep3Model is a GPU model as the driver describes it.
type indep3Model struct {
	product, arch, cc string
	memMiB            int64
	mig               []indep3Profile // dynamic MIG when set
}

var (
	indep3B200   = indep3Model{"NVIDIA B200", "Blackwell", "10.0.0", 183359, nil}
	indep3H100   = indep3Model{"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559, nil}
	indep3H100NV = indep3Model{"NVIDIA H100 NVL", "Hopper", "9.0.0", 95830, nil}
	indep3L40S   = indep3Model{"NVIDIA L40S", "Ada Lovelace", "8.9.0", 46068, nil}
	indep3A30MIG = indep3Model{"NVIDIA A30", "Ampere", "8.0.0", 24576, indep3A30}
	indep3A100M  = indep3Model{"NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40960, indep3A100}
	indep3H100M  = indep3Model{"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559, indep3H100Profiles}
)

// indep3Node publishes node's GPUs of model m: GPU i has minor i, NUMA
// node numa(i) (negative: none published) and PCIe root root(i). With
// m.mig every GPU is published with dynamic MIG. The slices are split as
// the apiserver takes them (indepSplit).
func indep3Node(node string, m indep3Model, n int, numa func(int) int, root func(int) string) []*resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com-r4nd3", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	mib := func(v int64) resourceapi.DeviceCapacity { return indepQty(v << 20) }
	for i := range n {
		uuid := fmt.Sprintf("GPU-%08x-5e6f-7a8b-9c0d-%012x", 0x3b00+i, len(node)*4096+i)
		bus := fmt.Sprintf("0000:%02x:00.0", 0x19+0x20*i)
		common := func() map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
			a := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"productName": indepStr(m.product), "brand": indepStr("Nvidia"), "architecture": indepStr(m.arch),
				"cudaComputeCapability": indepVer(m.cc), "driverVersion": indepVer("580.105.8"), "cudaDriverVersion": indepVer("13.0.0"),
				"resource.kubernetes.io/pciBusID": indepStr(bus), "resource.kubernetes.io/pcieRoot": indepStr(root(i)),
			}
			return a
		}
		a := common()
		a["type"], a["uuid"] = indepStr("gpu"), indepStr(uuid)
		if numa(i) >= 0 {
			v := int64(numa(i))
			a["resource.kubernetes.io/numaNode"] = resourceapi.DeviceAttribute{IntValue: &v}
		}
		gpu := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: a,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": mib(m.memMiB)}}
		if m.mig == nil {
			s.Spec.Devices = append(s.Spec.Devices, gpu)
			continue
		}
		caps := func(p indep3Profile) map[resourceapi.QualifiedName]resourceapi.DeviceCapacity {
			return map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"multiprocessors": indepQty(p.sm), "copyEngines": indepQty(p.ce),
				"decoders": indepQty(p.dec), "encoders": indepQty(p.enc), "jpegEngines": indepQty(p.jpg), "ofaEngines": indepQty(p.o), "memory": mib(p.memMiB)}
		}
		counters := func(p indep3Profile, start int) map[string]resourceapi.Counter {
			c := map[string]resourceapi.Counter{}
			for k, v := range caps(p) {
				name := map[resourceapi.QualifiedName]string{"copyEngines": "copy-engines", "jpegEngines": "jpeg-engines", "ofaEngines": "ofa-engines"}[k]
				c[cmp.Or(name, string(k))] = resourceapi.Counter{Value: v.Value}
			}
			for k := start; k < start+p.size; k++ {
				c[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: indepQty(1).Value}
			}
			return c
		}
		// The largest capacities of any profile, the whole GPU's.
		var most indep3Profile
		for _, p := range m.mig {
			most.sm, most.ce, most.dec = max(most.sm, p.sm), max(most.ce, p.ce), max(most.dec, p.dec)
			most.enc, most.jpg, most.o, most.memMiB = max(most.enc, p.enc), max(most.jpg, p.jpg), max(most.o, p.o), max(most.memMiB, p.memMiB)
			most.size = max(most.size, p.size)
		}
		set := fmt.Sprintf("gpu-%d-counter-set", i)
		s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: set, Counters: counters(most, 0)})
		gpu.Capacity = caps(most)
		gpu.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: counters(most, 0)}}
		s.Spec.Devices = append(s.Spec.Devices, gpu)
		for _, p := range m.mig {
			for _, st := range p.starts {
				ma := common()
				ma["type"], ma["parentUUID"], ma["profile"] = indepStr("mig"), indepStr(uuid), indepStr(p.name)
				s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
					Name:       fmt.Sprintf("gpu-%d-mig-%s-%d-%d", i, strings.ReplaceAll(strings.ReplaceAll(p.name, ".", ""), "+", "-"), p.id, st),
					Attributes: ma, Capacity: caps(p),
					ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: counters(p, st)}},
				})
			}
		}
	}
	return indepSplit(s)
}

// indep3Attr is a device's attribute as a string ("" when absent).
func indep3Attr(d *resourceapi.Device, name string) string {
	a, ok := d.Attributes[resourceapi.QualifiedName(name)]
	switch {
	case !ok:
		return ""
	case a.StringValue != nil:
		return *a.StringValue
	case a.IntValue != nil:
		return fmt.Sprint(*a.IntValue)
	}
	return ""
}

// indep3Attrs is attribute name of each device.
func indep3Attrs(ds []*resourceapi.Device, name string) []string {
	var out []string
	for _, d := range ds {
		out = append(out, indep3Attr(d, name))
	}
	return out
}

// indep3Constrained is a claim of one request per count of the GPU
// class, all under one matchAttribute constraint on attr.
func indep3Constrained(name, attr string, counts ...int) *resourceapi.ResourceClaim {
	c := claimFor(name, DefaultDRADeviceClass, counts...)
	q := resourceapi.FullyQualifiedName(attr)
	c.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &q}}
	return c
}

const (
	indep3NUMA = "resource.kubernetes.io/numaNode"
	indep3Root = "resource.kubernetes.io/pcieRoot"
)

// indep3Run puts each claim's pod in one cycle at a time, in order, and
// binds what was placed; a last cycle settles.
func indep3Run(h *host, io *fakeIO, pods ...*v1.Pod) {
	ctx := context.Background()
	for _, p := range pods {
		io.pods = append(io.pods, p)
		h.cycle(ctx)
		bindDRA(h, io)
	}
	h.cycle(ctx)
}

// TestIndep3B200HGX: a B200 HGX (eight GPUs on NVSwitch, GPUs 0-3 on NUMA
// node 0 and 4-7 on node 1, a PCIe root per GPU). A 1-GPU pod, then a
// 4-GPU pod gets the other NUMA node whole; a 2-GPU pod then shares the
// first pod's NUMA node; a 1-GPU pod takes the last GPU; one more waits.
func TestIndep3B200HGX(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-1", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	for name, n := range map[string]int{"one": 1, "four": 4, "two": 2, "last": 1, "over": 1} {
		f.put(indepClaim(name, DefaultDRADeviceClass, int64(n), `device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'`))
	}
	h, io := newDRAHost(t, f, node("b200-1", -1, nil))
	indep3Run(h, io, draPodOf("one", "one"), draPodOf("four", "four"), draPodOf("two", "two"), draPodOf("last", "last"), draPodOf("over", "over"))
	got := indepCheck(t, f, io, nil)
	for c, n := range map[string]int{"one": 1, "four": 4, "two": 2, "last": 1} {
		if len(got[c]) != n {
			t.Fatalf("claim %s: %v; pending %v", c, names(got[c]), io.pending)
		}
	}
	numa := func(c string) []string { return indep3Attrs(got[c], indep3NUMA) }
	if !one(numa("four")) || numa("four")[0] == numa("one")[0] {
		t.Errorf("four on NUMA nodes %v beside one on %v: want the other node whole", numa("four"), numa("one"))
	}
	if !one(numa("two")) || numa("two")[0] != numa("one")[0] {
		t.Errorf("two on NUMA nodes %v, one on %v: want one node, the first pod's", numa("two"), numa("one"))
	}
	if len(got["over"]) != 0 || io.pending["over"] == "" {
		t.Errorf("over: %v on a full node; reason %q", names(got["over"]), io.pending["over"])
	}
}

// TestIndep3HGXH100NPS2: an HGX H100 (the DGX H100's model and GPU count)
// on two EPYC sockets in NPS2: the driver publishes four NUMA nodes, two
// GPUs each (numaNode i/2). The published NUMA nodes are the truth: after
// a 1-GPU pod, a 2-GPU pod whose claim asks one numaNode is allocated (two
// free GPUs share three NUMA nodes), and a plain 2-GPU pod gets a pair of
// one published NUMA node too.
func TestIndep3HGXH100NPS2(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("hgx-h100", indep3H100, 8, func(i int) int { return i / 2 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x10*(i+1)) })
	f.put(claimFor("one", DefaultDRADeviceClass, 1))
	f.put(indep3Constrained("numa2", indep3NUMA, 2))
	f.put(claimFor("two", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node("hgx-h100", -1, nil))
	indep3Run(h, io, draPodOf("one", "one"), draPodOf("numa2", "numa2"), draPodOf("two", "two"))
	got := indepCheck(t, f, io, nil)
	for c, n := range map[string]int{"one": 1, "numa2": 2, "two": 2} {
		if len(got[c]) != n {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
		}
	}
	for _, c := range []string{"numa2", "two"} {
		if v := indep3Attrs(got[c], indep3NUMA); len(v) == 2 && !one(v) {
			t.Errorf("claim %s: %v on NUMA nodes %v, want one", c, names(got[c]), v)
		}
	}
}

// TestIndep3H100NVLPairs: eight H100 NVL (PCIe cards joined in pairs by
// NVLink bridges, each pair under one PCIe root; two NUMA nodes). A 1-GPU
// pod; a 2-GPU pod gets a pair of its own root (never half of the first
// pod's pair); a claim of two requests of 2 under one matchAttribute on
// numaNode gets the other NUMA node whole; a claim of 1+1 on one
// pcieRoot then has no free pair and waits, saying why, with nothing
// written.
func TestIndep3H100NVLPairs(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("h100nvl-1", indep3H100NV, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x20*(i/2+1)) })
	f.put(claimFor("one", DefaultDRADeviceClass, 1))
	f.put(indepClaim("pair", DefaultDRADeviceClass, 2, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 NVL'`))
	f.put(indep3Constrained("numa4", indep3NUMA, 2, 2))
	f.put(indep3Constrained("root2", indep3Root, 1, 1))
	h, io := newDRAHost(t, f, node("h100nvl-1", -1, nil))
	indep3Run(h, io, draPodOf("one", "one"), draPodOf("pair", "pair"), draPodOf("numa4", "numa4"), draPodOf("root2", "root2"))
	got := indepCheck(t, f, io, nil)
	if len(got["one"]) != 1 || len(got["pair"]) != 2 || len(got["numa4"]) != 4 {
		t.Fatalf("allocations %v; pending %v", got, io.pending)
	}
	roots := func(c string) []string { return indep3Attrs(got[c], indep3Root) }
	if !one(roots("pair")) || roots("pair")[0] == roots("one")[0] {
		t.Errorf("pair on roots %v beside one on %v: want a bridged pair of its own", roots("pair"), roots("one"))
	}
	if v := indep3Attrs(got["numa4"], indep3NUMA); !one(v) {
		t.Errorf("numa4 on NUMA nodes %v", v)
	}
	if len(got["root2"]) != 0 || !strings.Contains(io.pending["root2"], "pcieRoot") {
		t.Errorf("root2: %v; reason %q, want it waiting for a free pair", names(got["root2"]), io.pending["root2"])
	}
	if slices.Contains(f.writes, "status root2") {
		t.Errorf("root2 written: %v", f.writes)
	}
}

// TestIndep3FourGPUNode: an HGX H100 4-GPU board (four H100 SXM, one
// NUMA node, a PCIe root per pair of GPUs), not the DGX's eight: it is a
// node of four GPUs, whatever its product name's preset has. A 2-GPU pod
// gets one root's pair; two 1-GPU pods fill the other; a 3-GPU pod waits.
func TestIndep3FourGPUNode(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("hgx4-1", indep3H100, 4, func(int) int { return 0 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x40*(i/2+1)) })
	for name, n := range map[string]int{"two": 2, "three": 3, "a": 1, "b": 1} {
		f.put(claimFor(name, DefaultDRADeviceClass, n))
	}
	h, io := newDRAHost(t, f, node("hgx4-1", -1, nil))
	indep3Run(h, io, draPodOf("two", "two"), draPodOf("a", "a"), draPodOf("b", "b"), draPodOf("three", "three"))
	got := indepCheck(t, f, io, nil)
	if len(got["two"]) != 2 || !one(indep3Attrs(got["two"], indep3Root)) {
		t.Errorf("two: %v on roots %v; pending %q", names(got["two"]), indep3Attrs(got["two"], indep3Root), io.pending["two"])
	}
	if len(got["three"]) != 0 || io.pending["three"] == "" {
		t.Errorf("three: %v on a full node; reason %q", names(got["three"]), io.pending["three"])
	}
	if len(got["a"]) != 1 || len(got["b"]) != 1 {
		t.Errorf("a %v, b %v; pending %v", names(got["a"]), names(got["b"]), io.pending)
	}
}

// indep3Hetero is a cluster of four models: an L40S box (4 GPUs, two
// roots), an H100 NVL box (8, two NUMA nodes), a B200 HGX (8) and an A30
// node of dynamic MIG (2 GPUs).
func indep3Hetero() (*fakeDRA, []*v1.Node) {
	f := newFakeDRA()
	byRoot := func(per int) func(int) string {
		return func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x20*(i/per+1)) }
	}
	for _, x := range []struct {
		node string
		m    indep3Model
		n    int
	}{{"a-l40s", indep3L40S, 4}, {"b-h100nvl", indep3H100NV, 8}, {"c-b200", indep3B200, 8}, {"d-a30", indep3A30MIG, 2}} {
		f.slices = append(f.slices, indep3Node(x.node, x.m, x.n, func(i int) int { return i * 2 / x.n }, byRoot(2))...)
	}
	return f, []*v1.Node{node("a-l40s", -1, nil), node("b-h100nvl", -1, nil), node("c-b200", -1, nil), node("d-a30", -1, nil)}
}

// TestIndep3HeteroCEL: on a cluster of four models, CEL selectors on
// productName, architecture, the compute capability and the memory
// capacity send each claim to the nodes whose GPUs match: Blackwell to
// the B200, memory ≥ 90Gi to the H100 NVL or B200, compute capability
// below 9.0 and 40Gi or more to the L40S, an A30 MIG device to the A30,
// a claim no GPU matches waits saying so; no claim gets a device its
// selectors reject.
func TestIndep3HeteroCEL(t *testing.T) {
	f, nodes := indep3Hetero()
	sel := map[string]struct {
		n     int64
		class string
		exprs []string
	}{
		"bw":     {4, DefaultDRADeviceClass, []string{`device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'`}},
		"big":    {2, DefaultDRADeviceClass, []string{`device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('90Gi')) >= 0`}},
		"ada":    {2, DefaultDRADeviceClass, []string{`device.attributes['gpu.nvidia.com'].cudaComputeCapability.isLessThan(semver('9.0.0'))`, `device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0`}},
		"nvl":    {4, DefaultDRADeviceClass, []string{`device.attributes['gpu.nvidia.com'].productName.endsWith('NVL')`}},
		"a30mig": {1, DefaultDRAMIGDeviceClass, []string{`device.attributes['gpu.nvidia.com'].profile == '2g.12gb'`, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A30'`}},
		"none":   {1, DefaultDRADeviceClass, []string{`device.attributes['gpu.nvidia.com'].architecture == 'Rubin'`}},
	}
	order := []string{"bw", "big", "ada", "nvl", "a30mig", "none"}
	for _, c := range order {
		f.put(indepClaim(c, sel[c].class, sel[c].n, sel[c].exprs...))
	}
	h, io := newDRAHost(t, f, nodes...)
	var pods []*v1.Pod
	for _, c := range order {
		pods = append(pods, draPodOf(c, c))
	}
	indep3Run(h, io, pods...)
	got := indepCheck(t, f, io, indep3Checked(indep3A30))
	for _, c := range order[:5] {
		if int64(len(got[c])) != sel[c].n {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
			continue
		}
		for _, d := range got[c] {
			if ok, err := deviceMatches("gpu.nvidia.com", d, append(slices.Clone(f.classes[sel[c].class].Spec.Selectors), indepClaim(c, sel[c].class, 1, sel[c].exprs...).Spec.Devices.Requests[0].Exactly.Selectors...)); !ok || err != nil {
				t.Errorf("claim %s got %s (%s), which its selectors reject (%v)", c, d.Name, indep3Attr(d, "productName"), err)
			}
		}
	}
	if n := f.claims["default/bw"].Status.Allocation; n == nil || n.Devices.Results[0].Pool != "c-b200" {
		t.Errorf("bw not on the B200")
	}
	if len(got["none"]) != 0 || !strings.Contains(io.pending["none"], "selector") {
		t.Errorf("none: %v; reason %q", names(got["none"]), io.pending["none"])
	}
}

// indep3Profiles is the MIG claim sequence of a test: claim → profile.
type indep3Seq []struct{ claim, profile string }

// indep3MIG places each MIG claim of seq in turn on f's nodes and checks
// every allocation; it returns claim → devices.
func indep3MIG(t *testing.T, f *fakeDRA, profiles []indep3Profile, seq indep3Seq, nodes ...*v1.Node) (map[string][]*resourceapi.Device, *fakeIO) {
	t.Helper()
	for _, s := range seq {
		f.put(indepMIG(s.claim, s.profile))
	}
	h, io := newDRAHost(t, f, nodes...)
	var pods []*v1.Pod
	for _, s := range seq {
		pods = append(pods, draPodOf(s.claim, s.claim))
	}
	indep3Run(h, io, pods...)
	got := indepCheck(t, f, io, indep3Checked(profiles))
	for _, s := range seq {
		t.Logf("%s (%s): %v", s.claim, s.profile, names(got[s.claim]))
	}
	return got, io
}

// indep3GPUOf is the GPU minor of a MIG device name.
func indep3GPUOf(d *resourceapi.Device) int {
	var g int
	fmt.Sscanf(d.Name, "gpu-%d-", &g)
	return g
}

// TestIndep3A30MediaMIG: two A30 of dynamic MIG (four memory slices; one
// OFA and one JPEG engine per GPU, so one media-extension device per
// GPU). Two 1g.6gb+me go to different GPUs; a 2g.12gb and four 1g.6gb
// fill the eight slices; a 2g.12gb+me (no GPU has its engines free) and
// a 4g.24gb wait; the counters (engines, slices) are never
// over-consumed.
func TestIndep3A30MediaMIG(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("a30-1", indep3A30MIG, 2, func(int) int { return 0 }, func(int) string { return "pci0000:3a" })
	seq := indep3Seq{{"me1", "1g.6gb+me"}, {"me2", "1g.6gb+me"}, {"two", "2g.12gb"}, {"s1", "1g.6gb"}, {"s2", "1g.6gb"}, {"me3", "2g.12gb+me"}, {"s3", "1g.6gb"}, {"s4", "1g.6gb"}, {"whole", "4g.24gb"}}
	got, io := indep3MIG(t, f, indep3A30, seq, node("a30-1", -1, nil))
	if len(got["me1"]) != 1 || len(got["me2"]) != 1 || indep3GPUOf(got["me1"][0]) == indep3GPUOf(got["me2"][0]) {
		t.Errorf("me1 %v, me2 %v: want one per GPU", names(got["me1"]), names(got["me2"]))
	}
	for _, c := range []string{"two", "s1", "s2", "s3", "s4"} {
		if len(got[c]) != 1 {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
		}
	}
	for _, c := range []string{"me3", "whole"} {
		if len(got[c]) != 0 || io.pending[c] == "" {
			t.Errorf("claim %s: %v on full A30s; reason %q", c, names(got[c]), io.pending[c])
		}
	}
}

// TestIndep3A100MediaMIG: one A100-SXM4-40GB of dynamic MIG. A
// 1g.5gb+me, a 3g.20gb and a 2g.10gb are placed at legal starts; then a
// second 1g.5gb+me waits (the GPU's one OFA engine is taken) though a
// slice is free; the counters are never over-consumed.
func TestIndep3A100MediaMIG(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("a100-40", indep3A100M, 1, func(int) int { return 0 }, func(int) string { return "pci0000:07" })
	seq := indep3Seq{{"me", "1g.5gb+me"}, {"three", "3g.20gb"}, {"two", "2g.10gb"}, {"me2", "1g.5gb+me"}}
	got, io := indep3MIG(t, f, indep3A100, seq, node("a100-40", -1, nil))
	if len(got["me2"]) != 0 || io.pending["me2"] == "" {
		t.Errorf("me2: %v beside me %v on one GPU; reason %q", names(got["me2"]), names(got["me"]), io.pending["me2"])
	}
	for _, c := range []string{"me", "three", "two"} {
		if len(got[c]) != 1 {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
		}
	}
}

// TestIndep3H100MediaMIG: two H100 80GB of dynamic MIG with 1g.10gb+me.
// Two 1g.10gb+me go one per GPU; a 3g.40gb, a 2g.20gb and 1g.10gb
// devices are placed legally beside them; then a third 1g.10gb+me waits
// (both GPUs' OFA engines taken).
func TestIndep3H100MediaMIG(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("h100m-2", indep3H100M, 2, func(i int) int { return i }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x1a+0x80*i) })
	seq := indep3Seq{{"me1", "1g.10gb+me"}, {"me2", "1g.10gb+me"}, {"g3", "3g.40gb"}, {"g2", "2g.20gb"}}
	for i := range 5 {
		seq = append(seq, struct{ claim, profile string }{fmt.Sprintf("s%d", i), "1g.10gb"})
	}
	seq = append(seq, struct{ claim, profile string }{"me3", "1g.10gb+me"})
	got, io := indep3MIG(t, f, indep3H100Profiles, seq, node("h100m-2", -1, nil))
	if len(got["me1"]) != 1 || len(got["me2"]) != 1 || indep3GPUOf(got["me1"][0]) == indep3GPUOf(got["me2"][0]) {
		t.Errorf("me1 %v, me2 %v: want one per GPU", names(got["me1"]), names(got["me2"]))
	}
	if len(got["me3"]) != 0 || io.pending["me3"] == "" {
		t.Errorf("me3: %v with both GPUs' OFA taken; reason %q", names(got["me3"]), io.pending["me3"])
	}
	// 16 slices: 2 (+me) + 4 (3g) + 2 (2g) = 8 taken; five 1g.10gb fit
	// in the 8 left (slot 7 is no 1g start).
	for _, c := range []string{"g3", "g2", "s0", "s1", "s2", "s3", "s4"} {
		if len(got[c]) != 1 {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
		}
	}
}

// TestIndep3SliceTaints: device taints published in the slice itself
// (not DeviceTaintRules) on a B200 HGX: GPU 0 NoSchedule, GPU 1 NoExecute,
// GPU 2 an informational taint (effect None). An 8-GPU claim waits; a
// 6-GPU claim gets GPUs 2-7, never 0 or 1; a 1-GPU claim tolerating the
// NoSchedule taint gets GPU 0; a 1-GPU claim that tolerates nothing
// waits.
func TestIndep3SliceTaints(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-t", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	for _, s := range f.slices {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			switch d.Name {
			case "gpu-0":
				d.Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/ecc", Value: "sbe", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
			case "gpu-1":
				d.Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoExecute}}
			case "gpu-2":
				d.Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/thermal", Value: "warm", Effect: resourceapi.DeviceTaintEffectNone}}
			}
		}
	}
	f.put(claimFor("eight", DefaultDRADeviceClass, 8))
	f.put(claimFor("six", DefaultDRADeviceClass, 6))
	tol := claimFor("tol", DefaultDRADeviceClass, 1)
	tol.Spec.Devices.Requests[0].Exactly.Tolerations = []resourceapi.DeviceToleration{{Key: "gpu.nvidia.com/ecc", Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	f.put(tol)
	f.put(claimFor("plain", DefaultDRADeviceClass, 1))
	h, io := newDRAHost(t, f, node("b200-t", -1, nil))
	indep3Run(h, io, draPodOf("eight", "eight"), draPodOf("six", "six"), draPodOf("tol", "tol"), draPodOf("plain", "plain"))
	got := indepCheck(t, f, io, nil)
	if len(got["eight"]) != 0 {
		t.Errorf("eight got %v with two GPUs tainted", names(got["eight"]))
	}
	if len(got["six"]) != 6 || slices.Contains(names(got["six"]), "gpu-0") || slices.Contains(names(got["six"]), "gpu-1") {
		t.Errorf("six: %v; pending %q", names(got["six"]), io.pending["six"])
	}
	if n := names(got["tol"]); len(n) != 1 || n[0] != "gpu-0" {
		t.Errorf("tol: %v, want gpu-0 (its taint tolerated); pending %q", n, io.pending["tol"])
	}
	if len(got["plain"]) != 0 || io.pending["plain"] == "" {
		t.Errorf("plain: %v; reason %q", names(got["plain"]), io.pending["plain"])
	}
}

// TestIndep3PlacementHetero runs the heterogeneous cluster in placement
// mode: a Blackwell pod of 4 GPUs on the B200 on one NUMA node, a 2-GPU
// H100 NVL pod gets a bridged pair (one pcieRoot),
// an A30 1g.6gb+me and a second one on different GPUs, a third refused.
func TestIndep3PlacementHetero(t *testing.T) {
	f, nodes := indep3Hetero()
	f.put(indepClaim("bw", DefaultDRADeviceClass, 4, `device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'`))
	f.put(indepClaim("nvl", DefaultDRADeviceClass, 2, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 NVL'`))
	for _, c := range []string{"me1", "me2", "me3"} {
		f.put(indepMIG(c, "1g.6gb+me"))
	}
	hs, _ := newDRAHarness(t, f, nodes...)
	for _, x := range []struct{ pod, node string }{{"bw", "c-b200"}, {"nvl", "b-h100nvl"}, {"me1", "d-a30"}, {"me2", "d-a30"}, {"me3", ""}} {
		p := hs.add(placementDRAPod(x.pod, x.pod))
		n, st, _ := hs.schedule(p)
		if x.node == "" {
			if st == nil {
				t.Errorf("%s placed on %s with no A30 OFA engine free", x.pod, n)
			}
			continue
		}
		if n != x.node || st != nil {
			t.Fatalf("%s: node %q, status %v %v; want %s", x.pod, n, st.Code(), st.Reasons(), x.node)
		}
		hs.bind(p, n)
	}
	got := indepCheck(t, f, &fakeIO{}, indep3Checked(indep3A30))
	if v := indep3Attrs(got["bw"], indep3NUMA); len(v) != 4 || !one(v) {
		t.Errorf("bw: %v on NUMA nodes %v", names(got["bw"]), v)
	}
	if v := indep3Attrs(got["nvl"], indep3Root); len(v) != 2 || !one(v) {
		t.Errorf("nvl: %v on roots %v", names(got["nvl"]), v)
	}
	if len(got["me1"]) != 1 || len(got["me2"]) != 1 || indep3GPUOf(got["me1"][0]) == indep3GPUOf(got["me2"][0]) {
		t.Errorf("me1 %v, me2 %v: want one per GPU", names(got["me1"]), names(got["me2"]))
	}
}

// indep3KubeAllocated marks claim name allocated by kube's own allocator
// (another scheduler's pod, or a pod gpusched left to kube) to devs of
// node's pool and reserved for pod, as kube-scheduler's DynamicResources
// writes it.
func indep3KubeAllocated(f *fakeDRA, name, node string, pod *v1.Pod, devs ...string) {
	c := f.claims["default/"+name].DeepCopy()
	a := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	for _, d := range devs {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: c.Spec.Devices.Requests[0].Name, Driver: "gpu.nvidia.com", Pool: node, Device: d})
	}
	c.Status.Allocation = a
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	c.Finalizers = []string{resourceapi.Finalizer}
	f.put(c)
}

// TestIndep3ForeignDRAPod: a pod of another scheduler (default-scheduler)
// runs on a B200 HGX with two GPUs its claim got from kube's allocator.
// gpusched leaves that claim alone (never releases it) and never hands
// out its devices: an 8-GPU pod waits, a 6-GPU pod gets the six others.
func TestIndep3ForeignDRAPod(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-1", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	f.put(claimFor("kube2", DefaultDRADeviceClass, 2))
	other := draPodOf("other", "kube2")
	other.Spec.SchedulerName, other.Spec.NodeName = "default-scheduler", "b200-1"
	indep3KubeAllocated(f, "kube2", "b200-1", other, "gpu-3", "gpu-6")
	f.put(claimFor("eight", DefaultDRADeviceClass, 8))
	f.put(claimFor("six", DefaultDRADeviceClass, 6))
	h, io := newDRAHost(t, f, node("b200-1", -1, nil))
	io.pods = []*v1.Pod{other}
	indep3Run(h, io, draPodOf("eight", "eight"), draPodOf("six", "six"))
	got := indepCheck(t, f, io, nil)
	if n := names(got["kube2"]); len(n) != 2 {
		t.Fatalf("the other scheduler's claim was released: %v (writes %v)", n, f.writes)
	}
	if len(got["eight"]) != 0 {
		t.Errorf("eight got %v beside the other scheduler's gpu-3, gpu-6", names(got["eight"]))
	}
	if n := names(got["six"]); len(n) != 6 || slices.Contains(n, "gpu-3") || slices.Contains(n, "gpu-6") {
		t.Errorf("six: %v; pending %q", n, io.pending["six"])
	}
}

// TestIndep3PlacementConstraintKept: in placement mode (claim constraints
// are honoured in scheduler mode only, docs/dra.md) a pod whose GPU claim
// has a matchAttribute, or whose claim mixes the GPU class with a NIC's,
// waits, saying why: gpusched does not skip it, which would leave its
// GPUs to kube's allocator, outside gpusched's ledger (a later pod of
// gpusched's could then be given them). Other pods are placed.
func TestIndep3PlacementConstraintKept(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-1", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	f.put(indep3Constrained("numa2", indep3NUMA, 2))
	mixed := claimFor("mixed", DefaultDRADeviceClass, 1, 1)
	mixed.Spec.Devices.Requests[1].Exactly.DeviceClassName = "nic.example.com"
	f.put(mixed)
	f.put(claimFor("six", DefaultDRADeviceClass, 6))
	hs, _ := newDRAHarness(t, f, node("b200-1", -1, nil))
	for _, c := range []string{"numa2", "mixed"} {
		p := hs.add(placementDRAPod(c, c))
		if n, st, _ := hs.schedule(p); st == nil || st.IsSkip() || st.IsSuccess() || !strings.Contains(st.Message(), "ResourceClaim "+c) {
			t.Errorf("%s: node %q, status %v; want it waiting, saying why", c, n, st)
		}
	}
	p := hs.add(placementDRAPod("six", "six"))
	n, st, _ := hs.schedule(p)
	if n != "b200-1" || st != nil {
		t.Fatalf("six: node %q, status %v", n, st)
	}
	hs.bind(p, n)
	if got := indepCheck(t, f, &fakeIO{}, nil); len(got["six"]) != 6 || len(got["numa2"])+len(got["mixed"]) != 0 {
		t.Errorf("allocations %v", got)
	}
}

// TestIndep3SameModelMIGAndWhole: a cluster of H100 80GB HBM3 nodes, one
// (first by name) of eight whole GPUs, the other of two with dynamic MIG
// publishing the media-extension profile 1g.10gb+me, which the DGX H100
// preset's geometry lacks. The MIG node's published geometry counts: a
// 1g.10gb+me and a 3g.40gb are placed on it, legally; an 8-GPU pod takes
// the whole-GPU node.
func TestIndep3SameModelMIGAndWhole(t *testing.T) {
	f := newFakeDRA()
	f.slices = append(indep3Node("a-h100", indep3H100, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x10*(i+1)) }),
		indep3Node("b-h100mig", indep3H100M, 2, func(i int) int { return i }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x1a+0x80*i) })...)
	f.put(indepMIG("me", "1g.10gb+me"))
	f.put(indepMIG("m3", "3g.40gb"))
	f.put(claimFor("w8", DefaultDRADeviceClass, 8))
	h, io := newDRAHost(t, f, node("a-h100", -1, nil), node("b-h100mig", -1, nil))
	indep3Run(h, io, draPodOf("me", "me"), draPodOf("m3", "m3"), draPodOf("w8", "w8"))
	got := indepCheck(t, f, io, indep3Checked(indep3H100Profiles))
	for _, c := range []string{"me", "m3"} {
		if len(got[c]) != 1 || f.claims["default/"+c].Status.Allocation.Devices.Results[0].Pool != "b-h100mig" {
			t.Errorf("claim %s: %v; pending %q", c, names(got[c]), io.pending[c])
		}
	}
	if len(got["w8"]) != 8 || f.claims["default/w8"].Status.Allocation.Devices.Results[0].Pool != "a-h100" {
		t.Errorf("w8: %v; pending %q", names(got["w8"]), io.pending["w8"])
	}
}

// TestIndep3GPUWithdrawn: NVIDIA's driver stops publishing a GPU that
// turns unhealthy (a new generation of the pool without it). On a B200
// HGX running a 4-GPU pod and a 2-GPU pod, the slices lose one of the
// 4-GPU pod's GPUs. While the new generation is published in part (one
// slice of the two it counts) nothing is recovered; once whole, the
// 4-GPU pod's job is recovered; the 2-GPU pod keeps its devices and runs
// on (the node was drained whole before: the GPU count changed); a new
// 2-GPU pod gets two of the published GPUs free, never the 2-GPU pod's
// nor the withdrawn one.
func TestIndep3GPUWithdrawn(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("b200-w", indep3B200, 8, func(i int) int { return i / 4 }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x18+0x20*i) })
	f.put(claimFor("four", DefaultDRADeviceClass, 4))
	f.put(claimFor("two", DefaultDRADeviceClass, 2))
	f.put(claimFor("next", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node("b200-w", -1, nil))
	indep3Run(h, io, draPodOf("four", "four"), draPodOf("two", "two"))
	got := indepCheck(t, f, io, nil)
	if len(got["four"]) != 4 || len(got["two"]) != 2 {
		t.Fatalf("allocations %v; pending %v", got, io.pending)
	}
	gone := got["four"][1].Name
	two := names(got["two"])
	writes := len(f.writes)
	// The next generation, without the GPU.
	var next []*resourceapi.ResourceSlice
	for _, s := range f.slices {
		x := s.DeepCopy()
		x.Spec.Pool.Generation, x.ResourceVersion = 2, "2"
		x.Spec.Devices = slices.DeleteFunc(x.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == gone })
		next = append(next, x)
	}
	f.slices = next
	for _, x := range next {
		x.Spec.Pool.ResourceSliceCount++ // (one more to come)
	}
	h.cycle(context.Background())
	if slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, ReasonRecovery) }) {
		t.Errorf("recovery while the pool is published in part: %v", io.events)
	}
	for _, x := range next {
		x.Spec.Pool.ResourceSliceCount--
		x.ResourceVersion = "3"
	}
	indep3Run(h, io, draPodOf("next", "next"))
	if !slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, "four "+ReasonRecovery) }) {
		t.Errorf("no recovery of four, whose %s was withdrawn: events %v", gone, io.events)
	}
	if slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, "two "+ReasonRecovery) }) {
		t.Errorf("two recovered, whose GPUs are published: events %v", io.events)
	}
	if slices.ContainsFunc(f.writes[writes:], func(w string) bool { return strings.HasSuffix(w, " two") }) {
		t.Errorf("two's claim rewritten: %v", f.writes[writes:])
	}
	c := f.claims["default/next"]
	if c.Status.Allocation == nil {
		t.Fatalf("next not allocated; pending %q; events %v; four %v two %v", io.pending["next"], io.events, names(got["four"]), two)
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Device == gone || slices.Contains(two, r.Device) {
			t.Errorf("next got %s (withdrawn %s, two's %v)", r.Device, gone, two)
		}
	}
}

// TestIndep3AmpereMIGOnly: NVIDIA's driver with dynamic MIG does not
// publish an Ampere GPU whose MIG mode is on (the mode cannot change
// without a GPU reset): its slices hold the GPU's counter set and its MIG
// devices only, each naming its parent's UUID. An A30 node so published
// is a node of two GPUs for MIG devices: a 2g.12gb and two 1g.6gb+me are
// placed legally, one +me per GPU; a whole-GPU claim gets none of them.
func TestIndep3AmpereMIGOnly(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("a30-m", indep3A30MIG, 2, func(int) int { return 0 }, func(int) string { return "pci0000:3a" })
	for _, s := range f.slices {
		s.Spec.Devices = slices.DeleteFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return !strings.Contains(d.Name, "-mig-") })
	}
	seq := indep3Seq{{"two", "2g.12gb"}, {"me1", "1g.6gb+me"}, {"me2", "1g.6gb+me"}}
	f.put(claimFor("whole", DefaultDRADeviceClass, 1))
	got, io := indep3MIG(t, f, indep3A30, seq, node("a30-m", -1, nil))
	for _, s := range seq {
		if len(got[s.claim]) != 1 {
			t.Errorf("claim %s (%s): %v; pending %q", s.claim, s.profile, names(got[s.claim]), io.pending[s.claim])
		}
	}
	if len(got["me1"]) == 1 && len(got["me2"]) == 1 && indep3GPUOf(got["me1"][0]) == indep3GPUOf(got["me2"][0]) {
		t.Errorf("me1 %v, me2 %v on one GPU", names(got["me1"]), names(got["me2"]))
	}
	if len(got["whole"]) != 0 {
		t.Errorf("whole got %v on a node publishing no whole GPU", names(got["whole"]))
	}
}
