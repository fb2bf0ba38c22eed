package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// cycleState is the context of one scheduling cycle, made anew by begin.
// It is kept after the cycle: Job() reads the reasons of the last cycle
// from it between cycles. Its methods are the only writers of its fields,
// of each job's reason and of the queue classes' Data.
type cycleState struct {
	// n numbers the cycles; a job's reason stamped with n is current, a
	// class's classState stamped with n dropped it in this cycle.
	n uint64
	// leaves is each leaf's state in the cycle, by node ID (nil before the
	// first cycle).
	leaves []leafState
	// admitsNow are the jobs admitted in the cycle so far, in order (a kept
	// reservation's shadow is brought up to date with them).
	admitsNow []*job
	// buf is the placer's output for the candidate being evaluated; an
	// admitted placement is copied out of it.
	buf gang.Placement
	// req is a candidate's request with its model filter (request).
	req gang.Request
	// groups are the jobs' task-group filters (groupfilter.go), read-only
	// here; set by New.
	groups *groupFilters
	// explained is, per leaf (by node ID), what the cycle's explanations
	// changed (for list).
	explained []leafExplained
	// list keeps Decision.Pending's rows across cycles (pendinglist.go).
	list pendingList
}

// leafExplained records the explanations given to a leaf's jobs in cycle
// n: how many jobs got again the reason of the cycle before (same), and
// whether any got another (changed).
type leafExplained struct {
	n       uint64
	same    int
	changed bool
}

// leafState is one leaf's state in a cycle.
type leafState struct {
	cur         *queue.Cursor
	blockedOnce bool    // a candidate of the leaf was blocked (afterBlock ran)
	stop        *Reason // the queue stopped (strict FIFO behind a blocked head)
	stopHead    *job    // the head stop names (its Blocker), compared by identity
	lastStop    *Reason // stop in the cycle before (reused when equal)
}

// classState records why a class was dropped in a cycle, and where its
// rows are in its leaf's listing (pendinglist.go).
type classState struct {
	cycle  uint64
	reason *Reason
	// listed is the cycle whose listing gave the class index listIdx.
	listed  uint64
	listIdx int32
}

// listIndex returns class c's index among its leaf's classes in the
// listing numbered stamp, giving it next if it has none yet.
func (cs *cycleState) listIndex(c *queue.Class, stamp uint64, next int) int {
	st, _ := c.Data.(*classState)
	if st == nil {
		st = &classState{}
		c.Data = st
	}
	if st.listed != stamp {
		st.listed, st.listIdx = stamp, int32(next)
	}
	return int(st.listIdx)
}

// begin starts cycle n+1.
func (cs *cycleState) begin() {
	cs.n++
	cs.admitsNow = cs.admitsNow[:0]
}

// openLeaves starts a cursor over every leaf of tree.
func (cs *cycleState) openLeaves(tree *queue.Tree) {
	if len(cs.leaves) != tree.NumNodes() {
		cs.leaves = make([]leafState, tree.NumNodes())
	}
	for _, id := range tree.Leaves() {
		cs.leaves[id] = leafState{cur: tree.LeafOf(id).Begin(), lastStop: cs.leaves[id].stop}
	}
}

// closeLeaves ends the leaves' cursors.
func (cs *cycleState) closeLeaves(tree *queue.Tree) {
	for _, id := range tree.Leaves() {
		cs.leaves[id].cur.End()
	}
}

// explain sets why j waits, as of this cycle. A reason equal to the one
// j had in the cycle before (or already has in this one) is kept as that
// same pointer, so that list can tell unchanged rows by pointer; the
// leaf's explained record says what changed.
func (cs *cycleState) explain(j *job, r *Reason) {
	if cs.list.cycle == cs.n {
		cs.list.forget() // explained after this cycle's listing: list afresh
	}
	e := cs.explainedIn(j.leaf.ID())
	switch {
	case j.reasonCycle == cs.n && j.reason != nil && (j.reason == r || sameReason(j.reason, r)):
		r = j.reason
	case j.reasonCycle == cs.n-1 && j.reason != nil && j.entry.ClassOf() != nil && sameReason(j.reason, r):
		// Queued, and listed with this reason in the cycle before.
		r = j.reason
		e.same++
	default:
		e.changed = true
	}
	j.reason, j.reasonCycle = r, cs.n
}

