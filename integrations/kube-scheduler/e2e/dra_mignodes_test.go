package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/internal/nvdra"
	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// TestDRAMIGTwoNodes: two H200 nodes published with dynamic MIG from the
// real capture (h200-1 of two GPUs, h200-2 of one; device and counter-set
// names repeat per node): two 7g.141gb pods and two 1g.18gb pods are all
// bound (two of the three GPUs whole, the third partitioned: both nodes
// used), each claim with a legal device of its node's pool
// (checkDRAClaims).
// Before the fix none was (the nodes a MIG claim may use were one
// metadata.name field selector of two values, which matches no node).
func TestDRAMIGTwoNodes(t *testing.T) {
	ctx := context.Background()
	cp, profiles := migControlPlane(ctx, t)
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "h200-2"})
	for _, s := range (nvdra.Node{Name: "h200-2", GPUs: 1, Product: "NVIDIA H200", Profiles: profiles, Slots: 8}).Slices() {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("MIG slice %s: %v", s.Name, err)
		}
	}
	startInProcess(t, cp, schedModeConfig, app.WithPlugin(plugin.Name, plugin.New))
	batch := map[string]string{queueLabel: "batch"}
	var names []string
	for i, prof := range []string{"7g.141gb", "7g.141gb", "1g.18gb", "1g.18gb"} {
		name := fmt.Sprintf("two-%d", i)
		createCELClaim(ctx, t, c, name, migClass, fmt.Sprintf("device.attributes['gpu.nvidia.com'].profile == '%s'", prof), nil)
		createDRAPod(ctx, t, c, name, batch, name)
		names = append(names, name)
	}
	bound := waitBound(ctx, t, c, "default", names, 90*time.Second)
	nodes := map[string]int{}
	for _, p := range bound {
		nodes[p.Spec.NodeName]++
	}
	if len(nodes) != 2 {
		t.Errorf("pods per node %v: want both nodes used", nodes)
	}
	checkDRAClaims(ctx, t, c, profiles, map[string]bool{})
}
