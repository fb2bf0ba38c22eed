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

// trackedOcc is an Occupancy that Tracks a ledger, with its oracle: a
// Clone of the ledger taken at the same time, given the same allocations
// and releases.
type trackedOcc struct {
	o      *Occupancy
	oracle *Ledger
}

// TrackOccupancy starts tracking the ledger lazily (Track), with a Clone
// as the oracle; the ledger then goes on changing under it (every other
// action, CopyFrom into a tracked ledger included). Check compares every
// tracked Occupancy with its oracle after every action.
func (m *ledgerMachine) TrackOccupancy(t *rapid.T) {
	var o *Occupancy
	if n := len(m.trackPool); n > 0 && rapid.Bool().Draw(t, "pooled") {
		o, m.trackPool = m.trackPool[n-1], m.trackPool[:n-1]
	} else {
		o = new(Occupancy)
		if rapid.Bool().Draw(t, "eager first") {
			o.CopyFrom(m.l) // some state the lazy copy must not show
		}
	}
	o.Track(m.l)
	m.tracked = append(m.tracked, trackedOcc{o: o, oracle: m.l.Clone()})
	if len(m.tracked) > 3 || rapid.IntRange(0, 3).Draw(t, "forget one") == 0 {
		k := rapid.IntRange(0, len(m.tracked)-1).Draw(t, "forget")
		m.tracked[k].o.Forget()
		m.trackPool = append(m.trackPool, m.tracked[k].o)
		m.tracked = append(m.tracked[:k], m.tracked[k+1:]...)
	}
}

// TrackedSteps drives one tracked Occupancy and its oracle through the
// same random allocations and releases (malformed ones included): the
// same error or none.
func (m *ledgerMachine) TrackedSteps(t *rapid.T) {
	if len(m.tracked) == 0 {
		t.Skip("nothing tracked")
	}
	x := m.tracked[rapid.IntRange(0, len(m.tracked)-1).Draw(t, "tracked")]
	held := slices.Clone(m.live)
	for range rapid.IntRange(1, 6).Draw(t, "steps") {
		var claims []Claim
		release := len(held) > 0 && rapid.Bool().Draw(t, "release")
		if release {
			claims = append(claims, held[rapid.IntRange(0, len(held)-1).Draw(t, "claim")])
		} else {
			for range rapid.IntRange(1, 3).Draw(t, "claims") {
				claims = append(claims, m.genClaim(t, rapid.IntRange(0, 3).Draw(t, "bogus") == 0))
			}
		}
		var ef, eo error
		if release {
			ef, eo = x.oracle.Release(claims...), x.o.Release(claims...)
		} else {
			ef, eo = x.oracle.Allocate(claims...), x.o.Allocate(claims...)
		}
		if (ef == nil) != (eo == nil) || ef != nil && ef.Error() != eo.Error() {
			t.Fatalf("tracked: release %v of %v: oracle says %v, occupancy %v", release, claims, ef, eo)
		}
		if ef == nil && !release {
			held = append(held, cloneClaims(claims)...)
		}
	}
}

// checkTracked compares every tracked Occupancy with its oracle on some
// hosts, GPU by GPU (a read holds the host: the others stay lazy for the
// ledger's later changes); with all set, on every host.
func (m *ledgerMachine) checkTracked(t *rapid.T, all bool) {
	for _, x := range m.tracked {
		hosts := hostIDs(m.c)
		if !all {
			hosts = rapid.SliceOfNDistinct(rapid.SampledFrom(hosts), 0, 2, rapid.ID[HostID]).Draw(t, "hosts")
		}
		for _, h := range hosts {
			if x.oracle.CPUFree(h) != x.o.CPUFree(h) || x.oracle.MemoryFree(h) != x.o.MemoryFree(h) {
				t.Fatalf("tracked: host %s: oracle %d, %d free; occupancy %d, %d", m.c.HostName(h), x.oracle.CPUFree(h), x.oracle.MemoryFree(h), x.o.CPUFree(h), x.o.MemoryFree(h))
			}
			lo, n := m.c.HostGPUs(h)
			for g := lo; g < lo+GPUID(n); g++ {
				if x.oracle.GPU(g) != x.o.GPU(g) {
					t.Fatalf("tracked: %s: oracle %+v, occupancy %+v", m.c.GPUName(g), x.oracle.GPU(g), x.o.GPU(g))
				}
			}
		}
	}
}

func hostIDs(c *Cluster) []HostID {
	out := make([]HostID, c.NumHosts())
	for h := range out {
		out[h] = HostID(h)
	}
	return out
}
