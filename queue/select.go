package queue

// pick is the best candidate below a node.
type pick struct {
	leaf *Leaf
	head *Entry
	tier int // 0: fits in the leaf's guarantee; 1: borrows
}

// Next returns the leaf to serve next in the current cycle and its
// candidate, among leaves whose cursor (Leaf.Begin) has one. Descending
// from the root, each node picks the child whose best candidate has, in
// order:
//
//  1. the lower tier: a job that fits in its leaf's nominal quota comes
//     before one that would borrow;
//  2. under FinishTime, the higher finish-time fairness ρ
//     (Tree.FinishTimeRho); otherwise the lower fair-share key (Tree.Key:
//     weighted dominant share, Fair Tree usage over weight, or borrowed
//     share, per the Fairness policy), then the lower TieKey;
//  3. the earlier job: higher priority, then (when both leaves order
//     ShortestFirst) the shorter runtime estimate, then earlier
//     submission, then lower Seq;
//  4. the lower node ID.
//
// Answers are memoised per node and recomputed only on the path of a leaf
// whose cursor or usage changed, so a pick costs O(depth × fan-out).
func (t *Tree) Next() (*Leaf, *Entry, bool) {
	p, ok := t.best(0)
	if !ok {
		return nil, nil, false
	}
	return p.leaf, p.head, true
}

func (t *Tree) invalidate(id NodeID) {
	for ; id >= 0; id = t.nodes[id].parent {
		t.nodes[id].bestValid = false
	}
}

func (t *Tree) best(id NodeID) (pick, bool) {
	nd := &t.nodes[id]
	if nd.bestValid {
		return nd.best, nd.best.leaf != nil
	}
	var best pick
	if nd.leaf != nil {
		if nd.leaf.cur.active {
			if e, ok := nd.leaf.cur.Peek(); ok {
				best = pick{leaf: nd.leaf, head: e}
				if t.Borrows(id, e.Demand) {
					best.tier = 1
				}
			}
		}
	} else {
		var bc NodeID = -1
		for _, c := range nd.children {
			p, ok := t.best(c)
			if !ok {
				continue
			}
			if bc < 0 || t.better(c, p, bc, best) {
				best, bc = p, c
			}
		}
	}
	nd.best, nd.bestValid = best, true
	return best, best.leaf != nil
}

// better reports whether child a with candidate pa beats child b with pb.
func (t *Tree) better(a NodeID, pa pick, b NodeID, pb pick) bool {
	if pa.tier != pb.tier {
		return pa.tier < pb.tier
	}
	if t.fair.Policy == FinishTime {
		if ra, rb := t.FinishTimeRho(a, pa.head), t.FinishTimeRho(b, pb.head); ra != rb {
			return ra > rb
		}
	}
	if ka, kb := t.Key(a), t.Key(b); ka != kb {
		return ka < kb
	}
	if ka, kb := t.TieKey(a), t.TieKey(b); ka != kb {
		return ka < kb
	}
	ea, eb := pa.head, pb.head
	if ea.Priority != eb.Priority {
		return ea.Priority > eb.Priority
	}
	if pa.leaf.policy.Ordering == ShortestFirst && pb.leaf.policy.Ordering == ShortestFirst {
		if c := runtimeCompare(ea.Runtime, eb.Runtime); c != 0 {
			return c < 0
		}
	}
	if !ea.Submitted.Equal(eb.Submitted) {
		return ea.Submitted.Before(eb.Submitted)
	}
	if ea.Seq != eb.Seq {
		return ea.Seq < eb.Seq
	}
	return a < b
}
