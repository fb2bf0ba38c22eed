package queue

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// TreeReader is what can be read of a Tree, and nothing that changes it:
// the shape of the tree, quotas, usage, fair-share keys, the quota view
// and the pending jobs of each leaf. Every slice it returns is the
// caller's own copy.
//
// An owner that must not let callers change its tree (the root
// Scheduler) hands out Tree.ReadOnly. The reader is not safe for
// concurrent use with the tree's owner.
//
// Methods that take a NodeID answer with zero values (nil, "", −1 for
// Parent) for an ID that is not a node of the tree, rather than panic.
type TreeReader interface {
	// Dimensions returns the dimensions of the tree's vectors.
	Dimensions() fairshare.Dimensions
	// Capacity returns the cluster capacity vector of the tree.
	Capacity() Vector
	// Governed reports whether dimension r is limited by some quota.
	Governed(r int) bool
	// GovernsAny reports whether some quota limits some dimension.
	GovernsAny() bool
	// Epoch returns a counter that grows with every usage change.
	Epoch() uint64
	// Fairness returns the fairness settings with defaults filled.
	Fairness() Fairness
	// Lookup returns the node with the given name.
	Lookup(name string) (NodeID, bool)
	// NumNodes returns the number of nodes; IDs are 0 (the root) to
	// NumNodes()−1, depth first.
	NumNodes() int
	// Name, Path, Parent and Children describe node id.
	Name(id NodeID) string
	Path(id NodeID) string
	Parent(id NodeID) NodeID
	Children(id NodeID) []NodeID
	// Leaves returns the leaf queues in depth-first order.
	Leaves() []NodeID
	// Leaf returns the leaf queue with the given name.
	Leaf(name string) (LeafReader, bool)
	// LeafOf returns leaf id; false for an inner node.
	LeafOf(id NodeID) (LeafReader, bool)
	// PriorityClassName returns the name of a priority value, if
	// configured.
	PriorityClassName(p int32) (string, bool)
	// Key and TieKey are node id's fair-share standing among its siblings
	// (lower is served first); see Tree.Key.
	Key(id NodeID) float64
	TieKey(id NodeID) float64
	// Usage returns the used (running) and reserved (admitted) vectors of
	// node id.
	Usage(id NodeID) (used, reserved Vector)
	// Nominal returns the nominal quota vector of node id.
	Nominal(id NodeID) Vector
	// FairTreeUsage returns node id's decayed usage under FairTree.
	FairTreeUsage(id NodeID) fairshare.Usage
	// Over returns the first node that breaks a quota, or −1 (see
	// Tree.Over).
	Over() (NodeID, *Block)
	// View returns the quota view of every node, root first.
	View() []View
}

// LeafReader is what can be read of one leaf queue: its policy and its
// pending jobs in queue order, as copies.
type LeafReader interface {
	// ID returns the leaf's node and Name its name.
	ID() NodeID
	Name() string
	// Policy returns the leaf's ordering policy (defaults filled).
	Policy() Policy
	// Len returns the number of pending jobs.
	Len() int
	// Head returns the first pending job in queue order.
	Head() (PendingJob, bool)
	// Ascend calls fn for the pending jobs in queue order until it
	// returns false.
	Ascend(fn func(PendingJob) bool)
}

// PendingJob is a pending job of a leaf as a reader sees it: a copy of its
// Entry's fields, without the owner's handle.
type PendingJob struct {
	ID        string        // the job's ID
	Priority  int32         // its priority
	Submitted time.Time     // when it entered the queue
	Seq       uint64        // breaks ties between equal submission times
	Class     string        // its class key (jobs of one shape)
	Runtime   time.Duration // its runtime estimate; 0: unknown
	Demand    Vector        // what it adds to its queue's usage if admitted
}

// ReadOnly returns a view of t that can read everything and change
// nothing; it always shows t's current state. O(1).
func (t *Tree) ReadOnly() TreeReader { return treeReader{t} }

// treeReader forwards to the tree, copying what the tree shares.
type treeReader struct{ t *Tree }

func (r treeReader) node(id NodeID) *node {
	if id < 0 || int(id) >= len(r.t.nodes) {
		return nil
	}
	return &r.t.nodes[id]
}

