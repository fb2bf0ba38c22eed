package topology

import (
	"fmt"
	"strconv"

	"pgregory.net/rapid"
)

// This file holds a random Spec generator shared by the property tests
// (driven by rapid) and the fuzz tests (driven by the fuzzer's bytes).

// chooser is a source of bounded choices.
type chooser interface {
	// intn returns an integer in [lo, hi].
	intn(lo, hi int, label string) int
}

// rapidChooser draws choices from a rapid test, so failures shrink.
type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(lo, hi int, label string) int {
	if hi <= lo {
		return lo
	}
	return rapid.IntRange(lo, hi).Draw(c.t, label)
}

// byteChooser turns fuzz bytes into choices deterministically; once the
// bytes run out every choice is its lower bound, so any input decodes into
// a small spec.
type byteChooser struct {
	b []byte
	i int
}

func (c *byteChooser) intn(lo, hi int, _ string) int {
	if hi <= lo || c.i >= len(c.b) {
		return lo
	}
	v := int(c.b[c.i])
	c.i++
	if span := hi - lo + 1; span > 256 && c.i < len(c.b) {
		v = v<<8 | int(c.b[c.i])
		c.i++
	}
	return lo + v%(hi-lo+1)
}

// specGen generates Specs. Valid ones always build; with bad set it may
// corrupt any field, for fuzzing Build's validation.
type specGen struct {
	ch  chooser
	bad bool
}

func (g *specGen) n(lo, hi int, label string) int { return g.ch.intn(lo, hi, label) }

func (g *specGen) coin(label string) bool { return g.n(0, 1, label) == 1 }

// corrupt reports, in bad mode only, whether to spoil the next field.
func (g *specGen) corrupt(label string) bool { return g.bad && g.n(0, 11, label) == 0 }

// num returns a count in [lo, hi], or in bad mode now and then a value
// out of range.
func (g *specGen) num(lo, hi int, label string) int {
	if g.corrupt(label + "!") {
		return []int{-1, hi + 1, lo - 1, 1 << 30, -1 << 31, 0}[g.n(0, 5, label+"?")]
	}
	return g.n(lo, hi, label)
}

// name returns valid, or in bad mode now and then something else.
func (g *specGen) name(valid, label string) string {
	if g.corrupt(label + "!") {
		return []string{"", "a b", "x/y", "dup", "h0-1", "s0-1", "[1-", "n[2-1]", "n[0-999999999]", "c", "nvlink", "t0", "m0", valid + "]"}[g.n(0, 13, label+"?")]
	}
	return valid
}

// pattern names n things prefix1..prefixN (one name when n is 1), or the
// numbers lo..hi of them.
func pattern(prefix string, lo, hi int) string {
	if lo == hi {
		return prefix + strconv.Itoa(lo)
	}
	return fmt.Sprintf("%s[%d-%d]", prefix, lo, hi)
}

// pnode is a PCIe tree node being generated.
type pnode struct {
	gpus []int
	kids []*pnode
}

func (p *pnode) spec() PCIeSpec {
	s := PCIeSpec{GPUs: p.gpus}
	for _, k := range p.kids {
		s.Switches = append(s.Switches, k.spec())
	}
	return s
}

