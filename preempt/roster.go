package preempt

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Roster indexes the jobs of a Snapshot by queue and, within a queue, by
// priority, with the protections of each group counted, so that a plan
// visits only the jobs that may be its victims: the groups whose queue and
// priority give no ground against the pending job are counted as
// exclusions by their sizes, without looking at their jobs. A scheduler
// keeps one across plans and cycles, in step with its events: Add when a
// job starts holding resources, Remove when it stops, Update after
// changing a field the planners classify jobs by (Spec.Queue,
// Spec.Priority, Spec.NonPreemptible, Spec.MinRunTime,
// Spec.MaxPreemptions, Preemptions, Started, Stopping). A Snapshot that
// keeps one offers it by implementing Indexed; State does.
//
// Add, Remove and Update are O(log n) amortised (O(priorities of the
// queue) for a priority not seen in it before): they append to the
// roster's host order or mark an entry of it dead, and the next plan (or
// the next of them, once the changes outnumber a quarter of it) brings it
// up to date in O(n + k log k) for k changes. Filing every job of a
// cluster after a restart is O(n log n), and a job's end moves nothing.
// Not safe for concurrent use; a Job belongs to at most one Roster at a
// time.
type Roster struct {
	byQueue map[string]*rgroup
	groups  []*rgroup // in order of creation
	ids     map[string]*Job
	// all holds the filed jobs (those holding something) by the host of
	// their first claim: a plan that visits many of them visits them in
	// host order, which keeps the cluster's per-host data in cache. Each
	// entry carries the job's bucket and host, so that the jobs a plan
	// does not visit are skipped without reading them.
	all []rentry
	// tail holds the entries filed since all was last settled, in filing
	// order: filing appends there, and the next plan merges them in
	// (settle), so that filing n jobs into an empty roster costs
	// O(n log n), not n inserts into the middle of all. A removal marks
	// its entry dead (j nil) where it is, in all or in tail; dead counts
	// them, and settle drops them. gen counts the settles (a job's rtail
	// holds while its rgen is gen). Filing and removal settle too once
	// the tail and the dead entries outnumber a quarter of all, so that
	// neither grows without bound between plans.
	tail []rentry
	dead int
	gen  uint64
	// stamp marks the buckets a plan visits (rbucket.visit).
	stamp uint64
	// stopping lists the jobs with Stopping set (for the planner's quota
	// view when the Snapshot lists no Commitments).
	stopping []*Job
}

// rgroup is the jobs of one queue, by priority.
type rgroup struct {
	queue   string
	buckets []*rbucket // ascending priority
	// leaf cache: the queue's leaf in tree (-1: none).
	tree *queue.Tree
	leaf queue.NodeID
}

// rbucket is the jobs of one queue with one priority, and how many of them
// are protected on which ground. The protections that do not depend on
// the time are counted; jobs with a minimum run time are listed, since
// whether it protects them depends on when the plan is made.
type rbucket struct {
	prio  int32
	visit uint64 // Roster.stamp of the plan that visits it
	// vall, vex, vleaf and vnode: bucketClass of the plan that visits
	// it. vall: every unprotected job of it is a victim on priority, in
	// leaf vleaf of the plan's queue tree (-1: none) with node vnode the
	// ground's (as ground decides); else, without a queue tree, each is
	// excluded for vex.
	vall         bool
	vex          Exclusion
	vleaf, vnode queue.NodeID
	jobs         []*Job
	// stopping; non-preemptible (not stopping); at their preemption cap
	// (neither of those).
	stopping, nonPre, capped int
	// minRun lists the started jobs with a minimum run time (neither
	// stopping nor non-preemptible).
	minRun []*Job
}

// rentry is a filed job in Roster.all: the job, its bucket, the host of
// its first claim and its flags (as filed).
type rentry struct {
	j     *Job
	b     *rbucket
	host  topology.HostID
	flags uint8
	seq   uint32 // its place in Roster.tail while there (settle's tie-break)
}

// Flags a roster keeps of a job, as they were when it was filed.
const (
	rStopping uint8 = 1 << iota
	rNonPre
	rCapped
	rMinRun
	rEmpty // holds nothing: not filed in a bucket
)

