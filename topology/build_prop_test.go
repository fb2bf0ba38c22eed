package topology

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// fataler is what the checks need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// TestBuildProperties builds random valid specs and checks the cluster
// against a naive re-derivation from the spec and against its own
// documented structure.
func TestBuildProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := specGen{ch: rapidChooser{t}}
		s := g.spec()
		c, err := Build(s)
		if err != nil {
			t.Fatalf("valid spec rejected: %v\n%+v", err, s)
		}
		checkClusterStructure(t, c)
		checkAgainstSpec(t, c, s)
		if err := NewLedger(c).Check(); err != nil {
			t.Fatalf("fresh ledger: %v", err)
		}
	})
}

// checkClusterStructure checks that the queries of c agree with each
// other: ancestors with parents, children and GPU lists; GPUAt and HostAt
// with walking parents; contiguous host and GPU ranges; levels; names;
// symmetric links; and that the spec round-trips.
func checkClusterStructure(t fataler, c *Cluster) {
	t.Helper()
	nd := c.NumDomains()
	root := c.Root()
	if c.DomainKindOf(root) != KindCluster || c.DomainParent(root) != NoDomain || c.DomainName(root) != c.Name() {
		t.Fatalf("root %+v", c.Domain(root))
	}
	// Membership counted from the GPU side.
	members := make([]int, nd)
	for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
		h := c.GPUHost(g)
		first, n := c.HostGPUs(h)
		if g < first || g >= first+GPUID(n) || c.GPU(g).Index != int(g-first) {
			t.Fatalf("GPU %d: host %d has GPUs %d+%d, index %d", g, h, first, n, c.GPU(g).Index)
		}
		anc := c.Ancestors(g)
		if len(anc) < 3 || anc[len(anc)-1] != root {
			t.Fatalf("GPU %s: ancestors %v do not end at the root", c.GPUName(g), anc)
		}
		// Kinds: switches (depth falling), bridge, NUMA, host, networks, root.
		want := []DomainKind{}
		i := 0
		for i < len(anc) && c.DomainKindOf(anc[i]) == KindPCIeSwitch {
			want = append(want, KindPCIeSwitch)
			i++
		}
		want = append(want, KindHostBridge, KindNUMA, KindHost)
		for range c.NumLevels() - 3 {
			want = append(want, KindNetwork)
		}
		want = append(want, KindCluster)
		var kinds []DomainKind
		for _, d := range anc {
			kinds = append(kinds, c.DomainKindOf(d))
		}
		if !slices.Equal(kinds, want) {
			t.Fatalf("GPU %s: ancestor kinds %v, want %v", c.GPUName(g), kinds, want)
		}
		for j, d := range anc {
			members[d]++
			if !containsSorted(c.DomainGPUs(d), g) {
				t.Fatalf("GPU %s: not among the GPUs of its ancestor %s", c.GPUName(g), c.DomainName(d))
			}
			if j+1 < len(anc) {
				p := anc[j+1]
				if c.DomainParent(d) != p || !slices.Contains(c.DomainChildren(p), d) {
					t.Fatalf("GPU %s: ancestor %s has parent %d, want %s among whose children it is", c.GPUName(g), c.DomainName(d), c.DomainParent(d), c.DomainName(p))
				}
			}
			info := c.Domain(d)
			if info.Kind != KindCluster && info.Kind != KindNetwork && info.Host != h {
				t.Fatalf("GPU %s: ancestor %s belongs to host %d", c.GPUName(g), info.Name, info.Host)
			}
		}
		if anc[i+2] != c.HostDomain(h) {
			t.Fatalf("GPU %s: host ancestor %d, host domain %d", c.GPUName(g), anc[i+2], c.HostDomain(h))
		}
		if c.GPU(g).NUMA != anc[i+1] {
			t.Fatalf("GPU %s: NUMA %d, ancestor %d", c.GPUName(g), c.GPU(g).NUMA, anc[i+1])
		}
		// GPUAt against walking up from the host.
		d := c.HostDomain(h)
		for l := LevelHost; l <= c.LevelCluster(); l++ {
			if got := c.GPUAt(g, l); got != d {
				t.Fatalf("GPUAt(%s, %d) = %d, walking parents gives %d", c.GPUName(g), l, got, d)
			}
			d = c.DomainParent(d)
		}
		if d != NoDomain {
			t.Fatalf("GPU %s: %d levels but the tree is deeper", c.GPUName(g), c.NumLevels())
		}
		if c.GPUAt(g, LevelFabric) != c.GPUFabric(g) || c.GPUAt(g, -1) != NoDomain || c.GPUAt(g, c.LevelCluster()+1) != NoDomain {
			t.Fatalf("GPUAt(%s) outside the tree levels", c.GPUName(g))
		}
		if f := c.GPUFabric(g); f != NoDomain {
			members[f]++
			if c.DomainKindOf(f) != KindFabric || !containsSorted(c.DomainGPUs(f), g) {
				t.Fatalf("GPU %s: fabric %d", c.GPUName(g), f)
			}
		}
	}
	// Every domain: sorted GPU list of exactly its members, children
	// pointing back, host ranges matching HostAt.
	nChildren := 0
	for d := DomainID(0); int(d) < nd; d++ {
		info := c.Domain(d)
		gpus := c.DomainGPUs(d)
		if len(gpus) != members[d] || !slices.IsSorted(gpus) || len(slices.Compact(slices.Clone(gpus))) != len(gpus) {
			t.Fatalf("domain %s: GPUs %v, %d members", info.Name, gpus, members[d])
		}
		kids := c.DomainChildren(d)
		nChildren += len(kids)
		if !slices.IsSorted(kids) {
			t.Fatalf("domain %s: children %v not in ID order", info.Name, kids)
		}
		for _, k := range kids {
			if c.DomainParent(k) != d {
				t.Fatalf("domain %s: child %s has parent %d", info.Name, c.DomainName(k), c.DomainParent(k))
			}
		}
		if got, ok := c.DomainByName(info.Name); !ok || got != d {
			t.Fatalf("DomainByName(%q) = %d, %v; want %d", info.Name, got, ok, d)
		}
		lo, hi := c.DomainHosts(d)
		if lo != info.FirstHost || hi != info.EndHost {
			t.Fatalf("domain %s: DomainHosts %d-%d, Domain %d-%d", info.Name, lo, hi, info.FirstHost, info.EndHost)
		}
		switch info.Kind {
		case KindCluster, KindNetwork, KindHost:
			if info.Level < LevelHost || info.Level > c.LevelCluster() {
				t.Fatalf("domain %s at level %d", info.Name, info.Level)
			}
			var in []HostID
			for h := HostID(0); int(h) < c.NumHosts(); h++ {
				if c.HostAt(h, info.Level) == d {
					in = append(in, h)
				}
			}
			if len(in) != int(hi-lo) || len(in) > 0 && (in[0] != lo || in[len(in)-1] != hi-1) {
				t.Fatalf("domain %s: hosts %d-%d, HostAt finds %v", info.Name, lo, hi, in)
			}
			// Its GPUs are the contiguous GPU range of those hosts.
			if len(in) > 0 {
				first, _ := c.HostGPUs(lo)
				lastFirst, lastN := c.HostGPUs(hi - 1)
				if len(gpus) != int(lastFirst+GPUID(lastN)-first) || len(gpus) > 0 && (gpus[0] != first || gpus[len(gpus)-1] != lastFirst+GPUID(lastN)-1) {
					t.Fatalf("domain %s: GPUs %v not the range of hosts %d-%d", info.Name, gpus, lo, hi)
				}
			} else if len(gpus) != 0 {
				t.Fatalf("domain %s without hosts has GPUs %v", info.Name, gpus)
			}
		default:
			if lo != 0 || hi != 0 {
				t.Fatalf("domain %s (%v) has hosts %d-%d", info.Name, info.Kind, lo, hi)
			}
		}
		if info.Kind == KindFabric && (info.Level != LevelFabric || info.Parent != NoDomain || len(kids) != 0) {
			t.Fatalf("fabric domain %+v", info)
		}
	}
	if nChildren != nd-1-len(c.DomainsAt(LevelFabric)) {
		t.Fatalf("%d children in all, %d domains", nChildren, nd)
	}
	// Levels: DomainsAt lists every domain of a level once, in ID order.
	seen := 0
	for l := Level(0); l <= c.LevelCluster(); l++ {
		ds := c.DomainsAt(l)
		if !slices.IsSorted(ds) {
			t.Fatalf("DomainsAt(%d) not sorted", l)
		}
		for _, d := range ds {
			if c.Domain(d).Level != l {
				t.Fatalf("DomainsAt(%d) lists %s at level %d", l, c.DomainName(d), c.Domain(d).Level)
			}
		}
		seen += len(ds)
		if got, ok := c.LevelByName(c.LevelName(l)); !ok || got != l {
			t.Fatalf("LevelByName(LevelName(%d)) = %d, %v", l, got, ok)
		}
	}
	placed := 0
	for d := DomainID(0); int(d) < nd; d++ {
		if c.Domain(d).Level >= 0 {
			placed++
		}
	}
	if seen != placed || c.DomainsAt(-1) != nil || c.DomainsAt(c.LevelCluster()+1) != nil {
		t.Fatalf("DomainsAt covers %d domains, %d have a level", seen, placed)
	}
	// Hosts: names, HostAt walking parents, models.
	for h := HostID(0); int(h) < c.NumHosts(); h++ {
		info := c.Host(h)
		if got, ok := c.HostByName(info.Name); !ok || got != h || info.ID != h || c.HostName(h) != info.Name {
			t.Fatalf("host %d: name %q resolves to %d", h, info.Name, got)
		}
		d := info.Domain
		if c.DomainParent(d) != info.Parent || c.Domain(d).Host != h {
			t.Fatalf("host %s: domain %d parent %d", info.Name, d, info.Parent)
		}
		for l := LevelHost; l <= c.LevelCluster(); l++ {
			if got := c.HostAt(h, l); got != d {
				t.Fatalf("HostAt(%s, %d) = %d, walking parents gives %d", info.Name, l, got, d)
			}
			d = c.DomainParent(d)
		}
		if c.HostAt(h, LevelFabric) != NoDomain || c.HostAt(h, c.LevelCluster()+1) != NoDomain {
			t.Fatalf("HostAt(%s) outside the tree levels", info.Name)
		}
		if (info.NumGPUs == 0) != (info.Model == NoModel) || c.HostModel(h) != info.Model {
			t.Fatalf("host %s: %d GPUs of model %d", info.Name, info.NumGPUs, info.Model)
		}
		if info.CPUMilli != c.CPUMilli(h) || info.MemoryMiB != c.MemoryMiB(h) {
			t.Fatalf("host %s: CPU/memory disagree", info.Name)
		}
	}
	// Link is symmetric, and never better across hosts than inside.
	for a := GPUID(0); int(a) < c.NumGPUs(); a++ {
		for b := a; int(b) < c.NumGPUs(); b++ {
			la, lb := c.Link(a, b), c.Link(b, a)
			if la != lb {
				t.Fatalf("Link(%s, %s) = %+v, reverse %+v", c.GPUName(a), c.GPUName(b), la, lb)
			}
			if (a == b) != (la.Kind == LinkSelf) || (la.Kind == LinkNetwork) != (c.GPUHost(a) != c.GPUHost(b) && la.Kind != LinkFabric) {
				t.Fatalf("Link(%s, %s) = %+v", c.GPUName(a), c.GPUName(b), la)
			}
		}
	}
	// The normalised spec builds the same cluster.
	c2, err := Build(c.Spec())
	if err != nil {
		t.Fatalf("Build(c.Spec()): %v", err)
	}
	if !reflect.DeepEqual(c, c2) {
		t.Fatalf("Build(c.Spec()) differs from c")
	}
}

