package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

const (
	channelDriver = plugin.DefaultDRAChannelDriver
	channelClass  = plugin.DefaultDRAChannelClass
)

// TestDRAGB200 runs gpusched in scheduler mode against the real apiserver
// with two GB200 NVL72 racks (18 trays of 4 GPUs each, one NVLink clique
// per rack) published as NVIDIA's DRA driver publishes them: the GPUs
// (gpu.nvidia.com, with their cliqueId) and each tray's ComputeDomain
// devices (compute-domain.nvidia.com: channel-0, daemon-0). Pods claim a
// ComputeDomain's IMEX channel through claims made from the
// ResourceClaimTemplate NVIDIA's ComputeDomain controller creates. A
// 4-pod ComputeDomain gang takes 4 trays of one rack; a 64-GPU gang (16
// pods × 4 GPUs) then fits only the other rack and lands there whole,
// each member's GPU claim and channel claim allocated by gpusched
// (channel-0 of its node). No device is in two claims. A scheduler
// started afresh reads the allocations back: it rewrites no claim and
// places the next gang on the trays left.
func TestDRAGB200(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	publishGB200Racks(ctx, t, c, 18)
	batch := map[string]string{queueLabel: "batch"}

	var small, big, last []string
	t.Run("place", func(t *testing.T) {
		startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
		small = createCDGang(ctx, t, c, "small", 4, batch, false)
		waitCDGang(ctx, t, c, small, 90*time.Second)
		big = createCDGang(ctx, t, c, "big", 16, batch, false)
		racks := waitCDGang(ctx, t, c, big, 180*time.Second)
		if racks == waitCDGang(ctx, t, c, small, time.Second) {
			t.Errorf("the 16-tray gang shares rack %s with the 4-tray gang (18 trays a rack)", racks)
		}
	})
	if t.Failed() {
		return
	}
	before := claimVersions(ctx, t, c)
	t.Run("restart", func(t *testing.T) {
		startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
		last = createCDGang(ctx, t, c, "last", 2, batch, true)
		waitCDGang(ctx, t, c, last, 90*time.Second)
	})
	after := claimVersions(ctx, t, c)
	for k, rv := range before {
		if after[k] != rv {
			t.Errorf("claim %s rewritten by the restarted scheduler", k)
		}
	}

	if n := devicesOnce(ctx, t, c); n != (4+16+2)*5 {
		t.Errorf("%d devices allocated, want %d (4 GPUs and a channel per pod)", n, (4+16+2)*5)
	}
}

// publishGB200Racks creates the device classes of GPUs and IMEX channels
// and two GB200 NVL72 racks of trays compute trays each (gb-r1-t01 …,
// one NVLink clique per rack), published as NVIDIA's drivers do.
func publishGB200Racks(ctx context.Context, t *testing.T, c kubernetes.Interface, trays int) {
	t.Helper()
	for class, cel := range map[string]string{
		gpuClass: fmt.Sprintf("device.driver == %q", gpuDriver),
		// NVIDIA's compute-domain-default-channel.nvidia.com.
		channelClass: "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0",
	} {
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: cel}}}}}
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("device class %s: %v", class, err)
		}
	}
	for r := 1; r <= 2; r++ {
		for i := 1; i <= trays; i++ {
			name := fmt.Sprintf("gb-r%d-t%02d", r, i)
			createNode(ctx, t, c, nodeSpec{Name: name, CPU: "144", Memory: "900Gi"})
			publishGB200Tray(ctx, t, c, name, fmt.Sprintf("8c3f1a52-7d2e-4b6a-9f10-0000000000%02d.%d", r, r))
		}
	}
}

