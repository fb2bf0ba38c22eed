package gpusched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// hold is what a blocked job of a backfilling queue holds for the rest of
// a cycle: a capacity reservation (res) or a quota hold (node, dim).
type hold struct {
	holder *job
	res    *reservation
	node   queue.NodeID
	dim    int
}

// reservation is the earliest time and place a blocked job can start,
// assuming jobs holding resources end at their estimated ends.
type reservation struct {
	at      time.Time
	forever bool // only when jobs without an estimate end
	claims  []topology.Claim
	// p is the reserved placement (uncommitted), used as is when the
	// reserved time comes and the placer finds nothing better.
	p *gang.Placement
	// health and mkey are the Scheduler's health epoch and the holder's
	// model filter when the shadow was built: the shadow is reused across
	// cycles while they are unchanged and the reserved time is ahead.
	health uint64
	mkey   string
	// commits is the Scheduler's count of changes to the nominations
	// (and stops in progress) when the shadow was built: the shadow
	// models each nomination as its job running on its placement, so a
	// change of the nominations means building it again.
	commits uint64
	// shadow is the ledger as it will be at `at`: jobs ending by then
	// released, the reservation and every later-ending backfilled job
	// allocated.
	shadow *topology.Ledger
}

func (s *Scheduler) resetHolds() {
	s.holds = s.holds[:0]
	s.cycleAdmits = s.cycleAdmits[:0]
}

func (s *Scheduler) hasReservations() bool {
	for _, h := range s.holds {
		if h.res != nil {
			return true
		}
	}
	return false
}

// keepReservations remembers this cycle's reservations, shadows
// included, for the next: a reservation is not moved later while it stays
// valid, and its shadow is brought up to date instead of rebuilt. Shadows
// of reservations no longer held go back to the pool.
func (s *Scheduler) keepReservations() {
	clear(s.reservedFor)
	old := s.kept
	s.kept = s.keptSpare[:0]
	for _, h := range s.holds {
		if h.res != nil {
			s.reservedFor[h.holder] = h.res
			s.kept = append(s.kept, h.res)
		}
	}
	for _, r := range old {
		if r.shadow != nil && !slices.Contains(s.kept, r) {
			s.shadowPool = append(s.shadowPool, r.shadow)
			r.shadow = nil
		}
	}
	s.keptSpare = old[:0]
}

// syncShadow brings a reservation's shadow from the last cycle up to date
// with the jobs admitted so far in this cycle (those that will still run at
// its time). Releases since then only free more, so the shadow stays a
// safe, conservative view. It reports whether the reservation still fits.
func (s *Scheduler) syncShadow(r *reservation) bool {
	for _, aj := range s.cycleAdmits {
		if !aj.state.Holding() || (!r.forever && aj.endKnown && !aj.end.After(r.at)) {
			continue
		}
		if r.shadow.Allocate(aj.placement.Claims...) != nil {
			return false
		}
	}
	return true
}

func (s *Scheduler) shadowLedger() *topology.Ledger {
	if n := len(s.shadowPool); n > 0 {
		l := s.shadowPool[n-1]
		s.shadowPool = s.shadowPool[:n-1]
		return l
	}
	return topology.NewLedger(s.c)
}

// estimatedEnd returns when j would end if it started at t, and whether
// that is known.
func (s *Scheduler) estimatedEnd(j *job, t time.Time) (time.Time, bool) {
	rt := j.spec.Runtime
	if rt == 0 {
		rt = s.cfg.DefaultRuntime
	}
	if rt == 0 {
		return time.Time{}, false
	}
	return t.Add(rt), true
}

