package gang

import (
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// orderKind is the host and domain order of a native policy.
type orderKind uint8

const (
	ordFirst  orderKind = iota // ascending ID; fill each host
	ordBest                    // ascending (free GPUs, ID); fill each host
	ordWorst                   // descending (free GPUs, ID); one task per pick
	ordRandom                  // cyclic from a seeded random start; one task per pick
)

type hostKey struct {
	h    topology.HostID
	free int
}

func keyLess(a, b hostKey) bool { return a.free < b.free || a.free == b.free && a.h < b.h }

// cursor walks one ordered group of hosts of the ledger's indexes (a leaf
// network domain, a model under the root, or one host).
type cursor struct {
	dom topology.DomainID
	m   topology.ModelID
	at  hostKey
}

// hostOrder yields candidate hosts of a scope for tasks needing k free
// GPUs, in a policy's order:
//
//	ordFirst  hosts in ascending ID order;
//	ordBest   ascending (free GPUs, ID), merging the ledger's ordered
//	          indexes (one cursor per leaf network domain or per model)
//	          with the hosts this attempt already touched, whose free
//	          counts the indexes do not know;
//	ordWorst  the same, descending;
//	ordRandom cyclic from a uniformly random start, a new start per task.
//
// Free counts are the ledger's minus what the current attempt took. The
// caller checks each host in full (engine.tryTask); hosts with fewer than k
// free GPUs are never yielded.
type hostOrder struct {
	kind    orderKind
	e       *engine
	s       *scope
	g       *Group // model filter; nil accepts any model
	k       int
	overlay bool // skip touched hosts in cursors and merge them from kh

	curs []cursor
	ch   []int32   // heap of cursor indices
	kh   []hostKey // heap of touched hosts

	// Small scopes are gathered in one pass over the index and sorted.
	gathered bool
	list     []hostKey // ascending (free, ID)
	tmp      []hostKey
	counts   []int32
	gatherFn func(topology.HostID, int) bool // gatherHost as a method value, made once

	pos, start int
	fresh      bool

	// protection (protect.go): shield defers hosts in protected domains,
	// sk counts them; lastCur is the cursor that yielded the last host
	// (-1: none).
	shield  bool
	sk      skips
	lastCur int32
}

// gatherMax is the largest scope (in hosts) whose candidates begin gathers
// and sorts at once (one walk of the index, a counting sort) instead of
// merging cursors that seek the index for every host. Tests lower it to
// exercise the cursors on small clusters.
var gatherMax = 1024

func (o *hostOrder) fill() bool { return o.kind == ordFirst || o.kind == ordBest }

// begin prepares the order for scope s, group g and k free GPUs.
func (o *hostOrder) begin(e *engine, s *scope, g *Group, k int, overlay bool) {
	o.e, o.s, o.g, o.k, o.overlay = e, s, g, k, overlay
	o.curs, o.ch, o.kh = o.curs[:0], o.ch[:0], o.kh[:0]
	o.pos, o.fresh, o.gathered = 0, true, false
	o.shield, o.sk, o.lastCur = e.shieldBelow(s.lv), skips{}, -1
	if o.kind == ordFirst || o.kind == ordRandom {
		return
	}
	c := e.c
	if s.fabric != topology.NoDomain {
		// Small scopes (a fabric domain's hosts): order them directly.
		for _, h := range s.hosts {
			if f := o.free(h); f >= k && o.modelOK(h) {
				o.push(hostKey{h, f})
			}
		}
		return
	}
	if s.size() <= gatherMax {
		o.gather(e, s, g, k)
		return
	}
	if overlay {
		for _, h := range e.touched {
			if s.contains(h) && o.modelOK(h) {
				if f := e.freeGPUs(h); f >= k {
					o.push(hostKey{h, f})
				}
			}
		}
	}
	mono := topology.NoModel
	if g != nil && len(g.Models) == 1 {
		mono = g.Models[0]
	}
	dk := c.DomainKindOf(s.dom)
	switch {
	case dk == topology.KindHost || s.lv == topology.LevelHost+1 || c.NumLevels() == 3:
		o.addCursor(s.dom, mono)
	case dk == topology.KindCluster:
		if g != nil && g.Models != nil {
			for _, m := range g.Models {
				o.addCursor(s.dom, m)
			}
		} else {
			for m := range c.Models() {
				o.addCursor(s.dom, topology.ModelID(m))
			}
		}
	default:
		for _, leaf := range c.DomainLeaves(s.dom) {
			o.addCursor(leaf, mono)
		}
	}
}

// gather collects the hosts of tree scope s that have k free GPUs (after
// the overlay) and an accepted model, sorted by (free, ID).
func (o *hostOrder) gather(e *engine, s *scope, g *Group, k int) {
	o.gathered = true
	o.list = o.list[:0]
	if o.gatherFn == nil {
		o.gatherFn = o.gatherHost
	}
	m := topology.NoModel
	if g != nil && len(g.Models) == 1 {
		m = g.Models[0]
	}
	e.l.AscendHosts(s.dom, m, k, o.gatherFn)
	if slices.IsSortedFunc(o.list, hostCmp) {
		return
	}
	// Counting sort by free GPUs (stable), then fix any bucket whose IDs
	// came out of order (several groups of the index interleave).
	if o.counts == nil {
		o.counts = make([]int32, topology.MaxGPUsPerHost+2)
	}
	clear(o.counts)
	for _, x := range o.list {
		o.counts[x.free+1]++
	}
	for i := 1; i < len(o.counts); i++ {
		o.counts[i] += o.counts[i-1]
	}
	o.tmp = append(o.tmp[:0], o.list...)
	for _, x := range o.tmp {
		o.list[o.counts[x.free]] = x
		o.counts[x.free]++
	}
	for lo := 0; lo < len(o.list); {
		hi := lo + 1
		for hi < len(o.list) && o.list[hi].free == o.list[lo].free {
			hi++
		}
		if b := o.list[lo:hi]; !slices.IsSortedFunc(b, hostCmp) {
			slices.SortFunc(b, hostCmp)
		}
		lo = hi
	}
}

func hostCmp(a, b hostKey) int {
	if a.free != b.free {
		return a.free - b.free
	}
	return int(a.h - b.h)
}

func (o *hostOrder) gatherHost(h topology.HostID, _ int) bool {
	if o.modelOK(h) {
		if f := o.free(h); f >= o.k {
			o.list = append(o.list, hostKey{h, f})
		}
	}
	return true
}

func (o *hostOrder) free(h topology.HostID) int {
	if o.overlay {
		return o.e.freeGPUs(h)
	}
	return o.e.l.HostFreeGPUs(h)
}

func (o *hostOrder) modelOK(h topology.HostID) bool {
	return o.g == nil || (o.g.Kind == TaskCPU || o.g.Accepts(o.e.c.HostModel(h))) && o.g.AllowsHost(h)
}

func (o *hostOrder) addCursor(d topology.DomainID, m topology.ModelID) {
	cu := cursor{dom: d, m: m}
	var ok bool
	if o.kind == ordBest {
		cu.at.h, cu.at.free, ok = o.e.l.NextHost(d, m, o.k, topology.NoHost)
	} else {
		cu.at.h, cu.at.free, ok = o.e.l.PrevHost(d, m, topology.MaxGPUsPerHost+1, topology.NoHost)
	}
	if ok = o.settle(&cu, ok); ok {
		o.curs = append(o.curs, cu)
		o.ch = append(o.ch, int32(len(o.curs)-1))
		o.upC(len(o.ch) - 1)
	}
}

// settle advances cu past hosts the order must not yield from the ledger
// (touched by this attempt, or of an unaccepted model); false when the
// cursor is exhausted.
func (o *hostOrder) settle(cu *cursor, ok bool) bool {
	l := o.e.l
	for ok {
		if o.kind == ordWorst && cu.at.free < o.k {
			return false
		}
		if !(o.overlay && o.e.isTouched(cu.at.h)) && o.modelOK(cu.at.h) {
			return true
		}
		if o.kind == ordBest {
			cu.at.h, cu.at.free, ok = l.NextHost(cu.dom, cu.m, cu.at.free, cu.at.h)
		} else {
			cu.at.h, cu.at.free, ok = l.PrevHost(cu.dom, cu.m, cu.at.free, cu.at.h)
		}
	}
	return false
}

// before reports whether a comes before b in the order.
func (o *hostOrder) before(a, b hostKey) bool {
	if o.kind == ordWorst {
		return keyLess(b, a)
	}
	return keyLess(a, b)
}

func (o *hostOrder) upC(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !o.before(o.curs[o.ch[i]].at, o.curs[o.ch[p]].at) {
			return
		}
		o.ch[i], o.ch[p] = o.ch[p], o.ch[i]
		i = p
	}
}

