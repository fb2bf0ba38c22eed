package preempt

import (
	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// unit is what a plan may stop: a whole gang, or one task of an elastic
// group above its minimum (a shrink). Kept small and without pointers: a
// plan of a large cluster makes one per running job, and the garbage
// collector need not scan them nor end clear them.
type unit struct {
	milli int64 // GPU capacity released, milli-GPU
	lost  GPUTime
	ji    int32 // index of the job in run.jobs (its job: run.jobs[ji])
	task  int32 // claim index for a shrink; -1 for a whole gang
	slot  int32 // shrink counter (job, group) for a shrink; -1 otherwise
	// leaf is the job's queue in the tree (-1: none); node the queue-tree
	// node its ground depends on (reclaim: the borrowing node; fair share:
	// the victim-side child of the common ancestor), -1 for priority.
	leaf, node queue.NodeID
	prio       int32
	// contributions to domains at the level: contribs[cfrom:cto]
	cfrom, cto int32
	// chg is where a shrink's charge starts in run.chargeArena.
	chg    int32
	ground Ground
	// elastic marks the whole-gang unit of a job that also has shrinks.
	elastic bool
}

// jobID returns the ID of unit u's job.
func (r *run) jobID(u *unit) string { return r.jobs[u.ji].Spec.ID }

// claims returns what unit u releases: its job's claims, or the one of its
// task.
func (r *run) claims(u *unit) []topology.Claim {
	if u.task < 0 {
		return r.jobs[u.ji].Placement.Claims
	}
	return r.jobs[u.ji].Placement.Claims[u.task : u.task+1 : u.task+1]
}

// charge returns what unit u's queue is charged for what it releases (nil
// without a queue).
func (r *run) charge(u *unit) queue.Vector {
	if u.leaf < 0 || r.tree == nil {
		return nil
	}
	if u.task < 0 {
		return chargeOf(r.jobs[u.ji], r.tree, r.c)
	}
	n := int32(r.tree.Dimensions().Len())
	return r.chargeArena[u.chg : u.chg+n : u.chg+n]
}

// contrib is what a unit frees in one domain at the plan's level, counting
// only what the pending gang could use: whole GPUs (a shared or MIG GPU
// counts as one, an upper bound) and milli-GPU.
type contrib struct {
	dom   int32 // index among the level's domains
	gpus  int32
	milli int64
}

// cpuMem is the CPU and memory a contribution frees (a solo search keeps
// them in run.contribCM, beside run.contribs).
type cpuMem struct{ cpu, mem int64 }

// leafInfo caches, per victim leaf queue, what its grounds depend on.
type leafInfo struct {
	stamp uint64
	same  bool         // the pending job's own leaf
	lca   queue.NodeID // closest common ancestor with the pending leaf
	// reclaim is the lowest node on the victim's path below the ancestor
	// that borrows, or -1; reclaimOK whether the pending side stays within
	// its guarantee below the ancestor with the job admitted.
	reclaim   queue.NodeID
	reclaimOK bool
	// fs is the victim-side child of the ancestor when it borrows and fair
	// sharing applies (-1 otherwise); shareA the pending side's share with
	// the job admitted.
	fs     queue.NodeID
	shareA float64
}

// resolveQueue returns j's leaf in tree, caching it on the job.
func resolveQueue(j *Job, tree *queue.Tree) queue.NodeID {
	if j.qtree != tree {
		j.qtree = tree
		j.qid = -1
		if id, ok := tree.Lookup(j.Spec.Queue); ok && tree.LeafOf(id) != nil {
			j.qid = id
		}
	}
	return j.qid
}

// chargeOf returns j's charge: Charge, or what its placement takes in the
// tree's dimensions (cached per tree).
func chargeOf(j *Job, tree *queue.Tree, c *topology.Cluster) queue.Vector {
	if j.Charge != nil {
		return j.Charge
	}
	if j.ctree != tree || j.charge == nil {
		j.ctree = tree
		j.charge = make(queue.Vector, tree.Dimensions().Len())
		addCharge(j.charge, j.Placement.Claims, tree, c)
	}
	return j.charge
}

// addCharge adds what claims take to v in the tree's dimensions.
func addCharge(v queue.Vector, claims []topology.Claim, tree *queue.Tree, c *topology.Cluster) {
	models := tree.Dimensions().Models
	for i := range claims {
		cl := &claims[i]
		v[fairshare.DimCPU] += cl.CPUMilli
		v[fairshare.DimMemory] += cl.MemoryMiB
		m := c.HostModel(cl.Host)
		md := -1
		if m != topology.NoModel && len(models) > 0 {
			name := c.Model(m).Model
			for k, x := range models {
				if x == name {
					md = fairshare.DimModel + k
				}
			}
		}
		for _, g := range cl.GPUs {
			milli := gpuClaimMilli(c, g)
			v[fairshare.DimGPU] += milli
			if md >= 0 {
				v[md] += milli
			}
		}
	}
}

// gpuClaimMilli is the GPU capacity a GPU claim takes.
func gpuClaimMilli(c *topology.Cluster, g topology.GPUClaim) int64 {
	switch g.Kind {
	case topology.ClaimShare:
		return int64(g.Milli)
	case topology.ClaimMIG:
		return int64(c.Model(c.GPU(g.GPU).Model).MIGProfiles[g.Profile].Milli)
	}
	return topology.MilliPerGPU
}

func claimsMilli(c *topology.Cluster, claims []topology.Claim) int64 {
	var m int64
	for i := range claims {
		for _, g := range claims[i].GPUs {
			m += gpuClaimMilli(c, g)
		}
	}
	return m
}

// classify decides whether j may be a victim of the pending job, and on
// which ground. It returns the exclusion (ground 0) or the ground and the
// queue node it depends on.
func (r *run) classify(j *Job) (Exclusion, Ground, queue.NodeID) {
	if ex, ok := j.Protection(r.now); ok {
		if ex == ExclMinRunTime {
			r.protectedUntil(j)
		}
		return ex, 0, -1
	}
	return r.ground(j)
}

// ground is classify for a job no protection excludes: its ground, or
// the exclusion that no ground applies.
func (r *run) ground(j *Job) (Exclusion, Ground, queue.NodeID) {
	sp := j.Spec
	lower := sp.Priority < r.pend.Priority
	cfg := &r.s.cfg
	if r.tree == nil {
		same := sp.Queue == r.pend.Queue
		if lower && (cfg.LowerPriority == AnyQueue || cfg.LowerPriority == WithinQueue && same) {
			return 0, GroundPriority, -1
		}
		if same || cfg.LowerPriority == AnyQueue {
			return ExclPriority, 0, -1
		}
		return ExclGuaranteed, 0, -1
	}
	qv := resolveQueue(j, r.tree)
	same := qv >= 0 && qv == r.qp
	if lower && (cfg.LowerPriority == AnyQueue || cfg.LowerPriority == WithinQueue && same) {
		if node, ok := r.crossPriority(qv, same); ok {
			return 0, GroundPriority, node
		}
	}
	if same || qv < 0 || r.qp < 0 {
		if same || cfg.LowerPriority == AnyQueue {
			return ExclPriority, 0, -1
		}
		return ExclGuaranteed, 0, -1
	}
	li := r.leaf(qv)
	if li.reclaim < 0 && li.fs < 0 {
		return ExclGuaranteed, 0, -1
	}
	if li.reclaim >= 0 && li.reclaimOK && (cfg.Reclaim == ReclaimAny || cfg.Reclaim == ReclaimLowerPriority && lower) {
		return 0, GroundReclaim, li.reclaim
	}
	if li.fs >= 0 {
		// The final-share rule with this job gone alone; the plan checks
		// it again with all victims of the queue gone.
		ch := chargeOf(j, r.tree, r.c)
		r.w.Release(qv, ch)
		ok := r.w.Share(li.fs, nil) >= li.shareA
		r.w.Add(qv, ch)
		if ok {
			return 0, GroundFairShare, li.fs
		}
	}
	return ExclBorrowing, 0, -1
}

// protectedUntil notes when j's minimum run time ends (NoPlan.Until is
// the earliest).
func (r *run) protectedUntil(j *Job) {
	if t := j.Started.Add(j.Spec.MinRunTime); r.until.IsZero() || t.Before(r.until) {
		r.until = t
	}
}

// crossPriority says whether a lower-priority job of leaf qv may be a
// victim on priority (Config.LowerPriority = AnyQueue): always in the
// pending job's own queue (or one outside the tree), and in another queue
// if the pending job's side does not borrow once it is admitted (node
// -1). Else only if the victim's side borrows below the common ancestor,
// and then with the reclaim ground's set rule on node (that side still
// borrows with the victims chosen there gone but the largest), and not
// at all where fair sharing applies to the two sides (the fair-share
// ground decides then). A queue is not taken below its guarantee, nor
// below the preemptor's final share, for a job that then borrows: its
// jobs could reclaim the room back, and the two sides would preempt each
// other in turn for ever (at one time when victims stop at once).
func (r *run) crossPriority(qv queue.NodeID, same bool) (node queue.NodeID, ok bool) {
	if same || qv < 0 || r.qp < 0 {
		return -1, true
	}
	li := r.leaf(qv)
	if li.same || r.withinBelow(li.lca) {
		return -1, true
	}
	if li.fs >= 0 {
		return -1, false // fair sharing decides (its final-share rule cannot cycle)
	}
	return li.reclaim, li.reclaim >= 0
}

// leaf returns the cached grounds of victim leaf qv for this plan.
func (r *run) leaf(qv queue.NodeID) *leafInfo {
	li := &r.leaves[qv]
	if li.stamp == r.stamp {
		return li
	}
	*li = leafInfo{stamp: r.stamp, lca: -1, reclaim: -1, fs: -1}
	t := r.tree
	// The pending leaf's path is marked in r.onPath (position + 1).
	prev := queue.NodeID(-1)
	for id := qv; id >= 0; id = t.Parent(id) {
		if r.onPath[id] > 0 {
			li.lca = id
			break
		}
		if li.reclaim < 0 && r.w.Borrows(id, r.mask) {
			li.reclaim = id
		}
		prev = id
	}
	if li.lca < 0 || prev < 0 {
		li.same = true
		return li
	}
	// The pending side's child of the ancestor.
	a := queue.NodeID(-1)
	if k := int(r.onPath[li.lca]) - 1; k > 0 {
		a = r.path[k-1]
	}
	if li.reclaim >= 0 {
		li.reclaimOK = r.withinBelow(li.lca)
	}
	if r.s.cfg.FairSharing && t.Fairness().Policy != queue.NoFairness && a >= 0 && r.w.Borrows(prev, r.mask) {
		li.fs = prev
		li.shareA = r.w.Share(a, r.demand)
	}
	return li
}

// withinBelow reports whether, with the pending job admitted, no node on
// its queue's path below lca borrows (cached per lca).
func (r *run) withinBelow(lca queue.NodeID) bool {
	if r.withinStamp[lca] == r.stamp {
		return r.within[lca]
	}
	r.w.Add(r.qp, r.demand)
	ok := true
	for id := r.qp; id >= 0 && id != lca; id = r.tree.Parent(id) {
		if r.w.Borrows(id, r.mask) {
			ok = false
			break
		}
	}
	r.w.Release(r.qp, r.demand)
	r.withinStamp[lca], r.within[lca] = r.stamp, ok
	return ok
}

// addUnits records the units of an eligible job of priority prio (its
// Spec.Priority): the whole gang, and, for elastic groups above their
// minimum, each task as a shrink.
func (r *run) addUnits(j *Job, prio int32, g Ground, node queue.NodeID) {
	ji := int32(len(r.jobs))
	r.jobs = append(r.jobs, j)
	leaf := queue.NodeID(-1)
	var charge queue.Vector
	if r.tree != nil {
		leaf = resolveQueue(j, r.tree)
		if leaf >= 0 {
			charge = chargeOf(j, r.tree, r.c)
		}
	}
	if !j.shaped() {
		j.reshape(r.c)
	}
	milli, allWhole := j.milli, j.allWhole // j.shape(r.c), without a call
	// Filled in place: a composite literal is built on the stack and
	// copied in 16-byte moves whose loads wait for its narrower stores
	// (a store-forwarding stall on every eligible job).
	lost := r.lostSince(milli, j)
	r.units = append(r.units, unit{})
	u := &r.units[len(r.units)-1]
	u.milli, u.lost, u.ji, u.task, u.slot = milli, lost, ji, -1, -1
	u.leaf, u.node, u.prio, u.ground = leaf, node, prio, g
	r.contribute(u, allWhole)
	if r.s.cfg.NoShrink || r.defrag || j.rigid {
		return
	}
	p := j.Placement
	if len(p.Tasks) != len(p.Claims) || len(p.Placed) > len(j.Spec.Groups) {
		// A placement edited in place since the job was shaped (see
		// Job.Placement): the whole gang only, never a claim that is gone.
		return
	}
	whole := len(r.units) - 1
	for gi, placed := range p.Placed {
		excess := placed - j.Spec.Groups[gi].Min()
		if excess <= 0 {
			continue
		}
		slot := int32(len(r.slotLimit))
		r.slotLimit = append(r.slotLimit, int32(excess))
		r.units[whole].elastic = true
		for ci, t := range p.Tasks {
			if int(t.Group) != gi {
				continue
			}
			cl := p.Claims[ci : ci+1 : ci+1]
			m := claimsMilli(r.c, cl)
			su := unit{ji: ji, task: int32(ci), slot: slot, ground: g, leaf: leaf, node: node,
				milli: m, lost: r.lostSince(m, j), prio: prio}
			if leaf >= 0 {
				lo := len(r.chargeArena)
				r.chargeArena = append(r.chargeArena, make([]int64, len(charge))...)
				su.chg = int32(lo)
				addCharge(r.chargeArena[lo:], cl, r.tree, r.c)
			}
			r.contribute(&su, allWhole)
			r.units = append(r.units, su)
		}
	}
}

// genericContrib turns off contribute's one-domain shortcut (tests compare
// plans made with and without it).
var genericContrib = false

// contribute records what u frees in each domain at the level, counting
// only GPUs the pending gang could use. allWhole says that every GPU
// claim of the job is a whole GPU.
func (r *run) contribute(u *unit, allWhole bool) {
	u.cfrom = int32(len(r.contribs))
	l, c := r.l, r.c
	if j := r.jobs[u.ji]; !genericContrib && u.task < 0 && allWhole && r.everyHost && !r.solo && r.req.AllowGPU == nil {
		// A whole gang of whole GPUs, every host usable, its claims on
		// hosts of one domain (its least and greatest host in one domain
		// whose hosts are consecutive, or one host; at LevelFabric, hosts
		// whose GPUs lie in that fabric domain): its GPUs (milli /
		// MilliPerGPU) count there, read off the job's shape without its
		// claims.
		di := int32(-1)
		if r.lv >= topology.LevelHost && (r.lx.contig || j.hostLo == j.hostHi) {
			if di = r.lx.hostDom[j.hostLo]; r.lx.hostDom[j.hostHi] != di {
				di = -1
			}
		} else if r.lv == topology.LevelFabric && (r.lx.contig || j.hostLo == j.hostHi) {
			if di = r.lx.hostFab[j.hostLo]; r.lx.hostFab[j.hostHi] != di {
				di = -1
			}
		}
		if n := int32(j.milli / topology.MilliPerGPU); di >= 0 && n > 0 {
			r.contribs = append(r.contribs, contrib{dom: di, gpus: n, milli: int64(n) * topology.MilliPerGPU})
			u.cto = int32(len(r.contribs))
			return
		}
	}
	claims := r.claims(u)
	for i := range claims {
		cl := &claims[i]
		h := cl.Host
		if r.solo {
			r.contributeSolo(u, cl, allWhole)
			continue
		}
		if len(cl.GPUs) == 0 || !r.everyHost && !r.hostUsable(h) {
			continue
		}
		whole := r.everyHost || r.allHealthy(h)
		if whole && allWhole && (r.lv >= topology.LevelHost || r.lx.hostFab[h] >= 0) && r.req.AllowGPU == nil {
			// Fast path: one domain, every GPU counts (at LevelFabric,
			// when the host's GPUs all lie in one fabric domain).
			di := r.lx.hostDom[h]
			if r.lv == topology.LevelFabric {
				di = r.lx.hostFab[h]
			}
			if di < 0 {
				continue
			}
			n := int32(len(cl.GPUs))
			if k := len(r.contribs); k > int(u.cfrom) && r.contribs[k-1].dom == di {
				r.contribs[k-1].gpus += n
				r.contribs[k-1].milli += int64(n) * topology.MilliPerGPU
			} else {
				r.contribs = append(r.contribs, contrib{dom: di, gpus: n, milli: int64(n) * topology.MilliPerGPU})
			}
			continue
		}
		for _, g := range cl.GPUs {
			if !whole && l.GPU(g.GPU).Health != topology.Healthy {
				continue
			}
			if r.req.AllowGPU != nil && !r.req.AllowGPU(g.GPU) {
				continue
			}
			var di int32
			if r.lv == topology.LevelFabric {
				di = r.lx.gpuDom[g.GPU]
			} else {
				di = r.lx.hostDom[h]
			}
			if di < 0 {
				continue
			}
			milli := gpuClaimMilli(c, g)
			if n := len(r.contribs); n > int(u.cfrom) && r.contribs[n-1].dom == di {
				r.contribs[n-1].gpus++
				r.contribs[n-1].milli += milli
			} else {
				r.contribs = append(r.contribs, contrib{dom: di, gpus: 1, milli: milli})
			}
		}
	}
	u.cto = int32(len(r.contribs))
}

// contributeSolo records what claim cl of unit u frees on its host for a
// solo search: healthy GPUs the task could use, CPU and memory (also for a
// claim without GPUs).
func (r *run) contributeSolo(u *unit, cl *topology.Claim, allWhole bool) {
	h := cl.Host
	if !r.hostUsable(h) {
		return
	}
	di := r.lx.hostDom[h]
	if di < 0 {
		return
	}
	ct := contrib{dom: di}
	cm := cpuMem{cl.CPUMilli, cl.MemoryMiB}
	whole := r.allHealthy(h)
	if whole && allWhole && r.req.AllowGPU == nil {
		ct.gpus = int32(len(cl.GPUs))
		ct.milli = int64(ct.gpus) * topology.MilliPerGPU
	} else {
		for _, g := range cl.GPUs {
			if !whole && r.l.GPU(g.GPU).Health != topology.Healthy || r.req.AllowGPU != nil && !r.req.AllowGPU(g.GPU) {
				continue
			}
			ct.gpus++
			ct.milli += gpuClaimMilli(r.c, g)
		}
	}
	if n := len(r.contribs); n > int(u.cfrom) && r.contribs[n-1].dom == di {
		c, m := &r.contribs[n-1], &r.contribCM[n-1]
		c.gpus, c.milli, m.cpu, m.mem = c.gpus+ct.gpus, c.milli+ct.milli, m.cpu+cm.cpu, m.mem+cm.mem
		return
	}
	r.contribs = append(r.contribs, ct)
	r.contribCM = append(r.contribCM, cm)
}

// allHealthy reports whether every GPU of host h is allocatable.
func (r *run) allHealthy(h topology.HostID) bool {
	_, n := r.c.HostGPUs(h)
	return r.l.HealthyGPUs(r.c.HostDomain(h)) == n
}

// hostUsable reports whether the pending gang could run on host h: healthy,
// allowed by its filter, a model some GPU group accepts that the group's
// own filter allows there.
func (r *run) hostUsable(h topology.HostID) bool {
	if !r.l.HostUsable(h) {
		return false
	}
	if r.req.AllowHost != nil && !r.req.AllowHost(h) {
		return false
	}
	m := r.c.HostModel(h)
	for i := range r.req.Groups {
		g := &r.req.Groups[i]
		if g.Kind != gang.TaskCPU && g.Accepts(m) && g.AllowsHost(h) {
			return true
		}
	}
	return false
}
