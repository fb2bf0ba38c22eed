package topology

import (
	"cmp"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// cursorCluster is a two-model cluster with spines and ToRs of uneven
// sizes, so that host orders differ across leaves and models.
func cursorCluster(t testing.TB) *Cluster {
	t.Helper()
	_, a, _ := MachineTemplate("dgx-h100")
	_, b, _ := MachineTemplate("pcie-8gpu")
	s := Spec{
		Version: SpecVersion, Name: "cursor",
		Levels:       []LevelSpec{{Name: "spine"}, {Name: "tor"}},
		Accelerators: []AcceleratorSpec{a, b},
		Templates: []HostTemplate{
			{Name: "big", CPUMilli: 1000, MemoryMiB: 1000, Accelerator: a.Model, GPUs: 8},
			{Name: "small", CPUMilli: 1000, MemoryMiB: 1000, Accelerator: b.Model, GPUs: 4},
			{Name: "cpu", CPUMilli: 1000, MemoryMiB: 1000},
		},
		Switches: []SwitchGroup{
			{Name: "spine[1-2]", Level: "spine"},
			{Name: "tor[1-5]", Level: "tor", Parent: "spine[1-2]", PerParent: 3},
		},
		Hosts: []HostGroup{
			{Name: "a[01-07]", Template: "big", Parent: "tor[1-2]", PerParent: 4},
			{Name: "b[01-06]", Template: "small", Parent: "tor[3-5]", PerParent: 2},
			{Name: "c1", Template: "cpu", Parent: "tor5"},
		},
	}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type hostKey struct {
	h    HostID
	free int
}

// naiveHosts lists the hosts under d with model m in ascending (free, ID).
func naiveHosts(l *Ledger, d DomainID, m ModelID) []hostKey {
	c := l.Cluster()
	var out []hostKey
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		if _, n := c.HostGPUs(h); n == 0 {
			continue
		}
		if m != NoModel && c.HostModel(h) != m {
			continue
		}
		if !under(c, c.HostDomain(h), d) {
			continue
		}
		out = append(out, hostKey{h, l.HostFreeGPUs(h)})
	}
	slices.SortFunc(out, func(a, b hostKey) int {
		return cmp.Or(cmp.Compare(a.free, b.free), cmp.Compare(a.h, b.h))
	})
	return out
}

func under(c *Cluster, x, d DomainID) bool {
	for ; x != NoDomain; x = c.DomainParent(x) {
		if x == d {
			return true
		}
	}
	return false
}

func randomFill(t *rapid.T, l *Ledger) {
	c := l.Cluster()
	n := rapid.IntRange(0, c.NumGPUs()).Draw(t, "used")
	for i := 0; i < n; i++ {
		g := GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "gpu"))
		if l.GPUIsFree(g) {
			if err := l.AllocateGPU(g); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rapid.Bool().Draw(t, "sick") {
		h := HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "sickHost"))
		if err := l.SetHostHealth(h, Draining); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHostCursorsMatchNaiveOrder(t *testing.T) {
	c := cursorCluster(t)
	var doms []DomainID
	for d := DomainID(0); int(d) < c.NumDomains(); d++ {
		if k := c.DomainKindOf(d); k == KindCluster || k == KindNetwork || k == KindHost {
			doms = append(doms, d)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		l := NewLedger(c)
		randomFill(t, l)
		d := rapid.SampledFrom(doms).Draw(t, "domain")
		m := ModelID(rapid.IntRange(-1, len(c.Models())-1).Draw(t, "model"))
		want := naiveHosts(l, d, m)
		minFree := rapid.IntRange(0, 9).Draw(t, "minFree")

		// Ascending from minFree.
		var got []hostKey
		free, after := minFree, NoHost
		for {
			h, f, ok := l.NextHost(d, m, free, after)
			if !ok {
				break
			}
			got = append(got, hostKey{h, f})
			free, after = f, h
		}
		var wantAsc []hostKey
		for _, k := range want {
			if k.free >= minFree {
				wantAsc = append(wantAsc, k)
			}
		}
		if !slices.Equal(got, wantAsc) {
			t.Fatalf("NextHost order %v, want %v", got, wantAsc)
		}

		// Descending from the top.
		got = got[:0]
		free, before := MaxGPUsPerHost+1, NoHost
		for {
			h, f, ok := l.PrevHost(d, m, free, before)
			if !ok {
				break
			}
			got = append(got, hostKey{h, f})
			free, before = f, h
		}
		wantDesc := slices.Clone(want)
		slices.Reverse(wantDesc)
		if !slices.Equal(got, wantDesc) {
			t.Fatalf("PrevHost order %v, want %v", got, wantDesc)
		}
	})
}

func TestDomainCursorsMatchNaiveOrder(t *testing.T) {
	c := cursorCluster(t)
	rapid.Check(t, func(t *rapid.T) {
		l := NewLedger(c)
		randomFill(t, l)
		lv := Level(rapid.SampledFrom([]int{0, 2, 3, 4}).Draw(t, "level"))
		type dk struct {
			d    DomainID
			free int
		}
		var want []dk
		for _, d := range c.DomainsAt(lv) {
			want = append(want, dk{d, l.FreeGPUs(d)})
		}
		slices.SortFunc(want, func(a, b dk) int { return cmp.Or(cmp.Compare(a.free, b.free), cmp.Compare(a.d, b.d)) })
		var got []dk
		free, after := 0, NoDomain
		for {
			d, f, ok := l.NextDomain(lv, free, after)
			if !ok {
				break
			}
			got = append(got, dk{d, f})
			free, after = f, d
		}
		if !slices.Equal(got, want) {
			t.Fatalf("level %d: NextDomain order %v, want %v", lv, got, want)
		}
		got = got[:0]
		free, before := c.NumGPUs()+1, NoDomain
		for {
			d, f, ok := l.PrevDomain(lv, free, before)
			if !ok {
				break
			}
			got = append(got, dk{d, f})
			free, before = f, d
		}
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Fatalf("level %d: PrevDomain order %v, want %v", lv, got, want)
		}
	})
}

