package topology

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/btree"
	"pgregory.net/rapid"
)

// TestKeySetMatchesBTree drives a keySet and a google/btree B-tree (the
// index it replaced) through the same random inserts, deletes, clones and
// copies (changed independently afterwards), and checks after every step
// that Len, Has and every walk agree.
func TestKeySetMatchesBTree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type pair struct {
			s *keySet
			b *btree.BTreeG[uint64]
		}
		sets := []pair{{&keySet{}, btree.NewG(16, func(a, b uint64) bool { return a < b })}}
		// Keys from a small range (dense: duplicates, neighbours) or a
		// wide one.
		span := rapid.SampledFrom([]uint64{50, 600, 1 << 40}).Draw(rt, "span")
		key := func(label string) uint64 { return rapid.Uint64Range(0, span).Draw(rt, label) }
		walk := func(f func(fn func(uint64) bool)) []uint64 {
			var out []uint64
			stop := rapid.IntRange(0, 400).Draw(rt, "stop after")
			f(func(k uint64) bool { out = append(out, k); return len(out) < stop })
			return out
		}
		for range rapid.IntRange(1, 600).Draw(rt, "steps") {
			p := &sets[rapid.IntRange(0, len(sets)-1).Draw(rt, "set")]
			switch rapid.IntRange(0, 11).Draw(rt, "op") {
			case 10, 11: // many at once (chunks split and merge)
				r := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
				del := rapid.Bool().Draw(rt, "bulk delete")
				for range rapid.IntRange(1, 400).Draw(rt, "bulk") {
					k := r.Uint64N(span + 1)
					if del {
						if ks := walk0(p.b); len(ks) > 0 {
							k = ks[r.IntN(len(ks))]
						}
						p.s.Delete(k)
						p.b.Delete(k)
					} else {
						p.s.ReplaceOrInsert(k)
						p.b.ReplaceOrInsert(k)
					}
				}
			case 0, 1, 2, 3:
				k := key("insert")
				p.s.ReplaceOrInsert(k)
				p.b.ReplaceOrInsert(k)
			case 4, 5, 6:
				k := key("delete")
				if p.b.Len() > 0 && rapid.Bool().Draw(rt, "present") {
					ks := walk(func(fn func(uint64) bool) { p.b.Ascend(fn) })
					if len(ks) > 0 {
						k = ks[rapid.IntRange(0, len(ks)-1).Draw(rt, "which")]
					}
				}
				p.s.Delete(k)
				p.b.Delete(k)
			case 7:
				if len(sets) < 4 {
					sets = append(sets, pair{p.s.Clone(), p.b.Clone()})
				}
			case 8:
				q := &sets[rapid.IntRange(0, len(sets)-1).Draw(rt, "into")]
				if q != p {
					q.s.copyFrom(p.s)
					q.b = p.b.Clone()
				}
			case 9:
				k := key("probe")
				if p.s.Has(k) != p.b.Has(k) {
					rt.Fatalf("Has(%d): %v, B-tree %v", k, p.s.Has(k), p.b.Has(k))
				}
			}
			for i, q := range sets {
				if q.s.Len() != q.b.Len() {
					rt.Fatalf("set %d: Len %d, B-tree %d", i, q.s.Len(), q.b.Len())
				}
				k := key("from")
				checks := []struct {
					name string
					a, b func(fn func(uint64) bool)
				}{
					{"AscendGreaterOrEqual", func(fn func(uint64) bool) { q.s.AscendGreaterOrEqual(k, fn) }, func(fn func(uint64) bool) { q.b.AscendGreaterOrEqual(k, fn) }},
					{"DescendLessOrEqual", func(fn func(uint64) bool) { q.s.DescendLessOrEqual(k, fn) }, func(fn func(uint64) bool) { q.b.DescendLessOrEqual(k, fn) }},
					{"Descend", q.s.Descend, func(fn func(uint64) bool) { q.b.Descend(fn) }},
				}
				for _, c := range checks {
					stop := rapid.IntRange(1, 1000).Draw(rt, "stop")
					var got, want []uint64
					c.a(func(x uint64) bool { got = append(got, x); return len(got) < stop })
					c.b(func(x uint64) bool { want = append(want, x); return len(want) < stop })
					if !slices.Equal(got, want) {
						rt.Fatalf("set %d: %s(%d) = %v, B-tree %v", i, c.name, k, got, want)
					}
				}
				for c, ch := range q.s.chunks {
					if len(ch) == 0 || len(ch) > chunkMax || q.s.lasts[c] != ch[len(ch)-1] {
						rt.Fatalf("set %d: chunk %d has %d keys, last %d", i, c, len(ch), q.s.lasts[c])
					}
				}
			}
		}
	})
}

// walk0 lists b's keys.
func walk0(b *btree.BTreeG[uint64]) []uint64 {
	var out []uint64
	b.Ascend(func(k uint64) bool { out = append(out, k); return true })
	return out
}
