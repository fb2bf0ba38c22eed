package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// zoneSpread gives p a topology spread on the zone label over the pods
// labelled app=g, with maxSkew skew, whenUnsatisfiable how.
func zoneSpread(p *v1.Pod, skew int32, how v1.UnsatisfiableConstraintAction) *v1.TopologySpreadConstraint {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{MaxSkew: skew,
		TopologyKey: zoneLabel, WhenUnsatisfiable: how, LabelSelector: appSel("g")})
	return &p.Spec.TopologySpreadConstraints[len(p.Spec.TopologySpreadConstraints)-1]
}

// kubeBinds plays kube-scheduler on the host's plans: it takes, one at a
// time, a pod the host lets through (an assignment, not held at
// PreEnqueue), the first of them in order's order (order: kube's queue
// order is not the host's to choose), runs kube's own InterPodAffinity and
// PodTopologySpread filters for it on its planned node next to the pods
// bound and the pods reserved before it (assumed, as in kube's cache),
// fails the test if they refuse it, and reserves it (Reserve: the next
// wave is let through). It returns each pod's node once every pod let
// through is reserved.
func kubeBinds(t *testing.T, h *host, io *fakeIO, order func(a, b *v1.Pod) int) map[string]string {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	reserved := map[types.UID]string{}
	for {
		var ready []*v1.Pod
		for _, p := range io.pods {
			a, ok := h.assignmentOf(p.UID)
			if !ok || p.Spec.NodeName != "" || reserved[p.UID] != "" || planHeld(a) != "" || h.waveHeld(p.UID) != "" {
				continue
			}
			ready = append(ready, p)
		}
		if len(ready) == 0 {
			break
		}
		slices.SortStableFunc(ready, order)
		p := ready[0]
		a, _ := h.assignmentOf(p.UID)
		var view []*v1.Pod
		for _, q := range io.pods {
			if n := reserved[q.UID]; n != "" {
				c := q.DeepCopy()
				c.Spec.NodeName = n
				q = c
			}
			view = append(view, q)
		}
		kf := newKubeFilters(ctx, nil, nil)
		kf.see(io.nodes, view)
		kf.startCycle(nil, func(p *v1.Pod) string { return jobID(p, h.args) })
		if why, no := kf.verdict(ctx, h.log, p)[a.node]; no {
			t.Fatalf("kube's filters refuse %s on %s after %v: %s", p.Name, a.node, reserved, why)
		}
		if _, _, err := h.reserve(p.UID, a.node); err != nil {
			t.Fatalf("reserve %s: %v", p.Name, err)
		}
		reserved[p.UID] = a.node
		io.activate(h.releaseWave(p.UID))
	}
	got := map[string]string{}
	for _, p := range io.pods {
		if n := reserved[p.UID]; n != "" {
			got[p.Name] = n
		}
	}
	return got
}

// byNode and byNodeDesc are kube queue orders that bind a zone's members
// together: all of zone a first, or all of zone b first.
func byNode(h *host) func(a, b *v1.Pod) int {
	return func(a, b *v1.Pod) int {
		x, _ := h.assignmentOf(a.UID)
		y, _ := h.assignmentOf(b.UID)
		return strings.Compare(x.node+a.Name, y.node+b.Name)
	}
}

func byNodeDesc(h *host) func(a, b *v1.Pod) int {
	f := byNode(h)
	return func(a, b *v1.Pod) int { return f(b, a) }
}

// zoneCounts counts the pods of got (pod → node) per zone.
func zoneCounts(got map[string]string) map[string]int {
	m := map[string]int{}
	for _, n := range got {
		m[n[1:2]]++ // (zonedNodes: z<zone>-<i>)
	}
	return m
}

// planSpread runs cycles until every member of pods is planned (at most
// cycles), then lets kube bind them in both adversarial orders; it fails
// the test if the gang is not planned or kube refuses a member, and
// returns the members per zone.
func planSpread(t *testing.T, h *host, io *fakeIO, pods []*v1.Pod, cycles int) map[string]int {
	t.Helper()
	for c := 1; c <= cycles; c++ {
		step(h, io, time.Second)
		got := nodesOf(h, pods)
		if !slices.Contains(mapValues(got), "") {
			break
		}
		if c == cycles {
			t.Fatalf("not planned after %d cycles: %v (pending %q)", cycles, got, io.pending[pods[0].Name])
		}
	}
	// Each adversarial order on its own copy of the host's assignments:
	// reserve marks them, so run the first order, then take the marks
	// back for the second.
	first := kubeBinds(t, h, io, byNode(h))
	if len(first) != len(pods) {
		t.Fatalf("kube bound %v, want all %d members", first, len(pods))
	}
	unreserveAll(h)
	second := kubeBinds(t, h, io, byNodeDesc(h))
	if len(second) != len(pods) {
		t.Fatalf("kube bound %v in the other order, want all %d members", second, len(pods))
	}
	return zoneCounts(first)
}