// publishGB200Tray publishes one GB200 compute tray as NVIDIA's DRA
// drivers do: 4 GPUs (gpu.nvidia.com) with index, minor, uuid,
// productName, architecture and the rack's cliqueId, and the tray's
// ComputeDomain devices (compute-domain.nvidia.com): channel-0 and
// daemon-0 with their type and id.
func publishGB200Tray(ctx context.Context, t *testing.T, c kubernetes.Interface, node, clique string) {
	t.Helper()
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	gpus := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: gpuDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := range 4 {
		idx := int64(i)
		gpus.Spec.Devices = append(gpus.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"type": str("gpu"), "index": {IntValue: &idx}, "minor": {IntValue: &idx},
				"uuid":        str(fmt.Sprintf("GPU-%s-%d", node, i)),
				"productName": str("NVIDIA GB200"), "architecture": str("Blackwell"), "brand": str("Nvidia"),
				"cliqueId": str(clique),
			}})
	}
	cd := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-compute-domain.nvidia.com"},
		Spec: resourceapi.ResourceSliceSpec{Driver: channelDriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for _, typ := range []string{"channel", "daemon"} {
		id := int64(0)
		cd.Spec.Devices = append(cd.Spec.Devices, resourceapi.Device{Name: typ + "-0",
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str(typ), "id": {IntValue: &id}}})
	}
	for _, s := range []*resourceapi.ResourceSlice{gpus, cd} {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("slice %s: %v", s.Name, err)
		}
	}
}

// createCDGang creates a ComputeDomain's workload ResourceClaimTemplate
// as NVIDIA's controller does, and a gang of n pods, each with a claim of
// 4 GPUs and a claim of that template's spec; it returns the pods' names.
// With templates, the pods name the templates (a 4-GPU one and the
// ComputeDomain's) and the test does what kube-controller-manager's
// resourceclaim controller does: it makes each pod's claims, owned by the
// pod, and records them in the pod's status.resourceClaimStatuses.
// Otherwise the pods name claims made beforehand.
func createCDGang(ctx context.Context, t *testing.T, c kubernetes.Interface, gang string, n int, labels map[string]string, templates bool) []string {
	t.Helper()
	return createCDGangOf(ctx, t, c, schedModeName, gang, n, labels, templates)
}

// createCDGangOf is createCDGang for the profile scheduler (its named
// claims; templates: scheduler mode's only).
func createCDGangOf(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler, gang string, n int, labels map[string]string, templates bool) []string {
	t.Helper()
	domainUID := "00000000-0000-4000-8000-" + fmt.Sprintf("%012x", len(gang)*1000+n)
	spec := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
		Requests: []resourceapi.DeviceRequest{{Name: "channel", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: channelClass}}},
		Config: []resourceapi.DeviceClaimConfiguration{{Requests: []string{"channel"}, DeviceConfiguration: resourceapi.DeviceConfiguration{
			Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: channelDriver, Parameters: runtime.RawExtension{Raw: []byte(
				`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` + domainUID + `","allocationMode":"Single"}`)}}}}},
	}}
	rct := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: gang + "-channel", Namespace: "default", Labels: map[string]string{
		"resource.nvidia.com/computeDomain": domainUID, "resource.nvidia.com/computeDomainTarget": "Workload"}},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: spec}}
	if _, err := c.ResourceV1().ResourceClaimTemplates("default").Create(ctx, rct, metav1.CreateOptions{}); err != nil {
		t.Fatalf("template %s: %v", rct.Name, err)
	}
	l := map[string]string{plugin.DefaultGangLabel: gang, plugin.DefaultGangSizeKey: fmt.Sprint(n)}
	for k, v := range labels {
		l[k] = v
	}
	var names []string
	for i := range n {
		m := fmt.Sprintf("%s-%d", gang, i)
		names = append(names, m)
		if templates {
			createTemplatePod(ctx, t, c, m, l, spec, map[string]string{"gpus": gang + "-gpus", "channel": gang + "-channel"})
			continue
		}
		createClaim(ctx, t, c, m+"-gpus", gpuClass, 4)
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: m + "-channel", Namespace: "default"}, Spec: *spec.DeepCopy()}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", cl.Name, err)
		}
		createDRAPodOf(ctx, t, c, scheduler, m, l, m+"-gpus", m+"-channel")
	}
	return names
}

