package plugin

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched/topology"
)

// Tainted whole GPUs for the pods that tolerate their taints
// (docs/dra.md, Device taints).
//
// The library keeps one health per GPU for every job: a GPU tainted
// NoSchedule or NoExecute is Draining or Failed, and no job gets it. A
// request's tolerations say that its pod may have it all the same. So
// that such a pod can, a free tainted GPU is lent for a cycle (lend):
//
//   - when an unbound pod with no binding waits whose whole-GPU requests
//     all tolerate the GPU's NoSchedule and NoExecute taints, and the
//     GPU's node has GPUs enough for it with the tainted ones, the GPU
//     is healthy in the ledger for that cycle (host.draHealth);
//   - every other unbound pod with no binding that may take GPUs is kept
//     off the node for that cycle (a node affinity of the cycle's copy of
//     the pod), so the library can give the lent GPU only to a pod that
//     tolerates it; pods bound or with a binding are not moved;
//   - a lent GPU a pod was given stays healthy while held (loaned); once
//     free and lent to nobody, its taints set its health again;
//   - every whole GPU written into a claim is checked against its
//     request's tolerations (checkTaints): an untolerated taint is never
//     written; the binding is withdrawn and the node left out for the
//     pod, as for a broken constraint.
//
// The price: while a tolerating pod waits for a node with a tainted free
// GPU, other pods do not go to that node.

// lendKey names GPU i of node.
type lendKey struct {
	node string
	gpu  int
}

// lend decides the tainted free GPUs lent this cycle (d.lent), from the
// pods' view (pods: the cycle's copies, assigned reports a binding of
// gpusched's), and returns pods with every pod that may not have them
// kept off their nodes.
func (d *drat) lend(pods []*v1.Pod, assigned func(types.UID) bool) []*v1.Pod {
	d.lent = map[lendKey]bool{}
	if !d.sched {
		return pods // (scheduler mode only: newSchedDRA)
	}
	// The waiting pods that may tolerate a taint: whole GPUs only, every
	// request with tolerations (most cycles: none, and nothing to lend).
	var cands []*draPod
	for _, uid := range sortedKeys(d.pods) {
		dp := d.pods[uid]
		if dp.out != nil && dp.gpus > 0 && d.pending(dp, assigned) && withTolerations(dp) {
			cands = append(cands, dp)
		}
	}
	if len(cands) == 0 {
		return pods
	}
	var nodes []string // nodes with a GPU lent
	for _, name := range sortedKeys(d.nodes) {
		n := d.nodes[name]
		var tainted []int
		for i := range n.specs {
			if n.health[i] != topology.Healthy && n.specs[i] != nil && !slices.ContainsFunc(n.specs[i].Taints, isWithdrawn) {
				tainted = append(tainted, i)
			}
		}
		if len(tainted) == 0 {
			continue
		}
		free, _ := d.freeSet(name)
		idle, known := d.idle(name)
		if !known {
			continue
		}
		for _, i := range tainted {
			if i >= len(idle) || !idle[i] {
				continue
			}
			room := 0
			for k := range idle {
				if k < len(free) && free[k] || k == i || d.lent[lendKey{name, k}] {
					room++
				}
			}
			for _, dp := range cands {
				if dp.gpus <= room && d.toleratesGPU(dp, n.specs[i]) {
					d.lent[lendKey{name, i}] = true
					break
				}
			}
		}
		if slices.ContainsFunc(tainted, func(i int) bool { return d.lent[lendKey{name, i}] }) {
			nodes = append(nodes, name)
		}
	}
	if len(nodes) == 0 {
		return pods
	}
	out := make([]*v1.Pod, len(pods))
	for k, p := range pods {
		out[k] = p
		if p.Spec.NodeName != "" || assigned(p.UID) || isTerminal(p) || !takesGPUs(p, d.gpuResource) {
			continue
		}
		var off []string
		dp := d.pods[p.UID]
		for _, name := range nodes {
			for i := range d.nodes[name].specs {
				if d.lent[lendKey{name, i}] && (dp == nil || dp.gpus == 0 || !d.toleratesGPU(dp, d.nodes[name].specs[i])) {
					off = append(off, name)
					break
				}
			}
		}
		if len(off) > 0 {
			out[k] = p.DeepCopy()
			notOn(out[k], off)
		}
	}
	return out
}