// explainedIn returns leaf id's record of this cycle's explanations.
func (cs *cycleState) explainedIn(id queue.NodeID) *leafExplained {
	if int(id) >= len(cs.explained) {
		cs.explained = append(cs.explained, make([]leafExplained, int(id)+1-len(cs.explained))...)
	}
	e := &cs.explained[id]
	if e.n != cs.n {
		*e = leafExplained{n: cs.n}
	}
	return e
}

// request returns j's request with host filter allow (a model filter
// of this cycle): j's own when allow is nil, else a copy in the cycle's
// scratch, valid until the next call. Nothing keeps it: the filter is a
// value of the candidate's evaluation, never parked in j.req.
func (cs *cycleState) request(j *job, allow func(topology.HostID) bool) *gang.Request {
	if allow == nil {
		return j.req
	}
	cs.req = *j.req
	cs.req.AllowHost = allow
	cs.groups.narrow(j, &cs.req) // (groupfilter.go: a job with a group filter has allow)
	return &cs.req
}

// readGroups gives cs the jobs' task-group filters to read (New; their
// concern writes them: groupfilter.go).
func (cs *cycleState) readGroups(g *groupFilters) { cs.groups = g }

// forget drops j's reason (it was admitted, or waits again).
func (cs *cycleState) forget(j *job) { j.reason = nil }

// admitted records that j was admitted in the cycle.
func (cs *cycleState) admitted(j *job) {
	cs.forget(j)
	cs.admitsNow = append(cs.admitsNow, j)
}

// classBefore returns the reason j's class was dropped for in this cycle
// or the one before, or nil.
func (cs *cycleState) classBefore(j *job) *Reason {
	if cl := j.entry.ClassOf(); cl != nil {
		if st, ok := cl.Data.(*classState); ok && st.cycle+1 >= cs.n {
			return st.reason
		}
	}
	return nil
}

// classFail drops j's class from the cycle with reason r.
func (cs *cycleState) classFail(cur *queue.Cursor, j *job, r *Reason) {
	cl := j.entry.ClassOf()
	st, _ := cl.Data.(*classState)
	if st == nil {
		st = &classState{}
		cl.Data = st
	}
	if st.cycle == cs.n-1 && sameReason(st.reason, r) {
		r = st.reason // as in the cycle before: the same pointer (list)
	}
	st.cycle, st.reason = cs.n, r
	cur.DropClass()
}

// stop stops leaf's queue behind its head j, blocked for r.
func (st *leafState) stopBehind(leaf *queue.Leaf, j *job, r *Reason) {
	st.stop, st.stopHead = &Reason{Code: WaitBehindHead, Blocker: j.spec.ID, Queue: leaf.Name(), Cause: r.Code}, j
	if sameReason(st.lastStop, st.stop) {
		st.stop = st.lastStop // as in the cycle before: the same pointer (list)
	}
	st.cur.Stop()
}

var notReached = &Reason{Code: WaitCapacity, Detail: "not considered yet"}

// reasonSource says where a waiting job's reason comes from.
type reasonSource uint8

const (
	fromJob   reasonSource = iota // explained in the cycle (job.reason)
	fromStop                      // behind the stopped head of a strict queue
	fromClass                     // its class's failure in the cycle, or notReached
)

// reason is why waiting job j waits, as of the last cycle.
func (cs *cycleState) reason(j *job) *Reason {
	r, _ := cs.reasonOf(j)
	return r
}

// reasonOf is reason, with where it comes from.
func (cs *cycleState) reasonOf(j *job) (*Reason, reasonSource) {
	return cs.reasonIn(j, j.leaf.ID())
}

// reasonIn is reasonOf for a job of leaf id (the listing knows it).
func (cs *cycleState) reasonIn(j *job, id queue.NodeID) (*Reason, reasonSource) {
	if j.reasonCycle == cs.n && j.reason != nil {
		return j.reason, fromJob
	}
	// A stopped strict queue tried nothing after its head.
	// The head by identity: comparing IDs would read each row's ID bytes,
	// a cold line apart from the row's.
	if st := &cs.leaves[id]; st.stop != nil && st.stopHead != j {
		return st.stop, fromStop
	}
	return cs.classReason(j.entry.ClassOf()), fromClass
}

