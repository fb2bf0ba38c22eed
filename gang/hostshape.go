package gang

import (
	"math/bits"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// gpuSet is a set of GPUs of one host by local index (0..255).
type gpuSet [4]uint64

func (s *gpuSet) add(i int)     { s[i>>6] |= 1 << (i & 63) }
func (s gpuSet) has(i int) bool { return s[i>>6]&(1<<(i&63)) != 0 }
func (s gpuSet) and(o gpuSet) gpuSet {
	return gpuSet{s[0] & o[0], s[1] & o[1], s[2] & o[2], s[3] & o[3]}
}
func (s gpuSet) or(o gpuSet) gpuSet {
	return gpuSet{s[0] | o[0], s[1] | o[1], s[2] | o[2], s[3] | o[3]}
}
func (s gpuSet) andNot(o gpuSet) gpuSet {
	return gpuSet{s[0] &^ o[0], s[1] &^ o[1], s[2] &^ o[2], s[3] &^ o[3]}
}
func (s gpuSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}
func (s gpuSet) empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }

// first returns the lowest member, or -1.
func (s gpuSet) first() int {
	for w := range s {
		if s[w] != 0 {
			return w<<6 | bits.TrailingZeros64(s[w])
		}
	}
	return -1
}

// shapeNode is a node of a host's locality tree: the host, a NUMA node, a
// PCIe host bridge or switch, or a single GPU. Chains of nodes with the same
// GPUs are collapsed into one, so every inner node has at least two kids.
type shapeNode struct {
	set    gpuSet
	size   int
	parent int32 // -1 for the host
	kids   []int32
}

// hostShape is the locality tree of one host template, built once per
// cluster from a representative host. Node 0 is the host.
type hostShape struct {
	n     int
	nodes []shapeNode
	// cellSizes are the distinct node sizes, ascending: the buddy cell
	// levels inside the host (1 GPU … the whole host).
	cellSizes []int
	// oneFabric is set when all GPUs of the host lie in the same fabric
	// domain (or none): there is no fabric to choose inside the host.
	oneFabric bool
}

// buildShape derives the locality tree of host h from the cluster's domain
// tree below it.
func buildShape(c *topology.Cluster, h topology.HostID) *hostShape {
	first, n := c.HostGPUs(h)
	s := &hostShape{n: n}
	local := func(d topology.DomainID) gpuSet {
		var set gpuSet
		for _, g := range c.DomainGPUs(d) {
			set.add(int(g - first))
		}
		return set
	}
	var add func(d topology.DomainID, set gpuSet, parent int32) int32
	add = func(d topology.DomainID, set gpuSet, parent int32) int32 {
		// Collapse: descend while a single child holds all of set.
		for d >= 0 && set.count() > 1 {
			kids := c.DomainChildren(d)
			if len(kids) != 1 || local(kids[0]) != set {
				break
			}
			d = kids[0]
		}
		idx := int32(len(s.nodes))
		s.nodes = append(s.nodes, shapeNode{set: set, size: set.count(), parent: parent})
		if s.nodes[idx].size <= 1 {
			return idx
		}
		var kids []int32
		var covered gpuSet
		for _, ch := range c.DomainChildren(d) {
			cs := local(ch)
			if cs.empty() {
				continue
			}
			covered = covered.or(cs)
			kids = append(kids, add(ch, cs, idx))
		}
		for i := 0; i < n; i++ {
			if set.has(i) && !covered.has(i) {
				var one gpuSet
				one.add(i)
				kids = append(kids, add(-1, one, idx))
			}
		}
		slices.SortFunc(kids, func(a, b int32) int { return s.nodes[a].set.first() - s.nodes[b].set.first() })
		s.nodes[idx].kids = kids
		return idx
	}
	var all gpuSet
	for i := 0; i < n; i++ {
		all.add(i)
	}
	if n == 0 {
		s.nodes = []shapeNode{{parent: -1}}
	} else {
		add(c.HostDomain(h), all, -1)
	}
	for i := range s.nodes {
		if !slices.Contains(s.cellSizes, s.nodes[i].size) && s.nodes[i].size > 0 {
			s.cellSizes = append(s.cellSizes, s.nodes[i].size)
		}
	}
	slices.Sort(s.cellSizes)
	s.oneFabric = true
	for i := 1; i < n; i++ {
		if c.GPUFabric(first+topology.GPUID(i)) != c.GPUFabric(first) {
			s.oneFabric = false
		}
	}
	return s
}

