package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// indepMIGProfile is an 80GB A100/H100 MIG profile from NVIDIA's MIG user
// guide: GI profile ID, size in memory slices, legal starts.
type indepMIGProfile struct {
	name   string
	id     int
	size   int
	starts []int
}

var indepProfiles80 = []indepMIGProfile{
	{"1g.10gb", 19, 1, []int{0, 1, 2, 3, 4, 5, 6}}, {"1g.20gb", 15, 2, []int{0, 2, 4, 6}},
	{"2g.20gb", 14, 2, []int{0, 2, 4}}, {"3g.40gb", 9, 4, []int{0, 4}},
	{"4g.40gb", 5, 4, []int{0}}, {"7g.80gb", 0, 8, []int{0}},
}

// indepSlice is a ResourceSlice of NVIDIA's GPU driver as it publishes
// today (no index attribute; versions; pcieRoot; memory capacity). gpus
// gives each GPU's PCIe root; a root prefixed "mig:" publishes the GPU
// with dynamic MIG (its counter set, every placement of every profile),
// "static:LAYOUT" only the MIG devices of LAYOUT ("1g.10gb@0,3g.40gb@4")
// with memorySlice capacities and not the GPU (static MIG).
func indepSlice(node, product, arch, cc string, memGiB int64, gpus ...string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com-indep"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	sv := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	vv := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &v} }
	gib := func(n int64) resource.Quantity { return *resource.NewQuantity(n<<30, resource.BinarySI) }
	one := *resource.NewQuantity(1, resource.BinarySI)
	for minor, spec := range gpus {
		uuid := fmt.Sprintf("GPU-%s-%04d-77aa", strings.ReplaceAll(node, "-", ""), minor)
		root := strings.TrimPrefix(spec, "mig:")
		if strings.HasPrefix(spec, "static:") {
			root = "pci0000:c7"
		}
		attrs := func(typ string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
			return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": sv(typ), "productName": sv(product),
				"architecture": sv(arch), "brand": sv("Nvidia"), "cudaComputeCapability": vv(cc), "driverVersion": vv("580.95.5"),
				"resource.kubernetes.io/pcieRoot": sv(root)}
		}
		if layout, ok := strings.CutPrefix(spec, "static:"); ok {
			for _, l := range strings.Split(layout, ",") {
				var name string
				var start int
				name, rest, _ := strings.Cut(l, "@")
				fmt.Sscan(rest, &start)
				p := indepProfiles80[slices.IndexFunc(indepProfiles80, func(p indepMIGProfile) bool { return p.name == name })]
				a := attrs("mig")
				a["parentUUID"], a["profile"] = sv(uuid), sv(name)
				d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d-mig-%s-%d-%d", minor, strings.ReplaceAll(name, ".", ""), p.id, start), Attributes: a,
					Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: gib(int64(10 * p.size))}}}
				for k := start; k < start+p.size; k++ {
					d.Capacity[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", k))] = resourceapi.DeviceCapacity{Value: one}
				}
				s.Spec.Devices = append(s.Spec.Devices, d)
			}
			continue
		}
		a := attrs("gpu")
		a["uuid"] = sv(uuid)
		gpu := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", minor), Attributes: a,
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: gib(memGiB)}}}
		if strings.HasPrefix(spec, "mig:") {
			set := fmt.Sprintf("gpu-%d-counter-set", minor)
			counters := map[string]resourceapi.Counter{"memory": {Value: gib(memGiB)}}
			for k := range 8 {
				counters[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: one}
			}
			s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: set, Counters: counters})
			gpu.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: counters}}
			for _, p := range indepProfiles80 {
				for _, st := range p.starts {
					m := attrs("mig")
					m["parentUUID"], m["profile"] = sv(uuid), sv(p.name)
					use := map[string]resourceapi.Counter{"memory": {Value: gib(int64(10 * p.size))}}
					for k := st; k < st+p.size; k++ {
						use[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: one}
					}
					s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d-mig-%s-%d-%d", minor, strings.ReplaceAll(p.name, ".", ""), p.id, st),
						Attributes: m, Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: gib(int64(10 * p.size))}},
						ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: use}}})
				}
			}
		}
		s.Spec.Devices = append(s.Spec.Devices, gpu)
	}
	return s
}

