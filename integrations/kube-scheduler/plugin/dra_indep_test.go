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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusched/gpusched/topology"
)

// An independent set of slices and claims, built from NVIDIA's
// k8s-dra-driver-gpu as it publishes them today (cmd/gpu-kubelet-plugin:
// deviceinfo.go, partitions.go, mig.go), not from the fixtures the other
// DRA tests use: GPU devices gpu-<minor> with type, uuid, productName,
// brand, architecture, cudaComputeCapability and driverVersion (versions),
// resource.kubernetes.io/pciBusID and pcieRoot, and a memory capacity, but
// no index or minor attribute (the driver dropped both); dynamic MIG
// devices gpu-<minor>-mig-<profile>-<profileID>-<start> consuming the
// GPU's counter set gpu-<minor>-counter-set (capacity counters and
// memory-slice-K); the clique of a GB200 tray from GPU feature discovery's
// node label. Every allocation is checked against the slices by
// indepCheck.

// indepProfile is a MIG profile as NVIDIA's MIG user guide lists it for
// the 80GB A100 and H100: its GI profile ID, memory, SMs, size in memory
// slices and legal starts.
type indepProfile struct {
	name   string
	id     int
	memGiB int64
	sms    int64
	size   int
	starts []int
}

// indepH100Profiles are the MIG profiles of an H100 80GB (and, with other
// SM counts, an A100 80GB): 8 memory slices.
var indepH100Profiles = []indepProfile{
	{"1g.10gb", 19, 10, 16, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"1g.20gb", 15, 20, 26, 2, []int{0, 2, 4, 6}},
	{"2g.20gb", 14, 20, 32, 2, []int{0, 2, 4}},
	{"3g.40gb", 9, 40, 60, 4, []int{0, 4}},
	{"4g.40gb", 5, 40, 64, 4, []int{0}},
	{"7g.80gb", 0, 80, 132, 8, []int{0}},
}

// indepGPU describes one GPU of an indepNode.
type indepGPU struct {
	minor int
	root  string // resource.kubernetes.io/pcieRoot
	// mig: publish the GPU with dynamic MIG (counter set, every placement
	// of profiles).
	mig bool
}

// indepNode builds the ResourceSlice NVIDIA's GPU driver publishes for a
// node whose GPUs are of product (architecture arch, compute capability
// cc, memGiB of memory).
func indepNode(node, product, arch, cc string, memGiB int64, profiles []indepProfile, gpus ...indepGPU) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com-x7k2p", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "gpu.nvidia.com", NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	common := func(uuid string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"productName": indepStr(product), "brand": indepStr("Nvidia"), "architecture": indepStr(arch),
			"cudaComputeCapability": indepVer(cc), "driverVersion": indepVer("580.95.5"), "cudaDriverVersion": indepVer("13.0.0"),
			"uuid": indepStr(uuid),
		}
	}
	for _, g := range gpus {
		uuid := fmt.Sprintf("GPU-%08x-1c2d-4e5f-8a9b-%012d", 0xa100+g.minor, len(node)*100+g.minor)
		attrs := common(uuid)
		attrs["type"] = indepStr("gpu")
		attrs["resource.kubernetes.io/pciBusID"] = indepStr(fmt.Sprintf("0000:%02x:00.0", 0x18+0x10*g.minor))
		if g.root != "" {
			attrs["resource.kubernetes.io/pcieRoot"] = indepStr(g.root)
		}
		dev := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g.minor), Attributes: attrs,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": indepQty(memGiB << 30)}}
		if !g.mig {
			s.Spec.Devices = append(s.Spec.Devices, dev)
			continue
		}
		set := fmt.Sprintf("gpu-%d-counter-set", g.minor)
		all := map[string]resourceapi.Counter{"multiprocessors": {Value: indepQty(132).Value}, "memory": {Value: indepQty(memGiB << 30).Value}}
		for k := range 8 {
			all[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: indepQty(1).Value}
		}
		s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: set, Counters: all})
		dev.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: all}}
		s.Spec.Devices = append(s.Spec.Devices, dev)
		for _, p := range profiles {
			for _, st := range p.starts {
				a := common(fmt.Sprintf("MIG-%s-%s-%d", uuid[4:12], p.name, st))
				a["type"] = indepStr("mig")
				a["parentUUID"] = indepStr(uuid)
				a["profile"] = indepStr(p.name)
				delete(a, "uuid")
				use := map[string]resourceapi.Counter{"multiprocessors": {Value: indepQty(p.sms).Value}, "memory": {Value: indepQty(p.memGiB << 30).Value}}
				for k := st; k < st+p.size; k++ {
					use[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: indepQty(1).Value}
				}
				s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
					Name:       fmt.Sprintf("gpu-%d-mig-%s-%d-%d", g.minor, strings.ReplaceAll(p.name, ".", ""), p.id, st),
					Attributes: a,
					Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
						"multiprocessors": indepQty(p.sms), "memory": indepQty(p.memGiB << 30)},
					ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: use}},
				})
			}
		}
	}
	return s
}

// indepStr, indepVer and indepQty are a string attribute, a version
// attribute and a capacity (bytes, binary).
func indepStr(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{StringValue: &v}
}
func indepVer(v string) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{VersionValue: &v}
}
func indepQty(n int64) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(n, resource.BinarySI)}
}

// indepClaim is a claim of count devices of class whose one request has
// the CEL selectors exprs.
func indepClaim(name, class string, count int64, exprs ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("claim-indep-" + name)}}
	e := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	for _, x := range exprs {
		e.Selectors = append(e.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: x}})
	}
	c.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "gpus", Exactly: e}}
	return c
}

