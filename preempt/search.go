package preempt

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Search is the victim planner: it implements Planner, and plans
// defragmentation (Defragment). Build it with New. It keeps scratch space
// sized to the last cluster and queue tree it saw, so that planning
// allocates little in the steady state; it is not safe for concurrent use.
//
// # How a plan is found
//
//  1. If the gang places (and fits its quotas) as things are, the plan has
//     no victims (not tried for a Pending marked Unplaced).
//  2. One pass over the running jobs sorts them into eligible victims and
//     excluded ones (Exclusion): stopping, non-preemptible, inside their
//     minimum run time, at their preemption cap, or without a ground
//     (Ground: lower priority, reclaim of borrowed quota, fair share).
//     Each eligible job is a candidate as a whole gang and, for elastic
//     groups above their minimum, task by task (a shrink). The pass
//     records what each candidate frees in each domain at the gang's
//     required level (ToR, host, NVLink domain; the cluster when none),
//     counting only GPUs the gang could use.
//     A gang of one task that needs GPUs is searched host by host
//     whatever level it requires (its task sits on one host anyway), and
//     the counting below then includes CPU and memory; hosts are ranked
//     first where a single victim's lost work is at most that of the
//     cheapest victim that alone makes room on some host, the others only
//     if those do not yield a plan as cheap.
//  3. A domain is a candidate when its free GPUs (the ledger's counter)
//     plus what eligible victims hold there cover the gang. Candidates are
//     visited in ascending order of a lower bound on their cost (the GPUs
//     they lack times the cheapest lost work per GPU there, refined
//     lazily to a fractional-knapsack bound), until the bound exceeds the
//     best plan found: the cheapest domain is found without searching the
//     others.
//  4. In a domain with at most Config.MaxExact candidates, branch and
//     bound over the candidates (cheapest per GPU first) finds the
//     cheapest set that lets the gang place: sets are pruned by the bound,
//     by counting (free + freed GPUs in the domain, and tasks per host for
//     multi-GPU tasks), and by the victims' rules; a set that passes
//     counting is tried for real: its claims are trial-released on the
//     ledger, the quotas checked on a queue.WhatIf, the gang placed with
//     the Placer, and everything put back. Larger domains are searched
//     greedily: candidates are added cheapest per GPU first until the gang
//     places. If none placed because a reclaim or fair-share victim was
//     refused once its queue stopped borrowing, the greedy search runs
//     again with the victims that free no GPU a task could use (on hosts
//     too small for a task, or of a model the gang does not take) last.
//  5. Reprieve: victims are dropped, most expensive first, while the gang
//     still places without them; repeated until no victim can go, so
//     removing any one victim makes the plan fail.
//
// Cost is lexicographic (Cost.Less): lost GPU time since each victim's
// last checkpoint, then the number of victims, then their priorities. A
// victim taken from another queue (reclaim, fair share) is priced with
// the stops its own restart is expected to cause in its queue
// (Victim.RestartLost, RestartStops; see priceRestarts).
// Among equal costs the first found wins; candidates are ordered by lost
// work per GPU, then lost work, then borrowers before others, then job ID,
// so ties are broken the same way every time.
//
// Complexity: O(running jobs × claims) for the pass, O(domains at the
// level) to rank candidates (the hosts victims hold for a gang of one
// task), plus the searched domains: exhaustive search
// is exponential in MaxExact in the worst case and bounded by MaxNodes;
// every search is bounded by MaxPlacements placement attempts.
type Search struct {
	cfg Config

	// per-cluster scratch
	c        *topology.Cluster
	levels   []levelIndex // by Level, built on first use
	hostFree []int32      // counting: whole GPUs freed per host (scratch)
	gpuFreed []int32      // counting: milli-GPU freed per GPU (scratch)
	hostIn   []bool       // counting: host in counter.hosts

	r run

	// testRules, if set, is called with every rulesOK verdict (tests:
	// the naive rule must agree).
	testRules func(r *run, ok bool)
}

// levelIndex maps hosts (and, at LevelFabric, GPUs) to the index of
// their domain among the level's domains (-1: none).
type levelIndex struct {
	hostDom []int32
	gpuDom  []int32
	// hostFab (LevelFabric): the fabric domain holding every GPU of the
	// host, -1 when none or several.
	hostFab []int32
	// hostPos and minLost are scratch of a solo search at LevelHost: a
	// domain's position among the ranked ones (-1: no unit there, -2: not
	// ranked yet), and the least lost work of a unit there.
	hostPos []int32
	minLost []GPUTime
	// contig: every domain's hosts are consecutive host IDs (a cluster
	// built from a Spec; live changes may break it), so that hosts lo and
	// hi in one domain put every host between them there. At LevelFabric:
	// every host's GPUs lie in one fabric domain (hostFab), and each
	// domain's hosts are consecutive.
	contig bool
}

// consecutive reports whether every host has a domain in dom and each
// domain's hosts are consecutive host IDs; nd is the number of domains.
func consecutive(dom []int32, nd int) bool {
	seen := make([]bool, nd)
	for h, di := range dom {
		if di < 0 || h > 0 && dom[h-1] != di && seen[di] {
			return false
		}
		seen[di] = true
	}
	return true
}

// pos returns hostPos, all -1, for nd domains.
func (x *levelIndex) pos(nd int) []int32 {
	if len(x.hostPos) != nd {
		x.hostPos = make([]int32, nd)
		for i := range x.hostPos {
			x.hostPos[i] = -1
		}
	}
	return x.hostPos
}

// least returns minLost, all maxGPUTime, for nd domains.
func (x *levelIndex) least(nd int) []GPUTime {
	if len(x.minLost) != nd {
		x.minLost = make([]GPUTime, nd)
		for i := range x.minLost {
			x.minLost[i] = maxGPUTime
		}
	}
	return x.minLost
}

