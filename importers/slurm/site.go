package slurm

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// Site is a Slurm site's configuration as read from its files.
type Site struct {
	Conf     *Conf
	Topology *Topology // nil: no topology file (a flat network)
	Gres     *GresConf // nil: no gres.conf (GPU counts from Gres= only)
	// Assoc, when the directory has one, is the association tree
	// (assoc.txt: the output of sacctmgr show assoc -P).
	Assoc *Assoc
	// Warnings from every file, in the order read.
	Warnings []Warning
}

// ReadDir imports the Slurm configuration in dir: slurm.conf (required),
// topology.yaml or topology.conf, gres.conf and assoc.txt (each optional).
func ReadDir(dir string) (*Site, error) {
	s := &Site{}
	c, w, err := ReadConf(filepath.Join(dir, "slurm.conf"))
	if err != nil {
		return nil, err
	}
	s.Conf, s.Warnings = c, append(s.Warnings, w...)
	for _, name := range []string{"topology.yaml", "topology.conf"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		t, w, err := ReadTopology(p)
		if err != nil {
			return nil, err
		}
		s.Topology, s.Warnings = t, append(s.Warnings, w...)
		break
	}
	if g, w, err := ReadGres(filepath.Join(dir, "gres.conf")); err == nil {
		s.Gres, s.Warnings = g, append(s.Warnings, w...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if a, w, err := ReadAssoc(filepath.Join(dir, "assoc.txt")); err == nil {
		s.Assoc, s.Warnings = a, append(s.Warnings, w...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s, nil
}

// Spec builds the gpusched cluster of the site, and adds to s.Warnings what
// the cluster file cannot say (a node with GPUs of two types, nodes outside
// the topology, …).
//
// Hosts are the nodes in slurm.conf order with one template per distinct
// shape (CPUs, memory, GPU model and count, NUMA and NVLink layout from
// gres.conf). GPU i of a host is Slurm's GRES index i. Accelerator models
// are the gres Type (or "gpu" when untyped).
func (s *Site) Spec() (topology.Spec, error) {
	c := s.Conf
	var local warnings
	w := &local
	defer func() { s.addOnce(local) }()
	name := c.ClusterName
	if name == "" {
		name = "slurm"
	}
	spec := topology.Spec{Version: topology.SpecVersion, Name: name}
	tmplIdx := map[string]string{} // canonical key → template name
	models := map[string]bool{}
	hostTmpl := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		t, err := s.template(n, w)
		if err != nil {
			return topology.Spec{}, err
		}
		key := templateKey(t)
		tn, ok := tmplIdx[key]
		if !ok {
			tn = "t" + strconv.Itoa(len(spec.Templates)+1)
			if t.Accelerator != "" {
				tn += "-" + t.Accelerator + "x" + strconv.Itoa(t.GPUs)
			}
			t.Name = tn
			tmplIdx[key] = tn
			spec.Templates = append(spec.Templates, t)
			if t.Accelerator != "" && !models[t.Accelerator] {
				models[t.Accelerator] = true
				spec.Accelerators = append(spec.Accelerators, topology.AcceleratorSpec{Model: t.Accelerator, Vendor: "nvidia"})
			}
		}
		hostTmpl[i] = tn
	}
	parents, err := s.network(&spec, w)
	if err != nil {
		return topology.Spec{}, err
	}
	for i, n := range c.Nodes {
		spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: n.Name, Template: hostTmpl[i], Parent: parents[n.Name]})
	}
	return spec, nil
}

// addOnce appends the warnings s does not hold yet (Spec may run several
// times).
func (s *Site) addOnce(ws []Warning) {
	for _, w := range ws {
		if !slices.Contains(s.Warnings, w) {
			s.Warnings = append(s.Warnings, w)
		}
	}
}

// Cluster builds the site's Spec into a Cluster.
func (s *Site) Cluster() (*topology.Cluster, error) {
	sp, err := s.Spec()
	if err != nil {
		return nil, err
	}
	cl, err := topology.Build(sp)
	if err != nil {
		return nil, &Error{File: s.Conf.File, Msg: "the imported cluster does not build: " + err.Error()}
	}
	return cl, nil
}

func templateKey(t topology.HostTemplate) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(t.CPUMilli, 10) + "/" + strconv.FormatInt(t.MemoryMiB, 10) + "/" + t.Accelerator + "/" + strconv.Itoa(t.GPUs))
	for _, n := range t.NUMA {
		b.WriteString("|n" + n.CPUs)
		for _, p := range n.PCIe {
			for _, g := range p.GPUs {
				b.WriteString("," + strconv.Itoa(g))
			}
		}
	}
	for _, f := range t.Fabrics {
		b.WriteString("|f")
		for _, g := range f.GPUs {
			b.WriteString("," + strconv.Itoa(g))
		}
	}
	return b.String()
}

