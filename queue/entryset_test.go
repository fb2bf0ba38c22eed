package queue

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/btree"
	"pgregory.net/rapid"
)

// TestEntrySetMatchesModel checks entrySet, a sorted run up to runMax
// entries and a B-tree beyond, against a sorted slice: random inserts,
// deletions of its first entry (the cycle's case), of any entry and of
// entries it does not hold, with Len, Min, Ascend and AscendGreaterOrEqual
// (pivots held or not) read after every step, on both sides of runMax.
func TestEntrySetMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ord := rapid.SampledFrom([]Ordering{BestEffortFIFO, PriorityAging, ShortestFirst}).Draw(rt, "ordering")
		l := &Leaf{policy: Policy{Ordering: ord, AgingInterval: time.Minute}}
		var free *btree.FreeListG[*Entry]
		if rapid.Bool().Draw(rt, "free list") {
			free = btree.NewFreeListG[*Entry](8)
		}
		s := newEntrySet(l.less, 8, free)
		t0 := time.Unix(1000, 0)
		var pool, model []*Entry
		newEntry := func() *Entry {
			e := &Entry{ID: fmt.Sprint("j", len(pool)), Seq: uint64(len(pool) + 1),
				Priority:  int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
				Submitted: t0.Add(time.Duration(rapid.IntRange(0, 20).Draw(rt, "sub")) * time.Second),
				Runtime:   time.Duration(rapid.IntRange(0, 4).Draw(rt, "rt")) * time.Minute}
			pool = append(pool, e)
			return e
		}
		cmp := func(a, b *Entry) int {
			if l.less(a, b) {
				return -1
			}
			if l.less(b, a) {
				return 1
			}
			return 0
		}
		check := func(step int) {
			if s.Len() != len(model) {
				rt.Fatalf("step %d: Len %d, the model %d", step, s.Len(), len(model))
			}
			m, ok := s.Min()
			if ok != (len(model) > 0) || ok && m != model[0] {
				rt.Fatalf("step %d: Min %s, the model %v", step, idOf(m), ids(model))
			}
			var got []*Entry
			s.Ascend(func(e *Entry) bool { got = append(got, e); return true })
			if !slices.Equal(got, model) {
				rt.Fatalf("step %d: Ascend %v, the model %v", step, ids(got), ids(model))
			}
			if len(pool) > 0 {
				pivot := rapid.SampledFrom(pool).Draw(rt, "pivot")
				limit := rapid.IntRange(1, 5).Draw(rt, "limit")
				var got, want []*Entry
				s.AscendGreaterOrEqual(pivot, func(e *Entry) bool { got = append(got, e); return len(got) < limit })
				for _, e := range model {
					if !l.less(e, pivot) && len(want) < limit {
						want = append(want, e)
					}
				}
				if !slices.Equal(got, want) {
					rt.Fatalf("step %d: from %s: %v, the model %v", step, pivot.ID, ids(got), ids(want))
				}
			}
		}
		for step := range rapid.IntRange(0, 400).Draw(rt, "steps") {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1, 2: // insert a new entry, or one deleted before
				var e *Entry
				for _, x := range pool {
					if !slices.Contains(model, x) && rapid.IntRange(0, 3).Draw(rt, "again") == 0 {
						e = x
						break
					}
				}
				if e == nil {
					e = newEntry()
				}
				s.Insert(e)
				i, _ := slices.BinarySearchFunc(model, e, cmp)
				model = slices.Insert(model, i, e)
			case 3: // delete the first
				if len(model) > 0 {
					s.Delete(model[0])
					model = model[1:]
				}
			default: // delete any entry, held or not
				if len(pool) > 0 {
					e := rapid.SampledFrom(pool).Draw(rt, "delete")
					s.Delete(e)
					if i := slices.Index(model, e); i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
				}
			}
			check(step)
		}
	})
}
