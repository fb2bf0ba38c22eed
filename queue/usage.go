package queue

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// BlockKind says which limit stops an admission.
type BlockKind uint8

// Block kinds.
const (
	// BlockMax: the node's usage would exceed its hard maximum.
	BlockMax BlockKind = iota + 1
	// BlockBorrowing: the node would borrow beyond its borrowing limit
	// (this includes capacity its own children may not lend).
	BlockBorrowing
	// BlockCluster: the whole tree would exceed the root's quota (the
	// cluster's capacity unless configured lower; Block.Capacity says
	// which).
	BlockCluster
)

// String returns "max", "borrowing limit" or "cluster quota".
func (k BlockKind) String() string {
	switch k {
	case BlockMax:
		return "max"
	case BlockBorrowing:
		return "borrowing limit"
	case BlockCluster:
		return "cluster quota"
	}
	return "BlockKind(" + fmt.Sprint(uint8(k)) + ")"
}

// Block says why an admission would exceed a quota: at which node, in
// which resource, and by how much. Amounts are in internal units
// (milli-GPU, milli-CPU, MiB); String renders them in quota units.
type Block struct {
	Queue    string    // the node whose limit binds
	Resource string    // "gpu", "gpu/MODEL", "cpu" or "memory"
	Kind     BlockKind // which limit
	// Usage is the node's current (effective) usage, Demand what the job
	// adds, Limit what the node may reach.
	Usage, Demand, Limit int64
	// Borrowed is what the leaf queues below the node, other than the
	// job's own, use beyond their nominal quota in this resource: capacity
	// lent away that is not free for this job (for BlockBorrowing and
	// BlockCluster). Reclaiming it needs those jobs to end or preemption.
	Borrowed int64
	// Capacity is set for BlockCluster when the root's quota is the
	// cluster's capacity (none configured): the job waits for capacity.
	Capacity bool
	dim      int
	tree     *Tree
}

// String renders the block, e.g. "queue research: gpu: 56 GPUs in use + 16
// > borrowing limit 64 GPUs".
func (b *Block) String() string {
	f := b.tree.format
	kind := b.Kind.String()
	if b.Capacity {
		kind = "cluster capacity"
	}
	s := fmt.Sprintf("queue %s: %s: %s in use + %s > %s %s", b.Queue, b.Resource, f(b.dim, b.Usage), f(b.dim, b.Demand), kind, f(b.dim, b.Limit))
	if b.Borrowed > 0 {
		s += fmt.Sprintf(" (other queues borrow %s)", f(b.dim, b.Borrowed))
	}
	return s
}

// Check reports whether adding v to leaf's usage keeps every quota on the
// path to the root: for each node n, usage ≤ max(n); effective usage ≤
// nominal(n) + borrowingLimit(n); and at the root effective usage ≤ the
// root's quota. Effective usage counts the unused part of a child's
// nominal quota that it may not lend as used. Only governed dimensions
// where v is positive are checked. It returns nil when v is admissible.
// O(depth × dimensions); allocates only the Block it returns.
func (t *Tree) Check(leaf NodeID, v Vector) *Block {
	var delta [16]int64
	var d []int64
	if len(v) <= len(delta) {
		d = delta[:len(v)]
	} else {
		d = make([]int64, len(v))
	}
	copy(d, v)
	for id := leaf; id >= 0; id = t.nodes[id].parent {
		nd := &t.nodes[id]
		for r, x := range v {
			if x <= 0 || !t.governed[r] {
				continue
			}
			// Real usage grows by v at every level, whatever protected
			// capacity absorbs.
			b, up := t.checkStep(id, r, nd.used[r]+nd.reserved[r], x, nd.eff[r], d[r], leaf)
			if b != nil {
				return b
			}
			d[r] = up
		}
	}
	return nil
}

// checkStep checks dimension r of node id on the path of a Check: the
// real usage u, growing by x, against the node's max; the effective usage
// e, growing by dx, against the root's quota or the node's nominal quota
// plus its borrowing limit. It returns the Block, or nil and what the
// parent's effective usage grows by (dx when dx ≤ 0: nothing to check).
func (t *Tree) checkStep(id NodeID, r int, u, x, e, dx int64, leaf NodeID) (*Block, int64) {
	nd := &t.nodes[id]
	if nd.max[r] >= 0 && u+x > nd.max[r] {
		return t.block(id, r, BlockMax, u, x, nd.max[r], leaf), 0
	}
	if dx <= 0 {
		return nil, dx
	}
	if id == 0 {
		if e+dx > nd.nominal[r] {
			return t.block(id, r, BlockCluster, e, dx, nd.nominal[r], leaf), 0
		}
	} else if nd.borrow[r] >= 0 && e+dx-nd.nominal[r] > nd.borrow[r] {
		return t.block(id, r, BlockBorrowing, e, dx, nd.nominal[r]+nd.borrow[r], leaf), 0
	}
	// What the parent sees change.
	return nil, max(e+dx, nd.protected[r]) - max(e, nd.protected[r])
}

