package dra

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/internal/devname"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/topology/nvml"
)

// Options say how Build reads the objects.
type Options struct {
	// Name is the cluster's name; empty means "dra".
	Name string
	// Driver is the GPU driver's name; empty means "gpu.nvidia.com".
	Driver string
	// NetworkLabels are node label keys naming each node's switch at each
	// network level, outermost first (for example
	// "network.topology.kubernetes.io/block", then ".../rack"). Each key
	// is a level named by the key's last segment; every GPU node must
	// carry every key. Empty: a cluster without network levels.
	NetworkLabels []string
	// Models maps product names to model names before the built-in table
	// (nvml.ModelName).
	Models map[string]string
	// CPUMilli and MemoryMiB are a host's CPU and memory when no Node
	// object gives its allocatable ones.
	CPUMilli, MemoryMiB int64
}

// Result is a cluster built from ResourceSlices.
type Result struct {
	// Spec is the cluster: one host per node with GPUs of the driver.
	Spec topology.Spec
	// GPUs are the GPUs, by host in Spec order, then index.
	GPUs []GPU
	// MIG are the MIG devices published, by host, GPU and device name.
	MIG []MIGDevice
	// Notes say what was approximated or left out.
	Notes []string
}

// GPU ties a GPU of the Spec to its device in the slices.
type GPU struct {
	Host   string // node and host name
	Index  int    // GPU index on the host
	Pool   string // the slice's pool
	Device string // device name ("gpu-3")
	UUID   string
	// Health follows the device's taints (NoExecute: Failed; NoSchedule:
	// Draining); a MIG device's taints count for its GPU.
	Health topology.Health
	Taints []DeviceTaint
	// StaticMIG: the GPU is in static MIG mode, published only through
	// the MIG devices made on it (NVIDIA's driver without DynamicMIG);
	// Device is "" and its MIG devices are in Result.MIG.
	StaticMIG bool
}

// MIGDevice is a MIG device of the slices: a legal placement of a profile
// (partitionable devices) or an instance that exists (start -1 when the
// slice does not say where).
type MIGDevice struct {
	Host    string
	GPU     int
	Device  string
	Profile string
	Start   int
	Size    int
	Health  topology.Health
}

// node is one node's devices.
type node struct {
	name  string
	gpus  []*gpuDev
	migs  []*migDev
	file  string
	line  int
	info  *Node
	model string
}

