package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched/topology"
)

// sharesClaim is a claim with one request per mem, each for a share of
// a GPU with that much memory, count shares each.
func sharesClaim(name string, count int, mems ...string) *resourceapi.ResourceClaim {
	counts := make([]int, len(mems))
	for i := range counts {
		counts[i] = count
	}
	c := claimFor(name, DefaultDRADeviceClass, counts...)
	for i, m := range mems {
		c.Spec.Devices.Requests[i].Exactly.Capacity = &resourceapi.CapacityRequirements{
			Requests: map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse(m)}}
	}
	return c
}

// shareResults returns the devices claim name's results give each of its
// requests ("r0:gpu-7,gpu-7 r1:gpu-6").
func shareResults(f *fakeDRA, name string) string {
	c := f.claims["default/"+name]
	if c.Status.Allocation == nil {
		return ""
	}
	by := map[string][]string{}
	for _, r := range c.Status.Allocation.Devices.Results {
		by[r.Request] = append(by[r.Request], r.Device)
	}
	var out []string
	for _, k := range sortedKeys(by) {
		out = append(out, k+":"+strings.Join(by[k], ","))
	}
	return strings.Join(out, " ")
}

// severalSharesDRA is a fakeDRA with two H200s of 80Gi that allow
// multiple allocations, and claims of several shares: count2 (2×30Gi),
// tworeq (20Gi, 40Gi), c1 and c2 (10Gi each), big (2×60Gi), small
// (2×10Gi).
func severalSharesDRA() *fakeDRA {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{sharedSlice("s-1", 2)}
	f.put(sharesClaim("count2", 2, "30Gi"))
	f.put(sharesClaim("tworeq", 1, "20Gi", "40Gi"))
	f.put(shareClaim("c1", "10Gi"))
	f.put(shareClaim("c2", "10Gi"))
	f.put(sharesClaim("big", 2, "60Gi"))
	f.put(sharesClaim("small", 2, "10Gi"))
	return f
}

// TestDRASeveralShares (scheduler mode): a pod with a request of count 2
// for GPU shares, a pod with two share requests in one claim, and a pod
// with shares in two claims are placed: each share a result of its own
// (its GPU, a shareID of its own, the capacity it consumes), on one node,
// never past a GPU's 80Gi (two H200s of 80Gi: 2×30 + 20+40 + 10+10 Gi).
// A restarted scheduler reads every share back from the claims: a pod of
// two 60Gi shares (no GPU has 60Gi left) waits, one of two 10Gi shares is
// placed where they fit.
func TestDRASeveralShares(t *testing.T) {
	f := severalSharesDRA()
	h, io := newDRAHost(t, f, node("s-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p-count", "count2"), draPodOf("p-req", "tworeq"), draPodOf("p-claims", "c1", "c2")}
	ctx := context.Background()
	h.cycle(ctx)
	slices.Sort(io.activated)
	if strings.Join(io.activated, ",") != "p-claims,p-count,p-req" {
		t.Fatalf("activated %v, want all three; pending %v", io.activated, io.pending)
	}
	for claim, want := range map[string]int{"count2": 2, "tworeq": 2, "c1": 1, "c2": 1} {
		got := shareResults(f, claim)
		if n := strings.Count(got, ",") + strings.Count(got, " ") + 1; n != want {
			t.Errorf("claim %s: results %q, want %d shares", claim, got, want)
		}
	}
	used := sharedUse(t, f)
	t.Logf("count2 %s; tworeq %s; c1 %s; c2 %s; memory used per GPU %v", shareResults(f, "count2"), shareResults(f, "tworeq"), shareResults(f, "c1"), shareResults(f, "c2"), used)
	total := int64(0)
	for _, b := range used {
		total += b
	}
	if total != (2*30+20+40+10+10)<<30 {
		t.Errorf("%d GiB consumed, want 120", total>>30)
	}

	// Restart: the shares are read back from the claims.
	bindDRA(h, io)
	h2, io2 := newDRAHost(t, f, node("s-1", -1, nil))
	io2.pods = append(io.pods, draPodOf("p-big", "big"), draPodOf("p-small", "small"))
	h2.cycle(ctx)
	if strings.Join(io2.activated, ",") != "p-small" || io2.pending["p-big"] == "" {
		t.Errorf("after the restart activated %v, pending %v; want p-small placed, p-big waiting", io2.activated, io2.pending)
	}
	sharedUse(t, f)
	if got := shareResults(f, "small"); strings.Count(got, "gpu-") != 2 {
		t.Errorf("claim small: %q", got)
	}
}

