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

// indep3Engines are a MIG profile's capacities beside its memory: SMs,
// copy engines, decoders, JPEG and OFA engines, and its memory (MiB).
type indep3Engines struct{ sm, ce, dec, jpg, ofa, memMiB int64 }

// indep3A30 are the A30's MIG profiles (four memory slices; one OFA and
// one JPEG engine per GPU), with their engines.
var indep3A30 = []struct {
	indepMIGProfile
	e indep3Engines
}{
	{indepMIGProfile{"1g.6gb", 14, 1, []int{0, 1, 2, 3}}, indep3Engines{14, 1, 0, 0, 0, 5836}},
	{indepMIGProfile{"1g.6gb+me", 21, 1, []int{0, 1, 2, 3}}, indep3Engines{14, 1, 1, 1, 1, 5836}},
	{indepMIGProfile{"2g.12gb", 5, 2, []int{0, 2}}, indep3Engines{28, 2, 2, 0, 0, 11904}},
	{indepMIGProfile{"2g.12gb+me", 6, 2, []int{0, 2}}, indep3Engines{28, 2, 2, 1, 1, 11904}},
	{indepMIGProfile{"4g.24gb", 0, 4, []int{0}}, indep3Engines{56, 4, 4, 1, 1, 24064}},
}

// indep3Slices publishes n GPUs of product on node as NVIDIA's driver
// does today: gpu-<minor> with the standard attributes pciBusID, pcieRoot
// (root(i)) and numaNode (numa(i)); with a30MIG, dynamic MIG of the A30
// profiles (the GPU consumes its whole counter set; MIG devices their
// engines and memory slices). Split as the apiserver takes them.
func indep3Slices(node, product, arch, cc string, memMiB int64, n int, a30MIG bool, numa func(int) int64, root func(int) string) []*resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com-i3"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	sv := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	vv := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &v} }
	q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }
	engines := func(e indep3Engines, start, size int) (map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, map[string]resourceapi.Counter) {
		caps := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
		ctrs := map[string]resourceapi.Counter{}
		for _, x := range []struct {
			capName, ctr string
			v            int64
		}{{"multiprocessors", "multiprocessors", e.sm}, {"copyEngines", "copy-engines", e.ce}, {"decoders", "decoders", e.dec},
			{"jpegEngines", "jpeg-engines", e.jpg}, {"ofaEngines", "ofa-engines", e.ofa}, {"memory", "memory", e.memMiB << 20}} {
			caps[resourceapi.QualifiedName(x.capName)] = resourceapi.DeviceCapacity{Value: q(x.v)}
			ctrs[x.ctr] = resourceapi.Counter{Value: q(x.v)}
		}
		for k := start; k < start+size; k++ {
			ctrs[fmt.Sprintf("memory-slice-%d", k)] = resourceapi.Counter{Value: q(1)}
		}
		return caps, ctrs
	}
	for i := range n {
		uuid := fmt.Sprintf("GPU-%s-%02d-i3", strings.ReplaceAll(node, "-", ""), i)
		attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"productName": sv(product), "architecture": sv(arch), "brand": sv("Nvidia"),
			"cudaComputeCapability": vv(cc), "driverVersion": vv("580.105.8"), "resource.kubernetes.io/pcieRoot": sv(root(i)),
			"resource.kubernetes.io/pciBusID": sv(fmt.Sprintf("0000:%02x:00.0", 0x19+0x20*i))}
		g := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": sv("gpu"), "uuid": sv(uuid)},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: q(memMiB << 20)}}}
		for k, v := range attrs {
			g.Attributes[k] = v
		}
		numaNode := numa(i)
		g.Attributes["resource.kubernetes.io/numaNode"] = resourceapi.DeviceAttribute{IntValue: &numaNode}
		if !a30MIG {
			s.Spec.Devices = append(s.Spec.Devices, g)
			continue
		}
		set := fmt.Sprintf("gpu-%d-counter-set", i)
		whole := indep3A30[len(indep3A30)-1]
		g.Capacity, _ = engines(whole.e, 0, 0)
		_, all := engines(whole.e, 0, whole.size)
		s.Spec.SharedCounters = append(s.Spec.SharedCounters, resourceapi.CounterSet{Name: set, Counters: all})
		g.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: all}}
		s.Spec.Devices = append(s.Spec.Devices, g)
		for _, p := range indep3A30 {
			for _, st := range p.starts {
				m := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": sv("mig"), "parentUUID": sv(uuid), "profile": sv(p.name)}
				for k, v := range attrs {
					m[k] = v
				}
				caps, use := engines(p.e, st, p.size)
				s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d-mig-%s-%d-%d", i, strings.NewReplacer(".", "", "+", "-").Replace(p.name), p.id, st),
					Attributes: m, Capacity: caps, ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: use}}})
			}
		}
	}
	return indepSplit(s)
}

