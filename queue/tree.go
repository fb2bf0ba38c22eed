package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/workload"
)

// Capacity is what the cluster offers: the root's quota where the config
// gives none, and the denominator of dominant shares.
type Capacity struct {
	Resources workload.Resources // the cluster's total GPU, CPU and memory
	// Models is the GPU capacity per accelerator model.
	Models []ModelCapacity
}

// ModelCapacity is the GPU capacity of one model, in milli-GPU.
type ModelCapacity struct {
	Name     string // the accelerator model, as in topology
	GPUMilli int64  // its GPUs in the cluster × 1000
}

// Vector is an amount per dimension of a Tree, in internal units: milli-GPU,
// milli-CPU, MiB of memory, then milli-GPU of each governed model in the
// order of Tree.Dimensions().Models.
type Vector []int64

// NodeID identifies a node of a Tree; the root is 0, then depth first.
type NodeID int32

// Tree is a built queue tree: quotas, usage accounting, admission checks,
// fair-share order and the pending jobs of each leaf. It is not safe for
// concurrent use. All methods that take a time treat it as an argument and
// never read a clock.
type Tree struct {
	dims     fairshare.Dimensions
	capacity Vector
	governed []bool
	nodes    []node
	byName   map[string]NodeID
	leaves   []NodeID
	fair     Fairness
	classes  []PriorityClass
	// Epoch grows with every usage change, so callers can cache answers
	// that depend on usage.
	epoch   uint64
	scratch Vector
	// rootDefault marks dimensions whose root quota is the cluster's
	// capacity (none configured).
	rootDefault []bool
	// now is the time of the last Advance: the cycle's time, for
	// FinishTime's waiting times.
	now time.Time
}

type node struct {
	name     string
	path     string
	parent   NodeID
	children []NodeID
	// end is one past the last node of its subtree: nodes are numbered
	// depth first (Build), so the subtree is the IDs [id, end) and its
	// leaves a run of Tree.leaves.
	end    NodeID
	depth  int
	weight float64
	// Per dimension; −1 in borrow, lend and max means no limit.
	nominal, borrow, lend, max Vector
	// protected is the part of nominal that may not be lent:
	// nominal − lend, or 0 when lending is unlimited.
	protected Vector
	lendable  Vector // what the children may lend each other
	used      Vector // running
	reserved  Vector // admitted, not yet running
	// eff is the effective usage: for a leaf used+reserved; for an inner
	// node the sum over children of max(eff, protected) — unused capacity
	// that children may not lend counts as used from outside.
	eff   Vector
	usage fairshare.Usage // decayed, for FairTree
	rate  float64         // current dominant share, the accrual rate
	share float64         // cached DRF / borrowed share
	leaf  *Leaf
	// memo of the best candidate below the node in the current cycle
	best      pick
	bestValid bool
}

// Build validates cfg against the cluster capacity and builds the tree.
// Errors are *ConfigError naming the field.
func Build(cfg Config, capacity Capacity) (*Tree, error) {
	if err := cfg.validateShape(); err != nil {
		return nil, err
	}
	t := &Tree{byName: map[string]NodeID{}, fair: cfg.Fairness, classes: append([]PriorityClass(nil), cfg.PriorityClasses...)}
	if t.fair.Policy == "" {
		t.fair.Policy = DRF
	}
	switch {
	case t.fair.NoDecay:
		t.fair.HalfLife = 0 // fairshare.Usage.Advance: no decay
	case t.fair.HalfLife == 0:
		t.fair.HalfLife = DefaultHalfLife
	}
	if t.fair.Runtime == 0 {
		t.fair.Runtime = DefaultFinishTimeRuntime
	}
	t.dims.Models = cfg.models()
	n := t.dims.Len()
	t.capacity = make(Vector, n)
	t.capacity[fairshare.DimGPU] = capacity.Resources.GPUMilli
	t.capacity[fairshare.DimCPU] = capacity.Resources.CPUMilli
	t.capacity[fairshare.DimMemory] = capacity.Resources.MemoryMiB
	for i, m := range t.dims.Models {
		found := false
		for _, mc := range capacity.Models {
			if mc.Name == m {
				t.capacity[fairshare.DimModel+i] = mc.GPUMilli
				found = true
			}
		}
		if !found {
			var known []string
			for _, mc := range capacity.Models {
				known = append(known, mc.Name)
			}
			return nil, cfgErr(modelField(&cfg, m), "unknown GPU model %q (the cluster has %s)", m, strings.Join(known, ", "))
		}
	}
	t.governed = make([]bool, n)
	var mark func(nd *Node)
	mark = func(nd *Node) {
		for _, q := range nd.Quotas {
			t.governed[t.dim(q.Resource)] = true
		}
		for i := range nd.Children {
			mark(&nd.Children[i])
		}
	}
	mark(&cfg.Root)
	root := cfg.Root
	if root.Name == "" {
		root.Name = "cluster"
	}
	t.add(&root, -1, "", 0)
	t.rootDefault = make([]bool, n)
	if err := t.fillNominal(0, "root", &root); err != nil {
		return nil, err
	}
	for i := range t.nodes {
		nd := &t.nodes[i]
		nd.protected = make(Vector, n)
		for r := range nd.protected {
			if nd.lend[r] >= 0 {
				nd.protected[r] = nd.nominal[r] - nd.lend[r]
			}
		}
	}
	for i := range t.nodes {
		t.nodes[i].lendable = t.lendableOf(NodeID(i))
	}
	// Effective usage starts at the protected amounts of children.
	for i := len(t.nodes) - 1; i > 0; i-- {
		nd := &t.nodes[i]
		p := &t.nodes[nd.parent]
		for r := range p.eff {
			p.eff[r] += max(nd.eff[r], nd.protected[r])
		}
	}
	for i := range t.nodes {
		t.refreshShare(NodeID(i))
	}
	return t, nil
}