func (o *hostOrder) downC(i int) {
	n := len(o.ch)
	for {
		m := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < n && o.before(o.curs[o.ch[c]].at, o.curs[o.ch[m]].at) {
				m = c
			}
		}
		if m == i {
			return
		}
		o.ch[i], o.ch[m] = o.ch[m], o.ch[i]
		i = m
	}
}

func (o *hostOrder) push(k hostKey) {
	o.kh = append(o.kh, k)
	i := len(o.kh) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !o.before(o.kh[i], o.kh[p]) {
			return
		}
		o.kh[i], o.kh[p] = o.kh[p], o.kh[i]
		i = p
	}
}

func (o *hostOrder) pop() hostKey {
	top := o.kh[0]
	n := len(o.kh) - 1
	o.kh[0] = o.kh[n]
	o.kh = o.kh[:n]
	i := 0
	for {
		m := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < n && o.before(o.kh[c], o.kh[m]) {
				m = c
			}
		}
		if m == i {
			return top
		}
		o.kh[i], o.kh[m] = o.kh[m], o.kh[i]
		i = m
	}
}

// step returns the next candidate host of the order, protected or not
// (next, in protect.go, applies the protection).
func (o *hostOrder) step() (topology.HostID, bool) {
	o.lastCur = -1
	switch o.kind {
	case ordFirst:
		for o.pos < o.s.size() {
			h := o.s.hostAt(o.pos)
			o.pos++
			if o.free(h) >= o.k && o.modelOK(h) {
				return h, true
			}
		}
		return topology.NoHost, false
	case ordRandom:
		n := o.s.size()
		if n == 0 {
			return topology.NoHost, false
		}
		if o.fresh {
			o.start, o.pos, o.fresh = o.e.rng.intn(n), 0, false
		}
		for o.pos < n {
			h := o.s.hostAt((o.start + o.pos) % n)
			o.pos++
			if o.free(h) >= o.k && o.modelOK(h) {
				return h, true
			}
		}
		return topology.NoHost, false
	}
	if o.gathered {
		fromL := o.pos < len(o.list)
		var lk hostKey
		if fromL {
			lk = o.list[o.pos]
			if o.kind == ordWorst {
				lk = o.list[len(o.list)-1-o.pos]
			}
			if len(o.kh) > 0 && o.before(o.kh[0], lk) {
				fromL = false
			}
		}
		switch {
		case fromL:
			o.pos++
			return lk.h, true
		case len(o.kh) > 0:
			return o.pop().h, true
		}
		return topology.NoHost, false
	}
	fromC := len(o.ch) > 0
	if fromC && len(o.kh) > 0 && o.before(o.kh[0], o.curs[o.ch[0]].at) {
		fromC = false
	}
	switch {
	case fromC:
		o.lastCur = o.ch[0]
		cu := &o.curs[o.ch[0]]
		h := cu.at.h
		var ok bool
		if o.kind == ordBest {
			cu.at.h, cu.at.free, ok = o.e.l.NextHost(cu.dom, cu.m, cu.at.free, cu.at.h)
		} else {
			cu.at.h, cu.at.free, ok = o.e.l.PrevHost(cu.dom, cu.m, cu.at.free, cu.at.h)
		}
		if o.settle(cu, ok) {
			o.downC(0)
		} else {
			last := len(o.ch) - 1
			o.ch[0] = o.ch[last]
			o.ch = o.ch[:last]
			o.downC(0)
		}
		return h, true
	case len(o.kh) > 0:
		return o.pop().h, true
	}
	return topology.NoHost, false
}

