package topology

import (
	"slices"

	"pgregory.net/rapid"
)

// Occupancy is a Clone for Allocate and Release: the ledgerMachine's
// Occupancy action copies the ledger both ways and drives both copies
// through the same random allocations and releases (malformed ones
// included), checking after each that they gave the same error or none
// and hold the same GPUs, CPU and memory.
func (m *ledgerMachine) Occupancy(t *rapid.T) {
	full := m.l.Clone()
	o := m.spareOcc
	if o == nil || rapid.Bool().Draw(t, "fresh occupancy") {
		o = NewLedger(m.c).Occupancy()
		_ = o.Allocate(Claim{Host: 0, CPUMilli: 1}) // some state to overwrite
	}
	o.CopyFrom(m.l)
	m.spareOcc = o
	held := slices.Clone(m.live)
	for range rapid.IntRange(1, 12).Draw(t, "steps") {
		var claims []Claim
		release := len(held) > 0 && rapid.Bool().Draw(t, "release")
		if release {
			idx := rapid.SliceOfNDistinct(rapid.IntRange(0, len(held)-1), 1, min(3, len(held)), rapid.ID[int]).Draw(t, "claims")
			for _, i := range idx {
				claims = append(claims, held[i])
			}
			if rapid.IntRange(0, 4).Draw(t, "stale") == 0 {
				claims = append(claims, m.genClaim(t, true))
			}
		} else {
			for range rapid.IntRange(1, 3).Draw(t, "claims") {
				claims = append(claims, m.genClaim(t, rapid.IntRange(0, 3).Draw(t, "bogus") == 0))
			}
		}
		var ef, eo error
		if release {
			ef, eo = full.Release(claims...), o.Release(claims...)
		} else {
			ef, eo = full.Allocate(claims...), o.Allocate(claims...)
		}
		if (ef == nil) != (eo == nil) || ef != nil && ef.Error() != eo.Error() {
			t.Fatalf("release %v of %v: ledger says %v, occupancy %v", release, claims, ef, eo)
		}
		if ef == nil && !release {
			held = append(held, cloneClaims(claims)...)
		}
		for g := GPUID(0); int(g) < m.c.NumGPUs(); g++ {
			if full.GPU(g) != o.GPU(g) {
				t.Fatalf("%s: ledger %+v, occupancy %+v", m.c.GPUName(g), full.GPU(g), o.GPU(g))
			}
		}
		for h := HostID(0); int(h) < m.c.NumHosts(); h++ {
			if full.CPUFree(h) != o.CPUFree(h) || full.MemoryFree(h) != o.MemoryFree(h) {
				t.Fatalf("host %s: ledger %d, %d free; occupancy %d, %d", m.c.HostName(h), full.CPUFree(h), full.MemoryFree(h), o.CPUFree(h), o.MemoryFree(h))
			}
		}
	}
	if err := full.Check(); err != nil {
		t.Fatal(err)
	}
}
