package queue

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// Move says where the jobs of a leaf queue go when a reconfiguration
// removes it, or turns it into an inner node.
type Move struct {
	// From is a leaf of the current tree that is no leaf in the new config.
	From string `json:"from" yaml:"from"`
	// To is a leaf of the new config, or "" to reject the queue's pending
	// jobs (Reconfigured.Rejected). A queue whose jobs are rejected may not
	// hold running or admitted jobs: those need a queue to be charged to.
	To string `json:"to,omitempty" yaml:"to,omitempty"`
}

// Reconfigured says what Reconfigure did with the jobs of the old tree.
type Reconfigured struct {
	// Leaf maps each NodeID of the old tree to the leaf of the new tree its
	// jobs are in now: the leaf of the same name, or its Move's target;
	// -1 for inner nodes and for leaves whose pending jobs were rejected
	// or that held no job.
	Leaf []NodeID
	// Moved are the pending entries now in a leaf of another name, in the
	// order of the old leaves and their queue order.
	Moved []*Entry
	// Rejected are the pending entries of removed leaves moved nowhere
	// (Move.To ""), no longer queued; the owner ends them with a reason.
	Rejected []*Entry

	leaves map[*Leaf]*Leaf
	nOld   int // leaves of the old tree
}

// NewLeaf returns the leaf of the new tree that took the jobs of old, a
// leaf of the old tree (nil when they were rejected or old was empty and
// removed). Owners that keep *Leaf handles map them through it: a leaf
// that kept its name and policy is the same *Leaf, now in the new tree.
func (rc *Reconfigured) NewLeaf(old *Leaf) *Leaf { return rc.leaves[old] }

// Kept reports whether every leaf of the old tree is a leaf of the new
// one, the same *Leaf (its name and policy stayed): then no owner's leaf
// handle needs mapping.
func (rc *Reconfigured) Kept() bool {
	for old, nl := range rc.leaves { // a yes/no over all: order does not matter
		if old != nl {
			return false
		}
	}
	return len(rc.Rejected) == 0 && len(rc.leaves) == rc.nOld
}

