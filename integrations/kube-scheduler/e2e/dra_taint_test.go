package e2e

import (
	"context"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRADeviceTaintRule: against the real apiserver (which serves
// resource.k8s.io/v1 DeviceTaintRules in 1.37), a DeviceTaintRule an admin
// creates on the GPU a running pod holds taints it NoExecute as if the
// driver had: gpusched reads it through the scheduler's informer and
// recovers the pod's job.
func TestDRADeviceTaintRule(t *testing.T) {
	ctx := context.Background()
	c := oneDGXScheduler(ctx, t)

	createClaim(ctx, t, c, "a-gpus", gpuClass, 1)
	createDRAPod(ctx, t, c, "a", map[string]string{queueLabel: "batch"}, "a-gpus")
	bound := waitBound(ctx, t, c, "default", []string{"a"}, 60*time.Second)
	devs := checkClaim(ctx, t, c, "a-gpus", bound["a"])

	driver, pool := gpuDriver, "dgx-1"
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "broken-gpu"},
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &devs[0]},
			Taint: resourceapi.DeviceTaint{Key: "example.com/broken", Value: "true", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	if _, err := c.ResourceV1().DeviceTaintRules().Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatalf("DeviceTaintRule (is resource.k8s.io/v1 devicetaintrules served?): %v", err)
	}
	if !hasEvent(ctx, t, c, "default", "a", plugin.ReasonRecovery, "") {
		t.Errorf("a on %s, tainted by a DeviceTaintRule: no %s Warning\n%s", devs[0], plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
	}
}

// TestDRATaintRulesRBAC: deploy/rbac.yaml's service account may list and
// watch DeviceTaintRules, as the scheduler's informer does (through
// system:kube-scheduler, which grants it where the DRADeviceTaintRules
// gate is on, the default in 1.37).
func TestDRATaintRulesRBAC(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t, rbacFlags...)
	sa := asServiceAccount(ctx, t, cp)
	if _, err := sa.Client.ResourceV1().DeviceTaintRules().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list DeviceTaintRules as the scheduler's service account: %v", err)
	}
	w, err := sa.Client.ResourceV1().DeviceTaintRules().Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("watch DeviceTaintRules as the scheduler's service account: %v", err)
		return
	}
	w.Stop()
}

// TestDRAMIGDeviceTaint: against the real apiserver, with the H200 MIG
// slices of the capture, a NoExecute DeviceTaintRule on the MIG device a
// running pod holds recovers that pod's job; a 1g.18gb claim whose request
// tolerates the taint is allocated (its allocation, tolerations copied,
// passes the apiserver's validation), one that does not stays unallocated
// while the node has the tainted device.
func TestDRAMIGDeviceTaint(t *testing.T) {
	ctx := context.Background()
	cp, _ := migControlPlane(ctx, t)
	c := cp.Client
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	one := "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'"
	createCELClaim(ctx, t, c, "a", migClass, one, nil)
	createDRAPod(ctx, t, c, "a", batch, "a")
	waitBound(ctx, t, c, "default", []string{"a"}, 60*time.Second)
	got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Status.Allocation == nil {
		t.Fatalf("claim a: %v %+v", err, got.Status)
	}
	dev := got.Status.Allocation.Devices.Results[0].Device
	driver, pool := gpuDriver, got.Status.Allocation.Devices.Results[0].Pool
	rule := &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "broken-mig"},
		Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: &driver, Pool: &pool, Device: &dev},
			Taint: resourceapi.DeviceTaint{Key: "example.com/xid", Value: "48", Effect: resourceapi.DeviceTaintEffectNoExecute}}}
	if _, err := c.ResourceV1().DeviceTaintRules().Create(ctx, rule, metav1.CreateOptions{}); err != nil {
		t.Fatalf("DeviceTaintRule: %v", err)
	}
	if !hasEvent(ctx, t, c, "default", "a", plugin.ReasonRecovery, dev) {
		t.Errorf("a on %s, tainted NoExecute: no %s Warning\n%s", dev, plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
	}

	tol := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "tol", Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: &resourceapi.ExactDeviceRequest{
			DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Selectors:   []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: one}}},
			Tolerations: []resourceapi.DeviceToleration{{Key: "example.com/xid", Operator: resourceapi.DeviceTolerationOpExists}}}}}}}}
	if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, tol, metav1.CreateOptions{}); err != nil {
		t.Fatalf("claim tol: %v", err)
	}
	createDRAPod(ctx, t, c, "tol", batch, "tol")
	waitBound(ctx, t, c, "default", []string{"tol"}, 60*time.Second)
	createCELClaim(ctx, t, c, "plain", migClass, one, nil)
	createDRAPod(ctx, t, c, "plain", batch, "plain")
	time.Sleep(3 * time.Second)
	if cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "plain", metav1.GetOptions{}); err != nil || cl.Status.Allocation != nil {
		t.Errorf("claim plain, not tolerating the taint of a 1g.18gb device of the node: %v, allocated %+v", err, cl.Status.Allocation)
	}
}
