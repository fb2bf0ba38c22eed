package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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

// TestDRA16GPUAndShares (issue 27) runs gpusched in scheduler mode
// against the real apiserver with DRA. A 16-GPU node (HGX-2 style, 8 GPUs
// per NUMA node) is published by names only (gpu-0..gpu-15, no index or
// minor attribute, listed in text order: gpu-10 before gpu-2): an 8-GPU
// pod gets one NUMA node whole, a 6-GPU pod and a 2-GPU pod the other,
// and every claim names exactly the GPUs of gpusched's indices annotation
// (GPU N is gpu-N). Then two H100s that allow multiple allocations (80Gi
// each): a pod with a request of count 2 for 30Gi shares and a pod with
// two share requests (20Gi, 40Gi) are placed, each share a result with a
// shareID of its own, no GPU's 80Gi over-committed; a pod of two 60Gi
// shares waits.
func TestDRA16GPUAndShares(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "hgx-1"})
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	createDRAClasses(ctx, t, c)
	publishHGX16(ctx, t, c, "hgx-1")
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}

	numa := func(devs []string) []int {
		var out []int
		for _, d := range devs {
			i, _ := strconv.Atoi(strings.TrimPrefix(d, "gpu-"))
			if !slices.Contains(out, i/8) {
				out = append(out, i/8)
			}
		}
		return out
	}
	var first []int
	for _, p := range []struct {
		name string
		gpus int
	}{{"h8", 8}, {"h6", 6}, {"h2", 2}} {
		createClaim(ctx, t, c, p.name, gpuClass, p.gpus)
		createDRAPod(ctx, t, c, p.name, batch, p.name)
		bound := waitBound(ctx, t, c, "default", []string{p.name}, 60*time.Second)
		devs := checkClaim(ctx, t, c, p.name, bound[p.name]) // (the claim names gpu-N for each index N gpusched chose)
		n := numa(devs)
		t.Logf("%s: %v (NUMA %v)", p.name, devs, n)
		switch {
		case len(n) != 1:
			t.Errorf("%s: %v span NUMA nodes %v", p.name, devs, n)
		case p.name == "h8":
			first = n
		case n[0] == first[0]:
			t.Errorf("%s: %v on NUMA node %d, which h8 fills", p.name, devs, n[0])
		}
	}

	createNode(ctx, t, c, nodeSpec{Name: "share-1"})
	publishShared(ctx, t, c, "share-1", 2)
	createSharesClaim(ctx, t, c, "count2", 2, "30Gi")
	createSharesClaim(ctx, t, c, "tworeq", 1, "20Gi", "40Gi")
	createSharesClaim(ctx, t, c, "big", 2, "60Gi")
	createDRAPod(ctx, t, c, "s-count2", batch, "count2")
	waitBound(ctx, t, c, "default", []string{"s-count2"}, 60*time.Second)
	createDRAPod(ctx, t, c, "s-tworeq", batch, "tworeq")
	waitBound(ctx, t, c, "default", []string{"s-tworeq"}, 60*time.Second)
	createDRAPod(ctx, t, c, "s-big", batch, "big")
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, "default", "s-big"), "gpusched"), nil
	}); err != nil {
		t.Errorf("s-big: condition %q, want it waiting with gpusched's reason", podCondition(ctx, c, "default", "s-big"))
	}
	time.Sleep(3 * time.Second) // (a wrong binding would show by now)
	for _, name := range []string{"count2", "tworeq"} {
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || cl.Status.Allocation == nil || len(cl.Status.Allocation.Devices.Results) != 2 {
			t.Fatalf("claim %s: %v %+v", name, err, cl.Status)
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			if r.ShareID == nil {
				t.Errorf("claim %s: %s on %s without a shareID", name, r.Request, r.Device)
				continue
			}
			m := r.ConsumedCapacity["memory"]
			t.Logf("claim %s: %s on %s, shareID %s, %s", name, r.Request, r.Device, *r.ShareID, m.String())
		}
	}
	checkDRAClaims(ctx, t, c, nil, map[string]bool{"count2": true, "tworeq": true, "big": false})
}

