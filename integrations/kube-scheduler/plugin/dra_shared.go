package plugin

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// ResourceClaims shared by pods (docs/dra.md), in both modes.
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
