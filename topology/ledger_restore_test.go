package topology

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

// TestTrialRestoreRoundTrip: on a random ledger with random health, taking
// any job's claims back with TrialRelease and putting them back with
// TrialRestore leaves every GPU, host and counter as it was, and the
// Generation unchanged, even when the claims sit on failed GPUs or hosts.
func TestTrialRestoreRoundTrip(t *testing.T) {
	c := cursorCluster(t)
	rapid.Check(t, func(rt *rapid.T) {
		l := NewLedger(c)
		var jobs [][]Claim
		for i := rapid.IntRange(0, 12).Draw(rt, "jobs"); i > 0; i-- {
			h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "host"))
			first, n := c.HostGPUs(h)
			cl := Claim{Host: h, CPUMilli: int64(rapid.IntRange(0, 200).Draw(rt, "cpu")), MemoryMiB: int64(rapid.IntRange(0, 200).Draw(rt, "mem"))}
			for k := 0; k < n; k++ {
				if rapid.Bool().Draw(rt, "take") {
					cl.GPUs = append(cl.GPUs, GPUClaim{GPU: first + GPUID(k), Kind: ClaimWhole})
				}
			}
			if l.Allocate(cl) == nil {
				jobs = append(jobs, []Claim{cl})
			}
		}
		for i := rapid.IntRange(0, 4).Draw(rt, "faults"); i > 0; i-- {
			if rapid.Bool().Draw(rt, "hostFault") {
				_ = l.SetHostHealth(HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(rt, "fh")), Health(rapid.IntRange(1, 2).Draw(rt, "hh")))
			} else if c.NumGPUs() > 0 {
				_ = l.SetGPUHealth(GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "fg")), Health(rapid.IntRange(1, 2).Draw(rt, "gh")))
			}
		}
		if len(jobs) == 0 {
			return
		}
		before := snapshot(l)
		gen := l.Generation()
		j := jobs[rapid.IntRange(0, len(jobs)-1).Draw(rt, "victim")]
		if err := l.TrialRelease(j...); err != nil {
			rt.Fatal(err)
		}
		if err := l.TrialRestore(j...); err != nil {
			rt.Fatalf("restore: %v", err)
		}
		if l.Generation() != gen {
			rt.Fatalf("generation moved %d → %d", gen, l.Generation())
		}
		if err := l.Check(); err != nil {
			rt.Fatal(err)
		}
		if after := snapshot(l); after != before {
			rt.Fatalf("state changed:\n%s\n%s", before, after)
		}
	})
}

// snapshot renders the occupancy and health of every GPU and host.
func snapshot(l *Ledger) string {
	c := l.Cluster()
	var b []byte
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		s := l.GPU(g)
		b = append(b, byte(s.Mode), byte(s.UsedMilli), byte(s.UsedMilli>>8), byte(s.Health))
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		b = append(b, byte(l.HostHealth(h)), byte(l.CPUFree(h)), byte(l.MemoryFree(h)), byte(l.HostFreeGPUs(h)))
	}
	return string(b)
}

// TestTrialRestoreAllOrNothing: a restore that cannot apply (the GPU was
// taken meanwhile) leaves the ledger as it was and names the failure.
func TestTrialRestoreAllOrNothing(t *testing.T) {
	c := cursorCluster(t)
	l := NewLedger(c)
	first, _ := c.HostGPUs(0)
	a := Claim{Host: 0, CPUMilli: 10, GPUs: []GPUClaim{{GPU: first}}}
	b := Claim{Host: 0, CPUMilli: 10, GPUs: []GPUClaim{{GPU: first + 1}}}
	if err := l.Allocate(a, b); err != nil {
		t.Fatal(err)
	}
	if err := l.TrialRelease(a, b); err != nil {
		t.Fatal(err)
	}
	if err := l.AllocateGPU(first + 1); err != nil {
		t.Fatal(err)
	}
	before := snapshot(l)
	err := l.TrialRestore(a, b)
	var ae *AllocError
	if !errors.As(err, &ae) || !errors.Is(err, ErrGPUBusy) || ae.Claim != 1 {
		t.Fatalf("got %v, want GPU busy on claim 1", err)
	}
	if snapshot(l) != before {
		t.Fatal("failed restore changed the ledger")
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReinstateCordoned: a claim released on a what-if ledger puts back
// on a host cordoned since (Allocate refuses it), Generation advances,
// and the counters agree.
func TestReinstateCordoned(t *testing.T) {
	c := cursorCluster(t)
	l := NewLedger(c)
	first, _ := c.HostGPUs(0)
	cl := Claim{Host: 0, GPUs: []GPUClaim{{GPU: first, Kind: ClaimWhole}}}
	if err := l.Allocate(cl); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHostCordoned(0, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(cl); err != nil {
		t.Fatal(err)
	}
	if err := l.Allocate(cl); err == nil {
		t.Fatal("Allocate on a cordoned host")
	}
	gen := l.Generation()
	if err := l.Reinstate(cl); err != nil {
		t.Fatal(err)
	}
	if l.Generation() == gen || l.GPU(first).UsedMilli == 0 {
		t.Fatalf("generation %d → %d, GPU %+v", gen, l.Generation(), l.GPU(first))
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
