package queue

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestAscendRuntimeMatchesModel drives a backfilling leaf with adds,
// removes and priority changes, and checks every class's AscendRuntime
// against a naive model: the class's queued entries with a known runtime
// of at most max, by (Runtime, leaf order), cut where fn stops.
func TestAscendRuntimeMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ord := rapid.SampledFrom([]Ordering{BestEffortFIFO, StrictFIFO, PriorityAging, ShortestFirst}).Draw(rt, "ordering")
		cfg := Config{Root: Node{Children: []Node{{Name: "q", Policy: Policy{Ordering: ord, AgingInterval: time.Minute, Backfill: true}}}}}
		tr, err := Build(cfg, capacity64)
		if err != nil {
			rt.Fatal(err)
		}
		l, _ := tr.Leaf("q")
		t0 := time.Unix(1000, 0)
		var all []*Entry
		for step := range rapid.IntRange(1, 120).Draw(rt, "steps") {
			switch act := rapid.IntRange(0, 9).Draw(rt, "action"); {
			case act < 5 || len(all) == 0:
				e := &Entry{ID: fmt.Sprint("j", step), Seq: uint64(step + 1), Demand: gpus(1),
					Priority:  int32(rapid.IntRange(0, 2).Draw(rt, "prio")),
					Submitted: t0.Add(time.Duration(rapid.IntRange(0, 5).Draw(rt, "sub")) * time.Second),
					Runtime:   time.Duration(rapid.IntRange(-1, 4).Draw(rt, "rt")) * time.Minute,
					Class:     rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "class")}
				all = append(all, e)
				l.Add(e)
			case act < 8:
				e := all[rapid.IntRange(0, len(all)-1).Draw(rt, "remove")]
				l.Remove(e)
			default:
				e := all[rapid.IntRange(0, len(all)-1).Draw(rt, "reprioritise")]
				l.SetPriority(e, int32(rapid.IntRange(0, 2).Draw(rt, "newprio")))
			}
			max := time.Duration(rapid.IntRange(0, 5).Draw(rt, "max")) * time.Minute
			limit := rapid.IntRange(1, 10).Draw(rt, "limit")
			for _, c := range l.list {
				var want []*Entry
				for _, e := range all {
					if e.class == c && e.Runtime > 0 && e.Runtime <= max {
						want = append(want, e)
					}
				}
				slices.SortFunc(want, func(a, b *Entry) int {
					switch {
					case a.Runtime != b.Runtime:
						return cmp.Compare(a.Runtime, b.Runtime)
					case l.less(a, b):
						return -1
					case l.less(b, a):
						return 1
					}
					return 0
				})
				if len(want) > limit {
					want = want[:limit]
				}
				var got []*Entry
				c.AscendRuntime(max, func(e *Entry) bool {
					got = append(got, e)
					return len(got) < limit
				})
				if !slices.Equal(got, want) {
					rt.Fatalf("step %d, class %s, max %v: AscendRuntime gives %v, the model %v", step, c.Key, max, ids(got), ids(want))
				}
			}
		}
	})
}

func ids(es []*Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}
