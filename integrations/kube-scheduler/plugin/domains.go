package plugin

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Gang members that constrain each other on a topology key other than
// the hostname (issue 26, defect 4): required pod anti-affinity or
// DoNotSchedule topology spread on a zone or a rack label. kube accepts
// such a gang, whatever the order it binds the members in, with at most
// a few members in each domain of the key (among the nodes that carry
// its label): one for anti-affinity, maxSkew for spread. (A rigid gang's
// spread is planned by quota instead, its members let through in an
// order kube accepts: spread.go; the caps remain for an elastic gang's
// spread and a second spread key.) The
// library's planner does not know of these domains. Such a gang is
// capped per node as it is per domain (perHostCap: a node is in one
// domain of every key), and each of its plans is checked against the
// domain caps before kube's filters run (domainRefusal): a plan that
// puts more members in one domain is taken back, every node of that
// domain but its first member's is excluded for the job (the backoff of
// applyRejections), and the job is planned again in the same cycle
// (decide's replans). Each plan taken back so leaves one node in each
// domain it crowded: a gang settles in a few plans, and never has a
// member activated where kube would reject it for the others.

// domainCap is how many members of a gang one domain of key may hold.
type domainCap struct {
	key   string
	limit int
	// what: the constraint's kind, for messages.
	what string
}

// domainCaps returns the caps, per topology key other than the hostname,
// that the members' constraints selecting every member (termSelectsAll)
// put on each domain: 1 for a required pod anti-affinity term, maxSkew
// for a DoNotSchedule spread constraint not on key skip (planned by
// quota, spread.go; sufficient whatever the binding order: a member's
// domain then never holds more than maxSkew above an empty one); the
// lowest per key, sorted by key; nil if none.
func domainCaps(members []*v1.Pod, skip string) []domainCap {
	var caps []domainCap
	lower := func(key string, limit int, what string) {
		if key == "" || key == v1.LabelHostname || limit <= 0 {
			return
		}
		if i := slices.IndexFunc(caps, func(c domainCap) bool { return c.key == key }); i >= 0 {
			if limit < caps[i].limit {
				caps[i] = domainCap{key, limit, what}
			}
			return
		}
		caps = append(caps, domainCap{key, limit, what})
	}
	for _, m := range members {
		_, anti, spread := podTerms(m)
		for _, t := range anti {
			if termSelectsAll(m, t.LabelSelector, t.Namespaces, t.NamespaceSelector, nil, members) {
				lower(t.TopologyKey, 1, "required pod anti-affinity")
			}
		}
		for _, c := range spread {
			if c.TopologyKey != skip && termSelectsAll(m, c.LabelSelector, nil, nil, c.MatchLabelKeys, members) {
				lower(c.TopologyKey, int(c.MaxSkew), fmt.Sprintf("DoNotSchedule topology spread, maxSkew %d", c.MaxSkew))
			}
		}
	}
	slices.SortFunc(caps, func(a, b domainCap) int { return strings.Compare(a.key, b.key) })
	return caps
}

// domainRefusal returns the refusal of a plan that puts more of a job's
// members in one domain than caps allow (domainCaps), nil if none does.
// nodes are the cycle's nodes. Its node is that of the first member over
// a cap; also lists the other nodes to exclude for the job: for every
// crowded domain (of every key), its nodes but its first member's, so
// that the next plan puts no more than the per-node cap there.
func domainRefusal(caps []domainCap, nodes []*v1.Node, plan []plannedPod) *refusal {
	if len(caps) == 0 || len(plan) < 2 {
		return nil
	}
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var r *refusal
	excluded := map[string]bool{}
	for _, dc := range caps {
		first := map[string]string{} // domain → its first member's node
		count := map[string]int{}
		crowded := map[string]bool{}
		for _, pp := range plan {
			n := byName[pp.node]
			if n == nil {
				continue
			}
			d, ok := n.Labels[dc.key]
			if !ok {
				continue // (kube's filters leave a node without the key alone)
			}
			if count[d] == 0 {
				first[d] = pp.node
			}
			if count[d]++; count[d] <= dc.limit {
				continue
			}
			crowded[d] = true
			if r == nil {
				r = &refusal{pod: pp.pod, node: pp.node, own: true,
					why: fmt.Sprintf("%s on %s: more than %d of its pods planned in %s=%s", dc.what, dc.key, dc.limit, dc.key, d)}
			}
		}
		for _, n := range nodes {
			if d, ok := n.Labels[dc.key]; ok && crowded[d] && n.Name != first[d] {
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