func (t *Tree) block(id NodeID, r int, k BlockKind, u, d, lim int64, leaf NodeID) *Block {
	b := &Block{Queue: t.nodes[id].name, Resource: t.dims.Name(r), Kind: k, Usage: u, Demand: d, Limit: lim, dim: r, tree: t}
	b.Capacity = k == BlockCluster && t.rootDefault[r]
	if k != BlockMax {
		// What leaves below the node other than the requester borrow.
		for _, l := range t.leavesUnder(id) {
			if l == leaf {
				continue
			}
			ln := &t.nodes[l]
			b.Borrowed += max(0, ln.used[r]+ln.reserved[r]-ln.nominal[r])
		}
	}
	return b
}

// leavesUnder returns the leaves of node id's subtree (a run of
// t.leaves, shared). O(log leaves).
func (t *Tree) leavesUnder(id NodeID) []NodeID {
	lo, _ := slices.BinarySearch(t.leaves, id)
	hi, _ := slices.BinarySearch(t.leaves, t.nodes[id].end)
	return t.leaves[lo:hi]
}

// Borrows reports whether adding v to leaf would take the leaf beyond its
// own nominal quota in some governed dimension, that is whether the
// admission needs borrowing. A queue whose next job does not borrow is
// served before queues whose next job does.
func (t *Tree) Borrows(leaf NodeID, v Vector) bool {
	nd := &t.nodes[leaf]
	for r, x := range v {
		if x > 0 && t.governed[r] && nd.eff[r]+x > nd.nominal[r] {
			return true
		}
	}
	return false
}

// Admit charges v to leaf as reserved (admitted, not yet running) at time
// now. It does not check quotas; call Check first.
func (t *Tree) Admit(leaf NodeID, v Vector, now time.Time) {
	t.charge(leaf, v, 1, 0, now)
}

// Start moves v of leaf from reserved to used (the job started running).
func (t *Tree) Start(leaf NodeID, v Vector, now time.Time) {
	t.charge(leaf, v, -1, 1, now)
}

// Release removes v from leaf's usage: from used if running, else from
// reserved.
func (t *Tree) Release(leaf NodeID, v Vector, running bool, now time.Time) {
	if running {
		t.charge(leaf, v, 0, -1, now)
	} else {
		t.charge(leaf, v, -1, 0, now)
	}
}

func (t *Tree) charge(leaf NodeID, v Vector, dRes, dUsed int64, now time.Time) {
	t.epoch++
	t.invalidate(leaf)
	var delta [16]int64
	var d []int64
	if len(v) <= len(delta) {
		d = delta[:len(v)]
	} else {
		d = make([]int64, len(v))
	}
	for r := range d {
		d[r] = v[r] * (dRes + dUsed)
	}
	for id := leaf; id >= 0; id = t.nodes[id].parent {
		nd := &t.nodes[id]
		t.advance(id, now)
		for r := range v {
			nd.reserved[r] += v[r] * dRes
			nd.used[r] += v[r] * dUsed
			old := nd.eff[r]
			nd.eff[r] += d[r]
			d[r] = max(nd.eff[r], nd.protected[r]) - max(old, nd.protected[r])
		}
		t.refreshShare(id)
	}
}

// advance brings the decayed usage of node id up to now at its current
// rate.
func (t *Tree) advance(id NodeID, now time.Time) {
	nd := &t.nodes[id]
	nd.usage = nd.usage.Advance(now, nd.rate, t.fair.HalfLife)
}

// Advance brings every node's decayed usage up to now and makes now the
// time at which FinishTime measures waiting. Call it at the start of a
// scheduling cycle under the FairTree and FinishTime policies.
func (t *Tree) Advance(now time.Time) {
	t.now = now
	for i := range t.nodes {
		t.advance(NodeID(i), now)
		t.nodes[i].bestValid = false
	}
}

