package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAMIGSeveralGang: a gang of two pods, each with a claim for a
// 2g.35gb and a 1g.18gb, goes whole onto h200-1: gpusched writes both
// claims and plans, kube binds the members together, and the four
// devices sit at legal placements sharing no memory slice
// (checkDRAClaims).
func TestDRAMIGSeveralGang(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	gang := map[string]string{queueLabel: "batch", plugin.DefaultGangLabel: "mg", plugin.DefaultGangSizeKey: "2"}
	names := []string{"mg-0", "mg-1"}
	for _, name := range names {
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
				{Name: "big", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: profileSel("2g.35gb")}},
				{Name: "small", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: profileSel("1g.18gb")}},
			}}}}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", name, err)
		}
		createDRAPod(ctx, t, c, name, gang, name)
	}
	bound := waitBound(ctx, t, c, "default", names, 60*time.Second)
	for _, name := range names {
		got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != 2 || bound[name].Spec.NodeName != "h200-1" {
			t.Fatalf("claim %s: %v %+v (pod on %s)", name, err, got.Status, bound[name].Spec.NodeName)
		}
	}
	checkDRAClaims(ctx, t, c, profiles, map[string]bool{})
}

// profileSel selects the MIG devices of profile p.
func profileSel(p string) []resourceapi.DeviceSelector {
	return []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p)}}}
}
