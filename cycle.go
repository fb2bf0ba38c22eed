package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// leafState is the per-leaf scratch of one cycle.
type leafState struct {
	cur         *queue.Cursor
	blockedOnce bool
	stop        *Reason // the queue stopped (strict FIFO behind a blocked head)
	mkey        string  // model filter of the candidate being decided
}

// classState records why a class was dropped in a cycle.
type classState struct {
	cycle  uint64
	reason *Reason
}

// Schedule runs one scheduling cycle at time now and returns what to do.
//
// The cycle serves queues in fair-share order (package queue: jobs that
// fit in their queue's guarantee first, then siblings by the fairness
// policy, level by level), and each queue's jobs in its policy's order.
// For each candidate it checks, in order: quota holds of earlier blocked
// jobs, the quotas on the path to the root, per-model quotas (which
// restrict the acceptable models), the placement-failure cache, the
// placer, and the reservations of earlier blocked jobs (EASY backfill: a
// job that would still run at a reserved start must not take what the
// reservation needs). A job that passes is committed to the ledger and
// bound. A job of a class that failed is not tried again in the cycle,
// and the class's failure is cached by shape until capacity that could
// matter is freed.
//
// Cost: O(classes tried × (quota check + cached-failure check)) plus one
// placement per class whose capacity changed, plus the admissions, plus
// O(pending) to list the waiting jobs.
func (s *Scheduler) Schedule(now time.Time) Decision {
	now = s.advance(now)
	if s.testBeforeCycle != nil {
		s.testBeforeCycle()
	}
	s.cycle++
	d := Decision{Now: now}
	s.boundCaches()
	if s.tree.Fairness().Policy == queue.FairTree {
		s.tree.Advance(now)
	}
	s.resetHolds()
	s.startPreemption(&d, now)
	leaves := s.tree.Leaves()
	if len(s.ls) != s.tree.NumNodes() {
		s.ls = make([]leafState, s.tree.NumNodes())
	}
	for _, id := range leaves {
		s.ls[id] = leafState{cur: s.tree.LeafOf(id).Begin()}
	}
	for {
		leaf, e, ok := s.tree.Next()
		if !ok {
			break
		}
		s.try(&d, leaf, e.Ref.(*job), now)
	}
	for _, id := range leaves {
		s.ls[id].cur.End()
	}
	s.endPreemption()
	if !s.cfg.OmitPending {
		s.listPending(&d)
	}
	s.keepReservations()
	return d
}

// maxCached bounds the shape caches: in a long replay with many distinct
// shapes, failures of shapes that no longer wait would pile up. They are
// caches; dropping them only costs a placement attempt.
const maxCached = 1 << 16

func (s *Scheduler) boundCaches() {
	if len(s.fails) > maxCached {
		clear(s.fails)
	}
	if len(s.fitChecked) > maxCached {
		clear(s.fitChecked)
		clear(s.idleFail)
	}
}

func (s *Scheduler) jobReason(j *job, r *Reason) {
	j.reason, j.reasonCycle = r, s.cycle
}

// classFail drops j's class from the cycle with reason r.
func (s *Scheduler) classFail(cur *queue.Cursor, j *job, r *Reason) {
	cl := j.entry.ClassOf()
	cs, _ := cl.Data.(*classState)
	if cs == nil {
		cs = &classState{}
		cl.Data = cs
	}
	cs.cycle, cs.reason = s.cycle, r
	cur.DropClass()
}

