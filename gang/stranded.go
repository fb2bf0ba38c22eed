package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// LevelFragmentation is the free capacity at one placement level that no
// pending request could use.
type LevelFragmentation struct {
	Level topology.Level
	Name  string
	// Free is the number of free GPUs in the cluster.
	Free int
	// Stranded is how many of them no pending request could use if every
	// request had to fit inside one domain of this level (or of its own
	// required level, when that is tighter).
	Stranded int
}

// Ratio returns Stranded/Free, or 0 when nothing is free.
func (f LevelFragmentation) Ratio() float64 {
	if f.Free == 0 {
		return 0
	}
	return float64(f.Stranded) / float64(f.Free)
}

// Stranded measures fragmentation per topology level for a set of pending
// requests (the node- and cluster-level FGD measure is package frag's): for
// each level L, the free GPUs that no request could use when it has to fit
// inside one domain at L, or at its own innermost required level if that
// is inside L.
//
// A request could use a free GPU g at level L when g's host could take one
// of its tasks (acceptable model, healthy, allowed by AllowHost, enough
// CPU, memory and free GPUs) and the domain D around g at that level could
// hold its minimum gang by counting: for every whole-GPU group, the hosts of
// D that fit a task offer at least Min tasks' worth of free GPUs (each
// offering ⌊free/GPUs⌋ tasks, bounded by CPU and memory), and they have the
// gang's whole GPUs and milli-GPU free in total. Counting is a necessary
// condition for a placement, so Stranded never counts a GPU a request could
// use, and may miss some that a full placement attempt would find
// unusable. At LevelFabric, D is the GPU's fabric domain (GPUs outside any
// fabric are stranded there). Free GPUs are allocatable whole-free GPUs;
// partly shared GPUs are not counted.
//
// Requests with identical demand are evaluated once. Cost O(distinct
// requests × levels × (hosts × groups + GPUs)); it allocates its scratch
// space. Stranded does not change the ledger.
func Stranded(l *topology.Ledger, pending []*Request) []LevelFragmentation {
	c := l.Cluster()
	nl := c.NumLevels()
	ng := c.NumGPUs()
	usable := make([][]bool, nl)
	for i := range usable {
		usable[i] = make([]bool, ng)
	}
	// Distinct requests by demand, in a deterministic order.
	type keyed struct {
		key string
		r   *Request
	}
	var reqs []keyed
	for _, r := range pending {
		if r == nil || !r.c.SameLineage(c) {
			continue
		}
		reqs = append(reqs, keyed{demandKey(r), r})
	}
	slices.SortStableFunc(reqs, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	reqs = slices.CompactFunc(reqs, func(a, b keyed) bool { return a.key == b.key })

	e := &engine{}
	var p Placement
	st := &strandScratch{
		stamp: make([]uint32, c.NumDomains()),
		free:  make([]int, c.NumDomains()),
		milli: make([]int64, c.NumDomains()),
		fits:  make([]bool, c.NumHosts()),
	}
	for _, kr := range reqs {
		r := kr.r
		e.bind(l, r, &p)
		e.newEpoch()
		e.s = scope{lv: c.LevelCluster(), dom: c.Root(), fabric: topology.NoDomain, hosts: c.DomainHostList(c.Root())}
		st.slots = growSlots(st.slots, len(r.Groups), c.NumDomains())
		for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
			st.fits[h] = false
			for i := range r.Groups {
				g := &r.Groups[i]
				if g.Kind != TaskCPU && e.hostReason(h, g) == reasonNone && e.gpuFits(h, g) {
					st.fits[h] = true
					break
				}
			}
		}
		inner := r.Within()
		haveOwn := false
		for lv := topology.Level(0); int(lv) < nl; lv++ {
			if lv < inner {
				st.mark(e, r, lv, usable[lv])
				continue
			}
			// At and outside its own required level, a request is held to
			// that level: the answer is the same at every such level.
			if !haveOwn {
				st.own = st.snapshot(e, r, inner)
				haveOwn = true
			}
			for g, ok := range st.own {
				usable[lv][g] = usable[lv][g] || ok
			}
		}
	}
	out := make([]LevelFragmentation, nl)
	for lv := range out {
		f := LevelFragmentation{Level: topology.Level(lv), Name: c.LevelName(topology.Level(lv))}
		for g := topology.GPUID(0); int(g) < ng; g++ {
			if l.GPUIsFree(g) {
				f.Free++
				if !usable[lv][g] {
					f.Stranded++
				}
			}
		}
		out[lv] = f
	}
	return out
}

