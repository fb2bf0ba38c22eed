package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

const (
	gpuDriver = plugin.DefaultDRADriver
	gpuClass  = plugin.DefaultDRADeviceClass
	nicDriver = "nic.example.com"
)

// TestDRA runs gpusched in scheduler mode (schedModeConfig: kube's
// default plugins, DynamicResources among them) with DRA against the real apiserver
// (resource.k8s.io/v1): a test driver publishes the ResourceSlices of a
// DGX H100 as NVIDIA's DRA driver does (8 GPUs, NUMA nodes by PCIe root)
// and of two NICs of another driver. gpusched writes the GPUs it chose
// into each GPU claim (NUMA-aware: not kube's first fit); a 2-GPU pod on
// the half-used DGX gets a pair on one NUMA node; kube's DynamicResources
// allocates the NIC claim of the same pod; a gang of two goes whole to a
// DGX that joins; a device tainted NoExecute recovers the job on it; no
// device is in two claims; a claim two pods name is allocated once.
func TestDRA(t *testing.T) {
	ctx := context.Background()
	cp, c := dgxDRACluster(ctx, t) // (dra_foreign_test.go)
	publishNICs(ctx, t, c, "dgx-1", 2)
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))

	batch := map[string]string{queueLabel: "batch"}
	devsA := draPodsABC(ctx, t, c, schedModeName, batch)

	// A claim of a DeviceClass gpusched was not told of, with firstAvailable
	// subrequests: 4 GPUs do not fit the DGX's 1 free, 1 does; the result
	// names "r/one" and kube's DynamicResources lets the pod through.
	anyClass := "gpu-any.example.com"
	dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: anyClass}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}}}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("device class %s: %v", anyClass, err)
	}
	fa := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "d-gpus", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "four", DeviceClassName: anyClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4},
				{Name: "one", DeviceClassName: anyClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
			}}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, fa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim d-gpus: %v", err)
	}
	createDRAPod(ctx, t, c, "d", batch, "d-gpus")
	bound := waitBound(ctx, t, c, "default", []string{"d"}, 60*time.Second)
	if devsD := checkClaim(ctx, t, c, "d-gpus", bound["d"]); len(devsD) != 1 {
		t.Errorf("d got %v, want 1 GPU (its subrequest \"one\")", devsD)
	}
	if cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "d-gpus", metav1.GetOptions{}); err != nil || cl.Status.Allocation.Devices.Results[0].Request != "r/one" {
		t.Errorf("claim d-gpus: %v, results %+v, want request r/one", err, cl.Status.Allocation)
	}

	draGangOnDGX2(ctx, t, c, schedModeName, batch)

	// The driver taints a's GPU NoExecute: a's job is recovered.
	s, err := c.ResourceV1().ResourceSlices().Get(ctx, "dgx-1-gpu.nvidia.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Spec.Devices {
		if s.Spec.Devices[i].Name == devsA[0] {
			s.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoExecute}}
		}
	}
	if _, err := c.ResourceV1().ResourceSlices().Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("taint %s: %v", devsA[0], err)
	}
	if !hasEvent(ctx, t, c, "default", "a", plugin.ReasonRecovery, "") {
		t.Errorf("a on tainted %s: no %s Warning\n%s", devsA[0], plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
	}

	devicesOnce(ctx, t, c) // no device in two claims

	// A claim two pods name: allocated once, reserved for both.
	draSharedOnDGX3(ctx, t, c, schedModeName, batch)
}

// createDRAClasses creates the DeviceClasses of the GPU driver (gpuClass)
// and of the NIC driver (nicDriver).
func createDRAClasses(ctx context.Context, t *testing.T, c kubernetes.Interface) {
	t.Helper()
	for _, class := range []string{gpuClass, nicDriver} {
		driver := gpuDriver
		if class == nicDriver {
			driver = nicDriver
		}
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("device class %s (is resource.k8s.io/v1 served?): %v", class, err)
		}
	}
}

