package gpusched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// reservations is EASY backfill: the holds the first blocked job of each
// backfilling queue takes in a cycle (a capacity reservation, or a quota
// hold), the reservations kept from the last cycle with their shadow
// ledgers, and the checks a later job must pass not to delay them. Its
// methods are the only writers of its fields.
type reservations struct {
	c              *topology.Cluster
	placer         gang.Placer
	defaultRuntime time.Duration // Config.DefaultRuntime
	max            int           // Config.MaxReservations (negative: none)
	wholeHosts     bool          // Config.ReserveWholeHosts (reserve_hosts.go)

	// holds are this cycle's holds, in the order taken; begin clears
	// them. Invariant: len(holds) ≤ max(0, max).
	holds []*hold
	// byJob holds the reservations kept from the last cycle by holder
	// (those held in it, then the standby ones: keep); kept the same as a
	// list, keptSpare the list before it (reused). Invariant: a
	// reservation here has its shadow unless it was taken back to
	// shadowPool (then shadow is nil); len(kept) ≤ 2·max(0, max).
	byJob           map[*job]*reservation
	kept, keptSpare []*reservation
	shadowPool      []*topology.Ledger    // shadow ledgers free for reuse (deep and restored reservations)
	occPool         []*topology.Occupancy // shadow occupancies free for reuse (reserve)
	// wi is reserve's what-if on the live ledger (reserve_whatif.go).
	wi whatIf
	// healthEpoch counts the health changes (and cordons): a shadow built
	// before one is not reused.
	healthEpoch uint64
	shadowScr   []shadowState  // check's result buffer
	shortScr    []*queue.Entry // short's result buffer
}

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
	holder  *job
	built   time.Time // when its shadow was built (nominations modelled from then)
	at      time.Time
	forever bool // only when jobs without an estimate end
	claims  []topology.Claim
	// p is the reserved placement (uncommitted), used as is when the
	// reserved time comes and the placer finds nothing better.
	p *gang.Placement
	// health and mkey are the health epoch and the holder's model filter
	// when the shadow was built: the shadow is reused across cycles while
	// they are unchanged and the reserved time is ahead.
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
	shadow shadowState
	// deep: planned by the deepReserver around earlier reservations
	// (Config.ReserveDepth), its shadow holding them too; such a shadow is
	// not kept across cycles (keep), so the next cycle plans the
	// reservation again from the live state, as a restored Scheduler does.
	deep bool
}

// reserveInput is what a reservation is computed from (read only).
type reserveInput struct {
	ledger  *topology.Ledger
	jobs    *jobTable
	noms    *nominations
	commits uint64 // Scheduler.commits
	admits  []*job // admitted in this cycle so far
	// req is the job's request with its model filter (placed with).
	req *gang.Request
}

func newReservations(c *topology.Cluster, placer gang.Placer, defaultRuntime time.Duration, max int) reservations {
	return reservations{c: c, placer: placer, defaultRuntime: defaultRuntime, max: max, byJob: map[*job]*reservation{}}
}

// holdWhole sets Config.ReserveWholeHosts (reserve_hosts.go).
func (rs *reservations) holdWhole(wholeHosts bool) { rs.wholeHosts = wholeHosts }

// begin starts a cycle: no holds yet.
func (rs *reservations) begin() { rs.holds = rs.holds[:0] }

// any reports whether a capacity reservation is held in this cycle.
func (rs *reservations) any() bool {
	for _, h := range rs.holds {
		if h.res != nil {
			return true
		}
	}
	return false
}

// room reports whether another hold may be taken in this cycle.
func (rs *reservations) room() bool { return len(rs.holds) < rs.max }

// holdQuota holds quota dimension dim of node for j for the rest of the
// cycle.
func (rs *reservations) holdQuota(j *job, node queue.NodeID, dim int) {
	rs.holds = append(rs.holds, &hold{holder: j, node: node, dim: dim})
}

// holdCapacity holds res for j for the rest of the cycle.
func (rs *reservations) holdCapacity(j *job, res *reservation) {
	rs.holds = append(rs.holds, &hold{holder: j, res: res})
}

// forget drops j's reservation (j ended).
func (rs *reservations) forget(j *job) { delete(rs.byJob, j) }

// released notes that holding job j gave back what it held (it ended,
// or waits again): a kept shadow that may model j still running at its
// reservation's time — j's estimate ran past it, or it is unknown, or the
// reservation is forever — goes back to the pool, and the next cycle
// builds it again from the ledger (keeping the reservation where it is
// while that is still free). Releasing j's claims from the shadow instead
// is not safe: whether the shadow took them depends on j's estimate when
// it was modelled (starting moves it later), and releasing claims it did
// not take frees what others hold there.
func (rs *reservations) released(j *job) {
	for _, r := range rs.kept {
		if r.shadow != nil && (r.forever || !j.endKnown || j.end.After(r.at)) {
			rs.recycleShadow(r.shadow)
			r.shadow = nil
		}
	}
}