// classReason is the reason of the jobs of class c that have none of
// their own: its failure in the cycle, or notReached.
func (cs *cycleState) classReason(c *queue.Class) *Reason {
	if st, ok := c.Data.(*classState); ok && st.cycle == cs.n {
		return st.reason
	}
	return notReached
}

// listPending returns every waiting job with its reason, queue by queue
// (pendinglist.go).
func (cs *cycleState) listPending(tree *queue.Tree) []Pending { return cs.list.list(tree, cs) }

// Schedule runs one scheduling cycle at time now and returns what to do.
// A now earlier than the latest time seen is clamped to it
// (Decision.Now); see Scheduler.
//
// The cycle serves queues in fair-share order (package queue: jobs that
// fit in their queue's guarantee first, then siblings by the fairness
// policy, level by level), and each queue's jobs in its policy's order.
// For each candidate it checks, in order (evaluate): its nomination or
// the victims it waits for, quota holds of earlier blocked jobs, the
// quotas on the path to the root, per-model quotas (which restrict the
// acceptable models), the placement-failure cache, the placer, and the
// reservations of earlier blocked jobs (EASY backfill: a job that would
// still run at a reserved start must not take what the reservation
// needs). A job that passes is committed to the ledger and bound. A job
// of a class that failed is not tried again in the cycle (unless the
// Preemptor planned victims for the one that failed: each of the class's
// waiting jobs then asks for victims of its own), and the class's
// failure is cached by shape until capacity that could matter is freed.
//
// Called from inside a callback (ErrReentrant) — Holding's, a reader's
// Ascend, or a Preemptor or Placer during Schedule — it changes nothing
// and returns an empty Decision at Now().
//
// Cost: O(classes tried × (quota check + cached-failure check)) plus one
// placement per class whose capacity changed, plus the admissions, plus
// O(pending) to list the waiting jobs.
func (s *Scheduler) Schedule(now time.Time) Decision {
	if s.mutating("Schedule", "") != nil {
		return Decision{Now: s.now}
	}
	defer s.cb.leave() // meanwhile the Preemptor and the Placer may read, not change
	now = s.advance(now)
	if s.testBeforeCycle != nil {
		s.testBeforeCycle()
	}
	d := Decision{Now: now}
	s.removeDrained(now)                    // hosts whose jobs are gone leave the cluster (live.go)
	s.beginCycle(now)                       // a new cycle context, caches bounded, no holds yet
	s.expireAdmissions(&d, now)             // admitted jobs never reported started are released (AdmitTimeout)
	s.victims.refreshFresh(now)             // jobs admitted in earlier cycles may be victims now
	s.lapseRefusals(now)                    // refused victims whose retry time came may be victims again (refusals.go)
	s.recoverFaults(&d, now)                // recovery actions for the faults since the last cycle
	s.bindNominated(&d, now)                // nominated jobs whose victims are gone bind; the others hold their room
	s.dfg.holdAll(s.ledger)                 // migrations in flight hold their destinations (defrag.go)
	s.serveQueues(&d, now)                  // every candidate, in fair-share order: evaluate, then admit or block
	s.growBack(&d, now)                     // shrunk elastic gangs grow back into room nobody waits for (elastic.go)
	s.consolidate(&d, now)                  // nothing waits: pack running jobs to free whole domains (consolidate.go)
	s.noms.unholdAll(s.ledger, s.tree, now) // the nominations give back what they held
	s.dfg.unholdAll(s.ledger)               // and so do the migrations' destinations
	if !s.cfg.OmitPending {
		d.Pending = s.cyc.listPending(s.tree)
		s.refused.annotate(d.Pending) // jobs whose plans a refused stop broke say so
	}
	s.res.keep(s.cyc.admitsNow) // this cycle's reservations (and the standby ones), for the next
	if s.cfg.Stats {
		d.Stats = s.stats.collect(s, &d) // the cycle's figures (stats.go)
	}
	return d
}

// planCycle is the number of the cycle running or last run
// (planSource).
func (s *Scheduler) planCycle() uint64 { return s.cyc.n }

// beginCycle starts a cycle at now.
func (s *Scheduler) beginCycle(now time.Time) {
	s.cyc.begin()
	s.fit.bound()
	s.adm.bound()
	if p := s.tree.Fairness().Policy; p == queue.FairTree || p == queue.FinishTime {
		s.tree.Advance(now)
	}
	s.res.begin()
}

