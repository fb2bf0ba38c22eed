package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// gangSharing returns a gang of n pods (gang name, size n) each naming
// claim shared and a claim of its own, own-<name>-<i>.
func gangSharing(name string, n int, shared string) []*v1.Pod {
	var out []*v1.Pod
	for i := range n {
		p := draPodOf(fmt.Sprintf("%s-%d", name, i), shared, fmt.Sprintf("own-%s-%d", name, i))
		p.Labels = map[string]string{DefaultGangLabel: name, DefaultGangSizeKey: fmt.Sprint(n)}
		out = append(out, p)
	}
	return out
}

// TestDRAGangSharedClaim (scheduler mode): a gang of three pods that all
// name one ResourceClaim of 2 GPUs ("shared", as a job's pods naming one
// claim do), each with a 1-GPU claim of its own. The shared claim is
// allocated once (for one member; kube adds the others to its
// reservedFor), the whole gang goes on the node of its devices, and
// gpusched's ledger holds its GPUs once: 2 + 3 GPUs, on a node where 6
// are free (9 would not fit). A restarted scheduler holds the same 5.
// A gang whose shape cannot be met (two members naming a 4-GPU claim,
// each with 4 GPUs of its own: 12 on one node of 8) waits, saying why,
// and nothing is written for it. Two pods of no gang naming one claim at
// once: the first by name holds it, the other waits until it is written.
func TestDRAGangSharedClaim(t *testing.T) {
	claims := map[string]int{"shared": 2, "wide": 4}
	for i := range 3 {
		claims[fmt.Sprintf("own-g-%d", i)] = 1
	}
	for i := range 2 {
		claims[fmt.Sprintf("own-w-%d", i)] = 4
	}
	f := twoDGX(claims)
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil), node("dgx-2", -1, nil))
	// dgx-2 has 2 GPUs busy: best fit prefers it (6 free) for the 5 GPUs.
	filler := draPodOf("filler", "fill")
	filler.Spec.NodeName = "dgx-2"
	f.put(allocatedOn(claimFor("fill", DefaultDRADeviceClass, 2), DefaultDRADriver, "dgx-2", filler.UID, "gpu-0", "gpu-1"))
	io.pods = append([]*v1.Pod{filler}, gangSharing("g", 3, "shared")...)
	ctx := context.Background()
	h.cycle(ctx)
	members := []string{"g-0", "g-1", "g-2"}
	for _, m := range members {
		if !slices.Contains(io.activated, m) {
			t.Fatalf("activated %v, want the gang; pending %v", io.activated, io.pending)
		}
	}
	sh := f.claims["default/shared"]
	if sh.Status.Allocation == nil || len(sh.Status.Allocation.Devices.Results) != 2 || len(sh.Status.ReservedFor) != 1 {
		t.Fatalf("claim shared: %+v", sh.Status)
	}
	on := sh.Status.Allocation.Devices.Results[0].Pool
	seen := map[string]string{}
	for _, r := range sh.Status.Allocation.Devices.Results {
		seen[r.Device] = "shared"
	}
	for i, m := range members {
		a, _ := h.assignmentOf(types.UID("uid-" + m))
		if a.node != on {
			t.Errorf("%s on %s, claim shared on %s", m, a.node, on)
		}
		c := fmt.Sprintf("own-g-%d", i)
		devs, n := claimed(t, f, c, types.UID("uid-"+m))
		if n != on || seen[devs] != "" {
			t.Errorf("claim %s: %s on %s (shared on %s; %s already in %s)", c, devs, n, on, devs, seen[devs])
		}
		seen[devs] = c
	}
	if on != "dgx-2" {
		t.Errorf("the gang on %s, want dgx-2 (best fit: 6 free GPUs for 5)", on)
	}
	if free, _ := (ledgerGPUs{h}).freeGPUs("dgx-2"); free != 1 {
		t.Errorf("dgx-2 has %d free GPUs in the ledger, want 1 (8 - filler 2 - shared 2 - own 3)", free)
	}
	writes := strings.Count(strings.Join(f.writes, ";"), "status shared")
	for _, p := range io.pods {
		if p.Name != "filler" {
			b := p.DeepCopy()
			b.Spec.NodeName = on
			*p = *b
			reserveAsKube(f, p)
		}
	}
	h.cycle(ctx)
	if got := strings.Count(strings.Join(f.writes, ";"), "status shared"); got != writes {
		t.Errorf("claim shared written again after the gang was bound: %v", f.writes)
	}

	// Restart: the shared GPUs are held once.
	h2, io2 := newDRAHost(t, f, node("dgx-1", -1, nil), node("dgx-2", -1, nil))
	io2.pods = slices.Clone(io.pods)
	h2.cycle(ctx)
	if free, _ := (ledgerGPUs{h2}).freeGPUs("dgx-2"); free != 1 {
		t.Errorf("after a restart dgx-2 has %d free GPUs in the ledger, want 1", free)
	}

	// A gang that no node can hold with its shared claim.
	io2.pods = append(io2.pods, gangSharing("w", 2, "wide")...)
	h2.cycle(ctx)
	if slices.Contains(io2.activated, "w-0") || f.claims["default/wide"].Status.Allocation != nil {
		t.Fatalf("gang w (12 GPUs on one node) placed: %v", io2.activated)
	}
	if io2.pending["w-0"] == "" {
		t.Errorf("w-0 waits without a reason")
	}
	t.Logf("w-0 waits: %s", io2.pending["w-0"])

	// Two pods of no gang name one claim at once: the first by name
	// holds it, the other waits until its allocation is written, then
	// goes to its node.
	f.put(claimFor("pair", DefaultDRADeviceClass, 1))
	io2.pods = append(io2.pods, draPodOf("y", "pair"), draPodOf("x", "pair"))
	h2.cycle(ctx)
	if !slices.Contains(io2.activated, "x") || slices.Contains(io2.activated, "y") || !strings.Contains(io2.pending["y"], "also named by pod x") {
		t.Fatalf("x and y naming claim pair: activated %v, y waits: %q", io2.activated, io2.pending["y"])
	}
	_, xNode := claimed(t, f, "pair", "uid-x")
	bindDRA(h2, io2)
	h2.cycle(ctx)
	bindDRA(h2, io2)
	for _, p := range io2.pods {
		if p.Name == "y" && p.Spec.NodeName != xNode {
			t.Errorf("y on %q, claim pair on %s", p.Spec.NodeName, xNode)
		}
	}
}

