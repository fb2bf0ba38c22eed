package gang

import (
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Protection says whether a placer keeps jobs much smaller than a domain
// out of domains that are wholly free at the levels big gangs ask for.
//
// A protected domain is a multi-host accelerator fabric domain (a GB200
// NVL72 rack: LevelFabric when some fabric domain spans hosts) or a domain
// of the innermost network level (the ToR), whose every healthy GPU is
// free and which holds at least Options.ProtectRatio times the GPUs of the
// job being placed (CPU-only jobs count as one GPU). When protection is on,
// a host inside a protected domain is offered to a job only after every
// other host of the scope (unless the job's own scope is that domain or
// inside it): small jobs land there only when nothing else fits (what
// Volcano's HyperNode bin-packing calls fading). CPU-only tasks then also
// go to hosts without GPUs first and then to the hosts with the fewest
// free GPUs, instead of in host ID order.
//
// The check reads the ledger's per-domain counters (free and healthy
// GPUs): O(1) per candidate host, no scan. Skipping a protected domain
// skips its hosts at once in the best- and worst-fit orders (one index
// seek); after shieldLook protected domains met in one walk the order
// gives up protecting for the rest of that walk, so that placing on a
// nearly idle cluster stays cheap (every domain is then wholly free, and
// keeping one whole matters least).
type Protection uint8

// Protections.
const (
	// ProtectDefault: on for the "topology" policy (the Scheduler's
	// default), off for the others.
	ProtectDefault Protection = iota
	// ProtectOn: on for any policy.
	ProtectOn
	// ProtectOff: off.
	ProtectOff
)

// defaultProtectRatio is the ratio used when Options.ProtectRatio is 0.
const defaultProtectRatio = 8

// shieldLook is how many protected domains one walk of a host order skips
// before it stops protecting (see Protection).
const shieldLook = 8

// protecting reports whether policy kind k protects under option p.
func protecting(p Protection, k policyKind) bool {
	return p == ProtectOn || p == ProtectDefault && k == kindTopology
}

// initProtect records, once per cluster, the levels whose domains can be
// protected and, for multi-host fabric domains, each host's fabric domain
// with its host range when the range is contiguous (so that an order can
// jump past it).
func (e *engine) initProtect(c *topology.Cluster) {
	e.protTree = e.protTree[:0]
	if inner := topology.LevelHost + 1; inner < c.LevelCluster() {
		e.protTree = append(e.protTree, inner)
	}
	e.hostFab, e.fabLo, e.fabHi = nil, nil, nil
	if !e.multiHost {
		return
	}
	n := c.NumHosts()
	e.hostFab = make([]topology.DomainID, n)
	e.fabLo = make([]topology.HostID, n)
	e.fabHi = make([]topology.HostID, n)
	for h := topology.HostID(0); int(h) < n; h++ {
		e.hostFab[h], e.fabLo[h], e.fabHi[h] = topology.NoDomain, h, h+1
	}
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		gs := c.DomainGPUs(d)
		if len(gs) == 0 {
			continue
		}
		lo, hi := c.GPUHost(gs[0]), c.GPUHost(gs[len(gs)-1])+1
		if lo+1 == hi {
			continue // one host: protecting it is best fit's business
		}
		contiguous := true
		var hosts int
		prev := topology.NoHost
		for _, g := range gs {
			if h := c.GPUHost(g); h != prev {
				hosts++
				prev = h
			}
		}
		contiguous = hosts == int(hi-lo)
		for _, g := range gs {
			h := c.GPUHost(g)
			e.hostFab[h] = d
			if contiguous {
				e.fabLo[h], e.fabHi[h] = lo, hi
			}
		}
	}
}

// bindProtect sets the protection of one Place call: on when the policy
// protects and the cluster has protected levels; a domain protects against
// this request when it holds at least ratio × its GPUs.
func (e *engine) bindProtect(on bool, ratio int, r *Request) {
	e.protect = on
	e.shield = on && (len(e.protTree) > 0 || e.multiHost)
	d := r.FullDemand()
	gpus := max(1, int((d.Milli+topology.MilliPerGPU-1)/topology.MilliPerGPU))
	e.shieldMin = ratio * gpus
}

// whollyFree reports whether domain d is protected for the current
// request: every healthy GPU free, and large enough.
func (e *engine) whollyFree(d topology.DomainID) bool {
	hg := e.l.HealthyGPUs(d)
	return hg >= e.shieldMin && e.l.FreeGPUs(d) == hg
}

// shielded reports whether host h lies in a protected domain below scope
// level slv, and the host range [lo, hi) an order may skip with it (h
// alone when the domain's hosts are not contiguous). O(protected levels).
func (e *engine) shielded(h topology.HostID, slv topology.Level) (lo, hi topology.HostID, ok bool) {
	return e.shieldedIn(h, -1, slv)
}

