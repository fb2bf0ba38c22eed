package preempt

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// TestConsolidate works defragSetup's cluster by hand: 2 ToRs of 2 DGX
// H100 hosts, each host half used (a1 1 h and a2 2 h in tor1; b1, b2
// 10 min in tor2).
func TestConsolidate(t *testing.T) {
	f, _ := defragSetup(t)
	c := f.st.Ledger().Cluster()
	s := newSearch(t, Config{})
	tor, _ := c.LevelByName("tor")
	onHost := func(p *DefragPlan, m int, host string) bool {
		h, _ := c.HostByName(host)
		for _, cl := range p.Migrations[m].To.Claims {
			if cl.Host == h {
				return true
			}
		}
		return false
	}
	// ToR level: tor2 loses the least (2 × 4 GPUs × 10 min = 80 GPU-min
	// against 4 × 60 + 4 × 120 = 720 for tor1); b1 and b2 go to tor1.
	p := s.Consolidate(f.st, ConsolidateOptions{Level: tor}, now)
	if p == nil || p.Level != tor || c.DomainName(p.Domain) != "tor2" || len(p.Migrations) != 2 ||
		p.Migrations[0].Job != "b1" || p.Migrations[1].Job != "b2" || p.Cost.Lost != GPUTime(80*60*1000) {
		t.Fatalf("ToR plan %+v", p)
	}
	for m := range p.Migrations {
		if onHost(p, m, "dgx-h100-3") || onHost(p, m, "dgx-h100-4") {
			t.Fatalf("%s stays in the ToR it frees", p.Migrations[m].Job)
		}
	}
	// At most one move: neither ToR can be freed.
	if p := s.Consolidate(f.st, ConsolidateOptions{Level: tor, MaxMoves: 1}, now); p != nil {
		t.Fatalf("MaxMoves 1: %+v", p)
	}
	// Nor within 30 GPU-min lost.
	if p := s.Consolidate(f.st, ConsolidateOptions{Level: tor, MaxLost: GPUTime(30 * 60 * 1000)}, now); p != nil {
		t.Fatalf("MaxLost 30 GPU-min: %+v", p)
	}
	// b1 may not move: tor2 is out, tor1 is freed into tor2.
	p = s.Consolidate(f.st, ConsolidateOptions{Level: tor, Skip: func(j *Job) bool { return j.Spec.ID == "b1" }}, now)
	if p == nil || c.DomainName(p.Domain) != "tor1" || len(p.Migrations) != 2 || p.Migrations[0].Job != "a1" {
		t.Fatalf("with b1 skipped: %+v", p)
	}
	// NVLink level (one host each on a DGX): host 3 (b1, 40 GPU-min,
	// lowest domain ID of the two cheapest) is emptied elsewhere.
	p = s.Consolidate(f.st, ConsolidateOptions{Level: topology.LevelFabric}, now)
	if p == nil || len(p.Migrations) != 1 || p.Migrations[0].Job != "b1" || onHost(p, 0, "dgx-h100-3") {
		t.Fatalf("NVLink plan %+v", p)
	}
	// The cluster level has one domain: nothing to free.
	if p := s.Consolidate(f.st, ConsolidateOptions{Level: c.LevelCluster()}, now); p != nil {
		t.Fatalf("cluster level: %+v", p)
	}
	if err := f.st.Ledger().Check(); err != nil {
		t.Fatal(err)
	}
}
