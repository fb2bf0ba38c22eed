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
// and every query first re-indexes what is dirty (flush). Each flush costs
// O(dirty × log n); nothing ever rescans the cluster.
type ledgerIndex struct {
	byLeaf  *keySet
	byModel *keySet
	byLevel []*keySet // indexed by Level; nil where not kept
	shared  *keySet

	hostFree   []int32 // free GPUs as indexed, per host; -1 if not indexed
	hostDirty  []bool
	dirtyHosts []HostID

	domFree   []int32 // free GPUs as indexed, per domain; -1 if not indexed
	domDirty  []bool
	dirtyDoms []DomainID

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
	x.domFree = make([]int32, len(c.domains))
	x.domDirty = make([]bool, len(c.domains))
	x.dirtyDoms = make([]DomainID, 0, 64)
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
		x.hostFree[h] = -1
		x.indexHost(l, HostID(h))
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
		byLeaf:     x.byLeaf.Clone(),
		byModel:    x.byModel.Clone(),
		shared:     x.shared.Clone(),
		byLevel:    make([]*keySet, len(x.byLevel)),
		hostFree:   append([]int32(nil), x.hostFree...),
		hostDirty:  append([]bool(nil), x.hostDirty...),
		dirtyHosts: append(make([]HostID, 0, cap(x.dirtyHosts)), x.dirtyHosts...),
		domFree:    append([]int32(nil), x.domFree...),
		domDirty:   append([]bool(nil), x.domDirty...),
		dirtyDoms:  append(make([]DomainID, 0, cap(x.dirtyDoms)), x.dirtyDoms...),
		gpuMilli:   append([]int16(nil), x.gpuMilli...),
		gpuDirty:   append([]bool(nil), x.gpuDirty...),
		dirtyGPUs:  append(make([]GPUID, 0, cap(x.dirtyGPUs)), x.dirtyGPUs...),
	}
	for i, t := range x.byLevel {
		if t != nil {
			n.byLevel[i] = t.Clone()
		}
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
	copy(x.domFree, s.domFree)
	copy(x.domDirty, s.domDirty)
	x.dirtyDoms = append(x.dirtyDoms[:0], s.dirtyDoms...)
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
	if gg.fabric != NoDomain {
		x.touchDomain(gg.fabric)
	}
	if l.batch.on { // the host and its networks: once, at endClaim
		l.batch.touched = true
		return
	}
	x.touchHost(gg.host)
	top := gg.ancLo + gg.ancN
	for i := top - 1 - int32(len(l.c.netLvls)); i < top-1; i++ {
		x.touchDomain(l.c.anc[i])
	}
}

// touchShared marks g for the shared-GPU index.
func (x *ledgerIndex) touchShared(g GPUID) {
	if !x.gpuDirty[g] {
		x.gpuDirty[g] = true
		x.dirtyGPUs = append(x.dirtyGPUs, g)
	}
}

// touchHost marks host h for re-indexing.
func (x *ledgerIndex) touchHost(h HostID) {
	if !x.hostDirty[h] {
		x.hostDirty[h] = true
		x.dirtyHosts = append(x.dirtyHosts, h)
	}
}

func (x *ledgerIndex) touchDomain(d DomainID) {
	if !x.domDirty[d] && x.domFree[d] >= 0 {
		x.domDirty[d] = true
		x.dirtyDoms = append(x.dirtyDoms, d)
	}
}

// indexHost brings host h's entries up to date.
func (x *ledgerIndex) indexHost(l *Ledger, h HostID) {
	c := l.c
	hx := &c.hosts[h]
	if hx.nGPU == 0 {
		return
	}
	if c.Removed(h) {
		if old := x.hostFree[h]; old >= 0 {
			x.byLeaf.Delete(leafKey(hx.parent, old, h))
			x.byModel.Delete(modelKey(hx.model, old, int32(h)))
			x.hostFree[h] = -1
		}
		return
	}
	free := l.freeWhole[hx.domain]
	old := x.hostFree[h]
	if old == free {
		return
	}
	if old >= 0 {
		x.byLeaf.Delete(leafKey(hx.parent, old, h))
		x.byModel.Delete(modelKey(hx.model, old, int32(h)))
	}
	x.byLeaf.ReplaceOrInsert(leafKey(hx.parent, free, h))
	x.byModel.ReplaceOrInsert(modelKey(hx.model, free, int32(h)))
	x.hostFree[h] = free
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
	x := &l.idx
	for _, h := range x.dirtyHosts {
		x.hostDirty[h] = false
		x.indexHost(l, h)
	}
	x.dirtyHosts = x.dirtyHosts[:0]
	for _, d := range x.dirtyDoms {
		x.domDirty[d] = false
		if x.domFree[d] < 0 { // left the index (a removed host's fabric)
			continue
		}
		free := l.freeWhole[d]
		if old := x.domFree[d]; old != free {
			t := x.byLevel[l.c.domains[d].level]
			t.Delete(levelKey(old, d))
			t.ReplaceOrInsert(levelKey(free, d))
			x.domFree[d] = free
		}
	}
	x.dirtyDoms = x.dirtyDoms[:0]
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
			if x.hostFree[h] != -1 {
				return fmt.Errorf("index: host %s without GPUs or removed, but indexed", hx.name)
			}
			continue
		}
		nHosts++
		free := l.freeWhole[hx.domain]
		if x.hostFree[h] != free {
			return fmt.Errorf("index: host %s indexed with %d free GPUs, has %d", hx.name, x.hostFree[h], free)
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
