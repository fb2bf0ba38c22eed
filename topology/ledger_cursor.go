package topology

// Resumable ordered queries. AscendHosts and AscendDomains hand every entry
// to a callback in one go; the cursors below return one entry at a time and
// resume after any (free, ID) key, so a caller can merge several ordered
// streams (the ToRs of a spine, the models of a cluster) or walk an order
// while it mutates the ledger. Each call costs O(log n) plus the entries of
// other models it skips; none allocates.

// keyAfter reports whether (free, id) comes after (free0, id0) in ascending
// (free GPUs, ID) order.
func keyAfter(free int, id int32, free0 int, id0 int32) bool {
	return free > free0 || free == free0 && id > id0
}

// clampFree bounds a free-GPU count to what the index keys can hold.
func clampFree(free int) int32 {
	switch {
	case free < 0:
		return 0
	case free > MaxGPUsPerHost+1:
		return MaxGPUsPerHost + 1
	}
	return int32(free)
}

// NextHost returns the host that follows (free, after) in the ascending
// (free GPUs, HostID) order of the hosts under domain d with model m
// (NoModel: any), with its free GPU count. Pass after = NoHost to start at
// the first host with at least free free GPUs. Hosts without GPUs are never
// returned.
//
// d may be a host domain, an innermost network domain, the root, or (at
// O(leaves below d × log hosts) per call) any other network domain. Under
// the root with NoModel the order spans all models. Cost: O(log hosts) under
// an innermost network domain or the root with a model given; O(models × log
// hosts) under the root with NoModel.
func (l *Ledger) NextHost(d DomainID, m ModelID, free int, after HostID) (HostID, int, bool) {
	c := l.c
	if free < 0 {
		free, after = 0, NoHost
	}
	if free > MaxGPUsPerHost {
		return NoHost, 0, false
	}
	dom := &c.domains[d]
	switch {
	case dom.kind == KindHost:
		h := dom.host
		hf := int(l.freeWhole[d])
		if c.hosts[h].nGPU > 0 && (m == NoModel || c.hosts[h].model == m) && keyAfter(hf, int32(h), free, int32(after)) {
			return h, hf, true
		}
	case len(c.netLvls) == 0 || dom.kind == KindNetwork && dom.level == LevelHost+1:
		return l.nextInLeaf(d, m, free, after)
	case dom.kind == KindCluster:
		if m != NoModel {
			return l.nextInModel(m, free, after)
		}
		best, bestFree := NoHost, 0
		for mi := range c.models {
			if h, hf, ok := l.nextInModel(ModelID(mi), free, after); ok && (best == NoHost || !keyAfter(hf, int32(h), bestFree, int32(best))) {
				best, bestFree = h, hf
			}
		}
		return best, bestFree, best != NoHost
	case dom.kind == KindNetwork:
		best, bestFree := NoHost, 0
		for _, leaf := range c.DomainLeaves(d) {
			if h, hf, ok := l.nextInLeaf(leaf, m, free, after); ok && (best == NoHost || !keyAfter(hf, int32(h), bestFree, int32(best))) {
				best, bestFree = h, hf
			}
		}
		return best, bestFree, best != NoHost
	}
	return NoHost, 0, false
}

func (l *Ledger) nextInLeaf(leaf DomainID, m ModelID, free int, after HostID) (HostID, int, bool) {
	c := l.c
	l.flushLeaf(leaf)
	out, outFree := NoHost, 0
	l.idx.byLeaf.AscendGreaterOrEqual(leafKey(leaf, clampFree(free), 0)+uint64(uint32(after+1)), func(k uint64) bool {
		if DomainID(k>>41) != leaf {
			return false
		}
		h := HostID(uint32(k))
		if m != NoModel && c.hosts[h].model != m {
			return true
		}
		out, outFree = h, int(k>>32&0x1ff)
		return false
	})
	return out, outFree, out != NoHost
}

func (l *Ledger) nextInModel(m ModelID, free int, after HostID) (HostID, int, bool) {
	l.flushModels()
	out, outFree := NoHost, 0
	l.idx.byModel.AscendGreaterOrEqual(modelKey(m, clampFree(free), 0)+uint64(uint32(after+1)), func(k uint64) bool {
		if ModelID(k>>48) == m {
			out, outFree = HostID(uint32(k)), int(uint16(k>>32))
		}
		return false
	})
	return out, outFree, out != NoHost
}

