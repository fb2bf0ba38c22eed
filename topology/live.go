package topology

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Live changes. A Cluster never changes; Apply returns a new version with
// hosts added or removed, built on a copy and switched to in one place by
// its owner (raft's confchange shape). Versions share what did not change:
//
//   - IDs are stable. New hosts, GPUs and domains take the next IDs; a
//     removed host keeps its IDs, which no list returns any more (Removed).
//     So a Ledger follows a new version in O(change) (Ledger.Follow) and no
//     claim held by a running job needs renumbering.
//   - The big arrays (hosts, GPUs, domains, ancestors, members) are shared
//     and grow by appending: a version only reads up to its own lengths, and
//     only the newest version may append in place (arena.head); applying a
//     change to an older version copies them first.
//   - What a change modifies is small and copied: the lists of the cluster,
//     network and multi-host fabric domains (net), the per-level domain
//     lists it touches, the removed marks, and a layer of names over the
//     name maps of Build (folded into new maps when it grows large).
//
// Building Spec() of a changed cluster replays its changes (Spec.Live) with
// this same code, so the result has exactly the IDs of the live cluster.

// netDom is what live changes modify of a cluster, network or multi-host
// fabric domain. Its slices are never modified once published.
type netDom struct {
	children []DomainID
	hosts    []HostID // ascending, without removed hosts
	gpus     []GPUID  // ascending, without GPUs of removed hosts
	leaves   []DomainID
	// hostLo and hostHi bound hosts (0, 0 when empty).
	hostLo, hostHi HostID
}

// arena guards the shared backing arrays of the versions of one cluster.
type arena struct {
	mu   sync.Mutex
	head *Cluster // the version that may append in place
	vers uint64   // versions made so far
}

// nameLayer holds the names one change added (or removed: NoHost,
// NoDomain), over its parent layer, and the layers over the maps of Build.
// Intra-host domains of hosts added live are not in it: DomainByName finds
// them through their host. Layers are never modified once published.
type nameLayer struct {
	hosts   map[string]HostID
	domains map[string]DomainID
	parent  *nameLayer
	depth   int // layers in the chain, this one included
	size    int // entries in the chain
}

// Bounds on the name layers: a chain deeper than maxLayers is merged into
// one layer (O(its entries)), and one with foldNames entries is folded into
// new maps (O(names)), so lookups take at most maxLayers+1 probes and a
// change costs amortised O(1) names.
const (
	maxLayers = 8
	foldNames = 4096
)

func (nl *nameLayer) host(name string) (HostID, bool) {
	for ; nl != nil; nl = nl.parent {
		if h, ok := nl.hosts[name]; ok {
			return h, true
		}
	}
	return NoHost, false
}

func (nl *nameLayer) domain(name string) (DomainID, bool) {
	for ; nl != nil; nl = nl.parent {
		if d, ok := nl.domains[name]; ok {
			return d, true
		}
	}
	return NoDomain, false
}

// flatten returns the chain merged into one layer, newest entries winning.
func (nl *nameLayer) flatten() *nameLayer {
	var chain []*nameLayer
	for x := nl; x != nil; x = x.parent {
		chain = append(chain, x)
	}
	out := &nameLayer{hosts: map[string]HostID{}, domains: map[string]DomainID{}, depth: 1}
	for i := len(chain) - 1; i >= 0; i-- {
		for k, v := range chain[i].hosts { // merging maps: order does not matter
			out.hosts[k] = v
		}
		for k, v := range chain[i].domains {
			out.domains[k] = v
		}
	}
	out.size = len(out.hosts) + len(out.domains)
	return out
}

// initLive sets up what live changes need, at the end of Build.
func (c *Cluster) initLive() {
	c.seq = make([]HostID, len(c.hosts), slack(len(c.hosts)))
	for i := range c.seq {
		c.seq[i] = HostID(i)
	}
	for i := range c.domains {
		x := &c.domains[i]
		x.net = -1
		switch {
		case x.kind == KindCluster || x.kind == KindNetwork:
			// Lists alias the shared arrays; clipped, so that growing one
			// copies it.
			nd := netDom{children: c.children[x.childLo:x.childHi:x.childHi], hosts: c.seq[x.hostLo:x.hostHi:x.hostHi],
				gpus: c.members[x.gpuLo:x.gpuHi:x.gpuHi], hostLo: x.hostLo, hostHi: x.hostHi}
			if len(c.netLvls) > 0 {
				nd.leaves = slices.Clip(c.levelDomains[LevelHost+1][x.leafLo:x.leafHi])
			}
			x.net = int32(len(c.net))
			c.net = append(c.net, nd)
		case x.kind == KindFabric && x.host == NoHost:
			x.net = int32(len(c.net))
			c.net = append(c.net, netDom{gpus: c.members[x.gpuLo:x.gpuHi:x.gpuHi]})
		}
	}
	c.arena = &arena{head: c}
}