// Build turns ResourceSlices (and the Nodes, for labels and allocatable
// CPU and memory) into a cluster spec:
//
//   - every node with devices of opts.Driver becomes a host; its "gpu"
//     devices are its GPUs, ordered by their index attribute (else minor,
//     else name). When a pool has slices of several generations, only the
//     newest counts.
//   - a GPU's model is its productName mapped by nvml.ModelName; its
//     memory the "memory" capacity (of the model's GPUs published whole:
//     a partitionable GPU publishes its largest MIG profile's, which
//     counts only when no GPU of the model is published whole); its
//     compute capability cudaComputeCapability.
//   - NUMA nodes come from resource.kubernetes.io/numaNode, host bridges
//     from resource.kubernetes.io/pcieRoot (GPUs without one each get a
//     bridge of their own, and GPUs without a NUMA node share node 0).
//   - NVLink: DRA publishes none, so a host whose model and GPU count are
//     those of a machine preset (dgx-h100, dgx-b200 …) takes the preset's
//     NVSwitch domain; other hosts have none (noted).
//   - a node's multi-node NVLink clique is its nvidia.com/gpu.clique label
//     or its GPUs' cliqueId attribute ("<cluster UUID>.<clique id>");
//     hosts of one clique form one mnnvl fabric domain.
//   - MIG: "mig" devices with memory-slice counters (partitionable
//     devices, one per legal placement) give the model's MIG geometry:
//     each profile's size and legal starts; "+me" profiles hold the
//     media extensions (topology.MediaExtensions). Without such devices a
//     model keeps its preset's geometry, if any. A GPU not published whose
//     partitionable MIG devices are (NVIDIA's dynamic MIG on an Ampere GPU
//     in MIG mode) is a GPU of its node all the same (parentsOf).
//   - static MIG (NVIDIA's driver without DynamicMIG): a GPU in MIG mode
//     is not published, only the MIG devices made on it (their memory
//     slices as capacities "memorySliceN"); each GPU their parentUUID
//     (else parentIndex, parentMinor, or the minor of their name
//     "gpu-M-mig-…") names and no GPU device is becomes a GPU of the
//     host (GPU.StaticMIG), ordered with the others by index or minor,
//     its model from their productName, its PCIe root theirs.
//   - device taints set GPU health (Result.GPUs; see ApplyHealth).
//
// Errors name the file, line and field. Build does no I/O.
func Build(objs *Objects, opts Options) (*Result, error) {
	driver := cmp.Or(opts.Driver, defaultDriverName)
	res := &Result{}
	note := func(format string, args ...any) { res.Notes = append(res.Notes, fmt.Sprintf(format, args...)) }
	nodeInfo := map[string]*Node{}
	for i := range objs.Nodes {
		nodeInfo[objs.Nodes[i].Name] = &objs.Nodes[i]
	}

	// The newest generation of each pool.
	newest := map[string]int64{}
	for _, s := range objs.Slices {
		if s.Spec.Driver == driver {
			key := s.Spec.Pool.Name
			newest[key] = max(newest[key], s.Spec.Pool.Generation)
		}
	}
	nodes := map[string]*node{}
	for si := range objs.Slices {
		s := &objs.Slices[si]
		if s.Spec.Driver != driver {
			continue
		}
		fail := func(field, format string, args ...any) error {
			return &Error{File: s.File, Line: s.Line, Field: sliceField(s.Name, field), Msg: fmt.Sprintf(format, args...)}
		}
		if s.Spec.AllNodes {
			note("slice %q: devices for all nodes skipped", s.Name)
			continue
		}
		if s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		if s.Spec.NodeName == "" {
			return nil, fail("spec.nodeName", "missing (GPU slices are per node)")
		}
		n := nodes[s.Spec.NodeName]
		if n == nil {
			n = &node{name: s.Spec.NodeName, file: s.File, line: s.Line, info: nodeInfo[s.Spec.NodeName]}
			nodes[n.name] = n
		}
		for di := range s.Spec.Devices {
			d := &s.Spec.Devices[di]
			a := attrs{m: d.Attributes, driver: driver, field: sliceField(s.Name, fmt.Sprintf("spec.devices[%d]", di))}
			if d.Name == "" {
				return nil, fail(fmt.Sprintf("spec.devices[%d].name", di), "missing")
			}
			typ, err := a.str(AttrType)
			if err != nil {
				return nil, &Error{File: s.File, Line: s.Line, Msg: err.Error()}
			}
			if typ == "" {
				typ = "gpu"
				if _, ok := a.get(AttrProfile); ok {
					typ = "mig"
				}
			}
			switch typ {
			case "gpu":
				g, err := readGPU(d, a)
				if err != nil {
					return nil, &Error{File: s.File, Line: s.Line, Msg: err.Error()}
				}
				g.pool, g.file, g.line = s.Spec.Pool.Name, s.File, s.Line
				n.gpus = append(n.gpus, g)
			case "mig":
				m, err := readMIG(d, a)
				if err != nil {
					return nil, &Error{File: s.File, Line: s.Line, Msg: err.Error()}
				}
				m.pool, m.file, m.line = s.Spec.Pool.Name, s.File, s.Line
				n.migs = append(n.migs, m)
			default:
				note("node %s: device %s of type %q skipped", n.name, d.Name, typ)
			}
		}
	}
	names := slices.Sorted(maps.Keys(nodes))
	var list []*node
	for _, name := range names {
		n := nodes[name]
		if err := parentsOf(n, driver); err != nil {
			return nil, err
		}
		staticParents(n)
		if len(n.gpus) == 0 {
			if len(n.migs) > 0 {
				return nil, &Error{File: n.file, Line: n.line, Field: "node " + n.name, Msg: "MIG devices but no GPU device (publish the GPUs, or the partitionable devices)"}
			}
			continue
		}
		if err := sortGPUs(n.gpus); err != nil {
			return nil, &Error{File: n.file, Line: n.line, Msg: err.Error()}
		}
		n.model, _ = nvml.ModelName(n.gpus[0].product, opts.Models)
		for _, g := range n.gpus[1:] {
			if m, _ := nvml.ModelName(g.product, opts.Models); m != n.model {
				return nil, &Error{File: g.file, Line: g.line, Field: g.field + ".attributes." + AttrProductName, Msg: fmt.Sprintf("%q on a node of %s GPUs; gpusched models one GPU model per host", g.product, n.model)}
			}
		}
		list = append(list, n)
	}
	if len(list) == 0 {
		return nil, &Error{Msg: fmt.Sprintf("no GPU devices of driver %s in the slices", driver)}
	}

	accs, err := accelerators(list, note)
	if err != nil {
		return nil, err
	}
	var inputs []nvml.Input
	for _, n := range list {
		in, err := hostSpec(n, accs[n.model], opts, note)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
		for _, g := range n.gpus {
			gr := GPU{Host: n.name, Index: g.index, Pool: g.pool, UUID: g.uuid, Health: g.health, Taints: g.taints, StaticMIG: g.static}
			if !g.static {
				gr.Device = g.dev.Name
			}
			res.GPUs = append(res.GPUs, gr)
		}
	}
	if err := attachMIG(list, res); err != nil {
		return nil, err
	}
	var network *nvml.Network
	if len(opts.NetworkLabels) > 0 {
		if network, err = networkOf(list, opts.NetworkLabels); err != nil {
			return nil, err
		}
	}
	spec, err := nvml.Assemble(inputs, nvml.AssembleOptions{Name: cmp.Or(opts.Name, "dra"), Network: network})
	if err != nil {
		return nil, err
	}
	res.Spec = spec
	return res, nil
}