// spec generates one Spec: 0–3 network levels with random fan-outs (some
// switches empty), 1–3 accelerator models (some MIG-capable), 1–4 host
// templates with random NUMA/PCIe trees and host fabrics, 1–3 host groups of
// 1–5 hosts under random ranges of switches, and multi-host fabric groups.
func (g *specGen) spec() Spec {
	s := Spec{Version: SpecVersion, Name: "c"}
	if g.corrupt("version") {
		s.Version = 2
	}
	s.Name = g.name("c", "cluster name")

	// Network levels and switches, outermost first.
	nLvl := g.num(0, 3, "levels")
	var nSw []int
	for i := 0; i < nLvl && i < 10; i++ {
		lv := LevelSpec{Name: g.name("l"+strconv.Itoa(i), "level name")}
		if g.coin("level bw?") {
			lv.BandwidthGBps = float64(g.num(1, 6, "level bw")) * 5
		}
		s.Levels = append(s.Levels, lv)
		n := g.n(1, 3, "switches")
		if i > 0 {
			n = g.n(1, 3*nSw[i-1], "switches")
		}
		sg := SwitchGroup{Name: g.name(pattern(fmt.Sprintf("s%d-", i), 1, n), "switch name"), Level: g.name(lv.Name, "switch level")}
		if i > 0 {
			parents := nSw[i-1]
			sg.Parent = g.name(pattern(fmt.Sprintf("s%d-", i-1), 1, parents), "switch parent")
			sg.PerParent = g.perParent(n, parents)
		}
		s.Switches = append(s.Switches, sg)
		nSw = append(nSw, n)
	}

	// Accelerator models.
	nModels := g.n(1, 3, "models")
	for i := 0; i < nModels; i++ {
		a := AcceleratorSpec{Model: g.name("m"+strconv.Itoa(i), "model name"), Vendor: "v", MemoryMiB: int64(g.num(0, 4, "memory")) * 1024}
		switch g.n(0, 3, "mig") {
		case 1: // a real geometry
			a.MIG = presetAccelerator("A100-SXM4-80GB").MIG
		case 2: // a random one
			a.MIG = g.mig()
		}
		s.Accelerators = append(s.Accelerators, a)
	}

	// Host templates.
	nTmpl := g.n(1, 4, "templates")
	for i := 0; i < nTmpl; i++ {
		s.Templates = append(s.Templates, g.template(i, nModels))
	}

	// Host groups.
	nGroups := g.n(1, 3, "host groups")
	for i := 0; i < nGroups; i++ {
		n := g.n(1, 5, "hosts")
		hg := HostGroup{Name: g.name(pattern(fmt.Sprintf("h%d-", i), 1, n), "host name"), Template: g.name("t"+strconv.Itoa(g.n(0, nTmpl-1, "template")), "host template")}
		if nLvl > 0 {
			inner := nSw[len(nSw)-1]
			lo := g.n(1, inner, "parent lo")
			hi := g.n(lo, inner, "parent hi")
			hg.Parent = g.name(pattern(fmt.Sprintf("s%d-", nLvl-1), lo, hi), "host parent")
			hg.PerParent = g.perParent(n, hi-lo+1)
		} else if g.corrupt("parent") {
			hg.Parent = "s0-1"
		}
		if n == 1 && g.coin("gpu ids") {
			t := s.Templates[0]
			for _, tt := range s.Templates {
				if tt.Name == hg.Template {
					t = tt
				}
			}
			for k := 0; k < t.GPUs && k < 16; k++ {
				id := GPUIdentity{Index: g.num(k, k, "gpu id index"), UUID: fmt.Sprintf("GPU-%d-%d", i, k), BusID: fmt.Sprintf("0000:%02x:00.0", k)}
				if g.corrupt("bus id") {
					id.BusID = "zz"
				}
				if g.corrupt("uuid") {
					id.UUID = "GPU-0-0"
				}
				hg.GPUs = append(hg.GPUs, id)
			}
		}
		s.Hosts = append(s.Hosts, hg)

		// A multi-host fabric over this group when its template has no
		// host-local fabric.
		var tmpl *HostTemplate
		for k := range s.Templates {
			if s.Templates[k].Name == hg.Template {
				tmpl = &s.Templates[k]
			}
		}
		if tmpl != nil && (len(tmpl.Fabrics) == 0 || g.bad) && g.n(0, 2, "fabric group") == 0 {
			per := g.n(1, n, "per domain")
			need := (n + per - 1) / per
			domains := need + g.n(0, 1, "extra domains")
			fg := FabricGroup{Name: g.name(pattern(fmt.Sprintf("f%d-", i), 1, domains), "fabric name"), Kind: FabricMNNVL,
				Hosts: g.name(hg.Name, "fabric hosts"), PerDomain: g.num(per, per, "per domain"), CliqueID: uint32(i)}
			if domains == 1 || n%domains == 0 && g.coin("equal split") {
				fg.PerDomain = 0
				if domains > 1 {
					fg.PerDomain = g.num(0, 0, "per domain")
				}
			}
			if g.coin("fabric bw") {
				fg.BandwidthGBps = float64(g.num(100, 900, "fabric bw"))
			}
			s.Fabrics = append(s.Fabrics, fg)
		}
	}
	return s
}

// perParent picks a PerParent for n children over parents: 0 (an equal
// split) when that works, else a count that fits.
func (g *specGen) perParent(n, parents int) int {
	least := (n + parents - 1) / parents
	if (parents == 1 || n%parents == 0) && g.coin("even split") {
		return g.num(0, 0, "per parent")
	}
	return g.num(least, n, "per parent")
}

