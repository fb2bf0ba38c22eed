package topology

import (
	"fmt"
)

// ledgerIndex keeps ordered indexes over the ledger's counters:
//
//	byLeaf   hosts by (innermost network domain, free GPUs, host)
//	byModel  hosts by (accelerator model, free GPUs, host)
//	byLevel  fabric and network domains by (free GPUs, domain), one tree per level
//	shared   partly used shared GPUs by (model, free milli, GPU)
//
// Entries are refreshed lazily: changes mark hosts, domains and GPUs dirty,
// and every query first re-indexes what is dirty in the index it reads:
// a domain query the domains (flushDomains), a query under the root the
// model index (flushModels), a query under an innermost domain that
// domain's hosts only (flushLeaf), a shared-GPU query the shared GPUs. A
// what-if that releases jobs all over the cluster and takes them back
// (reservations) then re-indexes only the leaves its placements looked
// in, and a host whose count is back where it was indexed costs a
// comparison. Each flush costs O(dirty × log n); nothing ever rescans the
// cluster.
type ledgerIndex struct {
	byLeaf  *keySet
	byModel *keySet
	byLevel []*keySet // indexed by Level; nil where not kept
	shared  *keySet

	// byModel's host entries: hostFree is each host's free GPUs as
	// indexed there (-1 if not indexed); dirtyHosts the hosts marked since
	// (hostDirty set exactly for them).
	hostFree   []int32
	hostDirty  []bool
	dirtyHosts []HostID

	// byLeaf's host entries: leafFree is each host's free GPUs as indexed
	// there (-1 if not indexed). The hosts marked since are listed per
	// innermost domain, linked through leafNext from leafHead[leaf]
	// (NoHost: none), leafDirty set exactly for the hosts listed;
	// dirtyLeaves are the domains whose lists were not empty since the
	// last flushLeaves (leafListed set exactly for them).
	leafFree    []int32
	leafDirty   []bool
	leafNext    []HostID
	leafHead    []HostID // per domain
	leafListed  []bool   // per domain
	dirtyLeaves []DomainID

	// byLevel's entries: domFree is each domain's free GPUs as indexed
	// (-1 if not indexed); dirtyDoms the domains marked since, per level
	// (a query at one level refreshes that level only), domDirty set
	// exactly for them.
	domFree   []int32
	domDirty  []bool
	dirtyDoms [][]DomainID // by Level

	gpuMilli  []int16 // free milli as indexed in shared; -1 if not indexed
	gpuDirty  []bool
	dirtyGPUs []GPUID
}

func newTree() *keySet { return &keySet{} }

func leafKey(leaf DomainID, free int32, h HostID) uint64 {
	return uint64(leaf)<<41 | uint64(free)<<32 | uint64(uint32(h))
}

func modelKey(m ModelID, free int32, id int32) uint64 {
	return uint64(uint16(m))<<48 | uint64(uint16(free))<<32 | uint64(uint32(id))
}

func levelKey(free int32, d DomainID) uint64 { return uint64(uint32(free))<<32 | uint64(uint32(d)) }

func (x *ledgerIndex) init(l *Ledger) {
	c := l.c
	x.byLeaf, x.byModel, x.shared = newTree(), newTree(), newTree()
	x.byLevel = make([]*keySet, c.NumLevels())
	for lv := Level(0); lv < c.LevelCluster(); lv++ {
		if lv != LevelHost {
			x.byLevel[lv] = newTree()
		}
	}
	x.hostFree = make([]int32, len(c.hosts))
	x.hostDirty = make([]bool, len(c.hosts))
	x.dirtyHosts = make([]HostID, 0, 64)
	x.leafFree = make([]int32, len(c.hosts))
	x.leafDirty = make([]bool, len(c.hosts))
	x.leafNext = make([]HostID, len(c.hosts))
	x.leafHead = make([]HostID, len(c.domains))
	x.leafListed = make([]bool, len(c.domains))
	x.dirtyLeaves = make([]DomainID, 0, 16)
	for i := range x.leafHead {
		x.leafHead[i] = NoHost
	}
	x.domFree = make([]int32, len(c.domains))
	x.domDirty = make([]bool, len(c.domains))
	x.dirtyDoms = make([][]DomainID, c.NumLevels())
	x.gpuMilli = make([]int16, len(c.gpus))
	x.gpuDirty = make([]bool, len(c.gpus))
	x.dirtyGPUs = make([]GPUID, 0, 64)
	for i := range x.gpuMilli {
		x.gpuMilli[i] = -1
	}
	for i := range x.domFree {
		x.domFree[i] = -1
	}
	for h := range c.hosts {
		x.hostFree[h], x.leafFree[h] = -1, -1
		x.indexModel(l, HostID(h))
		x.indexLeaf(l, HostID(h))
	}
	for lv := Level(0); lv < c.LevelCluster(); lv++ {
		if t := x.byLevel[lv]; t != nil {
			for _, d := range c.levelDomains[lv] {
				x.domFree[d] = l.freeWhole[d]
				t.ReplaceOrInsert(levelKey(l.freeWhole[d], d))
			}
		}
	}
}