// parentsOf adds to n a GPU for each GPU its partitionable MIG devices
// consume the counter set of, or name as parent, that n does not publish:
// NVIDIA's driver with dynamic MIG leaves out an Ampere GPU in MIG mode
// (its mode cannot change without a reset) and publishes its counter set
// and MIG devices only. The GPU takes the MIG device's attributes (its
// parent's: product, compute capability, PCIe root and bus ID), the
// parent UUID, and the minor of its counter set's name (gpu-<minor>-…),
// which also names its device.
func parentsOf(n *node, driver string) error {
	for _, m := range n.migs {
		if m.counterSet == "" || m.start < 0 || slices.ContainsFunc(n.gpus, func(g *gpuDev) bool {
			return g.counterSet == m.counterSet || m.parentUUID != "" && g.uuid == m.parentUUID
		}) {
			continue
		}
		g, err := readGPU(&Device{Name: strings.TrimSuffix(m.counterSet, "-counter-set"), Attributes: m.dev.Attributes}, attrs{m: m.dev.Attributes, driver: driver, field: m.field})
		if err != nil {
			return &Error{File: m.file, Line: m.line, Msg: err.Error()}
		}
		g.uuid, g.counterSet, g.pool, g.file, g.line = m.parentUUID, m.counterSet, m.pool, m.file, m.line
		n.gpus = append(n.gpus, g)
	}
	return nil
}

