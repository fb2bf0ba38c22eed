package topology

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// ledgerWriters are the exported methods of *Ledger that change it; a
// LedgerReader must have none of them.
var ledgerWriters = []string{
	"Allocate", "Release", "AllocateGPU", "ReleaseGPU", "SetGPUHealth", "SetHostHealth",
	"TrialAllocate", "TrialRelease", "TrialRestore", "Reinstate", "CopyFrom", "ReadOnly",
	"Follow", "SetHostCordoned",
}

// TestLedgerReaderHasNoWriter: every exported method of *Ledger is either
// in LedgerReader or a known writer (so a method added later must be
// classified here), and no writer is in LedgerReader.
func TestLedgerReaderHasNoWriter(t *testing.T) {
	rt := reflect.TypeFor[LedgerReader]()
	lt := reflect.TypeFor[*Ledger]()
	for i := 0; i < lt.NumMethod(); i++ {
		name := lt.Method(i).Name
		_, read := rt.MethodByName(name)
		write := slices.Contains(ledgerWriters, name)
		switch {
		case read && write:
			t.Errorf("LedgerReader has %s, which changes the ledger", name)
		case !read && !write:
			t.Errorf("*Ledger.%s is neither in LedgerReader nor a known writer: classify it", name)
		}
	}
	for _, name := range ledgerWriters {
		if _, ok := lt.MethodByName(name); !ok {
			t.Errorf("ledgerWriters lists %s, which *Ledger lacks", name)
		}
	}
}

// TestReadOnlyHidesTheLedger: the view of Ledger.ReadOnly is no *Ledger
// and has no writer, whatever a caller asserts it to.
func TestReadOnlyHidesTheLedger(t *testing.T) {
	l := NewLedger(cursorCluster(t))
	r := l.ReadOnly()
	if _, ok := r.(*Ledger); ok {
		t.Fatal("the read-only view is a *Ledger")
	}
	if _, ok := r.(interface{ Allocate(...Claim) error }); ok {
		t.Fatal("the read-only view can Allocate")
	}
	vt := reflect.TypeOf(r)
	for _, name := range ledgerWriters {
		if _, ok := vt.MethodByName(name); ok {
			t.Errorf("the read-only view has %s", name)
		}
	}
	if n, want := vt.NumMethod(), reflect.TypeFor[LedgerReader]().NumMethod(); n != want {
		t.Errorf("the read-only view has %d methods, LedgerReader %d", n, want)
	}
	// Reflection cannot reach the ledger behind it either.
	f := reflect.ValueOf(r).Field(0)
	if f.CanInterface() {
		t.Error("reflection hands out the ledger behind the view")
	}
}

// TestReadOnlyReadsWithoutChanging: the view shows the ledger's current
// state, and calling every one of its methods (and changing a Clone)
// leaves the ledger exactly as it was.
func TestReadOnlyReadsWithoutChanging(t *testing.T) {
	c := cursorCluster(t)
	l := NewLedger(c)
	r := l.ReadOnly()
	if err := l.Allocate(Claim{Host: 0, CPUMilli: 10, GPUs: []GPUClaim{{GPU: 0, Kind: ClaimWhole}, {GPU: 1, Kind: ClaimWhole}}},
		Claim{Host: 1, GPUs: []GPUClaim{{GPU: 8, Kind: ClaimShare, Milli: 300}}}); err != nil {
		t.Fatal(err)
	}
	if err := l.SetHostHealth(2, Draining); err != nil {
		t.Fatal(err)
	}
	if got, want := r.FreeGPUs(c.Root()), l.FreeGPUs(c.Root()); got != want || r.Generation() != l.Generation() {
		t.Fatalf("view shows %d free GPUs, ledger %d", got, want)
	}
	before := fingerprint(l)
	gen := l.Generation()

	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		_ = r.HostGeneration(h) + uint64(r.HostFreeGPUs(h)) + uint64(r.CPUFree(h)+r.MemoryFree(h))
		_ = r.HostHealth(h)
	}
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		_, _, _ = r.GPU(g), r.GPUFreeMilli(g), r.GPUIsFree(g)
	}
	for d := DomainID(0); int(d) < c.NumDomains(); d++ {
		_, _, _ = r.FreeGPUs(d), r.FreeMilli(d), r.HealthyGPUs(d)
	}
	r.BestHost(c.Root(), 1, NoModel)
	r.AscendHosts(c.Root(), NoModel, 0, func(HostID, int) bool { return true })
	r.NextHost(c.Root(), NoModel, 0, NoHost)
	r.PrevHost(c.Root(), NoModel, 8, NoHost)
	for lv := Level(0); lv <= c.LevelCluster(); lv++ {
		r.BestDomain(lv, 1)
		r.AscendDomains(lv, 0, func(DomainID, int) bool { return true })
		r.MaxFreeDomain(lv)
		r.NextDomain(lv, 0, NoDomain)
		r.PrevDomain(lv, 8, NoDomain)
	}
	r.AscendSharedGPUs(0, 0, func(GPUID, int) bool { return true })
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	cl := r.Clone()
	if err := cl.Allocate(Claim{Host: 3, GPUs: []GPUClaim{{GPU: 24, Kind: ClaimWhole}}}); err != nil {
		t.Fatal(err)
	}
	if r.Cluster() != c {
		t.Error("view of another cluster")
	}
	if l.Generation() != gen || fingerprint(l) != before {
		t.Fatal("reading through the view changed the ledger")
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}

// fingerprint renders everything a reader can see of l.
func fingerprint(l *Ledger) string {
	c := l.Cluster()
	var b strings.Builder
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		fmt.Fprintf(&b, "g%d %+v\n", g, l.GPU(g))
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		fmt.Fprintf(&b, "h%d %v %d %d\n", h, l.HostHealth(h), l.CPUFree(h), l.MemoryFree(h))
	}
	for d := DomainID(0); int(d) < c.NumDomains(); d++ {
		fmt.Fprintf(&b, "d%d %d %d %d\n", d, l.FreeGPUs(d), l.FreeMilli(d), l.HealthyGPUs(d))
	}
	return b.String()
}
