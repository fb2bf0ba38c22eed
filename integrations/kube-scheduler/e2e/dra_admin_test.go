package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAAdminAccess: a GPU claim with adminAccess (a monitoring pod's,
// in a namespace labelled resource.kubernetes.io/admin-access) is left
// to kube's DynamicResources: on a DGX whose 8 GPUs a pod holds, gpusched
// places the monitoring pod and kube's allocator gives it a GPU in use,
// with admin access; gpusched writes nothing in that claim.
func TestDRAAdminAccess(t *testing.T) {
	ctx := context.Background()
	c := oneDGXScheduler(ctx, t)

	batch := map[string]string{queueLabel: "batch"}
	createClaim(ctx, t, c, "all-gpus", gpuClass, 8)
	createDRAPod(ctx, t, c, "full", batch, "all-gpus")
	bound := waitBound(ctx, t, c, "default", []string{"full"}, 60*time.Second)
	checkClaim(ctx, t, c, "all-gpus", bound["full"])

	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, resourceapi.DRAAdminNamespaceLabelKey)
	if _, err := c.CoreV1().Namespaces().Patch(ctx, "default", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	yes := true
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "mon-gpu", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, AdminAccess: &yes}}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("admin claim (is DRAAdminAccess on?): %v", err)
	}
	createDRAPod(ctx, t, c, "mon", batch, "mon-gpu")
	bound = waitBound(ctx, t, c, "default", []string{"mon"}, 60*time.Second)
	got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "mon-gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := got.Status.Allocation
	if a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].AdminAccess == nil || !*a.Devices.Results[0].AdminAccess ||
		len(got.Status.ReservedFor) != 1 || got.Status.ReservedFor[0].UID != bound["mon"].UID {
		t.Fatalf("admin claim not allocated with admin access for mon: %+v", got.Status)
	}
	if bound["mon"].Annotations[indicesKey] != "" {
		t.Errorf("mon holds GPUs in gpusched's ledger: %q", bound["mon"].Annotations[indicesKey])
	}
	t.Logf("mon got %s (in use by full) with admin access", a.Devices.Results[0].Device)
}

// oneDGXScheduler starts a control plane with one DGX H100 node, dgx-1,
// its GPUs published by the test driver (publishDGX) and the GPU
// DeviceClass, and gpusched in scheduler mode; it returns the client.
func oneDGXScheduler(ctx context.Context, t *testing.T) kubernetes.Interface {
	t.Helper()
	cp := startControlPlane(t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "dgx-1"})
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}}}
	if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("device class %s: %v", gpuClass, err)
	}
	publishDGX(ctx, t, c, "dgx-1")
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	return c
}