// indepMIG is a claim for one MIG device of profile.
func indepMIG(name, profile string) *resourceapi.ResourceClaim {
	return indepClaim(name, DefaultDRAMIGDeviceClass, 1, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", profile))
}

// indepCheck checks every allocated claim of f against its slices: every
// device exists in the pool (= node) the claim's node selector names and
// its driver publishes, no device is in two claims, every MIG device sits
// at a legal placement of its profile (profiles), no counter of a counter
// set is consumed past its value, a claim's pod (where bound in io) is on
// the claim's node. It returns claim → devices.
func indepCheck(t *testing.T, f *fakeDRA, io *fakeIO, profiles []indepProfile) map[string][]*resourceapi.Device {
	t.Helper()
	devs := map[string]*resourceapi.Device{}
	limit := map[string]resource.Quantity{}
	for _, s := range f.slices {
		for i := range s.Spec.Devices {
			devs[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+s.Spec.Devices[i].Name] = &s.Spec.Devices[i]
		}
		for _, cs := range s.Spec.SharedCounters {
			for k, v := range cs.Counters {
				limit[s.Spec.Pool.Name+"/"+cs.Name+"/"+k] = v.Value
			}
		}
	}
	owner := map[string]string{}
	used := map[string]resource.Quantity{}
	out := map[string][]*resourceapi.Device{}
	for _, key := range sortedKeys(f.claims) {
		c := f.claims[key]
		if c.Status.Allocation == nil {
			continue
		}
		node := ""
		if ns := c.Status.Allocation.NodeSelector; ns != nil && len(ns.NodeSelectorTerms) == 1 && len(ns.NodeSelectorTerms[0].MatchFields) == 1 {
			node = ns.NodeSelectorTerms[0].MatchFields[0].Values[0]
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			k := r.Driver + "/" + r.Pool + "/" + r.Device
			d := devs[k]
			if d == nil {
				t.Errorf("claim %s names %s, no device of the slices", c.Name, k)
				continue
			}
			if r.Pool != node {
				t.Errorf("claim %s: device %s of pool %s, node selector %q", c.Name, r.Device, r.Pool, node)
			}
			if o, dup := owner[k]; dup {
				t.Errorf("device %s in claims %s and %s", k, o, c.Name)
			}
			owner[k] = c.Name
			out[c.Name] = append(out[c.Name], d)
			for _, cc := range d.ConsumesCounters {
				for name, v := range cc.Counters {
					u := used[r.Pool+"/"+cc.CounterSet+"/"+name]
					u.Add(v.Value)
					used[r.Pool+"/"+cc.CounterSet+"/"+name] = u
				}
			}
			if typ := d.Attributes["type"].StringValue; typ != nil && *typ == "mig" {
				indepPlacement(t, c.Name, d, profiles)
			}
		}
		for _, ref := range c.Status.ReservedFor {
			for _, p := range io.pods {
				if p.UID == ref.UID && p.Spec.NodeName != "" && p.Spec.NodeName != node {
					t.Errorf("claim %s allocated on %s, its pod %s bound to %s", c.Name, node, p.Name, p.Spec.NodeName)
				}
			}
		}
	}
	for k, u := range used {
		if l, ok := limit[k]; !ok || u.Cmp(l) > 0 {
			t.Errorf("counter %s: %s consumed of %s (published: %v)", k, u.String(), l.String(), ok)
		}
	}
	return out
}

// indepPlacement checks that MIG device d consumes the memory slices of a
// legal placement of its profile.
func indepPlacement(t *testing.T, claim string, d *resourceapi.Device, profiles []indepProfile) {
	t.Helper()
	prof := *d.Attributes["profile"].StringValue
	k := slices.IndexFunc(profiles, func(p indepProfile) bool { return p.name == prof })
	var got []int
	for _, cc := range d.ConsumesCounters {
		for name := range cc.Counters {
			var m int
			if _, err := fmt.Sscanf(name, "memory-slice-%d", &m); err == nil {
				got = append(got, m)
			}
		}
	}
	for name := range d.Capacity { // (static MIG: memorySlice<K> capacities)
		var m int
		if _, err := fmt.Sscanf(string(name), "memorySlice%d", &m); err == nil {
			got = append(got, m)
		}
	}
	slices.Sort(got)
	if k < 0 || len(got) != profiles[k].size || !slices.Contains(profiles[k].starts, got[0]) || got[len(got)-1]-got[0] != len(got)-1 {
		t.Errorf("claim %s: MIG device %s (%s) on memory slices %v, not a placement of its profile", claim, d.Name, prof, got)
	}
}

// indepRoots returns the pcieRoot of each device.
func indepRoots(ds []*resourceapi.Device) []string {
	var out []string
	for _, d := range ds {
		out = append(out, *d.Attributes["resource.kubernetes.io/pcieRoot"].StringValue)
	}
	return out
}

// one reports whether every string of ss is the same.
func one(ss []string) bool {
	return len(ss) > 0 && !slices.ContainsFunc(ss, func(s string) bool { return s != ss[0] })
}

// TestIndepL40SPCIe: four L40S on two PCIe roots (no NVLink, no index
// attribute), with claims selecting on productName, architecture, the
// compute capability (a version) and the memory capacity. A 1-GPU pod
// first, then a 2-GPU pod gets the pair of the other root; a selector on
// another architecture waits, saying why; a NIC claim beside a GPU claim
// stays kube's.
func TestIndepL40SPCIe(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{indepNode("l40s-1", "NVIDIA L40S", "Ada Lovelace", "8.9.0", 48, nil,
		indepGPU{minor: 0, root: "pci0000:15"}, indepGPU{minor: 1, root: "pci0000:15"},
		indepGPU{minor: 2, root: "pci0000:b7"}, indepGPU{minor: 3, root: "pci0000:b7"})}
	f.put(indepClaim("one", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'`))
	f.put(indepClaim("pair", DefaultDRADeviceClass, 2,
		`device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace'`,
		`device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))`,
		`device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0`))
	f.put(indepClaim("hopper", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].architecture == 'Hopper'`))
	f.put(claimFor("nic", "nic.example.com", 1))
	h, io := newDRAHost(t, f, node("l40s-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("one", "one")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("pair", "pair", "nic"), draPodOf("hopper", "hopper"))
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	got := indepCheck(t, f, io, nil)
	if len(got["one"]) != 1 || len(got["pair"]) != 2 {
		t.Fatalf("allocations %v; pending %v", got, io.pending)
	}
	if r := indepRoots(got["pair"]); !one(r) || r[0] == indepRoots(got["one"])[0] {
		t.Errorf("pair on roots %v, one on %v: want the pair alone on the other root", r, indepRoots(got["one"]))
	}
	if f.claims["default/hopper"].Status.Allocation != nil || !strings.Contains(io.pending["hopper"], "selector") {
		t.Errorf("hopper: allocated %v, reason %q", f.claims["default/hopper"].Status.Allocation != nil, io.pending["hopper"])
	}
	if f.claims["default/nic"].Status.Allocation != nil {
		t.Errorf("gpusched wrote the NIC claim")
	}
}

// TestIndepH100PCIeRoots: eight H100 PCIe (no NVSwitch: no machine
// preset) on two PCIe roots of four. A 4-GPU claim takes one root whole;
// two 2-GPU claims then share the other root, each pair on one root; a
// fourth claim of 1 GPU waits for capacity.
func TestIndepH100PCIeRoots(t *testing.T) {
	f := newFakeDRA()
	var gs []indepGPU
	for i := range 8 {
		gs = append(gs, indepGPU{minor: i, root: []string{"pci0000:3a", "pci0000:d7"}[i/4]})
	}
	f.slices = []*resourceapi.ResourceSlice{indepNode("h100p-1", "NVIDIA H100 PCIe", "Hopper", "9.0.0", 80, nil, gs...)}
	f.put(indepClaim("a", DefaultDRADeviceClass, 2))
	f.put(indepClaim("b", DefaultDRADeviceClass, 4, `device.attributes['gpu.nvidia.com'].productName.contains('PCIe')`))
	f.put(indepClaim("c", DefaultDRADeviceClass, 2))
	f.put(indepClaim("d", DefaultDRADeviceClass, 1))
	h, io := newDRAHost(t, f, node("h100p-1", -1, nil))
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c", "d"} {
		io.pods = append(io.pods, draPodOf(p, p))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	got := indepCheck(t, f, io, nil)
	for _, c := range []string{"a", "b", "c"} {
		if r := indepRoots(got[c]); !one(r) {
			t.Errorf("claim %s on roots %v, want one", c, r)
		}
	}
	if len(got["b"]) != 4 || slices.Contains(indepRoots(got["a"]), indepRoots(got["b"])[0]) {
		t.Errorf("b %d GPUs on %v beside a on %v", len(got["b"]), indepRoots(got["b"]), indepRoots(got["a"]))
	}
	if len(got["d"]) != 0 {
		t.Errorf("d allocated on a full node")
	}
	if why := io.pending["d"]; why == "" {
		t.Errorf("d waits without a reason")
	}
}

// TestIndepH100DynamicMIG: two H100 80GB published with dynamic MIG and
// every placement of 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb and
// 7g.80gb. MIG claims of each profile go one at a time; every placement
// is legal, no memory slice or counter is consumed twice, no device is in
// two claims; a 7g.80gb fills a GPU of its own; claims that no free
// placement fits wait.
func TestIndepH100DynamicMIG(t *testing.T) {
	f := newFakeDRA()
	f.slices = indepSplit(indepNode("h100m-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, indepH100Profiles,
		indepGPU{minor: 0, mig: true, root: "pci0000:1a"}, indepGPU{minor: 1, mig: true, root: "pci0000:1a"}))
	order := []struct{ claim, profile string }{
		{"m3g", "3g.40gb"}, {"m4g", "4g.40gb"}, {"m2g", "2g.20gb"}, {"m1g20", "1g.20gb"},
		{"m1a", "1g.10gb"}, {"m1b", "1g.10gb"}, {"m1c", "1g.10gb"}, {"m7g", "7g.80gb"},
	}
	for _, o := range order {
		f.put(indepMIG(o.claim, o.profile))
	}
	h, io := newDRAHost(t, f, node("h100m-1", -1, nil))
	ctx := context.Background()
	for _, o := range order {
		io.pods = append(io.pods, draPodOf(o.claim, o.claim))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	h.cycle(ctx)
	got := indepCheck(t, f, io, indepH100Profiles)
	// 3g+4g fill one GPU; 2g + 1g.20gb + three 1g.10gb (8 slices) fill
	// the other; the 7g.80gb has no GPU.
	for _, o := range order[:7] {
		if len(got[o.claim]) != 1 || *got[o.claim][0].Attributes["profile"].StringValue != o.profile {
			t.Errorf("claim %s (%s): %d devices; pending %q", o.claim, o.profile, len(got[o.claim]), io.pending[o.claim])
		}
	}
	if len(got["m7g"]) != 0 || io.pending["m7g"] == "" {
		t.Errorf("m7g: %d devices, reason %q; want it waiting", len(got["m7g"]), io.pending["m7g"])
	}
	for _, o := range order {
		t.Logf("%s: %v", o.claim, names(got[o.claim]))
	}
}

// names are the names of ds.
func names(ds []*resourceapi.Device) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

// indepStaticMIG appends to s the MIG devices NVIDIA's driver publishes
// for a GPU in MIG mode without dynamic MIG (the default): the GPU itself
// is not published, only the MIG devices mig-parted created on it, each
// with its parentUUID and profile, its capacities and one capacity
// memorySlice<K> per memory slice of its placement (no counters).
func indepStaticMIG(s *resourceapi.ResourceSlice, minor int, profiles []indepProfile, layout ...string) {
	parent := fmt.Sprintf("GPU-%08x-1c2d-4e5f-8a9b-%012d", 0xa100+minor, len(*s.Spec.NodeName)*100+minor)
	for _, l := range layout { // "3g.40gb@4"
		var name string
		var st int
		at := strings.IndexByte(l, '@')
		name = l[:at]
		fmt.Sscanf(l[at+1:], "%d", &st)
		p := profiles[slices.IndexFunc(profiles, func(p indepProfile) bool { return p.name == name })]
		d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d-mig-%s-%d-%d", minor, strings.ReplaceAll(p.name, ".", ""), p.id, st),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": indepStr("mig"), "parentUUID": indepStr(parent), "profile": indepStr(p.name),
				"productName": indepStr("NVIDIA A100-SXM4-80GB"), "brand": indepStr("Nvidia"), "architecture": indepStr("Ampere"),
				"cudaComputeCapability": indepVer("8.0.0"), "driverVersion": indepVer("580.95.5"), "cudaDriverVersion": indepVer("13.0.0"),
				"uuid": indepStr(fmt.Sprintf("MIG-%d-%s-%d", minor, p.name, st))},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"multiprocessors": indepQty(p.sms), "memory": indepQty(p.memGiB << 30)}}
		for k := st; k < st+p.size; k++ {
			d.Capacity[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", k))] = indepQty(1)
		}
		s.Spec.Devices = append(s.Spec.Devices, d)
	}
}

// indepA100Profiles are the A100 80GB's MIG profiles (SM counts of the
// A100).
var indepA100Profiles = func() []indepProfile {
	ps := slices.Clone(indepH100Profiles)
	for i, sms := range []int64{14, 14, 28, 42, 56, 98} {
		ps[i].sms = sms
	}
	return ps
}()

// TestIndepA100StaticMIGMixed: a DGX A100 80GB whose GPUs 0-4 are whole
// and GPUs 5-7 in MIG mode with mig-parted layouts (static MIG, NVIDIA's
// default): GPU 5 3g.40gb+2g.20gb+1g.10gb, GPU 6 seven 1g.10gb, GPU 7
// four 1g.20gb. Whole-GPU claims get whole GPUs only (never a GPU in MIG
// mode, nor one twice: the 2-GPU pod after the 4-GPU one waits, one whole
// GPU being left). MIG claims get a free device of their profile, packed:
// the first 1g.10gb goes beside the 3g and 2g on GPU 5 (its last free
// device), the second to GPU 6; a profile no GPU publishes waits, saying
// so. The static GPUs take no job in the library (Draining).
func TestIndepA100StaticMIGMixed(t *testing.T) {
	var gs []indepGPU
	for i := range 5 {
		gs = append(gs, indepGPU{minor: i, root: fmt.Sprintf("pci0000:%02x", []int{0x0, 0x0, 0x40, 0x40, 0x80}[i])})
	}
	s := indepNode("a100-1", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 80, nil, gs...)
	indepStaticMIG(s, 5, indepA100Profiles, "1g.10gb@0", "2g.20gb@2", "3g.40gb@4")
	indepStaticMIG(s, 6, indepA100Profiles, "1g.10gb@0", "1g.10gb@1", "1g.10gb@2", "1g.10gb@3", "1g.10gb@4", "1g.10gb@5", "1g.10gb@6")
	indepStaticMIG(s, 7, indepA100Profiles, "1g.20gb@0", "1g.20gb@2", "1g.20gb@4", "1g.20gb@6")
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{s}
	f.put(indepClaim("whole4", DefaultDRADeviceClass, 4))
	f.put(indepMIG("m3g", "3g.40gb"))
	f.put(indepMIG("m2g", "2g.20gb"))
	f.put(indepMIG("m1g20", "1g.20gb"))
	f.put(indepMIG("m1a", "1g.10gb"))
	f.put(indepMIG("m1b", "1g.10gb"))
	f.put(indepMIG("m4g", "4g.40gb"))
	f.put(indepClaim("whole2", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node("a100-1", -1, nil))
	ctx := context.Background()
	for _, p := range []string{"whole4", "m3g", "m2g", "m1g20", "m1a", "m1b", "m4g", "whole2"} {
		io.pods = append(io.pods, draPodOf(p, p))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	h.cycle(ctx)
	got := indepCheck(t, f, io, indepA100Profiles)
	for _, c := range sortedKeys(got) {
		t.Logf("%s: %v", c, names(got[c]))
	}
	t.Logf("pending %v", io.pending)
	for _, d := range got["whole4"] {
		if !strings.HasPrefix(d.Name, "gpu-") || strings.Contains(d.Name, "mig") {
			t.Errorf("whole4 got %s", d.Name)
		}
	}
	if len(got["whole4"]) != 4 || len(got["whole2"]) != 0 || !strings.Contains(io.pending["whole2"], "1 free GPU") {
		t.Errorf("whole4 got %v, whole2 got %v (%q): want 4 and none of the 5 whole GPUs for 6", names(got["whole4"]), names(got["whole2"]), io.pending["whole2"])
	}
	want := map[string]string{"m3g": "gpu-5-mig-3g40gb-9-4", "m2g": "gpu-5-mig-2g20gb-14-2", "m1g20": "gpu-7-mig-1g20gb-15-0",
		"m1a": "gpu-5-mig-1g10gb-19-0", "m1b": "gpu-6-mig-1g10gb-19-0"}
	for _, c := range sortedKeys(want) {
		if len(got[c]) != 1 || got[c][0].Name != want[c] {
			t.Errorf("MIG claim %s: %v, want %s; pending %q", c, names(got[c]), want[c], io.pending[c])
		}
	}
	if len(got["m4g"]) != 0 || !strings.Contains(io.pending["m4g"], "no MIG device of the slices matches") {
		t.Errorf("m4g (no GPU publishes 4g.40gb): %v, reason %q", names(got["m4g"]), io.pending["m4g"])
	}
	// The static GPUs are GPUs 5-7 of the host, which take no job.
	c := h.topo.Cluster
	hid, _ := c.HostByName("a100-1")
	first, count := c.HostGPUs(hid)
	for i := range count {
		wantHealth := topology.Healthy
		if i >= 5 {
			wantHealth = topology.Draining
		}
		if st := h.s.Ledger().GPU(first + topology.GPUID(i)); st.Health != wantHealth {
			t.Errorf("GPU %d: %v, want %v", i, st.Health, wantHealth)
		}
	}
}

// indepTray is one GB200 compute tray as NVIDIA's drivers publish it: four
// GPUs (gpu.nvidia.com, no clique attribute: the clique is GPU feature
// discovery's node label) and the compute-domain.nvidia.com slice with
// channel-0 and daemon-0.
func indepTray(f *fakeDRA, nodeName, clique string) *v1.Node {
	var gs []indepGPU
	for i := range 4 {
		gs = append(gs, indepGPU{minor: i, root: fmt.Sprintf("pci%04x:00", 8*(i/2))})
	}
	f.slices = append(f.slices, indepNode(nodeName, "NVIDIA GB200", "Blackwell", "10.0.0", 186, nil, gs...))
	cd := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-compute-domain.nvidia.com-q8w2z", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: "compute-domain.nvidia.com", NodeName: &nodeName,
			Pool: resourceapi.ResourcePool{Name: nodeName, Generation: 1, ResourceSliceCount: 1}}}
	for _, typ := range []string{"channel", "daemon"} {
		id := int64(0)
		cd.Spec.Devices = append(cd.Spec.Devices, resourceapi.Device{Name: typ + "-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": indepStr(typ), "id": {IntValue: &id}}})
	}
	f.slices = append(f.slices, cd)
	return node(nodeName, -1, map[string]string{"nvidia.com/gpu.clique": clique})
}

// indepCDGang adds a gang of n pods of 4 GPUs each, each with the channel
// claim kube-controller-manager makes from the ComputeDomain's
// ResourceClaimTemplate (request "channel" of the default channel class,
// defaulted to one device, with the ComputeDomainChannelConfig).
func indepCDGang(f *fakeDRA, io *fakeIO, gang string, n int) {
	for i := range n {
		m := fmt.Sprintf("%s-%d", gang, i)
		f.put(indepClaim(m+"-gpu", DefaultDRADeviceClass, 4, `device.attributes['gpu.nvidia.com'].architecture == 'Blackwell'`))
		ch := indepClaim(m+"-ch", "compute-domain-default-channel.nvidia.com", 1)
		ch.Spec.Devices.Requests[0].Name = "channel"
		ch.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"channel"},
			DeviceConfiguration: resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: "compute-domain.nvidia.com",
				Parameters: runtime.RawExtension{Raw: []byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` +
					gang + `-7d1e","allocationMode":"Single"}`)}}}}}
		f.put(ch)
		p := draPodOf(m, m+"-gpu", m+"-ch")
		p.Labels = map[string]string{DefaultGangLabel: gang, DefaultGangSizeKey: fmt.Sprint(n)}
		io.pods = append(io.pods, p)
	}
}

