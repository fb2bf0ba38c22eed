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

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// h200Capture is the real H200 capture whose MIG profiles and placements
// the test driver publishes.
const h200Capture = "../../../topology/nvml/testdata/golden/h200-sxm-1"

const migClass = plugin.DefaultDRAMIGDeviceClass

// TestDRAMIG runs gpusched in scheduler mode with DRA against the real
// apiserver (partitionable devices and consumable capacity on, as in
// 1.37's defaults). A test driver publishes an H200 node of two GPUs as
// NVIDIA's driver does with dynamic MIG, with exactly the MIG profiles and
// placements of the real h200-sxm-1 capture (1g.18gb+me included), and a
// node of two GPUs that allow multiple allocations (consumable memory).
// gpusched allocates MIG claims (profile named by a CEL selector), GPU
// shares and a whole GPU chosen by a CEL selector on productName; kube's
// DynamicResources allocates a NIC claim of a MIG pod. Checked on every
// claim: MIG placements legal per profile and never overlapping, shared
// counters never over-consumed, shared capacity never over-committed, no
// device in two claims; a second 1g.18gb+me on a GPU that has one, a
// 7g.141gb with no GPU free of MIG and a
// share past the free capacity wait. A restarted scheduler reads the MIG
// devices and shares back from the claims and places new MIG pods around
// them.
func TestDRAMIG(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "share-1"})
	publishShared(ctx, t, c, "share-1", 2)
	publishNICs(ctx, t, c, "h200-1", 1)
	waiting := map[string]bool{"m-me2": false, "m-7g": false, "s-3": false}
	if !t.Run("first", func(t *testing.T) { draMIGFirst(ctx, t, c, cp, profiles, waiting) }) {
		return
	}

	// A restarted scheduler reads the MIG devices and shares back from the
	// claims: a 2g.35gb and a 1g.35gb go to the free slices of GPU 1
	// (GPU 0 looks free to one that does not), and the waiting pods still
	// wait.
	t.Run("restarted", func(t *testing.T) {
		startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
		batch := map[string]string{queueLabel: "batch"}
		for _, m := range []struct{ pod, profile string }{{"r-2g", "2g.35gb"}, {"r-1g", "1g.35gb"}} {
			createCELClaim(ctx, t, c, m.pod, migClass, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", m.profile), nil)
			createDRAPod(ctx, t, c, m.pod, batch, m.pod)
			waitBound(ctx, t, c, "default", []string{m.pod}, 60*time.Second)
		}
		time.Sleep(3 * time.Second)
		checkDRAClaims(ctx, t, c, profiles, waiting)
	})
}

// migControlPlane starts a control plane with the DeviceClasses of
// NVIDIA's driver (and a NIC driver's) and the H200 node h200-1 of two
// GPUs published with dynamic MIG from the real capture.
func migControlPlane(ctx context.Context, t *testing.T) (*controlPlane, []nvdra.Profile) {
	t.Helper()
	profiles, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t)
	c := cp.Client
	createGPUClasses(ctx, t, c)
	createNode(ctx, t, c, nodeSpec{Name: "h200-1"})
	for _, s := range (nvdra.Node{Name: "h200-1", GPUs: 2, Product: "NVIDIA H200", Profiles: profiles, Slots: 8}).Slices() {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("MIG slice %s: %v", s.Name, err)
		}
	}
	return cp, profiles
}

// createGPUClasses creates gpusched's namespace and queues and the
// DeviceClasses of NVIDIA's driver (and a NIC driver's).
func createGPUClasses(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	for class, expr := range map[string]string{
		gpuClass:  `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`,
		migClass:  `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`,
		nicDriver: `device.driver == 'nic.example.com'`,
	} {
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}}}
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("device class %s: %v", class, err)
		}
	}
}

// TestDRAMIGSeveral: a pod asks for three MIG devices in one claim (two
// 3g.71gb in request r0, a 1g.18gb in r1); gpusched allocates them on
// h200-1, each of its request's profile, at legal placements that share
// no memory slice (checkDRAClaims), and kube's DynamicResources lets the
// pod through.
func TestDRAMIGSeveral(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "three", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "r0", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2, Selectors: profileSel("3g.71gb")}},
			{Name: "r1", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: profileSel("1g.18gb")}},
		}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim three: %v", err)
	}
	createDRAPod(ctx, t, c, "three", map[string]string{queueLabel: "batch"}, "three")
	waitBound(ctx, t, c, "default", []string{"three"}, 60*time.Second)
	got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "three", metav1.GetOptions{})
	if err != nil || got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != 3 {
		t.Fatalf("claim three: %v %+v", err, got.Status)
	}
	for i, r := range got.Status.Allocation.Devices.Results {
		want := map[bool]string{true: "-mig-3g71gb-", false: "-mig-1g18gb-"}[i < 2]
		if !strings.Contains(r.Device, want) || strings.Contains(r.Device, "-me-") || r.Request != map[bool]string{true: "r0", false: "r1"}[i < 2] {
			t.Errorf("result %d: %s for %s, want a device %s…", i, r.Device, r.Request, want)
		}
	}
	checkDRAClaims(ctx, t, c, profiles, map[string]bool{})
}