// indepSplit publishes s as the apiserver takes it: its counter sets in a
// slice of their own (a slice has devices or counter sets, not both) and
// its devices in slices of at most 64 (the limit when devices consume
// counters), all in one pool.
func indepSplit(s *resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	if len(s.Spec.SharedCounters) > 0 {
		c := s.DeepCopy()
		c.Name, c.Spec.Devices = s.Name+"-counters", nil
		out = append(out, c)
	}
	for i := 0; i < len(s.Spec.Devices); i += 64 {
		d := s.DeepCopy()
		d.Name, d.Spec.SharedCounters = fmt.Sprintf("%s-%d", s.Name, i/64), nil
		d.Spec.Devices = s.Spec.Devices[i:min(i+64, len(s.Spec.Devices))]
		out = append(out, d)
	}
	for _, x := range out {
		x.Spec.Pool.ResourceSliceCount = int64(len(out))
	}
	return out
}

// TestDRAIndep runs an independent set of slices and claims against the
// real apiserver in scheduler mode, with NVIDIA's DeviceClasses (type
// selectors) and a NIC driver's: four L40S on two PCIe roots (CEL on
// architecture, compute capability and memory: a 2-GPU pod after a 1-GPU
// pod gets the other root's pair; a NIC claim beside it is kube's); two
// H100 80GB of dynamic MIG (a MIG device of each profile, legal
// placements, counters never over-consumed, a 7g.80gb waits); a DGX A100
// with five whole GPUs and three in static MIG (4 whole GPUs given, never
// a MIG GPU; a MIG claim of a static profile gets one of its pre-made devices). Every
// claim's devices exist on its pod's node, none is in two claims.
func TestDRAIndep(t *testing.T) {
	ctx := context.Background()
	cp, c := indepControlPlane(ctx, t)
	for _, s := range []*resourceapi.ResourceSlice{
		indepSlice("l40s-1", "NVIDIA L40S", "Ada Lovelace", "8.9.0", 48, "pci0000:15", "pci0000:15", "pci0000:b7", "pci0000:b7"),
		indepSlice("h100m-1", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, "mig:pci0000:1a", "mig:pci0000:9c"),
		indepSlice("a100-1", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", 80, "pci0000:07", "pci0000:07", "pci0000:46", "pci0000:46", "pci0000:87",
			"static:1g.10gb@0,2g.20gb@2,3g.40gb@4", "static:1g.10gb@0,1g.10gb@1,1g.10gb@2,1g.10gb@3,1g.10gb@4,1g.10gb@5,1g.10gb@6",
			"static:1g.20gb@0,1g.20gb@2,1g.20gb@4,1g.20gb@6"),
	} {
		createNode(ctx, t, c, nodeSpec{Name: *s.Spec.NodeName})
		for _, x := range indepSplit(s) {
			if _, err := c.ResourceV1().ResourceSlices().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				t.Fatalf("slice %s: %v", x.Name, err)
			}
		}
	}
	publishNICs(ctx, t, c, "l40s-1", 1)
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	run := func(pod, class, expr string, count int, extra ...string) {
		t.Helper()
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count),
					Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}}}}}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", pod, err)
		}
		createDRAPod(ctx, t, c, pod, batch, append([]string{pod}, extra...)...)
	}
	profile := func(p string) string { return fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p) }

	run("one", gpuClass, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L40S'`, 1)
	waitBound(ctx, t, c, "default", []string{"one"}, 60*time.Second)
	createClaim(ctx, t, c, "pair-nic", nicDriver, 1)
	run("pair", gpuClass, `device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace' && `+
		`device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0')) && `+
		`device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0`, 2, "pair-nic")
	run("whole4", gpuClass, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'`, 4)
	var migs []string
	for i, p := range []string{"3g.40gb", "4g.40gb", "2g.20gb", "1g.20gb", "1g.10gb", "1g.10gb", "1g.10gb"} {
		name := fmt.Sprintf("mig-%d", i)
		run(name, plugin.DefaultDRAMIGDeviceClass, profile(p), 1)
		waitBound(ctx, t, c, "default", []string{name}, 60*time.Second)
		migs = append(migs, name)
	}
	waitBound(ctx, t, c, "default", []string{"pair", "whole4"}, 60*time.Second)
	run("mig-7g", plugin.DefaultDRAMIGDeviceClass, profile("7g.80gb"), 1)
	run("whole2", gpuClass, `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'`, 2)
	for pod, want := range map[string]string{"mig-7g": "gpusched", "whole2": "gpusched"} {
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(podCondition(ctx, c, "default", pod), want), nil
		}); err != nil {
			t.Errorf("pod %s: condition %q, want it waiting with gpusched's reason", pod, podCondition(ctx, c, "default", pod))
		}
	}
	time.Sleep(3 * time.Second) // (a wrong binding would show by now)
	got := indepChecked(ctx, t, c, indepProfiles80)
	if r := got["pair"]; len(r) != 2 || r[0].root != r[1].root || r[0].root == got["one"][0].root {
		t.Errorf("pair %+v beside one %+v: want the other root's pair", r, got["one"])
	}
	if nic, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "pair-nic", metav1.GetOptions{}); err != nil || nic.Status.Allocation == nil ||
		nic.Status.Allocation.Devices.Results[0].Driver != nicDriver {
		t.Errorf("pair's NIC claim not kube's: %v", err)
	}
	if len(got["whole4"]) != 4 || len(got["whole2"]) != 0 || len(got["mig-7g"]) != 0 {
		t.Errorf("whole4 %+v, whole2 %+v, mig-7g %+v", got["whole4"], got["whole2"], got["mig-7g"])
	}
	for _, m := range migs {
		if len(got[m]) != 1 || got[m][0].node != "h100m-1" {
			t.Errorf("MIG claim %s: %+v", m, got[m])
		}
	}

	// A MIG claim whose profile only the A100's static MIG devices
	// publish is placed on one of them (docs/dra.md: static MIG), never
	// on a GPU given whole.
	run("static", plugin.DefaultDRAMIGDeviceClass, profile("1g.10gb")+" && device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')", 1)
	waitBound(ctx, t, c, "default", []string{"static"}, 60*time.Second)
	got = indepChecked(ctx, t, c, indepProfiles80)
	if r := got["static"]; len(r) != 1 || r[0].node != "a100-1" || r[0].profile != "1g.10gb" {
		t.Errorf("static MIG claim: %+v, want one 1g.10gb static device of a100-1", r)
	}
	for _, g := range got["whole4"] {
		if r := got["static"]; len(r) == 1 && strings.HasPrefix(r[0].name, g.name+"-mig-") {
			t.Errorf("static MIG device %s on %s, a GPU given whole", r[0].name, g.name)
		}
	}
}

