package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

// CEL selectors of GPU requests (docs/dra.md).
//
// A request's selectors are evaluated with kube's own DRA CEL library
// (k8s.io/dynamic-resource-allocation/cel, the one its allocator uses) on
// the devices of the driver's slices. gpusched chooses the GPUs of a node
// itself (NVLink, NUMA, packing), so a selector restricts nodes, not
// single GPUs: a node takes the request when every one of its devices of
// the request's kind (whole GPUs; for MIG, every partition of the
// request's profile, dra_mig.go) matches all its selectors. Selectors on
// what a node's GPUs share (productName, architecture, memory,
// driverVersion, cudaComputeCapability) work as in kube; a selector only
// some GPUs of a node match (an index, a uuid) leaves that node out, and
// a pod no node is left for waits, saying so.

// celCache holds the compiled selectors (kube's cache: compile once).
var celCache = dracel.NewCache(256, dracel.Features{EnableConsumableCapacity: true})

// deviceMatches reports whether dev of driver matches every CEL selector
// of sels; an error names the selector that does not compile or
// evaluate.
func deviceMatches(driver string, dev *resourceapi.Device, sels []resourceapi.DeviceSelector) (bool, error) {
	for _, s := range sels {
		if s.CEL == nil {
			continue
		}
		r := celCache.GetOrCompile(s.CEL.Expression)
		if r.Error != nil {
			return false, fmt.Errorf("CEL selector %q: %s", s.CEL.Expression, r.Error.Detail)
		}
		ok, _, err := r.DeviceMatches(context.Background(), dracel.Device{Driver: driver,
			AllowMultipleAllocations: dev.AllowMultipleAllocations, Attributes: dev.Attributes, Capacity: dev.Capacity})
		if err != nil {
			return false, fmt.Errorf("CEL selector %q on device %s: %v", s.CEL.Expression, dev.Name, err)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// celMemo keeps the verdicts of selectors on the devices of the slices
// the nodes were last built from (drat.sliceKey): pods with the same
// selectors (one template's) evaluate them once. An evaluation costs
// about 12 µs (a device's attributes become CEL maps each time).
type celMemo struct {
	key  string
	seen map[celKey]celVerdict
	// nodes are the nodes whose GPUs all match a set of selectors (by
	// selKey): a whole-GPU request's nodes; for a MIG request (by
	// migNodesKey), the nodes whose MIG devices of its profile all match
	// and have no taint it does not tolerate.
	nodes map[string][]string
	// profiles is what migProfiles found for a set of selectors (by
	// selKey): with a thousand MIG nodes, every new MIG pod's view went
	// through every node's MIG devices.
	profiles map[string]migFound
}

type celKey struct {
	dev  *resourceapi.Device
	sels string
}

type celVerdict struct {
	ok  bool
	err error
}

// selKey identifies sels in celMemo.
func selKey(sels []resourceapi.DeviceSelector) string {
	var kb strings.Builder
	for _, s := range sels {
		if s.CEL != nil {
			kb.WriteString(s.CEL.Expression + "\x00")
		}
	}
	return kb.String()
}

// matches is deviceMatches of d's driver, remembered for the current
// slices; key is selKey(sels).
func (d *drat) matches(dev *resourceapi.Device, sels []resourceapi.DeviceSelector, key string) (bool, error) {
	d.celFresh()
	k := celKey{dev: dev, sels: key}
	v, ok := d.cel.seen[k]
	if !ok {
		v.ok, v.err = deviceMatches(d.driver, dev, sels)
		d.cel.seen[k] = v
	}
	return v.ok, v.err
}

// celFresh empties the memo when the slices changed.
func (d *drat) celFresh() {
	if d.cel.seen == nil || d.cel.key != d.sliceKey {
		d.cel = celMemo{key: d.sliceKey, seen: map[celKey]celVerdict{}, nodes: map[string][]string{}, profiles: map[string]migFound{}}
	}
}

// allMatch reports whether devs is not empty and each of them matches
// sels.
func (d *drat) allMatch(devs []*resourceapi.Device, sels []resourceapi.DeviceSelector) (bool, error) {
	key := selKey(sels)
	for _, dev := range devs {
		if ok, err := d.matches(dev, sels, key); !ok || err != nil {
			return false, err
		}
	}
	return len(devs) > 0, nil
}

// hasCEL reports whether sels has a CEL selector.
func hasCEL(sels []resourceapi.DeviceSelector) bool {
	return slices.ContainsFunc(sels, func(s resourceapi.DeviceSelector) bool { return s.CEL != nil })
}

// celNodes returns the nodes the CEL selectors of claims' requests, and
// their MIG profile or share, leave (sorted; nil when no request has
// selectors or a part: any node), or why none is.
func (d *drat) celNodes(claims []gpuClaim) ([]string, string) {
	var nodes []string
	selecting := false
	for _, c := range claims {
		for _, r := range c.requests {
			if !hasCEL(r.sels) && r.part == nil && !r.all && !d.anyMIGOnly() {
				continue
			}
			ok, err := d.requestNodes(r)
			if err != nil {
				return nil, fmt.Sprintf("ResourceClaim %s: request %q: %v", c.name, r.name, err)
			}
			if !r.own && r.part == nil && !r.all && len(ok) == len(d.nodes) {
				continue // only its class's selectors, which every GPU node meets: any node
			}
			ok = slices.Clone(ok) // (remembered: not to be changed)
			if r.all {
				ok = slices.DeleteFunc(ok, func(n string) bool { return len(d.nodes[n].devices) != r.count })
			}
			if selecting {
				ok = slices.DeleteFunc(ok, func(n string) bool { return !slices.Contains(nodes, n) })
			}
			nodes, selecting = ok, true
			if len(nodes) > 0 {
				continue
			}
			switch {
			case r.part != nil && r.part.mig:
				return nil, fmt.Sprintf("ResourceClaim %s: no node's MIG devices of profile %s all match the CEL selectors of request %q and have no taint it does not tolerate", c.name, r.part.profile, r.name)
			case r.part != nil:
				return nil, fmt.Sprintf("ResourceClaim %s: no node's GPUs all allow multiple allocations and have the capacity request %q asks for (and match its CEL selectors)", c.name, r.name)
			}
			why := "gpusched picks the GPUs of a node, so every GPU of a node must match"
			if d.anyMIGOnly() {
				why += "; a node whose GPUs are published through their MIG devices only gives none whole"
			}
			return nil, fmt.Sprintf("ResourceClaim %s: no node's GPUs all match the CEL selectors of request %q (%s)", c.name, r.name, why)
		}
	}
	return nodes, ""
}

// requestNodes returns the nodes (sorted) whose devices of r's kind all
// match r's selectors and that can take its MIG profile or share;
// remembered for whole-GPU and MIG requests.
func (d *drat) requestNodes(r gpuRequest) ([]string, error) {
	d.celFresh()
	key, memo := selKey(r.sels), r.part == nil
	if r.part != nil && r.part.mig {
		key, memo = migNodesKey(key, r), true
	}
	if memo {
		if ok, seen := d.cel.nodes[key]; seen {
			return ok, nil
		}
	}
	ok := []string{}
	for _, name := range sortedKeys(d.nodes) {
		n := d.nodes[name]
		if len(n.migOnly) > 0 && (r.part == nil || !r.part.mig) {
			continue // (GPUs for MIG devices only: counterSetGPUs, dra_mig.go)
		}
		m, err := d.allMatch(d.devicesFor(n, r), r.sels)
		if err != nil {
			return nil, err
		}
		if m && taintFree(n, r) && (r.part == nil || r.part.mig || d.shareMilliOn(n, r.part) > 0) {
			ok = append(ok, name)
		}
	}
	if memo {
		d.cel.nodes[key] = ok
	}
	return ok, nil
}

// anyMIGOnly reports whether a node has GPUs for MIG devices only
// (draNode.migOnly): whole-GPU requests then have their nodes.
func (d *drat) anyMIGOnly() bool {
	for _, n := range d.nodes {
		if len(n.migOnly) > 0 {
			return true
		}
	}
	return false
}

// migNodesKey is the celMemo.nodes key of r, a MIG request whose
// selectors' selKey is sels: its profile and tolerations too.
func migNodesKey(sels string, r gpuRequest) string {
	tols, _ := json.Marshal(r.tols)
	return sels + "\x01" + r.part.profile + "\x01" + string(tols)
}

// devicesFor returns the devices of n a request may be given: its GPUs,
// or its MIG devices of the request's profile.
func (d *drat) devicesFor(n *draNode, r gpuRequest) []*resourceapi.Device {
	if r.part != nil && r.part.mig {
		return n.migsOf(r.part.profile)
	}
	return n.specs
}

// onlyOn restricts p (the cycle's copy) to nodes through a required node
// affinity on metadata.name: one term per node and term of its own (a
// node field selector's In takes one value, so the nodes are ORed as
// terms, each ANDed with one of the pod's terms); nil nodes: no
// restriction.
func onlyOn(p *v1.Pod, nodes []string) {
	if nodes == nil {
		return
	}
	na := requiredTerms(p)
	own := na.NodeSelectorTerms
	terms := make([]v1.NodeSelectorTerm, 0, len(own)*len(nodes))
	for _, t := range own {
		for _, n := range nodes {
			x := *t.DeepCopy()
			x.MatchFields = append(x.MatchFields, v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{n}})
			terms = append(terms, x)
		}
	}
	if len(terms) == 0 {
		// No node: a term no node (all are named) matches.
		terms = []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{""}}}}}
	}
	na.NodeSelectorTerms = terms
}

// requiredTerms returns p's required node selector, with at least one term
// (an empty one, which every node matches, when p has none).
func requiredTerms(p *v1.Pod) *v1.NodeSelector {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	}
	return na.RequiredDuringSchedulingIgnoredDuringExecution
}