// reserve computes j's reservation: on a copy of the ledger, release the
// jobs holding resources in order of estimated end (overdue jobs first,
// jobs without an estimate last) and find the earliest end after which
// the placer fits j. Placement attempts are spaced out exponentially
// (after 1, 2, 4, … distinct end times since the last failed attempt) and
// skipped while fewer GPUs are free than j needs; after a success,
// bisection over the end times skipped since the last failure finds the
// earliest one that fits. Nominated jobs count as started now on their
// placements, their victims' claims theirs (shadowNominations). The
// previous cycle's reservation is reused (its shadow synced with this
// cycle's admissions) while valid and the nominations are unchanged, and
// otherwise kept if it is still free at its time, so a reservation never
// moves later because of jobs that backfilled behind it. Returns nil when
// j cannot fit even when everything has ended.
func (s *Scheduler) reserve(j *job, now time.Time, mkey string) *reservation {
	if prev := s.reservedFor[j]; prev != nil && prev.shadow != nil {
		if prev.health == s.healthEpoch && prev.mkey == mkey && prev.commits == s.pre.commits && (prev.forever || now.Before(prev.at)) && s.syncShadow(prev) {
			return prev
		}
		s.shadowPool = append(s.shadowPool, prev.shadow)
		prev.shadow = nil
	}
	sh := s.shadowLedger()
	sh.CopyFrom(s.ledger)
	noms, victims := s.shadowNominations(sh, now)
	prev := s.reservedFor[j]
	need := j.req.MinDemand().Milli
	root := s.c.Root()
	var p gang.Placement
	// groups are the end times released since the last failed attempt;
	// window the jobs released in them, in order.
	type group struct {
		end   time.Time
		known bool
		from  int
	}
	var (
		found          bool
		at             time.Time
		forever        bool
		claims         []topology.Claim
		groups         []group
		window         [][]topology.Claim // the claims released, in order
		stride         = 1
		prevChecked    = prev == nil
		placedByPlacer bool
	)
	fits := func() bool {
		return sh.FreeMilli(root) >= need && s.placer.Place(sh, j.req, &p) == nil
	}
	// tryHere tries the state after every released group. On success it
	// searches back, by bisection over the groups released since the last
	// failure, for the earliest group end that also fits.
	tryHere := func() bool {
		if len(groups) == 0 || len(groups) < stride || sh.FreeMilli(root) < need {
			return false
		}
		if !fits() {
			stride *= 2
			groups, window = groups[:0], window[:0]
			return false
		}
		best := p.Clone()
		lo, hi, cur := 0, len(groups)-1, len(groups)-1
		moveTo := func(k int) {
			for cur > k { // put group cur back
				for _, cl := range window[groups[cur].from:] {
					_ = sh.Allocate(cl...)
				}
				window = window[:groups[cur].from]
				cur--
			}
		}
		for lo < hi {
			mid := (lo + hi) / 2
			// Only moving back is possible without re-releasing: test mid
			// from a copy of the window.
			saved := append([][]topology.Claim(nil), window...)
			savedCur := cur
			moveTo(mid)
			if fits() {
				best = p.Clone()
				hi = mid
				continue
			}
			// Release again up to savedCur and search the upper half.
			for _, cl := range saved[len(window):] {
				_ = sh.Release(cl...)
			}
			window, cur = saved, savedCur
			lo = mid + 1
		}
		moveTo(hi)
		p = *best
		at, forever = groups[hi].end, !groups[hi].known
		placedByPlacer = true
		return true
	}
	var rp *gang.Placement
	checkPrev := func() bool {
		prevChecked = true
		if sh.Allocate(prev.claims...) == nil {
			claims, rp = prev.claims, prev.p
			return true
		}
		return false
	}
	// release releases claims ending at hEnd (known) in order of end; it
	// reports false once the reservation is found.
	release := func(hEnd time.Time, hKnown bool, cl []topology.Claim) bool {
		if hKnown && hEnd.Before(now) {
			hEnd = now
		}
		if n := len(groups); n > 0 && (hKnown != groups[n-1].known || !hEnd.Equal(groups[n-1].end)) {
			// Everything ending by the last group's end is released.
			if tryHere() {
				found = true
				return false
			}
		}
		if !prevChecked && !prev.forever && (!hKnown || hEnd.After(prev.at)) {
			// The state now is the state at prev.at.
			if checkPrev() {
				found, at, forever = true, prev.at, prev.forever
				return false
			}
		}
		if err := sh.Release(cl...); err != nil {
			return true
		}
		if n := len(groups); n == 0 || hKnown != groups[n-1].known || !hEnd.Equal(groups[n-1].end) {
			groups = append(groups, group{end: hEnd, known: hKnown, from: len(window)})
		}
		window = append(window, cl)
		return true
	}
	s.ends.Ascend(func(h *job) bool {
		// The nominated jobs ending by h's end first (their victims'
		// claims are theirs: see shadowNominations).
		for len(noms) > 0 && noms[0].known && (!h.endKnown || !noms[0].end.After(h.end)) {
			n := noms[0]
			noms = noms[1:]
			if !release(n.end, true, n.claims) {
				return false
			}
		}
		if h.preempting && slices.Contains(victims, h) {
			return true
		}
		return release(h.end, h.endKnown, h.placement.Claims)
	})
	for _, n := range noms {
		if found || !release(n.end, n.known, n.claims) {
			break
		}
	}
	if !found && len(groups) > 0 {
		stride = 0 // last chance: everything has ended
		found = tryHere()
	}
	if !found && !prevChecked && checkPrev() {
		found, at, forever = true, prev.at, prev.forever
	}
	if !found {
		s.shadowPool = append(s.shadowPool, sh)
		return nil
	}
	if placedByPlacer {
		rp = p.Clone()
		claims = rp.Claims
		if err := sh.Allocate(claims...); err != nil {
			s.shadowPool = append(s.shadowPool, sh)
			return nil
		}
	}
	if !forever && at.Before(now) {
		at = now
	}
	return &reservation{at: at, forever: forever, claims: claims, p: rp, shadow: sh, health: s.healthEpoch, mkey: mkey, commits: s.pre.commits}
}