// indepDev is one allocated device: its node, PCIe root, profile and the
// memory slices it consumes.
type indepDev struct {
	node, name, root, profile string
	slices                    []int
}

// indepChecked reads every claim and slice and checks each allocation:
// the device exists in its pool, which is the claim's node and its pod's;
// no device in two claims; MIG devices at a legal placement of their
// profile (of profiles); no shared counter consumed past its value. It
// returns the GPU devices of each claim.
func indepChecked(ctx context.Context, t *testing.T, c kubernetes.Interface, profiles []indepMIGProfile) map[string][]indepDev {
	t.Helper()
	sl, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	devs := map[string]resourceapi.Device{}
	limit := map[string]int64{}
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			devs[s.Spec.Driver+"/"+s.Spec.Pool.Name+"/"+d.Name] = d
		}
		for _, cs := range s.Spec.SharedCounters {
			for k, v := range cs.Counters {
				limit[s.Spec.Pool.Name+"/"+cs.Name+"/"+k] = v.Value.Value()
			}
		}
	}
	claims, err := c.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]indepDev{}
	owner := map[string]string{}
	used := map[string]int64{}
	for _, cl := range claims.Items {
		a := cl.Status.Allocation
		if a == nil {
			continue
		}
		node := a.NodeSelector.NodeSelectorTerms[0].MatchFields[0].Values[0]
		for _, ref := range cl.Status.ReservedFor {
			if p, err := c.CoreV1().Pods("default").Get(ctx, ref.Name, metav1.GetOptions{}); err == nil && p.Spec.NodeName != "" && p.Spec.NodeName != node {
				t.Errorf("claim %s on %s, its pod %s on %s", cl.Name, node, p.Name, p.Spec.NodeName)
			}
		}
		for _, r := range a.Devices.Results {
			k := r.Driver + "/" + r.Pool + "/" + r.Device
			d, ok := devs[k]
			if !ok || r.Pool != node && r.Driver == gpuDriver {
				t.Errorf("claim %s: device %s (published %v) on node %s", cl.Name, k, ok, node)
				continue
			}
			if o, dup := owner[k]; dup {
				t.Errorf("device %s in claims %s and %s", k, o, cl.Name)
			}
			owner[k] = cl.Name
			if r.Driver != gpuDriver {
				continue
			}
			x := indepDev{node: node, name: d.Name, root: *d.Attributes["resource.kubernetes.io/pcieRoot"].StringValue}
			if p := d.Attributes["profile"].StringValue; p != nil {
				x.profile = *p
			}
			for _, cc := range d.ConsumesCounters {
				for name, v := range cc.Counters {
					used[r.Pool+"/"+cc.CounterSet+"/"+name] += v.Value.Value()
					var m int
					if _, err := fmt.Sscanf(name, "memory-slice-%d", &m); err == nil {
						x.slices = append(x.slices, m)
					}
				}
			}
			if len(d.ConsumesCounters) == 0 {
				// A static MIG device: its memory slices are capacities.
				for name := range d.Capacity {
					var m int
					if _, err := fmt.Sscanf(string(name), "memorySlice%d", &m); err == nil {
						x.slices = append(x.slices, m)
					}
				}
			}
			slices.Sort(x.slices)
			if x.profile != "" {
				k := slices.IndexFunc(profiles, func(p indepMIGProfile) bool { return p.name == x.profile })
				if k < 0 || len(x.slices) != profiles[k].size || !slices.Contains(profiles[k].starts, x.slices[0]) {
					t.Errorf("claim %s: MIG device %s on slices %v, not a placement of %s", cl.Name, d.Name, x.slices, x.profile)
				}
			}
			out[cl.Name] = append(out[cl.Name], x)
			t.Logf("claim %s: %s/%s", cl.Name, node, d.Name)
		}
	}
	for k, u := range used {
		if l, ok := limit[k]; !ok || u > l {
			t.Errorf("counter %s: %d consumed of %d", k, u, l)
		}
	}
	return out
}

