package queue

import "math/bits"

// View is the quota view of one queue, the three-tier view (guaranteed /
// borrowed / lent) a team lead's dashboard shows. Amounts are in quota
// units: GPUs, cores, GiB.
type View struct {
	Queue string // the queue's name
	// Path is the names from below the root down to the queue, "" for the
	// root.
	Path  string
	Depth int  // 0 for the root
	Leaf  bool // jobs are submitted to leaves
	// Pending, Admitted and Running count jobs in the queue's subtree.
	Pending, Admitted, Running int
	// Share is the queue's fair-share key among its siblings (lower is
	// served first).
	Share     float64
	Resources []ResourceView // one per dimension of the tree
}

// ResourceView is one resource of a queue's quota view.
type ResourceView struct {
	Resource string // "gpu", "gpu/MODEL", "cpu" or "memory"
	// Governed is false for a resource no quota limits; only Used and
	// Reserved are meaningful then.
	Governed bool
	Nominal  float64 // the guarantee
	// Used is held by running jobs, Reserved by admitted jobs that have not
	// started yet.
	Used, Reserved float64
	// Free is the unused part of the guarantee: max(0, nominal − used −
	// reserved).
	Free float64
	// Borrowed is usage beyond the nominal quota: max(0, used + reserved −
	// nominal).
	Borrowed float64
	// Lent is the part of the queue's unused guarantee that siblings are
	// borrowing now (what its parent's pool cannot cover is split among
	// lenders in proportion to what each may lend).
	Lent float64
	// Limits; nil means none.
	BorrowingLimit, LendingLimit, Max *float64
}

// View returns the quota view of every node, root first, depth first.
// O(nodes × dimensions).
func (t *Tree) View() []View {
	out := make([]View, len(t.nodes))
	lent := t.lent()
	for i := range t.nodes {
		nd := &t.nodes[i]
		v := View{Queue: nd.name, Path: nd.path, Depth: nd.depth, Leaf: nd.leaf != nil, Share: t.Key(NodeID(i))}
		for r := range nd.nominal {
			u := float64(unit(r))
			rv := ResourceView{Resource: t.dims.Name(r), Governed: t.governed[r],
				Used: float64(nd.used[r]) / u, Reserved: float64(nd.reserved[r]) / u}
			if t.governed[r] {
				total := nd.used[r] + nd.reserved[r]
				rv.Nominal = float64(nd.nominal[r]) / u
				rv.Free = float64(max(0, nd.nominal[r]-total)) / u
				rv.Borrowed = float64(max(0, total-nd.nominal[r])) / u
				rv.Lent = float64(lent[i][r]) / u
				rv.BorrowingLimit = limitView(nd.borrow[r], u)
				rv.LendingLimit = limitView(nd.lend[r], u)
				rv.Max = limitView(nd.max[r], u)
			}
			v.Resources = append(v.Resources, rv)
		}
		out[i] = v
	}
	for _, id := range t.leaves {
		l := t.nodes[id].leaf
		for p := id; p >= 0; p = t.nodes[p].parent {
			out[p].Pending += l.Len()
			out[p].Admitted += l.admitted
			out[p].Running += l.running
		}
	}
	return out
}

func limitView(v int64, u float64) *float64 {
	if v < 0 {
		return nil
	}
	f := float64(v) / u
	return &f
}

// lent computes, per node and dimension, how much of its unused nominal
// its siblings are borrowing now. At each parent, the children's total
// borrowing is covered first by the parent's unassigned pool (nominal not
// given to any child), then by the children's lendable unused nominal,
// split in proportion (remainders to the earlier child); anything beyond
// comes from the parent's own borrowing.
func (t *Tree) lent() []Vector {
	out := make([]Vector, len(t.nodes))
	for i := range out {
		out[i] = make(Vector, t.dims.Len())
	}
	for p := range t.nodes {
		pn := &t.nodes[p]
		if len(pn.children) == 0 {
			continue
		}
		for r := range pn.nominal {
			if !t.governed[r] {
				continue
			}
			var borrowed, assigned, lendable int64
			for _, c := range pn.children {
				cn := &t.nodes[c]
				u := cn.used[r] + cn.reserved[r]
				borrowed += max(0, u-cn.nominal[r])
				assigned += cn.nominal[r]
				lendable += lendableUnused(cn, r)
			}
			need := min(max(0, borrowed-(pn.nominal[r]-assigned)), lendable)
			if need == 0 {
				continue
			}
			var given int64
			for _, c := range pn.children {
				l := lendableUnused(&t.nodes[c], r)
				hi, lo := bits.Mul64(uint64(need), uint64(l))
				q, _ := bits.Div64(hi, lo, uint64(lendable))
				share := int64(q)
				out[c][r] = share
				given += share
			}
			for _, c := range pn.children {
				if given == need {
					break
				}
				if out[c][r] < lendableUnused(&t.nodes[c], r) {
					out[c][r]++
					given++
				}
			}
		}
	}
	return out
}

func lendableUnused(n *node, r int) int64 {
	unused := max(0, n.nominal[r]-n.used[r]-n.reserved[r])
	if n.lend[r] >= 0 {
		unused = min(unused, n.lend[r])
	}
	return unused
}