func (x *ledgerIndex) clone() ledgerIndex {
	n := ledgerIndex{
		byLeaf:      x.byLeaf.Clone(),
		byModel:     x.byModel.Clone(),
		shared:      x.shared.Clone(),
		byLevel:     make([]*keySet, len(x.byLevel)),
		hostFree:    append([]int32(nil), x.hostFree...),
		hostDirty:   append([]bool(nil), x.hostDirty...),
		dirtyHosts:  append(make([]HostID, 0, cap(x.dirtyHosts)), x.dirtyHosts...),
		leafFree:    append([]int32(nil), x.leafFree...),
		leafDirty:   append([]bool(nil), x.leafDirty...),
		leafNext:    append([]HostID(nil), x.leafNext...),
		leafHead:    append([]HostID(nil), x.leafHead...),
		leafListed:  append([]bool(nil), x.leafListed...),
		dirtyLeaves: append(make([]DomainID, 0, cap(x.dirtyLeaves)), x.dirtyLeaves...),
		domFree:     append([]int32(nil), x.domFree...),
		domDirty:    append([]bool(nil), x.domDirty...),
		dirtyDoms:   make([][]DomainID, len(x.dirtyDoms)),
		gpuMilli:    append([]int16(nil), x.gpuMilli...),
		gpuDirty:    append([]bool(nil), x.gpuDirty...),
		dirtyGPUs:   append(make([]GPUID, 0, cap(x.dirtyGPUs)), x.dirtyGPUs...),
	}
	for i, t := range x.byLevel {
		if t != nil {
			n.byLevel[i] = t.Clone()
		}
	}
	for lv, ds := range x.dirtyDoms {
		n.dirtyDoms[lv] = append([]DomainID(nil), ds...)
	}
	return n
}

func (x *ledgerIndex) copyFrom(s *ledgerIndex) {
	x.byLeaf.copyFrom(s.byLeaf)
	x.byModel.copyFrom(s.byModel)
	x.shared.copyFrom(s.shared)
	for i, t := range s.byLevel {
		if t != nil {
			if x.byLevel[i] == nil {
				x.byLevel[i] = newTree()
			}
			x.byLevel[i].copyFrom(t)
		}
	}
	copy(x.hostFree, s.hostFree)
	copy(x.hostDirty, s.hostDirty)
	x.dirtyHosts = append(x.dirtyHosts[:0], s.dirtyHosts...)
	copy(x.leafFree, s.leafFree)
	copy(x.leafDirty, s.leafDirty)
	copy(x.leafNext, s.leafNext)
	copy(x.leafHead, s.leafHead)
	copy(x.leafListed, s.leafListed)
	x.dirtyLeaves = append(x.dirtyLeaves[:0], s.dirtyLeaves...)
	copy(x.domFree, s.domFree)
	copy(x.domDirty, s.domDirty)
	for lv, ds := range s.dirtyDoms {
		x.dirtyDoms[lv] = append(x.dirtyDoms[lv][:0], ds...)
	}
	copy(x.gpuMilli, s.gpuMilli)
	copy(x.gpuDirty, s.gpuDirty)
	x.dirtyGPUs = append(x.dirtyGPUs[:0], s.dirtyGPUs...)
}

// touchGPU marks the index entries that g's free-GPU count feeds: its
// host, its fabric domain and its network domains (while a claim is
// batched, the host's and networks' at endClaim).
func (l *Ledger) touchGPU(g GPUID) {
	x := &l.idx
	gg := &l.c.gpus[g]
	if b := &l.batch; b.on { // the host, its networks and fabric: once, at endClaim
		b.touched = true
		switch gg.fabric {
		case NoDomain:
		case b.fab:
			b.fabTouched = true
		default:
			x.touchDomain(gg.fabric, LevelFabric)
		}
		return
	}
	if gg.fabric != NoDomain {
		x.touchDomain(gg.fabric, LevelFabric)
	}
	x.touchHost(gg.host, l.c.hosts[gg.host].parent)
	top := gg.ancLo + gg.ancN
	l.touchNetworks(top)

}

