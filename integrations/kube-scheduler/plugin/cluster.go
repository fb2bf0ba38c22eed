package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/topology"
)

// clusterName names the root domain of the cluster built from nodes.
const clusterName = "cluster"

// unknownModel is the model of GPUs on nodes without a product label.
const unknownModel = "unknown"

// ErrNoGPUNodes is returned by BuildTopology when no node has allocatable GPUs.
var ErrNoGPUNodes = errors.New("no node has allocatable GPUs")

// Topology is the gpusched view of a set of Kubernetes nodes: the immutable
// topology.Cluster built from their labels and allocatable resources, and
// what Build had to leave out.
type Topology struct {
	// Cluster has one host per GPU node, named like the node.
	Cluster *topology.Cluster
	// Warnings says what was left out or guessed (a clique whose node names
	// cannot be listed, a GPU count above the maximum), one line each, in
	// node name order.
	Warnings []string
	// unavailable[h] is how many GPUs of host h, counted from its highest
	// index down, the node's GPU count label has but its allocatable
	// resource lacks (GPUs the device plugin reports unhealthy).
	unavailable []int
	// lost[h] are those GPUs' indices when the node names them
	// (UnhealthyGPUsAnnotation; a DRA node's tainted GPUs in placement
	// mode, dra_placement.go); nil otherwise.
	lost [][]int
}

// NewLedger returns an empty ledger of t's cluster with the GPUs the device
// plugin does not offer marked failed.
func (t *Topology) NewLedger() *topology.Ledger {
	l := topology.NewLedger(t.Cluster)
	for h, n := range t.unavailable {
		first, count := t.Cluster.HostGPUs(topology.HostID(h))
		lost := t.lost[h]
		if len(lost) != n {
			lost = nil
			for i := count - n; i < count; i++ {
				lost = append(lost, i)
			}
		}
		for _, i := range lost {
			// Cannot fail: the GPU exists and nothing is allocated.
			_ = l.SetGPUHealth(first+topology.GPUID(i), topology.Failed)
		}
	}
	return l
}

// nodeShape is what gpusched reads from one node.
type nodeShape struct {
	name      string
	gpus      int // the host's GPUs: max(count label, allocatable)
	allocGPUs int // allocatable GPUs
	model     string
	cpuMilli  int64
	memoryMiB int64
	machine   string // machine preset, "" for a flat host
	clique    string
	levels    []string // label value per topology level, "" if absent
	layout    string   // DRALayoutAnnotation: NUMA/PCIe layout from DRA slices
	numa      bool     // DRANUMAAnnotation: the layout's NUMA nodes are published
	mig       string   // DRAMIGAnnotation: MIG geometry from DRA slices
	// failed are the indices of the lost GPUs (gpus − allocGPUs) when the
	// node names them (UnhealthyGPUsAnnotation), sorted; nil otherwise.
	failed []int
}

// shapeOf reads n; ok is false for nodes without allocatable GPUs.
func shapeOf(n *v1.Node, a *Args) (s nodeShape, ok bool) {
	q, has := n.Status.Allocatable[v1.ResourceName(a.GPUResource)]
	if (!has || q.Value() <= 0) && n.Annotations[DRAStaticMIGAnnotation] == "" {
		return s, false // (a DRA node whose GPUs are all in static MIG mode is a host: dra_static.go)
	}
	s.name = n.Name
	s.allocGPUs = int(min(q.Value(), topology.MaxGPUsPerHost))
	s.gpus = s.allocGPUs
	if c, err := strconv.Atoi(n.Labels[a.GPUCountLabel]); err == nil && c > s.gpus {
		s.gpus = min(c, topology.MaxGPUsPerHost)
	}
	s.failed = failedIndices(n, s.gpus, s.gpus-s.allocGPUs)
	s.model = n.Labels[a.GPUProductLabel]
	if s.model == "" {
		s.model = unknownModel
	}
	if cpu, ok := n.Status.Allocatable[v1.ResourceCPU]; ok {
		s.cpuMilli = cpu.MilliValue()
	}
	if mem, ok := n.Status.Allocatable[v1.ResourceMemory]; ok {
		s.memoryMiB = mem.Value() >> 20
	}
	s.mig = n.Annotations[DRAMIGAnnotation]
	if m, ok := a.MachineTemplates[s.model]; ok {
		s.machine = m
	}
	s.clique = n.Labels[a.GPUCliqueLabel]
	s.layout = n.Annotations[DRALayoutAnnotation]
	s.numa = s.layout != "" && n.Annotations[DRANUMAAnnotation] != ""
	s.levels = make([]string, len(a.TopologyLevels))
	for i, l := range a.TopologyLevels {
		s.levels[i] = n.Labels[l.NodeLabel]
	}
	return s, true
}

