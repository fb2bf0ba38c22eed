package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// PlannedNodeAnnotation names the node gpusched planned for a gang member,
// written with the GPU indices annotation to every member of a gang
// before any member is let through to be bound (issue 26, defect 7): a
// scheduler that stops while the gang is being bound finds the whole plan
// on the pods and completes the gang (host.restore), instead of keeping
// only its bound members.
const PlannedNodeAnnotation = "gpusched.io/planned-node"

// planWrite is a gang's binding to write before its members are activated.
type planWrite struct {
	job  string
	pods []*v1.Pod
	node []string
	gpus []string
}

func (g *planWrite) add(p *v1.Pod, a *assignment) {
	g.pods = append(g.pods, p)
	g.node = append(g.node, a.node)
	g.gpus = append(g.gpus, formatIndices(a.gpus))
}

// plannedNode is the node a gang member's plan names: its planned-node
// annotation, else the node kube-scheduler nominated (written before
// PreBind by schedulers that did not write the annotation).
func plannedNode(p *v1.Pod) string {
	if n := p.Annotations[PlannedNodeAnnotation]; n != "" {
		return n
	}
	return p.Status.NominatedNodeName
}

// writePlans writes each gang's plan (node and GPU indices) to all its
// members, then lets them through (issue 26, defect 7). A cycle's gangs
// are written together, apiWriters patches at a time (one after the
// other, a 256-pod gang waited 256 round trips before any member was let
// through). A gang's members are held at PreEnqueue (assignment.unwritten)
// until every member's plan is written; only then are they marked written
// and activated. A gang whose plan could not be written to every member is
// not let through: its binding is withdrawn and it is requeued, as when a
// member fails to bind.
//
// Once run started, the plans are written off the cycle loop (planQueue):
// at 1,000 nodes a cycle's plan writes took 3–27 s on a loaded apiserver
// while the cycles that bind the next jobs waited
// (TestCycleDoesNotWaitForGangPlans). So a later cycle may withdraw or
// replace a plan while it is being written: a plan no longer the gang's
// (planCurrent) is neither written, let through, nor withdrawn again.
func (h *host) writePlans(ctx context.Context, plans []planWrite) {
	type member struct{ g, i int }
	var todo []member
	for gi := range plans {
		if !h.planCurrent(&plans[gi]) {
			continue // withdrawn or replaced before its turn
		}
		for i := range plans[gi].pods {
			todo = append(todo, member{gi, i})
		}
	}
	errs := make([][]error, len(plans))
	for gi := range plans {
		errs[gi] = make([]error, len(plans[gi].pods))
	}
	workqueue.ParallelizeUntil(ctx, apiWriters, len(todo), func(k int) {
		m := todo[k]
		g := &plans[m.g]
		p := g.pods[m.i]
		if p.Annotations[PlannedNodeAnnotation] == g.node[m.i] && p.Annotations[h.args.GPUIndicesAnnotation] == g.gpus[m.i] {
			return
		}
		want := map[string]string{PlannedNodeAnnotation: g.node[m.i], h.args.GPUIndicesAnnotation: g.gpus[m.i]}
		if err := h.io.annotate(ctx, p, want); err != nil {
			errs[m.g][m.i] = fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	})
	for gi := range plans {
		g := &plans[gi]
		var err error
		if i := slices.IndexFunc(errs[gi], func(e error) bool { return e != nil }); i >= 0 {
			err = errs[gi][i]
		} else if ctx.Err() != nil {
			err = ctx.Err() // ParallelizeUntil stopped early
		}
		if err != nil {
			if len(g.pods) > 0 && h.planCurrent(g) {
				h.log.Error(err, "Writing a gang's plan; its binding is withdrawn", "job", g.job)
				for _, uid := range h.unreserve(g.pods[0].UID) {
					h.io.rejectWaiting(uid, "gpusched: the gang's plan could not be written")
				}
				h.poke()
			}
			continue
		}
		if !h.planWritten(g) {
			continue // withdrawn or replaced while it was written
		}
		// No condition of a pod let through may land after its binding.
		h.conds.settle(g.pods)
		h.io.activate(g.pods)
		uids := make([]types.UID, len(g.pods))
		for i, p := range g.pods {
			uids[i] = p.UID
		}
		h.trace.activate(uids, time.Now())
	}
}

// planCurrent reports whether every member of g is still assigned as g
// says (a later cycle did not withdraw or replace the gang's plan).
func (h *host) planCurrent(g *planWrite) bool {
	h.amu.Lock()
	defer h.amu.Unlock()
	return h.planCurrentLocked(g)
}

func (h *host) planCurrentLocked(g *planWrite) bool {
	for i, p := range g.pods {
		a := h.assign[p.UID]
		if a == nil || a.job != g.job || a.node != g.node[i] || formatIndices(a.gpus) != g.gpus[i] {
			return false
		}
	}
	return true
}

// planWritten marks g's members written, so PreEnqueue lets them through,
// if g is still their plan; it reports whether it did.
func (h *host) planWritten(g *planWrite) bool {
	h.amu.Lock()
	defer h.amu.Unlock()
	if !h.planCurrentLocked(g) {
		return false
	}
	for _, p := range g.pods {
		h.assign[p.UID].unwritten = false
	}
	return true
}

// planHeld is why a pod with assignment a is not let through yet: its
// gang's plan is not written to every member (writePlans); "" when it
// may go.
func planHeld(a assignment) string {
	if a.unwritten {
		return fmt.Sprintf("gpusched: job %s is planned on %s; waiting for its plan to be written to every member of the gang", a.job, a.node)
	}
	return ""
}

// annotate sets annotations on pod with a merge patch.
func (k *kubeIO) annotate(ctx context.Context, pod *v1.Pod, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := k.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		k.log.V(3).Info("Annotating a pod", "pod", klog.KObj(pod), "err", err)
		return err
	}
	return nil
}