// draMIGFirst is TestDRAMIG's first scheduler: MIG pods, a whole GPU by
// CEL and shares; the pods of waiting stay unallocated.
func draMIGFirst(ctx context.Context, t *testing.T, c kubernetes.Interface, cp *controlPlane, profiles []nvdra.Profile, waiting map[string]bool) {
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}

	// MIG pods, one at a time: 4g.71gb and 3g.71gb fill one GPU, the
	// media-extension device goes to the other, and a second one cannot
	// (one set of media extensions per GPU, and no GPU is free of MIG).
	// The 1g.18gb pod also has a NIC claim, kube's.
	for _, m := range []struct{ pod, profile string }{{"m-4g", "4g.71gb"}, {"m-3g", "3g.71gb"}, {"m-me", "1g.18gb+me"}, {"m-1g", "1g.18gb"}} {
		createCELClaim(ctx, t, c, m.pod, migClass, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", m.profile), nil)
		claims := []string{m.pod}
		if m.pod == "m-1g" {
			createClaim(ctx, t, c, "m-nic", nicDriver, 1)
			claims = append(claims, "m-nic")
		}
		createDRAPod(ctx, t, c, m.pod, batch, claims...)
		bound := waitBound(ctx, t, c, "default", []string{m.pod}, 60*time.Second)
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, m.pod, metav1.GetOptions{})
		if err != nil || cl.Status.Allocation == nil {
			t.Fatalf("claim %s of bound pod: %v %+v", m.pod, err, cl)
		}
		dev := cl.Status.Allocation.Devices.Results[0].Device
		if !strings.HasPrefix(dev, "gpu-"+bound[m.pod].Annotations[indicesKey]+"-mig-") {
			t.Errorf("pod %s: claim names %s, gpusched chose GPU %q", m.pod, dev, bound[m.pod].Annotations[indicesKey])
		}
	}
	nic, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "m-nic", metav1.GetOptions{})
	if err != nil || nic.Status.Allocation == nil || nic.Status.Allocation.Devices.Results[0].Driver != nicDriver {
		t.Errorf("NIC claim of m-1g not allocated by kube's DynamicResources: %v %+v", err, nic)
	}
	createCELClaim(ctx, t, c, "m-me2", migClass, "device.attributes['gpu.nvidia.com'].profile == '1g.18gb+me'", nil)
	createDRAPod(ctx, t, c, "m-me2", batch, "m-me2")
	createCELClaim(ctx, t, c, "m-7g", migClass, "device.attributes['gpu.nvidia.com'].profile == '7g.141gb'", nil)
	createDRAPod(ctx, t, c, "m-7g", batch, "m-7g")

	// A whole H100 chosen by CEL, then shares of 30Gi: two on the other
	// GPU, the third waits (it would over-commit a GPU's 80Gi).
	createCELClaim(ctx, t, c, "w", gpuClass, "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')", nil)
	createDRAPod(ctx, t, c, "w", batch, "w")
	bound := waitBound(ctx, t, c, "default", []string{"w"}, 60*time.Second)
	if bound["w"].Spec.NodeName != "share-1" {
		t.Errorf("the H100 claim's pod on %s, want share-1", bound["w"].Spec.NodeName)
	}
	thirty := map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("30Gi")}
	for _, s := range []string{"s-1", "s-2", "s-3"} {
		createCELClaim(ctx, t, c, s, gpuClass, "", thirty)
		createDRAPod(ctx, t, c, s, batch, s)
		if s != "s-3" {
			waitBound(ctx, t, c, "default", []string{s}, 60*time.Second)
		}
	}
	for pod, want := range map[string]string{"m-me2": "gpusched", "m-7g": "gpusched", "s-3": "gpusched"} {
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(podCondition(ctx, c, "default", pod), want), nil
		}); err != nil {
			t.Errorf("pod %s: condition %q, want it waiting with gpusched's reason", pod, podCondition(ctx, c, "default", pod))
		}
	}
	time.Sleep(3 * time.Second) // (a wrong binding would show by now)
	checkDRAClaims(ctx, t, c, profiles, waiting)
}

// publishShared publishes n H100s of node that allow multiple
// allocations, with 80Gi of consumable memory each.
func publishShared(ctx context.Context, t *testing.T, c kubernetes.Interface, node string, n int) {
	t.Helper()
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	yes := true
	for i := range n {
		idx := int64(i)
		typ, prod, uuid := "gpu", "NVIDIA H100 80GB HBM3", fmt.Sprintf("GPU-%s-%d", node, i)
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), AllowMultipleAllocations: &yes,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": {StringValue: &typ}, "index": {IntValue: &idx},
				"productName": {StringValue: &prod}, "uuid": {StringValue: &uuid}},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}})
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("shared GPU slice of %s: %v", node, err)
	}
}