// accelerator is the accelerator spec of s's GPU model.
func (s *nodeShape) accelerator() topology.AcceleratorSpec {
	acc := topology.AcceleratorSpec{Model: s.model, Vendor: "nvidia"}
	if s.machine != "" {
		if _, pa, err := topology.MachineTemplate(s.machine); err == nil {
			acc = pa
			acc.Model = s.model
		}
	}
	var mig topology.MIGSpec
	if s.mig != "" && json.Unmarshal([]byte(s.mig), &mig) == nil {
		acc.MIG = &mig // (dra_mig.go: what the driver publishes wins)
	}
	return acc
}

// template is the host template of s (unnamed) and the key of its
// content: nodes of one key share a template.
func (s *nodeShape) template() (topology.HostTemplate, string) {
	ht := topology.HostTemplate{CPUMilli: s.cpuMilli, MemoryMiB: s.memoryMiB, Accelerator: s.model, GPUs: s.gpus}
	machine := ""
	if s.machine != "" {
		pt, _, err := topology.MachineTemplate(s.machine)
		if err == nil && pt.GPUs == s.gpus {
			machine = s.machine
			ht.NUMA = pt.NUMA
			if s.clique == "" {
				ht.Fabrics = pt.Fabrics
			}
		}
	}
	layout := ""
	var numa []topology.NUMASpec
	if (machine == "" || s.numa) && s.layout != "" && json.Unmarshal([]byte(s.layout), &numa) == nil {
		ht.NUMA, layout = numa, s.layout // (dra.go: the slices' NUMA nodes, when published, over a preset's)
	}
	return ht, fmt.Sprintf("%s|%d|%d|%d|%s|%t|%s", s.model, s.gpus, s.cpuMilli, s.memoryMiB, machine, s.clique != "", layout)
}

