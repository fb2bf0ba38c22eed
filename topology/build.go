package topology

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrInvalidSpec is the sentinel every *SpecError unwraps to.
var ErrInvalidSpec = errors.New("invalid cluster spec")

// SpecError reports a problem with one field of a Spec. Path names the field
// with the file's own keys ("templates[2].numa[0].pcie[1].gpus[3]"); the file
// loader adds the file name, line and column.
type SpecError struct {
	Path string
	Msg  string
}

// Error returns "PATH: MSG".
func (e *SpecError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns ErrInvalidSpec.
func (e *SpecError) Unwrap() error { return ErrInvalidSpec }

func specErr(path, format string, args ...any) error {
	return &SpecError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Limits that make a spec "absurd" rather than merely large.
const (
	MaxGPUsPerHost   = 256
	MaxNUMAPerHost   = 64
	MaxPCIeDepth     = 8
	MaxCPUMilli      = 1 << 40 // about a billion cores
	MaxMemoryMiB     = 1 << 40 // about an exabyte
	MaxBandwidthGBps = 1e6
	MaxLevels        = 8
	MaxMIGSlots      = 16
)

var reservedLevelNames = map[string]bool{"nvlink": true, "fabric": true, "host": true, "node": true, "cluster": true}

// compiledTemplate is a HostTemplate flattened for fast instantiation.
type compiledTemplate struct {
	name   string
	cpu    int64
	mem    int64
	model  ModelID
	nGPU   int
	nodes  []tnode   // intra-host domains in DFS order
	gpuAnc [][]int32 // per GPU: local node indices, innermost first (switches, bridge, numa)
	fabric []tfabric // host-local fabric domains
	gpuFab []int32   // per GPU: index into fabric, or -1
	kids   [][]int32 // children of each node (local)
	roots  []int32   // NUMA nodes (children of the host)
	spec   *HostTemplate
}

type tnode struct {
	kind   DomainKind
	name   string // relative to the host, e.g. "numa0/pci1/sw0"
	parent int32  // local parent, -1 = the host
	depth  int8
	gpus   []int32 // local GPU indices under this node, ascending
}

type tfabric struct {
	kind string
	bw   float64
	gpus []int32
	name string
}

// Build validates s and builds the Cluster it describes. It returns a
// *SpecError naming the offending field when s is invalid. Build does not
// retain s. Complexity O(hosts × GPUs per host).
func Build(s Spec) (*Cluster, error) {
	b := &builder{s: cloneSpec(s)}
	live := b.s.Live
	b.s.Live = nil
	if err := b.build(); err != nil {
		return nil, err
	}
	b.c.initLive()
	c := b.c
	for i := range live {
		var err error
		if c, err = c.apply(live[i], fmt.Sprintf("live[%d].", i), true); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type builder struct {
	s Spec
	c *Cluster

	tmplByName  map[string]int
	modelByName map[string]ModelID
	levelByName map[string]int // network level index, outermost 0

	sw        []bswitch
	swByName  map[string]int
	bh        []bhost
	hostNames map[string]int
	hostOf    []HostID // builder host index → HostID
}

type bswitch struct {
	name   string
	level  int
	parent int // index into sw, or -1
	kids   []int
	hosts  []int // for innermost switches
	path   string
}

type bhost struct {
	name   string
	tmpl   int
	parent int // index into sw, or -1 (root)
	ids    []GPUIdentity
	path   string
	fabric int // fabric group assigning this host, or -1
}

func (b *builder) build() error {
	s := &b.s
	if s.Version != SpecVersion {
		return specErr("version", "unsupported version %d; this build reads version %d", s.Version, SpecVersion)
	}
	if s.Name == "" {
		s.Name = "cluster"
	}
	if strings.ContainsAny(s.Name, " \t\n/") {
		return specErr("name", "cluster name %q may not contain white space or '/'", s.Name)
	}
	b.c = &Cluster{name: s.Name}
	if err := b.levels(); err != nil {
		return err
	}
	if err := b.accelerators(); err != nil {
		return err
	}
	if err := b.compileTemplates(); err != nil {
		return err
	}
	if err := b.switches(); err != nil {
		return err
	}
	if err := b.hostGroups(); err != nil {
		return err
	}
	b.assemble()
	if err := b.fabricGroups(); err != nil {
		return err
	}
	b.finish()
	b.c.spec = b.s
	return nil
}

func (b *builder) levels() error {
	s := &b.s
	if len(s.Levels) > MaxLevels {
		return specErr("levels", "%d network levels; at most %d are supported", len(s.Levels), MaxLevels)
	}
	b.levelByName = map[string]int{}
	for i, l := range s.Levels {
		p := fmt.Sprintf("levels[%d]", i)
		if l.Name == "" {
			return specErr(p+".name", "empty level name")
		}
		if reservedLevelNames[l.Name] {
			return specErr(p+".name", "%q is a built-in level name", l.Name)
		}
		if _, dup := b.levelByName[l.Name]; dup {
			return specErr(p+".name", "duplicate level %q", l.Name)
		}
		if err := checkBandwidth(l.BandwidthGBps); err != nil {
			return specErr(p+".bandwidthGBps", "%v", err)
		}
		b.levelByName[l.Name] = i
	}
	b.c.netLvls = s.Levels
	return nil
}

func checkBandwidth(bw float64) error {
	if math.IsNaN(bw) || bw < 0 || bw > MaxBandwidthGBps {
		return fmt.Errorf("bandwidth %v GB/s out of range [0, %g]", bw, float64(MaxBandwidthGBps))
	}
	return nil
}

func (b *builder) accelerators() error {
	b.modelByName = map[string]ModelID{}
	if len(b.s.Accelerators) > math.MaxInt16 {
		return specErr("accelerators", "too many accelerator models")
	}
	for i, a := range b.s.Accelerators {
		p := fmt.Sprintf("accelerators[%d]", i)
		if a.Model == "" {
			return specErr(p+".model", "empty model name")
		}
		if _, dup := b.modelByName[a.Model]; dup {
			return specErr(p+".model", "duplicate model %q", a.Model)
		}
		if a.MemoryMiB < 0 || a.MemoryMiB > MaxMemoryMiB {
			return specErr(p+".memoryMiB", "memory %d MiB out of range", a.MemoryMiB)
		}
		acc := Accelerator{Model: a.Model, Vendor: a.Vendor, MemoryMiB: a.MemoryMiB, ComputeCapability: a.ComputeCapability}
		if a.MIG != nil {
			m := a.MIG
			if m.Slots < 1 || m.Slots > MaxMIGSlots {
				return specErr(p+".mig.slots", "%d slots out of range [1, %d]", m.Slots, MaxMIGSlots)
			}
			if len(m.Profiles) == 0 || len(m.Profiles) > 64 {
				return specErr(p+".mig.profiles", "need 1 to 64 profiles, have %d", len(m.Profiles))
			}
			acc.MIGSlots = m.Slots
			seen := map[string]bool{}
			exclusive := map[string]int{} // resource → its bit
			for j, pr := range m.Profiles {
				pp := fmt.Sprintf("%s.mig.profiles[%d]", p, j)
				if pr.Name == "" {
					return specErr(pp+".name", "empty profile name")
				}
				if seen[pr.Name] {
					return specErr(pp+".name", "duplicate profile %q", pr.Name)
				}
				seen[pr.Name] = true
				if pr.Size < 1 || pr.Size > m.Slots {
					return specErr(pp+".size", "size %d out of range [1, %d]", pr.Size, m.Slots)
				}
				if len(pr.Starts) == 0 {
					return specErr(pp+".starts", "no legal placements")
				}
				for k, st := range pr.Starts {
					if st < 0 || st+pr.Size > m.Slots {
						return specErr(fmt.Sprintf("%s.starts[%d]", pp, k), "start %d does not fit %d slots of size %d", st, m.Slots, pr.Size)
					}
					if k > 0 && st <= pr.Starts[k-1] {
						return specErr(fmt.Sprintf("%s.starts[%d]", pp, k), "starts must be strictly ascending")
					}
				}
				if pr.MemoryMiB < 0 || pr.MemoryMiB > MaxMemoryMiB {
					return specErr(pp+".memoryMiB", "memory %d MiB out of range", pr.MemoryMiB)
				}
				if pr.ComputeSlices < 0 || pr.ComputeSlices > 64 {
					return specErr(pp+".computeSlices", "%d compute slices out of range", pr.ComputeSlices)
				}
				var bit uint16
				if pr.Exclusive != "" {
					k, ok := exclusive[pr.Exclusive]
					if !ok {
						k = m.Slots + len(exclusive)
						if k >= MaxMIGSlots {
							return specErr(pp+".exclusive", "no room for resource %q: %d slots and %d exclusive resources exceed %d", pr.Exclusive, m.Slots, len(exclusive)+1, MaxMIGSlots)
						}
						exclusive[pr.Exclusive] = k
					}
					bit = 1 << k
				}
				acc.MIGProfiles = append(acc.MIGProfiles, MIGProfile{
					Name: pr.Name, Size: pr.Size, Starts: slices.Clone(pr.Starts),
					MemoryMiB: pr.MemoryMiB, ComputeSlices: pr.ComputeSlices,
					Milli:     int32(pr.Size * 1000 / m.Slots),
					Exclusive: pr.Exclusive, exclusive: bit,
				})
			}
		}
		b.modelByName[a.Model] = ModelID(len(b.c.models))
		b.c.models = append(b.c.models, acc)
	}
	return nil
}

func (b *builder) compileTemplates() error {
	b.tmplByName = map[string]int{}
	if len(b.s.Templates) == 0 {
		return specErr("templates", "no host templates")
	}
	for i := range b.s.Templates {
		t := &b.s.Templates[i]
		p := fmt.Sprintf("templates[%d]", i)
		if t.Name == "" {
			return specErr(p+".name", "empty template name")
		}
		if _, dup := b.tmplByName[t.Name]; dup {
			return specErr(p+".name", "duplicate template %q", t.Name)
		}
		ct, err := b.compileTemplate(t, p)
		if err != nil {
			return err
		}
		b.tmplByName[t.Name] = len(b.c.templates)
		b.c.templates = append(b.c.templates, ct)
	}
	return nil
}

func (b *builder) compileTemplate(t *HostTemplate, p string) (compiledTemplate, error) {
	ct := compiledTemplate{name: t.Name, cpu: t.CPUMilli, mem: t.MemoryMiB, model: NoModel, nGPU: t.GPUs, spec: t}
	if t.CPUMilli < 0 || t.CPUMilli > MaxCPUMilli {
		return ct, specErr(p+".cpuMilli", "CPU %d milli-cores out of range [0, %d]", t.CPUMilli, int64(MaxCPUMilli))
	}
	if t.MemoryMiB < 0 || t.MemoryMiB > MaxMemoryMiB {
		return ct, specErr(p+".memoryMiB", "memory %d MiB out of range [0, %d]", t.MemoryMiB, int64(MaxMemoryMiB))
	}
	if t.GPUs < 0 || t.GPUs > MaxGPUsPerHost {
		return ct, specErr(p+".gpus", "%d GPUs out of range [0, %d]", t.GPUs, MaxGPUsPerHost)
	}
	switch {
	case t.GPUs > 0 && t.Accelerator == "":
		return ct, specErr(p+".accelerator", "a template with GPUs needs an accelerator model")
	case t.GPUs == 0 && t.Accelerator != "":
		return ct, specErr(p+".accelerator", "accelerator %q set on a template with no GPUs", t.Accelerator)
	case t.Accelerator != "":
		m, ok := b.modelByName[t.Accelerator]
		if !ok {
			return ct, specErr(p+".accelerator", "unknown accelerator model %q", t.Accelerator)
		}
		ct.model = m
	}
	if len(t.NUMA) > MaxNUMAPerHost {
		return ct, specErr(p+".numa", "%d NUMA nodes; at most %d", len(t.NUMA), MaxNUMAPerHost)
	}
	ct.gpuAnc = make([][]int32, t.GPUs)
	placed := make([]string, t.GPUs) // path where each GPU was placed
	numa := t.NUMA
	implicit := len(numa) == 0
	if implicit {
		all := make([]int, t.GPUs)
		for i := range all {
			all[i] = i
		}
		numa = []NUMASpec{{ID: 0, PCIe: []PCIeSpec{{GPUs: all}}}}
	}
	seenNUMA := map[int]bool{}
	for ni, n := range numa {
		np := fmt.Sprintf("%s.numa[%d]", p, ni)
		if n.ID < 0 || n.ID > 1<<16 {
			return ct, specErr(np+".id", "NUMA id %d out of range", n.ID)
		}
		if seenNUMA[n.ID] {
			return ct, specErr(np+".id", "duplicate NUMA id %d", n.ID)
		}
		seenNUMA[n.ID] = true
		numaIdx := int32(len(ct.nodes))
		ct.roots = append(ct.roots, numaIdx)
		ct.nodes = append(ct.nodes, tnode{kind: KindNUMA, name: fmt.Sprintf("numa%d", n.ID), parent: -1})
		for bi := range n.PCIe {
			bp := fmt.Sprintf("%s.pcie[%d]", np, bi)
			if implicit {
				bp = p + ".gpus"
			}
			name := fmt.Sprintf("numa%d/pci%d", n.ID, bi)
			if err := ct.addPCIe(&n.PCIe[bi], bp, name, numaIdx, 0, []int32{numaIdx}, placed); err != nil {
				return ct, err
			}
		}
	}
	for g := 0; g < t.GPUs; g++ {
		if placed[g] == "" {
			return ct, specErr(p+".numa", "GPU %d appears in no PCIe position", g)
		}
	}
	// Children lists and per-node GPU sets.
	ct.kids = make([][]int32, len(ct.nodes))
	for i := range ct.nodes {
		if par := ct.nodes[i].parent; par >= 0 {
			ct.kids[par] = append(ct.kids[par], int32(i))
		}
	}
	for g := 0; g < t.GPUs; g++ {
		for _, n := range ct.gpuAnc[g] {
			ct.nodes[n].gpus = append(ct.nodes[n].gpus, int32(g))
		}
	}
	// Host-local fabrics.
	ct.gpuFab = make([]int32, t.GPUs)
	for i := range ct.gpuFab {
		ct.gpuFab[i] = -1
	}
	kindCount := map[string]int{}
	localNames := map[string]bool{} // NUMA and fabric domain names, which must differ
	for _, n := range ct.nodes {
		localNames[n.name] = true
	}
	for fi, f := range t.Fabrics {
		fp := fmt.Sprintf("%s.fabrics[%d]", p, fi)
		if f.Kind == "" {
			return ct, specErr(fp+".kind", "empty fabric kind")
		}
		if strings.ContainsAny(f.Kind, " /\t") {
			return ct, specErr(fp+".kind", "fabric kind %q may not contain white space or '/'", f.Kind)
		}
		if len(f.GPUs) == 0 {
			return ct, specErr(fp+".gpus", "a fabric domain needs at least one GPU")
		}
		if err := checkBandwidth(f.BandwidthGBps); err != nil {
			return ct, specErr(fp+".bandwidthGBps", "%v", err)
		}
		tf := tfabric{kind: f.Kind, bw: f.BandwidthGBps}
		if tf.bw == 0 {
			tf.bw = defaultFabricBW(f.Kind)
		}
		tf.name = fmt.Sprintf("%s%d", f.Kind, kindCount[f.Kind])
		kindCount[f.Kind]++
		if localNames[tf.name] {
			return ct, specErr(fp+".kind", "fabric kind %q names the domain %q, which the host already has", f.Kind, tf.name)
		}
		localNames[tf.name] = true
		for gi, g := range f.GPUs {
			gp := fmt.Sprintf("%s.gpus[%d]", fp, gi)
			if g < 0 || g >= t.GPUs {
				return ct, specErr(gp, "GPU %d out of range [0, %d)", g, t.GPUs)
			}
			if prev := ct.gpuFab[g]; prev >= 0 {
				name := tf.name // listed twice in this domain
				if int(prev) < len(ct.fabric) {
					name = ct.fabric[prev].name
				}
				return ct, specErr(gp, "GPU %d is already in fabric domain %s", g, name)
			}
			ct.gpuFab[g] = int32(fi)
			tf.gpus = append(tf.gpus, int32(g))
		}
		slices.Sort(tf.gpus)
		ct.fabric = append(ct.fabric, tf)
	}
	return ct, nil
}

func defaultFabricBW(kind string) float64 {
	if bw, ok := DefaultFabricBandwidth[kind]; ok {
		return bw
	}
	return DefaultFabricBandwidth[""]
}

// addPCIe adds a host bridge (depth 0) or switch (depth ≥ 1) and its subtree.
// chain holds the local ancestors of this node, outermost first.
func (ct *compiledTemplate) addPCIe(n *PCIeSpec, p, name string, parent int32, depth int, chain []int32, placed []string) error {
	if depth > MaxPCIeDepth {
		return specErr(p, "PCIe tree deeper than %d switches", MaxPCIeDepth)
	}
	kind := KindHostBridge
	if depth > 0 {
		kind = KindPCIeSwitch
	}
	idx := int32(len(ct.nodes))
	ct.nodes = append(ct.nodes, tnode{kind: kind, name: name, parent: parent, depth: int8(depth)})
	chain = append(slices.Clip(chain), idx)
	for gi, g := range n.GPUs {
		gp := fmt.Sprintf("%s.gpus[%d]", p, gi)
		if g < 0 || g >= ct.nGPU {
			return specErr(gp, "GPU %d out of range [0, %d)", g, ct.nGPU)
		}
		if placed[g] != "" {
			return specErr(gp, "GPU %d is already placed at %s", g, placed[g])
		}
		placed[g] = gp
		anc := make([]int32, len(chain))
		for i := range chain {
			anc[i] = chain[len(chain)-1-i]
		}
		ct.gpuAnc[g] = anc
	}
	for si := range n.Switches {
		sp := fmt.Sprintf("%s.switches[%d]", p, si)
		sn := fmt.Sprintf("%s/sw%d", name, si)
		if err := ct.addPCIe(&n.Switches[si], sp, sn, idx, depth+1, chain, placed); err != nil {
			return err
		}
	}
	return nil
}

// assign splits n children over the parents, perParent each (0: all under
// one parent, or an equal split). It returns the parent index of each child.
func assign(n, parents, perParent int, path, what string) ([]int, error) {
	if perParent < 0 {
		return nil, specErr(path+".perParent", "negative count %d", perParent)
	}
	if perParent == 0 {
		if parents == 1 {
			perParent = n
		} else if n%parents != 0 {
			return nil, specErr(path+".parent", "%d %s do not split evenly over %d parents; set perParent", n, what, parents)
		} else {
			perParent = n / parents
		}
	}
	if perParent == 0 {
		perParent = 1
	}
	need := (n + perParent - 1) / perParent
	if need > parents {
		return nil, specErr(path+".parent", "%d %s at %d per parent need %d parents; the pattern names %d", n, what, perParent, need, parents)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i / perParent
	}
	return out, nil
}

func (b *builder) switches() error {
	b.swByName = map[string]int{}
	type pending struct {
		sw      int
		parents []string
		path    string
	}
	var todo []pending
	for gi, g := range b.s.Switches {
		p := fmt.Sprintf("switches[%d]", gi)
		names, err := ExpandNames(g.Name)
		if err != nil {
			return specErr(p+".name", "%v", err)
		}
		if strings.ContainsRune(g.Name, '/') {
			return specErr(p+".name", "switch names may not contain '/'")
		}
		lvl, ok := b.levelByName[g.Level]
		if !ok {
			return specErr(p+".level", "unknown level %q", g.Level)
		}
		var parentOf []int
		var parentNames []string
		switch {
		case lvl == 0 && g.Parent != "":
			return specErr(p+".parent", "switches at the outermost level %q have no parent", g.Level)
		case lvl > 0 && g.Parent == "":
			return specErr(p+".parent", "switches at level %q need a parent at level %q", g.Level, b.s.Levels[lvl-1].Name)
		case g.Parent != "":
			parentNames, err = ExpandNames(g.Parent)
			if err != nil {
				return specErr(p+".parent", "%v", err)
			}
			parentOf, err = assign(len(names), len(parentNames), g.PerParent, p, "switches")
			if err != nil {
				return err
			}
		case g.PerParent != 0:
			return specErr(p+".perParent", "perParent without parent")
		}
		for i, name := range names {
			if _, dup := b.swByName[name]; dup {
				return specErr(p+".name", "duplicate switch %q", name)
			}
			if name == b.s.Name {
				return specErr(p+".name", "switch %q has the name of the cluster", name)
			}
			b.swByName[name] = len(b.sw)
			b.sw = append(b.sw, bswitch{name: name, level: lvl, parent: -1, path: p})
			if parentOf != nil {
				todo = append(todo, pending{sw: len(b.sw) - 1, parents: []string{parentNames[parentOf[i]]}, path: p + ".parent"})
			}
		}
	}
	for _, t := range todo {
		sw := &b.sw[t.sw]
		pi, ok := b.swByName[t.parents[0]]
		if !ok {
			return specErr(t.path, "unknown parent switch %q", t.parents[0])
		}
		if pi == t.sw {
			return specErr(t.path, "switch %q is its own parent (a cycle)", sw.name)
		}
		if b.sw[pi].level != sw.level-1 {
			return specErr(t.path, "parent %q is at level %q; switches at %q need a parent at %q",
				t.parents[0], b.s.Levels[b.sw[pi].level].Name, b.s.Levels[sw.level].Name, b.s.Levels[sw.level-1].Name)
		}
		sw.parent = pi
		b.sw[pi].kids = append(b.sw[pi].kids, t.sw)
	}
	return nil
}

func (b *builder) hostGroups() error {
	b.hostNames = map[string]int{}
	inner := len(b.s.Levels) - 1
	if len(b.s.Hosts) == 0 {
		return specErr("hosts", "no hosts")
	}
	uuids := map[string]string{}
	for gi, g := range b.s.Hosts {
		p := fmt.Sprintf("hosts[%d]", gi)
		names, err := ExpandNames(g.Name)
		if err != nil {
			return specErr(p+".name", "%v", err)
		}
		if strings.ContainsRune(g.Name, '/') {
			return specErr(p+".name", "host names may not contain '/'")
		}
		ti, ok := b.tmplByName[g.Template]
		if !ok {
			return specErr(p+".template", "unknown template %q", g.Template)
		}
		var parentOf []int
		var parentNames []string
		switch {
		case inner < 0 && g.Parent != "":
			return specErr(p+".parent", "the cluster has no network levels, so hosts have no parent")
		case inner >= 0 && g.Parent == "":
			return specErr(p+".parent", "hosts need a parent switch at level %q", b.s.Levels[inner].Name)
		case g.Parent != "":
			parentNames, err = ExpandNames(g.Parent)
			if err != nil {
				return specErr(p+".parent", "%v", err)
			}
			parentOf, err = assign(len(names), len(parentNames), g.PerParent, p, "hosts")
			if err != nil {
				return err
			}
		case g.PerParent != 0:
			return specErr(p+".perParent", "perParent without parent")
		}
		if len(g.GPUs) > 0 {
			if len(names) != 1 {
				return specErr(p+".gpuIDs", "GPU identities need a single host, not a pattern of %d", len(names))
			}
			seen := map[int]bool{}
			for ii := range g.GPUs {
				id := &b.s.Hosts[gi].GPUs[ii]
				ip := fmt.Sprintf("%s.gpuIDs[%d]", p, ii)
				if id.Index < 0 || id.Index >= b.c.templates[ti].nGPU {
					return specErr(ip+".index", "GPU index %d out of range [0, %d)", id.Index, b.c.templates[ti].nGPU)
				}
				if seen[id.Index] {
					return specErr(ip+".index", "duplicate GPU index %d", id.Index)
				}
				seen[id.Index] = true
				if id.UUID != "" {
					if prev, dup := uuids[id.UUID]; dup {
						return specErr(ip+".uuid", "UUID %s already used at %s", id.UUID, prev)
					}
					uuids[id.UUID] = ip
				}
				if id.BusID != "" {
					norm, err := NormalizeBusID(id.BusID)
					if err != nil {
						return specErr(ip+".busID", "%v", err)
					}
					id.BusID = norm
				}
			}
		}
		for i, name := range names {
			if _, dup := b.hostNames[name]; dup {
				return specErr(p+".name", "duplicate host %q", name)
			}
			if name == b.s.Name {
				return specErr(p+".name", "host %q has the name of the cluster", name)
			}
			if _, clash := b.swByName[name]; clash {
				return specErr(p+".name", "host %q has the name of a switch", name)
			}
			h := bhost{name: name, tmpl: ti, parent: -1, path: p, fabric: -1}
			if len(g.GPUs) > 0 {
				h.ids = b.s.Hosts[gi].GPUs
			}
			if parentOf != nil {
				pn := parentNames[parentOf[i]]
				si, ok := b.swByName[pn]
				if !ok {
					return specErr(p+".parent", "unknown parent switch %q", pn)
				}
				if b.sw[si].level != inner {
					return specErr(p+".parent", "parent %q is at level %q; hosts need a parent at %q",
						pn, b.s.Levels[b.sw[si].level].Name, b.s.Levels[inner].Name)
				}
				h.parent = si
				b.sw[si].hosts = append(b.sw[si].hosts, len(b.bh))
			}
			b.hostNames[name] = len(b.bh)
			b.bh = append(b.bh, h)
		}
	}
	if len(b.bh) > math.MaxInt32/MaxGPUsPerHost {
		return specErr("hosts", "too many hosts (%d)", len(b.bh))
	}
	return nil
}

// NormalizeBusID returns a PCI bus ID in sysfs form: lower case with a
// 4-digit domain ("0000:18:00.0"). NVML reports 8-digit domains
// ("00000000:18:00.0"); both are accepted.
func NormalizeBusID(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return "", fmt.Errorf("bus ID %q is not DOMAIN:BUS:DEVICE.FUNCTION", s)
	}
	dom = strings.TrimLeft(dom, "0")
	if len(dom) > 4 || !isHex(dom) {
		return "", fmt.Errorf("bus ID %q has a bad domain", s)
	}
	for len(dom) < 4 {
		dom = "0" + dom
	}
	bus, df, _ := strings.Cut(rest, ":")
	dev, fn, ok := strings.Cut(df, ".")
	if !ok || len(bus) != 2 || len(dev) != 2 || len(fn) != 1 || !isHex(bus) || !isHex(dev) || !isHex(fn) {
		return "", fmt.Errorf("bus ID %q is not DOMAIN:BUS:DEVICE.FUNCTION", s)
	}
	return dom + ":" + bus + ":" + dev + "." + fn, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// assemble lays out domains, hosts and GPUs in depth-first order.
func (b *builder) assemble() {
	c := b.c
	nLvl := len(b.s.Levels)
	// Host order: DFS over the network tree.
	order := make([]int, 0, len(b.bh))
	netOrder := make([]int, 0, len(b.sw))
	var visit func(si int)
	visit = func(si int) {
		netOrder = append(netOrder, si)
		for _, k := range b.sw[si].kids {
			visit(k)
		}
		order = append(order, b.sw[si].hosts...)
	}
	if nLvl == 0 {
		for i := range b.bh {
			order = append(order, i)
		}
	} else {
		for si := range b.sw {
			if b.sw[si].level == 0 {
				visit(si)
			}
		}
	}
	// Count.
	nGPU := 0
	nIntra := 0
	nIntraMembers := 0
	nAnc := 0
	nHostFab := 0
	for _, hi := range order {
		t := &c.templates[b.bh[hi].tmpl]
		nGPU += t.nGPU
		nIntra += len(t.nodes)
		for _, n := range t.nodes {
			nIntraMembers += len(n.gpus)
		}
		for g := 0; g < t.nGPU; g++ {
			nAnc += len(t.gpuAnc[g]) + nLvl + 2
		}
		nHostFab += len(t.fabric)
	}
	nDomains := 1 + len(netOrder) + len(order) + nIntra
	// Room to grow: hosts joining live (Apply) append to these arrays, and
	// a first join should not copy all of them.
	c.domains = make([]domain, 0, slack(nDomains+nHostFab))
	c.hosts = make([]host, len(order), slack(len(order)))
	c.gpus = make([]gpu, nGPU, slack(nGPU))
	c.anc = make([]DomainID, 0, slack(nAnc))
	c.members = make([]GPUID, nGPU, slack(nGPU+nIntraMembers+nGPU))
	for i := range nGPU {
		c.members[i] = GPUID(i)
	}
	c.levelDomains = make([][]DomainID, nLvl+3)
	// Root and network domains.
	c.domains = append(c.domains, domain{kind: KindCluster, level: c.LevelCluster(), name: c.name, parent: NoDomain, host: NoHost})
	c.levelDomains[c.LevelCluster()] = []DomainID{0}
	swDomain := make([]DomainID, len(b.sw))
	for _, si := range netOrder {
		sw := &b.sw[si]
		par := DomainID(0)
		if sw.parent >= 0 {
			par = swDomain[sw.parent]
		}
		d := DomainID(len(c.domains))
		swDomain[si] = d
		lvl := c.netLevel(sw.level)
		c.domains = append(c.domains, domain{kind: KindNetwork, level: lvl, name: sw.name, parent: par, host: NoHost})
		c.levelDomains[lvl] = append(c.levelDomains[lvl], d)
	}
	// Hosts.
	hostOf := make([]HostID, len(b.bh))
	gpuNext := GPUID(0)
	hostDomains := make([]DomainID, len(order))
	for hid, bi := range order {
		bh := &b.bh[bi]
		hostOf[bi] = HostID(hid)
		t := &c.templates[bh.tmpl]
		par := DomainID(0)
		if bh.parent >= 0 {
			par = swDomain[bh.parent]
		}
		hd := DomainID(len(c.domains))
		hostDomains[hid] = hd
		c.domains = append(c.domains, domain{kind: KindHost, level: LevelHost, name: bh.name, parent: par, host: HostID(hid),
			gpuLo: int32(gpuNext), gpuHi: int32(gpuNext) + int32(t.nGPU), hostLo: HostID(hid), hostHi: HostID(hid + 1)})
		c.hosts[hid] = host{name: bh.name, domain: hd, parent: par, gpuLo: gpuNext, nGPU: int32(t.nGPU),
			cpuMilli: t.cpu, memMiB: t.mem, model: t.model, template: int32(bh.tmpl)}
		// Intra-host domains.
		base := DomainID(len(c.domains))
		for ni := range t.nodes {
			n := &t.nodes[ni]
			par := hd
			if n.parent >= 0 {
				par = base + DomainID(n.parent)
			}
			lo := int32(len(c.members))
			for _, lg := range n.gpus {
				c.members = append(c.members, gpuNext+GPUID(lg))
			}
			c.domains = append(c.domains, domain{kind: n.kind, level: -1, depth: n.depth, name: n.name, parent: par,
				host: HostID(hid), gpuLo: lo, gpuHi: int32(len(c.members))})
		}
		// GPUs and their ancestors.
		for lg := 0; lg < t.nGPU; lg++ {
			g := gpuNext + GPUID(lg)
			x := &c.gpus[g]
			x.host = HostID(hid)
			x.index = int32(lg)
			x.fabric = NoDomain
			c.appendAncestors(x, t, lg, base, hd)
		}
		for _, id := range bh.ids {
			x := &c.gpus[gpuNext+GPUID(id.Index)]
			x.uuid = id.UUID
			x.busID = id.BusID
		}
		gpuNext += GPUID(t.nGPU)
	}
	c.levelDomains[LevelHost] = hostDomains
	// Host-local fabric domains.
	for hid := range order {
		h := &c.hosts[hid]
		t := &c.templates[h.template]
		for fi := range t.fabric {
			f := &t.fabric[fi]
			d := DomainID(len(c.domains))
			lo := int32(len(c.members))
			for _, lg := range f.gpus {
				g := h.gpuLo + GPUID(lg)
				c.members = append(c.members, g)
				c.gpus[g].fabric = d
			}
			c.domains = append(c.domains, domain{kind: KindFabric, level: LevelFabric, name: h.name + "/" + f.name,
				parent: NoDomain, host: HostID(hid), gpuLo: lo, gpuHi: int32(len(c.members)),
				fabricKind: f.kind, bandwidth: f.bw})
			c.levelDomains[LevelFabric] = append(c.levelDomains[LevelFabric], d)
		}
	}
	// Host and GPU ranges of the tree domains above hosts, bottom up: hosts
	// are in DFS order, so each network domain covers a contiguous range.
	for i := range c.domains {
		if c.domains[i].kind == KindCluster || c.domains[i].kind == KindNetwork {
			c.domains[i].hostLo, c.domains[i].hostHi = -1, -1
		}
	}
	for hid := range c.hosts {
		h := &c.hosts[hid]
		for d := h.parent; d != NoDomain; d = c.domains[d].parent {
			x := &c.domains[d]
			if x.hostLo < 0 {
				x.hostLo = HostID(hid)
				x.gpuLo = int32(h.gpuLo)
			}
			x.hostHi = HostID(hid + 1)
			x.gpuHi = int32(h.gpuLo) + h.nGPU
		}
	}
	for i := range c.domains {
		x := &c.domains[i]
		if x.hostLo < 0 { // an empty switch
			x.hostLo, x.hostHi, x.gpuLo, x.gpuHi = 0, 0, 0, 0
		}
	}
	b.hostOf = hostOf
}

func (b *builder) fabricGroups() error {
	c := b.c
	seen := map[string]bool{}
	for gi, g := range b.s.Fabrics {
		p := fmt.Sprintf("fabrics[%d]", gi)
		names, hostNames, domOf, bw, err := checkFabricGroup(&g, p)
		if err != nil {
			return err
		}
		members := make([][]GPUID, len(names))
		for i, hn := range hostNames {
			bi, ok := b.hostNames[hn]
			if !ok {
				return specErr(p+".hosts", "unknown host %q", hn)
			}
			if prev := b.bh[bi].fabric; prev >= 0 {
				return specErr(p+".hosts", "host %q is already in fabrics[%d]", hn, prev)
			}
			b.bh[bi].fabric = gi
			hid := b.hostOf[bi]
			h := &c.hosts[hid]
			for g := h.gpuLo; g < h.gpuLo+GPUID(h.nGPU); g++ {
				if f := c.gpus[g].fabric; f != NoDomain {
					return specErr(p+".hosts", "GPU %s is already in fabric domain %s", c.GPUName(g), c.domains[f].name)
				}
				members[domOf[i]] = append(members[domOf[i]], g)
			}
		}
		for i, name := range names {
			_, isHost := b.hostNames[name]
			_, isSw := b.swByName[name]
			if seen[name] || isHost || isSw || name == b.s.Name {
				return specErr(p+".name", "duplicate domain name %q", name)
			}
			seen[name] = true
			d := DomainID(len(c.domains))
			m := members[i]
			slices.Sort(m)
			lo := int32(len(c.members))
			c.members = append(c.members, m...)
			for _, g := range m {
				c.gpus[g].fabric = d
			}
			c.domains = append(c.domains, domain{kind: KindFabric, level: LevelFabric, name: name, parent: NoDomain,
				host: NoHost, gpuLo: lo, gpuHi: int32(len(c.members)), fabricKind: g.Kind, bandwidth: bw,
				clusterUUID: g.ClusterUUID, cliqueID: g.CliqueID})
			c.levelDomains[LevelFabric] = append(c.levelDomains[LevelFabric], d)
		}
	}
	return nil
}

func (b *builder) finish() {
	c := b.c
	// Children lists, in ID order.
	counts := make([]int32, len(c.domains)+1)
	for i := range c.domains {
		if p := c.domains[i].parent; p != NoDomain {
			counts[p+1]++
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	c.children = make([]DomainID, counts[len(counts)-1], slack(int(counts[len(counts)-1])))
	fill := slices.Clone(counts)
	for i := range c.domains {
		if p := c.domains[i].parent; p != NoDomain {
			c.children[fill[p]] = DomainID(i)
			fill[p]++
		}
	}
	for i := range c.domains {
		c.domains[i].childLo, c.domains[i].childHi = counts[i], counts[i+1]
	}
	if len(c.netLvls) > 0 {
		for i := range c.domains {
			c.domains[i].leafLo, c.domains[i].leafHi = -1, -1
		}
		for pos, leaf := range c.levelDomains[LevelHost+1] {
			for d := leaf; d != NoDomain; d = c.domains[d].parent {
				x := &c.domains[d]
				if x.leafLo < 0 {
					x.leafLo = int32(pos)
				}
				x.leafHi = int32(pos + 1)
			}
		}
		for i := range c.domains {
			if c.domains[i].leafLo < 0 {
				c.domains[i].leafLo, c.domains[i].leafHi = 0, 0
			}
		}
	}
	c.hostByName = make(map[string]HostID, len(c.hosts))
	for i := range c.hosts {
		c.hostByName[c.hosts[i].name] = HostID(i)
	}
	c.domainByName = make(map[string]DomainID, len(c.domains)-len(c.anc)/8)
	for i := range c.domains {
		x := &c.domains[i]
		if x.kind == KindNUMA || x.kind == KindHostBridge || x.kind == KindPCIeSwitch {
			x.name = c.hosts[x.host].name + "/" + x.name
		}
		c.domainByName[x.name] = DomainID(i)
	}
}

// slack is the capacity Build gives an array of n: a sixteenth more, so
// that the first hosts to join live do not copy the cluster.
func slack(n int) int { return n + n/16 + 16 }

// checkFabricGroup checks a multi-host fabric group (at path p) and
// expands it: the domain names, the host names, the domain of each host,
// and the bandwidth with its default filled in. Build and live changes
// (Apply) share it.
func checkFabricGroup(g *FabricGroup, p string) (names, hostNames []string, domOf []int, bw float64, err error) {
	if names, err = ExpandNames(g.Name); err != nil {
		return nil, nil, nil, 0, specErr(p+".name", "%v", err)
	}
	if strings.ContainsRune(g.Name, '/') {
		return nil, nil, nil, 0, specErr(p+".name", "fabric domain names may not contain '/'")
	}
	if g.Kind == "" {
		return nil, nil, nil, 0, specErr(p+".kind", "empty fabric kind")
	}
	if err := checkBandwidth(g.BandwidthGBps); err != nil {
		return nil, nil, nil, 0, specErr(p+".bandwidthGBps", "%v", err)
	}
	if hostNames, err = ExpandNames(g.Hosts); err != nil {
		return nil, nil, nil, 0, specErr(p+".hosts", "%v", err)
	}
	if g.PerDomain < 0 {
		return nil, nil, nil, 0, specErr(p+".perDomain", "negative count %d", g.PerDomain)
	}
	if domOf, err = assign(len(hostNames), len(names), g.PerDomain, p, "hosts"); err != nil {
		var se *SpecError
		if errors.As(err, &se) {
			se.Path = p + ".perDomain"
		}
		return nil, nil, nil, 0, err
	}
	bw = g.BandwidthGBps
	if bw == 0 {
		bw = defaultFabricBW(g.Kind)
	}
	return names, hostNames, domOf, bw, nil
}

// appendAncestors files the ancestors of x, GPU lg of a host of template
// t whose host domain is hd and intra-host domains start at base: its
// PCIe switches, host bridge and NUMA node, then hd and its parents up to
// the root, innermost first; and notes its NUMA node and bridge. Build and
// live changes (Apply) share it.
func (c *Cluster) appendAncestors(x *gpu, t *compiledTemplate, lg int, base, hd DomainID) {
	x.ancLo = int32(len(c.anc))
	for _, ln := range t.gpuAnc[lg] {
		d := base + DomainID(ln)
		c.anc = append(c.anc, d)
		switch t.nodes[ln].kind {
		case KindNUMA:
			x.numa = d
		case KindHostBridge:
			x.bridge = d
		}
	}
	for d := hd; d != NoDomain; d = c.domains[d].parent {
		c.anc = append(c.anc, d)
	}
	x.ancN = int32(len(c.anc)) - x.ancLo
}
