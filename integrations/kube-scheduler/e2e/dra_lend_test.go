package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDRATaintedGPUTolerated: the driver taints gpu-7 of a DGX NoSchedule;
// a pod whose claim for 8 GPUs tolerates the taint gets the whole DGX,
// gpu-7 included, with the toleration in the allocation, and kube binds
// it.
func TestDRATaintedGPUTolerated(t *testing.T) {
	ctx := context.Background()
	c := oneDGXScheduler(ctx, t)
	const key = "example.com/maintenance"
	s, err := c.ResourceV1().ResourceSlices().Get(ctx, "dgx-1-gpu.nvidia.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Spec.Devices {
		if s.Spec.Devices[i].Name == "gpu-7" {
			s.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{{Key: key, Value: "true", Effect: resourceapi.DeviceTaintEffectNoSchedule}}
		}
	}
	if _, err := c.ResourceV1().ResourceSlices().Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("taint gpu-7: %v", err)
	}
	cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "all", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 8,
				Tolerations: []resourceapi.DeviceToleration{{Key: key, Operator: resourceapi.DeviceTolerationOpExists}}}}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // (the taint reaches the scheduler's informer)
	createDRAPod(ctx, t, c, "all", map[string]string{queueLabel: "batch"}, "all")
	bound := waitBound(ctx, t, c, "default", []string{"all"}, 60*time.Second)
	devs := checkClaim(ctx, t, c, "all", bound["all"])
	got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Status.Allocation.Devices.Results {
		if r.Device == "gpu-7" && len(r.Tolerations) != 1 {
			t.Errorf("gpu-7 allocated without the request's toleration: %+v", r)
		}
	}
	if !slices.Contains(devs, "gpu-7") {
		t.Errorf("all got %v", devs)
	}
}