// run is the state of one Plan (or Defragment) call.
type run struct {
	s       *Search
	lx      *levelIndex
	snap    Snapshot
	l       *topology.Ledger
	c       *topology.Cluster
	tree    *queue.Tree
	w       *queue.WhatIf
	wtree   *queue.Tree
	req     *gang.Request
	pend    *Pending
	now     time.Time
	nowNano int64
	lv      topology.Level
	need    gang.Demand
	byGPU   bool  // the gang needs whole GPUs: amounts count GPUs, else milli-GPU
	needA   int64 // the gang's need in that unit
	k       int   // task size for per-host counting (0: off)
	kTasks  int
	kOnly   bool // every task takes k whole GPUs
	// solo: a gang of one task searched host by host (goSolo); the
	// counter then also counts CPU and memory, and GPU by GPU (soloGPU,
	// soloQ, soloMilli: see gpuQualifies).
	solo      bool
	soloGPU   gang.TaskKind
	soloQ     int
	soloMilli int32
	// everyHost: every host with GPUs is usable by the gang, its GPUs all
	// allocatable (the ledger counts every GPU of the cluster healthy, and
	// some GPU group takes every model, with no host filter), so that
	// contribute need not ask host by host.
	everyHost bool
	// relevant is what count said of the last unit removed.
	relevant bool
	qp       queue.NodeID
	demand   queue.Vector
	mask     queue.Vector
	qblock   bool // the quota blocks the gang with nothing released
	mixed    bool // collectIndexed visits a bucket of a queue tree whose grounds are decided job by job
	base     []baseCharge
	defrag   bool // planning migrations (Defragment), not preemptions
	moves    []moved

	// refusedBorrow: the greedy search refused a reclaim or fair-share
	// unit because its node no longer borrows (tryAdd); gorder is the
	// order of its second try (greedy).
	refusedBorrow bool
	gorder        []int32

	// queue-tree caches
	stamp       uint64
	leaves      []leafInfo
	path        []queue.NodeID
	onPath      []int32
	within      []bool
	withinStamp []uint64

	// candidates
	visit []*Job // jobs to classify one by one (collectIndexed)
	// restarts is, by job (as jobs), what a victim's restart is expected
	// to stop (restart.go; empty when nothing was priced); rsort is its
	// scratch.
	restarts    []restartPrice
	rsort       []int32
	jobs        []*Job
	units       []unit
	contribs    []contrib
	contribCM   []cpuMem // (solo) beside contribs
	slotLimit   []int32
	chargeArena []int64
	// ruleCharge (by job) and ruleNodes are rulesOK's scratch.
	ruleCharge []int64
	ruleNodes  []ruleNode
	eligible   int
	excluded   [NumExclusions]int

	// domains
	doms     []dom
	domUnits []int32 // units per domain, CSR by dom.ufrom..uto
	heap     []heapItem
	heaped   bool // heap is a heap (see popDomain)
	pops     int
	// tally: rankFrom's state (see tally).
	tally tally
	// freeFits counts the domains with enough GPUs free now; domAcc,
	// domTouch and slotHosts are scratch for countsElsewhere.
	freeFits  int
	domAcc    []int64
	domTouch  []int32
	slotHosts []topology.HostID
	// touched lists the hosts a solo search marked; soloBound and soloRest
	// are its first phase's bound, and whether hosts above it wait.
	touched   []int32
	soloBound GPUTime
	soloRest  bool

	// the set being built
	set       []int32 // chosen units
	chosen    []bool  // by unit
	jobCount  []int32 // chosen units per job
	jobWhole  []bool
	slotCount []int32
	cur       key
	cnt       counter
	order     []int32 // units of the domain being searched, in order (prefix)
	pool      []int32 // the rest, a heap by unitLess
	later     int     // units after those, not yet ordered (orderLater)
	nOthers   int     // countOthers (-1: not counted yet)
	amt       []int64 // by unit: amount freed in the domain being searched
	amtCPU    []int64 // (solo) by unit: CPU and memory freed there
	amtMem    []int64
	ratio     []float64
	psort     []int32 // plan's and reprieve's scratch
	rel       []topology.Claim
	scratch   gang.Placement

	// quiet: reprieve's last pass found no victim it could drop by
	// counting (nothing evaluated); settled: the greedy search recorded
	// the best set right after such a pass (polish has nothing to do).
	quiet, settled bool

	placements, nodes int
	budgetHit         bool
	inexact           bool
	inputErr          error
	quota             *queue.Block
	until             time.Time
	tooSmall          int
	tooSmallPart      bool // tooSmall counts only the ranked domains
	candidates        int
	searched          int

	// fragmentation-aware pass (fragaware.go)
	banding    bool    // searchDomains bounds by band, not the best key
	band       GPUTime // the most lost work a set of the pass may have
	bestStrand int     // stranded GPUs the best set changes by
	strandDoms []topology.DomainID

	// confined what-ifs (confine.go): the gang did not place as things
	// were, so a set can only make room in the domains it touches.
	confine  bool
	domStamp []uint32
	domEpoch uint32
	allowFn  func(topology.Level, topology.DomainID) bool
	gains    []slotGain // slotBound's scratch

	best struct {
		moves     []moved
		ok        bool
		key       key
		set       []int32
		placement keptPlacement
		dom       int32
	}
}

// keptPlacement is a copy of a placement that reuses its memory from one
// copy to the next, across plans (run.best: the best set's placement is
// replaced each time a cheaper set places, without allocating once the
// buffers have grown to the gang's size).
type keptPlacement struct {
	p       gang.Placement
	claims  []topology.Claim
	gpus    []topology.GPUClaim // backing store of p.Claims[i].GPUs
	tasks   []gang.TaskRef
	placed  []int
	relaxed []topology.Level
}

// set makes k a deep copy of src, equal to what src.Clone() returns (nil
// slices stay nil).
func (k *keptPlacement) set(src *gang.Placement) {
	n := 0
	for i := range src.Claims {
		n += len(src.Claims[i].GPUs)
	}
	k.gpus = slices.Grow(k.gpus[:0], n)
	k.claims = k.claims[:0]
	for _, c := range src.Claims {
		lo := len(k.gpus)
		k.gpus = append(k.gpus, c.GPUs...)
		c.GPUs = k.gpus[lo:len(k.gpus):len(k.gpus)]
		k.claims = append(k.claims, c)
	}
	k.p = gang.Placement{Job: src.Job, Level: src.Level, Domain: src.Domain,
		Claims:  keepView(&k.claims, src.Claims, false),
		Tasks:   keepView(&k.tasks, src.Tasks, true),
		Placed:  keepView(&k.placed, src.Placed, true),
		Relaxed: keepView(&k.relaxed, src.Relaxed, true)}
}

// keepView copies src into *buf (unless filled: *buf holds it already)
// and returns a view of it that is nil exactly when src is.
func keepView[T any](buf *[]T, src []T, fill bool) []T {
	if src == nil {
		return nil
	}
	if fill {
		*buf = append((*buf)[:0], src...)
	}
	if *buf == nil {
		*buf = []T{}
	}
	return (*buf)[:len(src):len(src)]
}

// key is a cost in comparable form: priorities shifted to be non-negative
// so that adding a victim never lowers the key.
type key struct {
	lost    GPUTime
	victims int
	prio    int64 // Σ (priority + 2^31)
}

func (a key) less(b key) bool {
	if a.lost != b.lost {
		return a.lost < b.lost
	}
	if a.victims != b.victims {
		return a.victims < b.victims
	}
	return a.prio < b.prio
}

const prioShift = 1 << 31

type dom struct {
	i               int32 // index among the level's domains
	pos             int32 // index in run.doms
	id              topology.DomainID
	free, freeMilli int64
	evict           int64 // amount eligible victims free
	evictCPU        int64 // (solo) CPU and memory they free
	evictMem        int64
	evictGPUs       int64
	minRatio        float64
	maxRatio        float64
	sumRigid        GPUTime // lost work of the rigid jobs with GPUs here
	ufrom, uto      int32
	n               int32
}

type heapItem struct {
	lb      GPUTime
	d       int32
	refined bool
}

func (a heapItem) less(b heapItem) bool {
	if a.lb != b.lb {
		return a.lb < b.lb
	}
	return a.d < b.d
}