// unreserveAll takes back the reservations kubeBinds made, to play
// kube's binding again in another order.
func unreserveAll(h *host) {
	h.amu.Lock()
	defer h.amu.Unlock()
	for _, a := range h.assign {
		a.reserved = false
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// spreadGang returns a test host over zones a and b of two 8-GPU nodes
// each, and a gang of n 4-GPU members spread over the zones with maxSkew
// 1, whenUnsatisfiable how, its pods.
func spreadGang(t *testing.T, n int, how v1.UnsatisfiableConstraintAction) (*host, *fakeIO, []*v1.Pod) {
	h, io := newTestHost(t, zonedNodes([]string{"a", "b"}, 2)...)
	pods := gangMembers("g", n, 4)
	for _, p := range pods {
		zoneSpread(p, 1, how)
	}
	io.pods = pods
	return h, io, pods
}

// TestSpreadGangBeyondMaxSkewPerZone (kube plugin, zone spread): a gang
// of six 4-GPU members with a DoNotSchedule spread on the zone label,
// maxSkew 1, over two zones of two 8-GPU nodes: kube's PodTopologySpread
// accepts 3+3 (skew is the difference between the most and least loaded
// zones, not a cap of maxSkew per zone), so the gang is planned 3+3, and
// every member passes kube's own filter at its turn, whatever order kube
// binds them in (the host lets them through in waves).
func TestSpreadGangBeyondMaxSkewPerZone(t *testing.T) {
	h, io, pods := spreadGang(t, 6, v1.DoNotSchedule)
	if got := planSpread(t, h, io, pods, 3); got["a"] != 3 || got["b"] != 3 {
		t.Fatalf("members per zone %v, want 3+3", got)
	}
}

// TestSpreadGangCountsExistingPods (kube plugin, zone spread): pods
// already in a zone that the constraint's selector matches count toward
// the skew, as kube counts them. Zone a already runs two pods labelled
// app=g; a gang of four with maxSkew 1 ends 3+3 only as 1+3 (a=2+1,
// b=0+3), every member passing kube's filter at its turn. With
// matchLabelKeys [run] and the running pods of another run, they do not
// count: 2+2.
func TestSpreadGangCountsExistingPods(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keys       []string
		wantA      int
		wantB      int
		otherRunOf string
	}{
		{"counted", nil, 1, 3, "r1"},
		{"matchLabelKeys", []string{"run"}, 2, 2, "r0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, io := newTestHost(t, zonedNodes([]string{"a", "b"}, 2)...)
			var old []*v1.Pod
			for i := range 2 {
				o := boundPod(fmt.Sprintf("old-%d", i), "za-0", 1, fmt.Sprint(i), map[string]string{"app": "g", "run": tc.otherRunOf})
				old = append(old, o)
			}
			pods := gangMembers("g", 4, 4)
			for _, p := range pods {
				p.Labels["run"] = "r1"
				zoneSpread(p, 1, v1.DoNotSchedule).MatchLabelKeys = tc.keys
			}
			io.pods = append(old, pods...)
			got := planSpread(t, h, io, pods, 3)
			if got["a"] != tc.wantA || got["b"] != tc.wantB {
				t.Fatalf("members per zone %v, want a=%d b=%d", got, tc.wantA, tc.wantB)
			}
		})
	}
}