// try decides on one candidate.
func (s *Scheduler) try(d *Decision, leaf *queue.Leaf, j *job, now time.Time) {
	lid := leaf.ID()
	st := &s.ls[lid]
	cur := st.cur
	if j.pre.nominated != nil {
		// Nominated: it binds at the start of a cycle, once its victims
		// (and the stops its quota waits for) are gone.
		if v := s.victimStillHolding(j); v != "" {
			r := &Reason{Code: WaitPreemption, Blocker: v}
			if n := j.pre.nominated; n.overdue(now) {
				r.Detail = fmt.Sprintf("(overdue: not reported stopped by %s; only the GPUs are held for %s now)", n.due.UTC().Format(time.RFC3339), j.spec.ID)
			}
			s.jobReason(j, r)
		}
		cur.Advance()
		return
	}
	if len(j.waitingFor) > 0 {
		if v := s.victimStillHolding(j); v != "" {
			s.jobReason(j, &Reason{Code: WaitPreemption, Blocker: v})
			cur.Advance()
			return
		}
		j.waitingFor = nil
	}
	if h := s.quotaHeld(lid, j); h != nil {
		r := &Reason{Code: WaitQuotaHeld, Blocker: h.holder.spec.ID, HeldQueue: s.tree.Name(h.node), HeldResource: s.tree.Dimensions().Name(h.dim)}
		s.classFail(cur, j, r)
		s.afterBlock(st, leaf, j, r, nil, now)
		return
	}
	if b := s.tree.Check(lid, j.demand); b != nil {
		r := &Reason{Code: WaitQuota, Quota: b, Detail: s.heldDetail(b)}
		s.classFail(cur, j, r)
		s.maybePreempt(d, leaf, j, nil, now)
		s.afterBlock(st, leaf, j, r, b, now)
		return
	}
	allow, mkey, guar, gkey, b := s.modelFilter(lid, j)
	if b != nil {
		r := &Reason{Code: WaitQuota, Quota: b, Detail: s.heldDetail(b)}
		s.classFail(cur, j, r)
		s.afterBlock(st, leaf, j, r, b, now)
		return
	}
	st.mkey = mkey
	if guar != nil && s.placeWith(j, guar, j.shape+gkey, now) {
		s.bindPlaced(d, leaf, j, cur, now)
		return
	}
	key := j.shape + mkey
	if f := s.fails[key]; f != nil && s.stillFails(f, allow) {
		s.classFail(cur, j, f.reason)
		s.maybePreempt(d, leaf, j, f.reason.Placement, now)
		s.afterBlock(st, leaf, j, f.reason, nil, now)
		return
	}
	j.req.AllowHost = allow
	if x := s.placer.Place(s.ledger, j.req, &s.scratch); x != nil && !s.reservationDue(j, now) {
		r := placementReason(x, s.c, now)
		s.fails[key] = &failure{gen: s.ledger.Generation(), reason: r, req: j.req}
		s.classFail(cur, j, r)
		s.maybePreempt(d, leaf, j, x, now)
		s.afterBlock(st, leaf, j, r, nil, now)
		return
	}
	delete(s.fails, key)
	s.bindPlaced(d, leaf, j, cur, now)
}

// placeWith tries to place j with a host filter, using and feeding the
// failure cache under key; on success the placement is in s.scratch.
func (s *Scheduler) placeWith(j *job, allow func(topology.HostID) bool, key string, now time.Time) bool {
	if f := s.fails[key]; f != nil && s.stillFails(f, allow) {
		return false
	}
	j.req.AllowHost = allow
	if x := s.placer.Place(s.ledger, j.req, &s.scratch); x != nil {
		s.fails[key] = &failure{gen: s.ledger.Generation(), reason: placementReason(x, s.c, now), req: j.req}
		return false
	}
	delete(s.fails, key)
	return true
}

// bindPlaced takes j, placed in s.scratch, through the reservations and
// admits it.
func (s *Scheduler) bindPlaced(d *Decision, leaf *queue.Leaf, j *job, cur *queue.Cursor, now time.Time) {
	shadows, conflict := s.checkHolds(j, s.scratch.Claims, now)
	if conflict != nil {
		r := s.backfillReason(conflict)
		s.classFail(cur, j, r)
		s.backfillShort(d, leaf, j, conflict, now)
		return
	}
	s.admit(d, leaf, j, shadows, now)
	cur.Advance()
}

// reservationDue reports whether j holds a reservation from the last
// cycle whose time has come and whose placement is free now (the placer
// may miss it); if so s.scratch holds that placement.
func (s *Scheduler) reservationDue(j *job, now time.Time) bool {
	prev := s.reservedFor[j]
	if prev == nil || prev.forever || prev.at.After(now) || prev.p == nil {
		return false
	}
	if s.ledger.Allocate(prev.claims...) != nil {
		return false
	}
	_ = s.ledger.Release(prev.claims...)
	s.scratch = *prev.p.Clone()
	return true
}