// template is the host shape of node n.
func (s *Site) template(n Node, w *warnings) (topology.HostTemplate, error) {
	t := topology.HostTemplate{CPUMilli: int64(n.CPUs) * 1000, MemoryMiB: n.RealMemory}
	count, types := n.GPUs()
	gpus := s.Gres.GPUsOf(n.Name)
	if s.Gres != nil && count > 0 && len(gpus) == 0 && !strings.EqualFold(s.Gres.AutoDetect, "off") {
		// Devices found at runtime: trust slurm.conf's count.
	} else if s.Gres != nil && len(gpus) > 0 && int64(len(gpus)) != count {
		return t, errAt(s.Gres.File, gpus[0].Line, "NodeName", "node %s: gres.conf declares %d GPUs, slurm.conf line %d says Gres=gpu:%d", n.Name, len(gpus), n.Line, count)
	}
	if count == 0 {
		return t, nil
	}
	t.GPUs = int(count)
	if len(gpus) > 0 {
		types = types[:0]
		for _, g := range gpus {
			if !slices.Contains(types, g.Type) {
				types = append(types, g.Type)
			}
		}
	}
	model := types[0]
	if len(types) > 1 {
		w.add(s.Conf.File, n.Line, "Gres", "node %s has GPUs of types %s; a gpusched host has one model, so all %d are modelled as %s", n.Name, strings.Join(types, ","), count, typeName(model))
	}
	t.Accelerator = typeName(model)
	if len(gpus) == 0 {
		return t, nil
	}
	// NUMA nodes: one per distinct Cores list, in order of first use.
	var numaCPUs []string
	numaOf := make([]int, len(gpus))
	anyCores := false
	for i, g := range gpus {
		anyCores = anyCores || g.Cores != ""
		j := slices.Index(numaCPUs, g.Cores)
		if j < 0 {
			j = len(numaCPUs)
			numaCPUs = append(numaCPUs, g.Cores)
		}
		numaOf[i] = j
	}
	if anyCores {
		for j, cpus := range numaCPUs {
			ns := topology.NUMASpec{ID: j, CPUs: cpus}
			var ids []int
			for i := range gpus {
				if numaOf[i] == j {
					ids = append(ids, i)
				}
			}
			ns.PCIe = []topology.PCIeSpec{{GPUs: ids}}
			t.NUMA = append(t.NUMA, ns)
		}
	}
	// NVLink domains: GPUs joined by Links > 0 (union-find).
	root := make([]int, len(gpus))
	for i := range root {
		root[i] = i
	}
	find := func(i int) int {
		for root[i] != i {
			root[i] = root[root[i]]
			i = root[i]
		}
		return i
	}
	linked := false
	for i, g := range gpus {
		for j, v := range g.Links {
			if v > 0 && j < len(gpus) && j != i {
				root[find(i)] = find(j)
				linked = true
			}
		}
	}
	if linked {
		var groups [][]int
		var heads []int
		for i := range gpus {
			r := find(i)
			k := slices.Index(heads, r)
			if k < 0 {
				heads = append(heads, r)
				groups = append(groups, nil)
				k = len(heads) - 1
			}
			groups[k] = append(groups[k], i)
		}
		for _, g := range groups {
			if len(g) > 1 {
				t.Fabrics = append(t.Fabrics, topology.HostFabricSpec{Kind: topology.FabricNVLink, GPUs: g})
			}
		}
	}
	return t, nil
}

func typeName(t string) string {
	if t == "" {
		return "gpu"
	}
	return t
}

