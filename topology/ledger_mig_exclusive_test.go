package topology

import (
	"errors"
	"strings"
	"testing"
)

// h200MediaSpec is one H200 with the MIG profiles and placements of the
// real capture in nvml/testdata/golden/h200-sxm-1, the media-extension
// profile 1g.18gb+me included: placements {0..6}:1, 1 instance per GPU.
func h200MediaSpec() Spec {
	return Spec{Version: 1, Name: "h200",
		Accelerators: []AcceleratorSpec{{Model: "H200", MemoryMiB: 143771, MIG: &MIGSpec{Slots: 8, Profiles: []MIGProfileSpec{
			{Name: "1g.18gb", Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: 16384, ComputeSlices: 1},
			{Name: "1g.18gb+me", Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: 16384, ComputeSlices: 1, Exclusive: "media-extensions"},
			{Name: "1g.35gb", Size: 2, Starts: []int{0, 2, 4, 6}, MemoryMiB: 33280, ComputeSlices: 1},
			{Name: "7g.141gb", Size: 8, Starts: []int{0}, MemoryMiB: 143360, ComputeSlices: 7},
		}}}},
		Templates: []HostTemplate{{Name: "t", CPUMilli: 16000, MemoryMiB: 128869, Accelerator: "H200", GPUs: 1}},
		Hosts:     []HostGroup{{Name: "h200-sxm-1", Template: "t"}},
	}
}

// The media-extension profile takes one memory slot like 1g.18gb, and the
// GPU's one set of media extensions: a second instance of it is refused
// on any free slot while the first runs, and allowed once it is released.
func TestLedgerMIGExclusive(t *testing.T) {
	c, err := Build(h200MediaSpec())
	if err != nil {
		t.Fatal(err)
	}
	acc := c.Model(c.HostModel(0))
	me, ok := acc.MIGProfileByName("1g.18gb+me")
	if !ok {
		t.Fatal("no 1g.18gb+me")
	}
	base, _ := acc.MIGProfileByName("1g.18gb")
	l := NewLedger(c)
	mig := func(p MIGProfileID, start int) Claim {
		return Claim{Host: 0, GPUs: []GPUClaim{{GPU: 0, Kind: ClaimMIG, Profile: p, Start: int8(start)}}}
	}
	if err := l.Allocate(mig(me, 3)); err != nil {
		t.Fatal(err)
	}
	if st := l.GPU(0); st.UsedMilli != 125 || st.MIGSlots&0xff != 1<<3 {
		t.Errorf("after 1g.18gb+me at 3: %+v", st)
	}
	err = l.Allocate(mig(me, 5))
	if !errors.Is(err, ErrMIGSlotBusy) || !strings.Contains(err.Error(), "media-extensions") {
		t.Errorf("second 1g.18gb+me: %v", err)
	}
	if err := l.Allocate(mig(base, 5)); err != nil {
		t.Errorf("1g.18gb beside it: %v", err)
	}
	if err := l.Allocate(mig(base, 3)); !errors.Is(err, ErrMIGSlotBusy) {
		t.Errorf("1g.18gb on its slot: %v", err)
	}
	if err := l.Release(mig(me, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.Allocate(mig(me, 6)); err != nil {
		t.Errorf("1g.18gb+me after release: %v", err)
	}
	if st := l.GPU(0); st.UsedMilli != 250 {
		t.Errorf("two 1-slot instances: %+v", st)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// A model has room for one exclusive resource per slot beyond its memory
// slots; a 16-slot model has none.
func TestMIGExclusiveNoRoom(t *testing.T) {
	s := h200MediaSpec()
	s.Accelerators[0].MIG = &MIGSpec{Slots: 16, Profiles: []MIGProfileSpec{
		{Name: "1g", Size: 1, Starts: []int{0, 1}, Exclusive: "me"},
	}}
	_, err := Build(s)
	if err == nil || !strings.Contains(err.Error(), "accelerators[0].mig.profiles[0].exclusive") {
		t.Fatalf("Build: %v", err)
	}
}