func (s *Scheduler) backfillReason(h *hold) *Reason {
	return &Reason{Code: WaitBackfill, Blocker: h.holder.spec.ID, Until: h.res.at, UntilForever: h.res.forever}
}

// admit commits the placement in s.scratch for j. shadows are the
// reservation ledgers that already took j's claims (released again on
// failure). It reports whether j was admitted; if not, j has a job-level
// reason.
func (s *Scheduler) admit(d *Decision, leaf *queue.Leaf, j *job, shadows []*topology.Ledger, now time.Time) bool {
	undoShadows := func(claims []topology.Claim) {
		for _, sh := range shadows {
			_ = sh.Release(claims...)
		}
	}
	p := s.scratch.Clone()
	txn, err := gang.Commit(s.ledger, p)
	if err != nil {
		// The placer placed on this very ledger: a placer bug. Keep the
		// job waiting with the error as its reason.
		undoShadows(p.Claims)
		s.jobReason(j, &Reason{Code: WaitCapacity, Detail: "placement did not commit: " + err.Error()})
		return false
	}
	lid := leaf.ID()
	charged := s.chargeVector(p)
	if !slices.Equal(charged, j.demand) {
		if b := s.tree.Check(lid, charged); b != nil {
			_ = txn.Undo()
			undoShadows(p.Claims)
			s.jobReason(j, &Reason{Code: WaitQuota, Quota: b, Detail: "(as placed)"})
			return false
		}
	}
	borrowing := s.tree.Borrows(lid, charged)
	s.tree.Admit(lid, charged, now)
	leaf.Count(1, 0)
	leaf.Remove(&j.entry)
	j.state = queue.Admitted
	j.placement, j.txn, j.charged, j.admitted = p, txn, charged, now
	j.reason = nil
	s.setEnd(j, now)
	s.indexHolder(j)
	s.cycleAdmits = append(s.cycleAdmits, j)
	d.Bindings = append(d.Bindings, Binding{Job: j.spec.ID, Queue: leaf.Name(), Placement: p, Borrowing: borrowing, Backfill: s.hasReservations()})
	return true
}

// afterBlock applies the queue's policy after j (its queue's candidate)
// could not be admitted for reason r (block is the quota that binds, if
// that was the cause). The first blocked job of a backfilling queue gets
// a reservation (or a quota hold); a strict FIFO queue stops unless it
// backfills behind a reservation.
func (s *Scheduler) afterBlock(st *leafState, leaf *queue.Leaf, j *job, r *Reason, block *queue.Block, now time.Time) {
	if st.blockedOnce {
		return
	}
	st.blockedOnce = true
	pol := leaf.Policy()
	strict := pol.Ordering == queue.StrictFIFO
	if pol.Backfill && len(s.holds) < s.cfg.MaxReservations && r.Code != WaitQuotaHeld {
		if block != nil && block.Kind == queue.BlockCluster && block.Capacity {
			// The root's quota is the cluster's capacity: waiting for
			// it is waiting for capacity, which a reservation can time.
			block = nil
		}
		if block != nil {
			node, _ := s.tree.Lookup(block.Queue)
			s.holds = append(s.holds, &hold{holder: j, node: node, dim: s.dimOf(block.Resource)})
			jr := *r
			jr.HoldsQuota = true
			s.jobReason(j, &jr)
			if strict {
				s.stopLeaf(st, leaf, j, r)
			}
			return
		}
		if res := s.reserve(j, now, st.mkey); res != nil {
			s.holds = append(s.holds, &hold{holder: j, res: res})
			jr := *r
			jr.Reserved, jr.ReservedForever = res.at, res.forever
			if res.forever {
				jr.Reserved = time.Time{}
			}
			s.jobReason(j, &jr)
			return
		}
	}
	if strict {
		s.stopLeaf(st, leaf, j, r)
	}
}

func (s *Scheduler) stopLeaf(st *leafState, leaf *queue.Leaf, j *job, r *Reason) {
	st.stop = &Reason{Code: WaitBehindHead, Blocker: j.spec.ID, Queue: leaf.Name(), Cause: r.Code}
	st.cur.Stop()
}