// SameLineage reports whether c and o are versions of one cluster: one
// built by Build and the versions Apply made from it, in any order. They
// have the same levels and accelerator models, and the same IDs for
// everything of the version one was made from (directly or not), so what
// is resolved against an older one (a placement request, a claim) holds
// for a newer one.
func (c *Cluster) SameLineage(o *Cluster) bool { return c == o || c.arena == o.arena }

// Removed reports whether host h was taken out by a live change.
func (c *Cluster) Removed(h HostID) bool {
	return int(h) < len(c.removed) && c.removed[h]
}

// NumRemoved returns the number of removed hosts (whose IDs stay taken).
func (c *Cluster) NumRemoved() int { return c.nRemoved }

func (c *Cluster) lookupHost(name string) (HostID, bool) {
	if h, ok := c.names.host(name); ok {
		return h, h != NoHost
	}
	h, ok := c.hostByName[name]
	return h, ok && !c.Removed(h)
}

func (c *Cluster) lookupDomain(name string) (DomainID, bool) {
	if d, ok := c.names.domain(name); ok && d != NoDomain {
		return d, true
	}
	if d, ok := c.domainByName[name]; ok {
		if x := &c.domains[d]; x.host == NoHost || !c.Removed(x.host) {
			return d, true
		}
	}
	// An intra-host or host fabric domain of a host added live: its domains
	// follow its host domain.
	hn, _, ok := strings.Cut(name, "/")
	if !ok {
		return NoDomain, false
	}
	h, ok := c.lookupHost(hn)
	if !ok {
		return NoDomain, false
	}
	for d := c.hosts[h].domain; int(d) < len(c.domains) && c.domains[d].host == h; d++ {
		if c.domains[d].name == name {
			return d, true
		}
	}
	return NoDomain, false
}

// Apply returns a new version of c with the change applied: hosts
// removed, then templates, switches, hosts and multi-host fabric domains
// added (see Change). c itself does not change and stays valid. Errors are
// *SpecError naming the field of the change; on error nothing is applied.
//
// Existing IDs do not change. A removed host must not run anything when a
// Ledger follows the new version (Ledger.Follow checks). Cost: O(size of
// the change + the lists of the domains it touches: the hosts and GPUs of
// each ancestor of a host added or removed), plus, when c is not the newest
// version of its cluster, a copy of the shared arrays. Apply may be called
// from several goroutines.
func (c *Cluster) Apply(ch Change) (*Cluster, error) {
	return c.apply(cloneChange(ch), "", true)
}

// CheckChange reports the error Apply would return for ch, without making
// a version: a dry run at the cost of Apply, after which c is still the
// version that appends in place.
func (c *Cluster) CheckChange(ch Change) error {
	_, err := c.apply(cloneChange(ch), "", false)
	return err
}

// liveChange is one Apply under way: the new version n and what it touched.
type liveChange struct {
	n       *Cluster
	p       string // path prefix for errors
	touched map[int32]*netEdit
	order   []int32 // touched net entries, in first-touch order
	levels  []bool  // per level: levelDomains[lv] is this change's own copy
	inPlace bool    // the old version is the newest: lists may grow in place
	added   map[HostID]bool
	newName map[string]bool
	uuids   map[string]bool
}

// netEdit collects what a change does to one net entry.
type netEdit struct {
	dropHosts []HostID
	dropGPUs  []GPUID
	dropKids  []DomainID
	addHosts  []HostID
	addGPUs   []GPUID
	addKids   []DomainID
	addLeaves []DomainID
}