// accelerators describes each model once, from all its GPUs.
func accelerators(list []*node, note func(string, ...any)) (map[string]topology.AcceleratorSpec, error) {
	out := map[string]topology.AcceleratorSpec{}
	type prof struct {
		size, slices int
		mem          int64
		starts       []int
	}
	profs := map[string]map[string]*prof{}
	slots := map[string]int{}
	// memSeen: a GPU not partitioned gave the model's memory; partMem: the
	// largest a partitionable GPU publishes (NVIDIA's driver gives such a
	// GPU its largest MIG profile's capacities, not its own memory), the
	// model's memory only when no GPU of it is published whole.
	memSeen, partMem := map[string]bool{}, map[string]int64{}
	for _, n := range list {
		a, seen := out[n.model]
		if !seen {
			a = topology.AcceleratorSpec{Model: n.model, Vendor: "nvidia"}
			if p, ok := presetAccelerator(n.model); ok {
				a = p
			}
		}
		for _, g := range n.gpus {
			switch {
			case g.memMiB > 0 && g.counterSet != "":
				partMem[n.model] = max(partMem[n.model], g.memMiB)
			case g.memMiB > 0:
				if memSeen[n.model] && a.MemoryMiB != g.memMiB {
					return nil, &Error{File: g.file, Line: g.line, Field: g.field + ".capacity.memory", Msg: fmt.Sprintf("%d MiB, another %s has %d MiB", g.memMiB, n.model, a.MemoryMiB)}
				}
				a.MemoryMiB, memSeen[n.model] = g.memMiB, true
			}
			if cc := computeCapability(g.compute); cc != "" {
				a.ComputeCapability = cc
			}
			slots[n.model] = max(slots[n.model], g.slots)
		}
		if !memSeen[n.model] && partMem[n.model] > 0 {
			a.MemoryMiB = partMem[n.model]
		}
		out[n.model] = a
		for _, m := range n.migs {
			if m.start < 0 {
				continue
			}
			ps := profs[n.model]
			if ps == nil {
				ps = map[string]*prof{}
				profs[n.model] = ps
			}
			p := ps[m.profile]
			if p == nil {
				sl, _ := profileSlices(m.profile)
				p = &prof{size: m.size, slices: sl, mem: m.memMiB}
				ps[m.profile] = p
			}
			if p.size != m.size {
				return nil, &Error{File: m.file, Line: m.line, Field: m.field, Msg: fmt.Sprintf("profile %s takes %d memory slices here, %d elsewhere", m.profile, m.size, p.size)}
			}
			p.starts = append(p.starts, m.start)
			slots[n.model] = max(slots[n.model], m.start+m.size)
		}
	}
	for _, model := range slices.Sorted(maps.Keys(profs)) {
		a := out[model]
		mig := &topology.MIGSpec{Slots: slots[model]}
		for _, name := range slices.Sorted(maps.Keys(profs[model])) {
			p := profs[model][name]
			slices.Sort(p.starts)
			ps := topology.MIGProfileSpec{Name: name, Size: p.size, Starts: slices.Compact(p.starts), MemoryMiB: p.mem, ComputeSlices: p.slices}
			if strings.Contains(name, "+me") && !strings.Contains(name, "+me.") {
				ps.Exclusive = topology.MediaExtensions
			}
			mig.Profiles = append(mig.Profiles, ps)
		}
		// Base profiles first, then by size, slices, memory and name, as
		// NVML discovery orders them.
		slices.SortStableFunc(mig.Profiles, func(a, b topology.MIGProfileSpec) int {
			return cmp.Or(cmp.Compare(a.Exclusive, b.Exclusive), cmp.Compare(a.Size, b.Size), cmp.Compare(a.ComputeSlices, b.ComputeSlices),
				cmp.Compare(a.MemoryMiB, b.MemoryMiB), cmp.Compare(a.Name, b.Name))
		})
		a.MIG = mig
		out[model] = a
	}
	for _, model := range slices.Sorted(maps.Keys(out)) {
		if out[model].MIG != nil && profs[model] == nil {
			note("model %s: no partitionable MIG devices published; MIG geometry from the preset", model)
		}
	}
	return out, nil
}

// presetAccelerator returns the accelerator of a machine preset of the
// model.
func presetAccelerator(model string) (topology.AcceleratorSpec, bool) {
	for _, name := range topology.MachineNames() {
		if _, a, err := topology.MachineTemplate(name); err == nil && a.Model == model {
			return a, true
		}
	}
	return topology.AcceleratorSpec{}, false
}

