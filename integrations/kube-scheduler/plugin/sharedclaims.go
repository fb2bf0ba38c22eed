package plugin

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// sharedClaims keeps, for one cycle of kubeFilters, the node of each
// persistent volume claim not bound yet that a pod planned but not bound
// mounts (issue 26, defect 4: volume conflicts between the pods planned
// together). kube's VolumeBinding provisions such a claim for the node
// of the first pod bound with it (the selected-node annotation), and
// until the claim is bound refuses any other node for the other pods
// that mount it; its filter sees only pods kube has already bound. So a
// pod of another job that mounts the claim is planned on that node only
// (verdict, check); the pods of one job are left to kube (a gang sharing
// a claim would else have to fit one node, and never start where kube
// lets it in once the claim is bound). Written only by kubeFilters.
type sharedClaims struct {
	pvcs corelisters.PersistentVolumeClaimLister // nil: no claims read
	// jobOf names a pod's job.
	jobOf func(*v1.Pod) string
	// before: claim (namespace/name) → the first pod planned before the
	// cycle's plans that mounts it, on its node; inCycle: claim → index
	// of the first admitted pod (kubeFilters.admitted) that mounts it.
	before  map[string]plannedPod
	inCycle map[string]int
}

// unbound returns the keys (namespace/name) of p's claims not bound to a
// volume yet (a claim not found is VolumeBinding's to refuse).
func (s *sharedClaims) unbound(p *v1.Pod) []string {
	if s.pvcs == nil {
		return nil
	}
	var keys []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c, err := s.pvcs.PersistentVolumeClaims(p.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err == nil && c.Spec.VolumeName == "" {
			keys = append(keys, p.Namespace+"/"+c.Name)
		}
	}
	return keys
}

// reset starts a cycle: all are the informer's pods, planned the node of
// each pod planned and not bound.
func (s *sharedClaims) reset(all []*v1.Pod, planned map[types.UID]string, jobOf func(*v1.Pod) string) {
	s.jobOf = jobOf
	clear(s.before)
	clear(s.inCycle)
	if s.pvcs == nil {
		return
	}
	for _, p := range all {
		node := planned[p.UID]
		if p.Spec.NodeName != "" || node == "" || isTerminal(p) {
			continue
		}
		for _, k := range s.unbound(p) {
			if _, ok := s.before[k]; !ok {
				if s.before == nil {
					s.before = map[string]plannedPod{}
				}
				s.before[k] = plannedPod{pod: p, node: node}
			}
		}
	}
}

// holder returns the pod of another job than p's planned with claim k,
// on its node (admitted: the plans kept so far in the cycle).
func (s *sharedClaims) holder(p *v1.Pod, k string, admitted []plannedPod) (plannedPod, bool) {
	h, ok := s.before[k]
	if !ok {
		var i int
		if i, ok = s.inCycle[k]; ok {
			h = admitted[i]
		}
	}
	if !ok || h.pod.UID == p.UID || (s.jobOf != nil && s.jobOf(h.pod) == s.jobOf(p)) {
		return plannedPod{}, false
	}
	return h, true
}

// conflict returns why p may not go on node for a claim it shares with a
// pod planned elsewhere, "" if it may; refuse (node == ""): the same for
// every node of nodes, called for each refused one.
func (s *sharedClaims) conflict(p *v1.Pod, node string, nodes []*v1.Node, admitted []plannedPod, refuse func(node, why string)) string {
	for _, k := range s.unbound(p) {
		h, ok := s.holder(p, k, admitted)
		if !ok {
			continue
		}
		why := fmt.Sprintf("VolumeBinding: claim %s is not bound yet and pod %s, planned on node %s, mounts it (kube provisions it for that node)", k, h.pod.Name, h.node)
		if node != "" {
			if node != h.node {
				return why
			}
			continue
		}
		for _, n := range nodes {
			if n.Name != h.node {
				refuse(n.Name, why)
			}
		}
	}
	return ""
}

// admit records the claims of pp, the admitted pod at index i.
func (s *sharedClaims) admit(pp plannedPod, i int) {
	for _, k := range s.unbound(pp.pod) {
		if _, ok := s.inCycle[k]; !ok {
			if s.inCycle == nil {
				s.inCycle = map[string]int{}
			}
			s.inCycle[k] = i
		}
	}
}

// drop forgets the claims of the admitted pods from index mark on.
func (s *sharedClaims) drop(mark int) {
	for k, i := range s.inCycle {
		if i >= mark {
			delete(s.inCycle, k)
		}
	}
}
