package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAStaticMIG runs gpusched in scheduler mode with DRA against the
// real apiserver. A test driver publishes h200s-1 as NVIDIA's driver does
// without its DynamicMIG feature gate (its default): GPU 0 whole, GPUs 1
// and 2 in MIG mode with mig-parted layouts of the real h200-sxm-1
// capture's profiles (GPU 1: 2g.35gb@0, 1g.18gb+me@2, 1g.18gb@3,
// 3g.71gb@4; GPU 2: seven 1g.18gb), only their MIG devices, with
// memorySlice capacities and no counters. Each MIG claim gets the free
// device of its profile gpusched picks (packed on GPU 1 before GPU 2), a
// whole-GPU claim the whole GPU and a second one nothing (a GPU in MIG
// mode is never given whole), a second 1g.18gb+me and a profile no device
// has wait; no device is in two claims, every device at a legal placement
// of its profile. A restarted scheduler reads the devices back from the
// claims and gives a new pod another one.
func TestDRAStaticMIG(t *testing.T) {
	ctx := context.Background()
	profiles, err := nvdra.ReadCapture(h200Capture)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t)
	c := cp.Client
	createGPUClasses(ctx, t, c)
	createNode(ctx, t, c, nodeSpec{Name: "h200s-1"})
	s, err := nvdra.StaticSlice("h200s-1", "NVIDIA H200", 1, profiles,
		[]string{"2g.35gb@0", "1g.18gb+me@2", "1g.18gb@3", "3g.71gb@4"},
		[]string{"1g.18gb@0", "1g.18gb@1", "1g.18gb@2", "1g.18gb@3", "1g.18gb@4", "1g.18gb@5", "1g.18gb@6"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("static MIG slice: %v", err)
	}
	waiting := map[string]bool{"s-me2": false, "s-4g": false, "w2": false}
	if !t.Run("first", func(t *testing.T) { staticFirst(ctx, t, c, cp, profiles, waiting) }) {
		return
	}
	t.Run("restarted", func(t *testing.T) {
		startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
		createCELClaim(ctx, t, c, "r-1g", migClass, "device.attributes['gpu.nvidia.com'].profile == '1g.18gb'", nil)
		createDRAPod(ctx, t, c, "r-1g", map[string]string{queueLabel: "batch"}, "r-1g")
		waitBound(ctx, t, c, "default", []string{"r-1g"}, 60*time.Second)
		staticWant(ctx, t, c, map[string]string{"r-1g": "gpu-2-mig-19-1-1"})
		time.Sleep(3 * time.Second)
		checkDRAClaims(ctx, t, c, profiles, waiting)
	})
}

// staticFirst is TestDRAStaticMIG's first scheduler.
func staticFirst(ctx context.Context, t *testing.T, c kubernetes.Interface, cp *controlPlane, profiles []nvdra.Profile, waiting map[string]bool) {
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	want := map[string]string{}
	for _, m := range []struct{ pod, profile, dev string }{
		{"s-3g", "3g.71gb", "gpu-1-mig-9-4-4"}, {"s-me", "1g.18gb+me", "gpu-1-mig-20-2-1"},
		{"s-1a", "1g.18gb", "gpu-1-mig-19-3-1"}, {"s-1b", "1g.18gb", "gpu-2-mig-19-0-1"}, {"s-2g", "2g.35gb", "gpu-1-mig-14-0-2"},
	} {
		createCELClaim(ctx, t, c, m.pod, migClass, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", m.profile), nil)
		createDRAPod(ctx, t, c, m.pod, batch, m.pod)
		waitBound(ctx, t, c, "default", []string{m.pod}, 60*time.Second)
		want[m.pod] = m.dev
	}
	createCELClaim(ctx, t, c, "w", gpuClass, "", nil)
	createDRAPod(ctx, t, c, "w", batch, "w")
	waitBound(ctx, t, c, "default", []string{"w"}, 60*time.Second)
	want["w"] = "gpu-0"
	staticWant(ctx, t, c, want)
	for _, x := range []struct{ pod, class, expr string }{
		{"s-me2", migClass, "device.attributes['gpu.nvidia.com'].profile == '1g.18gb+me'"},
		{"s-4g", migClass, "device.attributes['gpu.nvidia.com'].profile == '4g.71gb'"},
		{"w2", gpuClass, ""},
	} {
		createCELClaim(ctx, t, c, x.pod, x.class, x.expr, nil)
		createDRAPod(ctx, t, c, x.pod, batch, x.pod)
	}
	for _, pod := range []string{"s-me2", "s-4g", "w2"} {
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(podCondition(ctx, c, "default", pod), "gpusched"), nil
		}); err != nil {
			t.Errorf("pod %s: condition %q, want it waiting with gpusched's reason", pod, podCondition(ctx, c, "default", pod))
		}
	}
	time.Sleep(3 * time.Second) // (a wrong binding would show by now)
	checkDRAClaims(ctx, t, c, profiles, waiting)
}

// staticWant checks that each claim of want names that one device, on
// h200s-1.
func staticWant(ctx context.Context, t *testing.T, c kubernetes.Interface, want map[string]string) {
	t.Helper()
	for claim, dev := range want {
		cl, err := c.ResourceV1().ResourceClaims("default").Get(ctx, claim, metav1.GetOptions{})
		if err != nil || cl.Status.Allocation == nil || len(cl.Status.Allocation.Devices.Results) != 1 {
			t.Errorf("claim %s: %v %+v", claim, err, cl.Status)
			continue
		}
		if r := cl.Status.Allocation.Devices.Results[0]; r.Device != dev || r.Pool != "h200s-1" {
			t.Errorf("claim %s: %s of pool %s, want %s", claim, r.Device, r.Pool, dev)
		}
	}
}