// bindNominated binds every nominated job whose victims are gone to its
// placement, before any other job is considered, and has the other
// nominations hold what they need for the rest of the cycle. A bind is
// checked against the quotas as they are, not with the demands of other
// nominations added (their victims still hold their charges; the plan
// that nominated each job counted the others).
func (s *Scheduler) bindNominated(d *Decision, now time.Time) {
	s.noms.keep(func(n *nomination) bool {
		j := n.job
		if j.nom.nominated != n || !j.state.Waiting() {
			s.dropNomination(n)
			return false
		}
		if n.broken(s.ledger) {
			// Its room was cordoned or became unhealthy since: the job
			// plans again (serveQueues) without waiting for its
			// victims, which still stop.
			s.noms.stopWaiting(j)
			s.dropNomination(n)
			return false
		}
		if s.victimStillHolding(j) != "" {
			return true
		}
		// Every victim is gone: bind the job to its placement now. The
		// plan counted every stop in progress as done; if a quota still
		// binds while a job stopping below it holds, wait for that one.
		lid := j.leaf.ID()
		b := s.tree.Check(lid, j.demand)
		if b == nil && !slices.Equal(n.charge, j.demand) {
			b = s.tree.Check(lid, n.charge)
		}
		if b != nil {
			if w := s.stoppingUnder(b); w != nil {
				s.cyc.explain(j, &Reason{Code: WaitPreemption, Blocker: w.spec.ID, Quota: b,
					Detail: fmt.Sprintf("(its victims are gone; queue %s's %s quota comes free when %s stops)", b.Queue, b.Resource, w.spec.ID)})
				return true
			}
		}
		s.noms.bound(n)
		if b != nil || !s.admit(d, j.leaf, j, n.p, nil, now) {
			s.dropNomination(n)
		}
		return false
	})
	for _, n := range s.noms.list {
		s.noms.hold(n, s.ledger, s.tree, now)
	}
}

// serveQueues decides on every candidate the queue tree offers, in
// fair-share order.
func (s *Scheduler) serveQueues(d *Decision, now time.Time) {
	s.cyc.openLeaves(s.tree)
	for {
		leaf, e, ok := s.tree.Next()
		if !ok {
			break
		}
		s.try(d, leaf, e.Ref.(*job), now)
	}
	s.cyc.closeLeaves(s.tree)
}

// pass says which candidates evaluate is deciding on.
type pass uint8

const (
	// firstPass: the next candidate of its queue. A placement failure is
	// its class's: cached, and the class dropped from the cycle.
	firstPass pass = iota
	// backfillPass: a job of a class whose candidate conflicted with a
	// reservation, short enough to end before it (backfillShort). Its
	// failures are its own: not cached.
	backfillPass
)

// verdictKind is what evaluate decided.
type verdictKind uint8

const (
	verdictAdmit    verdictKind = iota // placed and clear of every reservation
	verdictWait                        // not this cycle: nominated, or waiting for its victims
	verdictBlocked                     // a quota, a quota hold or the placement stops it
	verdictConflict                    // placed, but it would delay a reservation
)

// verdict is evaluate's result for one candidate.
type verdict struct {
	kind   verdictKind
	reason *Reason // why it waits (verdictWait: nil while nothing to say)
	// placed and shadows, for verdictAdmit: where it goes and the
	// reservation shadows that already took its claims. placed is
	// borrowed, not owned: it points into a buffer valid only until the
	// next placement into it (the cycle's buf, the BackfillAround
	// placer's, a due reservation's placement), so a verdict is consumed
	// at once — admit copies placed before anything else and nothing
	// keeps it (TestPlacedBuffersNotKept).
	placed  *gang.Placement
	shadows []shadowState
	// block is the quota that stops it, if one does.
	block *queue.Block
	// preempt: the Preemptor may help (a quota or a placement block); x is
	// the placer's explanation (nil for a quota block).
	preempt bool
	x       *gang.Explanation
	// allow is the model filter it was placed (or is to be planned)
	// with, mkey its name (reservations).
	allow    func(topology.HostID) bool
	mkey     string
	conflict *hold // verdictConflict: the reservation it would delay
}

