package gpusched

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyEndOrder files, refiles and drops random keys in an
// endOrder and in a naive oracle (a slice sorted after every change)
// and checks, after each step, that both hold the same keys in the same
// order and that the chunks keep their invariants. Ends are drawn from a
// few seconds so that ties (broken by sequence) and unknown ends are
// common; the first half of a run mostly files and the second mostly
// drops, so that chunks split, then shrink and merge.
func TestPropertyEndOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var o endOrder
		var oracle []endKey
		jobs := map[uint64]*job{} // a key's job, by sequence
		keyOf := func(seq uint64, unknown bool, sec int64, nsec int32) endKey {
			j := jobs[seq]
			if j == nil {
				j = &job{}
				jobs[seq] = j
			}
			k := endKey{seq: seq, j: j, unknown: unknown}
			if !unknown {
				k.sec, k.nsec = sec, nsec
			}
			return k
		}
		find := func(k endKey) int {
			return slices.IndexFunc(oracle, func(x endKey) bool { return !x.less(k) && !k.less(x) })
		}
		steps := rapid.IntRange(1, 600).Draw(t, "steps")
		for step := 0; step < steps; step++ {
			seq := rapid.Uint64Range(1, 300).Draw(t, "seq")
			k := keyOf(seq, rapid.IntRange(0, 9).Draw(t, "unknown") == 0,
				rapid.Int64Range(-2, 5).Draw(t, "sec"), int32(rapid.IntRange(0, 2).Draw(t, "nsec")))
			// Filing first, then mostly dropping: chunks split, then
			// shrink and merge.
			drop := rapid.IntRange(0, 3).Draw(t, "op") == 0
			if step >= steps/2 {
				drop = rapid.IntRange(0, 3).Draw(t, "op") != 0
			}
			if drop && len(oracle) > 0 && rapid.IntRange(0, 4).Draw(t, "held") != 0 {
				k = oracle[rapid.IntRange(0, len(oracle)-1).Draw(t, "which")] // mostly a key it holds
			}
			if drop {
				had := find(k) >= 0
				if got := o.delete(k); got != had {
					t.Fatalf("step %d: delete(%+v) = %v, the oracle had it: %v", step, k, got, had)
				}
				if i := find(k); i >= 0 {
					oracle = slices.Delete(oracle, i, i+1)
				}
			} else {
				o.insert(k)
				if i := find(k); i >= 0 {
					oracle[i] = k
				} else {
					oracle = append(oracle, k)
					slices.SortFunc(oracle, func(a, b endKey) int {
						if a.less(b) {
							return -1
						}
						return 1
					})
				}
			}
			checkEndOrder(t, &o, oracle)
		}
		// ascend stops where fn says so.
		if n := len(oracle); n > 0 {
			stop := rapid.IntRange(1, n).Draw(t, "stop")
			seen := 0
			o.ascend(func(endKey) bool { seen++; return seen < stop })
			if seen != stop {
				t.Fatalf("ascend went on to %d keys after fn returned false at %d", seen, stop)
			}
		}
	})
}

// checkEndOrder checks o against oracle: the same keys in order, chunks
// non-empty and within endChunkMax, each chunk's last key in lasts.
func checkEndOrder(t *rapid.T, o *endOrder, oracle []endKey) {
	var got []endKey
	o.ascend(func(k endKey) bool { got = append(got, k); return true })
	if !slices.Equal(got, oracle) {
		t.Fatalf("order:\n got    %+v\n oracle %+v", got, oracle)
	}
	if o.Len() != len(oracle) {
		t.Fatalf("Len %d, the oracle holds %d", o.Len(), len(oracle))
	}
	if len(o.lasts) != len(o.chunks) {
		t.Fatalf("%d lasts for %d chunks", len(o.lasts), len(o.chunks))
	}
	for c, ch := range o.chunks {
		if len(ch) == 0 || len(ch) > endChunkMax {
			t.Fatalf("chunk %d holds %d keys (1 to %d)", c, len(ch), endChunkMax)
		}
		if o.lasts[c] != ch[len(ch)-1] {
			t.Fatalf("chunk %d: lasts has %+v, its last key is %+v", c, o.lasts[c], ch[len(ch)-1])
		}
	}
}

// TestEndOrderKeepsNoJob: a key dropped from an endOrder, by delete or by
// a split or merge that moved it, leaves no pointer to its job behind in
// the chunks' spare room or in the spare chunks kept for reuse.
func TestEndOrderKeepsNoJob(t *testing.T) {
	var o endOrder
	var keys []endKey
	for i := range 4 * endChunkMax {
		k := endKey{sec: int64(i), seq: uint64(i), j: &job{}}
		keys = append(keys, k)
		o.insert(k)
	}
	for _, k := range keys {
		if !o.delete(k) {
			t.Fatalf("delete(%+v): not found", k)
		}
		for c, ch := range o.chunks {
			for _, x := range ch[len(ch):cap(ch)] {
				if x.j != nil {
					t.Fatalf("chunk %d's spare room keeps job of key %+v", c, x)
				}
			}
		}
		for s, ch := range o.spare {
			for _, x := range ch[:cap(ch)] {
				if x.j != nil {
					t.Fatalf("spare chunk %d keeps job of key %+v", s, x)
				}
			}
		}
	}
	if o.Len() != 0 || len(o.chunks) != 0 || len(o.lasts) != 0 {
		t.Fatalf("emptied: Len %d, %d chunks, %d lasts", o.Len(), len(o.chunks), len(o.lasts))
	}
}