func (g *specGen) mig() *MIGSpec {
	slots := g.num(1, 8, "mig slots")
	m := &MIGSpec{Slots: slots}
	nProf := g.num(1, 4, "mig profiles")
	for i := 0; i < nProf && i < 70; i++ {
		size := g.num(1, max(slots, 1), "mig size")
		p := MIGProfileSpec{Name: g.name(fmt.Sprintf("p%d", i), "profile name"), Size: size, MemoryMiB: 1024}
		for st := 0; st+size <= slots && st < 20; st++ {
			if g.coin("mig start") {
				p.Starts = append(p.Starts, g.num(st, st, "mig start"))
			}
		}
		if len(p.Starts) == 0 && !g.corrupt("no starts") {
			p.Starts = []int{0}
		}
		m.Profiles = append(m.Profiles, p)
	}
	return m
}

// template generates host template i: GPUs spread over a random NUMA /
// host bridge / PCIe switch tree (or the implicit layout), some GPUs in
// host fabric domains.
func (g *specGen) template(i, nModels int) HostTemplate {
	t := HostTemplate{
		Name:      g.name("t"+strconv.Itoa(i), "template name"),
		CPUMilli:  int64(g.num(0, 64, "cpu")) * 1000,
		MemoryMiB: int64(g.num(0, 64, "mem")) * 1024,
		GPUs:      g.num(0, 8, "gpus"),
	}
	if t.GPUs > 0 || g.corrupt("accelerator") {
		t.Accelerator = g.name("m"+strconv.Itoa(g.n(0, nModels-1, "accelerator")), "accelerator")
	}
	if t.GPUs < 0 || t.GPUs > 16 {
		return t // Build rejects it; do not generate a huge tree
	}
	if g.n(0, 3, "implicit numa") > 0 {
		nNUMA := g.n(1, 3, "numa nodes")
		var slots []*pnode
		var numaBridges [][]*pnode // the bridges of each NUMA node
		for k := 0; k < nNUMA; k++ {
			n := NUMASpec{ID: g.num(k*3, k*3+2, "numa id"), CPUs: "0-3"}
			var bridges []*pnode
			for b := g.n(0, 2, "bridges"); b > 0; b-- {
				br := &pnode{}
				bridges = append(bridges, br)
				slots = g.pcieTree(br, 0, slots)
			}
			// GPUs go into the tree once it is drawn, below.
			t.NUMA = append(t.NUMA, n)
			numaBridges = append(numaBridges, bridges)
		}
		if len(slots) == 0 {
			// No PCIe node at all: put one bridge on the first NUMA node.
			br := &pnode{}
			numaBridges[0] = append(numaBridges[0], br)
			slots = append(slots, br)
		}
		for gpu := 0; gpu < t.GPUs; gpu++ {
			if g.corrupt("skip gpu") {
				continue
			}
			slot := slots[g.n(0, len(slots)-1, "gpu slot")]
			slot.gpus = append(slot.gpus, g.num(gpu, gpu, "gpu index"))
		}
		for k := range t.NUMA {
			for _, br := range numaBridges[k] {
				t.NUMA[k].PCIe = append(t.NUMA[k].PCIe, br.spec())
			}
		}
	}
	// Host fabric domains: each GPU joins one of nf domains or none.
	if nf := g.n(0, 2, "host fabrics"); nf > 0 && t.GPUs > 0 {
		members := make([][]int, nf)
		for gpu := 0; gpu < t.GPUs; gpu++ {
			if f := g.n(-1, nf-1, "fabric of gpu"); f >= 0 {
				members[f] = append(members[f], g.num(gpu, gpu, "fabric gpu"))
			}
		}
		kinds := []string{FabricNVSwitch, FabricNVLinkBridge, FabricHCCS, "custom"}
		for _, m := range members {
			if len(m) == 0 && !g.corrupt("empty fabric") {
				continue
			}
			f := HostFabricSpec{Kind: g.name(kinds[g.n(0, len(kinds)-1, "fabric kind")], "fabric kind"), GPUs: m}
			if g.coin("host fabric bw") {
				f.BandwidthGBps = float64(g.num(30, 900, "host fabric bw"))
			}
			t.Fabrics = append(t.Fabrics, f)
		}
	}
	return t
}

// pcieTree grows random switches below p (up to depth 3) and returns slots
// with p and its new descendants appended.
func (g *specGen) pcieTree(p *pnode, depth int, slots []*pnode) []*pnode {
	slots = append(slots, p)
	if depth >= 3 {
		return slots
	}
	for k := g.n(0, 2, "switches below"); k > 0; k-- {
		c := &pnode{}
		p.kids = append(p.kids, c)
		slots = g.pcieTree(c, depth+1, slots)
	}
	return slots
}