// evaluate runs every check on candidate j of leaf at now, in order:
// nominated or waiting for victims, quota holds, quotas, per-model quotas,
// the failure cache, the placer (or a reservation whose time has come),
// the reservations. It writes only the failure cache (first pass) and
// the reservation shadows that take a passing job's claims; j's model
// filter goes in the verdict (for the Preemptor and a reservation).
func (s *Scheduler) evaluate(leaf *queue.Leaf, j *job, now time.Time, ps pass) verdict {
	lid := leaf.ID()
	if n := j.nom.nominated; n != nil {
		// Nominated: it binds at the start of a cycle, once its victims
		// (and the stops its quota waits for) are gone; never elsewhere.
		v := verdict{kind: verdictWait}
		if id := s.victimStillHolding(j); id != "" {
			v.reason = &Reason{Code: WaitPreemption, Blocker: id}
			if n.overdue(now) {
				v.reason.Detail = fmt.Sprintf("(overdue: not reported stopped by %s; only the GPUs are held for %s now)", n.due.UTC().Format(time.RFC3339), j.spec.ID)
			}
		}
		return v
	}
	if len(j.nom.waitingFor) > 0 {
		if id := s.victimStillHolding(j); id != "" {
			return verdict{kind: verdictWait, reason: &Reason{Code: WaitPreemption, Blocker: id}}
		}
		s.noms.stopWaiting(j)
	}
	if h := s.res.quotaHeld(s.tree, lid, j); h != nil {
		r := &Reason{Code: WaitQuotaHeld, Blocker: h.holder.spec.ID, HeldQueue: s.tree.Name(h.node), HeldResource: s.tree.Dimensions().Name(h.dim)}
		return verdict{kind: verdictBlocked, reason: r}
	}
	if b := s.tree.Check(lid, j.demand); b != nil {
		// The Preemptor and a reservation place j with its own model
		// filter of now.
		ch := s.hosts.apply(j, s.adm.models(lid, j))
		return verdict{kind: verdictBlocked, reason: s.quotaReason(j, b), block: b, preempt: true, allow: ch.allow, mkey: ch.key}
	}
	ch := s.hosts.apply(j, s.adm.models(lid, j)) // hostfilter.go
	if ch.block != nil {
		return verdict{kind: verdictBlocked, reason: s.quotaReason(j, ch.block), block: ch.block, allow: ch.allow, mkey: ch.key}
	}
	if ch.guar != nil {
		if p := s.place(j, ch.guar, j.shape+ch.gkey, now, ps); p != nil {
			return s.clearOfReservations(j, p, now, ch.guar, ch.key)
		}
	}
	key := j.shape + ch.key
	if r := s.fit.lookup(key, ch.allow, s.ledger, s.c); r != nil {
		return verdict{kind: verdictBlocked, reason: r, preempt: true, x: r.Placement, allow: ch.allow, mkey: ch.key}
	}
	p := &s.cyc.buf
	if x := s.placer.Place(s.ledger, s.cyc.request(j, ch.allow), p); x != nil {
		if p = s.res.due(j, now, s.ledger); p == nil {
			r := placementReason(x, s.c, now)
			if ps == firstPass {
				s.fit.record(key, s.ledger.Generation(), r, j.req)
			}
			return verdict{kind: verdictBlocked, reason: r, preempt: true, x: x, allow: ch.allow, mkey: ch.key}
		}
	}
	if ps == firstPass {
		s.fit.forget(key)
	}
	return s.clearOfReservations(j, p, now, ch.allow, ch.key)
}

// quotaReason is the reason of job j stopped by quota block b: the
// reason j's class was dropped for in the cycle before (or in this one)
// when it says the same — classFail would keep that pointer anyway — so
// that a class blocked the same way cycle after cycle allocates nothing.
func (s *Scheduler) quotaReason(j *job, b *queue.Block) *Reason {
	r := Reason{Code: blockCode(b), Quota: b, Detail: s.noms.heldDetail(s.tree, b)}
	if old := s.cyc.classBefore(j); old != nil && sameReason(old, &r) {
		return old
	}
	p := new(Reason)
	*p = r
	return p
}

// blockCode is the reason code of quota block b: WaitCapacity when b is
// the root's quota and that quota is the cluster's own capacity (no root
// quota configured: the cluster is full, no queue's quota binds),
// WaitQuota otherwise.
func blockCode(b *queue.Block) ReasonCode {
	if b.Kind == queue.BlockCluster && b.Capacity {
		return WaitCapacity
	}
	return WaitQuota
}