// shieldedIn is shielded for the protected levels strictly between above
// and below.
func (e *engine) shieldedIn(h topology.HostID, above, below topology.Level) (lo, hi topology.HostID, ok bool) {
	l := e.l
	hd := e.c.HostDomain(h)
	hg := l.HealthyGPUs(hd)
	if hg == 0 || l.FreeGPUs(hd) < hg {
		// A host with a GPU in use (or none healthy) lies in no wholly
		// free domain.
		return 0, 0, false
	}
	for i := len(e.protTree) - 1; i >= 0; i-- {
		lv := e.protTree[i]
		if lv >= below || lv <= above {
			continue
		}
		if d := e.c.HostAt(h, lv); d != topology.NoDomain && e.whollyFree(d) {
			lo, hi = e.c.DomainHosts(d)
			if int(hi-lo) != len(e.c.DomainHostList(d)) {
				// Hosts joined live: the range spans other domains' hosts.
				lo, hi = h, h+1
			}
			return lo, hi, true
		}
	}
	if e.hostFab != nil && below > topology.LevelFabric && above < topology.LevelFabric {
		if d := e.hostFab[h]; d != topology.NoDomain && e.whollyFree(d) {
			return e.fabLo[h], e.fabHi[h], true
		}
	}
	return 0, 0, false
}

// shieldAbove reports whether some protected level lies above level lv
// (where a domain order at lv must keep out of protected domains).
func (e *engine) shieldAbove(lv topology.Level) bool {
	if !e.shield {
		return false
	}
	for _, x := range e.protTree {
		if x > lv {
			return true
		}
	}
	return false
}

// firstHost returns a host of domain d (its first).
func (e *engine) firstHost(d topology.DomainID) topology.HostID {
	if gs := e.c.DomainGPUs(d); len(gs) > 0 && e.c.DomainKindOf(d) == topology.KindFabric {
		return e.c.GPUHost(gs[0])
	}
	if hs := e.c.DomainHostList(d); len(hs) > 0 {
		return hs[0]
	}
	lo, _ := e.c.DomainHosts(d)
	return lo
}

// next returns the next candidate domain. With protection, domains inside
// protected domains at levels above the order's are deferred as in
// hostOrder.next (without jumps: each is one index step).
func (o *domOrder) next() (topology.DomainID, bool) {
	for {
		d, ok := o.step()
		if !ok {
			if o.sk.deferred {
				o.begin(o.e, o.lv, o.need, o.milli, o.g)
				o.shield = false
				continue
			}
			return topology.NoDomain, false
		}
		if f := o.e.r.AllowDomain; f != nil && o.lv != topology.LevelHost && !f(o.lv, d) {
			continue
		}
		if o.shield {
			h := o.e.firstHost(d)
			if lo, hi, sh := o.e.shieldedIn(h, o.lv, o.e.c.LevelCluster()); sh {
				if o.sk.skip(lo, hi) {
					o.shield = false
					return d, true
				}
				o.passShielded(d, lo, hi)
				continue
			}
		}
		return d, true
	}
}

// passShieldedOff turns passShielded off (tests compare the walks).
var passShieldedOff = false

// passShielded moves a best- or worst-fit walk past the domains that
// follow d in its order and that next would defer for the same protected
// domain (hosts [lo, hi)) right after d: the domains of d's level whose
// IDs follow d's (precede it, for worst fit) with d's free count, up to
// the first that next would not defer that way. Each of them would cost
// an index step only to be deferred without changing the walk's state
// (the protected domain is the one just met, so skip counts nothing new):
// in a wholly free ToR of 32 hosts, 31 steps. The domains passed over
// are checked here on the ledger's counters instead, in ID order
// (Cluster.DomainsAt), which is the order's within one free count.
func (o *domOrder) passShielded(d topology.DomainID, lo, hi topology.HostID) {
	f := o.last.free
	if passShieldedOff || (o.kind != ordBest && o.kind != ordWorst) || topology.DomainID(o.last.h) != d || f <= 0 {
		return
	}
	e := o.e
	doms := e.c.DomainsAt(o.lv)
	i, ok := slices.BinarySearch(doms, d)
	if !ok {
		return
	}
	dir := 1
	if o.kind == ordWorst {
		dir = -1
	}
	last := d
	for k := i + dir; k >= 0 && k < len(doms); k += dir {
		x := doms[k]
		h := e.firstHost(x)
		if h < lo || h >= hi {
			break
		}
		if e.l.FreeGPUs(x) != f {
			continue // elsewhere in the order: not passed over
		}
		if a := e.r.AllowDomain; a == nil || a(o.lv, x) {
			if xlo, xhi, sh := e.shieldedIn(h, o.lv, e.c.LevelCluster()); !sh || xlo != lo || xhi != hi {
				break
			}
		}
		last = x
	}
	o.last.h = topology.HostID(last)
}