// Plan finds the cheapest set of running jobs to stop so that the pending
// gang p places, or says why none exists. See Search for the algorithm.
// The Snapshot's ledger is trial-released and restored exactly; its
// Generation does not change. Jobs are read, and get their queue and
// charge cached (unexported fields).
func (s *Search) Plan(snap Snapshot, p *Pending, now time.Time) (*Plan, *NoPlan) {
	r := s.begin(snap, p, now)
	defer r.end()
	if r.inputErr != nil {
		return nil, r.noPlan(VerdictPlacement)
	}
	// 1. Fits as things are?
	if !r.qblock && !p.Unplaced {
		r.placements++
		if s.cfg.Placer.Place(r.l, r.req, &r.scratch) == nil {
			return &Plan{Job: r.req.ID, Placement: r.scratch.Clone(), Level: r.lv, Domain: r.placedDomain(&r.scratch), Exact: true}, nil
		}
		r.confine = r.req.AllowDomain == nil
	}
	// 2. Candidates.
	r.goSolo()
	r.collect()
	r.priceRestarts()
	if v := r.rank(); v != 0 {
		return nil, r.noPlan(v)
	}
	if len(r.units) == 0 && !r.qblock {
		// Nothing may be stopped, and the gang did not place as things
		// are: every candidate domain would be searched in vain.
		r.searched = r.candidates
		return nil, r.noPlan(VerdictPlacement)
	}
	// 3-5. Domains by lower bound.
	var heap0 []heapItem
	if s.cfg.FragAware {
		heap0 = slices.Clone(r.heap)
	}
	r.searchDomains(r.solveDomain)
	if r.soloRest && !r.budgetHit && (!r.best.ok || r.best.key.lost > r.soloBound) {
		// The cheap hosts did not do: rank the others.
		r.rankSolo(true)
		r.searchDomains(r.solveDomain)
	}
	if !r.best.ok {
		v := VerdictPlacement
		if r.budgetHit {
			v = VerdictBudget
		}
		return nil, r.noPlan(v)
	}
	if s.cfg.FragAware {
		// 6. Among sets within ε of the least lost work, the one that
		// strands the fewest GPUs (fragaware.go).
		r.fragPass(heap0)
	}
	return r.plan(), nil
}

// begin prepares the run state for one call.
func (s *Search) begin(snap Snapshot, p *Pending, now time.Time) *run {
	r := &s.r
	l := snap.Ledger()
	c := l.Cluster()
	*r = run{s: s, snap: snap, l: l, c: c, tree: snap.Queues(), req: p.Request, pend: p, now: now,
		w: r.w, wtree: r.wtree, stamp: r.stamp + 1, leaves: r.leaves, path: r.path[:0], onPath: r.onPath,
		within: r.within, withinStamp: r.withinStamp,
		visit: r.visit[:0], jobs: r.jobs[:0], restarts: r.restarts[:0], rsort: r.rsort[:0], units: r.units[:0], contribs: r.contribs[:0], contribCM: r.contribCM[:0], slotLimit: r.slotLimit[:0], chargeArena: r.chargeArena[:0],
		doms: r.doms[:0], domUnits: r.domUnits[:0], heap: r.heap[:0], domAcc: r.domAcc, domTouch: r.domTouch[:0], touched: r.touched[:0], slotHosts: r.slotHosts[:0], set: r.set[:0], chosen: r.chosen[:0],
		jobCount: r.jobCount[:0], jobWhole: r.jobWhole[:0], slotCount: r.slotCount[:0], order: r.order[:0], pool: r.pool[:0],
		amt: r.amt[:0], amtCPU: r.amtCPU[:0], amtMem: r.amtMem[:0], ratio: r.ratio[:0], psort: r.psort[:0], rel: r.rel[:0], base: r.base[:0], scratch: r.scratch, best: r.best, qp: -1, cnt: counter{hosts: r.cnt.hosts[:0]},
		domStamp: r.domStamp, domEpoch: r.domEpoch, allowFn: r.allowFn, strandDoms: r.strandDoms[:0], gains: r.gains[:0], gorder: r.gorder[:0]}
	r.best.ok, r.best.set, r.best.moves = false, r.best.set[:0], r.best.moves[:0]
	r.moves = r.moves[:0]
	r.nOthers = -1
	r.nowNano = now.UnixNano()
	r.need = p.Request.MinDemand()
	if r.byGPU = r.need.GPUs > 0; r.byGPU {
		r.needA = int64(r.need.GPUs)
	} else {
		r.needA = r.need.Milli
	}
	r.setLevel(p.Request.Within())
	r.everyHost = r.req.AllowHost == nil && l.HealthyGPUs(c.Root()) == c.NumGPUs() && r.allModels()
	if r.tree != nil {
		r.setupQueues()
	}
	return r
}

// setLevel makes lv the level whose domains the search visits.
func (r *run) setLevel(lv topology.Level) {
	r.lv = lv
	r.lx = r.s.prepare(r.c, lv)
	r.k, r.kTasks, r.kOnly = 0, 0, false
	if lv >= topology.LevelHost && r.need.MaxGPUs >= 2 {
		r.k = r.need.MaxGPUs
		r.kOnly = true
		for i := range r.req.Groups {
			g := &r.req.Groups[i]
			if g.Kind == gang.TaskWhole && g.GPUs == r.k {
				r.kTasks += g.Min
			} else {
				r.kOnly = false
			}
		}
	}
}

// goSolo searches a gang of one task that needs GPUs host by host: the
// task sits on one host whatever level the gang requires, so the hosts are
// its domains, each searched for the cheapest victims that make room there
// (GPUs, CPU and memory counted), instead of the whole required domain at
// once, where victims chosen by their price alone would be spread over
// many hosts. Not while the quota blocks the gang (victims then free quota
// anywhere, not room on one host).
func (r *run) goSolo() {
	if r.qblock || r.lv <= topology.LevelHost || r.need.Milli <= 0 || r.req.Tasks() != 1 {
		return
	}
	r.solo = true
	r.setLevel(topology.LevelHost)
	r.soloGPU, r.soloQ, r.soloMilli = 0, 0, 0
	for i := range r.req.Groups {
		g := &r.req.Groups[i]
		if g.Count == 0 {
			continue
		}
		switch g.Kind {
		case gang.TaskWhole:
			r.soloGPU, r.soloQ = gang.TaskWhole, g.GPUs
		case gang.TaskShare:
			r.soloGPU, r.soloQ, r.soloMilli = gang.TaskShare, 1, int32(g.Milli)
		}
	}
	if r.soloGPU != 0 {
		// Its GPU count covers tasks of k GPUs: no host slots.
		r.k, r.kTasks, r.kOnly = 0, 0, false
	}
}

// amount is a contribution of gpus whole GPUs and milli milli-GPU in the
// unit the gang is short of.
func (r *run) amount(gpus int32, milli int64) int64 {
	if r.byGPU {
		return int64(gpus)
	}
	return milli
}

