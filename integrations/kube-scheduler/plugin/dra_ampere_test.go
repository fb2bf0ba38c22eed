package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

// TestDRAAmpereMIGOnlyRestart: an A30 node whose GPUs NVIDIA's driver
// (dynamic MIG, MIG mode on) publishes through their counter sets and MIG
// devices only. The MIG pods are placed legally (counters never
// over-consumed), a whole-GPU pod waits (no GPU is published whole), and
// a restarted scheduler reads the MIG devices back from the claims: the
// allocations stay, two new 1g.6gb pods get the free slices, a 4g.24gb
// pod (no GPU free) waits.
func TestDRAAmpereMIGOnlyRestart(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("a30-m", indep3A30MIG, 2, func(int) int { return 0 }, func(int) string { return "pci0000:3a" })
	for _, s := range f.slices {
		s.Spec.Devices = slices.DeleteFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return !strings.Contains(d.Name, "-mig-") })
	}
	f.put(claimFor("whole", DefaultDRADeviceClass, 1))
	seq := indep3Seq{{"two", "2g.12gb"}, {"me1", "1g.6gb+me"}, {"me2", "1g.6gb+me"}}
	for _, s := range seq {
		f.put(indepMIG(s.claim, s.profile))
	}
	h, io := newDRAHost(t, f, node("a30-m", -1, nil))
	indep3Run(h, io, draPodOf("two", "two"), draPodOf("whole", "whole"), draPodOf("me1", "me1"), draPodOf("me2", "me2"))
	got := indepCheck(t, f, io, indep3Checked(indep3A30))
	for _, s := range seq {
		if len(got[s.claim]) != 1 {
			t.Errorf("claim %s (%s): %v; pending %q", s.claim, s.profile, names(got[s.claim]), io.pending[s.claim])
		}
	}
	if len(got["whole"]) != 0 || !strings.Contains(io.pending["whole"], "MIG devices only") {
		t.Errorf("whole: %v, pending %q; want it waiting", names(got["whole"]), io.pending["whole"])
	}

	// Restart.
	f.put(indepMIG("s1", "1g.6gb"))
	f.put(indepMIG("s2", "1g.6gb"))
	f.put(indepMIG("big", "4g.24gb"))
	h2, io2 := newDRAHost(t, f, node("a30-m", -1, nil))
	io2.pods = slices.Clone(io.pods)
	indep3Run(h2, io2, draPodOf("s1", "s1"), draPodOf("s2", "s2"), draPodOf("big", "big"))
	h2.cycle(context.Background())
	got2 := indepCheck(t, f, io2, indep3Checked(indep3A30))
	for _, s := range seq {
		if !slices.Equal(names(got2[s.claim]), names(got[s.claim])) {
			t.Errorf("after the restart claim %s: %v, was %v", s.claim, names(got2[s.claim]), names(got[s.claim]))
		}
	}
	for _, c := range []string{"s1", "s2"} {
		if len(got2[c]) != 1 {
			t.Errorf("claim %s after the restart: %v; pending %q", c, names(got2[c]), io2.pending[c])
		}
	}
	if len(got2["big"]) != 0 || len(got2["whole"]) != 0 {
		t.Errorf("big %v, whole %v: want both waiting", names(got2["big"]), names(got2["whole"]))
	}
}

// TestDRAAmpereMIGMixed: an A30 node with GPU 0 published (dynamic MIG
// off on it: the driver shows it) and GPU 1 in MIG mode (its counter set
// and MIG devices only). Two 1g.6gb+me go one per GPU, a 2g.12gb and
// two 1g.6gb fill slices legally on both; the MIG-only GPU is never
// written into a claim as a device.
func TestDRAAmpereMIGMixed(t *testing.T) {
	f := newFakeDRA()
	f.slices = indep3Node("a30-x", indep3A30MIG, 2, func(int) int { return 0 }, func(int) string { return "pci0000:3a" })
	for _, s := range f.slices {
		s.Spec.Devices = slices.DeleteFunc(s.Spec.Devices, func(d resourceapi.Device) bool { return d.Name == "gpu-1" })
	}
	seq := indep3Seq{{"me1", "1g.6gb+me"}, {"me2", "1g.6gb+me"}, {"two", "2g.12gb"}, {"s1", "1g.6gb"}, {"s2", "1g.6gb"}}
	got, io := indep3MIG(t, f, indep3A30, seq, node("a30-x", -1, nil))
	for _, s := range seq {
		if len(got[s.claim]) != 1 {
			t.Errorf("claim %s (%s): %v; pending %q", s.claim, s.profile, names(got[s.claim]), io.pending[s.claim])
		}
	}
	if len(got["me1"]) == 1 && len(got["me2"]) == 1 && indep3GPUOf(got["me1"][0]) == indep3GPUOf(got["me2"][0]) {
		t.Errorf("me1 %v, me2 %v on one GPU", names(got["me1"]), names(got["me2"]))
	}
}