// place places j with host filter allow, using (and, in the first pass,
// feeding) the failure cache under key; it returns the placement (in the
// cycle's buffer) or nil.
func (s *Scheduler) place(j *job, allow func(topology.HostID) bool, key string, now time.Time, ps pass) *gang.Placement {
	if s.fit.lookup(key, allow, s.ledger, s.c) != nil {
		return nil
	}
	if x := s.placer.Place(s.ledger, s.cyc.request(j, allow), &s.cyc.buf); x != nil {
		if ps == firstPass {
			s.fit.record(key, s.ledger.Generation(), placementReason(x, s.c, now), j.req)
		}
		return nil
	}
	if ps == firstPass {
		s.fit.forget(key)
	}
	return &s.cyc.buf
}

// clearOfReservations checks j, placed at p with model filter allow,
// against the reservations.
func (s *Scheduler) clearOfReservations(j *job, p *gang.Placement, now time.Time, allow func(topology.HostID) bool, mkey string) verdict {
	shadows, conflict := s.res.check(j, p.Claims, now)
	if conflict != nil {
		if q := s.around.place(s, j, allow, now); q != nil {
			if sh, c := s.res.check(j, q.Claims, now); c == nil {
				return verdict{kind: verdictAdmit, placed: q, shadows: sh, allow: allow, mkey: mkey}
			}
		}
		return verdict{kind: verdictConflict, conflict: conflict, allow: allow, mkey: mkey}
	}
	return verdict{kind: verdictAdmit, placed: p, shadows: shadows, allow: allow, mkey: mkey}
}

// try decides on one candidate of the first pass: evaluate, then admit,
// or apply its queue's policy to the block.
func (s *Scheduler) try(d *Decision, leaf *queue.Leaf, j *job, now time.Time) {
	st := &s.cyc.leaves[leaf.ID()]
	v := s.evaluate(leaf, j, now, firstPass)
	switch v.kind {
	case verdictWait:
		if v.reason != nil {
			s.cyc.explain(j, v.reason)
		}
		st.cur.Advance()
	case verdictAdmit:
		s.admit(d, leaf, j, v.placed, v.shadows, now)
		st.cur.Advance()
	case verdictConflict:
		s.cyc.classFail(st.cur, j, backfillReason(v.conflict))
		s.backfillShort(d, leaf, j, v.conflict, now)
		s.deep.after(s, leaf, j, backfillReason(v.conflict), v.mkey, v.allow, now)
	case verdictBlocked:
		if v.preempt && s.maybePreempt(d, leaf, j, v.x, v.allow, now) {
			// j waits for its victims, explained so in this cycle as in
			// the next (evaluate: verdictWait): no reservation (its
			// nomination, if any, holds its room), and its queue's
			// policy applies to the next blocked candidate. Its class
			// stays in the cycle: the next job of the class is blocked
			// the same way (the failure cache answers at once) and asks
			// for victims of its own, disjoint from j's (a job being
			// stopped is no victim; j's nomination holds its room and
			// quota), until the Preemptor has no plan or no plan left
			// for the cycle (PlanPreemptor's bound): then the class is
			// dropped as any blocked class.
			st.cur.Advance()
			return
		}
		s.cyc.classFail(st.cur, j, v.reason)
		s.afterBlock(st, leaf, j, v.reason, v.block, v.mkey, v.allow, now)
		if v.block == nil || (v.block.Kind == queue.BlockCluster && v.block.Capacity) {
			s.deep.after(s, leaf, j, v.reason, v.mkey, v.allow, now)
		}
	}
}

func backfillReason(h *hold) *Reason {
	return &Reason{Code: WaitBackfill, Blocker: h.holder.spec.ID, Until: h.res.at, UntilForever: h.res.forever}
}

// backfillShort tries the jobs of j's class whose runtime estimate ends
// before the reservation j conflicted with: they cannot delay it. Each
// goes through evaluate, as every candidate does.
func (s *Scheduler) backfillShort(d *Decision, leaf *queue.Leaf, j *job, conflict *hold, now time.Time) {
	for _, e := range s.res.short(leaf, j, conflict, now) {
		cj := e.Ref.(*job)
		v := s.evaluate(leaf, cj, now, backfillPass)
		switch v.kind {
		case verdictAdmit:
			s.admit(d, leaf, cj, v.placed, v.shadows, now)
		case verdictConflict:
			s.cyc.explain(cj, backfillReason(v.conflict))
		default:
			if v.reason != nil {
				s.cyc.explain(cj, v.reason)
			}
		}
	}
}