// Indexed is implemented by a Snapshot that keeps a Roster of exactly the
// jobs its Jobs lists, in step with them. Plan then visits only the jobs of
// the queues and priorities that may give victims, and Defragment every
// filed job in host order, both reading the protections the Roster files
// off it. Roster may return nil (no index: every job is visited).
type Indexed interface {
	Roster() *Roster
}

// NewRoster returns an empty Roster.
func NewRoster() *Roster {
	return &Roster{byQueue: map[string]*rgroup{}, ids: map[string]*Job{}}
}

// Len returns the number of jobs.
func (x *Roster) Len() int { return len(x.ids) }

// Add files a job that holds resources. It returns an error for a job
// without Spec or Placement, an inconsistent placement, a duplicate ID, or
// a job filed in another Roster.
func (x *Roster) Add(j *Job) error {
	if err := j.validate(); err != nil {
		return err
	}
	if j.ro != nil {
		return fmt.Errorf("preempt: job %s is in a roster already", j.Spec.ID)
	}
	if _, dup := x.ids[j.Spec.ID]; dup {
		return fmt.Errorf("preempt: duplicate job %s", j.Spec.ID)
	}
	x.ids[j.Spec.ID] = j
	j.ro = x
	x.file(j)
	return nil
}

// Remove forgets a job; it reports whether the job was in x.
func (x *Roster) Remove(j *Job) bool {
	if j == nil || j.ro != x {
		return false
	}
	x.unfile(j)
	delete(x.ids, j.rid)
	j.ro = nil
	return true
}

// Update files a job again after a change of the fields the planners
// classify it by; a job not in x is ignored. Nothing changes when those
// fields did not.
func (x *Roster) Update(j *Job) {
	if j == nil || j.ro != x {
		return
	}
	if j.rid == j.Spec.ID && j.rflags == rosterFlags(j) && (j.rb == nil || j.rb.prio == j.Spec.Priority && j.rg.queue == j.Spec.Queue) {
		return
	}
	x.unfile(j)
	if j.rid != j.Spec.ID {
		delete(x.ids, j.rid)
		x.ids[j.Spec.ID] = j
	}
	x.file(j)
}

// rosterFlags are the protections of j that do not depend on the time.
func rosterFlags(j *Job) uint8 {
	if j.Placement == nil || len(j.Placement.Claims) == 0 {
		return rEmpty
	}
	sp := j.Spec
	switch {
	case j.Stopping:
		return rStopping
	case sp.NonPreemptible:
		return rNonPre
	}
	var f uint8
	if j.capped() {
		f |= rCapped
	}
	if !j.Started.IsZero() && sp.MinRunTime > 0 {
		f |= rMinRun
	}
	return f
}

func (x *Roster) file(j *Job) {
	j.rid = j.Spec.ID
	j.rflags = rosterFlags(j)
	j.rhost = 0
	if j.Placement != nil && len(j.Placement.Claims) > 0 {
		j.rhost = j.Placement.Claims[0].Host
	}
	if j.Stopping {
		x.stopping = append(x.stopping, j)
		j.rstop = int32(len(x.stopping)) // position + 1
	}
	if j.rflags&rEmpty != 0 {
		j.rg, j.rb = nil, nil
		return
	}
	g := x.byQueue[j.Spec.Queue]
	if g == nil {
		g = &rgroup{queue: j.Spec.Queue, leaf: -1}
		x.byQueue[g.queue] = g
		x.groups = append(x.groups, g)
	}
	i, ok := slices.BinarySearchFunc(g.buckets, j.Spec.Priority, func(b *rbucket, p int32) int {
		switch {
		case b.prio < p:
			return -1
		case b.prio > p:
			return 1
		}
		return 0
	})
	if !ok {
		g.buckets = slices.Insert(g.buckets, i, &rbucket{prio: j.Spec.Priority})
	}
	b := g.buckets[i]
	j.rg, j.rb = g, b
	j.rpos = int32(len(b.jobs))
	b.jobs = append(b.jobs, j)
	x.tail = append(x.tail, rentry{j: j, b: b, host: j.rhost, flags: j.rflags})
	j.rtail, j.rgen = int32(len(x.tail)), x.gen
	x.settleIfDue()
	switch f := j.rflags; {
	case f&rStopping != 0:
		b.stopping++
	case f&rNonPre != 0:
		b.nonPre++
	default:
		if f&rCapped != 0 {
			b.capped++
		}
		if f&rMinRun != 0 {
			j.rmin = int32(len(b.minRun))
			b.minRun = append(b.minRun, j)
		}
	}
}

