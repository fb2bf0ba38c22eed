package plugin

import (
	"fmt"
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
// one gang (one task group) with different node selectors: g-0 wants
// pool=x (n1, n2), g-1 wants rack=r2 (n2, n3). Each is planned on a node
// its own selector accepts (n2 for both: the only node both accept),
// although n1 comes first, has room for both and is the first member's.
// With selectors no node satisfies together (g-1 wants rack=r3: n3
// alone), no member is ever activated on a node it rejects, and the
// pending message says the members' constraints differ.
func TestGangMembersNodeSelectorsDiffer(t *testing.T) {
	nodes := func() []*v1.Node {
		return []*v1.Node{gpuNode("n1", 8, h100, map[string]string{"pool": "x", "rack": "r1"}),
			gpuNode("n2", 8, h100, map[string]string{"pool": "x", "rack": "r2"}),
			gpuNode("n3", 8, h100, map[string]string{"pool": "y", "rack": "r3"})}
	}
	t.Run("common node", func(t *testing.T) {
		h, io := newTestHost(t, nodes()...)
		pods := gangMembers("g", 2, 4)
		pods[0].Spec.NodeSelector = map[string]string{"pool": "x"}
		pods[1].Spec.NodeSelector = map[string]string{"rack": "r2"}
		io.pods = pods
		step(h, io, time.Second)
		if got := nodesOf(h, pods); got["g-0"] != "n2" || got["g-1"] != "n2" {
			t.Fatalf("members planned on %v (pending %q), want both on n2", got, io.pending["g-0"])
		}
	})
	t.Run("no common node", func(t *testing.T) {
		h, io := newTestHost(t, nodes()...)
		pods := gangMembers("g", 2, 4)
		pods[0].Spec.NodeSelector = map[string]string{"pool": "x"}
		pods[1].Spec.NodeSelector = map[string]string{"rack": "r3"}
		io.pods = pods
		for range 3 {
			step(h, io, 10*time.Second)
			got := nodesOf(h, pods)
			if (got["g-0"] != "" && got["g-0"] == "n3") || (got["g-1"] != "" && got["g-1"] != "n3") {
				t.Fatalf("members planned on %v: one on a node its selector rejects", got)
			}
		}
		if msg := io.pending["g-1"]; !strings.Contains(msg, "node selectors, affinity or tolerations differ") {
			t.Errorf("g-1's pending message %q does not say the members' constraints differ", msg)
		}
	})
}