// apply makes the new version; unless publish, it is a dry run: what it
// appended in place lies beyond every published version's lengths and is
// overwritten by the next change.
func (c *Cluster) apply(ch Change, p string, publish bool) (*Cluster, error) {
	c.arena.mu.Lock()
	defer c.arena.mu.Unlock()
	n := new(Cluster)
	*n = *c
	if c.arena.head != c {
		// An older version: appending in place would overwrite what a
		// newer one appended.
		n.hosts, n.gpus, n.anc = slices.Clip(n.hosts), slices.Clip(n.gpus), slices.Clip(n.anc)
		n.domains, n.members, n.children = slices.Clip(n.domains), slices.Clip(n.members), slices.Clip(n.children)
		n.seq, n.templates = slices.Clip(n.seq), slices.Clip(n.templates)
		n.spec.Live = slices.Clip(n.spec.Live)
	}
	n.net = slices.Clone(c.net)
	n.levelDomains = slices.Clone(c.levelDomains)
	n.names = &nameLayer{hosts: map[string]HostID{}, domains: map[string]DomainID{}, parent: c.names, depth: 1}
	if c.names != nil {
		n.names.depth, n.names.size = c.names.depth+1, c.names.size
	}
	lc := &liveChange{n: n, p: p, touched: map[int32]*netEdit{}, levels: make([]bool, len(n.levelDomains)), inPlace: c.arena.head == c,
		added: map[HostID]bool{}, newName: map[string]bool{}}
	if err := lc.remove(ch.Remove); err != nil {
		return nil, err
	}
	if err := lc.templates(ch.Templates); err != nil {
		return nil, err
	}
	if err := lc.switches(ch.Switches); err != nil {
		return nil, err
	}
	if err := lc.hostGroups(ch.Hosts); err != nil {
		return nil, err
	}
	if err := lc.fabrics(ch.Fabrics); err != nil {
		return nil, err
	}
	lc.finish()
	if !publish {
		return nil, nil
	}
	n.spec.Live = append(n.spec.Live, ch)
	c.arena.vers++
	n.ver, n.prevVer = c.arena.vers, c.ver
	c.arena.head = n
	return n, nil
}

func (lc *liveChange) edit(d DomainID) *netEdit {
	i := lc.n.domains[d].net
	e := lc.touched[i]
	if e == nil {
		e = &netEdit{}
		lc.touched[i] = e
		lc.order = append(lc.order, i)
	}
	return e
}

// levelAppend adds d at the end of the domain list of level lv: in place
// when n is the newest version (older versions read only up to their own
// length), else on a copy.
func (lc *liveChange) levelAppend(lv Level, d DomainID) {
	l := &lc.n.levelDomains[lv]
	if !lc.inPlace && !lc.levels[lv] {
		*l = slices.Clip(*l)
		lc.levels[lv] = true
	}
	*l = append(*l, d)
}

// levelDelete takes d out of the domain list of level lv, on a copy.
func (lc *liveChange) levelDelete(lv Level, d DomainID) {
	l := &lc.n.levelDomains[lv]
	i, found := slices.BinarySearch(*l, d)
	if !found {
		return
	}
	out := make([]DomainID, 0, len(*l)-1+16)
	*l = append(append(out, (*l)[:i]...), (*l)[i+1:]...)
	lc.levels[lv] = true // a private copy now
}

// taken reports whether name is used by a host, domain or the cluster.
func (lc *liveChange) taken(name string) bool {
	n := lc.n
	if name == n.name || lc.newName[name] {
		return true
	}
	if _, ok := n.lookupHost(name); ok {
		return true
	}
	_, ok := n.lookupDomain(name)
	return ok
}

func (lc *liveChange) remove(names []string) error {
	n := lc.n
	if len(names) > 0 {
		n.removed = append(make([]bool, 0, len(n.hosts)), n.removed...)
		n.removed = n.removed[:len(n.hosts)]
	}
	for i, name := range names {
		path := fmt.Sprintf("%sremove[%d]", lc.p, i)
		h, ok := n.lookupHost(name)
		if !ok {
			return specErr(path, "unknown host %q", name)
		}
		n.removed[h] = true
		n.nRemoved++
		n.names.hosts[name] = NoHost
		n.names.domains[name] = NoDomain
		x := &n.hosts[h]
		first, cnt := x.gpuLo, GPUID(x.nGPU)
		for d := x.parent; d != NoDomain; d = n.domains[d].parent {
			e := lc.edit(d)
			e.dropHosts = append(e.dropHosts, h)
			for g := first; g < first+cnt; g++ {
				e.dropGPUs = append(e.dropGPUs, g)
			}
			if d == x.parent {
				e.dropKids = append(e.dropKids, x.domain)
			}
		}
		// Its multi-host fabric domains and its domains in the level lists.
		lc.levelDelete(LevelHost, x.domain)
		for g := first; g < first+cnt; g++ {
			f := n.gpus[g].fabric
			if f == NoDomain {
				continue
			}
			if n.domains[f].net >= 0 {
				e := lc.edit(f)
				e.dropGPUs = append(e.dropGPUs, g)
			} else if g == first || n.gpus[g-1].fabric != f {
				lc.levelDelete(LevelFabric, f)
			}
		}
	}
	return nil
}

