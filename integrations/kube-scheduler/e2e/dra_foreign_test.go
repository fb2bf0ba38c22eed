package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAForeignClaims (issue 27: "the two never hand out the same
// device"): one kube-scheduler runs gpusched's profile and
// default-scheduler, whose DynamicResources plugin allocates the GPU
// claim of its own pod on the DGX. gpusched's pods never get those
// GPUs: an 8-GPU pod waits, a 6-GPU pod gets the six others; no device
// is in two claims.
func TestDRAForeignClaims(t *testing.T) {
	ctx := context.Background()
	cp, c := dgxDRACluster(ctx, t)
	startInProcess(t, cp, schedModeConfig+"- schedulerName: default-scheduler\n", app.WithPlugin(plugin.Name, plugin.New))

	createClaim(ctx, t, c, "kube2", gpuClass, 2)
	createDRAPodOf(ctx, t, c, "default-scheduler", "kube2", nil, "kube2")
	waitBound(ctx, t, c, "default", []string{"kube2"}, 60*time.Second)
	batch := map[string]string{queueLabel: "batch"}
	createClaim(ctx, t, c, "eight", gpuClass, 8)
	createDRAPod(ctx, t, c, "eight", batch, "eight")
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, "default", "eight"), "gpusched"), nil
	}); err != nil {
		t.Errorf("pod eight: condition %q, want it waiting with gpusched's reason", podCondition(ctx, c, "default", "eight"))
	}
	createClaim(ctx, t, c, "six", gpuClass, 6)
	createDRAPod(ctx, t, c, "six", batch, "six")
	bound := waitBound(ctx, t, c, "default", []string{"six"}, 60*time.Second)
	six := checkClaim(ctx, t, c, "six", bound["six"])
	kube, err := c.ResourceV1().ResourceClaims("default").Get(ctx, "kube2", metav1.GetOptions{})
	if err != nil || kube.Status.Allocation == nil {
		t.Fatalf("claim kube2: %v, %+v", err, kube)
	}
	for _, r := range kube.Status.Allocation.Devices.Results {
		if slices.Contains(six, r.Device) {
			t.Errorf("six got %v, with kube2's %s", six, r.Device)
		}
	}
	time.Sleep(2 * time.Second) // (a wrong binding of eight would show by now)
	devicesOnce(ctx, t, c)
}

// dgxDRACluster starts a control plane with gpusched's queues, the DRA
// device classes and one DGX H100, dgx-1, whose GPUs the driver
// publishes.
func dgxDRACluster(ctx context.Context, t *testing.T) (*controlPlane, kubernetes.Interface) {
	t.Helper()
	cp := startControlPlane(t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "dgx-1"})
	createNamespace(ctx, t, c, systemNS)
	createQueueConfigMap(ctx, t, c, queuesYAML)
	createDRAClasses(ctx, t, c)
	publishDGX(ctx, t, c, "dgx-1")
	return cp, c
}
