package plugin

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Gang members anti-affine to each other on a topology key other than the
// hostname (issue 26, defect 4): a zone, a rack label. kube accepts such a
// gang only with each member in a domain of its own (among the nodes that
// carry the key's label), which the library's planner does not know of.
// Such a gang is capped at one member per node (perHostCap: a node is in
// one domain of every key), and each of its plans is checked for two
// members in one domain before kube's filters run (domainRefusal): a plan
// that puts several in one domain is taken back, every node of that
// domain but the first member's is excluded for the job (the backoff of
// applyRejections), and the job is planned again in the same cycle
// (decide's replans). Each plan taken back so leaves one node in each
// domain it crowded: a gang of n members over zones settles in at most n
// plans, and never has a member activated where kube would reject it.

// distinctKeys returns the topology keys other than the hostname on which
// members must each be in a domain of their own: a member's required pod
// anti-affinity term on the key selects every member (termSelectsAll).
// Sorted; nil if none.
func distinctKeys(members []*v1.Pod) []string {
	var keys []string
	for _, m := range members {
		_, anti, _ := podTerms(m)
		for _, t := range anti {
			if t.TopologyKey == "" || t.TopologyKey == v1.LabelHostname || slices.Contains(keys, t.TopologyKey) {
				continue
			}
			if termSelectsAll(m, t.LabelSelector, t.Namespaces, t.NamespaceSelector, nil, members) {
				keys = append(keys, t.TopologyKey)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// domainRefusal returns the refusal of a plan that puts two of a job's
// members in one domain of a key they must be distinct on (keys,
// distinctKeys), nil if none does. nodes are the cycle's nodes. Its node
// is the second member's; also lists the other nodes to exclude for the
// job: for every crowded domain (of every key), its nodes but the first
// member's, so that the next plan puts at most one member there.
func domainRefusal(keys []string, nodes []*v1.Node, plan []plannedPod) *refusal {
	if len(keys) == 0 || len(plan) < 2 {
		return nil
	}
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var r *refusal
	excluded := map[string]bool{}
	for _, key := range keys {
		first := map[string]plannedPod{} // domain → its first member
		crowded := map[string]bool{}
		for _, pp := range plan {
			n := byName[pp.node]
			if n == nil {
				continue
			}
			d, ok := n.Labels[key]
			if !ok {
				continue // (kube's anti-affinity ignores a node without the key)
			}
			f, seen := first[d]
			if !seen {
				first[d] = pp
				continue
			}
			crowded[d] = true
			if r == nil {
				r = &refusal{pod: pp.pod, node: pp.node, own: true,
					why: fmt.Sprintf("required pod anti-affinity on %s: pod %s is planned in the same domain %s=%s (node %s)", key, f.pod.Name, key, d, f.node)}
			}
		}
		if len(crowded) == 0 {
			continue
		}
		for _, n := range nodes {
			d, ok := n.Labels[key]
			if ok && crowded[d] && n.Name != first[d].node {
				excluded[n.Name] = true
			}
		}
	}
	if r == nil {
		return nil
	}
	delete(excluded, r.node)
	r.also = sortedKeys(excluded)
	return r
}