// endMoved notes that holding job j's estimated end moved from end
// (known) to its current one (it was reported Started after it was
// admitted): a kept shadow that released j at its reservation's time,
// which j now runs past, goes back to the pool as in released (a shadow
// rebuilt from the ledger would hold j there).
func (rs *reservations) endMoved(j *job, end time.Time, known bool) {
	if !known || (j.endKnown && j.end.Equal(end)) {
		return
	}
	for _, r := range rs.kept {
		if r.shadow != nil && !r.forever && !end.After(r.at) && (!j.endKnown || j.end.After(r.at)) {
			rs.recycleShadow(r.shadow)
			r.shadow = nil
		}
	}
}

// healthLost notes that a part's health changed (or a host was
// cordoned): shadows built before are not reused.
func (rs *reservations) healthLost() { rs.healthEpoch++ }

// keep remembers this cycle's reservations, shadows included, for the
// next: a reservation is not moved later while it stays valid, and its
// shadow is brought up to date instead of rebuilt. admits are the jobs
// admitted in this cycle.
//
// It also keeps, on standby, up to max of the reservations kept before
// whose jobs still wait but hold none in this cycle (another queue's job
// took the last hold, or the job was not reached): a job whose turn for a
// hold comes back finds its reservation as it left it, where computing it
// again meant a what-if releasing the running jobs one by one — with more
// backfilling queues than holds, a new what-if for most cycles' holders.
// A standby reservation delays no one: its shadow takes this cycle's
// admissions that run past its time (standby), and one an admission
// conflicts with is dropped, its job's next hold computed afresh. The
// held reservations come first, then the standby ones in the order they
// were kept. Shadows of reservations no longer kept go back to the pool.
func (rs *reservations) keep(admits []*job) {
	clear(rs.byJob)
	old := rs.kept
	rs.kept = rs.keptSpare[:0]
	for _, h := range rs.holds {
		if h.res == nil {
			continue
		}
		if r := h.res; r.deep && r.shadow != nil {
			rs.recycleShadow(r.shadow)
			r.shadow = nil
		}
		rs.byJob[h.holder] = h.res
		rs.kept = append(rs.kept, h.res)
	}
	held := len(rs.kept)
	for _, r := range old {
		if r.shadow == nil || slices.Contains(rs.kept[:held], r) {
			continue
		}
		if len(rs.kept) < held+rs.max && r.holder.state.Waiting() && rs.byJob[r.holder] == nil && rs.standby(r, admits) {
			rs.byJob[r.holder] = r
			rs.kept = append(rs.kept, r)
			continue
		}
		rs.recycleShadow(r.shadow)
		r.shadow = nil
	}
	rs.keptSpare = old[:0]
}

// standby brings the shadow of reservation r, not held in this cycle, up
// to date with the cycle's admissions (none was checked against it): an
// admission that runs past r's time is allocated in it, as check does
// for a held one. It reports whether r is still free: no admission takes
// its claims (nor, with whole-host reservations, shares a host with
// them).
func (rs *reservations) standby(r *reservation, admits []*job) bool {
	for _, aj := range admits {
		if rs.wholeHosts && aj.state.Holding() && (r.forever || !aj.endKnown || aj.end.After(r.at)) && sharesHost(aj.placement.Claims, r.claims) {
			return false
		}
	}
	return syncShadow(r, admits)
}

// syncShadow brings a reservation's shadow from the last cycle up to date
// with the jobs admitted so far in this cycle (those that will still run
// at its time). Releases since then only free more, so the shadow stays a
// safe, conservative view. It reports whether the reservation still fits.
func syncShadow(r *reservation, admits []*job) bool {
	for _, aj := range admits {
		if !aj.state.Holding() || (!r.forever && aj.endKnown && !aj.end.After(r.at)) {
			continue
		}
		if r.shadow.Allocate(aj.placement.Claims...) != nil {
			return false
		}
	}
	return true
}

// shadowLedger returns a copy of live for a reservation's what-ifs: a
// pooled ledger made equal to it (CopyFrom), or else a Clone (building a
// fresh ledger's indexes would cost more). Only the deep reserver and a
// restored reservation need one; reserve works on the live ledger
// (reserve_whatif.go).
func (rs *reservations) shadowLedger(live *topology.Ledger) *topology.Ledger {
	if l, ok := popPooled(&rs.shadowPool); ok {
		l.CopyFrom(live)
		return l
	}
	return live.Clone()
}

