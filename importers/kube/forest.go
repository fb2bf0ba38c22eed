package kube

import (
	"fmt"
	"sort"

	"github.com/gpusched/gpusched/queue"
)

// namedQueue is a queue of a system whose queues name their parent
// (Volcano, KAI-Scheduler).
type namedQueue struct {
	o           *object
	name        string
	parent      string // "" or top: a top-level queue
	parentField string // e.g. "spec.parent", for errors
}

// queueForest checks names (unique), parents (given, no cycles) and
// returns the top-level queues as queue.Nodes, children sorted by name;
// node builds one queue's node without its children.
func queueForest(qs []namedQueue, top string, node func(i int) (queue.Node, error)) ([]queue.Node, error) {
	byName := map[string]int{}
	for i, q := range qs {
		if _, dup := byName[q.name]; dup {
			return nil, q.o.errAt(q.o.fieldNode("metadata.name"), "metadata.name", fmt.Errorf("a queue named %q is defined twice", q.name))
		}
		byName[q.name] = i
	}
	parentOf := func(q namedQueue) string {
		if q.parent == "" {
			return top
		}
		return q.parent
	}
	children := map[string][]int{}
	for i, q := range qs {
		p := parentOf(q)
		if _, ok := byName[p]; !ok && p != top {
			return nil, q.o.errAt(q.o.fieldNode(q.parentField), q.parentField, fmt.Errorf("parent queue %q not given", p))
		}
		children[p] = append(children[p], i)
	}
	for _, q := range qs {
		seen := map[string]bool{}
		for p := q; parentOf(p) != top; p = qs[byName[p.parent]] {
			if seen[p.name] {
				return nil, q.o.errAt(q.o.fieldNode(q.parentField), q.parentField, fmt.Errorf("queue %q is its own ancestor", q.name))
			}
			seen[p.name] = true
		}
	}
	sorted := func(ids []int) []int {
		sort.Slice(ids, func(a, b int) bool { return qs[ids[a]].name < qs[ids[b]].name })
		return ids
	}
	var emit func(i int) (queue.Node, error)
	emit = func(i int) (queue.Node, error) {
		n, err := node(i)
		if err != nil {
			return n, err
		}
		for _, c := range sorted(children[qs[i].name]) {
			cn, err := emit(c)
			if err != nil {
				return n, err
			}
			n.Children = append(n.Children, cn)
		}
		return n, nil
	}
	var out []queue.Node
	for _, i := range sorted(children[top]) {
		n, err := emit(i)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// readTopology reads the levels of a Kueue or KAI Topology.
func readTopology(o *object, im *Import) ([]Level, error) {
	var s topologySpec
	if err := o.decode("spec", &s, &im.Notes); err != nil {
		return nil, err
	}
	o.topKeys(&im.Notes, "spec", "status")
	var labels []string
	for i, l := range s.Levels {
		if l.NodeLabel == "" {
			f := fmt.Sprintf("spec.levels[%d].nodeLabel", i)
			return nil, o.errAt(o.fieldNode(f), f, fmt.Errorf("missing"))
		}
		labels = append(labels, l.NodeLabel)
	}
	return topologyLevels(o, labels, im, "spec.levels"), nil
}
