package topology

import "math"

// Ordered queries over the ledger. Each first refreshes the index entries
// changed since the previous query (see Ledger), then answers in O(log n)
// plus the entries visited. Ties always break toward the lower ID.

// BestHost returns the host under domain d with at least k free GPUs and
// the fewest free GPUs among those (best fit), ties to the lowest HostID.
// m restricts the accelerator model; NoModel accepts any. d may be the root,
// a network domain or a host domain. Hosts without GPUs are never returned.
//
// Cost: O(log hosts) under an innermost network domain, or under the root
// with a model given; O(models × log hosts) under the root with NoModel;
// O(innermost domains below d × log hosts) under other network domains.
func (l *Ledger) BestHost(d DomainID, k int, m ModelID) (HostID, bool) {
	best, bestFree := NoHost, -1
	l.hostGroups(d, m, k, func(h HostID, free int) visit {
		if best == NoHost || free < bestFree || free == bestFree && h < best {
			best, bestFree = h, free
		}
		return skipGroup // the rest of a group is no better than its first
	})
	return best, best != NoHost
}

// AscendHosts calls fn for the hosts under domain d that have model m
// (NoModel: any) and at least minFree free GPUs, until fn returns false.
//
// Under an innermost network domain, under the root of a cluster without
// network levels, or under the root with a model given, hosts come in
// ascending (free GPUs, HostID) order. Otherwise they come in that order
// within each group (each innermost network domain below d, or each model
// under the root), one group after another. d may also be a host domain.
func (l *Ledger) AscendHosts(d DomainID, m ModelID, minFree int, fn func(h HostID, free int) bool) {
	l.hostGroups(d, m, minFree, func(h HostID, free int) visit {
		if fn(h, free) {
			return next
		}
		return stop
	})
}

type visit uint8

const (
	next      visit = iota // go on
	skipGroup              // go on with the next group
	stop                   // stop altogether
)

// hostGroups visits hosts group by group (see AscendHosts).
func (l *Ledger) hostGroups(d DomainID, m ModelID, minFree int, fn func(h HostID, free int) visit) {
	c := l.c
	if minFree < 0 {
		minFree = 0
	}
	if minFree > MaxGPUsPerHost {
		return
	}
	dom := &c.domains[d]
	switch {
	case dom.kind == KindHost:
		h := dom.host
		free := int(l.freeWhole[d])
		if c.hosts[h].nGPU > 0 && free >= minFree && (m == NoModel || c.hosts[h].model == m) {
			fn(h, free)
		}
	case len(c.netLvls) == 0 || dom.kind == KindNetwork && dom.level == LevelHost+1:
		l.ascendLeaf(d, m, minFree, fn)
	case dom.kind == KindCluster && m != NoModel:
		l.ascendModel(m, minFree, fn)
	case dom.kind == KindCluster:
		for mi := range c.models {
			if !l.ascendModel(ModelID(mi), minFree, fn) {
				return
			}
		}
	case dom.kind == KindNetwork:
		for _, leaf := range c.DomainLeaves(d) {
			if !l.ascendLeaf(leaf, m, minFree, fn) {
				return
			}
		}
	}
}

// ascendLeaf walks the hosts of one innermost domain; false means stop.
func (l *Ledger) ascendLeaf(leaf DomainID, m ModelID, minFree int, fn func(HostID, int) visit) bool {
	c := l.c
	l.flushLeaf(leaf)
	res := next
	l.idx.byLeaf.AscendGreaterOrEqual(leafKey(leaf, int32(minFree), 0), func(k uint64) bool {
		if DomainID(k>>41) != leaf {
			return false
		}
		h := HostID(uint32(k))
		if m != NoModel && c.hosts[h].model != m {
			return true
		}
		res = fn(h, int(k>>32&0x1ff))
		return res == next
	})
	return res != stop
}

// ascendModel walks the hosts of one model; false means stop.
func (l *Ledger) ascendModel(m ModelID, minFree int, fn func(HostID, int) visit) bool {
	l.flushModels()
	res := next
	l.idx.byModel.AscendGreaterOrEqual(modelKey(m, int32(minFree), 0), func(k uint64) bool {
		if ModelID(k>>48) != m {
			return false
		}
		res = fn(HostID(uint32(k)), int(uint16(k>>32)))
		return res == next
	})
	return res != stop
}