func containsSorted(s []GPUID, g GPUID) bool {
	_, ok := slices.BinarySearch(s, g)
	return ok
}

// naiveGPU is what the spec says about one GPU, derived without the
// builder: names of its ancestors and its fabric domain.
type naiveGPU struct {
	host     string
	index    int
	anc      []string // tree ancestors innermost first, through the root
	numa     string
	bridge   string
	switches []string // innermost first
	nets     []string // network switches innermost first
	fabric   string
	fabricBW float64
}

type naiveHost struct {
	name  string
	tmpl  *HostTemplate
	decl  int
	chain []int // declaration indices of its switches, outermost first
	nets  []string
}

// naiveAssign gives child i the parent index i/per, per as PerParent says.
func naiveAssign(i, n, parents, per int) int {
	if per == 0 {
		if parents == 1 {
			return 0
		}
		per = n / parents
	}
	return i / per
}

// naiveDerive re-derives hosts (in ID order) and GPUs from a valid spec.
func naiveDerive(t fataler, s Spec) ([]naiveHost, []naiveGPU) {
	t.Helper()
	expand := func(p string) []string {
		names, _, ok := naiveExpand(p, MaxExpandedNames)
		if !ok {
			t.Fatalf("pattern %q", p)
		}
		return names
	}
	type sw struct {
		parent string
		decl   int
	}
	switches := map[string]sw{}
	decl := 0
	for _, g := range s.Switches {
		names := expand(g.Name)
		var parents []string
		if g.Parent != "" {
			parents = expand(g.Parent)
		}
		for i, n := range names {
			x := sw{decl: decl}
			decl++
			if parents != nil {
				x.parent = parents[naiveAssign(i, len(names), len(parents), g.PerParent)]
			}
			switches[n] = x
		}
	}
	var hosts []naiveHost
	for _, g := range s.Hosts {
		names := expand(g.Name)
		var parents []string
		if g.Parent != "" {
			parents = expand(g.Parent)
		}
		var tmpl *HostTemplate
		for i := range s.Templates {
			if s.Templates[i].Name == g.Template {
				tmpl = &s.Templates[i]
			}
		}
		for i, n := range names {
			h := naiveHost{name: n, tmpl: tmpl, decl: len(hosts)}
			if parents != nil {
				for p := parents[naiveAssign(i, len(names), len(parents), g.PerParent)]; p != ""; p = switches[p].parent {
					h.nets = append(h.nets, p)
					h.chain = append([]int{switches[p].decl}, h.chain...)
				}
			}
			hosts = append(hosts, h)
		}
	}
	// Depth-first order of the network tree = lexicographic order of the
	// declaration chains, then declaration order.
	slices.SortStableFunc(hosts, func(a, b naiveHost) int {
		if c := slices.Compare(a.chain, b.chain); c != 0 {
			return c
		}
		return a.decl - b.decl
	})
	hostIdx := map[string]int{}
	for i, h := range hosts {
		hostIdx[h.name] = i
	}
	// Multi-host fabric domains by host.
	fabricOf := map[string]string{}
	fabricBW := map[string]float64{}
	for _, f := range s.Fabrics {
		names := expand(f.Name)
		hs := expand(f.Hosts)
		bw := f.BandwidthGBps
		if bw == 0 {
			bw = naiveDefaultFabricBW(f.Kind)
		}
		for i, h := range hs {
			fabricOf[h] = names[naiveAssign(i, len(hs), len(names), f.PerDomain)]
			fabricBW[h] = bw
		}
	}
	rootName := s.Name
	if rootName == "" {
		rootName = "cluster"
	}
	var gpus []naiveGPU
	for _, h := range hosts {
		t := h.tmpl
		local := make([]naiveGPU, t.GPUs)
		for i := range local {
			local[i] = naiveGPU{host: h.name, index: i, nets: h.nets}
		}
		if len(t.NUMA) == 0 {
			for i := range local {
				local[i].numa, local[i].bridge = h.name+"/numa0", h.name+"/numa0/pci0"
			}
		}
		var walk func(p PCIeSpec, name string, numa, bridge string, sws []string)
		walk = func(p PCIeSpec, name string, numa, bridge string, sws []string) {
			for _, g := range p.GPUs {
				local[g].numa, local[g].bridge = numa, bridge
				local[g].switches = slices.Clone(sws)
			}
			for i, k := range p.Switches {
				kn := name + "/sw" + strconv.Itoa(i)
				walk(k, kn, numa, bridge, append([]string{kn}, sws...))
			}
		}
		for _, n := range t.NUMA {
			numa := h.name + "/numa" + strconv.Itoa(n.ID)
			for b, br := range n.PCIe {
				bridge := numa + "/pci" + strconv.Itoa(b)
				walk(br, bridge, numa, bridge, nil)
			}
		}
		count := map[string]int{}
		for _, f := range t.Fabrics {
			name := h.name + "/" + f.Kind + strconv.Itoa(count[f.Kind])
			count[f.Kind]++
			bw := f.BandwidthGBps
			if bw == 0 {
				bw = naiveDefaultFabricBW(f.Kind)
			}
			for _, g := range f.GPUs {
				local[g].fabric, local[g].fabricBW = name, bw
			}
		}
		if f, ok := fabricOf[h.name]; ok {
			for i := range local {
				local[i].fabric, local[i].fabricBW = f, fabricBW[h.name]
			}
		}
		for i := range local {
			x := &local[i]
			x.anc = append(x.anc, x.switches...)
			x.anc = append(x.anc, x.bridge, x.numa, h.name)
			x.anc = append(x.anc, h.nets...)
			x.anc = append(x.anc, rootName)
		}
		gpus = append(gpus, local...)
	}
	return hosts, gpus
}