// lostSince is the lost work of milli milli-GPU of job j at the run's
// time: since its last checkpoint (lastCheckpoint), else since Started.
// Every plan prices every job it visits, so a reported checkpoint, the
// common case, is read in place rather than through lastCheckpoint's
// copies (TestLostSinceAgrees).
func (r *run) lostSince(milli int64, j *Job) GPUTime {
	if j.Started.IsZero() {
		return 0
	}
	from := j.Started.UnixNano()
	switch cp := &j.Checkpoint; {
	case !cp.IsZero() && !cp.Before(j.Started):
		from = cp.UnixNano() // what lastCheckpoint returns
	case j.CheckpointInterval > 0:
		if cp := j.lastCheckpoint(r.now); !cp.IsZero() {
			from = cp.UnixNano()
		}
	}
	return lostNanos(milli, from, r.nowNano)
}

// end drops references to the caller's data so that the Search does not
// keep them alive.
func (r *run) end() {
	r.clearCounts()
	if r.solo && r.lx.hostPos != nil {
		for _, di := range r.touched {
			r.lx.hostPos[di], r.lx.minLost[di] = -1, maxGPUTime
		}
	}
	r.snap, r.l, r.pend, r.req = nil, nil, nil, nil
	clear(r.jobs)
}

// prepare sizes the per-cluster scratch and returns the index of level
// lv, building it on first use: O(hosts) (O(GPUs) at LevelFabric) once per
// cluster and level.
func (s *Search) prepare(c *topology.Cluster, lv topology.Level) *levelIndex {
	if s.c != c {
		s.c = c
		s.levels = make([]levelIndex, c.NumLevels())
		s.hostFree = make([]int32, c.NumHosts())
		s.hostIn = make([]bool, c.NumHosts())
		s.gpuFreed = make([]int32, c.NumGPUs())
	}
	x := &s.levels[lv]
	if x.hostDom != nil {
		return x
	}
	idx := make(map[topology.DomainID]int32, len(c.DomainsAt(lv)))
	for i, d := range c.DomainsAt(lv) {
		idx[d] = int32(i)
	}
	at := func(d topology.DomainID) int32 {
		if i, ok := idx[d]; ok {
			return i
		}
		return -1
	}
	x.hostDom = make([]int32, c.NumHosts())
	for h := range x.hostDom {
		if lv == topology.LevelFabric {
			x.hostDom[h] = -1
			continue
		}
		x.hostDom[h] = at(c.HostAt(topology.HostID(h), lv))
	}
	if lv == topology.LevelFabric {
		x.contig = consecutive(x.hostFab, len(c.DomainsAt(lv)))
	} else {
		x.contig = consecutive(x.hostDom, len(c.DomainsAt(lv)))
	}
	if lv == topology.LevelFabric {
		x.gpuDom = make([]int32, c.NumGPUs())
		for g := range x.gpuDom {
			x.gpuDom[g] = at(c.GPUAt(topology.GPUID(g), lv))
		}
		x.hostFab = make([]int32, c.NumHosts())
		for h := range x.hostFab {
			first, n := c.HostGPUs(topology.HostID(h))
			x.hostFab[h] = -1
			if n == 0 {
				continue
			}
			f := x.gpuDom[first]
			for k := 1; k < n && f >= 0; k++ {
				if x.gpuDom[first+topology.GPUID(k)] != f {
					f = -1
				}
			}
			x.hostFab[h] = f
		}
	}
	return x
}

// setupQueues resolves the pending job's queue and demand, and sizes the
// tree caches.
func (r *run) setupQueues() {
	t := r.tree
	if r.wtree != t {
		r.w, r.wtree = t.WhatIf(), t
		n := t.NumNodes()
		r.leaves = make([]leafInfo, n)
		r.onPath = make([]int32, n)
		r.within = make([]bool, n)
		r.withinStamp = make([]uint64, n)
	}
	r.base = r.base[:0]
	if !t.GovernsAny() {
		// No quota anywhere: nobody borrows and no quota binds, so the
		// what-if usage decides nothing; skip the commitments.
		r.resetW()
		r.setupPending()
		return
	}
	add := func(q string, v queue.Vector, release bool) {
		if id, ok := t.Lookup(q); ok && t.LeafOf(id) != nil && v != nil {
			r.base = append(r.base, baseCharge{leaf: id, v: v, release: release})
		}
	}
	if cm, ok := r.snap.(Commitments); ok {
		cm.Commitments(add)
	} else if ro := r.roster(); ro != nil {
		for _, j := range ro.stopping {
			if j.Spec != nil && j.Placement != nil {
				add(j.Spec.Queue, chargeOf(j, t, r.c), true)
			}
		}
	} else {
		r.snap.Jobs(func(j *Job) bool {
			if j.Stopping && j.Spec != nil && j.Placement != nil {
				add(j.Spec.Queue, chargeOf(j, t, r.c), true)
			}
			return true
		})
	}
	r.resetW()
	r.setupPending()
}

// setupPending resolves the pending job's queue path and demand on the
// what-if tree.
func (r *run) setupPending() {
	t := r.tree
	clear(r.onPath)
	if id, ok := t.Lookup(r.pend.Queue); ok && t.LeafOf(id) != nil {
		r.qp = id
		for x := id; x >= 0; x = t.Parent(x) {
			r.path = append(r.path, x)
			r.onPath[x] = int32(len(r.path))
		}
	}
	r.demand = r.pend.Demand
	if r.demand == nil {
		d := r.need
		r.demand = make(queue.Vector, t.Dimensions().Len())
		r.demand[fairshare.DimGPU] = d.Milli
		r.demand[fairshare.DimCPU] = d.CPUMilli
		r.demand[fairshare.DimMemory] = d.MemoryMiB
	}
	r.mask = r.demand
	if r.qp >= 0 && r.w.Check(r.qp, r.demand) != nil {
		r.qblock = true
	}
}

// baseCharge is a quota change already decided (Commitments).
type baseCharge struct {
	leaf    queue.NodeID
	v       queue.Vector
	release bool
}

// resetW resets the what-if tree to the tree with the commitments applied.
func (r *run) resetW() {
	r.w.Reset()
	for _, b := range r.base {
		if b.release {
			r.w.Release(b.leaf, b.v)
		} else {
			r.w.Add(b.leaf, b.v)
		}
	}
}

// Commitments is optionally implemented by a Snapshot to list the quota
// changes already decided but not yet in its tree: the charges of jobs
// being stopped (release true: they will be released) and the demands of
// pending jobs promised the room those stops make (release false: they
// will be charged). The planner counts them as done, so that a queue a
// stop in progress already takes back to its guarantee is not preempted
// again, and a promise is not given twice. Without it the planner releases
// the charge of every Job with Stopping set and counts no promise.
type Commitments interface {
	Commitments(fn func(queue string, v queue.Vector, release bool))
}