// Reconfigure builds the tree of cfg for the cluster capacity and moves
// into it everything t holds: the pending entries of every leaf (to the
// leaf of the same name, or where moves say), the usage of admitted and
// running jobs (charged to the same leaves), the leaves' job counts, and
// the decayed Fair Tree usage of every node whose name stays (brought up
// to now first). Quotas, weights, policies, fairness settings, priority
// classes and the capacity may all change; queues may be added and
// removed. The GPU models that have quotas may not change: the owner's
// demand vectors are laid out by them.
//
// It works on the new tree and touches t only once everything is checked:
// on error t is unchanged and still in use; on success t must not be used
// again (its entries are queued in the new tree) and the owner switches
// to the new tree and maps its jobs' leaves through Reconfigured.Leaf.
// Errors are *ConfigError naming the field of cfg or of moves ("moves[1].to").
// A leaf that goes away without a Move is an error unless it is empty.
// Cost: that of Build, plus O(leaves × depth × dimensions) for the usage,
// plus O(n log n) for the n pending entries that change leaf or whose leaf
// changes its ordering policy; a leaf that keeps its name and policy keeps
// its queue whole, and nothing is done per running job.
func (t *Tree) Reconfigure(cfg Config, capacity Capacity, moves []Move, now time.Time) (*Tree, *Reconfigured, error) {
	nt, err := Build(cfg, capacity)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(nt.dims.Models, t.dims.Models) {
		return nil, nil, cfgErr("root.quotas", "the GPU models with quotas change from [%s] to [%s]; the jobs' demands are laid out by them, so build a new tree and submit the jobs again",
			strings.Join(t.dims.Models, ", "), strings.Join(nt.dims.Models, ", "))
	}
	// Where each old leaf's jobs go.
	target := make([]NodeID, len(t.nodes))
	for i := range target {
		target[i] = -1
	}
	moved := make([]bool, len(t.nodes))
	for i, m := range moves {
		f := fmt.Sprintf("moves[%d]", i)
		from, ok := t.byName[m.From]
		if !ok || t.nodes[from].leaf == nil {
			return nil, nil, cfgErr(f+".from", "%q is no leaf queue of the current tree", m.From)
		}
		if id, ok := nt.byName[m.From]; ok && nt.nodes[id].leaf != nil {
			return nil, nil, cfgErr(f+".from", "queue %q stays a leaf; its jobs stay in it", m.From)
		}
		if moved[from] {
			return nil, nil, cfgErr(f+".from", "queue %q is moved twice", m.From)
		}
		moved[from] = true
		if m.To == "" {
			continue
		}
		to, ok := nt.byName[m.To]
		if !ok || nt.nodes[to].leaf == nil {
			return nil, nil, cfgErr(f+".to", "%q is no leaf queue of the new config", m.To)
		}
		target[from] = to
	}
	for _, id := range t.leaves {
		nd := &t.nodes[id]
		if nid, ok := nt.byName[nd.name]; ok && nt.nodes[nid].leaf != nil {
			target[id] = nid
			continue
		}
		holds := nd.leaf.admitted+nd.leaf.running > 0 || !zero(nd.used) || !zero(nd.reserved)
		switch {
		case target[id] >= 0:
		case !moved[id] && (holds || nd.leaf.Len() > 0):
			return nil, nil, cfgErr("root", "queue %q is removed with %d pending and %d admitted or running jobs; say where they go (a Move)",
				nd.name, nd.leaf.Len(), nd.leaf.admitted+nd.leaf.running)
		case moved[id] && holds:
			return nil, nil, cfgErr("root", "queue %q is removed with %d admitted or running jobs, which need a queue to be charged to (a Move with To)",
				nd.name, nd.leaf.admitted+nd.leaf.running)
		}
	}
	// Everything is checked: move what t holds.
	for i := range nt.nodes {
		nn := &nt.nodes[i]
		if id, ok := t.byName[nn.name]; ok {
			od := &t.nodes[id]
			nn.usage = od.usage.Advance(now, od.rate, t.fair.HalfLife)
		}
	}
	rc := &Reconfigured{Leaf: target, leaves: make(map[*Leaf]*Leaf, len(t.leaves)), nOld: len(t.leaves)}
	// A leaf that stays with the same ordering keeps its pending jobs as
	// they are: its Leaf moves into the new tree whole, in O(1).
	kept := make([]bool, len(t.nodes))
	for _, id := range t.leaves {
		ol, to := t.nodes[id].leaf, target[id]
		if to >= 0 && nt.nodes[to].name == t.nodes[id].name && nt.nodes[to].leaf.policy == ol.policy {
			ol.tree, ol.id = nt, to
			nt.nodes[to].leaf = ol
			kept[id] = true
		}
	}
	for _, id := range t.leaves {
		if to := target[id]; to >= 0 {
			rc.leaves[t.nodes[id].leaf] = nt.nodes[to].leaf // after kept leaves moved in
		}
	}
	for _, id := range t.leaves {
		nd := &t.nodes[id]
		to := target[id]
		if kept[id] {
			nt.charge(to, nd.used, 0, 1, now)
			nt.charge(to, nd.reserved, 1, 0, now)
			continue
		}
		var entries []*Entry
		nd.leaf.Ascend(func(e *Entry) bool { entries = append(entries, e); return true })
		for _, e := range entries {
			nd.leaf.Remove(e)
			if to < 0 {
				rc.Rejected = append(rc.Rejected, e)
				continue
			}
			nt.nodes[to].leaf.Add(e)
			if nt.nodes[to].name != nd.name {
				rc.Moved = append(rc.Moved, e)
			}
		}
		if to < 0 {
			continue
		}
		nt.nodes[to].leaf.Count(nd.leaf.admitted, nd.leaf.running)
		if !zero(nd.used) {
			nt.charge(to, nd.used, 0, 1, now)
		}
		if !zero(nd.reserved) {
			nt.charge(to, nd.reserved, 1, 0, now)
		}
	}
	nt.epoch = t.epoch + 1
	return nt, rc, nil
}

func zero(v Vector) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// History returns the decayed Fair Tree usage of node id as last brought
// up to date (Advance, or a usage change on its path).
func (t *Tree) History(id NodeID) fairshare.Usage { return t.nodes[id].usage }