func naiveDefaultFabricBW(kind string) float64 {
	switch kind {
	case FabricNVSwitch:
		return 450
	case FabricMNNVL:
		return 900
	case FabricNVLink:
		return 150
	case FabricNVLinkBridge, FabricHCCS:
		return 56
	}
	return 100
}

// naiveLink derives the link between two GPUs from their naive records.
func naiveLink(s Spec, a, b naiveGPU) Link {
	nLvl := len(s.Levels)
	switch {
	case a.host == b.host && a.index == b.index:
		return Link{Kind: LinkSelf, Level: LevelFabric}
	case a.fabric != "" && a.fabric == b.fabric:
		return Link{Kind: LinkFabric, Level: LevelFabric, BandwidthGBps: a.fabricBW}
	case a.host != b.host:
		i := 0 // innermost network index the two share; nLvl = only the root
		for i < nLvl && a.nets[i] != b.nets[i] {
			i++
		}
		// Bandwidth: the level's own, else halve outward from the default
		// or the nearest level inside with a figure.
		bw := 0.0
		if i < nLvl {
			bw = s.Levels[nLvl-1-i].BandwidthGBps
		}
		if bw == 0 {
			bw = 8
			for x := 0; x < i; x++ {
				if v := s.Levels[nLvl-1-x].BandwidthGBps; v > 0 {
					bw = v
				}
				bw /= 2
			}
		}
		return Link{Kind: LinkNetwork, Level: LevelHost + 1 + Level(i), BandwidthGBps: bw}
	}
	pcie := map[LinkKind]float64{LinkPIX: 26, LinkPXB: 24, LinkPHB: 20, LinkNODE: 16, LinkSYS: 10}
	k := LinkPHB
	switch {
	case a.numa != b.numa:
		k = LinkSYS
	case a.bridge != b.bridge:
		k = LinkNODE
	case len(a.switches) > 0 && len(b.switches) > 0 && a.switches[0] == b.switches[0]:
		k = LinkPIX
	default:
		for _, x := range a.switches {
			if slices.Contains(b.switches, x) {
				k = LinkPXB
			}
		}
	}
	return Link{Kind: k, Level: LevelHost, BandwidthGBps: pcie[k]}
}