// BestDomain returns the domain at level l with at least k free GPUs and
// the fewest free GPUs among those, ties to the lowest ID. l may be
// LevelFabric, a network level, LevelHost (the best host's domain) or the
// cluster level. O(log domains).
func (l *Ledger) BestDomain(lv Level, k int) (DomainID, bool) {
	if lv == LevelHost {
		h, ok := l.BestHost(0, k, NoModel)
		if !ok {
			return NoDomain, false
		}
		return l.c.hosts[h].domain, true
	}
	var best DomainID = NoDomain
	l.AscendDomains(lv, k, func(d DomainID, free int) bool {
		best = d
		return false
	})
	return best, best != NoDomain
}

// AscendDomains calls fn for the domains at level l with at least minFree
// free GPUs in ascending (free GPUs, ID) order until fn returns false. At
// LevelHost it visits host domains in the order of AscendHosts under the
// root: ascending within each model, model after model.
func (l *Ledger) AscendDomains(lv Level, minFree int, fn func(d DomainID, free int) bool) {
	c := l.c
	if minFree < 0 {
		minFree = 0
	}
	if minFree > math.MaxInt32 { // more than any counter holds (and than the index key takes)
		return
	}
	switch {
	case lv == LevelHost:
		l.AscendHosts(0, NoModel, minFree, func(h HostID, free int) bool { return fn(c.hosts[h].domain, free) })
	case lv == c.LevelCluster():
		if int(l.freeWhole[0]) >= minFree {
			fn(0, int(l.freeWhole[0]))
		}
	case lv >= 0 && int(lv) < len(l.idx.byLevel) && l.idx.byLevel[lv] != nil:
		l.flushLevel(lv)
		l.idx.byLevel[lv].AscendGreaterOrEqual(levelKey(int32(minFree), 0), func(k uint64) bool {
			return fn(DomainID(uint32(k)), int(k>>32))
		})
	}
}

// MaxFreeDomain returns the domain at level l (fabric or network) with the
// most free GPUs, ties to the highest ID, and that count. O(log domains).
func (l *Ledger) MaxFreeDomain(lv Level) (DomainID, int) {
	c := l.c
	switch {
	case lv == c.LevelCluster():
		return 0, int(l.freeWhole[0])
	case lv == LevelHost:
		best, bestFree := NoDomain, -1
		l.flushModels()
		for mi := range c.models {
			l.idx.byModel.DescendLessOrEqual(modelKey(ModelID(mi), 0xffff, -1), func(k uint64) bool {
				if ModelID(k>>48) == ModelID(mi) {
					d := c.hosts[HostID(uint32(k))].domain
					if f := int(uint16(k >> 32)); f > bestFree || f == bestFree && d > best {
						best, bestFree = d, f
					}
				}
				return false
			})
		}
		return best, max(bestFree, 0)
	case lv >= 0 && int(lv) < len(l.idx.byLevel) && l.idx.byLevel[lv] != nil:
		l.flushLevel(lv)
		var best DomainID = NoDomain
		free := 0
		l.idx.byLevel[lv].Descend(func(k uint64) bool {
			best, free = DomainID(uint32(k)), int(k>>32)
			return false
		})
		return best, free
	}
	return NoDomain, 0
}

// AscendSharedGPUs calls fn for allocatable GPUs of model m in shared mode
// that are partly used, in ascending (free milli, GPUID) order, starting at
// minFreeMilli, until fn returns false. Fully free GPUs are not visited:
// find those through AscendHosts.
func (l *Ledger) AscendSharedGPUs(m ModelID, minFreeMilli int, fn func(g GPUID, freeMilli int) bool) {
	l.flushShared()
	if minFreeMilli < 0 {
		minFreeMilli = 0
	}
	if minFreeMilli > MilliPerGPU {
		return
	}
	l.idx.shared.AscendGreaterOrEqual(modelKey(m, int32(minFreeMilli), 0), func(k uint64) bool {
		if ModelID(k>>48) != m {
			return false
		}
		return fn(GPUID(uint32(k)), int(uint16(k>>32)))
	})
}