// TestSpreadGangZoneDomains (kube plugin, zone spread): which zones kube
// counts as domains. A third zone c whose only node has no GPU (so no
// member can go there) counts when the members' node selector accepts it
// (nodeAffinityPolicy Honor, the default: the global minimum stays 0, so
// at most maxSkew members per zone, and a gang of four over a and b
// waits, saying so), and not when it does not (2+2). A zone c whose GPU
// node has a taint the members do not tolerate counts (nodeTaintsPolicy
// Ignore, the default: waits) unless nodeTaintsPolicy is Honor (2+2).
// With minDomains 3 and two zones, kube's global minimum is 0: the gang
// of four waits, and one of two binds 1+1.
func TestSpreadGangZoneDomains(t *testing.T) {
	honor := v1.NodeInclusionPolicyHonor
	cpuNode := func() *v1.Node { return node("zc-0", 0, map[string]string{zoneLabel: "c", "pool": "cpu"}) }
	tainted := func() *v1.Node {
		n := gpuNode("zc-0", 8, h100, map[string]string{zoneLabel: "c"})
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
		return n
	}
	three := int32(3)
	for _, tc := range []struct {
		name  string
		extra *v1.Node
		n     int
		set   func(p *v1.Pod, c *v1.TopologySpreadConstraint)
		waits bool
	}{
		{"cpu zone counted", cpuNode(), 4, nil, true},
		{"cpu zone not selected", cpuNode(), 4, func(p *v1.Pod, _ *v1.TopologySpreadConstraint) {
			p.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		}, false},
		{"tainted zone counted", tainted(), 4, nil, true},
		{"tainted zone honoured", tainted(), 4, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor }, false},
		{"minDomains", nil, 4, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.MinDomains = &three }, true},
		{"minDomains two members", nil, 2, func(_ *v1.Pod, c *v1.TopologySpreadConstraint) { c.MinDomains = &three }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := zonedNodes([]string{"a", "b"}, 2)
			for _, n := range nodes {
				n.Labels["pool"] = "gpu"
			}
			if tc.extra != nil {
				nodes = append(nodes, tc.extra)
			}
			h, io := newTestHost(t, nodes...)
			pods := gangMembers("g", tc.n, 4)
			for _, p := range pods {
				c := zoneSpread(p, 1, v1.DoNotSchedule)
				if tc.set != nil {
					tc.set(p, c)
				}
			}
			io.pods = pods
			if tc.waits {
				for range 4 {
					step(h, io, 20*time.Second)
				}
				if len(io.activated) != 0 {
					t.Fatalf("activated %v: kube accepts at most one member per zone here", io.activated)
				}
				t.Logf("pending: %s", io.pending["g-0"])
				if msg := io.pending["g-0"]; !strings.Contains(msg, "topology spread") {
					t.Errorf("g-0's pending message %q does not say why the spread cannot hold", msg)
				}
				return
			}
			got := planSpread(t, h, io, pods, 3)
			if got["a"] != tc.n/2 || got["b"] != tc.n/2 {
				t.Fatalf("members per zone %v, want %d+%d", got, tc.n/2, tc.n/2)
			}
		})
	}
}

// TestSpreadGangScheduleAnyway (kube plugin): a ScheduleAnyway spread
// never holds a gang back: six members of 4 GPUs over two zones of two
// nodes are planned in the first cycle, however kube's scoring would
// have spread them.
func TestSpreadGangScheduleAnyway(t *testing.T) {
	h, io, pods := spreadGang(t, 6, v1.ScheduleAnyway)
	step(h, io, time.Second)
	if got := nodesOf(h, pods); slices.Contains(mapValues(got), "") {
		t.Fatalf("not planned in the first cycle: %v (pending %q)", got, io.pending["g-0"])
	}
	if got := kubeBinds(t, h, io, byNode(h)); len(got) != len(pods) {
		t.Fatalf("kube bound %v, want all", got)
	}
}

// TestSpreadGangHostname (kube plugin): a spread on the hostname keeps
// its cap of maxSkew members per node, which kube accepts whatever order
// it binds them in: four 2-GPU members with maxSkew 2 over three 8-GPU
// nodes are planned at most two per node and each passes kube's own
// filter at its turn in both adversarial orders. (A gang of more than
// maxSkew × the GPU nodes is planned by quota:
// TestSpreadGangHostnameBeyondMaxSkew.)
func TestSpreadGangHostname(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil), gpuNode("n3", 8, h100, nil))
	pods := gangMembers("g", 4, 2)
	for _, p := range pods {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: v1.LabelHostname,
			WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSel("g")}}
	}
	io.pods = pods
	step(h, io, time.Second)
	per := map[string]int{}
	for _, n := range nodesOf(h, pods) {
		if n == "" {
			t.Fatalf("not planned in the first cycle: %v (pending %q)", nodesOf(h, pods), io.pending["g-0"])
		}
		per[n]++
	}
	for n, k := range per {
		if k > 2 {
			t.Fatalf("%d members planned on %s, more than maxSkew 2 (%v)", k, n, per)
		}
	}
	for _, order := range []func(a, b *v1.Pod) int{byNode(h), byNodeDesc(h)} {
		unreserveAll(h)
		if got := kubeBinds(t, h, io, order); len(got) != len(pods) {
			t.Fatalf("kube bound %v, want all", got)
		}
	}
}

