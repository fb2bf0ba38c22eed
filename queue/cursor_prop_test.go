package queue

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestCursorMatchesModel walks a leaf's cursor with random decisions
// (admit, pass over, drop the class, stop) and checks every candidate
// against a naive model: per class, the smallest queued entry after the
// last one visited in it; the candidate is the smallest of those over the
// classes still in the cycle. It covers Advance's shortcut (the class's
// first entry, when the candidate was admitted) against its search.
func TestCursorMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ord := rapid.SampledFrom([]Ordering{BestEffortFIFO, StrictFIFO, PriorityAging, ShortestFirst}).Draw(rt, "ordering")
		cfg := Config{Root: Node{Children: []Node{{Name: "q", Policy: Policy{Ordering: ord, AgingInterval: time.Minute, Backfill: rapid.Bool().Draw(rt, "backfill")}}}}}
		tr, err := Build(cfg, capacity64)
		if err != nil {
			rt.Fatal(err)
		}
		l, _ := tr.Leaf("q")
		t0 := time.Unix(1000, 0)
		n := rapid.IntRange(0, 40).Draw(rt, "n")
		var all []*Entry
		for i := 0; i < n; i++ {
			e := &Entry{ID: fmt.Sprint("j", i), Seq: uint64(i + 1), Demand: gpus(1),
				Priority:  int32(rapid.IntRange(0, 2).Draw(rt, "prio")),
				Submitted: t0.Add(time.Duration(rapid.IntRange(0, 5).Draw(rt, "sub")) * time.Second),
				Runtime:   time.Duration(rapid.IntRange(0, 3).Draw(rt, "rt")) * time.Minute,
				Class:     rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "class")}
			all = append(all, e)
			l.Add(e)
		}
		for cycle := 0; cycle < 3; cycle++ {
			queued := map[*Entry]bool{}
			for _, e := range all {
				if e.leaf == l {
					queued[e] = true
				}
			}
			after := map[string]*Entry{} // per class: the last visited
			dropped := map[string]bool{}
			stopped := false
			model := func() *Entry {
				var best *Entry
				for _, e := range all {
					if !queued[e] || dropped[e.Class] || stopped {
						continue
					}
					if a := after[e.Class]; a != nil && !l.less(a, e) {
						continue
					}
					if best == nil || l.less(e, best) {
						best = e
					}
				}
				return best
			}
			c := l.Begin()
			for steps := 0; ; steps++ {
				e, ok := c.Peek()
				want := model()
				if (want == nil) != !ok || (ok && e != want) {
					rt.Fatalf("cycle %d step %d: cursor has %s, the model %s", cycle, steps, idOf(e), idOf(want))
				}
				if !ok {
					break
				}
				switch rapid.IntRange(0, 9).Draw(rt, "action") {
				case 0, 1, 2, 3, 4: // admitted
					l.Remove(e)
					delete(queued, e)
					after[e.Class] = e
					c.Advance()
				case 5, 6, 7: // passed over
					after[e.Class] = e
					c.Advance()
				case 8:
					dropped[e.Class] = true
					c.DropClass()
				default:
					stopped = true
					c.Stop()
				}
			}
			c.End()
			if got := l.Len(); got != len(queued) {
				rt.Fatalf("cycle %d: %d queued, the model %d", cycle, got, len(queued))
			}
			all = slices.DeleteFunc(all, func(e *Entry) bool { return !queued[e] })
		}
	})
}

func idOf(e *Entry) string {
	if e == nil {
		return "nothing"
	}
	return e.ID
}