// collect sorts the running jobs into units and exclusions: through the
// Snapshot's Roster when it has one (see collectIndexed), else job by job.
func (r *run) collect() {
	if ro := r.roster(); ro != nil && !r.defrag {
		r.collectIndexed(ro)
	} else if ro != nil {
		r.collectMoves(ro)
	} else {
		r.snap.Jobs(func(j *Job) bool {
			r.consider(j)
			return true
		})
	}
	n := len(r.units)
	r.chosen = slices.Grow(r.chosen[:0], n)[:n]
	clear(r.chosen)
	r.amt = slices.Grow(r.amt[:0], n)[:n]
	if r.solo {
		r.amtCPU = slices.Grow(r.amtCPU[:0], n)[:n]
		r.amtMem = slices.Grow(r.amtMem[:0], n)[:n]
	}
	r.ratio = slices.Grow(r.ratio[:0], n)[:n]
	nj := len(r.jobs)
	r.jobCount = slices.Grow(r.jobCount[:0], nj)[:nj]
	clear(r.jobCount)
	r.jobWhole = slices.Grow(r.jobWhole[:0], nj)[:nj]
	clear(r.jobWhole)
	ns := len(r.slotLimit)
	r.slotCount = slices.Grow(r.slotCount[:0], ns)[:ns]
	clear(r.slotCount)
}

// consider classifies one running job and records its units or its
// exclusion.
func (r *run) consider(j *Job) {
	if j.Placement == nil || j.Spec == nil || len(j.Placement.Claims) == 0 {
		return
	}
	if j.Spec.ID == r.req.ID {
		return
	}
	var ex Exclusion
	var g Ground
	var node queue.NodeID
	if r.defrag {
		ex, g, node = r.classifyMove(j)
	} else {
		ex, g, node = r.classify(j)
	}
	if g == 0 {
		r.excluded[ex]++
		return
	}
	r.eligible++
	r.addUnits(j, j.Spec.Priority, g, node)
}

// rank builds the candidate domains and their lower bounds. It returns a
// verdict when none is a candidate (or the quota cannot be met).
func (r *run) rank() Verdict {
	nd := len(r.c.DomainsAt(r.lv))
	if len(r.domAcc) < nd {
		r.domAcc = make([]int64, nd)
	}
	if r.solo {
		r.soloSetup(nd)
		r.rankSolo(false)
		if len(r.heap) == 0 && r.soloRest {
			r.rankSolo(true)
		}
	} else {
		if r.tally.on {
			r.finishRank(0) // visitUsual added up the units as it made them
		} else {
			r.openDoms()
			r.rankFrom(0)
		}
	}
	if r.qblock {
		// Even with every eligible victim gone, does the quota bind?
		for ui := range r.units {
			if u := &r.units[ui]; u.task < 0 && u.leaf >= 0 {
				r.w.Release(u.leaf, r.charge(u))
			}
		}
		b := r.w.Check(r.qp, r.demand)
		for ui := range r.units {
			if u := &r.units[ui]; u.task < 0 && u.leaf >= 0 {
				r.w.Add(u.leaf, r.charge(u))
			}
		}
		if b != nil {
			r.quota = b
			return VerdictQuota
		}
	}
	tooSmall := r.tooSmall
	if r.solo && len(r.heap) == 0 {
		tooSmall = r.countTooSmall()
		r.tooSmall, r.tooSmallPart = tooSmall, false
	}
	if tooSmall == nd {
		return VerdictTooLarge
	}
	if len(r.heap) == 0 {
		return VerdictProtected
	}
	r.heaped = false
	return 0
}

// openDoms sets up r.doms for a search that is not solo: one per domain
// of the level, with what is free there, and no units listed yet.
func (r *run) openDoms() {
	l := r.l
	ids := r.c.DomainsAt(r.lv)
	r.doms = slices.Grow(r.doms[:0], len(ids))[:len(ids)]
	r.domUnits, r.freeFits = r.domUnits[:0], 0
	for i, d := range ids {
		x := &r.doms[i]
		*x = dom{i: int32(i), pos: int32(i), id: d, free: int64(l.FreeGPUs(d)), freeMilli: l.FreeMilli(d), minRatio: math.Inf(1)}
		if r.freeA(x) >= r.needA {
			r.freeFits++
		}
	}
}

// tally is rankFrom's state while it adds up the units one by one: on
// while visitUsual adds them up as it makes them (rank then only
// finishes); listed while each unit so far frees something in at most one
// domain and the domains came in ascending order (jobs visited in host
// order, each within a domain of consecutive hosts: the usual case), so
// that each domain's list is a run of the listing and no second pass
// builds the lists; last the latest of those domains; base where the
// lists start in r.domUnits.
type tally struct {
	on, listed bool
	last       int32
	base       int
}

// rankFrom adds up what the units free in r.doms[from:], builds their
// units lists and puts the candidates among them, with their lower bounds,
// in r.heap.
func (r *run) rankFrom(from int) {
	var pos []int32
	if r.solo {
		pos = r.lx.hostPos
	}
	r.tally = tally{listed: pos == nil && !plainLists, last: -1, base: len(r.domUnits)}
	r.tallyUnits(0, len(r.units), pos, from)
	r.finishRank(from)
}

// finishRank lists the units per domain of r.doms[from:] unless the
// tally listed them as it went, and ranks those domains.
func (r *run) finishRank(from int) {
	if !r.tally.listed {
		r.listUnits(from)
	}
	r.tally.on = false
	r.rankDomains(from)
}

// tallyUnits adds what units r.units[lo:hi] free to their domains among
// r.doms[from:] (pos: a solo search's positions of its hosts in r.doms;
// nil: r.doms by domain) and lists each under its domain while the tally
// lists.
func (r *run) tallyUnits(lo, hi int, pos []int32, from int) {
	for ui := lo; ui < hi; ui++ {
		u := &r.units[ui]
		if t := &r.tally; t.listed {
			switch n := u.cto - u.cfrom; {
			case n == 0:
			case n > 1:
				t.listed = false
				r.domUnits = r.domUnits[:t.base]
			default:
				r.listUnit(ui, r.contribs[u.cfrom].dom)
			}
		}
		rigid := u.task < 0 && !u.elastic
		for k, ct := range r.contribs[u.cfrom:u.cto] {
			var x *dom
			if pos == nil {
				x = &r.doms[ct.dom]
			} else if p := pos[ct.dom]; int(p) >= from {
				x = &r.doms[p]
				cm := r.contribCM[int(u.cfrom)+k]
				x.evictCPU += cm.cpu
				x.evictMem += cm.mem
			} else {
				continue
			}
			x.add(r.amount(ct.gpus, ct.milli), ct.gpus, u.lost, rigid)
		}
	}
}

// listUnit lists unit ui, which frees something in domain di alone, as
// the tally goes: while the units come in ascending order of domain,
// each domain's list is a run of r.domUnits. A unit of a domain before
// the last one stops the listing; finishRank then lists every unit
// (listUnits).
func (r *run) listUnit(ui int, di int32) {
	t := &r.tally
	if !t.listed {
		return
	}
	if di < t.last {
		t.listed = false
		r.domUnits = r.domUnits[:t.base]
		return
	}
	x := &r.doms[di]
	if di != t.last {
		x.ufrom, t.last = int32(len(r.domUnits)), di
	}
	r.domUnits = append(r.domUnits, int32(ui))
	x.uto = int32(len(r.domUnits))
}

