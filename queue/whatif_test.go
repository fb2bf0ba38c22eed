package queue

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestWhatIfMatchesRelease: taking charges off in a WhatIf answers Check,
// Excess, Borrows and Share exactly as a tree that never had those charges
// does, for every policy; adding them back restores the original answers.
func TestWhatIfMatchesRelease(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		cfg := seedConfig()
		cfg.Fairness.Policy = rapid.SampledFrom([]FairPolicy{DRF, Borrowed, FairTree, NoFairness}).Draw(rt, "policy")
		all := build(t, cfg)
		leaves := all.Leaves()
		type charge struct {
			leaf    NodeID
			v       Vector
			running bool
		}
		var charges []charge
		for i := rapid.IntRange(0, 10).Draw(rt, "jobs"); i > 0; i-- {
			c := charge{leaf: rapid.SampledFrom(leaves).Draw(rt, "leaf"), v: gpus(int64(rapid.IntRange(1, 16).Draw(rt, "gpus"))), running: rapid.Bool().Draw(rt, "running")}
			if all.Check(c.leaf, c.v) != nil {
				continue
			}
			all.Admit(c.leaf, c.v, now)
			if c.running {
				all.Start(c.leaf, c.v, now)
			}
			charges = append(charges, c)
		}
		gone := make([]bool, len(charges))
		rest := build(t, cfg)
		w := all.WhatIf()
		for i, c := range charges {
			gone[i] = rapid.Bool().Draw(rt, "gone")
			if gone[i] {
				w.Release(c.leaf, c.v)
				continue
			}
			rest.Admit(c.leaf, c.v, now)
			if c.running {
				rest.Start(c.leaf, c.v, now)
			}
		}
		same := func(what string, a, b *Block) {
			if (a == nil) != (b == nil) || a != nil && (a.Queue != b.Queue || a.Kind != b.Kind || a.Resource != b.Resource || a.Usage != b.Usage || a.Limit != b.Limit) {
				rt.Fatalf("%s: what-if %v, released tree %v", what, a, b)
			}
		}
		compare := func(w *WhatIf, ref *Tree, what string) {
			for _, l := range leaves {
				for _, n := range []int64{1, 4, 8, 16, 32, 48} {
					same(what, w.Check(l, gpus(n)), ref.Check(l, gpus(n)))
				}
			}
			for id := NodeID(0); int(id) < ref.NumNodes(); id++ {
				nd := &ref.nodes[id]
				if got, want := w.Excess(id, 0), nd.eff[0]-nd.nominal[0]; got != want {
					rt.Fatalf("%s: excess of %s = %d, want %d", what, ref.Name(id), got, want)
				}
				if got, want := w.Borrows(id, nil), nd.eff[0] > nd.nominal[0]; got != want {
					rt.Fatalf("%s: borrows of %s = %v, want %v", what, ref.Name(id), got, want)
				}
				if ref.fair.Policy != FairTree && id > 0 {
					if got, want := w.Share(id, nil), ref.Key(id); got != want {
						rt.Fatalf("%s: share of %s = %v, want %v", what, ref.Name(id), got, want)
					}
				}
			}
		}
		compare(w, rest, "released")
		// Adding back restores the original tree's answers.
		for i, c := range charges {
			if gone[i] {
				w.Add(c.leaf, c.v)
			}
		}
		compare(w, all, "restored")
		w.Reset()
		compare(w, all, "reset")
	})
}

// TestWhatIfShareAdds: Share with an added vector is the share the node
// would have with that usage admitted.
func TestWhatIfShareAdds(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := seedConfig()
	cfg.Fairness.Policy = Borrowed
	tr := build(t, cfg)
	exp := leaf(t, tr, "experiments")
	w := tr.WhatIf()
	got := w.Share(exp, gpus(12))
	tr.Admit(exp, gpus(12), now)
	if want := tr.Key(exp); got != want {
		t.Fatalf("share with 12 GPUs added = %v, admitted = %v", got, want)
	}
	if got <= 0 {
		t.Fatalf("experiments borrows 4 GPUs but share %v", got)
	}
}