// settle drops the dead entries and merges the entries filed since the
// last call (tail) into all: all stays ordered by host, and the jobs of
// one host in filing order (a job filed later comes after every job of
// its host filed before it, as inserting each after its host's last would
// put it). The tail is sorted by host, then filing order, and merged from
// the back, so that only the entries behind the first one merged move:
// O(len(all) + k log k) for k filed, once, where inserting each would
// move O(len(all)) entries k times.
func (x *Roster) settle() {
	if len(x.tail) == 0 && x.dead == 0 {
		return
	}
	x.gen++
	if x.dead > 0 {
		x.all = slices.DeleteFunc(x.all, func(e rentry) bool { return e.j == nil })
		x.tail = slices.DeleteFunc(x.tail, func(e rentry) bool { return e.j == nil })
		x.dead = 0
	}
	t := x.tail
	if len(t) == 0 {
		return
	}
	if len(t) > 1 {
		for k := range t {
			t[k].seq = uint32(k)
		}
		slices.SortFunc(t, func(a, b rentry) int {
			if c := cmp.Compare(a.host, b.host); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
	}
	n := len(x.all)
	x.all = slices.Grow(x.all, len(t))[:n+len(t)]
	a, i, k := x.all, n-1, len(t)-1
	for w := len(a) - 1; k >= 0; w-- {
		if i >= 0 && a[i].host > t[k].host {
			a[w] = a[i]
			i--
		} else {
			a[w] = t[k]
			k--
		}
	}
	clear(t)
	x.tail = t[:0]
}

// settleIfDue settles once the tail and the dead entries outnumber a
// quarter of all (and 64): amortised O(log n) per filing or removal.
func (x *Roster) settleIfDue() {
	if p := len(x.tail) + x.dead; p > 64 && p > len(x.all)/4 {
		x.settle()
	}
}

func (x *Roster) unfile(j *Job) {
	if j.rstop > 0 {
		k, last := int(j.rstop)-1, len(x.stopping)-1
		x.stopping[k] = x.stopping[last]
		x.stopping[k].rstop = int32(k) + 1
		x.stopping[last] = nil
		x.stopping = x.stopping[:last]
		j.rstop = 0
	}
	b := j.rb
	if b == nil {
		return
	}
	if j.rtail > 0 && j.rgen == x.gen {
		x.tail[j.rtail-1].j = nil
	} else {
		k := sort.Search(len(x.all), func(k int) bool { return x.all[k].host >= j.rhost })
		for x.all[k].j != j {
			k++
		}
		x.all[k].j = nil
	}
	x.dead++
	k, last := int(j.rpos), len(b.jobs)-1
	b.jobs[k] = b.jobs[last]
	b.jobs[k].rpos = int32(k)
	b.jobs[last] = nil
	b.jobs = b.jobs[:last]
	switch f := j.rflags; {
	case f&rStopping != 0:
		b.stopping--
	case f&rNonPre != 0:
		b.nonPre--
	default:
		if f&rCapped != 0 {
			b.capped--
		}
		if f&rMinRun != 0 {
			k, last := int(j.rmin), len(b.minRun)-1
			b.minRun[k] = b.minRun[last]
			b.minRun[k].rmin = int32(k)
			b.minRun[last] = nil
			b.minRun = b.minRun[:last]
		}
	}
	if len(b.jobs) == 0 {
		g := j.rg
		i := slices.Index(g.buckets, b)
		g.buckets = slices.Delete(g.buckets, i, i+1)
	}
	j.rg, j.rb = nil, nil
	x.settleIfDue()
}

// leafIn returns the group's leaf in tree (-1: none), cached.
func (g *rgroup) leafIn(t *queue.Tree) queue.NodeID {
	if g.tree != t {
		g.tree, g.leaf = t, -1
		if id, ok := t.Lookup(g.queue); ok && t.LeafOf(id) != nil {
			g.leaf = id
		}
	}
	return g.leaf
}

// roster returns the Snapshot's Roster, or nil.
func (r *run) roster() *Roster {
	if ix, ok := r.snap.(Indexed); ok {
		return ix.Roster()
	}
	return nil
}

// collectIndexed is collect over a Roster: the jobs of the buckets whose
// queue and priority may give a ground against the pending job are
// classified one by one; the others are counted as exclusions in bulk
// (their protections first, as classify orders them).
func (r *run) collectIndexed(ro *Roster) {
	ro.settle()
	self := ro.ids[r.req.ID]
	ro.stamp++
	n := 0
	for _, g := range ro.groups {
		for _, b := range g.buckets {
			bc := r.bucketClass(g, b.prio < r.pend.Priority)
			if bc.visit || self != nil && self.rb == b {
				b.visit, b.vall, b.vex, b.vleaf, b.vnode = ro.stamp, bc.all, bc.ex, bc.leaf, bc.node
				// In a queue tree, a visited bucket whose jobs are not
				// all victims on priority (reclaim and fair share, decided
				// one by one and priced again by priceRestarts, or the
				// plan's job's own bucket visited for it alone): every job
				// through considerFiled (jobByJob).
				r.mixed = r.mixed || r.tree != nil && !bc.all
				n += len(b.jobs)
				continue
			}
			ex := bc.ex
			r.excluded[ExclStopping] += b.stopping
			r.excluded[ExclNonPreemptible] += b.nonPre
			active, activeCapped := 0, 0
			for _, j := range b.minRun {
				if j.inMinRun(r.now) {
					active++
					if j.rflags&rCapped != 0 {
						activeCapped++
					}
					r.protectedUntil(j)
				}
			}
			r.excluded[ExclMinRunTime] += active
			r.excluded[ExclMaxPreemptions] += b.capped - activeCapped
			r.excluded[ex] += len(b.jobs) - b.stopping - b.nonPre - active - (b.capped - activeCapped)
		}
	}
	// In host order: the buckets interleave all over the cluster, and
	// visiting its hosts' data in order is much faster. Many jobs are
	// picked out of the roster's host order; a few are sorted.
	if 4*n >= len(ro.all) {
		if r.jobByJob() {
			for i := range ro.all {
				if e := &ro.all[i]; e.b.visit == ro.stamp {
					r.considerFiled(e.j, e.b, e.flags, self)
				}
			}
		} else {
			r.visitUsual(ro, self)
		}
		return
	}
	visit := r.visit[:0]
	for _, g := range ro.groups {
		for _, b := range g.buckets {
			if b.visit == ro.stamp {
				visit = append(visit, b.jobs...)
			}
		}
	}
	slices.SortFunc(visit, func(a, b *Job) int { return int(a.rhost) - int(b.rhost) })
	for _, j := range visit {
		r.considerFiled(j, j.rb, j.rflags, self)
	}
	clear(visit)
	r.visit = visit[:0]
}

// slowVisit turns off visitUsual (tests compare plans made with and
// without it).
var slowVisit = false

// jobByJob reports whether collectIndexed must visit job by job
// (considerFiled) rather than in visitUsual's loop, which needs a plan at
// the level of host domains or above, whose gang may use every host and
// GPU (everyHost, no AllowGPU), not solo nor a migration, and in a queue
// tree every visited bucket's jobs victims on priority (not mixed).
func (r *run) jobByJob() bool {
	return slowVisit || genericContrib || r.mixed || r.solo || r.defrag || !r.everyHost || r.req.AllowGPU != nil || r.lv < topology.LevelHost
}

// visitUsual is collectIndexed's visit of every filed job in host order,
// each job of a visited bucket with no filing flag, whole GPUs only, no
// group above its minimum and its claims in one domain of the level (the
// usual job of a plan on priority) made into its one unit and
// contribution here, in the loop, as considerFiled, addUnits and
// contribute would; every other job through considerFiled. It reads each
// such job's two first cache lines and nothing else of it.
func (r *run) visitUsual(ro *Roster, self *Job) {
	hostDom, contig := r.lx.hostDom, r.lx.contig
	r.openDoms()
	r.tally = tally{on: true, listed: !plainLists, last: -1}
	for i := range ro.all {
		e := &ro.all[i]
		b := e.b
		if b.visit != ro.stamp {
			continue
		}
		j := e.j
		if e.flags == 0 && b.vall && j != self && j.shaped() && j.cclaims > 0 && j.allWhole && j.rigid && (contig || j.hostLo == j.hostHi) {
			if di := hostDom[j.hostLo]; di >= 0 && hostDom[j.hostHi] == di && j.milli >= topology.MilliPerGPU {
				n := int32(j.milli / topology.MilliPerGPU)
				ji, cf := int32(len(r.jobs)), int32(len(r.contribs))
				r.eligible++
				r.jobs = append(r.jobs, j)
				// lostSince's usual cases, inline (lostSince costs too
				// much for the inliner): a reported checkpoint, or none
				// and no interval.
				var lost GPUTime
				switch cp := &j.Checkpoint; {
				case j.Started.IsZero():
				case !cp.IsZero() && !cp.Before(j.Started):
					lost = lostNanos(j.milli, cp.UnixNano(), r.nowNano)
				case cp.IsZero() && j.CheckpointInterval <= 0:
					lost = lostNanos(j.milli, j.Started.UnixNano(), r.nowNano)
				default:
					lost = r.lostSince(j.milli, j)
				}
				r.units = append(r.units, unit{})
				u := &r.units[len(r.units)-1]
				u.milli, u.lost, u.ji, u.task, u.slot = j.milli, lost, ji, -1, -1
				u.leaf, u.node, u.prio, u.ground = b.vleaf, b.vnode, b.prio, GroundPriority
				u.cfrom, u.cto = cf, cf+1
				m := int64(n) * topology.MilliPerGPU
				r.contribs = append(r.contribs, contrib{dom: di, gpus: n, milli: m})
				// rankFrom's tally of the unit, here while it is at hand.
				r.listUnit(len(r.units)-1, di)
				r.doms[di].add(r.amount(n, m), n, lost, true)
				continue
			}
		}
		from := len(r.units)
		r.considerFiled(j, b, e.flags, self)
		if len(r.units) > from {
			r.tallyUnits(from, len(r.units), nil, 0)
		}
	}
}

// considerFiled is consider for a job of the roster in bucket b, which
// the plan visits: its protections that do not depend on the time are its
// filing flags f (the Roster is told of every change to them), its
// priority b's, its ground (without a queue tree) b's class, and self is
// the filed job the plan is for (nil: none), so that a visit reads little
// of the job besides what its units need (not its spec).
func (r *run) considerFiled(j *Job, b *rbucket, f uint8, self *Job) {
	if j == self || j.Placement == nil {
		return
	}
	if !j.shaped() {
		j.reshape(r.c)
	}
	if j.cclaims == 0 { // (its claim count, cached: see Job.Placement)
		return
	}
	ex, protected := r.filedProtection(j, f)
	switch {
	case protected:
		if ex == ExclMinRunTime {
			r.protectedUntil(j)
		}
	default:
		g, node := Ground(0), queue.NodeID(-1)
		switch {
		case r.tree != nil:
			ex, g, node = r.ground(j)
		case b.vall:
			g = GroundPriority // as ground decides without a tree
		default:
			ex = b.vex
		}
		if g != 0 {
			r.eligible++
			r.addUnits(j, b.prio, g, node)
			return
		}
	}
	r.excluded[ex]++
}

// filedProtection is Protection for a filed job with filing flags f:
// those that do not depend on the time read off f (the Roster is told of
// every change to them).
func (r *run) filedProtection(j *Job, f uint8) (Exclusion, bool) {
	if f == 0 {
		return 0, false // (inlined: most jobs have no flag)
	}
	return r.flagProtection(j, f)
}

// flagProtection is filedProtection for a job with flags.
func (r *run) flagProtection(j *Job, f uint8) (Exclusion, bool) {
	switch {
	case f&rStopping != 0:
		return ExclStopping, true
	case f&rNonPre != 0:
		return ExclNonPreemptible, true
	case f&rMinRun != 0 && j.inMinRun(r.now):
		return ExclMinRunTime, true
	case f&rCapped != 0:
		return ExclMaxPreemptions, true
	}
	return 0, false
}

// collectMoves is collect over a Roster for Defragment: every filed job
// in host order, classified as classifyMove does, its protections that do
// not depend on the time read off its filing flags and its priority off
// its bucket, so that a visit does not read the job's spec.
func (r *run) collectMoves(ro *Roster) {
	ro.settle()
	self := ro.ids[r.req.ID]
	for i := range ro.all {
		e := &ro.all[i]
		r.considerMove(e.j, e.b, e.flags, self)
	}
}

// considerMove is considerFiled for Defragment: Protection's order, then
// the migration cap and the spec (moveExclusion).
func (r *run) considerMove(j *Job, b *rbucket, f uint8, self *Job) {
	if j == self || j.Placement == nil {
		return
	}
	if !j.shaped() {
		j.reshape(r.c)
	}
	if j.cclaims == 0 {
		return
	}
	ex, protected := r.filedProtection(j, f)
	switch most := r.s.cfg.MaxMigrations; {
	case protected:
	case most > 0 && j.Migrations >= most:
		ex = ExclMaxMigrations
	default:
		if _, err := j.request(r.c); err != nil {
			ex = ExclSpec
			break
		}
		r.eligible++
		r.addUnits(j, b.prio, GroundMigration, -1)
		return
	}
	r.excluded[ex]++
}

// bucketClass says how classify decides the unprotected jobs of group g
// with a priority lower than the pending job's or not (bucketVisit).
func (r *run) bucketClass(g *rgroup, lower bool) bucketVisit {
	cfg := &r.s.cfg
	if r.tree == nil {
		same := g.queue == r.pend.Queue
		switch {
		case lower && (cfg.LowerPriority == AnyQueue || cfg.LowerPriority == WithinQueue && same):
			return bucketVisit{visit: true, all: true, leaf: -1, node: -1}
		case same || cfg.LowerPriority == AnyQueue:
			return bucketVisit{ex: ExclPriority}
		}
		return bucketVisit{ex: ExclGuaranteed}
	}
	qv := g.leafIn(r.tree)
	same := qv >= 0 && qv == r.qp
	if lower && (cfg.LowerPriority == AnyQueue || cfg.LowerPriority == WithinQueue && same) {
		if node, ok := r.crossPriority(qv, same); ok {
			return bucketVisit{visit: true, all: true, leaf: qv, node: node}
		}
	}
	if same || qv < 0 || r.qp < 0 {
		if same || cfg.LowerPriority == AnyQueue {
			return bucketVisit{ex: ExclPriority}
		}
		return bucketVisit{ex: ExclGuaranteed}
	}
	li := r.leaf(qv)
	switch {
	case li.reclaim < 0 && li.fs < 0:
		return bucketVisit{ex: ExclGuaranteed}
	case li.reclaim >= 0 && li.reclaimOK && (cfg.Reclaim == ReclaimAny || cfg.Reclaim == ReclaimLowerPriority && lower):
		return bucketVisit{visit: true} // reclaim: priced again per queue (priceRestarts)
	case li.fs >= 0:
		return bucketVisit{visit: true} // the final-share rule, job by job
	}
	return bucketVisit{ex: ExclBorrowing}
}

// bucketVisit is bucketClass's answer for a bucket: exclude its
// unprotected jobs for ex, or visit them (visit); all when each of them is
// a victim on priority (GroundPriority), in leaf leaf of the plan's queue
// tree (-1: none, or no tree) with node node the ground's, as ground
// decides job by job.
type bucketVisit struct {
	ex         Exclusion
	visit, all bool
	leaf, node queue.NodeID
}