func (lc *liveChange) templates(ts []HostTemplate) error {
	n := lc.n
	b := &builder{c: n, modelByName: map[string]ModelID{}}
	for i := range n.models {
		b.modelByName[n.models[i].Model] = ModelID(i)
	}
	for i := range ts {
		t := &ts[i]
		path := fmt.Sprintf("%stemplates[%d]", lc.p, i)
		if t.Name == "" {
			return specErr(path+".name", "empty template name")
		}
		if lc.template(t.Name) >= 0 {
			return specErr(path+".name", "duplicate template %q", t.Name)
		}
		ct, err := b.compileTemplate(t, path)
		if err != nil {
			return err
		}
		n.templates = append(n.templates, ct)
	}
	return nil
}

func (lc *liveChange) template(name string) int {
	for i := range lc.n.templates {
		if lc.n.templates[i].name == name {
			return i
		}
	}
	return -1
}

// netLevelOf returns the index (outermost 0) of the network level of
// domain d, or -1 when d is no switch.
func (lc *liveChange) netLevelOf(d DomainID) int {
	x := &lc.n.domains[d]
	if x.kind != KindNetwork {
		return -1
	}
	return lc.n.netIndex(x.level)
}

func (lc *liveChange) switches(groups []SwitchGroup) error {
	n := lc.n
	for gi, g := range groups {
		path := fmt.Sprintf("%sswitches[%d]", lc.p, gi)
		names, err := ExpandNames(g.Name)
		if err != nil {
			return specErr(path+".name", "%v", err)
		}
		if strings.ContainsRune(g.Name, '/') {
			return specErr(path+".name", "switch names may not contain '/'")
		}
		lvl := -1
		for i := range n.netLvls {
			if n.netLvls[i].Name == g.Level {
				lvl = i
			}
		}
		if lvl < 0 {
			return specErr(path+".level", "unknown level %q", g.Level)
		}
		var parents []DomainID
		switch {
		case lvl == 0 && g.Parent != "":
			return specErr(path+".parent", "switches at the outermost level %q have no parent", g.Level)
		case lvl > 0 && g.Parent == "":
			return specErr(path+".parent", "switches at level %q need a parent at level %q", g.Level, n.netLvls[lvl-1].Name)
		case g.PerParent != 0 && g.Parent == "":
			return specErr(path+".perParent", "perParent without parent")
		case g.Parent != "":
			if parents, err = lc.parents(g.Parent, lvl-1, path+".parent", "switches"); err != nil {
				return err
			}
		}
		var parentOf []int
		if parents != nil {
			if parentOf, err = assign(len(names), len(parents), g.PerParent, path, "switches"); err != nil {
				return err
			}
		}
		for i, name := range names {
			if lc.taken(name) {
				return specErr(path+".name", "duplicate name %q", name)
			}
			lc.newName[name] = true
			par := DomainID(0)
			if parents != nil {
				par = parents[parentOf[i]]
			}
			d := DomainID(len(n.domains))
			lv := n.netLevel(lvl)
			n.domains = append(n.domains, domain{kind: KindNetwork, level: lv, name: name, parent: par, host: NoHost,
				net: int32(len(n.net))})
			nd := netDom{}
			if lv == LevelHost+1 {
				nd.leaves = []DomainID{d}
			}
			n.net = append(n.net, nd)
			n.names.domains[name] = d
			lc.levelAppend(lv, d)
			lc.edit(par).addKids = append(lc.edit(par).addKids, d)
			if lv == LevelHost+1 {
				for a := par; a != NoDomain; a = n.domains[a].parent {
					e := lc.edit(a)
					e.addLeaves = append(e.addLeaves, d)
				}
			}
		}
	}
	return nil
}