// network adds the levels and switches of the site's topology to spec and
// returns each node's innermost switch.
func (s *Site) network(spec *topology.Spec, w *warnings) (map[string]string, error) {
	parents := map[string]string{}
	t := s.Topology
	if t == nil || t.Kind == "flat" {
		return parents, nil
	}
	if p := s.Conf.TopologyPlugin; p != "" && p != "topology/"+t.Kind {
		w.add(s.Conf.File, 0, "TopologyPlugin", "%s, but %s describes a %s topology; the file is imported", p, t.File, t.Kind)
	}
	known := map[string]bool{}
	for _, n := range s.Conf.Nodes {
		known[n.Name] = true
	}
	if t.Kind == "block" {
		spec.Levels = []topology.LevelSpec{{Name: "block"}}
		for _, b := range t.Blocks {
			spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: b.Name, Level: "block"})
			for _, n := range b.Nodes {
				if !known[n] {
					w.add(t.File, b.Line, "Nodes", "node %s is not in slurm.conf (ignored)", n)
					continue
				}
				parents[n] = b.Name
			}
		}
		return parents, s.unplaced(spec, parents, []string{"block"}, w)
	}
	// Tree: height of each switch (leaves 0), parent of each.
	idx := map[string]int{}
	for i, x := range t.Switches {
		idx[x.Name] = i
	}
	parentOf := map[string]string{}
	for _, x := range t.Switches {
		for _, c := range x.Switches {
			parentOf[c] = x.Name
		}
		if len(x.Switches) > 0 && len(x.Nodes) > 0 {
			w.add(t.File, x.Line, "Nodes", "switch %s has both switches and nodes below it; its nodes get a pass-through leaf", x.Name)
		}
	}
	height := make([]int, len(t.Switches))
	var h func(i, depth int) int
	h = func(i, depth int) int {
		if depth > len(t.Switches) {
			return 0 // cycles were rejected by check
		}
		best := 0
		for _, c := range t.Switches[i].Switches {
			best = max(best, h(idx[c], depth+1)+1)
		}
		height[i] = best
		return best
	}
	top := 0
	for i := range t.Switches {
		top = max(top, h(i, 0))
	}
	levels := make([]string, top+1) // outermost first
	for k := range levels {
		levels[k] = "tier" + strconv.Itoa(top-k)
	}
	for _, l := range levels {
		spec.Levels = append(spec.Levels, topology.LevelSpec{Name: l})
	}
	// A switch at height hh whose parent is more than one level above gets a
	// chain of pass-through switches; so do roots below the top level.
	added := map[string]bool{}
	emit := func(name string, hh int, parent string, parentH int) {
		up := parent
		for lvl := parentH - 1; lvl > hh; lvl-- {
			pn := name + "~tier" + strconv.Itoa(lvl)
			if !added[pn] {
				added[pn] = true
				sg := topology.SwitchGroup{Name: pn, Level: "tier" + strconv.Itoa(lvl), Parent: up}
				spec.Switches = append(spec.Switches, sg)
			}
			up = pn
		}
		spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: name, Level: "tier" + strconv.Itoa(hh), Parent: up})
	}
	// Emit outermost first so that parents precede children.
	order := make([]int, len(t.Switches))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return height[b] - height[a] })
	for _, i := range order {
		x := t.Switches[i]
		p, ok := parentOf[x.Name]
		ph := top + 1
		if ok {
			ph = height[idx[p]]
		} else {
			p = ""
		}
		if !ok && height[i] < top {
			w.add(t.File, x.Line, "SwitchName", "switch %s has no parent and is below the top level; it gets pass-through switches up to tier%d", x.Name, top)
		}
		emit(x.Name, height[i], p, ph)
	}
	for _, i := range order {
		x := t.Switches[i]
		leaf := x.Name
		if height[i] > 0 && len(x.Nodes) > 0 {
			leaf = x.Name + "~nodes"
			emit(leaf, 0, x.Name, height[i])
		}
		for _, n := range x.Nodes {
			if !known[n] {
				w.add(t.File, x.Line, "Nodes", "node %s is not in slurm.conf (ignored)", n)
				continue
			}
			parents[n] = leaf
		}
	}
	return parents, s.unplaced(spec, parents, levels, w)
}

// unplaced puts the nodes no switch or block names under a chain of
// switches of their own ("unswitched") and warns: Slurm does not let a job
// span them and other nodes.
func (s *Site) unplaced(spec *topology.Spec, parents map[string]string, levels []string, w *warnings) error {
	var missing []string
	for _, n := range s.Conf.Nodes {
		if _, ok := parents[n.Name]; !ok {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	w.add(s.Topology.File, 0, "Nodes", "%d nodes are in no switch or block (%s…); they are put under a switch of their own", len(missing), missing[0])
	up := ""
	for _, l := range levels {
		n := "unswitched-" + l
		spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: n, Level: l, Parent: up})
		up = n
	}
	for _, n := range missing {
		parents[n] = up
	}
	return nil
}