// add adds to domain x a unit's contribution there: a in the gang's unit,
// gpus GPUs, for lost work lost; rigid says the unit is a whole gang
// that cannot shrink.
func (x *dom) add(a int64, gpus int32, lost GPUTime, rigid bool) {
	x.evict += a
	x.evictGPUs += int64(gpus)
	x.n++
	if a > 0 {
		// Never NaN (a > 0): compared, not min and max.
		if q := float64(lost) / float64(a); q < x.minRatio {
			x.minRatio = q
			if q > x.maxRatio {
				x.maxRatio = q
			}
		} else if q > x.maxRatio {
			x.maxRatio = q
		}
		if rigid {
			x.sumRigid += lost
		}
	}
}

// plainLists turns off rankFrom's listing of the units as they are met
// (tests compare plans made with and without it).
var plainLists = false

// listUnits builds the lists of units per domain of r.doms[from:], after
// those of r.doms[:from] (CSR: r.domUnits[x.ufrom:x.uto]).
func (r *run) listUnits(from int) {
	var pos []int32
	if r.solo {
		pos = r.lx.hostPos
	}
	off := int32(len(r.domUnits))
	for i := from; i < len(r.doms); i++ {
		r.doms[i].ufrom, r.doms[i].uto = off, off
		off += r.doms[i].n
	}
	r.domUnits = slices.Grow(r.domUnits, int(off)-len(r.domUnits))[:off]
	for ui := range r.units {
		u := &r.units[ui]
		for _, ct := range r.contribs[u.cfrom:u.cto] {
			var x *dom
			if pos == nil {
				x = &r.doms[ct.dom]
			} else if p := pos[ct.dom]; int(p) >= from {
				x = &r.doms[p]
			} else {
				continue
			}
			if x.uto > x.ufrom && r.domUnits[x.uto-1] == int32(ui) {
				continue
			}
			r.domUnits[x.uto] = int32(ui)
			x.uto++
		}
	}
}

// rankDomains puts the candidates among r.doms[from:], with their lower
// bounds, in r.heap.
func (r *run) rankDomains(from int) {
	l := r.l
	for i := from; i < len(r.doms); i++ {
		x := &r.doms[i]
		if r.need.GPUs > 0 && l.HealthyGPUs(x.id) < r.need.GPUs || r.need.GPUs == 0 && int64(l.HealthyGPUs(x.id))*topology.MilliPerGPU < r.need.Milli {
			r.tooSmall++
			continue
		}
		if r.freeA(x)+x.evict < r.needA {
			continue
		}
		if r.solo && !r.soloCandidate(x) {
			continue
		}
		if r.soloGPU != 0 && !r.soloRoom(x) {
			continue
		}
		// Two lower bounds: the short amount at the cheapest rate; and
		// the lost work of every rigid job in x less what the slack (free
		// + evictable − needed) could spare at the dearest rate.
		lb := GPUTime(0)
		if short := r.needA - r.freeA(x); short > 0 && !math.IsInf(x.minRatio, 1) {
			lb = GPUTime(math.Max(0, math.Floor(float64(short)*x.minRatio)-1))
			slack := r.freeA(x) + x.evict - r.needA
			if b := float64(x.sumRigid) - float64(slack)*x.maxRatio; b > float64(lb)+1 {
				lb = GPUTime(math.Floor(b) - 1)
			}
		}
		r.pushDomain(heapItem{lb: lb, d: int32(i)})
		r.candidates++
	}
}

// soloSetup marks the hosts some unit frees room on (hostPos −2), with the
// least lost work of a unit there, and sets soloBound: the least lost work
// of a whole gang that alone would let the task count on a host. A plan in
// a host whose cheapest unit loses more costs more than that one-victim
// set, so the first phase ranks only the hosts at or under the bound; the
// rest (soloRest) are ranked only when the first phase finds nothing as
// cheap.
func (r *run) soloSetup(nd int) {
	pos, ml := r.lx.pos(nd), r.lx.least(nd)
	r.touched = r.touched[:0]
	r.soloBound = maxGPUTime
	for ui := range r.units {
		u := &r.units[ui]
		for k, ct := range r.contribs[u.cfrom:u.cto] {
			if pos[ct.dom] == -1 {
				pos[ct.dom] = -2
				r.touched = append(r.touched, ct.dom)
			}
			ml[ct.dom] = min(ml[ct.dom], u.lost)
			if u.task < 0 && u.lost < r.soloBound {
				h, _ := r.c.DomainHosts(r.c.DomainsAt(r.lv)[ct.dom])
				if r.freeAt(ct.dom)+r.amount(ct.gpus, ct.milli) >= r.needA &&
					r.l.CPUFree(h)+r.contribCM[int(u.cfrom)+k].cpu >= r.need.CPUMilli && r.l.MemoryFree(h)+r.contribCM[int(u.cfrom)+k].mem >= r.need.MemoryMiB {
					r.soloBound = u.lost
				}
			}
		}
	}
	r.tooSmallPart = true
}

// freeAt is what domain di of the level has free, in the unit the gang
// needs.
func (r *run) freeAt(di int32) int64 {
	d := r.c.DomainsAt(r.lv)[di]
	if r.need.GPUs > 0 {
		return int64(r.l.FreeGPUs(d))
	}
	return r.l.FreeMilli(d)
}

// rankSolo ranks the marked hosts whose cheapest unit loses at most
// soloBound (rest false), or the others (rest true), in host order.
func (r *run) rankSolo(rest bool) {
	ids := r.c.DomainsAt(r.lv)
	pos, ml := r.lx.hostPos, r.lx.minLost
	from := len(r.doms)
	r.soloRest = false
	// Hosts in level order, so that ties between equal bounds break the
	// same way whatever order the jobs came in.
	for di, p := range pos {
		if p != -2 {
			continue
		}
		if !rest && ml[di] > r.soloBound {
			r.soloRest = true
			continue
		}
		d := ids[di]
		pos[di] = int32(len(r.doms))
		r.doms = append(r.doms, dom{i: int32(di), pos: int32(len(r.doms)), id: d, free: int64(r.l.FreeGPUs(d)), freeMilli: r.l.FreeMilli(d), minRatio: math.Inf(1)})
	}
	r.rankFrom(from)
}

// soloCandidate reports whether host domain x could take the solo task
// with every eligible victim there gone: usable, with the CPU and memory.
func (r *run) soloCandidate(x *dom) bool {
	h, _ := r.c.DomainHosts(x.id)
	return r.hostUsable(h) && r.l.CPUFree(h)+x.evictCPU >= r.need.CPUMilli && r.l.MemoryFree(h)+x.evictMem >= r.need.MemoryMiB
}

// countTooSmall counts the domains at the level with fewer healthy GPUs
// than the gang needs (a solo search ranks only those victims touch).
func (r *run) countTooSmall() int {
	n := 0
	for _, d := range r.c.DomainsAt(r.lv) {
		if r.need.GPUs > 0 && r.l.HealthyGPUs(d) < r.need.GPUs || r.need.GPUs == 0 && int64(r.l.HealthyGPUs(d))*topology.MilliPerGPU < r.need.Milli {
			n++
		}
	}
	return n
}