// checkAgainstSpec compares c with the naive derivation from s.
func checkAgainstSpec(t fataler, c *Cluster, s Spec) {
	t.Helper()
	hosts, gpus := naiveDerive(t, s)
	if c.NumHosts() != len(hosts) || c.NumGPUs() != len(gpus) {
		t.Fatalf("%d hosts, %d GPUs; the spec says %d, %d", c.NumHosts(), c.NumGPUs(), len(hosts), len(gpus))
	}
	for h, nh := range hosts {
		info := c.Host(HostID(h))
		model := ""
		if info.Model != NoModel {
			model = c.Model(info.Model).Model
		}
		if info.Name != nh.name || info.Template != nh.tmpl.Name || info.NumGPUs != nh.tmpl.GPUs || model != nh.tmpl.Accelerator ||
			info.CPUMilli != nh.tmpl.CPUMilli || info.MemoryMiB != nh.tmpl.MemoryMiB {
			t.Fatalf("host %d is %+v, the spec says %s of template %+v", h, info, nh.name, *nh.tmpl)
		}
	}
	for g, ng := range gpus {
		id := GPUID(g)
		var names []string
		for _, d := range c.Ancestors(id) {
			names = append(names, c.DomainName(d))
		}
		if !slices.Equal(names, ng.anc) || c.HostName(c.GPUHost(id)) != ng.host {
			t.Fatalf("GPU %d: ancestors %v, the spec says %v", g, names, ng.anc)
		}
		fab := ""
		if f := c.GPUFabric(id); f != NoDomain {
			fab = c.DomainName(f)
		}
		if fab != ng.fabric {
			t.Fatalf("GPU %s: fabric %q, the spec says %q", c.GPUName(id), fab, ng.fabric)
		}
	}
	for a := range gpus {
		for b := range gpus {
			got := c.Link(GPUID(a), GPUID(b))
			want := naiveLink(s, gpus[a], gpus[b])
			if want.Kind == LinkNetwork && want.Level == LevelHost+1+Level(len(s.Levels)) {
				want.Level = c.LevelCluster()
			}
			if got != want {
				t.Fatalf("Link(%s, %s) = %+v, the spec says %+v", c.GPUName(GPUID(a)), c.GPUName(GPUID(b)), got, want)
			}
		}
	}
}