// nomRelease is a nominated job in a reservation's shadow: it holds
// claims until end (known) or for ever.
type nomRelease struct {
	end    time.Time
	known  bool
	claims []topology.Claim
}

// shadowNominations models the nominations in shadow sh, a copy of the
// ledger while they hold their placements' free parts (hold): as though
// each nominated job started now on its placement and its victims were
// gone (the victims are stopping; what they hold is the nominated job's
// or free once they stop). It gives back the trial holds and the claims
// of the victims still holding, and allocates each placement whole. It
// returns when the nominated jobs release their placements, in order of
// estimated end (now plus the remaining runtime estimate; unknown last),
// and the victims whose claims it released, which the caller no longer
// releases at their own ends. A nomination whose placement does not fit
// so (not expected) is left as it was: its holds never released, its
// victims released at their ends.
func (s *Scheduler) shadowNominations(sh *topology.Ledger, now time.Time) ([]nomRelease, []*job) {
	if len(s.pre.noms) == 0 {
		return nil, nil
	}
	var (
		rels    []nomRelease
		victims []*job
	)
	for _, n := range s.pre.noms {
		if sh.Release(n.held...) != nil {
			continue
		}
		k := len(victims)
		ok := true
		for _, v := range n.victims {
			if !v.state.Holding() || v.placement == nil || slices.Contains(victims, v) {
				continue
			}
			if sh.Release(v.placement.Claims...) != nil {
				ok = false
				break
			}
			victims = append(victims, v)
		}
		if ok && sh.Allocate(n.p.Claims...) == nil {
			r := nomRelease{claims: n.p.Claims}
			rt := n.job.spec.Runtime
			if rt == 0 {
				rt = s.cfg.DefaultRuntime
			}
			if rt > 0 {
				r.end, r.known = now.Add(n.job.remaining(rt)), true
			}
			rels = append(rels, r)
			continue
		}
		// Put back what was released (health unchecked: a victim keeps
		// what it holds on parts that failed).
		for _, v := range victims[k:] {
			_ = sh.TrialRestore(v.placement.Claims...)
		}
		clear(victims[k:])
		victims = victims[:k]
		_ = sh.TrialRestore(n.held...)
	}
	slices.SortStableFunc(rels, func(a, b nomRelease) int {
		if a.known != b.known {
			if a.known {
				return -1
			}
			return 1
		}
		return a.end.Compare(b.end)
	})
	return rels, victims
}