// TestDRAIndepGB200: GB200 trays published as NVIDIA's drivers do today
// (GPUs without index or cliqueId; the clique from GPU feature discovery's
// node label), cabled as three NVLink cliques of 9 trays over two racks.
// A 32-GPU ComputeDomain gang (8 trays) and a 16-GPU one (4 trays) go
// whole into one clique each, every channel claim naming channel-0 of its
// member's node; a 40-GPU gang (10 trays) fits no clique and waits, with
// none of its claims written.
func TestDRAIndepGB200(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	indepClasses(ctx, t, c, map[string]string{
		gpuClass:     `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`,
		channelClass: `device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0`,
	})
	for q, clique := range []string{"3e0a9c41-1111-4a2b-9c3d-00000000000a.1", "3e0a9c41-1111-4a2b-9c3d-00000000000a.2", "3e0a9c41-1111-4a2b-9c3d-00000000000b.1"} {
		for i := range 9 {
			name := fmt.Sprintf("gc%d-t%02d", q+1, i)
			createNode(ctx, t, c, nodeSpec{Name: name, CPU: "144", Memory: "900Gi", Clique: clique})
			s := indepSlice(name, "NVIDIA GB200", "Blackwell", "10.0.0", 186, "pci0008:00", "pci0008:00", "pci0018:00", "pci0018:00")
			id, typ := int64(0), "channel"
			daemon := "daemon"
			cd := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-compute-domain.nvidia.com-indep"},
				Spec: resourceapi.ResourceSliceSpec{Driver: channelDriver, NodeName: &name, Pool: resourceapi.ResourcePool{Name: name, ResourceSliceCount: 1},
					Devices: []resourceapi.Device{
						{Name: "channel-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: &typ}, "id": {IntValue: &id}}},
						{Name: "daemon-0", Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: &daemon}, "id": {IntValue: &id}}},
					}}}
			for _, x := range []*resourceapi.ResourceSlice{s, cd} {
				if _, err := c.ResourceV1().ResourceSlices().Create(ctx, x, metav1.CreateOptions{}); err != nil {
					t.Fatalf("slice %s: %v", x.Name, err)
				}
			}
		}
	}
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	g32 := createCDGang(ctx, t, c, "g32", 8, batch, false)
	waitCDGang(ctx, t, c, g32, 120*time.Second) // (one clique: the node names' prefix)
	g16 := createCDGang(ctx, t, c, "g16", 4, batch, false)
	waitCDGang(ctx, t, c, g16, 120*time.Second)
	g40 := createCDGang(ctx, t, c, "g40", 10, batch, false)
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, "default", g40[0]), "nvlink"), nil
	}); err != nil {
		t.Errorf("pod %s: condition %q, want it waiting for an NVLink clique", g40[0], podCondition(ctx, c, "default", g40[0]))
	}
	for _, m := range g40 {
		for _, cl := range []string{m + "-gpus", m + "-channel"} {
			if x, err := c.ResourceV1().ResourceClaims("default").Get(ctx, cl, metav1.GetOptions{}); err != nil || x.Status.Allocation != nil {
				t.Errorf("claim %s of the 40-GPU gang: %v, allocated %v", cl, err, x.Status.Allocation != nil)
			}
		}
	}
	if n := devicesOnce(ctx, t, c); n != (8+4)*5 {
		t.Errorf("%d devices allocated, want %d", n, (8+4)*5)
	}
}

// indepClasses creates a DeviceClass of one CEL selector per entry of
// exprs (class name → expression), as NVIDIA's chart defines them.
func indepClasses(ctx context.Context, t *testing.T, c kubernetes.Interface, exprs map[string]string) {
	t.Helper()
	for class, expr := range exprs {
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("device class %s: %v", class, err)
		}
	}
}