// naiveExpand expands a name pattern the simple way. ok is false for an
// invalid pattern; count is the number of names, and names lists them when
// there are at most limit.
func naiveExpand(p string, limit int) (names []string, count int, ok bool) {
	if p == "" || strings.ContainsAny(p, " \t\n\r") {
		return nil, 0, false
	}
	// A list: the parts between commas outside brackets, one after another.
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			depth++
		case ']':
			depth--
		}
		if p[i] == ',' && depth == 0 {
			head, hn, ok1 := naivePart(p[:i], limit)
			tail, tn, ok2 := naiveExpand(p[i+1:], limit)
			if !ok1 || !ok2 || hn+tn > MaxExpandedNames {
				return nil, 0, false
			}
			if head == nil || tail == nil || hn+tn > limit {
				return nil, hn + tn, true
			}
			return append(head, tail...), hn + tn, true
		}
	}
	return naivePart(p, limit)
}

func naivePart(p string, limit int) (names []string, count int, ok bool) {
	if p == "" {
		return nil, 0, false
	}
	type item struct{ lo, hi, width int }
	var lits []string
	var groups [][]item
	total := 1
	lit := ""
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case ']':
			return nil, 0, false
		case '[':
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				return nil, 0, false
			}
			body := p[i+1 : i+end]
			if strings.ContainsRune(body, '[') {
				return nil, 0, false
			}
			var grp []item
			size := 0
			for _, part := range strings.Split(body, ",") {
				a, b, isRange := strings.Cut(part, "-")
				if !isRange {
					b = a
				}
				lo, ok1 := naiveNumber(a)
				hi, ok2 := naiveNumber(b)
				if !ok1 || !ok2 || hi < lo {
					return nil, 0, false
				}
				w := 0
				if len(a) > 1 && a[0] == '0' {
					w = len(a)
				}
				grp = append(grp, item{lo, hi, w})
				size += hi - lo + 1
				if size > MaxExpandedNames {
					return nil, 0, false
				}
			}
			total *= size
			if total > MaxExpandedNames {
				return nil, 0, false
			}
			lits = append(lits, lit)
			lit = ""
			groups = append(groups, grp)
			i += end
		default:
			lit += p[i : i+1]
		}
	}
	if total > limit {
		return nil, total, true
	}
	names = []string{""}
	for gi, grp := range groups {
		var next []string
		for _, n := range names {
			for _, it := range grp {
				for v := it.lo; v <= it.hi; v++ {
					s := strconv.Itoa(v)
					for len(s) < it.width {
						s = "0" + s
					}
					next = append(next, n+lits[gi]+s)
				}
			}
		}
		names = next
	}
	for i := range names {
		names[i] += lit
	}
	return names, total, true
}

