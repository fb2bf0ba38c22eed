package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// zoneLabel is the well-known zone label.
const zoneLabel = "topology.kubernetes.io/zone"

// zonedNodes returns perZone 8-GPU nodes in each of zones, named
// z<zone>-<i>, labelled with their zone.
func zonedNodes(zones []string, perZone int) []*v1.Node {
	var out []*v1.Node
	for _, z := range zones {
		for i := range perZone {
			out = append(out, gpuNode(fmt.Sprintf("z%s-%d", z, i), 8, h100, map[string]string{zoneLabel: z}))
		}
	}
	return out
}

// TestKubeFiltersGangZoneAntiAffinityPlanned (issue 26, defect 4): a gang
// of four 4-GPU members, each anti-affine to the others on the zone
// label (or spread over the zones with maxSkew 1), over four zones of two 8-GPU nodes each: a packing plan puts two
// members on one node, then two in one zone, both of which kube rejects.
// The gang is planned one member per zone within two cycles, and no
// member is activated where kube would reject it.
func TestKubeFiltersGangZoneAntiAffinityPlanned(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*v1.Pod)
	}{
		{"anti-affinity", func(p *v1.Pod) { antiAffine(p, "g", zoneLabel) }},
		{"spread", func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: zoneLabel,
				WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSel("g")}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testGangOnePerZone(t, tc.set) })
	}
}

// testGangOnePerZone is TestKubeFiltersGangZoneAntiAffinityPlanned with
// the members constrained by set.
func testGangOnePerZone(t *testing.T, set func(*v1.Pod)) {
	h, io := newTestHost(t, zonedNodes([]string{"a", "b", "c", "d"}, 2)...)
	zoneOf := map[string]string{}
	for _, n := range io.nodes {
		zoneOf[n.Name] = n.Labels[zoneLabel]
	}
	pods := gangMembers("g", 4, 4)
	for _, p := range pods {
		set(p)
	}
	io.pods = pods
	for cycle := 1; cycle <= 2; cycle++ {
		step(h, io, time.Second)
		got := nodesOf(h, pods)
		seen := map[string]string{}
		for _, p := range pods {
			n := got[p.Name]
			if n == "" {
				continue
			}
			if o, dup := seen[zoneOf[n]]; dup {
				t.Fatalf("cycle %d: %s and %s planned in zone %s (%v)", cycle, o, p.Name, zoneOf[n], got)
			}
			seen[zoneOf[n]] = p.Name
		}
		if len(seen) == len(pods) {
			if len(io.activated) != len(pods) {
				t.Errorf("activated %v, want each member once", io.activated)
			}
			return
		}
	}
	t.Fatalf("not planned after two cycles: %v (pending %q)", nodesOf(h, pods), io.pending["g-0"])
}

// TestKubeFiltersGangZoneAntiAffinityTooFewZones (issue 26, defect 4): a
// gang of three members anti-affine to each other on the zone label does
// not fit two zones, however many nodes they have: no member is ever
// activated, and its pending message says one pod per zone.
func TestKubeFiltersGangZoneAntiAffinityTooFewZones(t *testing.T) {
	h, io := newTestHost(t, zonedNodes([]string{"a", "b"}, 2)...)
	pods := gangMembers("g", 3, 4)
	for _, p := range pods {
		antiAffine(p, "g", zoneLabel)
	}
	io.pods = pods
	for range 4 {
		step(h, io, 20*time.Second)
	}
	if len(io.activated) != 0 {
		t.Fatalf("activated %v: three members anti-affine on the zone cannot share two zones", io.activated)
	}
	t.Logf("pending: %s", io.pending["g-0"])
	if msg := io.pending["g-0"]; !strings.Contains(msg, "at most 1 of its pods per "+zoneLabel) {
		t.Errorf("g-0's pending message %q does not say one pod per zone", msg)
	}
}

// TestGangMembersNodeSelectorsDiffer (issue 26, defect 4): two members of
// one gang with different node selectors: g-0 wants pool=x (n1, n2), g-1
// wants rack=r2 (n2, n3), or rack=r3 (n3 alone: no node both accept).
// Each is planned, in the first cycle, on a node its own selector
// accepts (the members become task groups of their own, each with its
// own node filter: gpusched.HostFilter.Group); members that no node
// accepts for one of them (g-1 wants rack=r9) wait, never activated, and
// the pending message says which member's constraints no node meets.
func TestGangMembersNodeSelectorsDiffer(t *testing.T) {
	nodes := func() []*v1.Node {
		return []*v1.Node{gpuNode("n1", 8, h100, map[string]string{"pool": "x", "rack": "r1"}),
			gpuNode("n2", 8, h100, map[string]string{"pool": "x", "rack": "r2"}),
			gpuNode("n3", 8, h100, map[string]string{"pool": "y", "rack": "r3"})}
	}
	for _, tc := range []struct {
		rack string
		g1   []string // where g-1 may go
	}{{"r2", []string{"n2", "n3"}}, {"r3", []string{"n3"}}} {
		t.Run("rack="+tc.rack, func(t *testing.T) {
			h, io := newTestHost(t, nodes()...)
			pods := gangMembers("g", 2, 8) // (8 GPUs each: one member a node)
			pods[0].Spec.NodeSelector = map[string]string{"pool": "x"}
			pods[1].Spec.NodeSelector = map[string]string{"rack": tc.rack}
			io.pods = pods
			step(h, io, time.Second)
			got := nodesOf(h, pods)
			if !slices.Contains([]string{"n1", "n2"}, got["g-0"]) || !slices.Contains(tc.g1, got["g-1"]) {
				t.Fatalf("members planned on %v (pending %q), want g-0 on n1 or n2, g-1 on %v", got, io.pending["g-0"], tc.g1)
			}
			if len(io.activated) != 2 {
				t.Errorf("activated %v, want both members", io.activated)
			}
		})
	}
	t.Run("no node for one member", func(t *testing.T) {
		h, io := newTestHost(t, nodes()...)
		pods := gangMembers("g", 2, 4)
		pods[0].Spec.NodeSelector = map[string]string{"pool": "x"}
		pods[1].Spec.NodeSelector = map[string]string{"rack": "r9"}
		io.pods = pods
		for range 3 {
			step(h, io, 10*time.Second)
		}
		if got := nodesOf(h, pods); got["g-0"] != "" || got["g-1"] != "" || len(io.activated) != 0 {
			t.Fatalf("members planned on %v (activated %v): g-1's selector accepts no node", got, io.activated)
		}
		if msg := io.pending["g-1"]; !strings.Contains(msg, "node selectors, affinity or tolerations differ") || !strings.Contains(msg, "g-1") {
			t.Errorf("g-1's pending message %q does not say that g-1's constraints accept no node", msg)
		}
	})
}