func modelField(cfg *Config, model string) string {
	var found string
	var walk func(n *Node, f string)
	walk = func(n *Node, f string) {
		for i, q := range n.Quotas {
			if found == "" && q.Resource == ResourceGPUModelPrefix+model {
				found = f + ".quotas[" + strconv.Itoa(i) + "].resource"
			}
		}
		for i := range n.Children {
			walk(&n.Children[i], f+".children["+strconv.Itoa(i)+"]")
		}
	}
	walk(&cfg.Root, "root")
	return found
}

// dim returns the dimension of a valid resource name.
func (t *Tree) dim(res string) int {
	switch res {
	case ResourceGPU:
		return fairshare.DimGPU
	case ResourceCPU:
		return fairshare.DimCPU
	case ResourceMemory:
		return fairshare.DimMemory
	}
	m := strings.TrimPrefix(res, ResourceGPUModelPrefix)
	for i, x := range t.dims.Models {
		if x == m {
			return fairshare.DimModel + i
		}
	}
	panic("queue: unknown resource " + res)
}

func unit(dim int) int64 {
	switch dim {
	case fairshare.DimCPU:
		return unitCPU
	case fairshare.DimMemory:
		return unitMemory
	}
	return unitGPU
}

func (t *Tree) add(cn *Node, parent NodeID, parentPath string, depth int) NodeID {
	id := NodeID(len(t.nodes))
	n := t.dims.Len()
	path := cn.Name
	if parentPath != "" {
		path = parentPath + "/" + cn.Name
	}
	if parent < 0 {
		path = ""
	}
	nd := node{
		name: cn.Name, path: path, parent: parent, depth: depth, weight: cn.Weight,
		nominal: make(Vector, n), borrow: fill(n, -1), lend: fill(n, -1), max: fill(n, -1),
		used: make(Vector, n), reserved: make(Vector, n), eff: make(Vector, n),
	}
	if nd.weight == 0 {
		nd.weight = 1
	}
	t.nodes = append(t.nodes, nd)
	t.byName[cn.Name] = id
	if len(cn.Children) == 0 {
		pol := cn.Policy
		if pol.Ordering == "" {
			pol.Ordering = BestEffortFIFO
		}
		t.nodes[id].leaf = newLeaf(t, id, pol)
		t.leaves = append(t.leaves, id)
	}
	for i := range cn.Children {
		c := t.add(&cn.Children[i], id, path, depth+1)
		t.nodes[id].children = append(t.nodes[id].children, c)
	}
	t.nodes[id].end = NodeID(len(t.nodes))
	return id
}

