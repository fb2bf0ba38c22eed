package plugin

import (
	"math/bits"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/topology"
)

// migProfiles fails unless each request ("claim/request") of want is
// allocated devices of its profile only.
func migProfiles(t *testing.T, f *fakeDRA, want map[string]string) {
	t.Helper()
	devs := map[string]resourceapi.Device{}
	for _, s := range f.slices {
		for _, d := range s.Spec.Devices {
			devs[*s.Spec.NodeName+"/"+d.Name] = d
		}
	}
	for _, key := range sortedKeys(want) {
		name, req, _ := strings.Cut(key, "/")
		c := f.claims["default/"+name]
		n := 0
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.Request == req {
				n++
				if p := devs[r.Pool+"/"+r.Device].Attributes["profile"].StringValue; p == nil || *p != want[key] {
					t.Errorf("claim %s request %s: device %s, want a %s", name, req, r.Device, want[key])
				}
			}
		}
		if n == 0 {
			t.Errorf("claim %s: no device for request %s", name, req)
		}
	}
}

// TestDRAPlacementSeveralMIGs: in placement mode a pod may ask for
// several MIG devices, as in scheduler mode: pod a one request of count 2
// (2× 2g.35gb), pod b two claims (3g.71gb; 1g.18gb). Each is placed on
// one node, each request gets devices of its profile at legal starts,
// never two on a memory slice (the ledger's slots are the claims'); a
// restarted plugin holds them all from the claims and places a 7g.141gb
// only on a GPU left whole.
func TestDRAPlacementSeveralMIGs(t *testing.T) {
	f := h200MIG(t, "h200-1", 2)
	severalMIGs(f, "a", 0, "2g.35gb", "")
	severalMIGs(f, "b", 2, "3g.71gb", "1g.18gb")
	f.put(migClaim("seven", "7g.141gb"))
	hs, _ := newDRAHarness(t, f, node("h200-1", -1, nil))
	var bound []*v1.Pod
	for _, x := range []struct{ pod, claims string }{{"a", "a"}, {"b", "b,b-b"}} {
		p := hs.add(placementDRAPod(x.pod, strings.Split(x.claims, ",")...))
		node, st, _ := hs.schedule(p)
		if node != "h200-1" || st != nil {
			t.Fatalf("%s: node %q, status %v", x.pod, node, st)
		}
		bound = append(bound, hs.bind(p, node))
		hs.check()
	}
	masks := migMasks(t, f, "a", "b", "b-b")
	migProfiles(t, f, map[string]string{"a/r0": "2g.35gb", "b/r0": "3g.71gb", "b-b/r0": "1g.18gb"})
	if n := len(f.claims["default/a"].Status.Allocation.Devices.Results); n != 2 {
		t.Errorf("claim a (count 2) names %d devices", n)
	}
	used := 0
	for _, m := range masks {
		used += bits.OnesCount16(m)
	}
	if got := migSlotsHeld(hs); got != used {
		t.Errorf("the ledger holds %d MIG slots, the claims %d", got, used)
	}

	// Restart: all four devices are held from the claims; the 7g.141gb
	// gets a GPU only if gpusched left one whole.
	hs2, _ := newDRAHarness(t, f, node0("h200-1"))
	for _, b := range bound {
		b.Spec.NodeName = "h200-1"
		b.Annotations = nil // (the claims are the record)
		hs2.add(b)
	}
	if got := migSlotsHeld(hs2); got != used {
		t.Errorf("after the restart the ledger holds %d MIG slots, the claims %d", got, used)
	}
	seven := hs2.add(placementDRAPod("seven", "seven"))
	_, st, _ := hs2.schedule(seven)
	if whole := len(masks) == 1; whole != (st == nil) {
		t.Errorf("7g.141gb: status %v with the claims on GPUs %v", st, masks)
	}
	hs2.check()
}

// migSlotsHeld counts the MIG memory slices the harness's ledger holds.
func migSlotsHeld(hs *harness) int {
	s := hs.p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureTopology()
	n := 0
	for g := range topology.GPUID(s.topo.Cluster.NumGPUs()) {
		n += bits.OnesCount16(s.ledger.GPU(g).MIGSlots & 0xff)
	}
	return n
}