// admit commits placement placed for j, which evaluate (or a
// nomination) found; shadows are the reservation ledgers that already
// took its claims (released again on failure). It reports whether j was
// admitted; if not, j has a job-level reason.
func (s *Scheduler) admit(d *Decision, leaf *queue.Leaf, j *job, placed *gang.Placement, shadows []shadowState, now time.Time) bool {
	undoShadows := func(claims []topology.Claim) {
		for _, sh := range shadows {
			_ = sh.Release(claims...)
		}
	}
	// placed is borrowed (verdict.placed): one copy is held, the other
	// goes to the caller in the Binding; placed itself is not kept.
	p, bound := placed.ClonePair()
	txn, err := gang.Commit(s.ledger, p)
	if err != nil {
		// The placer placed on this very ledger: a placer bug. Keep the
		// job waiting with the error as its reason.
		undoShadows(p.Claims)
		s.cyc.explain(j, &Reason{Code: WaitCapacity, Detail: "placement did not commit: " + err.Error()})
		return false
	}
	lid := leaf.ID()
	charged := s.adm.chargeScratch(p)
	if slices.Equal(charged, j.demand) {
		// Mostly: the job's demand is what it is charged, one slice for
		// both (no allocation per admission; neither is written in place).
		charged = j.demand
	} else {
		if b := s.tree.Check(lid, charged); b != nil {
			_ = txn.Undo()
			undoShadows(p.Claims)
			s.cyc.explain(j, &Reason{Code: blockCode(b), Quota: b, Detail: "(as placed)"})
			return false
		}
		charged = slices.Clone(charged)
	}
	borrowing := s.tree.Borrows(lid, charged)
	s.take(j, holding{p: p, txn: txn, charged: charged, admitted: now}, now)
	leaf.Remove(&j.entry)
	s.cyc.admitted(j)
	d.Bindings = append(d.Bindings, Binding{Job: j.spec.ID, Queue: leaf.Name(), Placement: bound, Borrowing: borrowing, Backfill: s.res.any()})
	return true
}

// afterBlock applies the queue's policy after j (its queue's candidate)
// could not be admitted for reason r (block is the quota that binds, if
// that was the cause; allow is j's model filter, mkey its name). The
// first blocked job of a backfilling queue gets a reservation (or a
// quota hold); a strict FIFO queue stops unless it backfills behind a
// reservation.
func (s *Scheduler) afterBlock(st *leafState, leaf *queue.Leaf, j *job, r *Reason, block *queue.Block, mkey string, allow func(topology.HostID) bool, now time.Time) {
	if st.blockedOnce {
		return
	}
	st.blockedOnce = true
	pol := leaf.Policy()
	strict := pol.Ordering == queue.StrictFIFO
	if pol.Backfill && s.res.room() && r.Code != WaitQuotaHeld {
		if block != nil && block.Kind == queue.BlockCluster && block.Capacity {
			// The root's quota is the cluster's capacity: waiting for
			// it is waiting for capacity, which a reservation can time.
			block = nil
		}
		if block != nil {
			node, _ := s.tree.Lookup(block.Queue)
			s.res.holdQuota(j, node, s.adm.dimOf(block.Resource))
			jr := *r
			jr.HoldsQuota = true
			s.cyc.explain(j, &jr)
			if strict {
				st.stopBehind(leaf, j, r)
			}
			return
		}
		in := reserveInput{ledger: s.ledger, jobs: &s.jobs, noms: &s.noms, commits: s.commits(), admits: s.cyc.admitsNow, req: s.cyc.request(j, allow)}
		if res := s.res.reserve(j, now, mkey, in); res != nil {
			s.res.holdCapacity(j, res)
			jr := *r
			jr.Reserved, jr.ReservedForever = res.at, res.forever
			if res.forever {
				jr.Reserved = time.Time{}
			}
			s.cyc.explain(j, &jr)
			return
		}
	}
	if strict {
		st.stopBehind(leaf, j, r)
	}
}

// forgetLeaves drops the last cycle's per-leaf states when the queue tree
// is reconfigured (its node IDs changed); waiting jobs' reasons are
// listed again by the next cycle.
func (cs *cycleState) forgetLeaves() {
	cs.leaves = nil
	cs.list.forget()
}