func fill(n int, v int64) Vector {
	x := make(Vector, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// fillNominal sets quotas from the config bottom-up and checks that
// children's nominal quotas fit in their parent's.
func (t *Tree) fillNominal(id NodeID, field string, cn *Node) error {
	for i := range cn.Children {
		if err := t.fillNominal(t.nodes[id].children[i], field+".children["+strconv.Itoa(i)+"]", &cn.Children[i]); err != nil {
			return err
		}
	}
	nd := &t.nodes[id]
	listed := make([]int, t.dims.Len())
	for r := range listed {
		listed[r] = -1
	}
	for i, q := range cn.Quotas {
		r := t.dim(q.Resource)
		listed[r] = i
		u := unit(r)
		nd.nominal[r] = q.Nominal * u
		if q.BorrowingLimit != nil {
			nd.borrow[r] = *q.BorrowingLimit * u
		}
		if q.LendingLimit != nil {
			nd.lend[r] = *q.LendingLimit * u
		}
		if q.Max != nil {
			nd.max[r] = *q.Max * u
		}
	}
	for r := range nd.nominal {
		var sum int64
		for _, c := range nd.children {
			sum += t.nodes[c].nominal[r]
		}
		switch {
		case listed[r] >= 0:
			if sum > nd.nominal[r] {
				return cfgErr(fmt.Sprintf("%s.quotas[%d].nominal", field, listed[r]),
					"children of %q have %s of %s guaranteed, more than its nominal %s", nd.name, t.format(r, sum), t.dims.Name(r), t.format(r, nd.nominal[r]))
			}
			if id == 0 && t.governed[r] && nd.nominal[r] > t.capacity[r] {
				return cfgErr(fmt.Sprintf("%s.quotas[%d].nominal", field, listed[r]),
					"nominal %s of %s exceeds the cluster's %s", t.format(r, nd.nominal[r]), t.dims.Name(r), t.format(r, t.capacity[r]))
			}
		case id == 0:
			nd.nominal[r] = t.capacity[r]
			t.rootDefault[r] = true
			if t.governed[r] && sum > nd.nominal[r] {
				return cfgErr(field+".quotas", "queues guarantee %s of %s, more than the cluster's %s", t.format(r, sum), t.dims.Name(r), t.format(r, t.capacity[r]))
			}
		default:
			nd.nominal[r] = sum
		}
	}
	return nil
}

// format renders an amount of dimension r in the quota's units.
func (t *Tree) format(r int, v int64) string {
	u := unit(r)
	s := strconv.FormatInt(v/u, 10)
	if v%u != 0 {
		s = strconv.FormatFloat(float64(v)/float64(u), 'f', -1, 64)
	}
	switch r {
	case fairshare.DimCPU:
		return s + " cores"
	case fairshare.DimMemory:
		return s + " GiB"
	}
	if s == "1" {
		return s + " GPU"
	}
	return s + " GPUs"
}

// Dimensions returns the dimensions of the tree's vectors.
func (t *Tree) Dimensions() fairshare.Dimensions { return t.dims }

// Capacity returns the cluster capacity vector the tree was built with.
// The slice is shared and must not be modified.
func (t *Tree) Capacity() Vector { return t.capacity }

// Governed reports whether dimension r is limited by some quota.
func (t *Tree) Governed(r int) bool { return t.governed[r] }

// GovernsAny reports whether some quota limits some dimension (else no
// queue borrows and no quota binds).
func (t *Tree) GovernsAny() bool {
	for _, g := range t.governed {
		if g {
			return true
		}
	}
	return false
}

// Epoch returns a counter that grows with every usage change.
func (t *Tree) Epoch() uint64 { return t.epoch }

// Fairness returns the fairness settings with defaults filled.
func (t *Tree) Fairness() Fairness { return t.fair }

// Lookup returns the node with the given name.
func (t *Tree) Lookup(name string) (NodeID, bool) {
	id, ok := t.byName[name]
	return id, ok
}

// Leaf returns the leaf queue with the given name.
func (t *Tree) Leaf(name string) (*Leaf, bool) {
	id, ok := t.byName[name]
	if !ok || t.nodes[id].leaf == nil {
		return nil, false
	}
	return t.nodes[id].leaf, true
}

// Leaves returns the leaf queues in depth-first order. The slice is shared.
func (t *Tree) Leaves() []NodeID { return t.leaves }

// LeafOf returns the pending index of leaf id, or nil for an inner node.
func (t *Tree) LeafOf(id NodeID) *Leaf { return t.nodes[id].leaf }

// NumNodes returns the number of nodes.
func (t *Tree) NumNodes() int { return len(t.nodes) }

// Name returns the name of node id.
func (t *Tree) Name(id NodeID) string { return t.nodes[id].name }

// Path returns the names from below the root down to node id joined by
// "/" ("" for the root).
func (t *Tree) Path(id NodeID) string { return t.nodes[id].path }

// Parent returns the parent of id, or −1 for the root.
func (t *Tree) Parent(id NodeID) NodeID { return t.nodes[id].parent }

// Children returns the children of id. The slice is shared.
func (t *Tree) Children(id NodeID) []NodeID { return t.nodes[id].children }

// PriorityClassName returns the name of a priority value, if configured.
func (t *Tree) PriorityClassName(p int32) (string, bool) {
	for _, c := range t.classes {
		if c.Value == p {
			return c.Name, true
		}
	}
	return "", false
}

// CheckPriority returns an error naming the field when priority classes
// are configured and p is none of them.
func (t *Tree) CheckPriority(p int32) error {
	if len(t.classes) == 0 {
		return nil
	}
	if _, ok := t.PriorityClassName(p); ok {
		return nil
	}
	var names []string
	for _, c := range t.classes {
		names = append(names, c.Name+"="+strconv.Itoa(int(c.Value)))
	}
	return fmt.Errorf("priority %d is not a configured priority class (%s)", p, strings.Join(names, ", "))
}