// createTemplatePod creates pod name whose claims "gpus" (4 GPUs) and
// "channel" (of the ComputeDomain's template, channel its spec) name the
// templates, then makes the claims from them as kube-controller-manager
// does: "<pod>-<claim>", controlled by the pod, recorded in the pod's
// status.
func createTemplatePod(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, labels map[string]string, channel resourceapi.ResourceClaimSpec, templates map[string]string) {
	t.Helper()
	gpus := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "gpus",
		Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 4}}}}}
	if _, err := c.ResourceV1().ResourceClaimTemplates("default").Get(ctx, templates["gpus"], metav1.GetOptions{}); err != nil {
		rct := &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: templates["gpus"], Namespace: "default"}, Spec: resourceapi.ResourceClaimTemplateSpec{Spec: gpus}}
		if _, err := c.ResourceV1().ResourceClaimTemplates("default").Create(ctx, rct, metav1.CreateOptions{}); err != nil {
			t.Fatalf("template %s: %v", rct.Name, err)
		}
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels}, Spec: v1.PodSpec{
		SchedulerName: schedModeName,
		Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}, Claims: []v1.ResourceClaim{{Name: "gpus"}, {Name: "channel"}}}}},
		TerminationGracePeriodSeconds: new(int64),
	}}
	for _, k := range []string{"gpus", "channel"} {
		tmpl := templates[k]
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: k, ResourceClaimTemplateName: &tmpl})
	}
	p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	var statuses []v1.PodResourceClaimStatus
	for k, spec := range map[string]resourceapi.ResourceClaimSpec{"gpus": gpus, "channel": channel} {
		made := name + "-" + k
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: made, Namespace: "default",
			Annotations:     map[string]string{"resource.kubernetes.io/pod-claim-name": k},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: p.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}},
			Spec: *spec.DeepCopy()}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", made, err)
		}
		statuses = append(statuses, v1.PodResourceClaimStatus{Name: k, ResourceClaimName: &made})
	}
	// gpusched may have written the pod meanwhile (its pending condition).
	if err := updatePodStatus(ctx, c, "default", name, func(p *v1.Pod) { p.Status.ResourceClaimStatuses = statuses }); err != nil {
		t.Fatalf("pod %s status: %v", name, err)
	}
}

// waitCDGang waits until the gang's pods are bound and checks them: all
// in one rack, each GPU claim naming the GPUs gpusched chose (checkClaim),
// each channel claim channel-0 of the pod's node reserved for it. It
// returns the rack ("gb-r1").
func waitCDGang(ctx context.Context, t *testing.T, c kubernetes.Interface, pods []string, timeout time.Duration) string {
	t.Helper()
	bound := waitBound(ctx, t, c, "default", pods, timeout)
	racks := map[string]bool{}
	rack := ""
	for _, m := range pods {
		p := bound[m]
		checkClaim(ctx, t, c, m+"-gpus", p)
		rack = p.Spec.NodeName[:len("gb-r1")]
		racks[rack] = true
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, m+"-channel", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := cl.Status.Allocation
		if a == nil || len(a.Devices.Results) != 1 || len(cl.Status.ReservedFor) != 1 || cl.Status.ReservedFor[0].UID != p.UID {
			t.Fatalf("channel claim of %s not allocated and reserved for it: %+v", m, cl.Status)
		}
		if r := a.Devices.Results[0]; r.Driver != channelDriver || r.Pool != p.Spec.NodeName || r.Device != "channel-0" || r.Request != "channel" {
			t.Errorf("channel claim of %s on %s: %+v", m, p.Spec.NodeName, r)
		}
	}
	if len(racks) != 1 {
		var on []string
		for _, m := range pods {
			on = append(on, bound[m].Spec.NodeName)
		}
		t.Errorf("gang %s spans racks: %s", strings.Split(pods[0], "-")[0], strings.Join(on, " "))
	}
	return rack
}

// claimVersions returns each claim's resourceVersion.
func claimVersions(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	claims, err := c.ResourceV1().ResourceClaims("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cl := range claims.Items {
		out[cl.Name] = cl.ResourceVersion
	}
	return out
}

// devicesOnce checks that no device is in two claims and returns how many
// devices the claims' allocations name.
func devicesOnce(ctx context.Context, t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	claims, err := c.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, cl := range claims.Items {
		if cl.Status.Allocation == nil {
			continue
		}
		for _, r := range cl.Status.Allocation.Devices.Results {
			k := r.Driver + "/" + r.Pool + "/" + r.Device
			if o, dup := owner[k]; dup {
				t.Errorf("device %s in claims %s and %s", k, o, cl.Name)
			}
			owner[k] = cl.Name
		}
	}
	return len(owner)
}
