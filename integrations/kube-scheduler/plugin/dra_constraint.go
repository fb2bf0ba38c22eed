package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// Claim constraints (spec.devices.constraints) on the requests gpusched
// allocates.
//
// gpusched's library picks the GPUs of a node itself (one fabric domain,
// then one PCIe switch, then one NUMA node: locality first), so a
// constraint is honoured in two steps:
//
//   - each cycle, an unbound pod with constraints on whole GPUs may use
//     only the nodes where the library's pick keeps them (constrainedNodes):
//     for matchAttribute, a node where some value of the attribute has
//     enough free GPUs and either every free GPU has that value (any pick
//     holds) or the attribute is a locality the library keeps together
//     (pcieRoot, numaNode: a pick of k GPUs stays under one PCIe root or
//     NUMA node when one has k free); for distinctAttribute, a node whose
//     free GPUs all have pairwise distinct values (uuid, index, pciBusID);
//   - when the claims are written (checkConstraints), the devices chosen
//     are checked against every constraint, as kube's allocator defines
//     them; a pick that breaks one is not written: the pod's binding is
//     withdrawn and the node excluded for it (its backoff), so it is
//     placed elsewhere or waits, saying why. No claim is ever written
//     that breaks its constraints.
//
// MIG devices and shares are checked when written only.

// claimConstraint is one constraint of a claim.
type claimConstraint struct {
	requests []string // the requests it covers (nil: all of the claim's)
	attr     string   // the fully qualified attribute name
	distinct bool     // distinctAttribute (else matchAttribute)
}

// what is the constraint as the claim writes it.
func (k claimConstraint) what() string {
	if k.distinct {
		return "constraint distinctAttribute " + k.attr
	}
	return "constraint matchAttribute " + k.attr
}

// covers reports whether k applies to request name ("request" or
// "request/subrequest" for a firstAvailable one).
func (k claimConstraint) covers(name string) bool {
	if k.requests == nil {
		return true
	}
	main, _, _ := strings.Cut(name, "/")
	return slices.Contains(k.requests, name) || slices.Contains(k.requests, main)
}

// constraintsOf returns c's constraints; why when one has neither kind,
// or outside scheduler mode (placement mode's allocation does not check
// them).
func (d *drat) constraintsOf(c *resourceapi.ResourceClaim) ([]claimConstraint, string) {
	if len(c.Spec.Devices.Constraints) > 0 && !d.sched {
		return nil, "claim constraints (matchAttribute, distinctAttribute) are honoured in scheduler mode only"
	}
	var out []claimConstraint
	for i, dc := range c.Spec.Devices.Constraints {
		k := claimConstraint{requests: dc.Requests}
		switch {
		case dc.MatchAttribute != nil:
			k.attr = string(*dc.MatchAttribute)
		case dc.DistinctAttribute != nil:
			k.attr, k.distinct = string(*dc.DistinctAttribute), true
		default:
			return nil, fmt.Sprintf("constraint %d has neither matchAttribute nor distinctAttribute", i)
		}
		out = append(out, k)
	}
	return out, ""
}

// attrValue is a device's value of the fully qualified attribute name
// (an unqualified attribute is in the driver's domain), typed ("s:x",
// "i:3", "b:true", "v:1.2.3"); "" when the device has none.
func attrValue(dev *resourceapi.Device, driver, name string) string {
	if dev == nil {
		return ""
	}
	a, ok := dev.Attributes[resourceapi.QualifiedName(name)]
	if domain, id, cut := strings.Cut(name, "/"); !ok && cut && domain == driver {
		a, ok = dev.Attributes[resourceapi.QualifiedName(id)]
	}
	switch {
	case !ok:
		return ""
	case a.StringValue != nil:
		return "s:" + *a.StringValue
	case a.IntValue != nil:
		return "i:" + strconv.FormatInt(*a.IntValue, 10)
	case a.BoolValue != nil:
		return "b:" + strconv.FormatBool(*a.BoolValue)
	case a.VersionValue != nil:
		return "v:" + *a.VersionValue
	}
	return ""
}

// localityAttr reports whether attribute name is one the library's pick
// of GPUs keeps together: the PCIe root or NUMA node of a GPU.
func localityAttr(name string) bool {
	_, id, _ := strings.Cut(name, "/")
	return id == "pcieRoot" || id == "numaNode"
}

// errConstraint is a pick that breaks a claim's constraint on node.
type errConstraint struct {
	node    string
	what    string // what is broken: "constraint matchAttribute X", "tolerations (…)"
	devices []string
}

func (e errConstraint) Error() string {
	return fmt.Sprintf("the GPUs gpusched picked on node %s (%s) break the claim's %s; the node is left out for the pod a while",
		e.node, strings.Join(e.devices, ", "), e.what)
}

// constraintNode returns the node a constraint failure names ("" for
// others).
func constraintNode(err error) string {
	var e errConstraint
	if errors.As(err, &e) {
		return e.node
	}
	return ""
}

// deviceOn returns the device named dev of node n: a GPU or a MIG device.
func deviceOn(n *draNode, dev string) *resourceapi.Device {
	if i, ok := n.index[dev]; ok && i < len(n.specs) {
		return n.specs[i]
	}
	if m := n.migOf(dev); m != nil {
		return m.spec
	}
	if m := n.staticOf(dev); m != nil {
		return m.spec
	}
	return nil
}