// BuildTopology builds the gpusched cluster of the GPU nodes among nodes (those
// with allocatable a.GPUResource), in node name order:
//
//   - each node is a host named like the node, with its allocatable CPU and
//     memory, and GPUs of the model its product label names;
//   - its intra-host topology comes from the machine preset a.MachineTemplates
//     maps its product to, when the GPU counts agree (with the NUMA nodes and
//     PCIe roots of its DRA slices instead of the preset's when every GPU
//     publishes its NUMA node, DRANUMAAnnotation); otherwise from its DRA
//     slices' layout, else every GPU sits under one PCIe host bridge;
//   - a.TopologyLevels become network levels, a node's switch at each level
//     named by its label value (qualified by the level and the path above
//     when the value alone would be ambiguous); a node without the label is
//     alone under a switch of its own;
//   - nodes sharing a clique label value form one multi-node NVLink domain.
//
// Nodes with a GPU count label above their allocatable GPUs get the missing
// GPUs as failed ones (see Topology.NewLedger). Without GPU nodes it returns
// ErrNoGPUNodes; any other error means the labels describe no valid cluster.
func BuildTopology(nodes []*v1.Node, a *Args) (*Topology, error) {
	var shapes []nodeShape
	for _, n := range nodes {
		if s, ok := shapeOf(n, a); ok {
			shapes = append(shapes, s)
		}
	}
	slices.SortFunc(shapes, func(x, y nodeShape) int { return strings.Compare(x.name, y.name) })

	t := &Topology{}
	spec := topology.Spec{Version: topology.SpecVersion, Name: clusterName}
	for _, l := range a.TopologyLevels {
		spec.Levels = append(spec.Levels, topology.LevelSpec{Name: l.Name})
	}

	// Nodes of a clique share a fabric; their preset's own fabric goes.
	cliqueSize := map[string]int{}
	for _, s := range shapes {
		if s.clique != "" {
			cliqueSize[s.clique]++
		}
	}

	// Templates, one per distinct shape.
	models := map[string]bool{}
	templates := map[string]string{} // shape key → template name
	templateOf := make([]string, len(shapes))
	for i, s := range shapes {
		if !models[s.model] {
			models[s.model] = true
			spec.Accelerators = append(spec.Accelerators, s.accelerator())
		}
		ht, key := s.template()
		name, ok := templates[key]
		if !ok {
			name = fmt.Sprintf("t%d-%dx%s", len(templates), s.gpus, s.model)
			templates[key] = name
			ht.Name = name
			spec.Templates = append(spec.Templates, ht)
		}
		templateOf[i] = name
	}

	// Switches: a node's domain at level i is the path of its label values
	// at levels 0..i; a missing value makes the path the node's own.
	taken := map[string]bool{clusterName: true}
	for _, s := range shapes {
		taken[s.name] = true
	}
	paths := make([][]string, len(shapes)) // per node, the switch name per level
	for i := range shapes {
		paths[i] = make([]string, len(a.TopologyLevels))
	}
	for li, lvl := range a.TopologyLevels {
		type sw struct{ path, parent, base string }
		byPath := map[string]*sw{}
		var order []string
		pathOf := make([]string, len(shapes))
		for i, s := range shapes {
			v := s.levels[li]
			var p string
			if v == "" {
				p = "\x00" + s.name // alone
			} else if li == 0 {
				p = v
			} else {
				p = paths[i][li-1] + "\x00" + v
			}
			pathOf[i] = p
			if _, ok := byPath[p]; !ok {
				base := v
				if v == "" {
					base = s.name + "-" + lvl.Name
				}
				parent := ""
				if li > 0 {
					parent = paths[i][li-1]
				}
				byPath[p] = &sw{path: p, parent: parent, base: base}
				order = append(order, p)
			}
		}
		slices.Sort(order)
		count := map[string]int{}
		for _, p := range order {
			count[byPath[p].base]++
		}
		names := map[string]string{}
		for _, p := range order {
			x := byPath[p]
			name := x.base
			if count[name] > 1 || taken[name] {
				name = lvl.Name + ":" + x.base
				if x.parent != "" {
					name = lvl.Name + ":" + x.parent + ":" + x.base
				}
			}
			for n := 2; taken[name]; n++ {
				name = fmt.Sprintf("%s:%s#%d", lvl.Name, x.base, n)
			}
			taken[name] = true
			names[p] = name
			spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: name, Level: lvl.Name, Parent: x.parent})
		}
		for i := range shapes {
			paths[i][li] = names[pathOf[i]]
		}
	}

	// Hosts.
	for i, s := range shapes {
		hg := topology.HostGroup{Name: s.name, Template: templateOf[i]}
		if n := len(a.TopologyLevels); n > 0 {
			hg.Parent = paths[i][n-1]
		}
		spec.Hosts = append(spec.Hosts, hg)
	}

	// Cliques: multi-node NVLink domains.
	var cliques []string
	members := map[string][]string{}
	for _, s := range shapes {
		if s.clique == "" {
			continue
		}
		if _, ok := members[s.clique]; !ok {
			cliques = append(cliques, s.clique)
		}
		members[s.clique] = append(members[s.clique], s.name)
	}
	slices.Sort(cliques)
	for _, c := range cliques {
		pattern, ok := namePattern(members[c])
		if !ok {
			// Unrelated names: a host list ("a,b,c"), which ExpandNames
			// reads back name by name.
			pattern = strings.Join(members[c], ",")
			if got, err := topology.ExpandNames(pattern); err != nil || !slices.Equal(got, members[c]) {
				t.Warnings = append(t.Warnings, fmt.Sprintf(
					"clique %s: node names %v cannot be listed in a cluster spec; its NVLink domain is not modelled", c, members[c]))
				continue
			}
		}
		name := c
		if taken[name] {
			name = "nvlink:" + c
		}
		taken[name] = true
		fg := topology.FabricGroup{Name: name, Kind: topology.FabricMNNVL, Hosts: pattern}
		if dot := strings.LastIndexByte(c, '.'); dot > 0 {
			if id, err := strconv.ParseUint(c[dot+1:], 10, 32); err == nil {
				fg.ClusterUUID, fg.CliqueID = c[:dot], uint32(id)
			}
		}
		spec.Fabrics = append(spec.Fabrics, fg)
	}

	if len(shapes) == 0 {
		return nil, ErrNoGPUNodes
	}
	c, err := topology.Build(spec)
	if err != nil {
		return nil, fmt.Errorf("building the cluster from %d GPU nodes: %w", len(shapes), err)
	}
	t.Cluster = c
	t.unavailable = make([]int, c.NumHosts())
	t.lost = make([][]int, c.NumHosts())
	for _, s := range shapes {
		if s.gpus > s.allocGPUs {
			h, _ := c.HostByName(s.name)
			t.unavailable[h], t.lost[h] = s.gpus-s.allocGPUs, s.failed
		}
	}
	return t, nil
}

