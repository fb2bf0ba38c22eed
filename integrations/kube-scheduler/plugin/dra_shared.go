package plugin

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ResourceClaims shared by pods (docs/dra.md), in both modes (a gang's
// members sharing one: scheduler mode; placement mode refuses the gang,
// gangSharedClaim).
//
// A GPU claim several pods name (resourceClaimName) is allocated once,
// for the pod placed first: the first pod of its reservedFor holds its
// devices in gpusched's ledger. For every other pod naming it, the claim
// is no demand (its devices are held already) and no claim gpusched
// writes: the pod is placed only on the node its allocation names (with
// its other claims' devices, if any), and kube's DynamicResources, which
// finds the claim allocated, checks that node and adds the pod to
// reservedFor. When the first pod ends and kube's claim controller drops
// it from reservedFor, the next one holds the devices.

// Before any pod holds it (scheduler mode): a GPU claim that several
// unbound pods name and that is reserved for none is held by one of them,
// its owner: the first by name. The owner counts the claim's GPUs; every
// other pod naming it (a follower) does not. A follower in the owner's
// gang goes with the whole gang on one node (the claim's devices are that
// node's; the gang's job is required on one host, draSharedWithAnnotation),
// and the claim is written once, for the owner, when the gang's plan is
// (kube's DynamicResources adds the others to its reservedFor); a gang
// that fits no one node with the claim waits, saying so. A follower
// outside the owner's gang waits, saying why, until the owner's
// allocation is written; then it goes to its node (above).

// draSharedWithAnnotation carries, on a gang member as a cycle sees it
// (never written to the apiserver), the name of the member that holds a
// GPU claim they both name: the gang goes whole on one node.
const draSharedWithAnnotation = "gpusched.io/dra-shared-with"

// pendingShares is scheduler mode's view of the GPU claims several
// unbound pods name (collect, each cycle); its methods are nil-safe (nil
// in placement mode, where such pods are placed one by one).
type pendingShares struct {
	gangKey func(*v1.Pod) string // a pod's gang ("" for none)
	// named are, per claim ("ns/name") named by two unbound pods or
	// more, those pods by name: the first is its owner.
	named map[string][]*v1.Pod
}

// collect finds, among pods, the claims several unbound pods name (by
// resourceClaimName: a claim made from a template is its pod's alone).
// O(pods × their claims).
func (s *pendingShares) collect(pods []*v1.Pod) {
	if s == nil {
		return
	}
	named := map[string][]*v1.Pod{}
	for _, p := range pods {
		if len(p.Spec.ResourceClaims) == 0 || p.Spec.NodeName != "" || isTerminal(p) {
			continue
		}
		for _, rc := range p.Spec.ResourceClaims {
			if rc.ResourceClaimName == nil {
				continue
			}
			k := p.Namespace + "/" + *rc.ResourceClaimName
			if !slices.Contains(named[k], p) {
				named[k] = append(named[k], p)
			}
		}
	}
	s.named = map[string][]*v1.Pod{}
	for _, k := range sortedKeys(named) {
		if ps := named[k]; len(ps) > 1 {
			slices.SortFunc(ps, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
			s.named[k] = ps
		}
	}
}

// owner returns the pod that holds claim c before any does: the first by
// name of the unbound pods naming it, when two or more do and it is
// reserved for none; nil otherwise.
func (s *pendingShares) owner(c *resourceapi.ResourceClaim) *v1.Pod {
	if s == nil || len(c.Status.ReservedFor) > 0 {
		return nil
	}
	if ps := s.named[c.Namespace+"/"+c.Name]; len(ps) > 1 {
		return ps[0]
	}
	return nil
}

// key is what of c's owner a pod's view depends on (drat.pod's cache).
func (s *pendingShares) key(c *resourceapi.ResourceClaim) string {
	if o := s.owner(c); o != nil {
		return "<" + o.Name + ">"
	}
	return ""
}

// follows reports whether p, unbound, follows the owner of claim c (see
// above): c is then no claim of dp's; a follower in the owner's gang
// records it (dp.sharedWith), any other waits, saying why (dp.why).
func (s *pendingShares) follows(dp *draPod, p *v1.Pod, c *resourceapi.ResourceClaim) bool {
	o := s.owner(c)
	if o == nil || o.UID == p.UID || p.Spec.NodeName != "" {
		return false
	}
	if g := s.gangKey(p); g != "" && g == s.gangKey(o) {
		dp.sharedWith = o.Name
		return true
	}
	dp.why = cmp.Or(dp.why, fmt.Sprintf("its ResourceClaim %s is also named by pod %s, outside its gang, which gpusched places first: the claim is allocated once, and this pod then goes to the node of its devices", c.Name, o.Name))
	return true
}

// markShared sets draSharedWithAnnotation on the view of dp, a gang
// member following another's claim.
func (d *drat) markShared(dp *draPod) {
	if dp.sharedWith == "" || dp.out == nil || dp.out.Annotations[draSharedWithAnnotation] == dp.sharedWith {
		return
	}
	if dp.out == dp.src {
		dp.out = dp.src.DeepCopy()
	}
	if dp.out.Annotations == nil {
		dp.out.Annotations = map[string]string{}
	}
	dp.out.Annotations[draSharedWithAnnotation] = dp.sharedWith
}

// heldByAnother reports whether claim c, which p names, is allocated and
// held by another pod: the first pod of its reservedFor is not p.
func heldByAnother(c *resourceapi.ResourceClaim, p *v1.Pod) bool {
	return c.Status.Allocation != nil && len(c.Status.ReservedFor) > 0 && c.Status.ReservedFor[0].UID != p.UID
}

// allocNode returns the node of c's allocation: the node of the pool of
// its devices of the driver ("" when none is known).
func (d *drat) allocNode(c *resourceapi.ResourceClaim) string {
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver == d.driver && d.byPool[r.Pool] != "" {
			return d.byPool[r.Pool]
		}
	}
	return ""
}

// onSharedNodes narrows nodes (nil: any) to the node of the shared
// claims' allocations (shared: one per claim held by another pod; ""
// when unknown); nil shared leaves nodes as they are. Claims on
// different nodes, or a node nodes leaves out, leave no node.
func onSharedNodes(nodes, shared []string) []string {
	if shared == nil {
		return nodes
	}
	n := shared[0]
	if n == "" || slices.ContainsFunc(shared, func(x string) bool { return x != n }) || nodes != nil && !slices.Contains(nodes, n) {
		return []string{}
	}
	return []string{n}
}

// gangSharedClaim returns a GPU claim of dp (pod, a member of gang g in
// placement mode) that another member of g names, "" when none. Placement
// mode does not place such a gang (the gang would have to go whole on the
// node of the claim's devices, and kube's per-pod cycle would allocate the
// claim for the first member while the others wait for it at Permit):
// its members wait, saying so.
func (p *Plugin) gangSharedClaim(pod *v1.Pod, dp *draPod, g gangSpec) string {
	if p.pods == nil || dp == nil || len(dp.claims) == 0 {
		return ""
	}
	mates, err := p.pods.Pods(pod.Namespace).List(labels.Everything())
	if err != nil {
		return ""
	}
	slices.SortFunc(mates, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range mates {
		if m.UID == pod.UID || isTerminal(m) {
			continue
		}
		if mg, ok, err := gangOf(m, p.args); !ok || err != nil || mg.key != g.key {
			continue
		}
		for _, rc := range m.Spec.ResourceClaims {
			name := claimName(m, rc)
			if slices.ContainsFunc(dp.claims, func(c gpuClaim) bool { return c.name == name }) {
				return name
			}
		}
	}
	return ""
}