// TestIndepGB200NineTrayCliques: two NVL72 racks cabled as three NVLink
// cliques of 9 trays (rack A split in two, rack B one clique of 9) and
// GFD clique labels, the channel class as NVIDIA's chart defines it (id
// 0). A 32-GPU ComputeDomain gang (8 trays) and a 16-GPU one (4 trays)
// each go whole into one clique, with every member's channel claim naming
// channel-0 of its own node; a 40-GPU gang (10 trays) fits no clique and
// waits, with nothing written for it.
func TestIndepGB200NineTrayCliques(t *testing.T) {
	f := newFakeDRA()
	f.putClass(DefaultDRAChannelClass, `device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0`)
	var nodes []*v1.Node
	cliqueOf := map[string]string{}
	for _, r := range []struct {
		rack   string
		trays  int
		clique func(int) string
	}{
		{"ra", 18, func(i int) string { return fmt.Sprintf("0b7c5d1e-aaaa-4bbb-8ccc-000000000001.%d", 1+i/9) }},
		{"rb", 9, func(int) string { return "0b7c5d1e-aaaa-4bbb-8ccc-000000000002.1" }},
	} {
		for i := range r.trays {
			name := fmt.Sprintf("%s-tray%02d", r.rack, i)
			cliqueOf[name] = r.clique(i)
			nodes = append(nodes, indepTray(f, name, r.clique(i)))
		}
	}
	h, io := newDRAHost(t, f, nodes...)
	ctx := context.Background()
	indepCDGang(f, io, "g32", 8)
	h.cycle(ctx)
	bindDRA(h, io)
	indepCDGang(f, io, "g16", 4)
	h.cycle(ctx)
	bindDRA(h, io)
	indepCDGang(f, io, "g40", 10)
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	indepCheck(t, f, io, nil)
	for _, g := range []struct {
		gang string
		n    int
	}{{"g32", 8}, {"g16", 4}} {
		cl := map[string]bool{}
		for i := range g.n {
			m := fmt.Sprintf("%s-%d", g.gang, i)
			devs, node := claimed(t, f, m+"-gpu", types.UID("uid-"+m))
			if strings.Count(devs, "gpu-") != 4 {
				t.Errorf("%s: GPUs %s", m, devs)
			}
			cl[cliqueOf[node]] = true
			ch := f.claims["default/"+m+"-ch"]
			if ch.Status.Allocation == nil {
				t.Errorf("channel claim of %s not allocated", m)
				continue
			}
			r := ch.Status.Allocation.Devices.Results
			if len(r) != 1 || r[0].Pool != node || r[0].Device != "channel-0" || r[0].Driver != "compute-domain.nvidia.com" {
				t.Errorf("channel claim of %s on %s: %+v", m, node, r)
			}
		}
		if len(cl) != 1 {
			t.Errorf("gang %s spans cliques %v", g.gang, cl)
		}
	}
	for i := range 10 {
		m := fmt.Sprintf("g40-%d", i)
		if f.claims["default/"+m+"-gpu"].Status.Allocation != nil || f.claims["default/"+m+"-ch"].Status.Allocation != nil {
			t.Errorf("%s of the 40-GPU gang written", m)
		}
	}
	if why := io.pending["g40-0"]; why == "" {
		t.Errorf("g40-0 waits without a reason")
	} else {
		t.Logf("g40-0 waits: %s", why)
	}
}