// PrevHost returns the host that precedes (free, before) in the ascending
// (free GPUs, HostID) order of the hosts under d with model m (NoModel:
// any): the next one when walking that order backwards. Pass free =
// MaxGPUsPerHost+1 and before = NoHost to start at the host with the most
// free GPUs (ties to the highest HostID). d and the cost are as for
// NextHost.
func (l *Ledger) PrevHost(d DomainID, m ModelID, free int, before HostID) (HostID, int, bool) {
	c := l.c
	if free > MaxGPUsPerHost+1 {
		free, before = MaxGPUsPerHost+1, NoHost
	}
	if free < 0 || free == 0 && before <= 0 {
		return NoHost, 0, false
	}
	if before == NoHost {
		before = 0
	}
	dom := &c.domains[d]
	switch {
	case dom.kind == KindHost:
		h := dom.host
		hf := int(l.freeWhole[d])
		if c.hosts[h].nGPU > 0 && (m == NoModel || c.hosts[h].model == m) && keyAfter(free, int32(before), hf, int32(h)) {
			return h, hf, true
		}
	case len(c.netLvls) == 0 || dom.kind == KindNetwork && dom.level == LevelHost+1:
		return l.prevInLeaf(d, m, free, before)
	case dom.kind == KindCluster:
		if m != NoModel {
			return l.prevInModel(m, free, before)
		}
		best, bestFree := NoHost, 0
		for mi := range c.models {
			if h, hf, ok := l.prevInModel(ModelID(mi), free, before); ok && (best == NoHost || keyAfter(hf, int32(h), bestFree, int32(best))) {
				best, bestFree = h, hf
			}
		}
		return best, bestFree, best != NoHost
	case dom.kind == KindNetwork:
		best, bestFree := NoHost, 0
		for _, leaf := range c.DomainLeaves(d) {
			if h, hf, ok := l.prevInLeaf(leaf, m, free, before); ok && (best == NoHost || keyAfter(hf, int32(h), bestFree, int32(best))) {
				best, bestFree = h, hf
			}
		}
		return best, bestFree, best != NoHost
	}
	return NoHost, 0, false
}

func (l *Ledger) prevInLeaf(leaf DomainID, m ModelID, free int, before HostID) (HostID, int, bool) {
	c := l.c
	l.flushLeaf(leaf)
	pivot := leafKey(leaf, int32(free), 0) + uint64(uint32(before))
	if pivot == leafKey(leaf, 0, 0) {
		return NoHost, 0, false
	}
	out, outFree := NoHost, 0
	l.idx.byLeaf.DescendLessOrEqual(pivot-1, func(k uint64) bool {
		if DomainID(k>>41) != leaf {
			return false
		}
		h := HostID(uint32(k))
		if m != NoModel && c.hosts[h].model != m {
			return true
		}
		out, outFree = h, int(k>>32&0x1ff)
		return false
	})
	return out, outFree, out != NoHost
}

func (l *Ledger) prevInModel(m ModelID, free int, before HostID) (HostID, int, bool) {
	l.flushModels()
	pivot := modelKey(m, int32(free), 0) + uint64(uint32(before))
	if pivot == modelKey(m, 0, 0) {
		return NoHost, 0, false
	}
	out, outFree := NoHost, 0
	l.idx.byModel.DescendLessOrEqual(pivot-1, func(k uint64) bool {
		if ModelID(k>>48) == m {
			out, outFree = HostID(uint32(k)), int(uint16(k>>32))
		}
		return false
	})
	return out, outFree, out != NoHost
}

// NextDomain returns the domain at level lv that follows (free, after) in
// ascending (free GPUs, DomainID) order, with its free GPU count. Pass after
// = NoDomain to start at the first domain with at least free free GPUs. lv
// may be LevelFabric, a network level or the cluster level; at LevelHost use
// NextHost under the root. O(log domains).
func (l *Ledger) NextDomain(lv Level, free int, after DomainID) (DomainID, int, bool) {
	c := l.c
	if free < 0 {
		free, after = 0, NoDomain
	}
	switch {
	case lv == c.LevelCluster():
		if f := int(l.freeWhole[0]); keyAfter(f, 0, free, int32(after)) {
			return 0, f, true
		}
	case lv >= 0 && int(lv) < len(l.idx.byLevel) && l.idx.byLevel[lv] != nil:
		l.flushLevel(lv)
		out, outFree := NoDomain, 0
		if free > 1<<31-1 {
			return NoDomain, 0, false
		}
		l.idx.byLevel[lv].AscendGreaterOrEqual(levelKey(int32(free), 0)+uint64(uint32(after+1)), func(k uint64) bool {
			out, outFree = DomainID(uint32(k)), int(k>>32)
			return false
		})
		return out, outFree, out != NoDomain
	}
	return NoDomain, 0, false
}

// PrevDomain returns the domain at level lv that precedes (free, before) in
// ascending (free GPUs, DomainID) order. Pass a free count above any
// domain's (e.g. the cluster's GPU count + 1) and before = NoDomain to start
// at the domain with the most free GPUs (ties to the highest ID). Levels are
// as for NextDomain. O(log domains).
func (l *Ledger) PrevDomain(lv Level, free int, before DomainID) (DomainID, int, bool) {
	c := l.c
	if before == NoDomain {
		before = 0
	}
	if free < 0 || free == 0 && before <= 0 {
		return NoDomain, 0, false
	}
	switch {
	case lv == c.LevelCluster():
		if f := int(l.freeWhole[0]); keyAfter(free, int32(before), f, 0) {
			return 0, f, true
		}
	case lv >= 0 && int(lv) < len(l.idx.byLevel) && l.idx.byLevel[lv] != nil:
		l.flushLevel(lv)
		if free > 1<<31-1 {
			free, before = 1<<31-1, 0
		}
		out, outFree := NoDomain, 0
		l.idx.byLevel[lv].DescendLessOrEqual(levelKey(int32(free), 0)+uint64(uint32(before))-1, func(k uint64) bool {
			out, outFree = DomainID(uint32(k)), int(k>>32)
			return false
		})
		return out, outFree, out != NoDomain
	}
	return NoDomain, 0, false
}
