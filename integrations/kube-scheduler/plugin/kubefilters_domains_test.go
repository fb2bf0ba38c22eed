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