// createCELClaim creates a claim for one device of class with a CEL
// selector (none when expr is "") and capacity requests (a share).
func createCELClaim(ctx context.Context, t *testing.T, c kubernetes.Interface, name, class, expr string, capacity map[resourceapi.QualifiedName]resource.Quantity) {
	t.Helper()
	e := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
	if expr != "" {
		e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
	}
	if capacity != nil {
		e.Capacity = &resourceapi.CapacityRequirements{Requests: capacity}
	}
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: e}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
}

// checkDRAClaims checks every allocated claim against the slices: no
// device (or share of one) in two claims, MIG devices at a placement
// their profile allows, no counter of a counter set consumed past its
// value (so no memory slice twice), no shared device's capacity
// over-committed. allocated names claims that must (true) or must not
// (false) be allocated.
func checkDRAClaims(ctx context.Context, t *testing.T, c kubernetes.Interface, profiles []nvdra.Profile, allocated map[string]bool) {
	t.Helper()
	sl, err := c.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	devs := map[string]resourceapi.Device{}
	limit := map[string]resource.Quantity{} // pool/set/counter
	for _, s := range sl.Items {
		for _, d := range s.Spec.Devices {
			devs[s.Spec.Pool.Name+"/"+d.Name] = d
		}
		for _, cs := range s.Spec.SharedCounters {
			for k, v := range cs.Counters {
				limit[s.Spec.Pool.Name+"/"+cs.Name+"/"+k] = v.Value
			}
		}
	}
	claims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	used := map[string]resource.Quantity{} // pool/set/counter and pool/device/capacity
	add := func(k string, q resource.Quantity) {
		u := used[k]
		u.Add(q)
		used[k] = u
	}
	for _, cl := range claims.Items {
		if want, ok := allocated[cl.Name]; ok && want != (cl.Status.Allocation != nil) {
			t.Errorf("claim %s: allocated %v, want %v", cl.Name, cl.Status.Allocation != nil, want)
		}
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			k := r.Driver + "/" + r.Pool + "/" + r.Device
			if r.ShareID != nil {
				k += "/" + string(*r.ShareID)
			}
			if o, dup := owner[k]; dup {
				t.Errorf("device %s in claims %s and %s", k, o, cl.Name)
			}
			owner[k] = cl.Name
			t.Logf("claim %s: %s", cl.Name, k)
			if r.Driver != gpuDriver {
				continue
			}
			d := devs[r.Pool+"/"+r.Device]
			for _, cc := range d.ConsumesCounters {
				for name, v := range cc.Counters {
					add(r.Pool+"/"+cc.CounterSet+"/"+name, v.Value)
				}
			}
			if d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations {
				if r.ShareID == nil {
					t.Errorf("claim %s: a device allowing multiple allocations without a shareID", cl.Name)
				}
				for name, q := range r.ConsumedCapacity {
					add(r.Pool+"/"+r.Device+"/"+string(name), q)
				}
			}
			if t2 := d.Attributes["type"].StringValue; t2 != nil && *t2 == "mig" {
				checkPlacement(t, cl.Name, d, profiles)
			}
		}
	}
	for k, u := range used {
		lim, ok := limit[k]
		if !ok {
			parts := strings.Split(k, "/")
			d := devs[parts[0]+"/"+parts[1]]
			lim = d.Capacity[resourceapi.QualifiedName(parts[2])].Value
		}
		if u.Cmp(lim) > 0 {
			t.Errorf("%s: %s consumed of %s", k, u.String(), lim.String())
		}
	}
}

// checkPlacement checks that MIG device d sits at a placement its profile
// allows in the capture.
func checkPlacement(t *testing.T, claim string, d resourceapi.Device, profiles []nvdra.Profile) {
	t.Helper()
	prof := *d.Attributes["profile"].StringValue
	k := slices.IndexFunc(profiles, func(p nvdra.Profile) bool { return p.Name == prof })
	start, size := 99, 0
	for _, cc := range d.ConsumesCounters {
		for name := range cc.Counters {
			var m int
			if _, err := fmt.Sscanf(name, "memory-slice-%d", &m); err == nil {
				start, size = min(start, m), size+1
			}
		}
	}
	for name := range d.Capacity { // (static MIG: memorySlice<K> capacities)
		var m int
		if _, err := fmt.Sscanf(string(name), "memorySlice%d", &m); err == nil {
			start, size = min(start, m), size+1
		}
	}
	if k < 0 || size != profiles[k].Size || !slices.Contains(profiles[k].Starts, start) {
		t.Errorf("claim %s: MIG device %s (%s) at slices %d..%d, not a placement of its profile", claim, d.Name, prof, start, start+size-1)
	}
}
