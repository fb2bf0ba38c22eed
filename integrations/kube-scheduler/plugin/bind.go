package plugin

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// binder binds pods with their GPU indices annotation in the Binding
// itself: the apiserver copies a Binding's annotations onto the pod in the
// same write that sets its node. Without it a pod costs two more writes
// than with kube's DefaultBinder: the annotation patch in PreBind, and the
// NominatedNodeName status patch kube-scheduler makes before any PreBind
// that has work to do (PreBindPreFlight success).
//
// It binds only when GPUSched is its profile's first Bind plugin (the
// profile lists it under plugins.bind.enabled, ahead of DefaultBinder,
// which multiPoint puts first otherwise); else PreBind writes the
// annotation as before and DefaultBinder binds.
type binder struct {
	handle fwk.Handle
	once   sync.Once
	first  bool
}

// bindsFirst reports whether GPUSched is the profile's first Bind plugin.
// The framework lists its plugins only once every one is built, so this is
// asked at the first scheduling cycle, not in New.
func (b *binder) bindsFirst() bool {
	if b == nil || b.handle == nil {
		return false
	}
	b.once.Do(func() {
		l, ok := b.handle.(interface{ ListPlugins() *config.Plugins })
		if !ok {
			return
		}
		if ps := l.ListPlugins(); ps != nil && len(ps.Bind.Enabled) > 0 {
			b.first = ps.Bind.Enabled[0].Name == Name
		}
	})
	return b.first
}

// bind binds pod to node, with the annotation key=val on the pod (none
// when val is ""), through the scheduler's API cacher when it has one,
// as DefaultBinder does.
func (b *binder) bind(ctx context.Context, pod *v1.Pod, node, key, val string) *fwk.Status {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if val != "" && pod.Annotations[key] != val {
		binding.Annotations = map[string]string{key: val}
	}
	if c := b.handle.APICacher(); c != nil {
		done, err := c.BindPod(binding)
		if err != nil {
			return fwk.AsStatus(err)
		}
		return fwk.AsStatus(c.WaitOnFinish(ctx, done))
	}
	err := retry.OnError(retry.DefaultBackoff, util.Retriable, func() error {
		return b.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
	})
	return fwk.AsStatus(err)
}

var (
	_ fwk.BindPlugin = (*Plugin)(nil)
	_ fwk.BindPlugin = (*SchedulerPlugin)(nil)
)

// bindsIndices reports whether Bind, not PreBind, writes pod's GPU indices
// (placement mode: every pod gpusched placed).
func (p *Plugin) bindsIndices() bool { return p.binder.bindsFirst() }

// Bind binds a pod gpusched placed, with its GPU indices annotation in the
// Binding; other pods are left to the next Bind plugin.
func (p *Plugin) Bind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	if !p.bindsIndices() {
		return fwk.NewStatus(fwk.Skip)
	}
	val, ok := p.heldIndices(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	return p.binder.bind(ctx, pod, node, p.args.GPUIndicesAnnotation, val)
}

// heldIndices returns the GPU indices the ledger holds for pod, formatted
// for the annotation, and whether it holds a record of the pod at all.
func (p *Plugin) heldIndices(pod *v1.Pod) (string, bool) {
	s := p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pods[pod.UID]
	if !ok {
		return "", false
	}
	return formatIndices(r.gpus), true
}

// bindsIndices reports whether Bind, not PreBind, writes pod's GPU indices
// (scheduler mode): for the pod of a one-pod job. A gang's members keep
// the PreBind annotation, written before any member binds, so that a
// scheduler restarted while the gang binds can complete it (host.restore).
func (p *SchedulerPlugin) bindsIndices(pod *v1.Pod) bool {
	return p.binder.bindsFirst() && p.h.soloAssignment(pod.UID)
}

// Bind binds the pod of a one-pod job with its GPU indices annotation in
// the Binding; gang members are left to the next Bind plugin. A pod whose
// job's binding was withdrawn after PreBind is not bound at all (issue 26,
// defect 8): left to DefaultBinder it would be bound without the indices
// annotation, on GPUs no one counts after a restart.
func (p *SchedulerPlugin) Bind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok || a.node != node {
		return fwk.NewStatus(fwk.Unschedulable, "gpusched: the pod's binding was withdrawn")
	}
	if !p.bindsIndices(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	return p.binder.bind(ctx, pod, node, p.args.GPUIndicesAnnotation, formatIndices(a.gpus))
}

// soloAssignment reports whether pod has an assignment and is its job's
// only pod.
func (h *host) soloAssignment(uid types.UID) bool {
	h.amu.Lock()
	defer h.amu.Unlock()
	a, ok := h.assign[uid]
	return ok && len(h.byJob[a.job]) == 1
}
