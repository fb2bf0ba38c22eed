package gang

import (
	"math/bits"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// engine is the state one placer keeps for one cluster: host shapes, a
// tentative overlay of the tasks placed so far in the current attempt, and
// scratch space, all reused from call to call so that placing allocates
// nothing in the steady state.
//
// Native policies never write to the ledger: tasks placed tentatively live
// in the overlay (per host: GPUs, CPU and memory taken; per GPU: whole,
// share or MIG slots taken), versioned by an epoch so that starting a new
// attempt costs O(1). Delegating policies (frag) instead trial-allocate each
// task on the ledger (topology.Ledger.TrialAllocate) so that frag's queries
// see it, and release everything before returning.
type engine struct {
	c *topology.Cluster
	l *topology.Ledger
	r *Request
	p *Placement

	shapes    []*hostShape
	hostShape []int32
	largest   []int             // per level: GPUs of its largest domain
	hostMax   []hostMax         // per model (hosts without accelerators last): the largest host
	bare      []topology.HostID // hosts without GPUs, ascending
	multiHost bool              // some fabric domain spans hosts

	// protection (protect.go): per cluster, the protected tree levels and
	// each host's multi-host fabric domain with its host range; per call,
	// whether protection is on and the smallest protected domain.
	protTree  []topology.Level
	hostFab   []topology.DomainID
	fabLo     []topology.HostID
	fabHi     []topology.HostID
	protect   bool
	shield    bool
	shieldMin int

	// The overlay: hOn and gOn are bitsets of the hosts and GPUs it
	// touches; hTaken, hCPU, hMem and gOv are what it took of each, valid
	// only where the bit is set. A check of a host or GPU the overlay
	// does not touch (the most) reads only a bitset, a few kilobytes for
	// the whole cluster and so in cache, not a line of a per-host or
	// per-GPU array (hundreds of kilobytes, cold in a cycle that reads
	// much else). Every host whose bit is set is in touched, and every
	// GPU whose bit is set is one of theirs, so that newEpoch clears both
	// in O(touched).
	hOn     []uint64
	gOn     []uint64
	hTaken  []int32 // ledger-free GPUs the overlay has used
	hCPU    []int64
	hMem    []int64
	gOv     []gpuOverlay
	touched []topology.HostID
	shared  []topology.GPUID // GPUs the overlay shares (for packing shares)

	trial bool // tasks are trial-allocated on the ledger instead of the overlay
	s     scope

	rng     rng
	excl    []topology.HostID // hosts a delegated pick must not return again
	allowFn func(topology.HostID) bool
	// fragGroup is the group of the task a delegated pick is for
	// (fragTask sets it before each pick; allowHost reads it).
	fragGroup *Group
	countFn   func(topology.HostID, int) bool // countSlots as a method value, made once
	cntGroup  *Group
	cnt       int
	cntWant   int
	gcs       []topology.GPUClaim
	fabIDs    []topology.DomainID
	fabSets   []gpuSet
	hosts     []topology.HostID // fabric scope members
}

// hostMax is the most one host of a model offers, each resource on its
// own (not necessarily the same host), and how many hosts there are.
type hostMax struct {
	hosts    int
	gpus     int
	cpu, mem int64
}

type gpuOverlay struct {
	whole bool
	milli int16
	mig   uint16
}

// scope is where one attempt may place tasks: the hosts of a tree domain,
// or the GPUs of a fabric domain.
type scope struct {
	lv     topology.Level
	dom    topology.DomainID
	fabric topology.DomainID // NoDomain, or the fabric domain every GPU must be in
	// hosts are the hosts in scope, ascending: a tree domain's
	// (Cluster.DomainHostList, shared, read only) or a fabric's members.
	hosts []topology.HostID
}

func (s *scope) contains(h topology.HostID) bool {
	_, ok := slices.BinarySearch(s.hosts, h)
	return ok
}

// size returns the number of hosts in scope and hostAt the i-th.
func (s *scope) size() int { return len(s.hosts) }

func (s *scope) hostAt(i int) topology.HostID { return s.hosts[i] }

// bind prepares e for a call on ledger l.
func (e *engine) bind(l *topology.Ledger, r *Request, p *Placement) {
	c := l.Cluster()
	if !r.c.SameLineage(c) {
		panic("gang: request resolved against another cluster than the ledger's")
	}
	if e.c != c {
		e.init(c)
	}
	if e.allowFn == nil {
		e.allowFn = e.allowHost
		e.countFn = e.countSlots
	}
	e.l, e.r, e.p = l, r, p
	e.trial = false
	e.protect, e.shield = false, false
	e.rng = rng(r.Seed ^ 0x9e3779b97f4a7c15)
}

func (e *engine) init(c *topology.Cluster) {
	e.c = c
	n, ng := c.NumHosts(), c.NumGPUs()
	e.hOn = make([]uint64, (n+63)/64)
	e.hTaken = make([]int32, n)
	e.hCPU = make([]int64, n)
	e.hMem = make([]int64, n)
	e.gOn = make([]uint64, (ng+63)/64)
	e.gOv = make([]gpuOverlay, ng)
	e.touched = e.touched[:0]
	e.largest = make([]int, c.NumLevels())
	for lv := topology.Level(0); int(lv) < c.NumLevels(); lv++ {
		for _, d := range c.DomainsAt(lv) {
			e.largest[lv] = max(e.largest[lv], len(c.DomainGPUs(d)))
		}
	}
	e.hostMax = make([]hostMax, len(c.Models())+1)
	e.bare = e.bare[:0]
	for h := topology.HostID(0); int(h) < n; h++ {
		info := c.Host(h)
		if info.NumGPUs == 0 {
			e.bare = append(e.bare, h)
		}
		m := int(info.Model)
		if m < 0 {
			m = len(e.hostMax) - 1
		}
		x := &e.hostMax[m]
		x.hosts++
		x.gpus = max(x.gpus, info.NumGPUs)
		x.cpu = max(x.cpu, info.CPUMilli)
		x.mem = max(x.mem, info.MemoryMiB)
	}
	e.multiHost = false
	for _, d := range c.DomainsAt(topology.LevelFabric) {
		if gs := c.DomainGPUs(d); len(gs) > 0 && c.GPUHost(gs[0]) != c.GPUHost(gs[len(gs)-1]) {
			e.multiHost = true
			break
		}
	}
	e.initProtect(c)
	e.hostShape = make([]int32, n)
	e.shapes = e.shapes[:0]
	byTemplate := map[string]int32{}
	for h := topology.HostID(0); int(h) < n; h++ {
		t := c.Host(h).Template
		si, ok := byTemplate[t]
		if !ok {
			si = int32(len(e.shapes))
			e.shapes = append(e.shapes, buildShape(c, h))
			byTemplate[t] = si
		}
		e.hostShape[h] = si
	}
}

// newEpoch forgets the overlay: O(hosts it touched and their GPUs).
func (e *engine) newEpoch() {
	for _, h := range e.touched {
		clearBit(e.hOn, int(h))
		first, n := e.c.HostGPUs(h)
		for i := range n {
			clearBit(e.gOn, int(first)+i)
		}
	}
	e.touched = e.touched[:0]
	e.shared = e.shared[:0]
}

func bit(set []uint64, i int) bool { return set[i>>6]&(1<<(i&63)) != 0 }
func setBit(set []uint64, i int)   { set[i>>6] |= 1 << (i & 63) }
func clearBit(set []uint64, i int) { set[i>>6] &^= 1 << (i & 63) }

func (e *engine) ovHost(h topology.HostID) (taken int32, cpu, mem int64) {
	if !e.isTouched(h) {
		return 0, 0, 0
	}
	return e.hTaken[h], e.hCPU[h], e.hMem[h]
}

func (e *engine) ovGPU(g topology.GPUID) gpuOverlay {
	if !e.gpuTouched(g) {
		return gpuOverlay{}
	}
	return e.gOv[g]
}

func (e *engine) isTouched(h topology.HostID) bool { return bit(e.hOn, int(h)) }

// gpuTouched reports whether the overlay takes some of GPU g.
func (e *engine) gpuTouched(g topology.GPUID) bool { return bit(e.gOn, int(g)) }

// freeGPUs returns the free GPUs of h minus those the overlay took.
func (e *engine) freeGPUs(h topology.HostID) int {
	t, _, _ := e.ovHost(h)
	return e.l.HostFreeGPUs(h) - int(t)
}

// hostReason returns why a task of g cannot run on h regardless of GPUs,
// or reasonNone. The order is the order of reasons in explanations.
func (e *engine) hostReason(h topology.HostID, g *Group) Reason {
	if g.Kind != TaskCPU && !g.Accepts(e.c.HostModel(h)) {
		return ReasonModel
	}
	if !e.l.HostUsable(h) {
		return ReasonHealth
	}
	if e.r.AllowHost != nil && !e.r.AllowHost(h) || !g.AllowsHost(h) {
		return ReasonQuota
	}
	_, cpu, mem := e.ovHost(h)
	if e.l.CPUFree(h)-cpu < g.CPUMilli {
		return ReasonCPU
	}
	if e.l.MemoryFree(h)-mem < g.MemoryMiB {
		return ReasonMemory
	}
	return reasonNone
}

// gpuOK reports whether GPU g may be used at all in the current scope.
func (e *engine) gpuOK(g topology.GPUID) bool {
	if e.s.fabric != topology.NoDomain && e.c.GPUFabric(g) != e.s.fabric {
		return false
	}
	return e.r.AllowGPU == nil || e.r.AllowGPU(g)
}

// wholeAvail returns the GPUs of h that are free, untouched by the overlay
// and usable in scope.
func (e *engine) wholeAvail(h topology.HostID) gpuSet {
	var set gpuSet
	if !e.l.HostUsable(h) { // no GPU of h is free
		return set
	}
	first, n := e.c.HostGPUs(h)
	for i := 0; i < n; i++ {
		g := first + topology.GPUID(i)
		if e.l.GPUIsIdle(g) && !e.gpuTouched(g) && e.gpuOK(g) {
			set.add(i)
		}
	}
	return set
}

// chooseWhole picks k GPUs of avail on h (see fabrics and pickWhole).
func (e *engine) chooseWhole(h topology.HostID, k int, avail gpuSet) gpuSet {
	e.fabrics(h, avail)
	return e.pickWhole(h, k, avail)
}

// fabrics groups the GPUs of avail on h by accelerator fabric domain, for
// pickWhole. GPUs outside any fabric domain are left out.
func (e *engine) fabrics(h topology.HostID, avail gpuSet) {
	first, n := e.c.HostGPUs(h)
	e.fabIDs, e.fabSets = e.fabIDs[:0], e.fabSets[:0]
	for i := 0; i < n; i++ {
		if !avail.has(i) {
			continue
		}
		f := e.c.GPUFabric(first + topology.GPUID(i))
		if f == topology.NoDomain {
			continue
		}
		j := slices.Index(e.fabIDs, f)
		if j < 0 {
			j = len(e.fabIDs)
			e.fabIDs = append(e.fabIDs, f)
			e.fabSets = append(e.fabSets, gpuSet{})
		}
		e.fabSets[j].add(i)
	}
	if len(e.fabIDs) == 1 && e.fabSets[0] == avail {
		// One fabric domain over every available GPU: nothing to choose.
		e.fabIDs, e.fabSets = e.fabIDs[:0], e.fabSets[:0]
	}
}

// pickWhole picks k GPUs of avail on h: inside one accelerator fabric
// domain of the host if one can hold them (best fit among the groups
// fabrics found, ties to the lowest domain ID), then by the host's
// PCIe/NUMA tree (see hostShape.choose). avail must be a subset of what
// fabrics was given.
func (e *engine) pickWhole(h topology.HostID, k int, avail gpuSet) gpuSet {
	best, bestF := -1, 0
	for j := range e.fabIDs {
		f := e.fabSets[j].and(avail).count()
		if f >= k && (best < 0 || f < bestF || f == bestF && e.fabIDs[j] < e.fabIDs[best]) {
			best, bestF = j, f
		}
	}
	if best >= 0 {
		avail = avail.and(e.fabSets[best])
	}
	sh := e.shapes[e.hostShape[h]]
	if sh.n <= 64 {
		return gpuSet{sh.choose64(0, k, avail[0])}
	}
	return sh.choose(0, k, avail)
}

// fillWhole places up to max tasks of whole-GPU group gi on h and returns
// how many it placed: as many as the host's GPUs, CPU and memory allow,
// each task's GPUs chosen by locality among those left (or, when buddy is
// set, inside a wholly free buddy cell of the smallest size that holds
// it).
func (e *engine) fillWhole(gi int, h topology.HostID, max int, buddy bool) int {
	g := &e.r.Groups[gi]
	k := g.GPUs
	if e.freeGPUs(h) < k || e.hostReason(h, g) != reasonNone {
		return 0
	}
	_, cpu, mem := e.ovHost(h)
	if g.CPUMilli > 0 {
		max = min(max, int((e.l.CPUFree(h)-cpu)/g.CPUMilli))
	}
	if g.MemoryMiB > 0 {
		max = min(max, int((e.l.MemoryFree(h)-mem)/g.MemoryMiB))
	}
	avail := e.wholeAvail(h)
	sh := e.shapes[e.hostShape[h]]
	first, _ := e.c.HostGPUs(h)
	if sh.n <= 64 && (buddy || sh.oneFabric) {
		return e.fillSmall(gi, g, h, sh, first, avail[0], max, buddy)
	}
	if !buddy {
		e.fabrics(h, avail)
	}
	n := 0
	for n < max && avail.count() >= k {
		var set gpuSet
		if buddy {
			cell := sh.freeCell(k, avail)
			if cell < 0 {
				break
			}
			set = sh.choose(cell, k, avail)
		} else {
			set = e.pickWhole(h, k, avail)
		}
		e.gcs = e.gcs[:0]
		for w := range set {
			for b := set[w]; b != 0; b &= b - 1 {
				e.gcs = append(e.gcs, topology.GPUClaim{GPU: first + topology.GPUID(w<<6|bits.TrailingZeros64(b)), Kind: topology.ClaimWhole})
			}
		}
		if !e.record(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h, g) {
			break
		}
		avail = avail.andNot(set)
		n++
	}
	return n
}

// fillSmall is fillWhole for hosts of at most 64 GPUs, on one machine
// word: the buddy policy's, and the others' when the host's GPUs lie in
// one fabric domain (or none), the common case.
func (e *engine) fillSmall(gi int, g *Group, h topology.HostID, sh *hostShape, first topology.GPUID, avail uint64, max int, buddy bool) int {
	k := g.GPUs
	n := 0
	for n < max && bits.OnesCount64(avail) >= k {
		var set uint64
		if buddy {
			cell := sh.freeCell64(k, avail)
			if cell < 0 {
				break
			}
			set = sh.choose64(cell, k, avail)
		} else {
			set = sh.choose64(0, k, avail)
		}
		cnt := bits.OnesCount64(set)
		e.gcs = slices.Grow(e.gcs[:0], cnt)[:cnt]
		for i, b := 0, set; b != 0; i, b = i+1, b&(b-1) {
			e.gcs[i] = topology.GPUClaim{GPU: first + topology.GPUID(bits.TrailingZeros64(b)), Kind: topology.ClaimWhole}
		}
		if !e.record(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h, g) {
			break
		}
		avail &^= set
		n++
	}
	return n
}

// record adds a task's claim to the placement and to the tentative state.
// It refuses (false) a task the request's MaxPerHost keeps off h.
func (e *engine) record(t TaskRef, h topology.HostID, g *Group) bool {
	if e.r.MaxPerHost > 0 && e.tasksOn(h) >= e.r.MaxPerHost || !g.AllowsHost(h) {
		return false
	}
	if e.trial {
		e.p.addClaim(t, h, g.CPUMilli, g.MemoryMiB, e.gcs...)
		if err := e.l.TrialAllocate(e.p.Claims[len(e.p.Claims)-1]); err != nil {
			e.p.truncate(len(e.p.Claims) - 1)
			return false
		}
		return true
	}
	if !e.isTouched(h) {
		setBit(e.hOn, int(h))
		e.hTaken[h], e.hCPU[h], e.hMem[h] = 0, 0, 0
		e.touched = append(e.touched, h)
	}
	e.hCPU[h] += g.CPUMilli
	e.hMem[h] += g.MemoryMiB
	usable := e.l.HostUsable(h) // GPUIsFree of h's GPUs, the host checked once
	for _, gc := range e.gcs {
		x := gc.GPU
		if !e.gpuTouched(x) {
			if usable && e.l.GPUIsIdle(x) {
				e.hTaken[h]++
			}
			setBit(e.gOn, int(x))
			e.gOv[x] = gpuOverlay{}
		}
		o := &e.gOv[x]
		switch gc.Kind {
		case topology.ClaimWhole:
			o.whole = true
		case topology.ClaimShare:
			if o.milli == 0 {
				e.shared = append(e.shared, x)
			}
			o.milli += int16(gc.Milli)
		case topology.ClaimMIG:
			m := e.c.HostModel(h)
			o.mig |= e.c.Model(m).MIGProfiles[gc.Profile].Mask(int(gc.Start))
		}
	}
	e.p.addClaim(t, h, g.CPUMilli, g.MemoryMiB, e.gcs...)
	return true
}

// tasksOn returns how many tasks the placement has on h.
func (e *engine) tasksOn(h topology.HostID) int {
	n := 0
	for i := range e.p.Claims {
		if e.p.Claims[i].Host == h {
			n++
		}
	}
	return n
}

// unrecord takes back the last task record added to the overlay (not in
// trial mode): its claim leaves the placement, its CPU, memory, GPUs,
// shares and MIG slots the overlay. GPUs the overlay no longer touches
// become untouched again, so record and unrecord nest like a stack.
func (e *engine) unrecord() {
	p := e.p
	i := len(p.Claims) - 1
	cl := &p.Claims[i]
	h := cl.Host
	e.hCPU[h] -= cl.CPUMilli
	e.hMem[h] -= cl.MemoryMiB
	for _, gc := range cl.GPUs {
		x := gc.GPU
		o := &e.gOv[x]
		switch gc.Kind {
		case topology.ClaimWhole:
			o.whole = false
		case topology.ClaimShare:
			o.milli -= int16(gc.Milli)
			if o.milli == 0 {
				// x joined shared when this task opened it; every task
				// recorded after that has been taken back already.
				if n := len(e.shared); n > 0 && e.shared[n-1] == x {
					e.shared = e.shared[:n-1]
				}
			}
		case topology.ClaimMIG:
			m := e.c.HostModel(h)
			o.mig &^= e.c.Model(m).MIGProfiles[gc.Profile].Mask(int(gc.Start))
		}
		if *o == (gpuOverlay{}) {
			clearBit(e.gOn, int(x)) // untouched again
			if e.l.GPUIsFree(x) {
				e.hTaken[h]--
			}
		}
	}
	p.truncate(i)
}

// tryTask places one task of group gi on host h if it fits there, and
// returns whether it did. The GPUs are chosen by locality (whole), best fit
// on partly used GPUs (share, MIG), or none (CPU).
func (e *engine) tryTask(t TaskRef, h topology.HostID) bool {
	g := &e.r.Groups[t.Group]
	if g.Kind != TaskWhole && e.hostReason(h, g) != reasonNone {
		return false
	}
	e.gcs = e.gcs[:0]
	switch g.Kind {
	case TaskWhole:
		return e.fillWhole(int(t.Group), h, 1, false) == 1
	case TaskShare:
		x, ok := e.shareGPU(h, g.Milli)
		if !ok {
			return false
		}
		e.gcs = append(e.gcs, topology.GPUClaim{GPU: x, Kind: topology.ClaimShare, Milli: int32(g.Milli)})
	case TaskMIG:
		x, start, ok := e.migGPU(h, g)
		if !ok {
			return false
		}
		e.gcs = append(e.gcs, topology.GPUClaim{GPU: x, Kind: topology.ClaimMIG, Profile: g.mig[e.c.HostModel(h)], Start: int8(start)})
	}
	return e.record(t, h, g)
}

// shareFree returns the milli-GPU of x a new share may take: 0 unless x is
// allocatable, usable in scope and free or shared.
func (e *engine) shareFree(x topology.GPUID) (free int, partly bool) {
	st := e.l.GPU(x)
	if st.Health != topology.Healthy || st.Mode == topology.ModeWhole || st.Mode == topology.ModeMIG || !e.gpuOK(x) {
		return 0, false
	}
	if !e.l.HostUsable(e.c.GPUHost(x)) {
		return 0, false
	}
	o := e.ovGPU(x)
	if o.whole || o.mig != 0 {
		return 0, false
	}
	used := st.UsedMilli + int(o.milli)
	return topology.MilliPerGPU - used, used > 0
}

// shareGPU picks the GPU of h for a share of milli: the partly used GPU
// with the least room that fits (best fit, ties to the lowest GPU), else a
// free GPU chosen by locality.
func (e *engine) shareGPU(h topology.HostID, milli int) (topology.GPUID, bool) {
	first, n := e.c.HostGPUs(h)
	best, bestFree := topology.NoGPU, 0
	for i := 0; i < n; i++ {
		x := first + topology.GPUID(i)
		if f, partly := e.shareFree(x); partly && f >= milli && (best == topology.NoGPU || f < bestFree) {
			best, bestFree = x, f
		}
	}
	if best != topology.NoGPU {
		return best, true
	}
	avail := e.wholeAvail(h)
	if avail.empty() {
		return topology.NoGPU, false
	}
	return first + topology.GPUID(e.chooseWhole(h, 1, avail).first()), true
}

// migSlots returns the occupied MIG slots of x, or ok=false if x cannot
// take a MIG instance (not allocatable, not usable in scope, whole or
// shared).
func (e *engine) migSlots(x topology.GPUID) (mask uint16, ok bool) {
	st := e.l.GPU(x)
	if st.Health != topology.Healthy || st.Mode == topology.ModeWhole || st.Mode == topology.ModeShared || !e.gpuOK(x) {
		return 0, false
	}
	o := e.ovGPU(x)
	if o.whole || o.milli != 0 {
		return 0, false
	}
	return st.MIGSlots | o.mig, true
}

// migStart returns the legal start slot of profile p on a GPU with
// occupied slots mask that leaves the most (profile, start) placements
// possible afterwards, ties to the lowest start; -1 if none is free.
func migStart(acc *topology.Accelerator, p topology.MIGProfileID, mask uint16) (start, after int) {
	prof := &acc.MIGProfiles[p]
	start, after = -1, -1
	for _, st := range prof.Starts {
		mm := prof.Mask(st)
		if st+prof.Size > acc.MIGSlots || mask&mm != 0 {
			continue
		}
		n := 0
		for qi := range acc.MIGProfiles {
			q := &acc.MIGProfiles[qi]
			for _, qs := range q.Starts {
				if qs+q.Size <= acc.MIGSlots && (mask|mm)&q.Mask(qs) == 0 {
					n++
				}
			}
		}
		if n > after {
			start, after = st, n
		}
	}
	return start, after
}

// migGPU picks the GPU and start slot of h for a MIG instance of g: on a
// GPU already in MIG mode, the one left with the fewest possible
// placements (best fit, ties to the lowest GPU); else a free GPU chosen by
// locality.
func (e *engine) migGPU(h topology.HostID, g *Group) (topology.GPUID, int, bool) {
	m := e.c.HostModel(h)
	if m == topology.NoModel || g.mig[m] < 0 {
		return topology.NoGPU, -1, false
	}
	acc := e.c.Model(m)
	p := g.mig[m]
	first, n := e.c.HostGPUs(h)
	best, bestStart, bestAfter := topology.NoGPU, -1, 0
	for i := 0; i < n; i++ {
		x := first + topology.GPUID(i)
		mask, ok := e.migSlots(x)
		if !ok || mask == 0 {
			continue
		}
		if st, after := migStart(acc, p, mask); st >= 0 && (best == topology.NoGPU || after < bestAfter) {
			best, bestStart, bestAfter = x, st, after
		}
	}
	if best != topology.NoGPU {
		return best, bestStart, true
	}
	avail := e.wholeAvail(h)
	if avail.empty() {
		return topology.NoGPU, -1, false
	}
	x := first + topology.GPUID(e.chooseWhole(h, 1, avail).first())
	st, _ := migStart(acc, p, 0)
	if st < 0 {
		return topology.NoGPU, -1, false
	}
	return x, st, true
}

// rng is splitmix64: small, fast, seedable, allocation-free.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a uniform integer in [0, n), n > 0.
func (r *rng) intn(n int) int {
	return int((r.next() >> 1) % uint64(n))
}
