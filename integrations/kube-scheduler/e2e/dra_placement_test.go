package e2e

import (
	"context"
	"testing"
	"time"

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
}