// TestSpreadGangZoneCapacity (kube plugin, zone spread): the members
// fill the zones within what their free GPUs hold. Zone a's two nodes
// each run a 4-GPU pod the spread does not count, so zone a holds two
// 4-GPU members: a gang of five with maxSkew 1 goes 2+3 (legal: skew 1),
// each member passing kube's filter at its turn.
func TestSpreadGangZoneCapacity(t *testing.T) {
	h, io, pods := spreadGang(t, 5, v1.DoNotSchedule)
	io.pods = append([]*v1.Pod{boundPod("other-0", "za-0", 4, "0,1,2,3", nil), boundPod("other-1", "za-1", 4, "0,1,2,3", nil)}, pods...)
	if got := planSpread(t, h, io, pods, 3); got["a"] != 2 || got["b"] != 3 {
		t.Fatalf("members per zone %v, want 2+3", got)
	}
}

// TestSpreadWaves: the waves of members placed in domains, from the
// counts already there: each wave holds, per domain, at most the global
// minimum at its start (0 with zeroMin) + maxSkew - the domain's count.
func TestSpreadWaves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		count   []int
		skew    int
		zeroMin bool
		dom     []int
		want    []int // nil: no order binds them
	}{
		// 3+3 from 0+0, skew 1: one of each per wave.
		{"3+3", []int{0, 0}, 1, false, []int{0, 0, 0, 1, 1, 1}, []int{0, 1, 2, 0, 1, 2}},
		// skew 2: two of each per wave.
		{"skew 2", []int{0, 0}, 2, false, []int{0, 0, 0, 1, 1, 1}, []int{0, 0, 1, 0, 0, 1}},
		// a already holds 2: b's first two come before a's.
		{"counted", []int{2, 0}, 1, false, []int{0, 1, 1, 1}, []int{2, 0, 1, 2}},
		// 4+2 from 0+0: the last of a exceeds b's 2 by 2.
		{"4+2", []int{0, 0}, 1, false, []int{0, 0, 0, 0, 1, 1}, nil},
		// fewer domains than minDomains: at most maxSkew per domain.
		{"zeroMin", []int{0, 0}, 1, true, []int{0, 0, 1}, nil},
		{"zeroMin fits", []int{0, 0}, 1, true, []int{0, 1}, []int{0, 0}},
		// a member on a node outside the domains: wave 0.
		{"outside", []int{0}, 1, false, []int{-1, 0}, []int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := spreadDomains{count: tc.count, skew: tc.skew, zeroMin: tc.zeroMin}
			got, ok := d.waves(tc.dom)
			if tc.want == nil {
				if ok {
					t.Fatalf("waves %v, want none", got)
				}
				return
			}
			if !ok || !slices.Equal(got, tc.want) {
				t.Fatalf("waves %v (%v), want %v", got, ok, tc.want)
			}
		})
	}
}

// TestSpreadGangHostnameBeyondMaxSkew (kube plugin): a gang of more
// members than maxSkew × the GPU nodes, spread on the hostname, is not
// left waiting for a per-node cap that cannot hold it (it used to wait,
// saying at most maxSkew per node): kube accepts six 2-GPU members with
// maxSkew 1 over three 8-GPU nodes two per node, one per node at a time,
// so they are planned two per node and let through in waves, and each
// passes kube's own filter at its turn in both adversarial orders. A
// CPU node the members' node selector accepts counts as a domain for
// kube, keeping its global minimum at 0: then no order binds more than
// one per node, and the gang waits, saying so.
func TestSpreadGangHostnameBeyondMaxSkew(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []*v1.Node
		waits bool
	}{
		{"three GPU nodes", nil, false},
		{"cpu node counted", []*v1.Node{node("c1", 0, nil)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := append([]*v1.Node{gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil), gpuNode("n3", 8, h100, nil)}, tc.extra...)
			h, io := newTestHost(t, nodes...)
			pods := gangMembers("g", 6, 2)
			for _, p := range pods {
				p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
					WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSel("g")}}
			}
			io.pods = pods
			if tc.waits {
				for range 3 {
					step(h, io, time.Second)
				}
				if got := nodesOf(h, pods); slices.ContainsFunc(mapValues(got), func(n string) bool { return n != "" }) {
					t.Fatalf("planned %v, want the gang waiting", got)
				}
				if msg := io.pending["g-0"]; !strings.Contains(msg, "kube accepts its 6 pods in no order") {
					t.Fatalf("pending message %q does not say kube accepts no order", msg)
				}
				return
			}
			per := planSpread(t, h, io, pods, 3) // (zoneCounts: the node's digit)
			if per["1"] != 2 || per["2"] != 2 || per["3"] != 2 {
				t.Fatalf("members per node %v, want two on each of n1, n2, n3", per)
			}
		})
	}
}
