package nvml

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/gpusched/gpusched/topology"
)

// PathLevel is NVML's classification of the PCIe path between two GPUs
// (nvmlGpuTopologyLevel_t, what nvidia-smi topo -m prints), with NVML's
// values, nearest first.
type PathLevel int

// Path levels.
const (
	PathInternal PathLevel = 0  // the same board (a multi-GPU card)
	PathPIX      PathLevel = 10 // at most one PCIe switch between them
	PathPXB      PathLevel = 20 // several PCIe switches, no host bridge
	PathPHB      PathLevel = 30 // through one PCIe host bridge
	PathNODE     PathLevel = 40 // between host bridges of one NUMA node
	PathSYS      PathLevel = 50 // across NUMA nodes (the SMP interconnect)
)

// String returns nvidia-smi's abbreviation ("PIX"), or "PathLevel(N)".
func (l PathLevel) String() string {
	switch l {
	case PathInternal:
		return "internal"
	case PathPIX:
		return "PIX"
	case PathPXB:
		return "PXB"
	case PathPHB:
		return "PHB"
	case PathNODE:
		return "NODE"
	case PathSYS:
		return "SYS"
	}
	return "PathLevel(" + strconv.Itoa(int(l)) + ")"
}

// PCIeFacts is what NVML and sysfs say about the placement of a host's GPUs,
// indexed by GPU index. NUMA fixes the number of GPUs; the other slices are
// either nil (unknown) or of the same length.
type PCIeFacts struct {
	// Levels[i][j] is the path level between GPUs i and j (symmetric; the
	// diagonal is ignored); nil when NVML could not tell.
	Levels [][]PathLevel
	// NUMA[i] is GPU i's NUMA node, -1 when unknown.
	NUMA []int
	// CPUs[i] is the cpulist of GPU i's NUMA node, "" when unknown.
	CPUs []string
	// Switches[i] is the number of PCIe switches between GPU i and its root
	// port as sysfs shows them, -1 when unknown.
	Switches []int
}

// InferPCIe turns facts into the NUMA nodes and PCIe trees of a host
// template, with warnings where the facts are missing or contradict each
// other.
//
// NUMA nodes are the GPUs' reported NUMA ids; where those are unknown, the
// groups of GPUs closer than SYS, numbered from the lowest free id.
// Inside a NUMA node, GPUs closer than NODE share a host bridge; inside a
// bridge, GPUs at PXB or closer share a top-level PCIe switch, and GPUs at
// PIX (or internal) share a leaf switch. So a bridge holds:
//
//   - a lone GPU (sharing no switch with another GPU) directly, or, when
//     sysfs shows a switch above it, inside a switch of its own;
//   - a group of GPUs that are all PIX to each other in one switch;
//   - a group with several PIX classes as one switch holding one switch per
//     class.
//
// Deeper nesting exists in real machines but NVML's levels cannot tell it
// apart: the tree built is the simplest one whose topology.Cluster.Link
// levels equal NVML's matrix. When Levels is nil every NUMA node gets one
// host bridge holding its GPUs directly (PHB apart) and a warning says so.
// The result is not canonical; HostTemplate.Canonical orders it.
// Complexity O(n²) for n GPUs.
func InferPCIe(f PCIeFacts) ([]topology.NUMASpec, []Warning) {
	n := len(f.NUMA)
	if n == 0 {
		return nil, nil
	}
	var ws []Warning
	warn := func(ft Feature, format string, args ...any) {
		ws = append(ws, Warning{GPU: -1, Feature: ft, Msg: fmt.Sprintf(format, args...)})
	}
	levels := f.Levels
	if levels != nil && !square(levels, n) {
		warn(FeaturePCIe, "the path-level matrix is not %d×%d; PCIe structure ignored", n, n)
		levels = nil
	}
	lv := func(i, j int) PathLevel { return levels[i][j] }
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}

	// NUMA nodes.
	numaOf := make([]int, n)
	allKnown := true
	for i, id := range f.NUMA {
		numaOf[i] = id
		if id < 0 {
			allKnown = false
		}
	}
	if levels != nil {
		sys := components(all, func(a, b int) bool { return lv(a, b) < PathSYS })
		checkComponents(sys, func(a, b int) bool { return lv(a, b) < PathSYS }, func(a, b, via int) {
			warn(FeatureNUMA, "GPUs %d and %d are %v apart yet both closer than SYS to GPU %d; treated as one NUMA node", a, b, lv(a, b), via)
		})
		if allKnown {
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					same := numaOf[i] == numaOf[j]
					if same && lv(i, j) == PathSYS {
						warn(FeatureNUMA, "GPUs %d and %d report NUMA node %d but are SYS apart", i, j, numaOf[i])
					} else if !same && lv(i, j) < PathSYS {
						warn(FeatureNUMA, "GPUs %d and %d report NUMA nodes %d and %d but are only %v apart", i, j, numaOf[i], numaOf[j], lv(i, j))
					}
				}
			}
		} else {
			// Name each SYS-separated group by the ids its GPUs report.
			for _, c := range sys {
				id := -1
				for _, g := range c {
					if x := f.NUMA[g]; x >= 0 {
						if id >= 0 && x != id {
							warn(FeatureNUMA, "GPUs of one NUMA group report NUMA nodes %d and %d; using %d", id, x, min(id, x))
						}
						if id < 0 || x < id {
							id = x
						}
					}
				}
				for _, g := range c {
					numaOf[g] = id
				}
			}
		}
	}
	if !allKnown {
		used := map[int]bool{}
		for _, id := range numaOf {
			if id >= 0 {
				used[id] = true
			}
		}
		// Unknown GPUs: one new node per SYS group (or all together when
		// the levels are unknown), in order of their lowest GPU.
		group := func(g int) int { return 0 }
		if levels != nil {
			sys := components(all, func(a, b int) bool { return lv(a, b) < PathSYS })
			at := make([]int, n)
			for k, c := range sys {
				for _, g := range c {
					at[g] = k
				}
			}
			group = func(g int) int { return at[g] }
		}
		assigned := map[int]int{}
		next := 0
		for g := 0; g < n; g++ {
			if numaOf[g] >= 0 {
				continue
			}
			k := group(g)
			id, ok := assigned[k]
			if !ok {
				for used[next] {
					next++
				}
				id = next
				used[id] = true
				assigned[k] = id
			}
			numaOf[g] = id
		}
	}
	ids := slices.Clone(numaOf)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if !allKnown && len(ids) > 1 {
		warn(FeatureNUMA, "NUMA node unknown for some GPUs; numbered the unknown ones by their PCIe grouping")
	}

	var out []topology.NUMASpec
	for _, id := range ids {
		var members []int
		for g := 0; g < n; g++ {
			if numaOf[g] == id {
				members = append(members, g)
			}
		}
		node := topology.NUMASpec{ID: id}
		if f.CPUs != nil && len(f.CPUs) == n {
			for _, g := range members {
				c := f.CPUs[g]
				switch {
				case c == "":
				case node.CPUs == "":
					node.CPUs = c
				case c != node.CPUs:
					warn(FeatureNUMA, "GPUs of NUMA node %d report different CPU lists (%s, %s); keeping the first", id, node.CPUs, c)
				}
			}
		}
		if levels == nil {
			node.PCIe = []topology.PCIeSpec{{GPUs: members}}
			out = append(out, node)
			continue
		}
		bridges := components(members, func(a, b int) bool { return lv(a, b) <= PathPHB })
		checkComponents(bridges, func(a, b int) bool { return lv(a, b) <= PathPHB }, func(a, b, via int) {
			warn(FeaturePCIe, "GPUs %d and %d are %v apart yet share a host bridge through GPU %d; treated as one bridge", a, b, lv(a, b), via)
		})
		for _, br := range bridges {
			node.PCIe = append(node.PCIe, bridgeTree(br, lv, f.Switches, func(a, b, via int) {
				warn(FeaturePCIe, "GPUs %d and %d are %v apart yet share a PCIe switch through GPU %d; treated as one switch", a, b, lv(a, b), via)
			}))
		}
		out = append(out, node)
	}
	if levels == nil {
		warn(FeaturePCIe, "PCIe path levels unknown; each NUMA node is modelled as one host bridge holding its GPUs")
	}
	return out, ws
}

