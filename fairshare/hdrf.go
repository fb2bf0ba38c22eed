package fairshare

import (
	"fmt"
	"math"
)

// Node is a tenant tree for hierarchical DRF: inner nodes are groups (an
// organisation, a team), leaves are users with a stream of identical tasks.
type Node struct {
	// Name identifies the node among its siblings; ties between siblings go
	// to the earlier child.
	Name string
	// Weight is the node's weight among its siblings; 0 means 1.
	Weight float64
	// Children are the sub-groups or users; none for a leaf.
	Children []Node
	// Task is a leaf's demand of one task per dimension.
	Task []int64
	// MaxTasks bounds a leaf's tasks; 0 means no bound beyond capacity.
	MaxTasks int
}

// LeafAllocation is what HDRF gives one leaf.
type LeafAllocation struct {
	// Path is the names from the root's child down to the leaf, joined by
	// "/".
	Path  string
	Tasks int // tasks given to the leaf
}

// HDRF allocates whole tasks over a tenant tree by hierarchical progressive
// filling: for each task, start at the root and descend, at each inner node
// to the child whose subtree holds the smallest weighted dominant share of
// the cluster (ties to the earlier child), skipping subtrees none of whose
// leaves can take another task; give the leaf one task. A leaf whose next
// task does not fit or that reached MaxTasks is done, and a subtree is done
// when all its leaves are.
//
// This is the hierarchical DRF of Bhattacharya et al. (SoCC'13) in its
// direct form: shares of a subtree are the sum of its leaves' allocations
// over cluster capacity, compared among siblings only. Skipping done
// subtrees (rather than letting them hold their share) keeps the result
// Pareto-efficient. Leaves are returned in depth-first order.
//
// Cost O(T × depth × fan-out) for T tasks.
func HDRF(capacity []int64, root Node) ([]LeafAllocation, error) {
	t := &hTree{capacity: capacity}
	if _, err := t.add(&root, -1, "", "root"); err != nil {
		return nil, err
	}
	used := make([]int64, len(capacity))
	for !t.nodes[0].done {
		// Descend.
		n := 0
		for len(t.nodes[n].children) > 0 {
			best := -1
			for _, c := range t.nodes[n].children {
				if t.nodes[c].done {
					continue
				}
				if best < 0 || t.nodes[c].share < t.nodes[best].share {
					best = c
				}
			}
			n = best
		}
		leaf := &t.nodes[n]
		if (leaf.maxTasks > 0 && leaf.tasks >= leaf.maxTasks) || !fits(used, leaf.task, capacity) {
			t.markDone(n)
			continue
		}
		leaf.tasks++
		for r, d := range leaf.task {
			used[r] += d
		}
		for m := n; m >= 0; m = t.nodes[m].parent {
			for r, d := range leaf.task {
				t.nodes[m].held[r] += d
			}
			t.nodes[m].share = WeightedDominantShare(t.nodes[m].held, capacity, t.nodes[m].weight)
		}
	}
	var out []LeafAllocation
	for i := range t.nodes {
		if len(t.nodes[i].children) == 0 && i != 0 {
			out = append(out, LeafAllocation{Path: t.nodes[i].path, Tasks: t.nodes[i].tasks})
		}
	}
	return out, nil
}

type hNode struct {
	parent   int
	children []int
	path     string
	weight   float64
	task     []int64
	maxTasks int
	tasks    int
	held     []int64
	share    float64
	done     bool
}

type hTree struct {
	capacity []int64
	nodes    []hNode
}

func (t *hTree) add(n *Node, parent int, path, field string) (int, error) {
	if n.Weight < 0 || math.IsNaN(n.Weight) || math.IsInf(n.Weight, 0) {
		return 0, bad(field+".weight", "weight %v; want a finite value ≥ 0", n.Weight)
	}
	id := len(t.nodes)
	t.nodes = append(t.nodes, hNode{parent: parent, path: path, weight: weightOr1(n.Weight), held: make([]int64, len(t.capacity))})
	if len(n.Children) == 0 {
		if parent < 0 {
			t.nodes[id].done = true // an empty tree
			return id, nil
		}
		u := User{Name: n.Name, Task: n.Task, MaxTasks: n.MaxTasks}
		if err := checkUsers(t.capacity, []User{u}); err != nil {
			ie := err.(*InputError)
			return 0, bad(field+ie.Field[len("users[0]"):], "%s", ie.Msg)
		}
		t.nodes[id].task, t.nodes[id].maxTasks = n.Task, n.MaxTasks
		return id, nil
	}
	for i := range n.Children {
		c := &n.Children[i]
		p := c.Name
		if path != "" {
			p = path + "/" + c.Name
		}
		cid, err := t.add(c, id, p, fmt.Sprintf("%s.children[%d]", field, i))
		if err != nil {
			return 0, err
		}
		t.nodes[id].children = append(t.nodes[id].children, cid)
	}
	return id, nil
}

// markDone marks n done and every ancestor whose children are all done.
func (t *hTree) markDone(n int) {
	for n >= 0 {
		t.nodes[n].done = true
		p := t.nodes[n].parent
		if p < 0 {
			return
		}
		for _, c := range t.nodes[p].children {
			if !t.nodes[c].done {
				return
			}
		}
		n = p
	}
}
