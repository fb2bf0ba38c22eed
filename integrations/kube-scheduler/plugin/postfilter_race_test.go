package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestPostFilterPlanAfterFilterNotExcluded: a scheduler that just started
// (or just became leader) lets one pod through to start its cycles; that
// pod's PreFilter/Filter can run before the cycle plans its job, and its
// PostFilter after. gpusched's own "waiting for a cycle" verdict on the
// planned node is no rejection: the node must not be excluded, the plan
// not withdrawn, and the pod must be tried again. Before the fix the node
// was excluded for the job (30 s, doubling) and the pod was never tried
// again: a new leader left a 16-pod gang with 6 members unbound
// (TestHALeaderKilled), and TestDRASideBySide's first pod waited a minute.
func TestPostFilterPlanAfterFilterNotExcluded(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	io.pods = []*v1.Pod{schedPod("a", 2, nil)}
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	// Filter before the first cycle: gpusched's own verdict, on every node.
	st := pl.Filter(ctx, nil, io.pods[0], nil)
	if st.IsSuccess() {
		t.Fatal("Filter before any cycle passed the pod")
	}
	m := schedfw.NewNodeToStatus(map[string]*fwk.Status{}, st.WithPlugin(Name))
	step(h, io, 0) // the cycle plans the job
	a0, ok := h.assignmentOf(io.pods[0].UID)
	if !ok {
		t.Fatal("the cycle planned nothing")
	}
	io.activated = nil
	_, pst := pl.PostFilter(ctx, nil, io.pods[0], m)
	if !strings.Contains(pst.Message(), "trying again") {
		t.Errorf("PostFilter: %q, want the pod tried again", pst.Message())
	}
	if len(io.activated) != 1 {
		t.Errorf("activated %v, want the pod once", io.activated)
	}
	step(h, io, 1e9)
	if a, ok := h.assignmentOf(io.pods[0].UID); !ok || a.node != a0.node {
		t.Errorf("after PostFilter: %+v %v, want the plan on %s kept", a, ok, a0.node)
	}
	if r := h.waitingReason(io.pods[0].UID); strings.Contains(r, "excluded") || strings.Contains(r, "refused") {
		t.Errorf("reason %q: the planned node was excluded", r)
	}
}
