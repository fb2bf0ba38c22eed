package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestHostSaysItsReasonAgainOverKubes (found by the e2e
// StaleNominationAfterRestart): kube-scheduler writes its own PodScheduled
// condition when a scheduling cycle of the pod fails (the leader probe's
// first cycle, "waiting for a gpusched cycle"), and it may land after
// gpusched's reason. A waiting pod whose condition shows another message
// than gpusched's reason gets gpusched's again (within the rate limit),
// also when that reason is the partly bound gang's, said at the restore.
func TestHostSaysItsReasonAgainOverKubes(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "4"}
	for i := range 4 {
		p := schedPod("g-"+string(rune('0'+i)), 1, g)
		if i < 3 {
			p.Spec.NodeName = "n1"
			p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: string(rune('0' + i))}
		}
		io.pods = append(io.pods, p)
	}
	h.cycle(ctx)
	want := io.pending["g-3"]
	if !strings.Contains(want, "partly bound (3 of 4 pods)") || io.patches["g-3"] != 1 {
		t.Fatalf("g-3: %d patches, reason %q, want 1 with the partly bound gang", io.patches["g-3"], want)
	}
	// The informer shows gpusched's condition: nothing more to say.
	said := io.pods[3].DeepCopy()
	said.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: want}}
	io.pods[3] = said
	for range 3 {
		io.clock = io.clock.Add(6 * time.Second)
		h.cycle(ctx)
	}
	if io.patches["g-3"] != 1 {
		t.Fatalf("g-3: %d patches while its condition shows gpusched's reason, want 1", io.patches["g-3"])
	}
	// kube-scheduler's failure handling overwrites it.
	kube := said.DeepCopy()
	kube.Status.Conditions[0].Message = "0/1 nodes are available: " + defaultWaiting + ". " + defaultWaiting
	io.pods[3] = kube
	io.clock = io.clock.Add(6 * time.Second)
	h.cycle(ctx)
	if io.patches["g-3"] != 2 || io.pending["g-3"] != want {
		t.Fatalf("g-3 after kube's condition landed: %d patches, last %q; want 2, gpusched's reason again", io.patches["g-3"], io.pending["g-3"])
	}
}
