package topology

import (
	"testing"
)

func mustPreset(t testing.TB, name string) *Cluster {
	t.Helper()
	c, err := LoadPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSmoke(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	t.Log(c)
	if c.NumGPUs() != 8 {
		t.Fatal(c.NumGPUs())
	}
	for a := GPUID(0); a < 8; a++ {
		row := ""
		for b := GPUID(0); b < 8; b++ {
			row += c.Link(a, b).Kind.String() + " "
		}
		t.Log(row)
	}
	p := mustPreset(t, "pcie-8gpu")
	for a := GPUID(0); a < 8; a++ {
		row := ""
		for b := GPUID(0); b < 8; b++ {
			row += p.Link(a, b).Kind.String() + " "
		}
		t.Log(row)
	}
	for _, d := range p.Ancestors(0) {
		t.Log(p.DomainName(d), p.DomainKindOf(d))
	}
	big := mustPreset(t, "h100-10k")
	t.Log(big, big.LevelName(2), big.LevelName(3))
	l := NewLedger(big)
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	for g := GPUID(0); g < 100; g += 3 {
		if err := l.AllocateGPU(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	h, ok := l.BestHost(big.HostAt(0, 2), 1, NoModel)
	t.Log(h, ok, l.HostFreeGPUs(h))
	h, ok = l.BestHost(0, 8, NoModel)
	t.Log(h, ok, l.HostFreeGPUs(h))
	d, ok := l.BestDomain(2, 200)
	t.Log(big.DomainName(d), ok, l.FreeGPUs(d))
	if err := l.AllocateGPU(0); err == nil {
		t.Fatal("double alloc")
	} else {
		t.Log(err)
	}
}