// namePattern writes names as one topology name pattern, "prefix[n1,n2,...]suffix",
// when they differ only in one run of digits; ok is false otherwise. One
// name is its own pattern.
func namePattern(names []string) (string, bool) {
	if len(names) == 0 {
		return "", false
	}
	if len(names) == 1 {
		if got, err := topology.ExpandNames(names[0]); err != nil || len(got) != 1 || got[0] != names[0] {
			return "", false
		}
		return names[0], true
	}
	toks := make([][]string, len(names))
	for i, n := range names {
		if strings.ContainsAny(n, "[], ") {
			return "", false
		}
		toks[i] = digitRuns(n)
		if len(toks[i]) != len(toks[0]) {
			return "", false
		}
	}
	// The varying token must be a digit run; every other token equal.
	vary := -1
	for k := range toks[0] {
		same := true
		for i := 1; i < len(toks); i++ {
			if toks[i][k] != toks[0][k] {
				same = false
				break
			}
		}
		if same {
			continue
		}
		if vary >= 0 || !isDigits(toks[0][k]) {
			return "", false
		}
		vary = k
	}
	if vary < 0 {
		return "", false // duplicates
	}
	var nums []string
	for i := range toks {
		d := toks[i][vary]
		if !isDigits(d) || len(d) > 9 {
			return "", false
		}
		// The pattern keeps a number's zero padding only when it starts
		// with 0 and is longer than one digit; "0" alone is fine.
		nums = append(nums, d)
	}
	var b strings.Builder
	for k, tok := range toks[0] {
		if k == vary {
			b.WriteByte('[')
			b.WriteString(strings.Join(nums, ","))
			b.WriteByte(']')
			continue
		}
		b.WriteString(tok)
	}
	p := b.String()
	// Check the round trip: the pattern must expand to exactly names.
	got, err := topology.ExpandNames(p)
	if err != nil || !slices.Equal(got, names) {
		return "", false
	}
	return p, true
}

// digitRuns splits s into alternating runs of digits and non-digits.
func digitRuns(s string) []string {
	var out []string
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || isDigit(s[i]) != isDigit(s[start]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func machineNames() []string { return topology.MachineNames() }