// checkConstraints checks the devices of alloc (c's, on node) against c's
// constraints, as kube's allocator does: every device a matchAttribute
// covers has the attribute, all of one value; every device a
// distinctAttribute covers has it, no two of one value.
func (d *drat) checkConstraints(c gpuClaim, node string, alloc *resourceapi.AllocationResult) error {
	n := d.nodes[node]
	if len(c.cons) == 0 || n == nil {
		return nil
	}
	for _, k := range c.cons {
		var devs, vals []string
		for _, r := range alloc.Devices.Results {
			if k.covers(r.Request) {
				devs = append(devs, r.Device)
				vals = append(vals, attrValue(deviceOn(n, r.Device), d.driver, k.attr))
			}
		}
		if !constraintHolds(k.distinct, vals) {
			return errConstraint{node: node, what: k.what(), devices: devs}
		}
	}
	return nil
}

// constraintHolds reports whether vals (one per device; "" for none)
// meet a matchAttribute (all one value) or distinctAttribute (no two
// alike).
func constraintHolds(distinct bool, vals []string) bool {
	if slices.Contains(vals, "") {
		return false
	}
	if distinct {
		s := slices.Clone(vals)
		slices.Sort(s)
		return len(slices.Compact(s)) == len(vals)
	}
	return len(slices.Compact(slices.Clone(vals))) <= 1
}

// constrainedNodes returns, for an unbound pod whose claims constrain
// whole GPUs, the nodes of cands (nil: all GPU nodes) where the library's
// pick keeps every constraint now (see the file comment), sorted; why
// when none does. ok is false when the pod has no such constraint.
func (d *drat) constrainedNodes(dp *draPod, cands []string) (nodes []string, ok bool, why string) {
	type need struct {
		claim string
		k     claimConstraint
		gpus  int
	}
	var needs []need
	for _, c := range dp.claims {
		for _, k := range c.cons {
			n := 0
			for _, r := range c.requests {
				if r.part == nil && k.covers(r.name) {
					n += r.count
				}
			}
			if n > 0 {
				needs = append(needs, need{claim: c.name, k: k, gpus: n})
			}
		}
	}
	if len(needs) == 0 {
		return nil, false, ""
	}
	if cands == nil {
		cands = sortedKeys(d.nodes)
	}
	for _, name := range cands {
		n := d.nodes[name]
		if n == nil || len(n.devices) == 0 {
			continue
		}
		free, known := d.freeSet(name)
		if !known {
			free = make([]bool, len(n.devices))
			for i := range free {
				free[i] = true
			}
		}
		if !slices.ContainsFunc(needs, func(x need) bool { return !d.keeps(n, free, x.k, x.gpus) }) {
			nodes = append(nodes, name)
		}
	}
	if len(nodes) > 0 {
		return nodes, true, ""
	}
	x := needs[0]
	if x.k.distinct {
		return nil, true, fmt.Sprintf("ResourceClaim %s: no node has %d free GPUs whose %s all differ, as its constraint distinctAttribute asks (gpusched picks GPUs close together, so every free GPU of the node must have a value of its own)", x.claim, x.gpus, x.k.attr)
	}
	return nil, true, fmt.Sprintf("ResourceClaim %s: no node has %d free GPUs of one %s that gpusched's pick keeps together, as its constraint matchAttribute asks", x.claim, x.gpus, x.k.attr)
}

// keeps reports whether the library's pick of k GPUs of node n, whose
// free GPUs are free (by index), keeps constraint c (see the file
// comment).
func (d *drat) keeps(n *draNode, free []bool, c claimConstraint, k int) bool {
	count := map[string]int{}
	var vals []string
	for i, f := range free {
		if !f || i >= len(n.specs) {
			continue
		}
		v := attrValue(n.specs[i], d.driver, c.attr)
		vals = append(vals, v)
		if v != "" {
			count[v]++
		}
	}
	if len(vals) < k {
		return false
	}
	if k <= 1 {
		return !slices.Contains(vals, "") // (one device: its value alone)
	}
	if c.distinct {
		return constraintHolds(true, vals)
	}
	if constraintHolds(false, vals) {
		return true // every free GPU of one value: any pick holds
	}
	if !localityAttr(c.attr) {
		return false
	}
	for _, m := range count {
		if m >= k {
			return true
		}
	}
	return false
}

// constrain returns the pod a cycle sees for dp (nil: left out): dp.out,
// narrowed for an unbound pod with no binding of gpusched's (assigned
// false) whose claims constrain whole GPUs to the
// nodes that keep the constraints now (constrainedNodes); when none does
// it is left out and dp.unkept says why.
func (d *drat) constrain(dp *draPod, assigned bool) *v1.Pod {
	dp.unkept = ""
	if dp.out == nil || assigned || dp.src.Spec.NodeName != "" || dp.src.Annotations[PlannedNodeAnnotation] != "" {
		return dp.out
	}
	nodes, ok, why := d.constrainedNodes(dp, nil)
	if !ok {
		return dp.out
	}
	if why != "" {
		dp.unkept = why
		return nil
	}
	out := dp.out.DeepCopy()
	onlyOn(out, nodes)
	return out
}