// draPodsABC runs pods a (1 GPU), b (4 GPUs), then c (2 GPUs and a NIC)
// of the profile scheduler, with labels, on the DGX dgx-1 (and its NICs),
// checking that each GPU claim names the GPUs gpusched chose, b's the NUMA
// node a leaves whole, c's a pair on one NUMA node, and c's NIC claim
// kube's allocation. It returns a's devices.
func draPodsABC(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler string, labels map[string]string) []string {
	t.Helper()
	createClaim(ctx, t, c, "a-gpus", gpuClass, 1)
	createDRAPodOf(ctx, t, c, scheduler, "a", labels, "a-gpus")
	bound := waitBound(ctx, t, c, "default", []string{"a"}, 60*time.Second)
	devsA := checkClaim(ctx, t, c, "a-gpus", bound["a"])
	createClaim(ctx, t, c, "b-gpus", gpuClass, 4)
	createDRAPodOf(ctx, t, c, scheduler, "b", labels, "b-gpus")
	bound = waitBound(ctx, t, c, "default", []string{"b"}, 60*time.Second)
	devsB := checkClaim(ctx, t, c, "b-gpus", bound["b"])
	if numa := numaNodes(devsB); len(numa) != 1 || slices.Contains(numa, numaNodes(devsA)[0]) {
		t.Errorf("b's 4 GPUs %v are on NUMA nodes %v; want the one a (%v) leaves whole", devsB, numa, devsA)
	}

	// The DGX is 5/8 used: c's 2 GPUs are a pair on one NUMA node; its
	// NIC claim is kube's.
	createClaim(ctx, t, c, "c-gpus", gpuClass, 2)
	createClaim(ctx, t, c, "c-nic", nicDriver, 1)
	createDRAPodOf(ctx, t, c, scheduler, "c", labels, "c-gpus", "c-nic")
	bound = waitBound(ctx, t, c, "default", []string{"c"}, 60*time.Second)
	devsC := checkClaim(ctx, t, c, "c-gpus", bound["c"])
	if numa := numaNodes(devsC); len(numa) != 1 {
		t.Errorf("2-GPU pod on the half-used DGX got %v on NUMA nodes %v, want a pair on one", devsC, numa)
	}
	nic, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "c-nic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := nic.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != nicDriver || len(nic.Status.ReservedFor) != 1 || nic.Status.ReservedFor[0].UID != bound["c"].UID {
		t.Errorf("NIC claim not allocated by kube's DynamicResources for c: %+v", nic.Status)
	}
	return devsA
}

// draGangOnDGX2 adds the DGX dgx-2 and a gang of two 4-GPU pods of the
// profile scheduler (with labels), and checks that the gang goes there
// whole (dgx-1 must be near full), one NUMA node each, both claims
// naming gpusched's GPUs.
func draGangOnDGX2(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler string, labels map[string]string) {
	t.Helper()
	createNode(ctx, t, c, nodeSpec{Name: "dgx-2"})
	publishDGX(ctx, t, c, "dgx-2")
	gang := map[string]string{plugin.DefaultGangLabel: "g", plugin.DefaultGangSizeKey: "2"}
	for k, v := range labels {
		gang[k] = v
	}
	for _, m := range []string{"g-0", "g-1"} {
		createClaim(ctx, t, c, m+"-gpus", gpuClass, 4)
		createDRAPodOf(ctx, t, c, scheduler, m, gang, m+"-gpus")
	}
	bound := waitBound(ctx, t, c, "default", []string{"g-0", "g-1"}, 60*time.Second)
	var numas []int
	for _, m := range []string{"g-0", "g-1"} {
		if bound[m].Spec.NodeName != "dgx-2" {
			t.Errorf("gang member %s on %s, want dgx-2 (dgx-1 is full)", m, bound[m].Spec.NodeName)
		}
		numas = append(numas, numaNodes(checkClaim(ctx, t, c, m+"-gpus", bound[m]))...)
	}
	if slices.Sort(numas); !slices.Equal(numas, []int{0, 1}) {
		t.Errorf("gang members on NUMA nodes %v, want one whole each", numas)
	}
}