// soloRoom reports whether, with every eligible victim on host domain x
// released, enough of its GPUs could take the solo task (GPU by GPU; see
// gpuQualifies).
func (r *run) soloRoom(x *dom) bool {
	h, _ := r.c.DomainHosts(x.id)
	for _, ui := range r.domUnits[x.ufrom:x.uto] {
		if u := &r.units[ui]; u.task < 0 {
			r.freeOn(u, h, 1)
		}
	}
	q := r.qualifying(h)
	r.clearFreed(x)
	return q >= r.soloQ
}

func (r *run) freeA(x *dom) int64 {
	if r.need.GPUs > 0 {
		return x.free
	}
	return x.freeMilli
}

// unitIn returns what unit ui frees in domain x (and, in a solo search,
// the CPU and memory).
func (r *run) unitIn(ui int32, x *dom) (contrib, cpuMem) {
	u := &r.units[ui]
	di := x.i
	var out contrib
	var cm cpuMem
	out.dom = di
	for k, ct := range r.contribs[u.cfrom:u.cto] {
		if ct.dom == di {
			out.gpus += ct.gpus
			out.milli += ct.milli
			if r.solo {
				m := r.contribCM[int(u.cfrom)+k]
				cm.cpu += m.cpu
				cm.mem += m.mem
			}
		}
	}
	return out, cm
}

// searchDomains visits candidate domains in ascending lower bound,
// refining bounds lazily, and calls solve on each until the bound passes
// the best plan or the budget runs out.
func (r *run) searchDomains(solve func(x *dom)) {
	for len(r.heap) > 0 {
		if r.placements >= r.s.cfg.MaxPlacements {
			r.budgetHit = true
			r.inexact = true
			return
		}
		top := r.popDomain()
		limit := r.best.key.lost
		if r.banding {
			limit = r.band
		}
		if r.best.ok && top.lb > limit {
			return
		}
		x := &r.doms[top.d]
		if !top.refined && r.defrag {
			// Defragmentation: bound by task slots too (slotbound.go),
			// before ordering every movable unit for the domain.
			if lb := r.slotBound(x); lb > top.lb {
				it := heapItem{lb: lb, d: top.d}
				if len(r.heap) > 0 && r.peekDomain().less(it) {
					r.pushDomain(it)
					continue
				}
				if r.best.ok && lb > limit {
					continue
				}
				top.lb = lb
			}
		}
		r.resetSet(x)
		r.orderUnits(x)
		if !top.refined {
			lb := max(top.lb, r.fractional(0, r.needA-r.freeA(x)))
			if it := (heapItem{lb: lb, d: top.d, refined: true}); lb > top.lb && len(r.heap) > 0 && r.peekDomain().less(it) {
				r.pushDomain(it)
				continue
			}
			if r.best.ok && lb > limit {
				continue
			}
		}
		r.searched++
		solve(x)
	}
}

// orderUnits prepares the units of x in order, cheapest per unit freed
// first (see unitLess), and r.amt with what each frees there. When the
// quota blocks the gang, every other eligible unit with a charge follows
// (it frees quota, not room); when defragmenting, every other movable
// unit follows (moving it may make room for the jobs moved out of x).
// Small domains are sorted at once; larger ones go in a heap that unitAt
// drains as far as the search looks.
func (r *run) orderUnits(x *dom) {
	r.order, r.pool = r.order[:0], r.pool[:0]
	all := append(r.pool, r.domUnits[x.ufrom:x.uto]...)
	others := r.qblock || r.defrag
	if others {
		clear(r.amt)
	}
	lazy := others && !eagerOthers
	for _, ui := range all {
		ct, cm := r.unitIn(ui, x)
		r.amt[ui] = r.amount(ct.gpus, ct.milli)
		if r.amt[ui] == 0 {
			lazy = false
		}
		if r.solo {
			r.amtCPU[ui], r.amtMem[ui] = cm.cpu, cm.mem
		}
	}
	r.later = 0
	switch {
	case lazy:
		// Every unit of x frees room (amt > 0), so the others all follow
		// them in unitLess's order: they are ordered only when the search
		// gets that far (orderLater), which it seldom does.
		r.later = r.countOthers()
		for _, ui := range all {
			if r.other(ui) {
				r.later--
			}
		}
	case others:
		for ui := range r.units {
			// (units of x free room: amt > 0)
			if r.amt[ui] == 0 && r.other(int32(ui)) {
				all = append(all, int32(ui))
			}
		}
	}
	r.orderPool(all)
}

// eagerOthers turns off orderUnits' deferred ordering of the units outside
// the domain (tests compare plans made with and without it).
var eagerOthers = false

// other reports whether unit ui follows a domain's own units when the
// quota blocks the gang (it frees quota) or when defragmenting.
func (r *run) other(ui int32) bool { return r.defrag || r.units[ui].leaf >= 0 }

// countOthers returns the number of units for which other holds (counted
// once a run).
func (r *run) countOthers() int {
	if r.nOthers < 0 {
		r.nOthers = 0
		for ui := range r.units {
			if r.other(int32(ui)) {
				r.nOthers++
			}
		}
	}
	return r.nOthers
}

// orderLater orders the units outside the domain that orderUnits left for
// later: those that free nothing there (amt 0) for which other holds.
func (r *run) orderLater() {
	later := r.pool[:0]
	for ui := range r.units {
		if r.amt[ui] == 0 && r.other(int32(ui)) {
			later = append(later, int32(ui))
		}
	}
	r.later = 0
	r.orderPool(later)
}

// orderPool computes the ratios of units all and appends them to r.order
// in unitLess's order: at once when they are few, else as a heap (r.pool)
// that unitAt drains as far as the search looks.
func (r *run) orderPool(all []int32) {
	for _, ui := range all {
		u := &r.units[ui]
		switch a := r.amt[ui]; {
		case a > 0:
			r.ratio[ui] = float64(u.lost) / float64(a)
		case u.milli > 0:
			r.ratio[ui] = float64(u.lost) / float64(u.milli)
		default:
			r.ratio[ui] = math.MaxFloat64
		}
	}
	if len(all) <= 64 {
		slices.SortFunc(all, func(a, b int32) int {
			if r.unitLess(a, b) {
				return -1
			}
			if r.unitLess(b, a) {
				return 1
			}
			return 0
		})
		r.order = append(r.order, all...)
		r.pool = all[:0]
		return
	}
	r.pool = all
	for i := len(all)/2 - 1; i >= 0; i-- {
		r.poolDown(i)
	}
}

// unitLess orders the units of the domain being searched: those that free
// room before those that only free quota; then by lost work per unit
// freed, lost work, borrowers (reclaim, fair share) before others, job ID,
// task.
func (r *run) unitLess(a, b int32) bool {
	ua, ub := &r.units[a], &r.units[b]
	switch {
	case (r.amt[a] > 0) != (r.amt[b] > 0):
		return r.amt[a] > 0
	case r.ratio[a] != r.ratio[b]:
		return r.ratio[a] < r.ratio[b]
	case ua.lost != ub.lost:
		return ua.lost < ub.lost
	case (ua.ground == GroundPriority) != (ub.ground == GroundPriority):
		return ua.ground != GroundPriority
	}
	if c := strings.Compare(r.jobID(ua), r.jobID(ub)); c != 0 {
		return c < 0
	}
	return ua.task < ub.task
}