// pending reports whether dp's pod is unbound, with no binding of
// gpusched's and no plan.
func (d *drat) pending(dp *draPod, assigned func(types.UID) bool) bool {
	p := dp.src
	return p.Spec.NodeName == "" && !assigned(p.UID) && p.Annotations[PlannedNodeAnnotation] == "" && !isTerminal(p)
}

// withTolerations reports whether dp asks for whole GPUs only, every
// request with tolerations.
func withTolerations(dp *draPod) bool {
	for _, c := range dp.claims {
		for _, r := range c.requests {
			if r.part != nil || len(r.tols) == 0 {
				return false
			}
		}
	}
	return len(dp.claims) > 0
}

// toleratesGPU reports whether dp asks for whole GPUs only, every request
// of which tolerates the NoSchedule and NoExecute taints of GPU dev.
func (d *drat) toleratesGPU(dp *draPod, dev *resourceapi.Device) bool {
	for _, c := range dp.claims {
		for _, r := range c.requests {
			if r.part != nil {
				return false
			}
			if _, bad := untolerated(dev.Taints, r.tols, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); bad {
				return false
			}
		}
	}
	return len(dp.claims) > 0
}

// takesGPUs reports whether p, as the cycle sees it, asks for GPUs: the
// GPU resource in a container, or a MIG device or share.
func takesGPUs(p *v1.Pod, gpu v1.ResourceName) bool {
	if p.Annotations[draPartAnnotation] != "" {
		return true
	}
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if q, ok := c.Resources.Requests[gpu]; ok && !q.IsZero() {
				return true
			}
			if q, ok := c.Resources.Limits[gpu]; ok && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// notOn keeps p off nodes: each of its required node affinity terms gets
// a requirement metadata.name NotIn [node] per node (kube's node field
// selector takes one value per requirement; the requirements of a term
// are ANDed).
func notOn(p *v1.Pod, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	terms := requiredTerms(p).NodeSelectorTerms
	for i := range terms {
		for _, n := range nodes {
			terms[i].MatchFields = append(terms[i].MatchFields, v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpNotIn, Values: []string{n}})
		}
	}
}

// lentHealth is the health a cycle gives GPU i of node, whose taints say
// taint and which is free (idle) or held: Healthy while lent or held
// after a loan (loaned), else taint. It records and forgets loans.
func (d *drat) lentHealth(node string, i int, taint topology.Health, idle bool) topology.Health {
	k := lendKey{node, i}
	if d.loaned == nil {
		d.loaned = map[lendKey]bool{}
	}
	switch {
	case d.lent[k]:
		d.loaned[k] = true
		return topology.Healthy
	case !idle && d.loaned[k] && taint != topology.Healthy:
		return topology.Healthy
	}
	delete(d.loaned, k)
	return taint
}

// checkTaints checks the whole GPUs of alloc (c's, on node) against their
// requests' tolerations: a NoSchedule or NoExecute taint not tolerated
// is an errConstraint (never written).
func (d *drat) checkTaints(c gpuClaim, node string, alloc *resourceapi.AllocationResult) error {
	n := d.nodes[node]
	if n == nil {
		return nil
	}
	for _, res := range alloc.Devices.Results {
		i, ok := n.index[res.Device]
		if !ok || i >= len(n.specs) || n.specs[i] == nil {
			continue
		}
		k := slices.IndexFunc(c.requests, func(r gpuRequest) bool { return r.name == res.Request })
		if k < 0 || c.requests[k].part != nil {
			continue
		}
		if t, bad := untolerated(n.specs[i].Taints, c.requests[k].tols, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); bad {
			return errConstraint{node: node, what: fmt.Sprintf("tolerations (taint %s=%s:%s not tolerated)", t.Key, t.Value, t.Effect), devices: []string{res.Device}}
		}
	}
	return nil
}

// newSchedDRA is newDRA for scheduler mode on h: claim constraints are
// checked (dra_constraint.go) and tainted GPUs lent (lend), from the
// ledger's free and idle GPUs.
func newSchedDRA(args *Args, io draIO, h *host, log klog.Logger) *drat {
	d := newDRA(args, io, h, log)
	if d != nil {
		d.sched, d.idle, d.profile = true, ledgerGPUs{h}.idleGPUSet, h.profile
		d.pend = &pendingShares{gangKey: func(p *v1.Pod) string {
			if g, ok, err := gangOf(p, args); ok && err == nil {
				return g.key
			}
			return ""
		}}
		d.jobOf = func(p *v1.Pod) string { return jobID(p, args) }
	}
	return d
}