// estimatedEnd returns when j would end if it started at t, and whether
// that is known.
func (rs *reservations) estimatedEnd(j *job, t time.Time) (time.Time, bool) {
	rt := j.spec.Runtime
	if rt == 0 {
		rt = rs.defaultRuntime
	}
	if rt == 0 {
		return time.Time{}, false
	}
	return t.Add(rt), true
}

// due returns the placement of j's reservation from the last cycle if
// its time has come and it is free in l now (the placer may miss it), or
// nil.
func (rs *reservations) due(j *job, now time.Time, l *topology.Ledger) *gang.Placement {
	prev := rs.byJob[j]
	if prev == nil || prev.forever || prev.at.After(now) || prev.p == nil {
		return nil
	}
	if l.Allocate(prev.claims...) != nil {
		return nil
	}
	_ = l.Release(prev.claims...)
	return prev.p
}

// check checks claims of j (starting now) against every capacity
// reservation: j passes one if it ends by the reserved time (by its
// runtime estimate), or if its claims can be allocated alongside the
// reservation in the shadow ledger (they are then kept there). It returns
// the shadows that took the claims (valid until the next call), or the
// first reservation j would delay (after undoing what it allocated).
func (rs *reservations) check(j *job, claims []topology.Claim, now time.Time) ([]shadowState, *hold) {
	end, known := rs.estimatedEnd(j, now)
	rs.shadowScr = rs.shadowScr[:0]
	for _, h := range rs.holds {
		if h.res == nil {
			continue
		}
		if known && !h.res.forever && !end.After(h.res.at) {
			continue
		}
		// With whole-host reservations, touching one of its hosts is a
		// conflict already: nothing to allocate and take back.
		if (rs.wholeHosts && sharesHost(claims, h.res.claims)) || h.res.shadow.Allocate(claims...) != nil {
			for _, sh := range rs.shadowScr {
				_ = sh.Release(claims...)
			}
			rs.shadowScr = rs.shadowScr[:0]
			return nil, h
		}
		rs.shadowScr = append(rs.shadowScr, h.res.shadow)
	}
	return rs.shadowScr, nil
}

