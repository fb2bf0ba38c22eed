package e2e

import (
	"context"
	"testing"
	"time"
)

const defaultOnlyConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
`

func TestSmokeDefaultScheduler(t *testing.T) {
	ctx := context.Background()
	cp := startControlPlane(t)
	createNode(ctx, t, cp.Client, nodeSpec{Name: "n1", GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"})
	runInProcess()(t, cp, defaultOnlyConfig)
	createPod(ctx, t, cp.Client, podSpec{Name: "p1", GPUs: 2})
	got := waitBound(ctx, t, cp.Client, "default", []string{"p1"}, 30*time.Second)
	if got["p1"].Spec.NodeName != "n1" {
		t.Fatalf("bound to %q", got["p1"].Spec.NodeName)
	}
}