func naiveNumber(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func TestExpandNames(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // names joined by spaces, or "error: ..." with a part of the message
	}{
		{"dgx[0001-0003]", "dgx0001 dgx0002 dgx0003"},
		{"r[1-2]-n[01-02]", "r1-n01 r1-n02 r2-n01 r2-n02"}, // the last group varies fastest
		{"gpu[1,3,5-7]", "gpu1 gpu3 gpu5 gpu6 gpu7"},
		{"n[8-10]", "n8 n9 n10"},
		{"n[08-10]", "n08 n09 n10"},
		{"n[098-100]", "n098 n099 n100"},
		{"plain", "plain"},
		{"[0-2]", "0 1 2"},
		{"a,b", "a b"},
		{"gb-r1-t[01-02],gb-x9", "gb-r1-t01 gb-r1-t02 gb-x9"},
		{"n[1,3],m[2-3]", "n1 n3 m2 m3"},
		{"a,,b", "error: empty name"},
		{",a", "error: empty name"},
		{"", "error: empty name"},
		{"a b", "error: white space"},
		{"a]", "error: ']' without '['"},
		{"a[1-2", "error: '[' without ']'"},
		{"a[[1]]", "error: nested '['"},
		{"a[]", "error: empty []"},
		{"a[2-1]", "error: goes backwards"},
		{"a[x]", "error: not a number"},
		{"a[1-]", "error: empty number"},
		{"a[1234567890]", "error: too long"},
		{"a[0-1048576]", "error: larger than"},
		{"a[0-1023][0-1024]", "error: expands to more than"},
	} {
		got, err := ExpandNames(tc.in)
		s := strings.Join(got, " ")
		if err != nil {
			s = "error: " + err.Error()
		}
		if strings.HasPrefix(tc.want, "error: ") {
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(tc.want, "error: ")) {
				t.Errorf("ExpandNames(%q) = %s, want %s", tc.in, s, tc.want)
			}
			continue
		}
		if s != tc.want {
			t.Errorf("ExpandNames(%q) = %s, want %s", tc.in, s, tc.want)
		}
	}
}