// quotaHeld returns the quota hold that j (in leaf lid) would eat into.
func (rs *reservations) quotaHeld(tree *queue.Tree, lid queue.NodeID, j *job) *hold {
	for _, h := range rs.holds {
		if h.res != nil || h.holder == j || j.demand[h.dim] <= 0 {
			continue
		}
		for id := lid; id >= 0; id = tree.Parent(id) {
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

// short returns the jobs of j's class (in leaf's order, j excluded, at
// most maxShortTries) whose runtime estimate ends before the reservation
// of conflict, which they cannot delay; the slice is valid until the
// next call.
func (rs *reservations) short(leaf *queue.Leaf, j *job, conflict *hold, now time.Time) []*queue.Entry {
	if conflict.res.forever {
		return nil
	}
	window := conflict.res.at.Sub(now)
	if window <= 0 {
		return nil
	}
	cl := j.entry.ClassOf()
	cands := rs.shortScr[:0]
	collect := func(e *queue.Entry) bool {
		if e.Ref.(*job) != j && len(cands) < maxShortTries {
			rt := e.Runtime
			if rt == 0 {
				rt = rs.defaultRuntime
			}
			if rt > 0 && rt <= window {
				cands = append(cands, e)
			}
		}
		return len(cands) < maxShortTries
	}
	if rs.defaultRuntime > 0 && rs.defaultRuntime <= window {
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
	rs.shortScr = cands
	return cands
}

// reserve computes j's reservation: as a what-if on the live ledger
// (taken back before it returns; the reservation keeps an Occupancy of
// the state found, reserve_whatif.go), release the
// jobs holding resources in order of estimated end (overdue jobs first,
// jobs without an estimate last) and find the earliest end after which
// the placer fits j. Placement attempts are spaced out exponentially
// (after 1, 2, 4, … distinct end times since the last failed attempt) and
// skipped while fewer GPUs are free than j needs; after a success,
// bisection over the end times skipped since the last failure finds the
// earliest one that fits. Nominated jobs count as started now on their
// placements, their victims' claims theirs (nominations.shadow). The
// previous cycle's reservation is reused (its shadow synced with this
// cycle's admissions) while valid and the nominations are unchanged, and
// otherwise kept if it is still free at its time, so a reservation never
// moves later because of jobs that backfilled behind it. Returns nil when
// j cannot fit even when everything has ended.
func (rs *reservations) reserve(j *job, now time.Time, mkey string, in reserveInput) *reservation {
	if prev := rs.byJob[j]; prev != nil && prev.shadow != nil {
		if prev.health == rs.healthEpoch && prev.mkey == mkey && prev.commits == in.commits && (prev.forever || now.Before(prev.at)) && syncShadow(prev, in.admits) {
			return prev
		}
		rs.recycleShadow(prev.shadow)
		prev.shadow = nil
	}
	// The what-if runs on the live ledger itself and is taken back before
	// reserve returns; the reservation keeps an Occupancy of the state it
	// found (reserve_whatif.go).
	live := in.ledger
	sh := rs.wi.begin(live)
	defer sh.rollback()
	noms, victims := in.noms.shadow(sh, now, rs.defaultRuntime)
	prev := rs.byJob[j]
	need := j.req.MinDemand().Milli
	root := rs.c.Root()
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
		ends           = endGroups{now: now} // the last of groups
	)
	fits := func() bool {
		return live.FreeMilli(root) >= need && rs.placer.Place(live, in.req, &p) == nil
	}
	// tryHere tries the state after every released group. On success it
	// searches back, by bisection over the groups released since the last
	// failure, for the earliest group end that also fits.
	tryHere := func() bool {
		if len(groups) == 0 || len(groups) < stride || live.FreeMilli(root) < need {
			return false
		}
		if !fits() {
			stride *= 2
			groups, window = groups[:0], window[:0]
			ends.open = false
			return false
		}
		best := p.Clone()
		lo, hi, cur := 0, len(groups)-1, len(groups)-1
		moveTo := func(k int) {
			for cur > k { // put group cur back
				for _, cl := range window[groups[cur].from:] {
					_ = sh.Reinstate(cl...) // (on a host cordoned or failed since, too)
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
		hEnd, closes := ends.next(hEnd, hKnown)
		if closes {
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
		if ends.join(hEnd, hKnown) {
			groups = append(groups, group{end: hEnd, known: hKnown, from: len(window)})
		}
		window = append(window, cl)
		return true
	}
	in.jobs.ascendEnds(func(h *job) bool {
		// The nominated jobs ending by h's end first (their victims'
		// claims are theirs: see shadowNominations).
		for len(noms) > 0 && noms[0].known && (!h.endKnown || !noms[0].end.After(h.end)) {
			n := noms[0]
			noms = noms[1:]
			if !release(n.end, true, n.claims) {
				return false
			}
		}
		if len(victims) > 0 && h.vic.preempting && slices.Contains(victims, h) { // no victims: h.vic unread (a cache line per holder)
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
		return nil
	}
	if placedByPlacer {
		rp = p.Clone()
		claims = rp.Claims
		if err := sh.Allocate(claims...); err != nil {
			return nil
		}
	}
	if !forever && at.Before(now) {
		at = now
	}
	return &reservation{holder: j, built: now, at: at, forever: forever, claims: claims, p: rp, shadow: rs.occupancy(live), health: rs.healthEpoch, mkey: mkey, commits: in.commits}
}

// endGroups follows a walk of holders in order of estimated end
// (jobTable.ascendEnds), as reserve and deepReserver.plan release them:
// grouped by end, an end before now counting as now, the unknown ends
// (last) one group. The open group is the last one joined.
type endGroups struct {
	now   time.Time
	end   time.Time // the open group's end
	known bool      // whether it is known
	open  bool
}

// next returns end (known or not) as the walk counts it, and whether it
// closes the open group: everything ending by that group's end is
// released, and a holder ending later comes next.
func (g *endGroups) next(end time.Time, known bool) (time.Time, bool) {
	if known && end.Before(g.now) {
		end = g.now
	}
	return end, g.open && (known != g.known || !end.Equal(g.end))
}

// join adds a holder released at end (from next) to the walk; it reports
// whether it opens a new group.
func (g *endGroups) join(end time.Time, known bool) bool {
	if g.open && known == g.known && end.Equal(g.end) {
		return false
	}
	g.end, g.known, g.open = end, known, true
	return true
}

// follow switches to a new version of the cluster (live changes): the
// reservations go; their shadows and the pooled ones, ledgers of the old
// version, follow the new one (O(change) each) to be reused.
func (rs *reservations) follow(c *topology.Cluster) {
	rs.dropAll()
	pool := rs.shadowPool[:0]
	for _, l := range rs.shadowPool {
		if l.Follow(c) == nil {
			pool = append(pool, l)
		}
	}
	rs.shadowPool = pool
	rs.c = c
}

// dropAll forgets the reservations kept from the last cycle (the cluster
// or the queue tree changed under them); the next cycle makes new ones.
func (rs *reservations) dropAll() {
	clear(rs.byJob)
	for _, r := range rs.kept {
		if r.shadow != nil {
			rs.recycleShadow(r.shadow)
		}
		r.shadow = nil
	}
	rs.kept = rs.kept[:0]
	rs.healthEpoch++
}

// recycle takes back a shadow ledger from shadowLedger that was not used
// for a reservation (reserve_depth.go found no time for its job).
func (rs *reservations) recycle(l *topology.Ledger) { rs.shadowPool = append(rs.shadowPool, l) }
