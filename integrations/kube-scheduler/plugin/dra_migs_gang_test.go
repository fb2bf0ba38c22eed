package plugin

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/topology"
)

// migMasks returns the memory slices (per "node/GPU") the MIG devices of
// the allocated claims hold, failing on a slice held twice or a device
// not in the slices.
func migMasks(t *testing.T, f *fakeDRA, claims ...string) map[string]uint16 {
	t.Helper()
	devs := map[string]resourceapi.Device{}
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			devs[*s.Spec.NodeName+"/"+d.Name] = d
		}
	}
	masks := map[string]uint16{}
	for _, name := range claims {
		c := f.claims["default/"+name]
		if c.Status.Allocation == nil {
			t.Fatalf("claim %s not allocated", name)
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			d, ok := devs[r.Pool+"/"+r.Device]
			if !ok {
				t.Fatalf("claim %s: %s/%s is no device of the slices", name, r.Pool, r.Device)
			}
			gpu, start, size := migPlace(d)
			k := fmt.Sprintf("%s/%d", r.Pool, gpu)
			m := uint16((1<<size - 1) << start)
			if masks[k]&m != 0 {
				t.Errorf("claim %s: %s overlaps memory slices %08b of GPU %s", name, r.Device, masks[k], k)
			}
			masks[k] |= m
		}
	}
	return masks
}

// TestDRAMIGSeveralGang: a gang of three pods of several MIG devices
// (two 2g.35gb; a 2g.35gb and a 1g.18gb in two requests, then in two
// claims) is placed whole on one H200 node of two
// GPUs, every device at a legal start of its profile, no memory slice
// twice, and each member's plan written before any is let through; a
// restarted scheduler holds all six devices from the claims, so a
// 7g.141gb waits. A gang of two pods each needing a whole GPU's worth
// (4g.71gb + 3g.71gb) on two nodes of one GPU each waits, saying why
// (a gang of such pods goes on one node).
func TestDRAMIGSeveralGang(t *testing.T) {
	f := h200MIG(t, "h200-1", 2)
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	var claims []string
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	for i := range 3 {
		name := fmt.Sprintf("m%d", i)
		cs := severalMIGs(f, name, i, "2g.35gb", "1g.18gb")
		claims = append(claims, cs...)
		p := draPodOf("p-"+name, cs...)
		p.Labels = g
		io.pods = append(io.pods, p)
	}
	ctx := context.Background()
	h.cycle(ctx)
	if strings.Join(io.activated, ",") != "p-m0,p-m1,p-m2" {
		t.Fatalf("activated %v, want the gang; pending %v", io.activated, io.pending)
	}
	for _, p := range io.pods {
		if p.Annotations[PlannedNodeAnnotation] != "h200-1" {
			t.Errorf("%s: planned node %q", p.Name, p.Annotations[PlannedNodeAnnotation])
		}
	}
	masks := migMasks(t, f, claims...)
	used := 0
	for _, m := range masks {
		used += bits.OnesCount16(m)
	}
	if used != 2*2+2*(2+1) {
		t.Errorf("the gang's devices hold %d memory slices (%v), want 10", used, masks)
	}
	bindDRA(h, io)
	h.cycle(ctx)

	f.put(migClaim("seven", "7g.141gb"))
	h2, io2 := newDRAHost(t, f, node("h200-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), draPodOf("p-seven", "seven"))
	h2.cycle(ctx)
	if slices.Contains(io2.activated, "p-seven") || f.claims["default/seven"].Status.Allocation != nil {
		t.Errorf("7g.141gb placed beside the restored gang (%v)", masks)
	}
	if st, ok := h2.s.Job("default/gang/g"); !ok || st.State.String() != "running" {
		t.Errorf("gang not restored as running: %+v", st)
	}

	// Two nodes of one GPU: each member fits a node, the gang no one node.
	f2 := h200MIG(t, "h-a", 1)
	f2.slices = append(f2.slices, h200MIG(t, "h-b", 1).slices...)
	h3, io3 := newDRAHost(t, f2, node("h-a", -1, nil), node("h-b", -1, nil))
	g2 := map[string]string{DefaultGangLabel: "big", DefaultGangSizeKey: "2"}
	for i := range 2 {
		cs := severalMIGs(f2, fmt.Sprintf("b%d", i), 1, "4g.71gb", "3g.71gb")
		p := draPodOf(fmt.Sprintf("p-b%d", i), cs...)
		p.Labels = g2
		io3.pods = append(io3.pods, p)
	}
	h3.cycle(ctx)
	if len(io3.activated) != 0 || io3.pending["p-b0"] == "" {
		t.Errorf("gang of two whole-GPU MIG pairs on two 1-GPU nodes: activated %v, pending %q", io3.activated, io3.pending["p-b0"])
	}
	t.Logf("p-b0 waits: %s", io3.pending["p-b0"])
}

// TestDRAMIGSeveralGangPartlyBound: the scheduler stops with one member of
// a gang of pods of several MIG devices bound and the others planned,
// their claims written: the restarted scheduler completes the gang on the
// devices the claims name, and the ledger holds every one of them.
func TestDRAMIGSeveralGangPartlyBound(t *testing.T) {
	f := h200MIG(t, "h200-1", 2)
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	var claims []string
	h, io := newDRAHost(t, f, node("h200-1", -1, nil))
	for i := range 3 {
		cs := severalMIGs(f, fmt.Sprintf("m%d", i), i, "2g.35gb", "1g.18gb")
		claims = append(claims, cs...)
		p := draPodOf(fmt.Sprintf("p-m%d", i), cs...)
		p.Labels = g
		io.pods = append(io.pods, p)
	}
	ctx := context.Background()
	h.cycle(ctx)
	if len(io.activated) != 3 {
		t.Fatalf("activated %v; pending %v", io.activated, io.pending)
	}
	before := map[string]string{}
	for _, c := range claims {
		before[c] = fmt.Sprint(f.claims["default/"+c].Status.Allocation.Devices.Results)
	}
	a, _ := h.assignmentOf("uid-p-m0")
	b := io.pods[0].DeepCopy()
	b.Spec.NodeName = a.node
	io.pods[0] = b

	h2, io2 := newDRAHost(t, f, node("h200-1", -1, nil))
	io2.pods = slices.Clone(io.pods)
	h2.cycle(ctx)
	h2.cycle(ctx)
	if !slices.Contains(io2.activated, "p-m1") || !slices.Contains(io2.activated, "p-m2") {
		t.Fatalf("gang not completed: activated %v, pending %v", io2.activated, io2.pending)
	}
	for _, c := range claims {
		if got := fmt.Sprint(f.claims["default/"+c].Status.Allocation.Devices.Results); got != before[c] {
			t.Errorf("claim %s: %s, was %s", c, got, before[c])
		}
	}
	slots := 0
	for gpu := range topology.GPUID(2) {
		slots += bits.OnesCount16(h2.s.Ledger().GPU(gpu).MIGSlots & 0xff)
	}
	if slots != 10 {
		t.Errorf("the restarted ledger holds %d MIG slots, the claims 10", slots)
	}
	for _, p := range io2.pods {
		if a, ok := h2.assignmentOf(p.UID); p.Spec.NodeName == "" && (!ok || why(h2, p, a) != "") {
			t.Errorf("%s not ready: %v %q", p.Name, ok, why(h2, p, a))
		}
	}
}