// FuzzExpandNames checks ExpandNames against naiveExpand: the same
// decision on every pattern, the same names where they are few enough to
// list, and names that expand to themselves.
func FuzzExpandNames(f *testing.F) {
	for _, s := range []string{"dgx[0001-1250]", "r[1-2]-n[01-18]", "gpu[1,3,5-7]", "a", "", "a b", "[", "]", "a[]",
		"x[09-10]", "x[1-0]", "x[0-999999999]", "[1-1000][1-1000]", "a[1-2]b[3]c", "a[1-2", "a[[1]]", "z[001-3,7]-[0]", "a,b[1-2]", "a,", "x[1-2],y[3,4]z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ExpandNames(p)
		want, count, valid := naiveExpand(p, 1<<12)
		if (err == nil) != valid {
			t.Fatalf("ExpandNames(%q) error %v; naive says valid=%v", p, err, valid)
		}
		if c := countNames(p); err != nil && c > 0 && c <= MaxExpandedNames || err == nil && c != len(got) {
			t.Fatalf("countNames(%q) = %d; ExpandNames gives %d names, error %v", p, c, len(got), err)
		}
		if err != nil {
			return
		}
		if len(got) != count {
			t.Fatalf("ExpandNames(%q) gives %d names, naive %d", p, len(got), count)
		}
		if want == nil {
			return // too many to compare one by one
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ExpandNames(%q) = %q, naive %q", p, got, want)
		}
		for _, n := range got {
			if n == "" || strings.ContainsAny(n, "[] \t\n\r") {
				t.Fatalf("ExpandNames(%q) yields %q", p, n)
			}
			if again, err := ExpandNames(n); err != nil || len(again) != 1 || again[0] != n {
				t.Fatalf("ExpandNames(%q) = %q, %v; a name should expand to itself", n, again, err)
			}
		}
	})
}