// TestDRAPlacementGangSharedClaim: in placement mode a gang whose members
// share a GPU claim waits, saying that scheduler mode places it; nothing
// is allocated for it.
func TestDRAPlacementGangSharedClaim(t *testing.T) {
	claims := map[string]int{"shared": 2}
	for i := range 3 {
		claims[fmt.Sprintf("own-g-%d", i)] = 1
	}
	f := twoDGX(claims)
	hs, tr := newDRAHarness(t, f, node("dgx-1", -1, nil), node("dgx-2", -1, nil))
	var ms []*v1.Pod
	for i := range 3 {
		p := placementDRAPod(fmt.Sprintf("g-%d", i), "shared", fmt.Sprintf("own-g-%d", i))
		p.Labels = map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
		ms = append(ms, hs.add(p))
	}
	for _, p := range ms {
		_, st, _ := hs.schedule(p)
		if st == nil || !strings.Contains(st.Message(), "gang members share the GPU ResourceClaim shared") || !strings.Contains(st.Message(), "mode: scheduler") {
			t.Errorf("%s: status %v, want it to wait, naming scheduler mode", p.Name, st)
		}
	}
	if c, _ := tr.Get("default", "shared"); c.Status.Allocation != nil {
		t.Errorf("claim shared assumed: %v", devicesOf(c.Status.Allocation))
	}
	hs.check()
}
