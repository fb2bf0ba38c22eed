package preempt

import (
	"math"
	"slices"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// Fragmentation-aware victims (Config.FragAware).
//
// Among victim sets that let the gang place and whose lost work is within
// the band [L*, Band(L*, ε)] of the least lost work L*, the planner prefers
// the one after which the fewest free GPUs are stranded at the gang's
// level, then the cheapest (Cost.Less). A free GPU is stranded at level L
// when it lies in a domain at L (the gang's required level; the cluster
// when none) whose free GPUs cannot hold another gang of the same size:
// stranded(D) = free(D) if free(D) < the gang's GPUs, else 0, counted
// after the victims are gone and the gang placed. Victim sets whose
// stranded capacity is the same are compared by cost, so with ε = 0 the
// rule only breaks ties of lost work.
//
// How: after the plain search has found L*, a second pass visits the
// domains again by lower bound, up to the band, and enumerates in each
// (branch and bound, with the band as the bound) the minimal victim sets
// (removing any one victim makes the gang fail) that place the gang,
// comparing them by (stranded, cost). Only the sets' domains at the level
// are counted (the others do not change), from the ledger's counters:
// O(claims) per set. The pass is exact in domains of at most
// Config.MaxExact candidates; in larger ones it compares the one set the
// greedy search finds there. It shares the plan's MaxPlacements and MaxNodes budgets. Gangs
// of one task (searched host by host) are not refined.

// Band returns the most lost work a victim set may have to be considered
// by the fragmentation-aware refinement: least + ⌊ε × least⌋.
func Band(least GPUTime, eps float64) GPUTime {
	if eps <= 0 || least <= 0 {
		return least
	}
	x := math.Floor(float64(least) * eps)
	if x >= float64(maxGPUTime-least) {
		return maxGPUTime
	}
	return least + GPUTime(x)
}

// StrandedAt returns the free GPUs stranded at level lv for gangs of need
// GPUs, summed over domains: Σ over the domains D at lv of free(D) when
// free(D) < need. It reads the ledger's counters: O(domains at lv).
func StrandedAt(l *topology.Ledger, lv topology.Level, need int) int {
	n := 0
	for _, d := range l.Cluster().DomainsAt(lv) {
		if f := l.FreeGPUs(d); f < need {
			n += f
		}
	}
	return n
}

// fragPass is the second pass (see above): it may replace r.best by a set
// in the band that strands fewer GPUs.
func (r *run) fragPass(heap0 []heapItem) {
	if r.need.GPUs == 0 || r.solo {
		return
	}
	r.band = Band(r.best.key.lost, r.s.cfg.FragEpsilon)
	r.bestStrand = r.strandedDelta(r.best.set, &r.best.placement.p)
	r.banding = true
	defer func() { r.banding = false }()
	r.heap = append(r.heap[:0], heap0...)
	r.heaped, r.pops = false, 0
	r.searchDomains(r.solveBand)
}

// solveBand enumerates the band's minimal sets in domain x, or, in a
// domain with more than Config.MaxExact candidates, offers the greedy
// search's set there.
func (r *run) solveBand(x *dom) {
	r.resetSet(x)
	if r.nUnits() <= r.s.cfg.MaxExact {
		r.dfsBand(x, 0)
	} else {
		r.greedy(x)
	}
	r.resetSet(x)
}

// offerBand records the current set (whose placement is in r.scratch) if
// it lies in the band and strands fewer GPUs than the best, or as many at
// a lower cost.
func (r *run) offerBand(x *dom) {
	if r.cur.lost > r.band {
		return
	}
	s := r.strandedDelta(r.set, &r.scratch)
	if s < r.bestStrand || s == r.bestStrand && r.cur.less(r.best.key) {
		r.record(x)
		r.bestStrand = s
	}
}

// dfsBand is branch and bound over r.order[i:] with the band as the
// bound. A set that places the gang ends its branch (its supersets are
// not minimal).
func (r *run) dfsBand(x *dom, i int) {
	r.nodes++
	if r.nodes > r.s.cfg.MaxNodes || r.budgetHit || r.cur.lost > r.band {
		return
	}
	if r.feasible() && len(r.set) > 0 {
		ok, anti := r.evaluate(false)
		if anti {
			return
		}
		if ok {
			r.considerBand(x)
			return
		}
	}
	if i >= r.nUnits() {
		return
	}
	lb := r.fractional(i, r.needA-r.cnt.have)
	if lb == maxGPUTime || r.cur.lost+lb > r.band {
		return
	}
	ui, _ := r.unitAt(i)
	if r.canAdd(ui) {
		r.add(ui)
		r.dfsBand(x, i+1)
		r.remove(ui)
	}
	r.dfsBand(x, i+1)
}

// considerBand records the current set (which places the gang) if it is
// minimal and strands fewer GPUs than the best, or as many at a lower
// cost.
func (r *run) considerBand(x *dom) {
	set := slices.Clone(r.set)
	for _, ui := range set {
		r.remove(ui)
		ok := false
		// The counter covers domain x only; the subset's victims may
		// free room in another domain (countsElsewhere), where it then
		// places the gang and makes the set not minimal.
		if r.feasible() || r.qblock || r.countsElsewhere() {
			ok, _ = r.evaluate(true)
		}
		r.add(ui)
		if ok {
			return // not minimal: a subset places the gang
		}
	}
	if !r.reevaluate() {
		return
	}
	s := r.strandedDelta(r.set, &r.scratch)
	if s < r.bestStrand || s == r.bestStrand && r.cur.less(r.best.key) {
		r.record(x)
		r.bestStrand = s
	}
}

// strandedDelta returns how the GPUs stranded at the run's level change
// when the units of set release their claims and the gang takes p's:
// summed over the domains at the level the claims touch.
func (r *run) strandedDelta(set []int32, p *gang.Placement) int {
	doms := r.strandDoms[:0]
	add := func(cl *topology.Claim) {
		if r.lv == topology.LevelFabric {
			for _, g := range cl.GPUs {
				if d := r.c.GPUAt(g.GPU, topology.LevelFabric); d != topology.NoDomain && !slices.Contains(doms, d) {
					doms = append(doms, d)
				}
			}
			return
		}
		if d := r.c.HostAt(cl.Host, r.lv); d != topology.NoDomain && !slices.Contains(doms, d) {
			doms = append(doms, d)
		}
	}
	r.rel = r.rel[:0]
	for _, ui := range set {
		for _, cl := range r.claims(&r.units[ui]) {
			r.rel = append(r.rel, cl)
			add(&cl)
		}
	}
	for i := range p.Claims {
		add(&p.Claims[i])
	}
	r.strandDoms = doms
	need := r.need.GPUs
	sum := func() int {
		n := 0
		for _, d := range doms {
			if f := r.l.FreeGPUs(d); f < need {
				n += f
			}
		}
		return n
	}
	before := sum()
	if err := r.l.TrialRelease(r.rel...); err != nil {
		return 0
	}
	if err := r.l.TrialAllocate(p.Claims...); err != nil {
		_ = r.l.TrialRestore(r.rel...)
		return 0
	}
	after := sum()
	if err := r.l.TrialRelease(p.Claims...); err != nil {
		panic("preempt: releasing a trial placement failed: " + err.Error())
	}
	if err := r.l.TrialRestore(r.rel...); err != nil {
		panic("preempt: restoring trial-released claims failed: " + err.Error())
	}
	return after - before
}
