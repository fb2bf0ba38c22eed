package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
// members, then activates them. A gang whose plan could not be written
// to every member is not activated: its binding is withdrawn and it is
// requeued, as when a member fails to bind.
func (h *host) writePlans(ctx context.Context, plans []planWrite) {
	for _, g := range plans {
		// The members' patches go out concurrently (apiWriters at a
		// time): one after the other, a 256-pod gang waited 256 round
		// trips before any member was let through.
		errs := make([]error, len(g.pods))
		workqueue.ParallelizeUntil(ctx, apiWriters, len(g.pods), func(i int) {
			p := g.pods[i]
			if p.Annotations[PlannedNodeAnnotation] == g.node[i] && p.Annotations[h.args.GPUIndicesAnnotation] == g.gpus[i] {
				return
			}
			want := map[string]string{PlannedNodeAnnotation: g.node[i], h.args.GPUIndicesAnnotation: g.gpus[i]}
			if err := h.io.annotate(ctx, p, want); err != nil {
				errs[i] = fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		})
		var err error
		if i := slices.IndexFunc(errs, func(e error) bool { return e != nil }); i >= 0 {
			err = errs[i]
		} else if ctx.Err() != nil {
			err = ctx.Err() // ParallelizeUntil stopped early
		}
		if err != nil {
			h.log.Error(err, "Writing a gang's plan; its binding is withdrawn", "job", g.job)
			if len(g.pods) > 0 {
				for _, uid := range h.unreserve(g.pods[0].UID) {
					h.io.rejectWaiting(uid, "gpusched: the gang's plan could not be written")
				}
				h.poke()
			}
			continue
		}
		h.io.activate(g.pods)
	}
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