// parents resolves a pattern of switch names at network level lvl
// (outermost 0).
func (lc *liveChange) parents(pattern string, lvl int, path, what string) ([]DomainID, error) {
	names, err := ExpandNames(pattern)
	if err != nil {
		return nil, specErr(path, "%v", err)
	}
	out := make([]DomainID, len(names))
	for i, pn := range names {
		d, ok := lc.n.lookupDomain(pn)
		if !ok || lc.n.domains[d].kind != KindNetwork {
			return nil, specErr(path, "unknown parent switch %q", pn)
		}
		if got := lc.netLevelOf(d); got != lvl {
			return nil, specErr(path, "parent %q is at level %q; %s need a parent at %q",
				pn, lc.n.netLvls[got].Name, what, lc.n.netLvls[lvl].Name)
		}
		out[i] = d
	}
	return out, nil
}

func (lc *liveChange) hostGroups(groups []HostGroup) error {
	n := lc.n
	inner := len(n.netLvls) - 1
	for gi := range groups {
		g := &groups[gi]
		path := fmt.Sprintf("%shosts[%d]", lc.p, gi)
		names, err := ExpandNames(g.Name)
		if err != nil {
			return specErr(path+".name", "%v", err)
		}
		if strings.ContainsRune(g.Name, '/') {
			return specErr(path+".name", "host names may not contain '/'")
		}
		ti := lc.template(g.Template)
		if ti < 0 {
			return specErr(path+".template", "unknown template %q", g.Template)
		}
		var parents []DomainID
		switch {
		case inner < 0 && g.Parent != "":
			return specErr(path+".parent", "the cluster has no network levels, so hosts have no parent")
		case inner >= 0 && g.Parent == "":
			return specErr(path+".parent", "hosts need a parent switch at level %q", n.netLvls[inner].Name)
		case g.PerParent != 0 && g.Parent == "":
			return specErr(path+".perParent", "perParent without parent")
		case g.Parent != "":
			if parents, err = lc.parents(g.Parent, inner, path+".parent", "hosts"); err != nil {
				return err
			}
		}
		var parentOf []int
		if parents != nil {
			if parentOf, err = assign(len(names), len(parents), g.PerParent, path, "hosts"); err != nil {
				return err
			}
		}
		if err := lc.identities(g, path, &n.templates[ti]); err != nil {
			return err
		}
		for i, name := range names {
			if lc.taken(name) {
				return specErr(path+".name", "duplicate name %q", name)
			}
			lc.newName[name] = true
			par := DomainID(0)
			if parents != nil {
				par = parents[parentOf[i]]
			}
			lc.addHost(name, ti, par, g.GPUs)
		}
	}
	return nil
}

// identities checks the GPU identities of a host group as Build does.
func (lc *liveChange) identities(g *HostGroup, path string, t *compiledTemplate) error {
	if len(g.GPUs) == 0 {
		return nil
	}
	if names, _ := ExpandNames(g.Name); len(names) != 1 {
		return specErr(path+".gpuIDs", "GPU identities need a single host, not a pattern of %d", len(names))
	}
	if lc.uuids == nil {
		lc.uuids = map[string]bool{}
		for i := range lc.n.gpus {
			if u := lc.n.gpus[i].uuid; u != "" && !lc.n.Removed(lc.n.gpus[i].host) {
				lc.uuids[u] = true
			}
		}
	}
	seen := map[int]bool{}
	for ii := range g.GPUs {
		id := &g.GPUs[ii]
		ip := fmt.Sprintf("%s.gpuIDs[%d]", path, ii)
		if id.Index < 0 || id.Index >= t.nGPU {
			return specErr(ip+".index", "GPU index %d out of range [0, %d)", id.Index, t.nGPU)
		}
		if seen[id.Index] {
			return specErr(ip+".index", "duplicate GPU index %d", id.Index)
		}
		seen[id.Index] = true
		if id.UUID != "" {
			if lc.uuids[id.UUID] {
				return specErr(ip+".uuid", "UUID %s already used", id.UUID)
			}
			lc.uuids[id.UUID] = true
		}
		if id.BusID != "" {
			norm, err := NormalizeBusID(id.BusID)
			if err != nil {
				return specErr(ip+".busID", "%v", err)
			}
			id.BusID = norm
		}
	}
	return nil
}

