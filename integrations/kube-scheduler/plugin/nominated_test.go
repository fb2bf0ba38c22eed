package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPatchPendingClearsNomination: the pending patch sets the PodScheduled
// condition and clears a nominated node the pod carries; a pod without one
// gets the condition only.
func TestPatchPendingClearsNomination(t *testing.T) {
	ctx := context.Background()
	stale := schedPod("stale", 1, nil)
	stale.Status.NominatedNodeName = "n1"
	plain := schedPod("plain", 1, nil)
	cs := fake.NewClientset(stale, plain)
	at := metav1.Unix(2e9, 0)
	for _, p := range []*v1.Pod{stale, plain} {
		if err := patchPending(ctx, cs, p, "", "gpusched: waits", at); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		got, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != "" {
			t.Errorf("%s: nominatedNodeName %q after the pending patch, want none", p.Name, got.Status.NominatedNodeName)
		}
		var cond *v1.PodCondition
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == v1.PodScheduled {
				cond = &got.Status.Conditions[i]
			}
		}
		if cond == nil || cond.Status != v1.ConditionFalse || cond.Message != "gpusched: waits" || cond.Reason != v1.PodReasonUnschedulable {
			t.Errorf("%s: PodScheduled condition %+v, want False/Unschedulable with the message", p.Name, cond)
		}
	}
}

// TestHostPartlyBoundGangNominationCleared: a scheduler killed between
// kube-scheduler's NominatedNodeName write and a gang member's Binding
// leaves that member nominated to a node. The new scheduler restores the
// gang with its bound members, and the waiting member's pending patch
// (which clears the nomination) is sent at once and again while the pod
// still shows one, not only when its reason changes: kube-scheduler counts
// a nominated pod's GPUs on its node for every pod of equal priority.
func TestHostPartlyBoundGangNominationCleared(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "4"}
	for i, idx := range []string{"0", "1", "2", ""} {
		p := schedPod("g-"+string(rune('0'+i)), 1, g)
		if idx != "" {
			p.Spec.NodeName = "n1"
			p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: idx}
		} else {
			p.Status.NominatedNodeName = "n1"
		}
		io.pods = append(io.pods, p)
	}
	h.cycle(ctx)
	if !strings.Contains(io.pending["g-3"], "partly bound (3 of 4 pods)") {
		t.Fatalf("g-3: reason %q, want the partly bound gang; events %v", io.pending["g-3"], io.events)
	}
	if io.patches["g-3"] != 1 {
		t.Fatalf("g-3: %d pending patches, want 1", io.patches["g-3"])
	}
	if len(io.activated) != 0 {
		t.Fatalf("activated %v, want none: g-3 had no GPU indices", io.activated)
	}
	// A free GPU of n1 goes to a new pod.
	io.pods = append(io.pods, schedPod("s", 1, nil))
	io.clock = io.clock.Add(10 * time.Second)
	h.cycle(ctx)
	if strings.Join(io.activated, ",") != "s" {
		t.Fatalf("activated %v, want s on one of n1's 5 free GPUs", io.activated)
	}
	// The informer still shows g-3 nominated: its patch is sent again
	// (by that cycle, which says the partly bound gang's reason again),
	// though its reason is the same.
	if io.patches["g-3"] != 2 {
		t.Fatalf("a waiting pod still nominated: %d pending patches, want 2", io.patches["g-3"])
	}
	// Once the nomination is gone (and the condition shows gpusched's
	// reason), the same reason is not patched again.
	cleared := io.pods[3].DeepCopy()
	cleared.Status.NominatedNodeName = ""
	cleared.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: TokenGangPartlyBound, Message: io.pending["g-3"]}}
	fx := &effects{}
	h.noteWhy(fx, []*v1.Pod{cleared}, TokenGangPartlyBound, io.pending["g-3"], ReasonPending, io.clock.Add(time.Minute))
	if len(fx.pending) != 0 {
		t.Fatalf("a waiting pod with no nomination and the same reason: %d pending patches, want 0", len(fx.pending))
	}
}
