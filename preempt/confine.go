package preempt

import "github.com/gpusched/gpusched/topology"

// Confining what-if placements. Once the gang has failed to place as
// things are, releasing a victim set can only make room in the domains (at
// the search's level) that the set's claims touch: every other domain is
// as it was. evaluate then gives the Placer an AllowDomain filter for
// those domains, so that a placement attempt skips the untouched ones at
// O(1) each instead of looking at their hosts. On a large cluster with
// many domains that have the gang's free GPUs but not the hosts for it,
// this is what keeps a defragmentation decision in milliseconds.

// confineTo marks the domains at the search's level that claims touch and
// installs the filter on the request; unconfine removes it.
func (r *run) confineTo(claims []topology.Claim) {
	nd := len(r.c.DomainsAt(r.lv))
	if len(r.domStamp) != nd {
		r.domStamp = make([]uint32, nd)
		r.domEpoch = 0
	}
	r.domEpoch++
	if r.domEpoch == 0 {
		clear(r.domStamp)
		r.domEpoch = 1
	}
	for i := range claims {
		cl := &claims[i]
		if r.lv == topology.LevelFabric {
			for _, g := range cl.GPUs {
				if di := r.lx.gpuDom[g.GPU]; di >= 0 {
					r.domStamp[di] = r.domEpoch
				}
			}
			continue
		}
		if di := r.lx.hostDom[cl.Host]; di >= 0 {
			r.domStamp[di] = r.domEpoch
		}
	}
	if r.allowFn == nil {
		r.allowFn = r.allowDomain
	}
	r.req.AllowDomain = r.allowFn
}

func (r *run) unconfine() { r.req.AllowDomain = nil }

// allowDomain reports whether domain d at level lv lies in a touched
// domain of the search's level (levels above it are not confined).
func (r *run) allowDomain(lv topology.Level, d topology.DomainID) bool {
	if lv > r.lv {
		return true
	}
	var di int32 = -1
	if r.c.DomainKindOf(d) == topology.KindFabric {
		gs := r.c.DomainGPUs(d)
		if len(gs) == 0 {
			return false
		}
		if r.lv == topology.LevelFabric {
			di = r.lx.gpuDom[gs[0]]
		} else {
			di = r.lx.hostDom[r.c.GPUHost(gs[0])]
		}
	} else {
		lo, hi := r.c.DomainHosts(d)
		if lo >= hi {
			return false
		}
		di = r.lx.hostDom[lo]
	}
	return di >= 0 && r.domStamp[di] == r.domEpoch
}