// placed tells a one-task-per-pick order that a task went to h: worst-fit
// puts h back with its new free count, random draws a new start.
func (o *hostOrder) placed(h topology.HostID) {
	switch o.kind {
	case ordWorst:
		if f := o.free(h); f >= o.k {
			o.push(hostKey{h, f})
		}
	case ordRandom:
		o.fresh = true
	}
}

// domOrder yields the candidate domains at one level in a policy's order,
// skipping those with fewer than need free GPUs: ascending (free, ID) for
// best fit, descending for worst fit, ascending ID for first fit, cyclic
// from a seeded random start for random. At LevelHost it walks hosts.
type domOrder struct {
	kind  orderKind
	e     *engine
	lv    topology.Level
	need  int
	milli int64 // the share a task asks for (begin's milli), kept for a restart

	root scope
	ho   hostOrder
	last hostKey // last domain (h holds the DomainID)
	done bool
	// bare walks the hosts without GPUs, which the ledger's indexes do not
	// hold, at LevelHost for gangs of no whole GPU (CPU-only tasks): before
	// the indexed hosts for best fit (they have the fewest free GPUs),
	// after them for worst fit. -1 when not walking them.
	bare    int
	hoDone  bool
	barePre bool
	// band holds, for a best-fit walk of hosts for a gang of no whole GPU
	// that needs GPU capacity (shares, MIG), the hosts without a free
	// GPU whose partly used GPUs hold that capacity, in ID order (see
	// partBand); bandAt is the next to yield. The host order then starts
	// at one free GPU.
	band   []topology.HostID
	bandAt int

	pos, start int

	// protection (protect.go), at levels other than LevelHost (whose
	// host order protects itself): as in hostOrder.
	g      *Group
	shield bool
	sk     skips
}