// FuzzBuild decodes the fuzzer's bytes into a small spec, often corrupted
// on purpose, and checks that Build never panics, rejects with a
// *SpecError that names a field, and builds consistent clusters.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte(strings.Repeat("\x02\x01\x03\x00", 40)))
	f.Add([]byte(strings.Repeat("\xff\x10\x07", 60)))
	f.Add([]byte("spec with two levels, MIG and a fabric group................................................"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g := specGen{ch: &byteChooser{b: b}, bad: true}
		s := g.spec()
		c, err := Build(s)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) || se.Path == "" || se.Msg == "" || !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Build error %v (%T) names no field", err, err)
			}
			return
		}
		checkClusterStructure(t, c)
		if err := NewLedger(c).Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBuildRejects spot-checks that corrupted specs are rejected with the
// right path.
func TestBuildRejects(t *testing.T) {
	base := func() Spec {
		s, err := Generator{Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2}.Spec()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		path string
		edit func(s *Spec)
	}{
		{"version", func(s *Spec) { s.Version = 0 }},
		{"name", func(s *Spec) { s.Name = "a/b" }},
		{"levels[0].name", func(s *Spec) { s.Levels[0].Name = "host" }},
		{"templates[0].gpus", func(s *Spec) { s.Templates[0].GPUs = 300 }},
		{"templates[0].numa[1].pcie[0].switches[0].gpus[0]", func(s *Spec) { s.Templates[0].NUMA[1].PCIe[0].Switches[0].GPUs[0] = 0 }},
		{"templates[0].fabrics[0].gpus[8]", func(s *Spec) { s.Templates[0].Fabrics[0].GPUs = append(s.Templates[0].Fabrics[0].GPUs, 0) }},
		{"switches[0].name", func(s *Spec) { s.Switches[0].Name = "tor[1-" }},
		{"hosts[0].parent", func(s *Spec) { s.Hosts[0].Parent = "tor9" }},
		{"hosts[0].template", func(s *Spec) { s.Hosts[0].Template = "nope" }},
		{"hosts[1].name", func(s *Spec) { s.Hosts = append(s.Hosts, s.Hosts[0]) }},
		// Domain names must be unique for DomainByName.
		{"hosts[0].name", func(s *Spec) { s.Name = "dgx-h100-2" }},
		{"switches[0].name", func(s *Spec) { s.Name = "tor1" }},
		{"switches[0].name", func(s *Spec) { s.Switches[0].Name = "a/tor[1-2]" }},
		{"fabrics[0].name", func(s *Spec) { s.Fabrics = []FabricGroup{{Name: "x/y", Kind: FabricMNNVL, Hosts: "dgx-h100-1"}} }},
		{"fabrics[0].name", func(s *Spec) {
			s.Templates[0].Fabrics = nil
			s.Fabrics = []FabricGroup{{Name: "tor2", Kind: FabricMNNVL, Hosts: "dgx-h100-1"}}
		}},
		{"templates[0].fabrics[0].kind", func(s *Spec) { s.Templates[0].Fabrics[0].Kind = "numa" }},
		{"templates[0].fabrics[11].kind", func(s *Spec) {
			// The first "x1" and the eleventh "x" both name the domain x10.
			s.Templates[0].GPUs, s.Templates[0].NUMA = 12, nil
			s.Templates[0].Fabrics = []HostFabricSpec{{Kind: "x1", GPUs: []int{0}}}
			for g := 1; g < 12; g++ {
				s.Templates[0].Fabrics = append(s.Templates[0].Fabrics, HostFabricSpec{Kind: "x", GPUs: []int{g}})
			}
		}},
	} {
		s := base()
		tc.edit(&s)
		_, err := Build(s)
		var se *SpecError
		if !errors.As(err, &se) || se.Path != tc.path {
			t.Errorf("%s: error %v, want a *SpecError at that path", tc.path, err)
		}
	}
	// Build does not keep the caller's spec.
	s := base()
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Templates[0].GPUs = 1
	s.Templates[0].NUMA[0].PCIe[0].Switches[0].GPUs[0] = 7
	if got := c.Spec().Templates[0]; got.GPUs != 8 || got.NUMA[0].PCIe[0].Switches[0].GPUs[0] != 0 {
		t.Fatal("Build shares the caller's spec")
	}
}