func TestTrialAllocateKeepsGeneration(t *testing.T) {
	c := cursorCluster(t)
	l := NewLedger(c)
	if err := l.AllocateGPU(3); err != nil {
		t.Fatal(err)
	}
	gen, hgen := l.Generation(), l.HostGeneration(0)
	before := l.Clone()
	cl := []Claim{{Host: 0, CPUMilli: 10, GPUs: []GPUClaim{{GPU: 0}, {GPU: 1}}}, {Host: 1, GPUs: []GPUClaim{{GPU: 8, Kind: ClaimShare, Milli: 300}}}}
	if err := l.TrialAllocate(cl...); err != nil {
		t.Fatal(err)
	}
	if l.Generation() != gen || l.HostGeneration(0) == hgen {
		t.Fatalf("trial: generation %d (want %d), host generation %d (want > %d)", l.Generation(), gen, l.HostGeneration(0), hgen)
	}
	if l.FreeGPUs(0) != before.FreeGPUs(0)-3 {
		t.Fatalf("trial did not allocate: %d free", l.FreeGPUs(0))
	}
	if err := l.TrialAllocate(Claim{Host: 0, GPUs: []GPUClaim{{GPU: 3}}}); err == nil {
		t.Fatal("trial allocation of a busy GPU succeeded")
	}
	if err := l.TrialRelease(cl...); err != nil {
		t.Fatal(err)
	}
	if l.Generation() != gen {
		t.Fatalf("generation %d after rollback, want %d", l.Generation(), gen)
	}
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		if l.GPU(g) != before.GPU(g) {
			t.Fatalf("GPU %d: %+v after rollback, want %+v", g, l.GPU(g), before.GPU(g))
		}
	}
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		if l.CPUFree(h) != before.CPUFree(h) || l.MemoryFree(h) != before.MemoryFree(h) {
			t.Fatalf("host %d resources differ after rollback", h)
		}
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
