package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	for class, driver := range map[string]string{gpuClass: gpuDriver, nicDriver: nicDriver} {
		dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("device class %s (is resource.k8s.io/v1 served?): %v", class, err)
		}
	}
	publishDGX(ctx, t, c, "dgx-1")
	publishNICs(ctx, t, c, "dgx-1", 2)
	startInProcess(t, cp, placementDRAConfig, app.WithPlugin(plugin.Name, plugin.New))
	const profile = "gpusched"

	createClaim(ctx, t, c, "a-gpus", gpuClass, 1)
	createDRAPodOf(ctx, t, c, profile, "a", nil, "a-gpus")
	bound := waitBound(ctx, t, c, "default", []string{"a"}, 60*time.Second)
	devsA := checkClaim(ctx, t, c, "a-gpus", bound["a"])
	createClaim(ctx, t, c, "b-gpus", gpuClass, 4)
	createDRAPodOf(ctx, t, c, profile, "b", nil, "b-gpus")
	bound = waitBound(ctx, t, c, "default", []string{"b"}, 60*time.Second)
	devsB := checkClaim(ctx, t, c, "b-gpus", bound["b"])
	if numa := numaNodes(devsB); len(numa) != 1 || slices.Contains(numa, numaNodes(devsA)[0]) {
		t.Errorf("b's 4 GPUs %v are on NUMA nodes %v; want the one a (%v) leaves whole", devsB, numa, devsA)
	}

	createClaim(ctx, t, c, "c-gpus", gpuClass, 2)
	createClaim(ctx, t, c, "c-nic", nicDriver, 1)
	createDRAPodOf(ctx, t, c, profile, "c", nil, "c-gpus", "c-nic")
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

	// A second DGX joins; a gang of two 4-GPU pods goes there whole, one
	// NUMA node each.
	createNode(ctx, t, c, nodeSpec{Name: "dgx-2"})
	publishDGX(ctx, t, c, "dgx-2")
	gang := map[string]string{plugin.DefaultGangLabel: "g", plugin.DefaultGangSizeKey: "2"}
	for _, m := range []string{"g-0", "g-1"} {
		createClaim(ctx, t, c, m+"-gpus", gpuClass, 4)
		createDRAPodOf(ctx, t, c, profile, m, gang, m+"-gpus")
	}
	bound = waitBound(ctx, t, c, "default", []string{"g-0", "g-1"}, 60*time.Second)
	var numas []int
	for _, m := range []string{"g-0", "g-1"} {
		if bound[m].Spec.NodeName != "dgx-2" {
			t.Errorf("gang member %s on %s, want dgx-2 (dgx-1 has 1 GPU free)", m, bound[m].Spec.NodeName)
		}
		numas = append(numas, numaNodes(checkClaim(ctx, t, c, m+"-gpus", bound[m]))...)
	}
	if slices.Sort(numas); !slices.Equal(numas, []int{0, 1}) {
		t.Errorf("gang members on NUMA nodes %v, want one whole each", numas)
	}
	devicesOnce(ctx, t, c) // no device in two claims
}