// computeCapability turns a version ("9.0.0") into the model's form
// ("9.0").
func computeCapability(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// hostSpec is the one-host spec of a node.
func hostSpec(n *node, acc topology.AcceleratorSpec, opts Options, note func(string, ...any)) (nvml.Input, error) {
	cpu, mem := opts.CPUMilli, opts.MemoryMiB
	if n.info != nil && n.info.CPUMilli > 0 {
		cpu = n.info.CPUMilli
	}
	if n.info != nil && n.info.MemoryMiB > 0 {
		mem = n.info.MemoryMiB
	}
	if cpu == 0 || mem == 0 {
		note("node %s: no allocatable CPU or memory (no Node object, and Options gives none); jobs that ask for CPU or memory will not fit", n.name)
	}
	t := topology.HostTemplate{Name: n.model + "x" + strconv.Itoa(len(n.gpus)), CPUMilli: cpu, MemoryMiB: mem, Accelerator: n.model, GPUs: len(n.gpus)}
	// NUMA nodes, and host bridges by PCIe root.
	type bridge struct {
		root string
		gpus []int
	}
	numa := map[int][]*bridge{}
	unknownNUMA := false
	for _, g := range n.gpus {
		id := g.numa
		if id < 0 {
			id, unknownNUMA = 0, true
		}
		var b *bridge
		if g.pcieRoot != "" {
			for _, x := range numa[id] {
				if x.root == g.pcieRoot {
					b = x
				}
			}
		}
		if b == nil {
			b = &bridge{root: g.pcieRoot}
			numa[id] = append(numa[id], b)
		}
		b.gpus = append(b.gpus, g.index)
	}
	if unknownNUMA {
		note("node %s: GPUs without %s are on NUMA node 0", n.name, AttrNUMANode)
	}
	roots := map[string]int{}
	for _, id := range slices.Sorted(maps.Keys(numa)) {
		ns := topology.NUMASpec{ID: id}
		for _, b := range numa[id] {
			if b.root != "" {
				roots[b.root]++
			}
			ns.PCIe = append(ns.PCIe, topology.PCIeSpec{GPUs: b.gpus})
		}
		t.NUMA = append(t.NUMA, ns)
	}
	for _, r := range slices.Sorted(maps.Keys(roots)) {
		if roots[r] > 1 {
			return nvml.Input{}, &Error{File: n.file, Line: n.line, Field: "node " + n.name, Msg: fmt.Sprintf("PCIe root %s under two NUMA nodes", r)}
		}
	}
	// NVLink from the preset of the same shape.
	for _, name := range topology.MachineNames() {
		pt, pa, err := topology.MachineTemplate(name)
		if err == nil && pa.Model == n.model && pt.GPUs == len(n.gpus) && len(pt.Fabrics) > 0 {
			t.Fabrics = pt.Fabrics
			break
		}
	}
	if len(t.Fabrics) == 0 && len(n.gpus) > 1 && strings.Contains(n.model, "SXM") {
		note("node %s: %d %s GPUs and no preset of that shape; no NVLink domain inside the host", n.name, len(n.gpus), n.model)
	}
	t = t.Canonical()
	s := topology.Spec{Version: 1, Name: "dra", Accelerators: []topology.AcceleratorSpec{acc}, Templates: []topology.HostTemplate{t}}
	hg := topology.HostGroup{Name: n.name, Template: t.Name}
	for _, g := range n.gpus {
		bus := ""
		if g.busID != "" {
			b, err := topology.NormalizeBusID(g.busID)
			if err != nil {
				return nvml.Input{}, &Error{File: g.file, Line: g.line, Field: g.field + ".attributes." + AttrPCIBusID, Msg: err.Error()}
			}
			bus = b
		}
		hg.GPUs = append(hg.GPUs, topology.GPUIdentity{Index: g.index, UUID: g.uuid, BusID: bus})
	}
	s.Hosts = []topology.HostGroup{hg}
	clique, err := cliqueOf(n)
	if err != nil {
		return nvml.Input{}, err
	}
	if clique != "" {
		uuid, id, err := parseClique(clique)
		if err != nil {
			return nvml.Input{}, &Error{File: n.file, Line: n.line, Field: "node " + n.name + " clique", Msg: err.Error()}
		}
		short := strings.TrimPrefix(uuid, "GPU-")
		if len(short) > 8 {
			short = short[:8]
		}
		s.Fabrics = []topology.FabricGroup{{Name: fmt.Sprintf("mnnvl-%s-%d", short, id), Kind: topology.FabricMNNVL, Hosts: n.name, ClusterUUID: uuid, CliqueID: id}}
	}
	return nvml.Input{Name: n.file + ": node " + n.name, Spec: s}, nil
}

// cliqueOf returns the node's clique: its label, else its GPUs' attribute
// (which must agree).
func cliqueOf(n *node) (string, error) {
	c := ""
	if n.info != nil {
		c = n.info.Labels[LabelClique]
	}
	for _, g := range n.gpus {
		switch {
		case g.clique == "":
		case c == "":
			c = g.clique
		case g.clique != c:
			return "", &Error{File: g.file, Line: g.line, Field: g.field + ".attributes." + AttrCliqueID, Msg: fmt.Sprintf("%q, but the node's clique is %q", g.clique, c)}
		}
	}
	return c, nil
}

// parseClique reads "<cluster UUID>.<clique id>".
func parseClique(s string) (string, uint32, error) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return "", 0, fmt.Errorf("%q is not <cluster UUID>.<clique id>", s)
	}
	id, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not <cluster UUID>.<clique id>", s)
	}
	return s[:i], uint32(id), nil
}