// bridgeTree builds the tree below one host bridge holding GPUs members.
func bridgeTree(members []int, lv func(a, b int) PathLevel, switches []int, bad func(a, b, via int)) topology.PCIeSpec {
	var br topology.PCIeSpec
	within := func(max PathLevel) func(a, b int) bool {
		return func(a, b int) bool { return lv(a, b) <= max }
	}
	top := components(members, within(PathPXB))
	checkComponents(top, within(PathPXB), bad)
	for _, c := range top {
		if len(c) == 1 {
			g := c[0]
			if switches != nil && g < len(switches) && switches[g] >= 1 {
				br.Switches = append(br.Switches, topology.PCIeSpec{GPUs: c})
			} else {
				br.GPUs = append(br.GPUs, g)
			}
			continue
		}
		leaves := components(c, within(PathPIX))
		checkComponents(leaves, within(PathPIX), bad)
		if len(leaves) == 1 {
			br.Switches = append(br.Switches, topology.PCIeSpec{GPUs: c})
			continue
		}
		sw := topology.PCIeSpec{}
		for _, l := range leaves {
			sw.Switches = append(sw.Switches, topology.PCIeSpec{GPUs: l})
		}
		br.Switches = append(br.Switches, sw)
	}
	return br
}

func square(m [][]PathLevel, n int) bool {
	if len(m) != n {
		return false
	}
	for _, row := range m {
		if len(row) != n {
			return false
		}
	}
	return true
}

// components returns the connected components of rel over members (which
// must be ascending), each ascending, ordered by their lowest member.
// O(len(members)²) calls of rel.
func components(members []int, rel func(a, b int) bool) [][]int {
	k := len(members)
	parent := make([]int, k)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			if rel(members[i], members[j]) {
				a, b := find(i), find(j)
				if a != b {
					parent[max(a, b)] = min(a, b)
				}
			}
		}
	}
	var out [][]int
	index := map[int]int{}
	for i := 0; i < k; i++ {
		r := find(i)
		c, ok := index[r]
		if !ok {
			c = len(out)
			index[r] = c
			out = append(out, nil)
		}
		out[c] = append(out[c], members[i])
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// checkComponents calls bad once for the first pair of a component that
// rel does not relate directly (NVML's levels are then not nested classes),
// naming a GPU through which they were joined.
func checkComponents(comps [][]int, rel func(a, b int) bool, bad func(a, b, via int)) {
	for _, c := range comps {
		for i := 0; i < len(c); i++ {
			for j := i + 1; j < len(c); j++ {
				if rel(c[i], c[j]) {
					continue
				}
				via := -1
				for _, x := range c {
					if x != c[i] && x != c[j] && (rel(c[i], x) || rel(c[j], x)) {
						via = x
						break
					}
				}
				bad(c[i], c[j], via)
				return
			}
		}
	}
}
