package topology

import "testing"

// TestHostGenerationStamps checks that equal host generations mean equal
// host states across CopyFrom and Clone: a rollback followed by a
// different change, and two clones changing the same host, end with
// different generations.
func TestHostGenerationStamps(t *testing.T) {
	s, err := Generator{Machine: "dgx-a100", Hosts: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	g0, _ := c.HostGPUs(0)
	whole := Claim{Host: 0, GPUs: []GPUClaim{{GPU: g0, Kind: ClaimWhole}}}
	share := Claim{Host: 0, GPUs: []GPUClaim{{GPU: g0, Kind: ClaimShare, Milli: 100}}}

	l := NewLedger(c)
	fresh := NewLedger(c)
	if l.HostGeneration(0) != fresh.HostGeneration(0) {
		t.Errorf("two empty ledgers differ: %d %d", l.HostGeneration(0), fresh.HostGeneration(0))
	}
	snap := l.Clone()
	if snap.HostGeneration(0) != l.HostGeneration(0) {
		t.Errorf("a clone differs from its source")
	}
	if err := l.Allocate(whole); err != nil {
		t.Fatal(err)
	}
	withWhole := l.HostGeneration(0)
	// Roll back, then make a different change: the generation must not
	// come back to withWhole.
	l.CopyFrom(snap)
	if l.HostGeneration(0) != snap.HostGeneration(0) {
		t.Errorf("CopyFrom did not copy the generation")
	}
	if err := l.Allocate(share); err != nil {
		t.Fatal(err)
	}
	if l.HostGeneration(0) == withWhole {
		t.Errorf("different states share generation %d after a rollback", withWhole)
	}
	// Two clones of one state change the same host differently.
	a, b := l.Clone(), l.Clone()
	if err := a.Release(share); err != nil {
		t.Fatal(err)
	}
	if err := b.Allocate(Claim{Host: 0, CPUMilli: 1}); err != nil {
		t.Fatal(err)
	}
	if a.HostGeneration(0) == b.HostGeneration(0) || a.HostGeneration(0) == l.HostGeneration(0) || b.HostGeneration(0) == l.HostGeneration(0) {
		t.Errorf("clones' generations collide: %d %d %d", a.HostGeneration(0), b.HostGeneration(0), l.HostGeneration(0))
	}
	// Untouched hosts keep their generation through all of it.
	if l.HostGeneration(1) != fresh.HostGeneration(1) || a.HostGeneration(1) != fresh.HostGeneration(1) {
		t.Errorf("an untouched host changed generation")
	}
}

func TestStampWrap(t *testing.T) {
	s, _ := Preset("dgx-a100")
	c, _ := Build(s)
	l := NewLedger(c)
	id := l.stampID
	l.stampN = 1<<stampBits - 1
	l.bumpHost(0)
	if l.stampID == id || l.stampN != 1 || l.HostGeneration(0) != l.stampID<<stampBits|1 {
		t.Errorf("no fresh identity after 2^32 changes: id %d→%d n %d", id, l.stampID, l.stampN)
	}
}

// TestTrialRestoreStamps: TrialRestore changes the host's state (back to
// what it was before TrialRelease), so it takes a fresh stamp like every
// other change; the next change on the host must not end with the
// generation the restored state had.
func TestTrialRestoreStamps(t *testing.T) {
	s, _ := Preset("dgx-a100")
	c, _ := Build(s)
	l := NewLedger(c)
	g0, _ := c.HostGPUs(0)
	cl := Claim{Host: 0, CPUMilli: 1000, GPUs: []GPUClaim{{GPU: g0, Kind: ClaimWhole}}}
	for _, claim := range []Claim{cl, {Host: 0, CPUMilli: 1000}} {
		if err := l.Allocate(claim); err != nil {
			t.Fatal(err)
		}
		if err := l.TrialRelease(claim); err != nil {
			t.Fatal(err)
		}
		if err := l.TrialRestore(claim); err != nil {
			t.Fatal(err)
		}
		restored := l.HostGeneration(0)
		if err := l.AllocateGPU(g0 + 1); err != nil {
			t.Fatal(err)
		}
		if l.HostGeneration(0) == restored {
			t.Errorf("claim %+v: the state after TrialRestore and the next one share generation %#x", claim, restored)
		}
		if err := l.ReleaseGPU(g0 + 1); err != nil {
			t.Fatal(err)
		}
	}
}