func (r *run) poolDown(i int) {
	h := r.pool
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if k := l + 1; k < len(h) && r.unitLess(h[k], h[l]) {
			m = k
		}
		if !r.unitLess(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// unitAt returns the i-th unit in order, taking units off the heap as
// needed.
func (r *run) unitAt(i int) (int32, bool) {
	for len(r.order) <= i {
		if len(r.pool) == 0 {
			if r.later == 0 {
				return -1, false
			}
			r.orderLater()
			continue
		}
		top := r.pool[0]
		n := len(r.pool) - 1
		r.pool[0] = r.pool[n]
		r.pool = r.pool[:n]
		r.poolDown(0)
		r.order = append(r.order, top)
	}
	return r.order[i], true
}

// nUnits is the number of units of the domain being searched.
func (r *run) nUnits() int { return len(r.order) + len(r.pool) + r.later }

// fractional is a lower bound on the lost work of covering short with the
// units from position from on: the fractional knapsack in ratio order. It
// returns maxGPUTime when they cannot cover it.
func (r *run) fractional(from int, short int64) GPUTime {
	if short <= 0 {
		return 0
	}
	var lb float64
	for i := from; ; i++ {
		ui, ok := r.unitAt(i)
		if !ok {
			return maxGPUTime
		}
		a := r.amt[ui]
		if a <= 0 || r.chosen[ui] {
			continue
		}
		u := &r.units[ui]
		if a >= short {
			lb += float64(u.lost) * float64(short) / float64(a)
			return GPUTime(math.Max(0, math.Floor(lb)-1))
		}
		lb += float64(u.lost)
		short -= a
	}
}

// placedDomain returns the domain at the run's level holding placement p.
func (r *run) placedDomain(p *gang.Placement) topology.DomainID {
	if p.Level == r.lv {
		return p.Domain
	}
	for _, cl := range p.Claims {
		if r.lv == topology.LevelFabric {
			for _, g := range cl.GPUs {
				return r.c.GPUAt(g.GPU, topology.LevelFabric)
			}
			continue
		}
		return r.c.HostAt(cl.Host, r.lv)
	}
	return r.c.Root()
}

// plan turns the best set into a Plan.
func (r *run) plan() *Plan {
	p := &Plan{Job: r.req.ID, Placement: r.best.placement.p.Clone(), Level: r.lv, Exact: !r.inexact, Domains: r.searched, Placements: r.placements}
	p.Domain = r.placedDomain(p.Placement)
	set := append(r.psort[:0], r.best.set...)
	r.psort = set
	slices.SortFunc(set, func(a, b int32) int {
		if c := strings.Compare(r.jobID(&r.units[a]), r.jobID(&r.units[b])); c != 0 {
			return c
		}
		return int(r.units[a].task - r.units[b].task)
	})
	// One victim per job: sized at once.
	nv := 0
	for i := range set {
		if i == 0 || r.units[set[i]].ji != r.units[set[i-1]].ji {
			nv++
		}
	}
	if nv > 0 {
		p.Victims = make([]Victim, 0, nv)
	}
	for i := 0; i < len(set); {
		u := &r.units[set[i]]
		j := r.jobs[u.ji]
		v := Victim{Job: j.Spec.ID, Queue: j.Spec.Queue, Priority: j.Spec.Priority, Ground: u.ground, Grace: r.s.grace(j)}
		k := i
		for ; k < len(set) && r.units[set[k]].ji == u.ji; k++ {
			x := &r.units[set[k]]
			rp := r.restartOf(x)
			v.GPUMilli += x.milli
			v.Lost += x.lost - rp.lost
			v.RestartLost, v.RestartStops = rp.lost, int(rp.stops)
			if x.task < 0 {
				v.Claims = r.claims(x)
			} else {
				v.Tasks = append(v.Tasks, j.Placement.Tasks[x.task])
				v.Claims = append(v.Claims, r.claims(x)[0])
			}
		}
		if v.Tasks != nil && len(v.Tasks) == len(j.Placement.Claims) {
			v.Tasks, v.Claims = nil, j.Placement.Claims
		}
		p.Cost.Lost += v.Lost + v.RestartLost
		p.Cost.Victims += 1 + v.RestartStops
		p.Cost.Priority += int64(v.Priority)
		p.Victims = append(p.Victims, v)
		i = k
	}
	return p
}

// noPlan builds the reasons.
func (r *run) noPlan(v Verdict) *NoPlan {
	if r.tooSmallPart {
		r.tooSmall = r.countTooSmall()
	}
	n := &NoPlan{Job: r.req.ID, Verdict: v, GPUs: r.need.GPUs, Milli: r.need.Milli, Level: r.lv, LevelName: r.c.LevelName(r.lv),
		Domains: len(r.c.DomainsAt(r.lv)), TooSmall: r.tooSmall, Candidates: r.candidates, Searched: r.searched,
		Eligible: r.eligible, Excluded: r.excluded, Quota: r.quota, Until: r.until, Err: r.inputErr}
	best := -1
	var bestHave int64 = -1
	for i := range r.doms {
		x := &r.doms[i]
		if have := r.freeA(x) + x.evict; have > bestHave {
			best, bestHave = i, have
		}
	}
	if best >= 0 {
		x := &r.doms[best]
		n.Best = DomainShort{Domain: x.id, Name: r.c.DomainName(x.id), Free: int(x.free), Evictable: int(x.evictGPUs), Short: int(max(0, r.needA-bestHave))}
		if r.need.GPUs == 0 {
			n.Best.Free = int(x.freeMilli / topology.MilliPerGPU)
		}
	}
	return n
}

// The candidate domains in ascending lower bound: the first few are
// found by scanning (most searches stop after one or two domains, and
// heapifying thousands of hosts costs more), then r.heap becomes a heap.
const scanPops = 3

func (r *run) minDomain() int {
	m := 0
	for i := 1; i < len(r.heap); i++ {
		if r.heap[i].less(r.heap[m]) {
			m = i
		}
	}
	return m
}

func (r *run) popDomain() heapItem {
	if !r.heaped {
		if r.pops < scanPops {
			r.pops++
			m := r.minDomain()
			top := r.heap[m]
			n := len(r.heap) - 1
			r.heap[m] = r.heap[n]
			r.heap = r.heap[:n]
			return top
		}
		heapInit(r.heap)
		r.heaped = true
	}
	return heapPop(&r.heap)
}

func (r *run) peekDomain() heapItem {
	if r.heaped {
		return r.heap[0]
	}
	return r.heap[r.minDomain()]
}

func (r *run) pushDomain(it heapItem) {
	if r.heaped {
		heapPush(&r.heap, it)
		return
	}
	r.heap = append(r.heap, it)
}

// Binary min-heap of heapItem (container/heap without the interface
// boxing).
func heapInit(h []heapItem) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		heapDown(h, i)
	}
}

func heapDown(h []heapItem, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func heapPush(h *[]heapItem, x heapItem) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func heapPop(h *[]heapItem) heapItem {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	heapDown(*h, 0)
	return top
}
