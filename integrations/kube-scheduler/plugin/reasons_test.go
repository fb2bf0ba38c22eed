package plugin

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func (f *fakeIO) eventWithAction(p *v1.Pod, typ, reason, action, msg string) {
	f.event(p, typ, reason, msg)
	f.actions = append(f.actions, p.Name+" "+reason+" "+action)
}

// TestPendingReasonNamesTheCause (issue 26, deliver 2): a waiting pod's
// PodScheduled reason, and its event's action, is the token of why it
// waits, not always Unschedulable.
func TestPendingReasonNamesTheCause(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io, _, _ := metricsHost(t, twoQueues, n1, n2)
	ctx := context.Background()
	qa, qb := map[string]string{DefaultQueueLabel: "a"}, map[string]string{DefaultQueueLabel: "b"}
	gang := map[string]string{DefaultQueueLabel: "b", DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	bad := schedPod("bad", 1, qb)
	bad.Annotations = map[string]string{DefaultRuntimeKey: "soon"}
	io.pods = []*v1.Pod{schedPod("a1", 8, qa), schedPod("a2", 4, qa)}
	h.cycle(ctx)
	bindAll(t, h, io)
	h.cycle(ctx)
	// a3: a is at 12 of 8 + 4; g-0: 1 of 2 members; bad: malformed
	// runtime; b1 (8): b may reclaim a's borrowed 4, no host has 8 free.
	io.pods = append(io.pods, schedPod("a3", 2, qa), schedPod("g-0", 1, gang), bad, schedPod("b1", 8, qb))
	h.cycle(ctx)
	want := map[string]string{"a3": "WaitingForQuota", "g-0": TokenWaitingForGangMembers, "bad": TokenInvalidJob, "b1": "WaitingForPreemptedWorkloads"}
	for pod, tok := range want {
		if got := io.causes[pod]; got != tok {
			t.Errorf("%s: PodScheduled reason %q, want %q (message %q)", pod, got, tok, io.pending[pod])
		}
	}
	acts := map[string]bool{}
	for _, a := range io.actions {
		acts[a] = true
	}
	for _, a := range []string{"a3 " + ReasonPending + " WaitingForQuota", "g-0 " + ReasonPending + " " + TokenWaitingForGangMembers, "bad " + ReasonInvalid + " " + TokenInvalidJob} {
		if !acts[a] {
			t.Errorf("no event %q; events with actions %v", a, io.actions)
		}
	}
}