func (s *Scheduler) dimOf(resource string) int {
	dims := s.tree.Dimensions()
	for r := 0; r < dims.Len(); r++ {
		if dims.Name(r) == resource {
			return r
		}
	}
	return fairshare.DimGPU
}

// modelFilter restricts the models j may use to those whose per-model
// quota has room for its GPU demand. It returns the host filter (nil: no
// restriction) and a cache-key suffix naming the allowed set; the filter
// and key of the models that also keep j's queue within its nominal quota
// (nil when that is no narrower, or empty), tried first so a job borrows
// only when its guaranteed models have no room; or the quota block of
// the first acceptable model when none has room.
func (s *Scheduler) modelFilter(lid queue.NodeID, j *job) (allow func(topology.HostID) bool, key string, guar func(topology.HostID) bool, gkey string, block *queue.Block) {
	dims := s.tree.Dimensions()
	if len(dims.Models) == 0 || j.demand[fairshare.DimGPU] == 0 {
		return nil, "", nil, "", nil
	}
	if s.vec == nil {
		s.vec = make(queue.Vector, dims.Len())
		s.modelGuar = make([]bool, len(s.modelAllow))
	}
	all, some, nguar := true, false, 0
	var keyb, gkeyb []byte
	for m := range s.modelAllow {
		mid := topology.ModelID(m)
		s.modelAllow[m], s.modelGuar[m] = false, false
		if !acceptsModel(j.req, mid) {
			continue
		}
		k := s.modelDim(mid)
		ok, within := true, true
		if k >= 0 {
			clear(s.vec)
			s.vec[k] = j.demand[fairshare.DimGPU]
			if b := s.tree.Check(lid, s.vec); b != nil {
				ok = false
				if block == nil {
					block = b
				}
			}
			within = ok && !s.tree.Borrows(lid, s.vec)
		}
		s.modelAllow[m], s.modelGuar[m] = ok, within
		if ok {
			some = true
			keyb = fmt.Appendf(keyb, ",%d", m)
		} else {
			all = false
		}
		if within {
			nguar++
			gkeyb = fmt.Appendf(gkeyb, ",%d", m)
		}
	}
	if !some {
		return nil, "", nil, "", block
	}
	if !all {
		allow, key = s.allowModel, "@"+string(keyb)
	}
	if nguar > 0 && string(gkeyb) != string(keyb) {
		guar, gkey = s.allowGuar, "@"+string(gkeyb)
	}
	return allow, key, guar, gkey, nil
}

func (s *Scheduler) allowModel(h topology.HostID) bool {
	m := s.c.HostModel(h)
	return m == topology.NoModel || s.modelAllow[m]
}

func (s *Scheduler) allowGuar(h topology.HostID) bool {
	m := s.c.HostModel(h)
	return m == topology.NoModel || s.modelGuar[m]
}

// listPending fills d.Pending with every waiting job and its reason, in
// the buffer the previous Decision used.
func (s *Scheduler) listPending(d *Decision) {
	n := 0
	for _, id := range s.tree.Leaves() {
		n += s.tree.LeafOf(id).Len()
	}
	buf := s.pendingBuf[:0]
	if cap(buf) < n {
		buf = make([]Pending, 0, n+n/4)
	}
	for _, id := range s.tree.Leaves() {
		l := s.tree.LeafOf(id)
		st := &s.ls[id]
		name := l.Name()
		l.Ascend(func(e *queue.Entry) bool {
			j := e.Ref.(*job)
			buf = append(buf, Pending{Job: j.spec.ID, Queue: name, State: j.state, Reason: s.reasonOf(j, st)})
			return true
		})
	}
	s.pendingBuf = buf
	d.Pending = buf
}

var notReached = &Reason{Code: WaitCapacity, Detail: "not considered yet"}

func (s *Scheduler) reasonOf(j *job, st *leafState) *Reason {
	if j.reasonCycle == s.cycle && j.reason != nil {
		return j.reason
	}
	// A stopped strict queue tried nothing after its head.
	if st.stop != nil && st.stop.Blocker != j.spec.ID {
		return st.stop
	}
	if cs, ok := j.entry.ClassOf().Data.(*classState); ok && cs.cycle == s.cycle {
		return cs.reason
	}
	return notReached
}