// demandKey identifies what a request needs, for deduplication.
func demandKey(r *Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|", r.Within())
	for _, gi := range r.order {
		g := &r.Groups[gi]
		fmt.Fprintf(&b, "%d:%d:%d:%d:%s:%d:%d:%v;", g.Kind, g.Min, g.GPUs, g.Milli, g.MIGProfile, g.CPUMilli, g.MemoryMiB, g.Models)
	}
	if r.AllowHost != nil || r.AllowGPU != nil || r.groupFilters() {
		// Filters make requests incomparable: keep each.
		fmt.Fprintf(&b, "|%p", r)
	}
	return b.String()
}

type strandScratch struct {
	epoch uint32
	stamp []uint32
	free  []int
	milli []int64
	slots [][]int // per group, per domain
	fits  []bool  // per host: could take one task of the request
	own   []bool  // per GPU: usable at the request's own level
}

func growSlots(s [][]int, groups, doms int) [][]int {
	for len(s) < groups {
		s = append(s, make([]int, doms))
	}
	return s
}

// unit returns the domain at level lv that GPU g (of host h) counts in.
func unit(c *topology.Cluster, h topology.HostID, g topology.GPUID, lv topology.Level) topology.DomainID {
	if lv == topology.LevelFabric {
		return c.GPUFabric(g)
	}
	return c.HostAt(h, lv)
}

// mark sets out[g] for the free GPUs request r could use at level lv.
func (st *strandScratch) mark(e *engine, r *Request, lv topology.Level, out []bool) {
	c, l := e.c, e.l
	st.epoch++
	touch := func(d topology.DomainID) {
		if st.stamp[d] != st.epoch {
			st.stamp[d] = st.epoch
			st.free[d], st.milli[d] = 0, 0
			for i := range r.Groups {
				st.slots[i][d] = 0
			}
		}
	}
	// Sum, per domain at lv, what the fitting hosts offer.
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if !st.fits[h] {
			continue
		}
		first, n := c.HostGPUs(h)
		for k := 0; k < n; k++ {
			g := first + topology.GPUID(k)
			d := unit(c, h, g, lv)
			if d == topology.NoDomain {
				continue
			}
			touch(d)
			if l.GPUIsFree(g) {
				st.free[d]++
			}
			st.milli[d] += int64(l.GPUFreeMilli(g))
		}
		// Task slots per group: whole GPUs per unit domain.
		for i := range r.Groups {
			g := &r.Groups[i]
			if g.Kind != TaskWhole || e.hostReason(h, g) != reasonNone {
				continue
			}
			limit := hostTaskCap(e, h, g)
			// Free GPUs of h per unit domain (one domain per host at tree
			// levels; each fabric domain of the host at LevelFabric).
			for k := 0; k < n; k++ {
				d := unit(c, h, first+topology.GPUID(k), lv)
				if d == topology.NoDomain || seenUnit(c, h, first, k, d, lv) {
					continue
				}
				free := 0
				for j := k; j < n; j++ {
					x := first + topology.GPUID(j)
					if unit(c, h, x, lv) == d && l.GPUIsFree(x) {
						free++
					}
				}
				st.slots[i][d] += min(free/g.GPUs, limit)
			}
		}
	}
	d := r.MinDemand()
	ok := func(dom topology.DomainID) bool {
		if st.stamp[dom] != st.epoch || st.free[dom] < d.GPUs || st.milli[dom] < d.Milli {
			return false
		}
		for i := range r.Groups {
			if g := &r.Groups[i]; g.Kind == TaskWhole && st.slots[i][dom] < g.Min {
				return false
			}
		}
		return true
	}
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if !st.fits[h] {
			continue
		}
		first, n := c.HostGPUs(h)
		for k := 0; k < n; k++ {
			g := first + topology.GPUID(k)
			if dom := unit(c, h, g, lv); dom != topology.NoDomain && ok(dom) && l.GPUIsFree(g) {
				out[g] = true
			}
		}
	}
}

// snapshot returns the GPUs r could use at its own level lv.
func (st *strandScratch) snapshot(e *engine, r *Request, lv topology.Level) []bool {
	own := st.own
	if len(own) != e.c.NumGPUs() {
		own = make([]bool, e.c.NumGPUs())
	} else {
		clear(own)
	}
	st.mark(e, r, lv, own)
	return own
}

// hostTaskCap bounds the tasks of g host h could take by its CPU and
// memory.
func hostTaskCap(e *engine, h topology.HostID, g *Group) int {
	limit := 1 << 30
	if g.CPUMilli > 0 {
		limit = min(limit, int(e.l.CPUFree(h)/g.CPUMilli))
	}
	if g.MemoryMiB > 0 {
		limit = min(limit, int(e.l.MemoryFree(h)/g.MemoryMiB))
	}
	return limit
}

// seenUnit reports whether one of the first k GPUs of h counts in d.
func seenUnit(c *topology.Cluster, h topology.HostID, first topology.GPUID, k int, d topology.DomainID, lv topology.Level) bool {
	for j := 0; j < k; j++ {
		if unit(c, h, first+topology.GPUID(j), lv) == d {
			return true
		}
	}
	return false
}
