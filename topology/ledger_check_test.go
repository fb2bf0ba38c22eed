package topology

import (
	"strings"
	"testing"
)

// checkFixture is a small networked cluster (4 dgx-h100 hosts, 2 to a
// ToR) with a ledger holding whole, shared and MIG GPUs and host CPU and
// memory, its indexes built by queries.
type checkFixture struct {
	c      *Cluster
	l      *Ledger
	whole  GPUID // held whole
	shared GPUID // 300 milli used, shared
	mig    GPUID // one MIG instance
	free   GPUID // nothing on it
	host   HostID
}

func newCheckFixture(t *testing.T) checkFixture {
	t.Helper()
	s, err := Generator{Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger(c)
	g0, _ := c.HostGPUs(0)
	g1, _ := c.HostGPUs(1)
	f := checkFixture{c: c, l: l, whole: g0, shared: g0 + 1, mig: g0 + 2, free: g1 + 7, host: 1}
	err = l.Allocate(
		Claim{Host: 0, CPUMilli: 4000, MemoryMiB: 8192, GPUs: []GPUClaim{
			{GPU: f.whole, Kind: ClaimWhole},
			{GPU: f.shared, Kind: ClaimShare, Milli: 300},
			{GPU: f.mig, Kind: ClaimMIG, Profile: 0, Start: 0},
		}},
		Claim{Host: 1, CPUMilli: 2000, MemoryMiB: 1024, GPUs: []GPUClaim{{GPU: g1, Kind: ClaimWhole}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	// Query every index so that nothing is left dirty: a corruption of an
	// index entry must then be caught by Check, not repaired by a flush.
	if _, ok := l.BestHost(c.Root(), 1, NoModel); !ok {
		t.Fatal("no host with a free GPU")
	}
	for lv := Level(0); lv < c.LevelCluster(); lv++ {
		if lv != LevelHost {
			l.BestDomain(lv, 1)
		}
	}
	n := 0
	l.AscendSharedGPUs(c.HostModel(0), 0, func(GPUID, int) bool { n++; return true })
	if n != 1 {
		t.Fatalf("%d shared GPUs indexed, want 1", n)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("Check on the uncorrupted ledger: %v", err)
	}
	return f
}

// TestCheckCatchesCorruption corrupts one piece of the ledger at a time
// (GPU state, domain counters, host CPU and memory, health, index entries)
// and expects Check to report it, naming what disagrees. Each case gets a
// fresh ledger; undoing the corruption must make Check pass again.
func TestCheckCatchesCorruption(t *testing.T) {
	type corruption struct {
		name string
		// corrupt changes the ledger and returns the undo and the words
		// the error must contain.
		corrupt func(f checkFixture) (undo func(), want []string)
	}
	gpuField := func(pick func(f checkFixture) GPUID, set func(s *gpuState)) func(f checkFixture) (func(), []string) {
		return func(f checkFixture) (func(), []string) {
			g := pick(f)
			old := f.l.gpu[g]
			set(&f.l.gpu[g])
			return func() { f.l.gpu[g] = old }, []string{"GPU " + f.c.GPUName(g)}
		}
	}
	// A change of a GPU's contribution that keeps its own state
	// self-consistent is seen in the counters of the domains holding it:
	// Check names the first such domain.
	gpuCounters := func(pick func(f checkFixture) GPUID, set func(f checkFixture, g GPUID)) func(f checkFixture) (func(), []string) {
		return func(f checkFixture) (func(), []string) {
			g := pick(f)
			old, oldHost := f.l.gpu[g], f.l.hostHealth[f.c.gpus[g].host]
			set(f, g)
			first := f.c.Ancestors(g)[0]
			for _, d := range f.c.Ancestors(g) {
				first = min(first, d)
			}
			if fd := f.c.GPUFabric(g); fd != NoDomain {
				first = min(first, fd)
			}
			return func() {
				f.l.gpu[g], f.l.hostHealth[f.c.gpus[g].host] = old, oldHost
			}, []string{"domain " + f.c.DomainName(first) + ": counters"}
		}
	}
	domainField := func(pick func(f checkFixture) DomainID, field string) func(f checkFixture) (func(), []string) {
		return func(f checkFixture) (func(), []string) {
			d := pick(f)
			var undo func()
			switch field {
			case "free":
				f.l.freeWhole[d]++
				undo = func() { f.l.freeWhole[d]-- }
			case "milli":
				f.l.freeMilli[d] -= 5
				undo = func() { f.l.freeMilli[d] += 5 }
			case "healthy":
				f.l.ownHealthy() // a clone's copy-on-write array stays as it is
				f.l.healthy[d]--
				undo = func() { f.l.healthy[d]++ }
			}
			return undo, []string{"domain " + f.c.DomainName(d) + ": counters"}
		}
	}
	hostDomain := func(f checkFixture) DomainID { return f.c.HostDomain(0) }
	tor := func(f checkFixture) DomainID { return f.c.HostAt(0, LevelHost+1) }
	fabric := func(f checkFixture) DomainID { return f.c.GPUFabric(f.whole) }
	switchOf := func(f checkFixture) DomainID { return f.c.Ancestors(f.shared)[0] }
	root := func(f checkFixture) DomainID { return f.c.Root() }
	hostName := func(f checkFixture) string { return "host " + f.c.HostName(f.host) }

	cases := []corruption{
		{"whole GPU marked free", gpuField(func(f checkFixture) GPUID { return f.whole }, func(s *gpuState) { s.mode = ModeFree })},
		{"free GPU marked whole", gpuField(func(f checkFixture) GPUID { return f.free }, func(s *gpuState) { s.mode = ModeWhole })},
		{"whole GPU partly used", gpuField(func(f checkFixture) GPUID { return f.whole }, func(s *gpuState) { s.used = 999 })},
		{"shared GPU marked MIG", gpuField(func(f checkFixture) GPUID { return f.shared }, func(s *gpuState) { s.mode = ModeMIG })},
		{"shared GPU with MIG slots", gpuField(func(f checkFixture) GPUID { return f.shared }, func(s *gpuState) { s.mig = 1 })},
		{"shared GPU over 1000 milli", gpuField(func(f checkFixture) GPUID { return f.shared }, func(s *gpuState) { s.used = 1001 })},
		{"shared GPU with nothing used", gpuField(func(f checkFixture) GPUID { return f.shared }, func(s *gpuState) { s.used = 0 })},
		{"MIG GPU used milli off its slots", gpuField(func(f checkFixture) GPUID { return f.mig }, func(s *gpuState) { s.used += 1 })},
		{"MIG GPU with no slots", gpuField(func(f checkFixture) GPUID { return f.mig }, func(s *gpuState) { s.mig = 0 })},
		{"bad mode", gpuField(func(f checkFixture) GPUID { return f.free }, func(s *gpuState) { s.mode = 9 })},
		{"shared GPU used milli changed", gpuCounters(func(f checkFixture) GPUID { return f.shared }, func(f checkFixture, g GPUID) { f.l.gpu[g].used = 400 })},
		{"free GPU taken whole behind the counters", gpuCounters(func(f checkFixture) GPUID { return f.free }, func(f checkFixture, g GPUID) {
			f.l.gpu[g].mode, f.l.gpu[g].used = ModeWhole, MilliPerGPU
		})},
		{"MIG slot added behind the counters", gpuCounters(func(f checkFixture) GPUID { return f.mig }, func(f checkFixture, g GPUID) {
			s := &f.l.gpu[g]
			s.mig |= 1 << 7
			s.used = migUsed(s.mig, f.c.Model(f.c.HostModel(0)).MIGSlots)
		})},
		{"GPU health flipped behind the counters", gpuCounters(func(f checkFixture) GPUID { return f.free }, func(f checkFixture, g GPUID) { f.l.gpu[g].health = Failed })},
		{"host health flipped behind the counters", gpuCounters(func(f checkFixture) GPUID { return f.free }, func(f checkFixture, g GPUID) {
			f.l.hostHealth[f.c.gpus[g].host] = Draining
		})},
		{"host domain free count", domainField(hostDomain, "free")},
		{"host domain free milli", domainField(hostDomain, "milli")},
		{"host domain healthy count", domainField(hostDomain, "healthy")},
		{"ToR free count", domainField(tor, "free")},
		{"ToR healthy count", domainField(tor, "healthy")},
		{"fabric free milli", domainField(fabric, "milli")},
		{"fabric free count", domainField(fabric, "free")},
		{"PCIe switch free milli", domainField(switchOf, "milli")},
		{"root healthy count", domainField(root, "healthy")},
		{"host free CPU negative", func(f checkFixture) (func(), []string) {
			old := f.l.cpuFree[f.host]
			f.l.cpuFree[f.host] = -1
			return func() { f.l.cpuFree[f.host] = old }, []string{hostName(f), "free CPU"}
		}},
		{"host free CPU above capacity", func(f checkFixture) (func(), []string) {
			old := f.l.cpuFree[f.host]
			f.l.cpuFree[f.host] = f.c.CPUMilli(f.host) + 1
			return func() { f.l.cpuFree[f.host] = old }, []string{hostName(f), "free CPU"}
		}},
		{"host free memory negative", func(f checkFixture) (func(), []string) {
			old := f.l.memFree[f.host]
			f.l.memFree[f.host] = -5
			return func() { f.l.memFree[f.host] = old }, []string{hostName(f), "free memory"}
		}},
		{"host free memory above capacity", func(f checkFixture) (func(), []string) {
			old := f.l.memFree[f.host]
			f.l.memFree[f.host] = f.c.MemoryMiB(f.host) + 1
			return func() { f.l.memFree[f.host] = old }, []string{hostName(f), "free memory"}
		}},
		{"host indexed with a stale free count", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			old := x.hostFree[f.host]
			x.hostFree[f.host]++
			return func() { x.hostFree[f.host] = old }, []string{"index: host " + f.c.HostName(f.host), "free GPUs"}
		}},
		{"host missing from the ToR index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			hx := &f.c.hosts[f.host]
			k := leafKey(hx.parent, x.leafFree[f.host], f.host)
			if _, ok := x.byLeaf.Delete(k); !ok {
				t.Fatal("no byLeaf entry to delete")
			}
			return func() { x.byLeaf.ReplaceOrInsert(k) }, []string{"index: host " + f.c.HostName(f.host), "missing"}
		}},
		{"host missing from the model index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			hx := &f.c.hosts[f.host]
			k := modelKey(hx.model, x.hostFree[f.host], int32(f.host))
			if _, ok := x.byModel.Delete(k); !ok {
				t.Fatal("no byModel entry to delete")
			}
			return func() { x.byModel.ReplaceOrInsert(k) }, []string{"index: host " + f.c.HostName(f.host), "missing"}
		}},
		{"stray host entry in the ToR index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			hx := &f.c.hosts[f.host]
			k := leafKey(hx.parent, x.leafFree[f.host]+1, f.host)
			x.byLeaf.ReplaceOrInsert(k)
			return func() { x.byLeaf.Delete(k) }, []string{"index:", "host entries"}
		}},
		{"ToR indexed with a stale free count", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			d := tor(f)
			t := x.byLevel[f.c.domains[d].level]
			old := x.domFree[d]
			t.Delete(levelKey(old, d))
			t.ReplaceOrInsert(levelKey(old+1, d))
			x.domFree[d] = old + 1
			return func() {
				t.Delete(levelKey(old+1, d))
				t.ReplaceOrInsert(levelKey(old, d))
				x.domFree[d] = old
			}, []string{"index: domain " + f.c.DomainName(d), "free GPUs"}
		}},
		{"fabric domain missing from its level index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			d := fabric(f)
			t := x.byLevel[LevelFabric]
			k := levelKey(x.domFree[d], d)
			t.Delete(k)
			return func() { t.ReplaceOrInsert(k) }, []string{"index: level " + f.c.LevelName(LevelFabric), "entries"}
		}},
		{"shared GPU missing from the shared index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			k := modelKey(f.c.HostModel(0), int32(MilliPerGPU-f.l.gpu[f.shared].used), int32(f.shared))
			if _, ok := x.shared.Delete(k); !ok {
				t.Fatal("no shared entry to delete")
			}
			return func() { x.shared.ReplaceOrInsert(k) }, []string{"index: shared GPU " + f.c.GPUName(f.shared), "missing"}
		}},
		{"stray entry in the shared index", func(f checkFixture) (func(), []string) {
			x := &f.l.idx
			k := modelKey(f.c.HostModel(0), 500, int32(f.free))
			x.shared.ReplaceOrInsert(k)
			return func() { x.shared.Delete(k) }, []string{"index:", "shared entries"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newCheckFixture(t)
			undo, want := tc.corrupt(f)
			err := f.l.Check()
			if err == nil {
				t.Fatalf("Check returned nil; want an error naming %q", want)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %v\nwant it to contain %q", err, w)
				}
			}
			undo()
			if err := f.l.Check(); err != nil {
				t.Errorf("Check after undoing the corruption: %v", err)
			}
		})
	}
}

// TestCheckSeesThroughClones: a corruption of a clone is the clone's own
// (copy-on-write indexes): Check of the original still passes, the
// clone's fails.
func TestCheckSeesThroughClones(t *testing.T) {
	f := newCheckFixture(t)
	cl := f.l.Clone()
	hx := &f.c.hosts[f.host]
	cl.idx.byLeaf.Delete(leafKey(hx.parent, cl.idx.leafFree[f.host], f.host))
	if err := cl.Check(); err == nil {
		t.Error("Check of the corrupted clone returned nil")
	}
	if err := f.l.Check(); err != nil {
		t.Errorf("the original was corrupted through its clone: %v", err)
	}
}