// choose picks k GPUs of avail inside node ni, keeping them as close as the
// tree allows and the remaining free GPUs in as large groups as possible:
// if one kid can hold all k, it recurses into the kid with the fewest
// available GPUs that can (best fit, ties to the kid with the lowest GPU);
// otherwise it takes the kid with the most available GPUs whole (ties to
// the lowest) and repeats with the rest. The caller guarantees that the
// node holds at least k available GPUs. O(nodes) per level; no allocations.
func (s *hostShape) choose(ni int32, k int, avail gpuSet) gpuSet {
	var out gpuSet
	for {
		nd := &s.nodes[ni]
		here := nd.set.and(avail)
		if here.count() <= k || len(nd.kids) == 0 {
			return out.or(s.firstK(here, k))
		}
		best, bestF, big, bigF := int32(-1), 0, int32(-1), 0
		for _, kid := range nd.kids {
			f := s.nodes[kid].set.and(avail).count()
			if f >= k && (best < 0 || f < bestF) {
				best, bestF = kid, f
			}
			if f > bigF {
				big, bigF = kid, f
			}
		}
		if best >= 0 {
			ni = best
			continue
		}
		take := s.nodes[big].set.and(avail)
		out = out.or(take)
		avail = avail.andNot(take)
		k -= bigF
	}
}

// choose64 is choose for hosts of at most 64 GPUs, on one machine word.
func (s *hostShape) choose64(ni int32, k int, avail uint64) uint64 {
	var out uint64
	for {
		nd := &s.nodes[ni]
		here := nd.set[0] & avail
		if bits.OnesCount64(here) <= k || len(nd.kids) == 0 {
			for ; k > 0 && here != 0; k-- {
				out |= here & -here
				here &= here - 1
			}
			return out
		}
		best, bestF, big, bigF := int32(-1), 0, int32(-1), 0
		for _, kid := range nd.kids {
			f := bits.OnesCount64(s.nodes[kid].set[0] & avail)
			if f >= k && (best < 0 || f < bestF) {
				best, bestF = kid, f
			}
			if f > bigF {
				big, bigF = kid, f
			}
		}
		if best >= 0 {
			ni = best
			continue
		}
		take := s.nodes[big].set[0] & avail
		out |= take
		avail &^= take
		k -= bigF
	}
}

// firstK returns the k lowest members of set (all of them if fewer).
func (s *hostShape) firstK(set gpuSet, k int) gpuSet {
	if set.count() <= k {
		return set
	}
	var out gpuSet
	for i := 0; k > 0; i++ {
		if set.has(i) {
			out.add(i)
			k--
		}
	}
	return out
}

// cellSize returns the smallest buddy cell size that holds k GPUs, or -1
// if none does.
func (s *hostShape) cellSize(k int) int {
	for _, cs := range s.cellSizes {
		if cs >= k {
			return cs
		}
	}
	return -1
}

// freeCell returns the node of the buddy cell for a k-GPU task inside
// avail: the smallest cell size ≥ k, and among the cells of that size that
// are wholly available, the one whose parent has the fewest available GPUs
// (the most split parent), ties to the lowest GPU. It returns -1 if no such
// cell is wholly available.
func (s *hostShape) freeCell(k int, avail gpuSet) int32 {
	size := s.cellSize(k)
	if size < 0 {
		return -1
	}
	best, bestParent := int32(-1), 0
	for i := range s.nodes {
		nd := &s.nodes[i]
		if nd.size != size || nd.set.and(avail) != nd.set {
			continue
		}
		pf := 1 << 30
		if nd.parent >= 0 {
			pf = s.nodes[nd.parent].set.and(avail).count()
		}
		if best < 0 || pf < bestParent || pf == bestParent && nd.set.first() < s.nodes[best].set.first() {
			best, bestParent = int32(i), pf
		}
	}
	return best
}

// freeCell64 is freeCell for hosts of at most 64 GPUs.
func (s *hostShape) freeCell64(k int, avail uint64) int32 {
	size := s.cellSize(k)
	if size < 0 {
		return -1
	}
	best, bestParent := int32(-1), 0
	for i := range s.nodes {
		nd := &s.nodes[i]
		m := nd.set[0]
		if nd.size != size || m&avail != m {
			continue
		}
		pf := 1 << 30
		if nd.parent >= 0 {
			pf = bits.OnesCount64(s.nodes[nd.parent].set[0] & avail)
		}
		if best < 0 || pf < bestParent || pf == bestParent && bits.TrailingZeros64(m) < bits.TrailingZeros64(s.nodes[best].set[0]) {
			best, bestParent = int32(i), pf
		}
	}
	return best
}