// attachMIG ties MIG devices to their GPUs and lists them; their taints
// count for the GPU.
func attachMIG(list []*node, res *Result) error {
	gpuAt := map[string]int{} // host/index → res.GPUs index
	for i, g := range res.GPUs {
		gpuAt[g.Host+"/"+strconv.Itoa(g.Index)] = i
	}
	for _, n := range list {
		for _, m := range n.migs {
			parent := parentOf(n, m)
			if parent == nil {
				return &Error{File: m.file, Line: m.line, Field: m.field, Msg: "no GPU of the node is this MIG device's parent (by counter set, parentUUID, parentIndex or parentMinor)"}
			}
			res.MIG = append(res.MIG, MIGDevice{Host: n.name, GPU: parent.index, Device: m.dev.Name, Profile: m.profile, Start: m.start, Size: m.size, Health: m.health})
			gi := gpuAt[n.name+"/"+strconv.Itoa(parent.index)]
			if m.health > res.GPUs[gi].Health {
				res.GPUs[gi].Health = m.health
				res.GPUs[gi].Taints = append(res.GPUs[gi].Taints, m.taints...)
			}
		}
	}
	slices.SortStableFunc(res.MIG, func(a, b MIGDevice) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU), devname.Compare(a.Device, b.Device))
	})
	return nil
}

// networkOf builds the network levels from node labels.
func networkOf(list []*node, keys []string) (*nvml.Network, error) {
	net := &nvml.Network{}
	for _, k := range keys {
		lvl := k[strings.LastIndexByte(k, '/')+1:]
		net.Levels = append(net.Levels, topology.LevelSpec{Name: lvl})
	}
	parentOf := map[string]string{}
	levelOf := map[string]int{}
	hostsOf := map[string][]string{}
	var order []string
	for _, n := range list {
		if n.info == nil {
			return nil, &Error{File: n.file, Line: n.line, Field: "node " + n.name, Msg: "no Node object, so no network labels"}
		}
		parent := ""
		for li, k := range keys {
			v := n.info.Labels[k]
			if v == "" {
				return nil, &Error{File: n.info.File, Line: n.info.Line, Field: fmt.Sprintf("node %q: metadata.labels[%s]", n.name, k), Msg: "missing"}
			}
			if l, ok := levelOf[v]; ok && (l != li || parentOf[v] != parent) {
				return nil, &Error{File: n.info.File, Line: n.info.Line, Field: fmt.Sprintf("node %q: metadata.labels[%s]", n.name, k), Msg: fmt.Sprintf("switch %q is already at another place in the network", v)}
			}
			if _, ok := levelOf[v]; !ok {
				levelOf[v], parentOf[v] = li, parent
				order = append(order, v)
			}
			parent = v
		}
		hostsOf[parent] = append(hostsOf[parent], n.name)
	}
	// Parents before children: by level, then first appearance.
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(levelOf[a], levelOf[b]) })
	for _, sw := range order {
		net.Switches = append(net.Switches, nvml.NetworkSwitch{Name: sw, Level: net.Levels[levelOf[sw]].Name, Parent: parentOf[sw], Hosts: hostsOf[sw]})
	}
	return net, nil
}