// publishDGX publishes node's 8 H100 GPUs as NVIDIA's DRA driver does:
// devices gpu-0..gpu-7 with their index, minor, uuid, productName,
// architecture, compute capability, PCIe root and bus ID, and memory.
// GPUs 0-3 sit under the PCIe roots of NUMA node 0, 4-7 of node 1.
func publishDGX(ctx context.Context, t testing.TB, c kubernetes.Interface, node string) {
	t.Helper()
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	roots := []string{"pci0000:15", "pci0000:37", "pci0000:48", "pci0000:59", "pci0000:97", "pci0000:b7", "pci0000:c8", "pci0000:d9"}
	for i := range 8 {
		idx := int64(i)
		str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
		ver := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{VersionValue: &v} }
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": str("gpu"), "index": {IntValue: &idx}, "minor": {IntValue: &idx},
				"uuid":                            str(fmt.Sprintf("GPU-%08x-0000-0000-0000-%012d", i+1, i)),
				"productName":                     str("NVIDIA H100 80GB HBM3"),
				"brand":                           str("Nvidia"),
				"architecture":                    str("Hopper"),
				"cudaComputeCapability":           ver("9.0.0"),
				"driverVersion":                   ver("580.159.4"),
				"resource.kubernetes.io/pcieRoot": str(roots[i]),
				"resource.kubernetes.io/pciBusID": str(strings.Replace(roots[i], "pci0000:", "0000:", 1)[:7] + ":00.0"),
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}},
		})
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("GPU slice of %s: %v", node, err)
	}
}

// publishNICs publishes n NICs of another driver on node.
func publishNICs(ctx context.Context, t *testing.T, c kubernetes.Interface, node string, n int) {
	t.Helper()
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-nic"},
		Spec: resourceapi.ResourceSliceSpec{Driver: nicDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node + "-nic", ResourceSliceCount: 1}}}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("nic-%d", i)})
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("NIC slice of %s: %v", node, err)
	}
}

// createClaim creates a claim for count devices of class.
func createClaim(ctx context.Context, t testing.TB, c kubernetes.Interface, name, class string, count int) {
	t.Helper()
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count)}}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
}

// createDRAPod creates a scheduler-mode pod with labels whose container
// uses claims.
func createDRAPod(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, labels map[string]string, claims ...string) {
	t.Helper()
	createDRAPodOf(ctx, t, c, schedModeName, name, labels, claims...)
}

// createDRAPodOf creates a pod of the profile scheduler with labels whose
// container uses claims.
func createDRAPodOf(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler, name string, labels map[string]string, claims ...string) {
	t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}, Spec: v1.PodSpec{
		SchedulerName: scheduler,
		Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}},
		TerminationGracePeriodSeconds: new(int64),
	}}
	for _, cl := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: cl, ResourceClaimName: &cl})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: cl})
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
}

// checkClaim checks that claim is allocated on pod's node, reserved for
// pod, and names the GPUs gpusched chose for it (its indices annotation);
// it returns the device names.
func checkClaim(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, pod *v1.Pod) []string {
	t.Helper()
	cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := cl.Status.Allocation
	if a == nil {
		t.Fatalf("claim %s of bound pod %s not allocated: %+v (managed %+v)", name, pod.Name, cl.Status, cl.ManagedFields)
	}
	if len(cl.Status.ReservedFor) != 1 || cl.Status.ReservedFor[0].UID != pod.UID {
		t.Errorf("claim %s reserved for %+v, want %s only", name, cl.Status.ReservedFor, pod.Name)
	}
	if ns := a.NodeSelector; ns == nil || len(ns.NodeSelectorTerms) != 1 || len(ns.NodeSelectorTerms[0].MatchFields) != 1 ||
		!slices.Equal(ns.NodeSelectorTerms[0].MatchFields[0].Values, []string{pod.Spec.NodeName}) {
		t.Errorf("claim %s: node selector %+v, want the pod's node %s", name, a.NodeSelector, pod.Spec.NodeName)
	}
	var devs, chose []string
	for _, r := range a.Devices.Results {
		if r.Driver != gpuDriver || r.Pool != pod.Spec.NodeName {
			t.Errorf("claim %s: device %s/%s/%s", name, r.Driver, r.Pool, r.Device)
		}
		devs = append(devs, r.Device)
	}
	for _, i := range strings.Split(pod.Annotations[indicesKey], ",") {
		chose = append(chose, "gpu-"+i)
	}
	if !slices.Equal(devs, chose) {
		t.Errorf("claim %s names %v; gpusched chose %v (annotation %q)", name, devs, chose, pod.Annotations[indicesKey])
	}
	return devs
}

// numaNodes returns the NUMA nodes of DGX H100 GPU devices (gpu-0..3: 0).
func numaNodes(devs []string) []int {
	var out []int
	for _, d := range devs {
		i, _ := strconv.Atoi(strings.TrimPrefix(d, "gpu-"))
		if !slices.Contains(out, i/4) {
			out = append(out, i/4)
		}
	}
	return out
}