// TestDRAPlacementSeveralShares: TestDRASeveralShares in placement mode:
// pods of several shares (a request of count 2, two requests, two
// claims) are placed on one node each, every share a result with its own
// shareID, no GPU past its 80Gi; a restarted plugin holds them all from
// the claims, so a pod of two 60Gi shares is refused and one of two 10Gi
// shares placed.
func TestDRAPlacementSeveralShares(t *testing.T) {
	f := severalSharesDRA()
	hs, _ := newDRAHarness(t, f, node("s-1", -1, nil))
	var bound []*v1.Pod
	for _, x := range []struct{ pod, claims string }{{"a", "count2"}, {"b", "tworeq"}, {"c", "c1,c2"}} {
		p := hs.add(placementDRAPod(x.pod, strings.Split(x.claims, ",")...))
		node, st, _ := hs.schedule(p)
		if node != "s-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", x.pod, node, st)
		}
		bound = append(bound, hs.bind(p, node))
		hs.check()
	}
	sharedUse(t, f)
	if got := shareResults(f, "count2"); strings.Count(got, "gpu-") != 2 {
		t.Errorf("claim count2: %q", got)
	}

	hs2, _ := newDRAHarness(t, f, node0("s-1"))
	for _, b := range bound {
		b.Spec.NodeName = "s-1"
		b.Annotations = nil // (the claims are the record)
		hs2.add(b)
	}
	big := hs2.add(placementDRAPod("big", "big"))
	if _, st, _ := hs2.schedule(big); st == nil {
		t.Errorf("two 60Gi shares placed with 40Gi free of 160Gi")
	}
	small := hs2.add(placementDRAPod("small", "small"))
	node, st, _ := hs2.schedule(small)
	if st != nil {
		t.Fatalf("small: %v", st)
	}
	hs2.bind(small, node)
	hs2.check()
	sharedUse(t, f)
}

// TestDRASeveralSharesGang (scheduler mode): a gang of two pods of two
// 30Gi shares each goes whole on one node (as a gang of pods of several
// MIG devices does), no GPU past its 80Gi; a restarted scheduler holds
// all four shares.
func TestDRASeveralSharesGang(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{sharedSlice("s-1", 2), sharedSlice("s-2", 2)}
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	h, io := newDRAHost(t, f, node("s-1", -1, nil), node("s-2", -1, nil))
	for _, m := range []string{"g-0", "g-1"} {
		f.put(sharesClaim(m, 2, "30Gi"))
		p := draPodOf(m, m)
		p.Labels = g
		io.pods = append(io.pods, p)
	}
	ctx := context.Background()
	h.cycle(ctx)
	if len(io.activated) != 2 {
		t.Fatalf("activated %v; pending %v", io.activated, io.pending)
	}
	pools := map[string]bool{}
	for _, m := range []string{"g-0", "g-1"} {
		for _, r := range f.claims["default/"+m].Status.Allocation.Devices.Results {
			pools[r.Pool] = true
		}
	}
	if len(pools) != 1 {
		t.Errorf("the gang's shares on nodes %v, want one", sortedKeys(pools))
	}
	sharedUse(t, f)
	for i, p := range io.pods {
		a, _ := h.assignmentOf(p.UID)
		b := p.DeepCopy()
		b.Spec.NodeName = a.node
		io.pods[i] = b
	}
	h2, io2 := newDRAHost(t, f, node("s-1", -1, nil), node("s-2", -1, nil))
	io2.pods = slices.Clone(io.pods)
	h2.cycle(ctx)
	used := 0
	for gpu := range 4 {
		used += int(h2.s.Ledger().GPU(topology.GPUID(gpu)).UsedMilli)
	}
	if used != 4*375 {
		t.Errorf("the restarted ledger holds %d milli-GPU of shares, the claims %d", used, 4*375)
	}
}
