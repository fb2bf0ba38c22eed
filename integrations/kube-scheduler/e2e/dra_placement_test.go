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

// placementDRAConfig runs one profile, gpusched, in placement mode with
// kube's default plugins (DynamicResources among them), GPUSched's
// PreFilter and PreBind ahead of theirs (docs/dra.md, "Placement mode and
// DRA").
const placementDRAConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: gpusched
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      enabled:
      - name: GPUSched
        weight: 100
    preFilter:
      enabled:
      - name: GPUSched
    preBind:
      enabled:
      - name: GPUSched
    bind:
      enabled:
      - name: GPUSched
  pluginConfig:
  - name: GPUSched
    args:
      policy: topology
      gangTimeoutSeconds: 20
- schedulerName: gpusched-late
  plugins:
    multiPoint:
      enabled:
      - name: GPUSched
        weight: 100
`

// TestDRAPlacement runs gpusched in placement mode (kube's queue decides
// when, gpusched where) against the real apiserver with DRA: the DGX H100
// of TestDRA, published as NVIDIA's driver does, and two NICs of another
// driver. Each GPU claim's allocation names the GPUs gpusched chose (its
// indices annotation): after a 1-GPU pod a 4-GPU pod gets the other NUMA
// node whole, a 2-GPU pod on the half-used DGX a pair on one NUMA node;
// kube's DynamicResources allocates the NIC claim of the same pod; a gang
// of two 4-GPU pods goes whole to a second DGX, one NUMA node each; no
// device is in two claims.
func TestDRAPlacement(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "dgx-1"})
	createDRAClasses(ctx, t, c)
	publishDGX(ctx, t, c, "dgx-1")
	publishNICs(ctx, t, c, "dgx-1", 2)
	t.Run("placed", func(t *testing.T) {
		startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
		draPodsABC(ctx, t, c, "gpusched", nil)
		draGangOnDGX2(ctx, t, c, "gpusched", nil)
		devicesOnce(ctx, t, c) // no device in two claims

		// A profile whose DynamicResources' PreFilter runs first refuses
		// GPU claims, saying how to list GPUSched.
		createClaim(ctx, t, c, "late-gpus", gpuClass, 1)
		createDRAPodOf(ctx, t, c, "gpusched-late", "late", nil, "late-gpus")
		if !hasEvent(ctx, t, c, "default", "late", "FailedScheduling", "preFilter: {enabled: [{name: GPUSched}]}") {
			t.Errorf("pod of a profile with DynamicResources' PreFilter first: no FailedScheduling naming the fix\n%s", describeEvents(ctx, c, "default"))
		}
		if cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "late-gpus", metav1.GetOptions{}); err != nil || cl.Status.Allocation != nil {
			t.Errorf("claim late-gpus of the refused pod: %v, allocation %+v", err, cl.Status.Allocation)
		}
	})
	if t.Failed() {
		return
	}

	// A restarted scheduler holds the GPUs of the bound pods: the one GPU
	// dgx-1 has left goes to a new 1-GPU pod, in no other claim.
	t.Run("restarted", func(t *testing.T) {
		startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
		createClaim(ctx, t, c, "e-gpus", gpuClass, 1)
		createDRAPodOf(ctx, t, c, "gpusched", "e", nil, "e-gpus")
		bound := waitBound(ctx, t, c, "default", []string{"e"}, 60*time.Second)
		if bound["e"].Spec.NodeName != "dgx-1" {
			t.Errorf("e on %s, want dgx-1 (dgx-2 is full)", bound["e"].Spec.NodeName)
		}
		checkClaim(ctx, t, c, "e-gpus", bound["e"])
		devicesOnce(ctx, t, c)
	})
	if t.Failed() {
		return
	}

	// A claim two pods name (dgx-3, the only node with room): allocated
	// once, for s1; s2 goes to its node with a GPU of its own, the claim
	// keeps its devices and is reserved for both.
	t.Run("shared", func(t *testing.T) {
		startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
		draSharedOnDGX3(ctx, t, c, "gpusched", nil)
	})
}

// draSharedOnDGX3 publishes a DGX dgx-3, the only node with room, and
// places pods s1 and s2 of profile scheduler (with labels) naming one
// claim of 2 GPUs, s2 also a claim of 1 of its own: the shared claim is
// allocated once, for s1; s2 goes to its node, the claim keeps its
// devices and is reserved for both; no device is in two claims.
func draSharedOnDGX3(ctx context.Context, t *testing.T, c kubernetes.Interface, scheduler string, labels map[string]string) {
	t.Helper()
	createNode(ctx, t, c, nodeSpec{Name: "dgx-3"})
	publishDGX(ctx, t, c, "dgx-3")
	createClaim(ctx, t, c, "s-gpus", gpuClass, 2)
	createClaim(ctx, t, c, "s2-own", gpuClass, 1)
	createDRAPodOf(ctx, t, c, scheduler, "s1", labels, "s-gpus")
	waitBound(ctx, t, c, "default", []string{"s1"}, 60*time.Second)
	first, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "s-gpus", metav1.GetOptions{})
	if err != nil || first.Status.Allocation == nil {
		t.Fatalf("claim s-gpus of bound s1: %v %+v", err, first.Status)
	}
	createDRAPodOf(ctx, t, c, scheduler, "s2", labels, "s-gpus", "s2-own")
	bound := waitBound(ctx, t, c, "default", []string{"s1", "s2"}, 60*time.Second)
	cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "s-gpus", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameResults(first.Status.Allocation, cl.Status.Allocation) {
		t.Errorf("claim s-gpus allocated again: %+v, first %+v", cl.Status.Allocation.Devices.Results, first.Status.Allocation.Devices.Results)
	}
	for _, p := range []string{"s1", "s2"} {
		if bound[p].Spec.NodeName != "dgx-3" {
			t.Errorf("%s on %s, claim s-gpus on dgx-3", p, bound[p].Spec.NodeName)
		}
		if !slices.ContainsFunc(cl.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == bound[p].UID }) {
			t.Errorf("claim s-gpus not reserved for %s: %+v", p, cl.Status.ReservedFor)
		}
	}
	checkClaim(ctx, t, c, "s2-own", bound["s2"])
	devicesOnce(ctx, t, c)
}

// sameResults reports whether two allocations name the same devices.
func sameResults(a, b *resourceapi.AllocationResult) bool {
	return a != nil && b != nil && slices.EqualFunc(a.Devices.Results, b.Devices.Results, func(x, y resourceapi.DeviceRequestAllocationResult) bool {
		return x.Request == y.Request && x.Driver == y.Driver && x.Pool == y.Pool && x.Device == y.Device
	})
}

// TestDRAPlacementMIGSeveral: in placement mode a pod asks for three MIG
// devices (two 2g.35gb in one claim's request, a 3g.71gb in a second
// claim) of the H200 node of TestDRAMIG; gpusched allocates them all on
// h200-1, each of its request's profile, at legal placements sharing no
// memory slice (checkDRAClaims), and kube's DynamicResources lets the pod
// through.
func TestDRAPlacementMIGSeveral(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
	for name, r := range map[string]resourceapi.ExactDeviceRequest{
		"multi":   {DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 2, Selectors: profileSel("2g.35gb")},
		"multi-b": {DeviceClassName: migClass, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1, Selectors: profileSel("3g.71gb")},
	} {
		cl := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "r", Exactly: &r}}}}}
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, cl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("claim %s: %v", name, err)
		}
	}
	createDRAPodOf(ctx, t, c, "gpusched", "multi", nil, "multi", "multi-b")
	waitBound(ctx, t, c, "default", []string{"multi"}, 60*time.Second)
	for name, want := range map[string]struct {
		n   int
		dev string
	}{"multi": {2, "-mig-2g35gb-"}, "multi-b": {1, "-mig-3g71gb-"}} {
		got, err := c.ResourceV1().ResourceClaims("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != want.n {
			t.Fatalf("claim %s: %v %+v", name, err, got.Status)
		}
		for _, r := range got.Status.Allocation.Devices.Results {
			if !strings.Contains(r.Device, want.dev) || r.Pool != "h200-1" {
				t.Errorf("claim %s: %s of %s, want a device %s… of h200-1", name, r.Device, r.Pool, want.dev)
			}
		}
	}
	checkDRAClaims(ctx, t, c, profiles, map[string]bool{"multi": true, "multi-b": true})
}

// TestDRAPlacementGB200: in placement mode, ComputeDomain gangs on two
// GB200 racks of 4 trays (TestDRAGB200's slices): a gang of 3 pods takes
// 3 trays of one rack, a gang of 4 then fits only the other rack and
// lands there whole; each member's channel claim is allocated by
// gpusched (channel-0 of its node) and reserved for it by kube's
// DynamicResources (waitCDGang). No device is in two claims.
func TestDRAPlacementGB200(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	c := cp.Client
	publishGB200Racks(ctx, t, c, 4)
	startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
	small := createCDGangOf(ctx, t, c, "gpusched", "small", 3, nil, false)
	rack := waitCDGang(ctx, t, c, small, 90*time.Second)
	big := createCDGangOf(ctx, t, c, "gpusched", "big", 4, nil, false)
	if waitCDGang(ctx, t, c, big, 90*time.Second) == rack {
		t.Errorf("the 4-tray gang shares rack %s with the 3-tray gang (4 trays a rack)", rack)
	}
	if n := devicesOnce(ctx, t, c); n != (3+4)*5 {
		t.Errorf("%d devices allocated, want %d (4 GPUs and a channel per pod)", n, (3+4)*5)
	}
}

// TestDRAPlacementMIG runs placement mode against the real apiserver with
// the H200 node of TestDRAMIG (dynamic MIG with the profiles and
// placements of the real h200-sxm-1 capture) and a node of two GPUs that
// allow multiple allocations: claims for one MIG device get a partition
// device of their profile on the GPU gpusched chose, claims for 30Gi of a
// GPU get shares, a NIC claim of a MIG pod is kube's; every claim is
// legal (checkDRAClaims: placements of the profile, no memory slice or
// capacity over-committed, no device in two claims). A restarted
// scheduler reads the partitions back and places new MIG pods around
// them.
func TestDRAPlacementMIG(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "share-1"})
	publishShared(ctx, t, c, "share-1", 2)
	publishNICs(ctx, t, c, "h200-1", 1)
	createClaim(ctx, t, c, "m-nic", nicDriver, 1)
	// place creates a pod of profile gpusched with a claim for one device
	// of class (CEL expr, capacity) and the extra claims, and waits until
	// it is bound; it returns the device its claim names and the GPU
	// gpusched chose.
	place := func(t *testing.T, pod, class, expr string, capacity map[resourceapi.QualifiedName]resource.Quantity, extra ...string) (string, string) {
		t.Helper()
		createCELClaim(ctx, t, c, pod, class, expr, capacity)
		createDRAPodOf(ctx, t, c, "gpusched", pod, nil, append([]string{pod}, extra...)...)
		bound := waitBound(ctx, t, c, "default", []string{pod}, 60*time.Second)
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, pod, metav1.GetOptions{})
		if err != nil || cl.Status.Allocation == nil {
			t.Fatalf("claim %s of bound pod: %v %+v", pod, err, cl)
		}
		return cl.Status.Allocation.Devices.Results[0].Device, bound[pod].Annotations[indicesKey]
	}
	profile := func(p string) string { return fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", p) }
	t.Run("placed", func(t *testing.T) {
		startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
		for _, m := range [][2]string{{"m-4g", "4g.71gb"}, {"m-3g", "3g.71gb"}, {"m-me", "1g.18gb+me"}, {"m-1g", "1g.18gb"}} {
			var extra []string
			if m[0] == "m-1g" {
				extra = []string{"m-nic"}
			}
			if dev, gpu := place(t, m[0], migClass, profile(m[1]), nil, extra...); !strings.HasPrefix(dev, "gpu-"+gpu+"-mig-") {
				t.Errorf("pod %s: claim names %s, gpusched chose a %s on GPU %q", m[0], dev, m[1], gpu)
			}
		}
		thirty := map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("30Gi")}
		for _, s := range []string{"s-1", "s-2", "s-3"} {
			if dev, gpu := place(t, s, gpuClass, "", thirty); dev != "gpu-"+gpu {
				t.Errorf("share %s: claim names %s, gpusched chose GPU %q", s, dev, gpu)
			}
		}
		checkDRAClaims(ctx, t, c, profiles, map[string]bool{"m-nic": true})
	})
	if t.Failed() {
		return
	}
	t.Run("restarted", func(t *testing.T) {
		startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
		for _, m := range [][2]string{{"r-2g", "2g.35gb"}, {"r-1g", "1g.35gb"}} {
			place(t, m[0], migClass, profile(m[1]), nil)
		}
		checkDRAClaims(ctx, t, c, profiles, nil)
	})
}