// touchShared marks g for the shared-GPU index.
func (x *ledgerIndex) touchShared(g GPUID) {
	if !x.gpuDirty[g] {
		x.gpuDirty[g] = true
		x.dirtyGPUs = append(x.dirtyGPUs, g)
	}
}

// touchHost marks host h (whose innermost domain is leaf) for
// re-indexing in both host indexes.
func (x *ledgerIndex) touchHost(h HostID, leaf DomainID) {
	if !x.hostDirty[h] {
		x.hostDirty[h] = true
		x.dirtyHosts = append(x.dirtyHosts, h)
	}
	if !x.leafDirty[h] {
		x.leafDirty[h] = true
		x.leafNext[h], x.leafHead[leaf] = x.leafHead[leaf], h
		if !x.leafListed[leaf] {
			x.leafListed[leaf] = true
			x.dirtyLeaves = append(x.dirtyLeaves, leaf)
		}
	}
}

// touchDomain marks domain d, of level lv, for re-indexing.
func (x *ledgerIndex) touchDomain(d DomainID, lv Level) {
	if !x.domDirty[d] && x.domFree[d] >= 0 {
		x.domDirty[d] = true
		x.dirtyDoms[lv] = append(x.dirtyDoms[lv], d)
	}
}

// touchNetworks marks the network domains among the ancestors of a GPU
// whose ancestor list ends (at the root) before anc[top].
func (l *Ledger) touchNetworks(top int32) {
	c := l.c
	for i := top - 1 - int32(len(c.netLvls)); i < top-1; i++ {
		d := c.anc[i]
		l.idx.touchDomain(d, c.domains[d].level)
	}
}

// indexModel brings host h's byModel entry up to date.
func (x *ledgerIndex) indexModel(l *Ledger, h HostID) {
	if free, ok := indexedFree(l, h); ok {
		refile(x.byModel, modelKey(l.c.hosts[h].model, 0, int32(h)), &x.hostFree[h], free)
	}
}

// indexLeaf brings host h's byLeaf entry up to date.
func (x *ledgerIndex) indexLeaf(l *Ledger, h HostID) {
	if free, ok := indexedFree(l, h); ok {
		refile(x.byLeaf, leafKey(l.c.hosts[h].parent, 0, h), &x.leafFree[h], free)
	}
}

// indexedFree is the free-GPU count host h is to be indexed with (-1:
// removed, not indexed); false for a host without GPUs, never indexed.
func indexedFree(l *Ledger, h HostID) (int32, bool) {
	hx := &l.c.hosts[h]
	switch {
	case hx.nGPU == 0:
		return 0, false
	case l.c.Removed(h):
		return -1, true
	}
	return l.freeWhole[hx.domain], true
}

// refile moves a host's entry in t, key base with its free count added
// (leafKey, modelKey), from the count *at it is filed with to free (-1:
// not filed).
func refile(t *keySet, base uint64, at *int32, free int32) {
	old := *at
	if old == free {
		return
	}
	if old >= 0 {
		t.Delete(base | uint64(old)<<32)
	}
	if free >= 0 {
		t.ReplaceOrInsert(base | uint64(free)<<32)
	}
	*at = free
}

func (x *ledgerIndex) indexShared(l *Ledger, g GPUID) {
	s := &l.gpu[g]
	want := int16(-1)
	if s.mode == ModeShared && s.used < MilliPerGPU && l.allocatable(g) {
		want = MilliPerGPU - s.used
	}
	old := x.gpuMilli[g]
	if old == want {
		return
	}
	m := l.c.hosts[l.c.gpus[g].host].model
	if old >= 0 {
		x.shared.Delete(modelKey(m, int32(old), int32(g)))
	}
	if want >= 0 {
		x.shared.ReplaceOrInsert(modelKey(m, int32(want), int32(g)))
	}
	x.gpuMilli[g] = want
}

// flush re-indexes everything marked dirty.
func (l *Ledger) flush() {
	l.flushModels()
	l.flushLeaves()
	l.flushDomains()
	l.flushShared()
}

// flushModels re-indexes the dirty hosts in byModel.
func (l *Ledger) flushModels() {
	x := &l.idx
	for _, h := range x.dirtyHosts {
		x.hostDirty[h] = false
		x.indexModel(l, h)
	}
	x.dirtyHosts = x.dirtyHosts[:0]
}