// addHost appends a host of template ti under domain par: its host
// domain, its intra-host domains, its host fabric domains (in that order,
// which DomainByName relies on), and its GPUs.
func (lc *liveChange) addHost(name string, ti int, par DomainID, ids []GPUIdentity) {
	n := lc.n
	t := &n.templates[ti]
	hid := HostID(len(n.hosts))
	first := GPUID(len(n.gpus))
	hd := DomainID(len(n.domains))
	lc.added[hid] = true
	// The host domain: its GPUs and children.
	glo := int32(len(n.members))
	for lg := range t.nGPU {
		n.members = append(n.members, first+GPUID(lg))
	}
	clo := int32(len(n.children))
	base := hd + 1
	for _, r := range t.roots {
		n.children = append(n.children, base+DomainID(r))
	}
	n.domains = append(n.domains, domain{kind: KindHost, level: LevelHost, name: name, parent: par, host: hid,
		gpuLo: glo, gpuHi: int32(len(n.members)), hostLo: hid, hostHi: hid + 1,
		childLo: clo, childHi: int32(len(n.children)), net: -1})
	n.hosts = append(n.hosts, host{name: name, domain: hd, parent: par, gpuLo: first, nGPU: int32(t.nGPU),
		cpuMilli: t.cpu, memMiB: t.mem, model: t.model, template: int32(ti)})
	n.seq = append(n.seq, hid)
	if n.removed != nil {
		n.removed = append(n.removed, false)
	}
	// Intra-host domains.
	for ni := range t.nodes {
		nd := &t.nodes[ni]
		p := hd
		if nd.parent >= 0 {
			p = base + DomainID(nd.parent)
		}
		lo := int32(len(n.members))
		for _, lg := range nd.gpus {
			n.members = append(n.members, first+GPUID(lg))
		}
		klo := int32(len(n.children))
		for _, k := range t.kids[ni] {
			n.children = append(n.children, base+DomainID(k))
		}
		n.domains = append(n.domains, domain{kind: nd.kind, level: -1, depth: nd.depth, name: name + "/" + nd.name, parent: p,
			host: hid, gpuLo: lo, gpuHi: int32(len(n.members)), childLo: klo, childHi: int32(len(n.children)), net: -1})
	}
	// Host fabric domains.
	fabBase := DomainID(len(n.domains))
	for fi := range t.fabric {
		f := &t.fabric[fi]
		d := DomainID(len(n.domains))
		lo := int32(len(n.members))
		for _, lg := range f.gpus {
			n.members = append(n.members, first+GPUID(lg))
		}
		n.domains = append(n.domains, domain{kind: KindFabric, level: LevelFabric, name: name + "/" + f.name,
			parent: NoDomain, host: hid, gpuLo: lo, gpuHi: int32(len(n.members)), fabricKind: f.kind, bandwidth: f.bw, net: -1})
		lc.levelAppend(LevelFabric, d)
	}
	// GPUs with their ancestors, innermost first.
	for lg := range t.nGPU {
		x := gpu{host: hid, index: int32(lg), fabric: NoDomain}
		n.appendAncestors(&x, t, lg, base, hd)
		if f := t.gpuFab[lg]; f >= 0 {
			x.fabric = fabBase + DomainID(f)
		}
		n.gpus = append(n.gpus, x)
	}
	for _, id := range ids {
		x := &n.gpus[first+GPUID(id.Index)]
		x.uuid, x.busID = id.UUID, id.BusID
	}
	// Lists of the ancestors and of the level.
	lc.levelAppend(LevelHost, hd)
	for d := par; d != NoDomain; d = n.domains[d].parent {
		e := lc.edit(d)
		e.addHosts = append(e.addHosts, hid)
		for g := first; g < first+GPUID(t.nGPU); g++ {
			e.addGPUs = append(e.addGPUs, g)
		}
		if d == par {
			e.addKids = append(e.addKids, hd)
		}
	}
	n.names.hosts[name] = hid
	n.names.domains[name] = hd
}