// TestIndepTaintsAndNIC: an L40S node and an H100 of dynamic MIG. A pod
// with one L40S and a NIC claim (kube's) and a 3g.40gb pod run; then
// DeviceTaintRules taint the L40S and the MIG device they hold NoExecute
// (pool and device selectors): both jobs are recovered, and a new pod of
// three L40S gets the three untainted ones; a new 3g.40gb waits (the
// node has a tainted device of its profile: documented).
func TestIndepTaintsAndNIC(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{
		indepNode("l40s-1", "NVIDIA L40S", "Ada Lovelace", "8.9.0", 48, nil,
			indepGPU{minor: 0, root: "pci0000:15"}, indepGPU{minor: 1, root: "pci0000:15"},
			indepGPU{minor: 2, root: "pci0000:b7"}, indepGPU{minor: 3, root: "pci0000:b7"}),
	}
	f.slices = append(f.slices, indepSplit(indepNode("h100m-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, indepH100Profiles, indepGPU{minor: 0, mig: true, root: "pci0000:1a"}))...)
	f.put(indepClaim("one", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'`))
	f.put(claimFor("nic", "nic.example.com", 1))
	f.put(indepMIG("m3", "3g.40gb"))
	f.put(indepClaim("three", DefaultDRADeviceClass, 3, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'`))
	f.put(indepMIG("m3b", "3g.40gb"))
	h, io := newDRAHost(t, f, node("l40s-1", -1, nil), node("h100m-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("one", "one", "nic"), draPodOf("m3", "m3")}
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	got := indepCheck(t, f, io, indepH100Profiles)
	if len(got["one"]) != 1 || len(got["m3"]) != 1 {
		t.Fatalf("allocations %v; pending %v", got, io.pending)
	}
	if f.claims["default/nic"].Status.Allocation != nil {
		t.Errorf("gpusched wrote the NIC claim")
	}
	gpu, mig := got["one"][0].Name, got["m3"][0].Name
	driver, l40s, h100 := "gpu.nvidia.com", "l40s-1", "h100m-1"
	rule := func(name, pool, dev string) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
			Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &dev},
				Taint: resourceapi.DeviceTaint{Key: "gpu.nvidia.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	}
	f.rules = []*resourceapi.DeviceTaintRule{rule("xid-l40s", l40s, gpu), rule("xid-mig", h100, mig)}
	io.pods = append(io.pods, draPodOf("three", "three"), draPodOf("m3b", "m3b"))
	h.cycle(ctx)
	bindDRA(h, io)
	h.cycle(ctx)
	for _, p := range []string{"one", "m3"} {
		if !slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, p+" "+ReasonRecovery) }) {
			t.Errorf("no recovery for %s on a device tainted NoExecute: events %v", p, io.events)
		}
	}
	got = indepCheck(t, f, io, indepH100Profiles)
	if len(got["three"]) != 3 || slices.Contains(names(got["three"]), gpu) {
		t.Errorf("three got %v (tainted %s); pending %q", names(got["three"]), gpu, io.pending["three"])
	}
	// A documented limitation (docs/dra.md, device taints): a MIG request
	// is kept off a node one of whose devices of its profile carries a
	// taint it does not tolerate, though kube's allocator would give the
	// other placement.
	if len(got["m3b"]) != 0 || !strings.Contains(io.pending["m3b"], "have no taint it does not tolerate") {
		t.Errorf("m3b got %v (tainted %s); reason %q, want it waiting for the tainted profile", names(got["m3b"]), mig, io.pending["m3b"])
	}
}

// TestIndepPlacementMode runs independent slices in placement mode: on
// the four L40S of two PCIe roots, a 1-GPU pod then a 2-GPU pod with
// CEL selectors (the pair alone on the other root); on two H100 80GB of
// dynamic MIG, one MIG device per pod of each profile, every placement
// legal and no counter over-consumed; a 7g.80gb with no GPU free of MIG
// is refused.
func TestIndepPlacementMode(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{
		indepNode("l40s-1", "NVIDIA L40S", "Ada Lovelace", "8.9.0", 48, nil,
			indepGPU{minor: 0, root: "pci0000:15"}, indepGPU{minor: 1, root: "pci0000:15"},
			indepGPU{minor: 2, root: "pci0000:b7"}, indepGPU{minor: 3, root: "pci0000:b7"}),
	}
	f.slices = append(f.slices, indepSplit(indepNode("h100m-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, indepH100Profiles,
		indepGPU{minor: 0, mig: true, root: "pci0000:1a"}, indepGPU{minor: 1, mig: true, root: "pci0000:9c"}))...)
	f.put(indepClaim("one", DefaultDRADeviceClass, 1, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'`))
	f.put(indepClaim("pair", DefaultDRADeviceClass, 2, `device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace'`,
		`device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0`))
	order := []struct{ claim, profile string }{
		{"m3g", "3g.40gb"}, {"m4g", "4g.40gb"}, {"m2g", "2g.20gb"}, {"m1g20", "1g.20gb"},
		{"m1a", "1g.10gb"}, {"m1b", "1g.10gb"}, {"m1c", "1g.10gb"}, {"m7g", "7g.80gb"},
	}
	for _, o := range order {
		f.put(indepMIG(o.claim, o.profile))
	}
	hs, _ := newDRAHarness(t, f, node("l40s-1", -1, nil), node("h100m-1", -1, nil))
	for _, c := range []string{"one", "pair"} {
		p := hs.add(placementDRAPod(c, c))
		n, st, _ := hs.schedule(p)
		if n != "l40s-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", c, n, st)
		}
		hs.bind(p, n)
	}
	for _, o := range order {
		p := hs.add(placementDRAPod(o.claim, o.claim))
		n, st, _ := hs.schedule(p)
		if o.claim == "m7g" {
			if st == nil {
				t.Errorf("m7g placed on %s with no GPU free of MIG", n)
			}
			continue
		}
		if n != "h100m-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", o.claim, n, st)
		}
		hs.bind(p, n)
	}
	got := indepCheck(t, f, &fakeIO{}, indepH100Profiles)
	if r := indepRoots(got["pair"]); len(r) != 2 || !one(r) || r[0] == indepRoots(got["one"])[0] {
		t.Errorf("pair %v on roots %v, one %v", names(got["pair"]), r, names(got["one"]))
	}
	for _, o := range order[:7] {
		if len(got[o.claim]) != 1 || *got[o.claim][0].Attributes["profile"].StringValue != o.profile {
			t.Errorf("claim %s (%s): %v", o.claim, o.profile, names(got[o.claim]))
		}
	}
}

// indepSplit publishes s as the apiserver takes it (resource.k8s.io/v1):
// a slice holds devices or counter sets, never both, and at most 64
// devices when they consume counters; all slices in one pool.
func indepSplit(s *resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	out := []*resourceapi.ResourceSlice{}
	for i := 0; i < len(s.Spec.Devices); i += 64 {
		d := s.DeepCopy()
		d.Name, d.Spec.SharedCounters = fmt.Sprintf("%s-dev%d", s.Name, i/64), nil
		d.Spec.Devices = d.Spec.Devices[i:min(i+64, len(s.Spec.Devices))]
		out = append(out, d)
	}
	if len(s.Spec.SharedCounters) > 0 {
		c := s.DeepCopy()
		c.Name, c.Spec.Devices = s.Name+"-counters", nil
		out = append(out, c)
	}
	for _, x := range out {
		x.Spec.Pool.ResourceSliceCount = int64(len(out))
	}
	return out
}

// TestIndepDGXH100DynamicMIGSplit: a DGX H100 whose eight GPUs NVIDIA's
// driver publishes with dynamic MIG, split as the apiserver requires
// (counter sets in a slice of their own, 152 devices in three slices of
// at most 64). Whole-GPU claims of 4 and 2 get NVSwitch GPUs of one NUMA
// node each; MIG claims of every profile get legal placements on the
// other two GPUs, never a GPU given whole (a 7g.80gb then waits); no
// counter is over-consumed.
func TestIndepDGXH100DynamicMIGSplit(t *testing.T) {
	var gs []indepGPU
	for i := range 8 {
		gs = append(gs, indepGPU{minor: i, mig: true, root: fmt.Sprintf("pci0000:%02x", 0x10*(i/2+1))})
	}
	f := newFakeDRA()
	f.slices = indepSplit(indepNode("dgx-h100", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, indepH100Profiles, gs...))
	if len(f.slices) != 4 {
		t.Fatalf("%d slices", len(f.slices))
	}
	f.put(indepClaim("w4", DefaultDRADeviceClass, 4))
	f.put(indepClaim("w2", DefaultDRADeviceClass, 2))
	order := []string{"3g.40gb", "4g.40gb", "2g.20gb", "1g.20gb", "1g.10gb", "1g.10gb", "1g.10gb", "7g.80gb"}
	for i, p := range order {
		f.put(indepMIG(fmt.Sprintf("m%d", i), p))
	}
	h, io := newDRAHost(t, f, node("dgx-h100", -1, nil))
	ctx := context.Background()
	for _, c := range []string{"w4", "w2"} {
		io.pods = append(io.pods, draPodOf(c, c))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	for i := range order {
		io.pods = append(io.pods, draPodOf(fmt.Sprintf("m%d", i), fmt.Sprintf("m%d", i)))
		h.cycle(ctx)
		bindDRA(h, io)
	}
	h.cycle(ctx)
	got := indepCheck(t, f, io, indepH100Profiles)
	numa := func(ds []*resourceapi.Device) []string {
		var out []string
		for _, d := range ds {
			var m int
			fmt.Sscanf(d.Name, "gpu-%d", &m)
			out = append(out, fmt.Sprint(m/4))
		}
		return out
	}
	if len(got["w4"]) != 4 || !one(numa(got["w4"])) || len(got["w2"]) != 2 || !one(numa(got["w2"])) {
		t.Errorf("w4 %v, w2 %v: want 4 and 2 GPUs each on one NUMA node; pending %v", names(got["w4"]), names(got["w2"]), io.pending)
	}
	whole := map[string]bool{}
	for _, c := range []string{"w4", "w2"} {
		for _, d := range got[c] {
			whole[d.Name] = true
		}
	}
	if c := fmt.Sprintf("m%d", len(order)-1); len(got[c]) != 0 || io.pending[c] == "" {
		t.Errorf("the 7g.80gb got %v with no GPU free of MIG; reason %q", names(got[c]), io.pending[c])
	}
	for i, p := range order[:len(order)-1] {
		c := fmt.Sprintf("m%d", i)
		if len(got[c]) != 1 || *got[c][0].Attributes["profile"].StringValue != p {
			t.Errorf("claim %s (%s): %v; pending %q", c, p, names(got[c]), io.pending[c])
			continue
		}
		var g int
		fmt.Sscanf(got[c][0].Name, "gpu-%d-", &g)
		if whole[fmt.Sprintf("gpu-%d", g)] {
			t.Errorf("claim %s: %s on a GPU given whole", c, got[c][0].Name)
		}
	}
}

// TestIndepMIGBesideOtherModel: a DGX A100 of five whole GPUs (its
// model has MIG profiles of the same names, from its machine preset) and
// first by name, beside an H100 of dynamic MIG. A 3g.40gb claim, which
// only the H100's devices match, gets one there; it waited as
// "fragmentation" when the library was left to find the H100 host
// through the pod's node affinity alone.
func TestIndepMIGBesideOtherModel(t *testing.T) {
	f := indepA100BesideH100()
	f.put(indepMIG("m3g", "3g.40gb"))
	f.put(indepClaim("w", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node("a100-1", -1, nil), node("h100m-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("m3g", "m3g"), draPodOf("w", "w")}
	h.cycle(context.Background())
	got := indepCheck(t, f, io, indepH100Profiles)
	if len(got["m3g"]) != 1 || !strings.HasPrefix(got["m3g"][0].Name, "gpu-") || f.claims["default/m3g"].Status.Allocation.Devices.Results[0].Pool != "h100m-1" {
		t.Errorf("m3g: %v; pending %q", names(got["m3g"]), io.pending["m3g"])
	}
	if len(got["w"]) != 2 {
		t.Errorf("w: %v; pending %q", names(got["w"]), io.pending["w"])
	}
}

// TestIndepPlacementMIGBesideOtherModel: TestIndepMIGBesideOtherModel in
// placement mode: the DGX A100 of whole GPUs and static MIG first by
// name, the H100 of dynamic MIG after it; a 3g.40gb pod gets its device
// on the H100, a 2-GPU pod whole GPUs on the A100, and a static-MIG
// profile claim gets the A100's free static device of its profile.
func TestIndepPlacementMIGBesideOtherModel(t *testing.T) {
	f := indepA100BesideH100()
	f.put(indepMIG("m3g", "3g.40gb"))
	f.put(indepClaim("w", DefaultDRADeviceClass, 2))
	f.put(indepClaim("st", DefaultDRAMIGDeviceClass, 1, `device.attributes['gpu.nvidia.com'].profile == '2g.20gb'`,
		`device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')`))
	hs, _ := newDRAHarness(t, f, node("a100-1", -1, nil), node("h100m-1", -1, nil))
	for _, x := range []struct{ pod, node string }{{"m3g", "h100m-1"}, {"w", "a100-1"}, {"st", "a100-1"}} {
		p := hs.add(placementDRAPod(x.pod, x.pod))
		n, st, _ := hs.schedule(p)
		if n != x.node || st != nil {
			t.Fatalf("%s: node %q, status %v; want %s", x.pod, n, st, x.node)
		}
		hs.bind(p, n)
	}
	got := indepCheck(t, f, &fakeIO{}, indepH100Profiles)
	if len(got["m3g"]) != 1 || len(got["w"]) != 2 || len(got["st"]) != 1 || got["st"][0].Name != "gpu-5-mig-2g20gb-14-2" {
		t.Errorf("m3g %v, w %v, st %v", names(got["m3g"]), names(got["w"]), names(got["st"]))
	}
}

// indepA100BesideH100 is a fakeDRA with a100-1 (a DGX A100 of five whole
// GPUs and one in static MIG) and h100m-1 (two H100 of dynamic MIG).
func indepA100BesideH100() *fakeDRA {
	var gs []indepGPU
	for i := range 5 {
		gs = append(gs, indepGPU{minor: i, root: "pci0000:07"})
	}
	s := indepNode("a100-1", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 80, nil, gs...)
	indepStaticMIG(s, 5, indepA100Profiles, "1g.10gb@0", "2g.20gb@2", "3g.40gb@4")
	f := newFakeDRA()
	f.slices = append([]*resourceapi.ResourceSlice{s}, indepSplit(indepNode("h100m-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, indepH100Profiles,
		indepGPU{minor: 0, mig: true, root: "pci0000:1a"}, indepGPU{minor: 1, mig: true, root: "pci0000:9c"}))...)
	return f
}