func (r treeReader) Dimensions() fairshare.Dimensions {
	return fairshare.Dimensions{Models: slices.Clone(r.t.dims.Models)}
}
func (r treeReader) Capacity() Vector                  { return slices.Clone(r.t.capacity) }
func (r treeReader) GovernsAny() bool                  { return r.t.GovernsAny() }
func (r treeReader) Epoch() uint64                     { return r.t.epoch }
func (r treeReader) Fairness() Fairness                { return r.t.fair }
func (r treeReader) Lookup(name string) (NodeID, bool) { return r.t.Lookup(name) }
func (r treeReader) NumNodes() int                     { return len(r.t.nodes) }
func (r treeReader) Leaves() []NodeID                  { return slices.Clone(r.t.leaves) }
func (r treeReader) View() []View                      { return r.t.View() }
func (r treeReader) Over() (NodeID, *Block)            { return r.t.Over() }

func (r treeReader) PriorityClassName(p int32) (string, bool) { return r.t.PriorityClassName(p) }

func (r treeReader) Governed(d int) bool {
	return d >= 0 && d < len(r.t.governed) && r.t.governed[d]
}

func (r treeReader) Name(id NodeID) string {
	if nd := r.node(id); nd != nil {
		return nd.name
	}
	return ""
}

func (r treeReader) Path(id NodeID) string {
	if nd := r.node(id); nd != nil {
		return nd.path
	}
	return ""
}

func (r treeReader) Parent(id NodeID) NodeID {
	if nd := r.node(id); nd != nil {
		return nd.parent
	}
	return -1
}

func (r treeReader) Children(id NodeID) []NodeID {
	if nd := r.node(id); nd != nil {
		return slices.Clone(nd.children)
	}
	return nil
}

func (r treeReader) Leaf(name string) (LeafReader, bool) {
	l, ok := r.t.Leaf(name)
	if !ok {
		return nil, false
	}
	return leafReader{l}, true
}

func (r treeReader) LeafOf(id NodeID) (LeafReader, bool) {
	if nd := r.node(id); nd != nil && nd.leaf != nil {
		return leafReader{nd.leaf}, true
	}
	return nil, false
}

func (r treeReader) Key(id NodeID) float64 {
	if r.node(id) == nil {
		return 0
	}
	return r.t.Key(id)
}

func (r treeReader) TieKey(id NodeID) float64 {
	if r.node(id) == nil {
		return 0
	}
	return r.t.TieKey(id)
}

func (r treeReader) Usage(id NodeID) (used, reserved Vector) {
	if nd := r.node(id); nd != nil {
		return slices.Clone(nd.used), slices.Clone(nd.reserved)
	}
	return nil, nil
}

func (r treeReader) Nominal(id NodeID) Vector {
	if nd := r.node(id); nd != nil {
		return slices.Clone(nd.nominal)
	}
	return nil
}

func (r treeReader) FairTreeUsage(id NodeID) fairshare.Usage {
	if nd := r.node(id); nd != nil {
		return nd.usage
	}
	return fairshare.Usage{}
}

// leafReader forwards to the leaf, copying its entries.
type leafReader struct{ l *Leaf }

func (r leafReader) ID() NodeID     { return r.l.id }
func (r leafReader) Name() string   { return r.l.Name() }
func (r leafReader) Policy() Policy { return r.l.policy }
func (r leafReader) Len() int       { return r.l.all.Len() }

func (r leafReader) Head() (PendingJob, bool) {
	e, ok := r.l.all.Min()
	if !ok {
		return PendingJob{}, false
	}
	return pendingJob(e), true
}

func (r leafReader) Ascend(fn func(PendingJob) bool) {
	r.l.all.Ascend(func(e *Entry) bool { return fn(pendingJob(e)) })
}

func pendingJob(e *Entry) PendingJob {
	return PendingJob{ID: e.ID, Priority: e.Priority, Submitted: e.Submitted, Seq: e.Seq, Class: e.Class,
		Runtime: e.Runtime, Demand: slices.Clone(e.Demand)}
}