// ApplyHealth sets the health of every GPU of r that is not Healthy in a
// ledger of the cluster built from r.Spec.
func (r *Result) ApplyHealth(c *topology.Cluster, l *topology.Ledger) error {
	return setHealth(c, l, r.GPUs, false)
}

// setHealth sets the health of gpus in l; with all, Healthy ones too.
func setHealth(c *topology.Cluster, l *topology.Ledger, gpus []GPU, all bool) error {
	for _, g := range gpus {
		if g.Health == topology.Healthy && !all {
			continue
		}
		h, ok := c.HostByName(g.Host)
		if !ok {
			return fmt.Errorf("dra: host %s is not in the cluster", g.Host)
		}
		first, n := c.HostGPUs(h)
		if g.Index >= n {
			return fmt.Errorf("dra: host %s has %d GPUs, not GPU %d", g.Host, n, g.Index)
		}
		if err := l.SetGPUHealth(first+topology.GPUID(g.Index), g.Health); err != nil {
			return err
		}
	}
	return nil
}

// staticParents adds to n a GPU for each parent of n's MIG devices that
// no GPU device of n is (static MIG: the driver publishes a GPU in MIG
// mode through its MIG devices only), named by their parentUUID, else
// parentIndex, parentMinor, or the minor of their name ("gpu-5-mig-…").
func staticParents(n *node) {
	for _, m := range n.migs {
		if m.counterSet != "" || m.start < 0 || parentOf(n, m) != nil {
			continue
		}
		minor := m.parentMinor
		if k, _, ok := strings.Cut(strings.TrimPrefix(m.dev.Name, "gpu-"), "-mig-"); ok && minor < 0 && strings.HasPrefix(m.dev.Name, "gpu-") {
			if v, err := strconv.Atoi(k); err == nil && v >= 0 && v < 1<<20 {
				minor = v
			}
		}
		if m.parentUUID == "" && m.parentIndex < 0 && minor < 0 {
			continue // (attachMIG says it has no parent)
		}
		if m.parentMinor < 0 && minor >= 0 {
			m.parentMinor = minor // (its name's: found by it below)
		}
		g := &gpuDev{dev: m.dev, pool: m.pool, field: m.field, file: m.file, line: m.line, index: m.parentIndex, minor: minor, uuid: m.parentUUID,
			product: m.product, pcieRoot: m.pcieRoot, numa: -1, static: true}
		if g.product == "" && len(n.gpus) > 0 {
			g.product = n.gpus[0].product
		}
		n.gpus = append(n.gpus, g)
	}
}

// parentOf returns m's GPU among n's: the one consuming its counter set,
// or its parentUUID, parentIndex or parentMinor names; nil when none is.
func parentOf(n *node, m *migDev) *gpuDev {
	for _, g := range n.gpus {
		switch {
		case m.counterSet != "" && g.counterSet == m.counterSet,
			m.parentUUID != "" && g.uuid == m.parentUUID,
			m.parentIndex >= 0 && g.index == m.parentIndex,
			m.parentMinor >= 0 && g.minor == m.parentMinor:
			return g
		}
	}
	return nil
}