func (lc *liveChange) fabrics(groups []FabricGroup) error {
	n := lc.n
	for gi, g := range groups {
		path := fmt.Sprintf("%sfabrics[%d]", lc.p, gi)
		names, hostNames, domOf, bw, err := checkFabricGroup(&g, path)
		if err != nil {
			return err
		}
		members := make([][]GPUID, len(names))
		for i, hn := range hostNames {
			h, ok := n.lookupHost(hn)
			if !ok {
				return specErr(path+".hosts", "unknown host %q", hn)
			}
			if !lc.added[h] {
				return specErr(path+".hosts", "host %q is not added by this change; hosts join a multi-host fabric domain only together with it", hn)
			}
			x := &n.hosts[h]
			for g := x.gpuLo; g < x.gpuLo+GPUID(x.nGPU); g++ {
				if f := n.gpus[g].fabric; f != NoDomain {
					return specErr(path+".hosts", "GPU %s is already in fabric domain %s", n.GPUName(g), n.domains[f].name)
				}
				members[domOf[i]] = append(members[domOf[i]], g)
			}
		}
		for i, name := range names {
			if lc.taken(name) {
				return specErr(path+".name", "duplicate domain name %q", name)
			}
			lc.newName[name] = true
			d := DomainID(len(n.domains))
			m := members[i]
			slices.Sort(m)
			for _, g := range m {
				n.gpus[g].fabric = d // a GPU this change appended
			}
			n.domains = append(n.domains, domain{kind: KindFabric, level: LevelFabric, name: name, parent: NoDomain,
				host: NoHost, fabricKind: g.Kind, bandwidth: bw, clusterUUID: g.ClusterUUID, cliqueID: g.CliqueID,
				net: int32(len(n.net))})
			n.net = append(n.net, netDom{gpus: m})
			n.names.domains[name] = d
			lc.levelAppend(LevelFabric, d)
		}
	}
	return nil
}

// finish publishes the new lists of every touched net entry and folds the
// name layer when it has grown large.
func (lc *liveChange) finish() {
	n := lc.n
	for _, i := range lc.order {
		e := lc.touched[i]
		old := n.net[i]
		nd := netDom{
			children: merge(old.children, e.dropKids, e.addKids, lc.inPlace),
			hosts:    merge(old.hosts, e.dropHosts, e.addHosts, lc.inPlace),
			gpus:     merge(old.gpus, e.dropGPUs, e.addGPUs, lc.inPlace),
			leaves:   merge(old.leaves, nil, e.addLeaves, lc.inPlace),
		}
		if len(nd.hosts) > 0 {
			nd.hostLo, nd.hostHi = nd.hosts[0], nd.hosts[len(nd.hosts)-1]+1
		}
		n.net[i] = nd
	}
	nl := n.names
	nl.size += len(nl.hosts) + len(nl.domains)
	if nl.depth > maxLayers || nl.size >= foldNames {
		nl = nl.flatten()
		n.names = nl
	}
	if nl.size >= foldNames {
		hosts := make(map[string]HostID, len(n.hostByName)+len(nl.hosts))
		for k, v := range n.hostByName {
			hosts[k] = v
		}
		doms := make(map[string]DomainID, len(n.domainByName)+len(nl.domains))
		for k, v := range n.domainByName {
			doms[k] = v
		}
		for k, v := range nl.hosts {
			if v == NoHost {
				delete(hosts, k)
			} else {
				hosts[k] = v
			}
		}
		for k, v := range nl.domains {
			if v == NoDomain {
				delete(doms, k)
			} else {
				doms[k] = v
			}
		}
		n.hostByName, n.domainByName, n.names = hosts, doms, nil
	}
}

// merge returns old without drop, followed by add; old's elements are not
// modified. IDs added are larger than every ID in old, so an ascending list
// stays ascending. Without drops and with inPlace (the newest version) it
// appends in old's spare capacity, which no older version reads; lists
// from Build alias shared arrays and have none (initLive clips them).
func merge[T ~int32](old, drop, add []T, inPlace bool) []T {
	if len(drop) == 0 {
		if len(add) == 0 {
			return old
		}
		if !inPlace {
			old = slices.Clip(old)
		}
		return append(old, add...)
	}
	slices.Sort(drop)
	out := make([]T, 0, len(old)+len(add)+len(old)/8)
	for _, v := range drop {
		i, found := slices.BinarySearch(old, v)
		if !found {
			continue
		}
		out = append(out, old[:i]...)
		old = old[i+1:]
	}
	out = append(out, old...)
	return append(out, add...)
}