// shieldBelow reports whether some protected level lies below scope
// level slv.
func (e *engine) shieldBelow(slv topology.Level) bool {
	if !e.shield {
		return false
	}
	if e.hostFab != nil && slv > topology.LevelFabric {
		return true
	}
	for _, lv := range e.protTree {
		if lv < slv {
			return true
		}
	}
	return false
}

// next returns the next candidate host. With protection, hosts in
// protected domains are deferred: the walk skips them (a whole domain at a
// time where the order allows), and when it runs out having skipped some,
// it starts again from the beginning without protection. After
// shieldLook skipped domains it stops protecting for the rest of the walk.
func (o *hostOrder) next() (topology.HostID, bool) {
	for {
		h, ok := o.step()
		if !ok {
			if o.sk.deferred {
				o.restart()
				continue
			}
			return topology.NoHost, false
		}
		// A host this attempt already touched is the gang's own (its
		// domain stays open to the rest of the gang). Only an order over
		// the overlay has an attempt: the host tier's domain walk
		// (overlay off) must not read the epoch, which still holds the
		// hosts of the last attempt, possibly of an earlier Place call.
		if o.shield && !(o.overlay && o.e.isTouched(h)) {
			if lo, hi, sh := o.e.shielded(h, o.s.lv); sh {
				if o.sk.skip(lo, hi) {
					o.shield = false
					return h, true
				}
				o.skipRange(h, lo, hi)
				continue
			}
		}
		return h, true
	}
}

// restart begins the walk again, unprotected.
func (o *hostOrder) restart() {
	o.begin(o.e, o.s, o.g, o.k, o.overlay)
	o.shield = false
}

// skipRange moves the order past the other hosts of [lo, hi) that have the
// free count h had, where the order is by (free, ID): one index seek for a
// cursor, a few steps in a gathered list. Other orders skip host by host.
func (o *hostOrder) skipRange(h, lo, hi topology.HostID) {
	if hi-lo <= 1 {
		return
	}
	f := o.e.l.HostFreeGPUs(h)
	switch {
	case o.kind != ordBest && o.kind != ordWorst:
		return
	case o.gathered:
		for o.pos < len(o.list) {
			x := o.list[o.pos]
			if o.kind == ordWorst {
				x = o.list[len(o.list)-1-o.pos]
			}
			if x.free != f || x.h < lo || x.h >= hi {
				return
			}
			o.pos++
		}
	case o.lastCur >= 0:
		i := -1
		for k, ci := range o.ch {
			if ci == o.lastCur {
				i = k
				break
			}
		}
		if i < 0 {
			return // the cursor is exhausted
		}
		cu := &o.curs[o.lastCur]
		if cu.at.free != f || cu.at.h < lo || cu.at.h >= hi {
			return
		}
		var ok bool
		if o.kind == ordBest {
			cu.at.h, cu.at.free, ok = o.e.l.NextHost(cu.dom, cu.m, f, hi-1)
		} else {
			cu.at.h, cu.at.free, ok = o.e.l.PrevHost(cu.dom, cu.m, f, lo)
		}
		if o.settle(cu, ok) {
			o.downC(i)
			return
		}
		last := len(o.ch) - 1
		o.ch[i] = o.ch[last]
		o.ch = o.ch[:last]
		if i < len(o.ch) {
			o.downC(i)
			o.upC(i)
		}
	}
}

// placeCPU places up to want tasks of CPU-only group gi under protection:
// hosts without GPUs first (ID order), then hosts by ascending free GPUs
// (the fewest first, so that a CPU-only task takes cores where GPUs are
// already in use), with hosts in protected domains last. Returns how many
// it placed.
func (pl *policy) placeCPU(gi, want int) int {
	e := &pl.e
	g := &e.r.Groups[gi]
	placed := 0
	var bare []topology.HostID // hosts without GPUs, ascending; none in a fabric scope
	if e.s.fabric == topology.NoDomain {
		bare = e.bare
	}
	for _, h := range bare {
		if placed == want {
			break
		}
		if !e.s.contains(h) {
			continue
		}
		for placed < want && e.tryTask(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h) {
			placed++
		}
	}
	if placed == want {
		return placed
	}
	o := &pl.grp
	kind := o.kind
	o.kind = ordBest
	o.begin(e, &e.s, g, 0, !e.trial)
	for placed < want {
		h, ok := o.next()
		if !ok {
			break
		}
		for placed < want && e.tryTask(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h) {
			placed++
		}
	}
	o.kind = kind
	return placed
}

// skips counts what one walk of an order deferred under protection.
type skips struct {
	deferred bool            // some candidate was deferred
	n        int             // protected domains met
	lo, hi   topology.HostID // the last one's host range
}

// skip records a candidate deferred for the protected domain of hosts
// [lo, hi) and reports whether the walk should stop protecting (more
// than shieldLook domains met).
func (k *skips) skip(lo, hi topology.HostID) bool {
	k.deferred = true
	if lo != k.lo || hi != k.hi {
		k.n++
		k.lo, k.hi = lo, hi
	}
	return k.n > shieldLook
}