// checkHolds checks claims of j (starting now) against every capacity
// reservation: j passes one if it ends by the reserved time (by its
// runtime estimate), or if its claims can be allocated alongside the
// reservation in the shadow ledger (they are then kept there). It returns
// the shadows that took the claims, or the first reservation j would
// delay (after undoing what it allocated).
func (s *Scheduler) checkHolds(j *job, claims []topology.Claim, now time.Time) ([]*topology.Ledger, *hold) {
	end, known := s.estimatedEnd(j, now)
	s.shadowScr = s.shadowScr[:0]
	for _, h := range s.holds {
		if h.res == nil {
			continue
		}
		if known && !h.res.forever && !end.After(h.res.at) {
			continue
		}
		if err := h.res.shadow.Allocate(claims...); err != nil {
			for _, sh := range s.shadowScr {
				_ = sh.Release(claims...)
			}
			s.shadowScr = s.shadowScr[:0]
			return nil, h
		}
		s.shadowScr = append(s.shadowScr, h.res.shadow)
	}
	return s.shadowScr, nil
}

// quotaHeld returns the quota hold that j (in leaf lid) would eat into.
func (s *Scheduler) quotaHeld(lid queue.NodeID, j *job) *hold {
	for _, h := range s.holds {
		if h.res != nil || h.holder == j || j.demand[h.dim] <= 0 {
			continue
		}
		for id := lid; id >= 0; id = s.tree.Parent(id) {
			if id == h.node {
				return h
			}
		}
	}
	return nil
}

// maxShortTries bounds how many jobs of a class that conflicts with a
// reservation are tried in one cycle because their runtime estimate ends
// before it.
const maxShortTries = 64

// backfillShort tries the jobs of j's class whose runtime estimate ends
// before the reservation j conflicted with: they cannot delay it.
func (s *Scheduler) backfillShort(d *Decision, leaf *queue.Leaf, j *job, conflict *hold, now time.Time) {
	if conflict.res.forever {
		return
	}
	window := conflict.res.at.Sub(now)
	if window <= 0 {
		return
	}
	cl := j.entry.ClassOf()
	cands := s.shortScr[:0]
	collect := func(e *queue.Entry) bool {
		if e.Ref.(*job) != j && len(cands) < maxShortTries {
			rt := e.Runtime
			if rt == 0 {
				rt = s.cfg.DefaultRuntime
			}
			if rt > 0 && rt <= window {
				cands = append(cands, e)
			}
		}
		return len(cands) < maxShortTries
	}
	if s.cfg.DefaultRuntime > 0 && s.cfg.DefaultRuntime <= window {
		cl.Ascend(collect)
	} else {
		cl.AscendRuntime(window, collect)
	}
	slices.SortFunc(cands, func(a, b *queue.Entry) int {
		if leaf.Before(a, b) {
			return -1
		}
		return 1
	})
	lid := leaf.ID()
	for _, e := range cands {
		cj := e.Ref.(*job)
		if b := s.tree.Check(lid, cj.demand); b != nil {
			s.jobReason(cj, &Reason{Code: WaitQuota, Quota: b})
			continue
		}
		allow, _, guar, _, b := s.modelFilter(lid, cj)
		if b != nil {
			s.jobReason(cj, &Reason{Code: WaitQuota, Quota: b})
			continue
		}
		placed := false
		if guar != nil {
			cj.req.AllowHost = guar
			placed = s.placer.Place(s.ledger, cj.req, &s.scratch) == nil
		}
		if !placed {
			cj.req.AllowHost = allow
			if x := s.placer.Place(s.ledger, cj.req, &s.scratch); x != nil {
				s.jobReason(cj, placementReason(x, s.c, now))
				continue
			}
		}
		shadows, c := s.checkHolds(cj, s.scratch.Claims, now)
		if c != nil {
			s.jobReason(cj, s.backfillReason(c))
			continue
		}
		s.admit(d, leaf, cj, shadows, now)
	}
	s.shortScr = cands[:0]
}