// publishHGX16 publishes a 16-GPU node's GPUs by names only, in text
// order, with their NUMA node (8 per node) and PCIe root (2 per root).
func publishHGX16(ctx context.Context, t *testing.T, c kubernetes.Interface, node string) {
	t.Helper()
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node, Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	for i := range 16 {
		n := int64(i / 8)
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str("gpu"), "productName": str("NVIDIA H100 80GB HBM3"),
				"uuid": str(fmt.Sprintf("GPU-%08x-0000-0000-0000-%012d", i+1, i)), "resource.kubernetes.io/numaNode": {IntValue: &n},
				"resource.kubernetes.io/pcieRoot": str(fmt.Sprintf("pci0000:%02x", 0x10*(i/2+1)))},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}}})
	}
	slices.SortFunc(s.Spec.Devices, func(a, b resourceapi.Device) int { return strings.Compare(a.Name, b.Name) })
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("GPU slice of %s: %v", node, err)
	}
}

// createSharesClaim creates a claim with one request per mem, each of
// count shares of a GPU with that much memory.
func createSharesClaim(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, count int, mems ...string) {
	t.Helper()
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	for i, m := range mems {
		cl.Spec.Devices.Requests = append(cl.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i),
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count),
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(m)}}}})
	}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim %s: %v", name, err)
	}
}

// TestDRAGangSharedClaim (issue 27): a gang of three pods that all name
// one ResourceClaim of 2 GPUs, each with a 1-GPU claim of its own, on two
// DGX H100s, one with 3 GPUs taken: the claim is allocated once, reserved
// for all three (kube's DynamicResources adds the followers), and the
// whole gang runs on the node of its devices, no device in two claims.
func TestDRAGangSharedClaim(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	createDRAClasses(ctx, t, c)
	for _, n := range []string{"dgx-1", "dgx-2"} {
		createNode(ctx, t, c, nodeSpec{Name: n})
		publishDGX(ctx, t, c, n)
	}
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	createClaim(ctx, t, c, "busy", gpuClass, 3)
	createDRAPod(ctx, t, c, "busy", batch, "busy")
	waitBound(ctx, t, c, "default", []string{"busy"}, 60*time.Second)

	gang := map[string]string{queueLabel: "batch", plugin.DefaultGangLabel: "g", plugin.DefaultGangSizeKey: "3"}
	createClaim(ctx, t, c, "g-shared", gpuClass, 2)
	members := []string{"g-0", "g-1", "g-2"}
	for _, m := range members {
		createClaim(ctx, t, c, m+"-own", gpuClass, 1)
		createDRAPod(ctx, t, c, m, gang, "g-shared", m+"-own")
	}
	bound := waitBound(ctx, t, c, "default", members, 90*time.Second)
	cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "g-shared", metav1.GetOptions{})
	if err != nil || cl.Status.Allocation == nil || len(cl.Status.Allocation.Devices.Results) != 2 {
		t.Fatalf("claim g-shared: %v %+v", err, cl.Status)
	}
	on := cl.Status.Allocation.Devices.Results[0].Pool
	for _, m := range members {
		if bound[m].Spec.NodeName != on {
			t.Errorf("%s on %s, claim g-shared on %s", m, bound[m].Spec.NodeName, on)
		}
		if !slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == bound[m].UID }) {
			t.Errorf("claim g-shared not reserved for %s: %+v", m, cl.Status.ReservedFor)
		}
	}
	t.Logf("gang on %s; g-shared names %s and %s, reserved for %d pods", on, cl.Status.Allocation.Devices.Results[0].Device, cl.Status.Allocation.Devices.Results[1].Device, len(cl.Status.ReservedFor))
	devicesOnce(ctx, t, c)
}
