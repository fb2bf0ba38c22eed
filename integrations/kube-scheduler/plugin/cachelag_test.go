package plugin

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/queue"
)

// TestHostRetriesARejectionFromKubesLaggingCache (found by the e2e
// RecoveriesDeletePods with the binary): a pod ends on n1 and leaves the
// informer (kube-scheduler's lists no terminal pods); the next cycle gives
// n1's GPUs to a waiting pod, whose scheduling cycle can run before
// kube-scheduler's cache dropped the ended pod, so NodeResourcesFit
// rejects n1 once. That rejection is retried after about a second, not
// taken as n1 excluded for 30 s; a second rejection is.
func TestHostRetriesARejectionFromKubesLaggingCache(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	run := boundPod("run", "n1", 8, "0,1,2,3,4,5,6,7", nil)
	next := schedPod("next", 8, nil)
	io.pods = []*v1.Pod{run, next}
	h.cycle(ctx)
	if _, ok := h.assignmentOf(next.UID); ok {
		t.Fatal("next planned while run holds n1")
	}
	// run ends: kube-scheduler's informer delivers a deletion with its
	// last non-terminal state.
	io.clock = io.clock.Add(time.Second)
	io.pods = []*v1.Pod{next}
	h.forget(run)
	h.cycle(ctx)
	if a, ok := h.assignmentOf(next.UID); !ok || a.node != "n1" {
		t.Fatalf("next after run ended: %+v %v, want n1", a, ok)
	}
	activated := func() int {
		return len(slices.DeleteFunc(slices.Clone(io.activated), func(n string) bool { return n != "next" }))
	}
	n := activated()
	reject := func() {
		h.exclude(next.UID, "n1", "NodeResourcesFit: Insufficient nvidia.com/gpu", io.clock)
		h.unreserve(next.UID)
	}
	reject()
	io.clock = io.clock.Add(100 * time.Millisecond)
	h.cycle(ctx)
	if activated() != n {
		t.Fatal("re-activated at once after kube's rejection")
	}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if activated() != n+1 {
		t.Fatalf("not planned on n1 again a second after a rejection right after run left n1 (kube's cache lagging); reason %q", h.waitingReason(next.UID))
	}
	// Rejected again: now n1 is excluded for the backoff.
	reject()
	for range 20 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if activated() != n+1 {
		t.Errorf("re-activated within the backoff after a second rejection: %v", io.activated)
	}
}

// TestHostPodEndedOutOfTheInformerIsAFinish (found by the e2e
// RecoveriesDeletePods's scheduler log): kube-scheduler's pod informer
// lists no terminal pods, so a pod that succeeds reaches the plugin as a
// deletion carrying its last running state. That is a finish, not a pod
// deleted by someone else (which always carries a deletionTimestamp).
func TestHostPodEndedOutOfTheInformerIsAFinish(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	done, killed := boundPod("done", "n1", 4, "0,1,2,3", nil), boundPod("killed", "n1", 4, "4,5,6,7", nil)
	io.pods = []*v1.Pod{done, killed}
	h.cycle(ctx)
	io.clock = io.clock.Add(time.Second)
	io.pods = nil
	h.endedOutOfView(done)
	h.forget(done)
	gone := terminating(killed, io.clock)
	h.endedOutOfView(gone)
	h.forget(gone)
	h.cycle(ctx)
	if got := h.ends.last["default/done"]; got != queue.Succeeded {
		t.Errorf("done, which left the informer by ending: booked %v, want %v", got, queue.Succeeded)
	}
	if got := h.ends.last["default/killed"]; got != queue.Cancelled {
		t.Errorf("killed, deleted: booked %v, want %v", got, queue.Cancelled)
	}
}
