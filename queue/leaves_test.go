package queue

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestLeavesUnder checks each node's run of leaves (Block.Borrowed sums
// over it) against a walk up from every leaf.
func TestLeavesUnder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr, err := Build(genTree(rt, "t"), capacity64)
		if err != nil {
			rt.Skip(err)
		}
		for id := range tr.nodes {
			var want []NodeID
			for _, l := range tr.leaves {
				for a := l; a >= 0; a = tr.nodes[a].parent {
					if a == NodeID(id) {
						want = append(want, l)
						break
					}
				}
			}
			if got := tr.leavesUnder(NodeID(id)); !slices.Equal(got, want) {
				rt.Fatalf("node %s: leaves %v, want %v", tr.nodes[id].name, got, want)
			}
		}
	})
}
