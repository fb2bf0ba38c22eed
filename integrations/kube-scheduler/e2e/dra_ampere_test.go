package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAAmpereMIGOnly: two A30 in MIG mode under NVIDIA's driver with
// dynamic MIG, which publishes them through their counter sets and MIG
// devices only (no GPU device). gpusched places a 2g.12gb and two
// 1g.6gb+me (one per GPU) legally, no counter over-consumed; a whole-GPU
// pod waits with gpusched's reason.
func TestDRAAmpereMIGOnly(t *testing.T) {
	ctx := context.Background()
	cp, c := indepControlPlane(ctx, t)
	ss := indep3Slices("a30-m", "NVIDIA A30", "Ampere", "8.0.0", 24576, 2, true,
		func(int) int64 { return 0 }, func(int) string { return "pci0000:3a" })
	createNode(ctx, t, c, nodeSpec{Name: "a30-m"})
	for _, x := range ss {
		x.Spec.Devices = slices.DeleteFunc(x.Spec.Devices, func(d resourceapi.Device) bool { return !strings.Contains(d.Name, "-mig-") })
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, x, metav1.CreateOptions{}); err != nil {
			t.Fatalf("slice %s: %v", x.Name, err)
		}
	}
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	run := func(pod, class, expr string) {
		t.Helper()
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}
		if expr != "" {
			e.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}}
		}
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: e}}}}}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", pod, err)
		}
		createDRAPod(ctx, t, c, pod, batch, pod)
	}
	profile := func(p string) string { return fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p) }
	run("two", plugin.DefaultDRAMIGDeviceClass, profile("2g.12gb"))
	waitBound(ctx, t, c, "default", []string{"two"}, 60*time.Second)
	run("me1", plugin.DefaultDRAMIGDeviceClass, profile("1g.6gb+me"))
	waitBound(ctx, t, c, "default", []string{"me1"}, 60*time.Second)
	run("me2", plugin.DefaultDRAMIGDeviceClass, profile("1g.6gb+me"))
	run("whole", gpuClass, "")
	waitBound(ctx, t, c, "default", []string{"me2"}, 60*time.Second)
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, "default", "whole"), "gpusched"), nil
	}); err != nil {
		t.Errorf("pod whole: condition %q, want it waiting with gpusched's reason", podCondition(ctx, c, "default", "whole"))
	}
	var profiles []indepMIGProfile
	for _, p := range indep3A30 {
		profiles = append(profiles, p.indepMIGProfile)
	}
	got := indepChecked(ctx, t, c, profiles)
	me1, me2 := got["me1"], got["me2"]
	if len(me1) != 1 || len(me2) != 1 || strings.Split(me1[0].name, "-mig")[0] == strings.Split(me2[0].name, "-mig")[0] {
		t.Errorf("me1 %+v, me2 %+v: want one per GPU", me1, me2)
	}
	if len(got["two"]) != 1 || len(got["whole"]) != 0 {
		t.Errorf("two %+v, whole %+v", got["two"], got["whole"])
	}
}