func (t *Tree) refreshShare(id NodeID) {
	nd := &t.nodes[id]
	if t.scratch == nil {
		t.scratch = make(Vector, len(nd.used))
	}
	u := t.scratch
	for r := range u {
		u[r] = nd.used[r] + nd.reserved[r]
	}
	nd.rate, _ = fairshare.DominantShare(u, t.capacity)
	switch t.fair.Policy {
	case DRF, FairTree:
		nd.share = fairshare.WeightedDominantShare(u, t.capacity, nd.weight)
	case Borrowed:
		if nd.parent < 0 {
			nd.share = 0
			break
		}
		nd.share, _ = fairshare.BorrowedShare(u, nd.nominal, t.nodes[nd.parent].lendable, nd.weight)
	default:
		nd.share = 0
	}
}

// lendableOf is what the children of p may lend each other: p's nominal
// less what its children protect.
func (t *Tree) lendableOf(p NodeID) Vector {
	pn := &t.nodes[p]
	out := make(Vector, len(pn.nominal))
	for r := range out {
		out[r] = pn.nominal[r]
		for _, c := range pn.children {
			out[r] -= t.nodes[c].protected[r]
		}
	}
	return out
}

// Key is a node's fair-share standing among its siblings: lower is served
// first. Ties are broken by the caller (next job's order, then name).
func (t *Tree) Key(id NodeID) float64 {
	nd := &t.nodes[id]
	if t.fair.Policy == FairTree {
		// Level Fairshare S/U with S and U normalised among siblings
		// orders siblings like usage/weight (the normalising sums are
		// common to all siblings); lower is better. The current dominant
		// share breaks ties between queues with no history.
		if nd.weight <= 0 {
			return math.Inf(1)
		}
		return nd.usage.Value / nd.weight
	}
	return nd.share
}

// TieKey is the secondary key for FairTree (current weighted dominant
// share); 0 for other policies.
func (t *Tree) TieKey(id NodeID) float64 {
	if t.fair.Policy != FairTree {
		return 0
	}
	return t.nodes[id].share
}

// Usage returns the used (running) and reserved (admitted) vectors of
// node id. The slices are shared and must not be modified.
func (t *Tree) Usage(id NodeID) (used, reserved Vector) {
	return t.nodes[id].used, t.nodes[id].reserved
}

// Nominal returns the nominal quota vector of node id. Shared.
func (t *Tree) Nominal(id NodeID) Vector { return t.nodes[id].nominal }

// Over reports, for property tests and audits, whether some node breaks a
// quota: usage above max, effective usage above nominal + borrowing limit,
// or the root above its quota. It returns the first offending node, or −1.
func (t *Tree) Over() (NodeID, *Block) {
	for i := range t.nodes {
		nd := &t.nodes[i]
		for r := range nd.nominal {
			if !t.governed[r] {
				continue
			}
			u := nd.used[r] + nd.reserved[r]
			switch {
			case nd.max[r] >= 0 && u > nd.max[r]:
				return NodeID(i), t.block(NodeID(i), r, BlockMax, u, 0, nd.max[r], -1)
			case i == 0 && nd.eff[r] > nd.nominal[r]:
				return 0, t.block(0, r, BlockCluster, nd.eff[r], 0, nd.nominal[r], -1)
			case i > 0 && nd.borrow[r] >= 0 && nd.eff[r]-nd.nominal[r] > nd.borrow[r]:
				return NodeID(i), t.block(NodeID(i), r, BlockBorrowing, nd.eff[r], 0, nd.nominal[r]+nd.borrow[r], -1)
			}
		}
	}
	return -1, nil
}

// Ceiling returns, per dimension, the most a job in leaf could ever be
// admitted with if nothing else ran: the tightest of max and nominal +
// borrowing limit on the path to the root, less what siblings on the way
// protect (their nominal quota they may not lend), and the root's quota.
// A job whose demand exceeds it in a governed dimension can never be
// admitted. Ungoverned dimensions get −1 (no limit).
func (t *Tree) Ceiling(leaf NodeID) Vector {
	n := t.dims.Len()
	out := make(Vector, n)
	for r := range out {
		if !t.governed[r] {
			out[r] = -1
			continue
		}
		lim := int64(1) << 62
		var offset int64 // protected capacity of siblings below this level
		for id := leaf; id >= 0; id = t.nodes[id].parent {
			nd := &t.nodes[id]
			if nd.max[r] >= 0 {
				lim = min(lim, nd.max[r])
			}
			switch {
			case id == 0:
				lim = min(lim, nd.nominal[r]-offset)
			case nd.borrow[r] >= 0:
				lim = min(lim, nd.nominal[r]+nd.borrow[r]-offset)
			}
			if p := nd.parent; p >= 0 {
				for _, s := range t.nodes[p].children {
					if s != id {
						offset += t.nodes[s].protected[r]
					}
				}
			}
		}
		out[r] = max(lim, 0)
	}
	return out
}