// indepControlPlane starts the apiserver with gpusched's namespace and
// queues, NVIDIA's DeviceClasses for GPUs and MIG devices (type
// selectors) and a NIC driver's.
func indepControlPlane(ctx context.Context, t *testing.T) (*controlPlane, kubernetes.Interface) {
	t.Helper()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	indepClasses(ctx, t, c, map[string]string{
		gpuClass:                        `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`,
		plugin.DefaultDRAMIGDeviceClass: `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`,
		nicDriver:                       `device.driver == 'nic.example.com'`,
	})
	return cp, c
}

// TestDRAIndep3 runs a third independent set against the real apiserver
// in scheduler mode: an HGX H100 on EPYCs in NPS2 (four published NUMA
// nodes of two GPUs: a 2-GPU claim with matchAttribute numaNode after a
// 1-GPU pod is allocated, both GPUs on one NUMA node); eight H100 NVL in
// bridged pairs (a 2-GPU pod with a NIC claim gets a pair of one
// pcieRoot, its NIC claim allocated by kube's DynamicResources); two A30
// of dynamic MIG with media extensions (two 1g.6gb+me on different GPUs,
// a third waits, a 2g.12gb placed legally). Every claim's devices exist
// on its pod's node, none is in two claims, no counter (engines, memory
// slices) is over-consumed.
func TestDRAIndep3(t *testing.T) {
	ctx := context.Background()
	cp, c := indepControlPlane(ctx, t)
	for _, ss := range [][]*resourceapi.ResourceSlice{
		indep3Slices("hgx-h100", "NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559, 8, false,
			func(i int) int64 { return int64(i / 2) }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x10*(i+1)) }),
		indep3Slices("h100nvl", "NVIDIA H100 NVL", "Hopper", "9.0.0", 95830, 8, false,
			func(i int) int64 { return int64(i / 4) }, func(i int) string { return fmt.Sprintf("pci0000:%02x", 0x20*(i/2+1)) }),
		indep3Slices("a30", "NVIDIA A30", "Ampere", "8.0.0", 24576, 2, true,
			func(int) int64 { return 0 }, func(int) string { return "pci0000:3a" }),
	} {
		createNode(ctx, t, c, nodeSpec{Name: *ss[0].Spec.NodeName})
		for _, x := range ss {
			if _, err := c.ResourceV1().ResourceSlices().Create(ctx, x, metav1.CreateOptions{}); err != nil {
				t.Fatalf("slice %s: %v", x.Name, err)
			}
		}
	}
	publishNICs(ctx, t, c, "h100nvl", 2)
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	run := func(pod, class, expr string, count int, numa bool, extra ...string) {
		t.Helper()
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count),
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: e}}}}}
		if numa {
			attr := resourceapi.FullyQualifiedName("resource.kubernetes.io/numaNode")
			cl.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &attr}}
		}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", pod, err)
		}
		createDRAPod(ctx, t, c, pod, batch, append([]string{pod}, extra...)...)
	}
	h100 := `device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'`
	profile := func(p string) string { return fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p) }

	run("one", gpuClass, h100, 1, false)
	waitBound(ctx, t, c, "default", []string{"one"}, 60*time.Second)
	run("numa2", gpuClass, h100, 2, true)
	createClaim(ctx, t, c, "nvl2-nic", nicDriver, 1)
	run("nvl2", gpuClass, `device.attributes['gpu.nvidia.com'].productName.endsWith('NVL')`, 2, false, "nvl2-nic")
	run("me1", plugin.DefaultDRAMIGDeviceClass, profile("1g.6gb+me"), 1, false)
	waitBound(ctx, t, c, "default", []string{"me1"}, 60*time.Second)
	run("me2", plugin.DefaultDRAMIGDeviceClass, profile("1g.6gb+me"), 1, false)
	waitBound(ctx, t, c, "default", []string{"numa2", "nvl2", "me2"}, 60*time.Second)
	run("two", plugin.DefaultDRAMIGDeviceClass, profile("2g.12gb"), 1, false)
	waitBound(ctx, t, c, "default", []string{"two"}, 60*time.Second)
	run("me3", plugin.DefaultDRAMIGDeviceClass, profile("1g.6gb+me"), 1, false)
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, "default", "me3"), "gpusched"), nil
	}); err != nil {
		t.Errorf("pod me3: condition %q, want it waiting with gpusched's reason", podCondition(ctx, c, "default", "me3"))
	}
	time.Sleep(3 * time.Second) // (a wrong binding would show by now)
	var profiles []indepMIGProfile
	for _, p := range indep3A30 {
		profiles = append(profiles, p.indepMIGProfile)
	}
	got := indepChecked(ctx, t, c, profiles)
	numaOf := func(d indepDev) string {
		var i int
		fmt.Sscanf(d.name, "gpu-%d", &i)
		return fmt.Sprint(i / 2)
	}
	if r := got["numa2"]; len(r) != 2 || r[0].node != "hgx-h100" || numaOf(r[0]) != numaOf(r[1]) {
		t.Errorf("numa2 %+v: want two GPUs of one published NUMA node of hgx-h100", r)
	}
	if r := got["nvl2"]; len(r) != 2 || r[0].root != r[1].root || r[0].node != "h100nvl" {
		t.Errorf("nvl2 %+v: want a bridged pair of one pcieRoot", r)
	}
	if nic, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "nvl2-nic", metav1.GetOptions{}); err != nil || nic.Status.Allocation == nil ||
		nic.Status.Allocation.Devices.Results[0].Driver != nicDriver || nic.Status.Allocation.Devices.Results[0].Pool != "h100nvl-nic" {
		t.Errorf("nvl2's NIC claim not kube's on h100nvl: %v", err)
	}
	me1, me2 := got["me1"], got["me2"]
	if len(me1) != 1 || len(me2) != 1 || strings.Split(me1[0].name, "-mig")[0] == strings.Split(me2[0].name, "-mig")[0] {
		t.Errorf("me1 %+v, me2 %+v: want one per GPU", me1, me2)
	}
	if len(got["two"]) != 1 || len(got["me3"]) != 0 {
		t.Errorf("two %+v, me3 %+v", got["two"], got["me3"])
	}

	// The driver restarts without the GPU of "one" (fallen off the bus):
	// a new generation of hgx-h100's pool leaves it out. one's job is
	// recovered; numa2, on published GPUs, is not.
	gone := got["one"][0].name
	sl, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range sl.Items {
		if x.Spec.Pool.Name != "hgx-h100" || x.Spec.Driver != gpuDriver {
			continue
		}
		x.Spec.Pool.Generation++
		x.Spec.Devices = slices.DeleteFunc(x.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == gone })
		if _, err := c.ResourceV1().ResourceSlices().Update(ctx, &x, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("slice %s: %v", x.Name, err)
		}
	}
	if !hasEvent(ctx, t, c, "default", "one", plugin.ReasonRecovery, "") {
		t.Errorf("one on withdrawn %s: no %s Warning\n%s", gone, plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
	}
	if hasEvent(ctx, t, c, "default", "numa2", plugin.ReasonRecovery, "") {
		t.Errorf("numa2 recovered, its GPUs published")
	}
}