// begin starts the walk of level lv for a demand of need free whole GPUs
// and milli milli-GPU in all (Demand.GPUs and Demand.Milli); g is the
// first group in placement order (its models filter hosts).
func (o *domOrder) begin(e *engine, lv topology.Level, need int, milli int64, g *Group) {
	o.e, o.lv, o.need, o.milli, o.done = e, lv, need, milli, false
	o.g, o.sk = g, skips{}
	o.shield = lv != topology.LevelHost && e.shieldAbove(lv)
	o.pos, o.start = 0, -1
	o.last = hostKey{h: -1, free: need}
	if o.kind == ordWorst {
		o.last = hostKey{h: -1, free: e.c.NumGPUs() + 1}
	}
	o.bare, o.hoDone = -1, false
	o.band, o.bandAt = o.band[:0], 0
	if lv == topology.LevelHost {
		o.root = scope{lv: e.c.LevelCluster(), dom: e.c.Root(), fabric: topology.NoDomain, hosts: e.c.DomainHostList(e.c.Root())}
		o.ho.kind = o.kind
		if o.kind == ordBest && need == 0 && milli > 0 {
			o.ho.begin(e, &o.root, g, 1, false)
			o.partBand(milli)
		} else {
			o.ho.begin(e, &o.root, g, need, false)
		}
		if need == 0 && len(e.bare) > 0 && (o.kind == ordBest || o.kind == ordWorst) {
			o.bare, o.barePre = 0, o.kind == ordBest
		}
	}
}

// partBand gathers the hosts with no free GPU whose partly used GPUs
// (shares, MIG instances) have milli milli-GPU free in all, with an
// accepted model, in ID order: the only hosts of the band of zero free
// GPUs that placeAt does not skip (it skips hosts with less free
// milli-GPU than the gang needs). Walking the band through the index
// would seek once per host of the whole cluster — on a busy cluster most
// of them — to find a few; here a leaf network domain whose partly used
// GPUs hold less than milli is passed over in O(1) (its free milli-GPU
// less a thousand per free GPU), and the hosts of the others are read
// from the ledger's counters without a seek. The hosts yielded, and their
// order, are those of the index walk that placeAt keeps.
func (o *domOrder) partBand(milli int64) {
	c, l := o.e.c, o.e.l
	part := func(d topology.DomainID) int64 { return l.FreeMilli(d) - int64(l.FreeGPUs(d))*topology.MilliPerGPU }
	for _, d := range c.DomainsAt(topology.LevelHost + 1) {
		if part(d) < milli {
			continue
		}
		for _, h := range c.DomainHostList(d) {
			hd := c.HostDomain(h)
			if l.FreeGPUs(hd) == 0 && l.FreeMilli(hd) >= milli && o.ho.modelOK(h) {
				o.band = append(o.band, h)
			}
		}
	}
}

// nextBare returns the next host without GPUs, if the order walks them.
func (o *domOrder) nextBare() (topology.HostID, bool) {
	if o.bare < 0 || o.bare >= len(o.e.bare) {
		return topology.NoHost, false
	}
	o.bare++
	return o.e.bare[o.bare-1], true
}

// step returns the next domain of the order, protected or not (next, in
// protect.go, applies the protection).
func (o *domOrder) step() (topology.DomainID, bool) {
	if o.done {
		return topology.NoDomain, false
	}
	c, l := o.e.c, o.e.l
	if o.lv == topology.LevelHost {
		if o.barePre {
			if h, ok := o.nextBare(); ok {
				return c.HostDomain(h), true
			}
		}
		if o.bandAt < len(o.band) {
			o.bandAt++
			return c.HostDomain(o.band[o.bandAt-1]), true
		}
		if !o.hoDone {
			if h, ok := o.ho.next(); ok {
				return c.HostDomain(h), true
			}
			o.hoDone = true
		}
		if h, ok := o.nextBare(); ok {
			return c.HostDomain(h), true
		}
		o.done = true
		return topology.NoDomain, false
	}
	switch o.kind {
	case ordBest, ordWorst:
		var d topology.DomainID
		var f int
		var ok bool
		if o.kind == ordBest {
			d, f, ok = l.NextDomain(o.lv, o.last.free, topology.DomainID(o.last.h))
		} else {
			d, f, ok = l.PrevDomain(o.lv, o.last.free, topology.DomainID(o.last.h))
			if ok && f < o.need {
				ok = false
			}
		}
		if !ok {
			o.done = true
			return topology.NoDomain, false
		}
		o.last = hostKey{topology.HostID(d), f}
		return d, true
	}
	doms := c.DomainsAt(o.lv)
	n := len(doms)
	if o.start < 0 {
		o.start = 0
		if o.kind == ordRandom && n > 0 {
			o.start = o.e.rng.intn(n)
		}
	}
	for o.pos < n {
		d := doms[(o.start+o.pos)%n]
		o.pos++
		if l.FreeGPUs(d) >= o.need {
			return d, true
		}
	}
	o.done = true
	return topology.NoDomain, false
}