// flushLeaves re-indexes the dirty hosts of every innermost domain in
// byLeaf.
func (l *Ledger) flushLeaves() {
	x := &l.idx
	for _, d := range x.dirtyLeaves {
		x.leafListed[d] = false
		l.flushLeaf(d)
	}
	x.dirtyLeaves = x.dirtyLeaves[:0]
}

// flushLeaf re-indexes the dirty hosts of innermost domain leaf in byLeaf
// (what a query under leaf reads).
func (l *Ledger) flushLeaf(leaf DomainID) {
	x := &l.idx
	for h := x.leafHead[leaf]; h != NoHost; h = x.leafNext[h] {
		x.leafDirty[h] = false
		x.indexLeaf(l, h)
	}
	x.leafHead[leaf] = NoHost
}

// flushDomains re-indexes the dirty domains of every level in byLevel.
func (l *Ledger) flushDomains() {
	for lv := range l.idx.dirtyDoms {
		l.flushLevel(Level(lv))
	}
}

// flushLevel re-indexes the dirty domains of level lv in byLevel (what
// a query at lv reads).
func (l *Ledger) flushLevel(lv Level) {
	x := &l.idx
	t := x.byLevel[lv]
	for _, d := range x.dirtyDoms[lv] {
		x.domDirty[d] = false
		if x.domFree[d] < 0 { // left the index (a removed host's fabric)
			continue
		}
		free := l.freeWhole[d]
		if old := x.domFree[d]; old != free {
			t.Delete(levelKey(old, d))
			t.ReplaceOrInsert(levelKey(free, d))
			x.domFree[d] = free
		}
	}
	x.dirtyDoms[lv] = x.dirtyDoms[lv][:0]
}

// flushShared re-indexes the dirty GPUs in shared.
func (l *Ledger) flushShared() {
	x := &l.idx
	for _, g := range x.dirtyGPUs {
		x.gpuDirty[g] = false
		x.indexShared(l, g)
	}
	x.dirtyGPUs = x.dirtyGPUs[:0]
}

func (x *ledgerIndex) check(l *Ledger) error {
	l.flush()
	c := l.c
	nHosts := 0
	for h := range c.hosts {
		hx := &c.hosts[h]
		if hx.nGPU == 0 || c.Removed(HostID(h)) {
			if x.hostFree[h] != -1 || x.leafFree[h] != -1 {
				return fmt.Errorf("index: host %s without GPUs or removed, but indexed", hx.name)
			}
			continue
		}
		nHosts++
		free := l.freeWhole[hx.domain]
		if x.hostFree[h] != free || x.leafFree[h] != free {
			return fmt.Errorf("index: host %s indexed with %d/%d free GPUs, has %d", hx.name, x.hostFree[h], x.leafFree[h], free)
		}
		if !x.byLeaf.Has(leafKey(hx.parent, free, HostID(h))) || !x.byModel.Has(modelKey(hx.model, free, int32(h))) {
			return fmt.Errorf("index: host %s missing from the host indexes", hx.name)
		}
	}
	if x.byLeaf.Len() != nHosts || x.byModel.Len() != nHosts {
		return fmt.Errorf("index: %d/%d host entries for %d hosts with GPUs", x.byLeaf.Len(), x.byModel.Len(), nHosts)
	}
	for lv, t := range x.byLevel {
		if t == nil {
			continue
		}
		doms := c.levelDomains[lv]
		if t.Len() != len(doms) {
			return fmt.Errorf("index: level %s has %d entries for %d domains", c.LevelName(Level(lv)), t.Len(), len(doms))
		}
		for _, d := range doms {
			if x.domFree[d] != l.freeWhole[d] || !t.Has(levelKey(l.freeWhole[d], d)) {
				return fmt.Errorf("index: domain %s indexed with %d free GPUs, has %d", c.domains[d].name, x.domFree[d], l.freeWhole[d])
			}
		}
	}
	nShared := 0
	for gi := range l.gpu {
		s := &l.gpu[gi]
		if s.mode == ModeShared && s.used < MilliPerGPU && l.allocatable(GPUID(gi)) {
			nShared++
			m := c.hosts[c.gpus[gi].host].model
			if !x.shared.Has(modelKey(m, int32(MilliPerGPU-s.used), int32(gi))) {
				return fmt.Errorf("index: shared GPU %s missing", c.GPUName(GPUID(gi)))
			}
		}
	}
	if x.shared.Len() != nShared {
		return fmt.Errorf("index: %d shared entries for %d shared GPUs", x.shared.Len(), nShared)
	}
	return nil
}
