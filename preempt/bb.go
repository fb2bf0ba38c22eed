package preempt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// counter decides cheaply whether a set of units could let the gang place
// in one domain: a necessary condition (never false for a set that
// places), so it only saves placement attempts.
type counter struct {
	x    *dom
	have int64 // free + freed, in the unit the gang needs
	// cpu and mem are the host's free + freed CPU and memory (solo);
	// q the host's GPUs that could take the solo task (gpuQualifies).
	cpu, mem int64
	q        int
	slots    int // tasks of k GPUs the hosts could hold (k ≥ 2)
	hosts    []topology.HostID
}

// resetSet empties the set and points the counter at domain x.
func (r *run) resetSet(x *dom) {
	for _, ui := range r.set {
		u := &r.units[ui]
		r.chosen[ui] = false
		r.jobCount[u.ji] = 0
		r.jobWhole[u.ji] = false
		if u.slot >= 0 {
			r.slotCount[u.slot] = 0
		}
		if u.leaf >= 0 && r.tree != nil {
			// The what-if tree holds the set released: charge it back
			// (cheaper than resetting it and replaying the commitments).
			r.w.Add(u.leaf, r.charge(u))
		}
	}
	r.set = r.set[:0]
	r.cur = key{}
	r.clearCounts()
	r.cnt = counter{x: x, have: r.freeA(x), hosts: r.cnt.hosts[:0]}
	if r.solo {
		h, _ := r.c.DomainHosts(x.id)
		r.cnt.cpu, r.cnt.mem = r.l.CPUFree(h), r.l.MemoryFree(h)
		if r.soloGPU != 0 {
			r.cnt.q = r.qualifying(h)
		}
	}
	if r.k >= 2 {
		r.cnt.slots = r.baseSlots(x.id)
	}
}

// clearCounts zeroes the counter's per-host and per-GPU scratch.
func (r *run) clearCounts() {
	hf, in := r.s.hostFree, r.s.hostIn
	for _, h := range r.cnt.hosts {
		hf[h], in[h] = 0, false
		first, n := r.c.HostGPUs(h)
		clear(r.s.gpuFreed[first : first+topology.GPUID(n)])
	}
	r.cnt.hosts = r.cnt.hosts[:0]
	if r.cnt.x != nil && r.soloGPU != 0 {
		r.clearFreed(r.cnt.x)
	}
}

// baseSlots counts the tasks of k GPUs the usable hosts of domain d hold
// now.
func (r *run) baseSlots(d topology.DomainID) int {
	n := 0
	r.l.AscendHosts(d, topology.NoModel, r.k, func(h topology.HostID, free int) bool {
		if r.hostUsable(h) {
			n += free / r.k
		}
		return true
	})
	return n
}

func (r *run) feasible() bool {
	return r.cnt.have >= r.needA && (r.k < 2 || r.cnt.slots >= r.kTasks) &&
		(!r.solo || r.cnt.cpu >= r.need.CPUMilli && r.cnt.mem >= r.need.MemoryMiB && r.cnt.q >= r.soloQ)
}

// Exact GPU counting on the host of a solo search: the GPUs that could
// take the task with the chosen units released, GPU by GPU (a shared GPU
// becomes a whole free GPU only when every share on it is released), where
// counting GPUs by claims would count a released share as a free GPU.
// soloGPU is the task's kind (gang.TaskWhole or gang.TaskShare; 0: off,
// for MIG instances), soloQ the GPUs it needs.

// gpuQualifies reports whether GPU g could take the solo task with freed
// milli-GPU of it released.
func (r *run) gpuQualifies(g topology.GPUID, freed int32) bool {
	st := r.l.GPU(g)
	if st.Health != topology.Healthy || r.req.AllowGPU != nil && !r.req.AllowGPU(g) {
		return false // (the host's health is checked by hostUsable)
	}
	used := int32(st.UsedMilli) - freed
	if used == 0 {
		return true
	}
	return r.soloGPU == gang.TaskShare && st.Mode == topology.ModeShared && topology.MilliPerGPU-used >= r.soloMilli
}

// qualifying counts the GPUs of host h that could take the solo task with
// the freed milli-GPU in r.s.gpuFreed released.
func (r *run) qualifying(h topology.HostID) int {
	if !r.hostUsable(h) {
		return 0
	}
	first, n := r.c.HostGPUs(h)
	q := 0
	for g := first; g < first+topology.GPUID(n); g++ {
		if r.gpuQualifies(g, r.s.gpuFreed[g]) {
			q++
		}
	}
	return q
}

// clearFreed zeroes r.s.gpuFreed on the host of domain x.
func (r *run) clearFreed(x *dom) {
	h, _ := r.c.DomainHosts(x.id)
	first, n := r.c.HostGPUs(h)
	clear(r.s.gpuFreed[first : first+topology.GPUID(n)])
}

// freeOn adds (sign 1) or takes (sign −1) what unit u frees on host h to
// r.s.gpuFreed and returns the change in qualifying GPUs.
func (r *run) freeOn(u *unit, h topology.HostID, sign int32) int {
	fr := r.s.gpuFreed
	dq := 0
	claims := r.claims(u)
	for i := range claims {
		cl := &claims[i]
		if cl.Host != h {
			continue
		}
		for _, gc := range cl.GPUs {
			g := gc.GPU
			before := r.gpuQualifies(g, fr[g])
			fr[g] += sign * int32(gpuClaimMilli(r.c, gc))
			if after := r.gpuQualifies(g, fr[g]); after != before {
				if after {
					dq++
				} else {
					dq--
				}
			}
		}
	}
	return dq
}

// count adds (sign 1) or takes (sign -1) unit ui's GPUs in the counter's
// domain. It returns false when the unit's hosts offer no room for a task
// of k GPUs either way (so, for a gang of k-GPU tasks only, the unit
// cannot matter to its placement).
func (r *run) count(ui int32, sign int64) bool {
	r.cnt.have += sign * r.amt[ui]
	if r.solo {
		r.cnt.cpu += sign * r.amtCPU[ui]
		r.cnt.mem += sign * r.amtMem[ui]
		if r.soloGPU != 0 && r.amt[ui] > 0 {
			h, _ := r.c.DomainHosts(r.cnt.x.id)
			if r.hostUsable(h) {
				r.cnt.q += r.freeOn(&r.units[ui], h, int32(sign))
			}
		}
	}
	if r.k < 2 {
		return true
	}
	relevant := false
	u := &r.units[ui]
	x := r.cnt.x
	hf, fr, in := r.s.hostFree, r.s.gpuFreed, r.s.hostIn
	claims := r.claims(u)
	for i := range claims {
		cl := &claims[i]
		h := cl.Host
		if len(cl.GPUs) == 0 || r.lx.hostDom[h] != x.i || !r.hostUsable(h) {
			continue
		}
		if !in[h] {
			in[h] = true
			r.cnt.hosts = append(r.cnt.hosts, h)
		}
		// GPU by GPU: a GPU is free for a whole task once every claim on
		// it is released (a share released alone frees nothing whole).
		f := int32(r.l.HostFreeGPUs(h))
		old := (f + hf[h]) / int32(r.k)
		whole := r.allHealthy(h)
		for _, gc := range cl.GPUs {
			g := gc.GPU
			st := r.l.GPU(g)
			if !whole && st.Health != topology.Healthy {
				continue
			}
			before := int32(st.UsedMilli) == fr[g]
			fr[g] += int32(sign) * int32(gpuClaimMilli(r.c, gc))
			if after := int32(st.UsedMilli) == fr[g]; after != before {
				if after {
					hf[h]++
				} else {
					hf[h]--
				}
			}
		}
		nw := (f + hf[h]) / int32(r.k)
		r.cnt.slots += int(nw - old)
		relevant = relevant || old > 0 || nw > 0
	}
	return relevant
}

// canAdd reports whether unit ui may join the set: a whole gang not
// already shrunk, a shrink of a gang not stopped whole and within its
// group's excess.
func (r *run) canAdd(ui int32) bool {
	u := &r.units[ui]
	if r.chosen[ui] {
		return false
	}
	if u.task < 0 {
		return r.jobCount[u.ji] == 0
	}
	return !r.jobWhole[u.ji] && r.slotCount[u.slot] < r.slotLimit[u.slot]
}

func (r *run) add(ui int32) {
	u := &r.units[ui]
	r.chosen[ui] = true
	r.set = append(r.set, ui)
	if r.jobCount[u.ji] == 0 {
		r.cur.victims++
		r.cur.prio += int64(u.prio) + prioShift
	}
	r.jobCount[u.ji]++
	if u.task < 0 {
		r.cur.victims += int(r.restartOf(u).stops)
		r.jobWhole[u.ji] = true
	} else {
		r.slotCount[u.slot]++
	}
	r.cur.lost += u.lost
	if u.leaf >= 0 && r.tree != nil {
		r.w.Release(u.leaf, r.charge(u))
	}
	r.count(ui, 1)
}

func (r *run) remove(ui int32) {
	u := &r.units[ui]
	r.chosen[ui] = false
	if k := slices.Index(r.set, ui); k >= 0 {
		r.set = slices.Delete(r.set, k, k+1)
	}
	r.jobCount[u.ji]--
	if r.jobCount[u.ji] == 0 {
		r.cur.victims--
		r.cur.prio -= int64(u.prio) + prioShift
	}
	if u.task < 0 {
		r.cur.victims -= int(r.restartOf(u).stops)
		r.jobWhole[u.ji] = false
	} else {
		r.slotCount[u.slot]--
	}
	r.cur.lost -= u.lost
	if u.leaf >= 0 && r.tree != nil {
		r.w.Add(u.leaf, r.charge(u))
	}
	r.relevant = r.count(ui, -1)
}

// rulesOK checks the set-level rules of the reclaim and fair-share
// grounds on the what-if tree (which has every chosen unit released): each
// borrowing node a victim was chosen from still borrows with all its
// chosen victims gone but the one with the largest GPU charge (the order
// of stops that keeps it borrowing longest; a shrunk gang counts as one
// victim with the charge of its stopped tasks); and each fair-share node's
// share with all its victims gone is at least the pending side's share
// with the pending job admitted. Both only get harder as victims are
// added.
//
// O(set × nodes): one pass sums each job's GPU charge in the set and
// finds each node's largest (the first of equals, in set order); the
// check per node adds and releases that job's units. (It ran once per
// unit the reprieve tried to drop, and summed the charges again for each
// unit of each node: cubic in the set, most of a reclaiming cycle's time
// at 1,000 hosts.)
func (r *run) rulesOK() bool {
	ok := r.rulesHold()
	if r.s.testRules != nil {
		r.s.testRules(r, ok)
	}
	return ok
}

// rulesHold is rulesOK's check.
func (r *run) rulesHold() bool {
	if len(r.ruleCharge) < len(r.jobs) {
		r.ruleCharge = make([]int64, len(r.jobs))
	}
	for _, ui := range r.set {
		r.ruleCharge[r.units[ui].ji] = 0
	}
	for _, ui := range r.set {
		u := &r.units[ui]
		if ch := r.charge(u); len(ch) > 0 {
			r.ruleCharge[u.ji] += ch[0]
		}
	}
	nodes := r.ruleNodes[:0]
	for _, ui := range r.set {
		u := &r.units[ui]
		if u.node < 0 {
			continue
		}
		ch := r.ruleCharge[u.ji]
		k := slices.IndexFunc(nodes, func(n ruleNode) bool { return n.node == u.node })
		switch {
		case k < 0:
			nodes = append(nodes, ruleNode{node: u.node, first: ui, big: u.ji, charge: ch})
		case ch > nodes[k].charge:
			nodes[k].big, nodes[k].charge = u.ji, ch
		}
	}
	r.ruleNodes = nodes
	for _, n := range nodes {
		u := &r.units[n.first]
		if !r.borrowsWith(u.node, n.big) {
			return false
		}
		if u.ground == GroundFairShare && r.w.Share(u.node, nil) < r.leaves[u.leaf].shareA {
			return false
		}
	}
	return true
}

// borrowsWith reports whether node borrows on the what-if tree with job
// ji's units of the set back (they are released there).
func (r *run) borrowsWith(node queue.NodeID, ji int32) bool {
	for _, wi := range r.set {
		if w := &r.units[wi]; w.ji == ji {
			r.w.Add(w.leaf, r.charge(w))
		}
	}
	ok := r.w.Borrows(node, r.mask)
	for _, wi := range r.set {
		if w := &r.units[wi]; w.ji == ji {
			r.w.Release(w.leaf, r.charge(w))
		}
	}
	return ok
}

// ruleNode is, for rulesOK, a node a victim of the set was chosen from:
// the set's first unit under it, and the job under it with the largest
// GPU charge in the set.
type ruleNode struct {
	node   queue.NodeID
	first  int32
	big    int32
	charge int64
}

// evaluate tries the current set for real: rules, quota, placement. anti
// reports a failure that every superset shares (a rule). With force the
// placement budget is ignored.
func (r *run) evaluate(force bool) (ok, anti bool) {
	if len(r.set) == 0 && !r.qblock {
		return false, false // the gang did not place with nothing released
	}
	if r.tree != nil {
		if !r.rulesOK() {
			return false, true
		}
		if r.qp >= 0 && r.w.Check(r.qp, r.demand) != nil {
			return false, false
		}
	}
	if !force && r.placements >= r.s.cfg.MaxPlacements {
		r.budgetHit = true
		return false, false
	}
	r.placements++
	r.rel = r.rel[:0]
	for _, ui := range r.set {
		r.rel = append(r.rel, r.claims(&r.units[ui])...)
	}
	if err := r.l.TrialRelease(r.rel...); err != nil {
		if r.inputErr == nil {
			r.inputErr = fmt.Errorf("preempt: snapshot inconsistent: the ledger does not hold the claims of the jobs %s: %w", r.setIDs(), err)
		}
		return false, false
	}
	if r.confine {
		r.confineTo(r.rel)
	}
	x := r.s.cfg.Placer.Place(r.l, r.req, &r.scratch)
	if r.confine {
		r.unconfine()
	}
	ok = x == nil
	if ok && r.defrag {
		ok = r.replace()
	}

	if err := r.l.TrialRestore(r.rel...); err != nil {
		panic("preempt: restoring trial-released claims failed (did the placer change the ledger?): " + err.Error())
	}
	return ok, false
}

func (r *run) setIDs() string {
	var ids []string
	for _, ui := range r.set {
		ids = append(ids, r.jobID(&r.units[ui]))
	}
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), ", ")
}

// record makes the current set (whose placement is in r.scratch) the best.
func (r *run) record(x *dom) {
	r.best.ok = true
	r.best.key = r.cur
	r.best.set = append(r.best.set[:0], r.set...)
	r.best.placement.set(&r.scratch)
	r.best.dom = x.i
	if r.defrag {
		r.best.moves = append(r.best.moves[:0], r.moves...)
	}
}

// solveDomain searches domain x (units in r.order): exhaustively when it
// has few candidates, else greedily; then polishes the best set with the
// reprieve pass.
func (r *run) solveDomain(x *dom) {
	before := r.best.key
	had := r.best.ok
	r.settled = false
	r.resetSet(x)
	if r.nUnits() <= r.s.cfg.MaxExact {
		nodes := r.nodes
		if r.dfs(x, 0) {
			r.polish(x, had, before)
			return
		}
		if r.budgetHit {
			r.inexact = true
			r.polish(x, had, before)
			return
		}
		r.nodes = nodes // the exhaustive search gave up; the greedy one runs
		r.resetSet(x)
	}
	r.inexact = true
	r.greedy(x)
	r.polish(x, had, before)
}

// dfs is branch and bound over r.order[i:]. It returns false when the
// node budget ran out.
func (r *run) dfs(x *dom, i int) bool {
	r.nodes++
	if r.nodes > r.s.cfg.MaxNodes || r.budgetHit {
		return false
	}
	if r.feasible() && (len(r.set) > 0 || r.qblock) {
		if r.best.ok && !r.cur.less(r.best.key) {
			return true // every superset costs at least as much
		}
		ok, anti := r.evaluate(false)
		if ok {
			r.record(x)
			return true
		}
		if anti {
			return true
		}
		if r.budgetHit {
			return false
		}
	}
	if i >= r.nUnits() {
		return true
	}
	lb := r.fractional(i, r.needA-r.cnt.have)
	if lb == maxGPUTime {
		return true // the rest cannot cover the gang
	}
	if r.best.ok && !(key{lost: r.cur.lost + lb, victims: r.cur.victims, prio: r.cur.prio}).less(r.best.key) {
		return true
	}
	ui, _ := r.unitAt(i)
	if r.canAdd(ui) {
		r.add(ui)
		ok := r.dfs(x, i+1)
		r.remove(ui)
		if !ok {
			return false
		}
	}
	return r.dfs(x, i+1)
}

const maxGPUTime = GPUTime(1<<63 - 1)

// greedy adds units in order until the gang places, then reprieves; if
// no set places because reclaim victims were refused once their queue
// stopped borrowing, it tries again with the victims that free no GPU a
// task could use last (placementless).
func (r *run) greedy(x *dom) {
	r.refusedBorrow = false
	if r.greedyIn(x, nil) || !r.refusedBorrow || r.budgetHit {
		return
	}
	// The cheapest victims used up what their queue borrows while they
	// freed GPUs only on hosts that cannot take one of the gang's tasks
	// (4-GPU trays for an 8-GPU task): the victims that could make room
	// were refused, as their queue no longer borrowed. Try again with
	// those hosts' victims last, wanted for the quota only.
	order := r.gorder[:0]
	n := r.nUnits()
	for i := range n {
		if ui, _ := r.unitAt(i); !r.placementless(ui) {
			order = append(order, ui)
		}
	}
	if len(order) == n || len(order) == 0 {
		r.gorder = order
		return
	}
	for i := range n {
		if ui, _ := r.unitAt(i); r.placementless(ui) {
			order = append(order, ui)
		}
	}
	r.gorder = order
	r.resetSet(x)
	r.greedyIn(x, order)
}

// placementless reports whether unit ui frees GPUs only on hosts that
// can never take one of the gang's tasks, each of k whole GPUs: hosts
// with fewer GPUs in all, or of a model no group of the gang accepts.
// Such a victim can help only the quota. False unless every task takes
// k ≥ 2 whole GPUs.
func (r *run) placementless(ui int32) bool {
	if r.k < 2 || !r.kOnly {
		return false
	}
	for _, cl := range r.claims(&r.units[ui]) {
		if len(cl.GPUs) == 0 {
			continue
		}
		if _, n := r.c.HostGPUs(cl.Host); n < r.k {
			continue
		}
		m := r.c.HostModel(cl.Host)
		for i := range r.req.Groups {
			if r.req.Groups[i].Accepts(m) && r.req.Groups[i].AllowsHost(cl.Host) {
				return false
			}
		}
	}
	return true
}

// greedyIn is one greedy search of x: units are added in order (the
// units' order when order is nil) until counting allows the gang, then
// in doubling steps until it places; the victims are reprieved and the
// set recorded if cheaper (greedyDone). It reports whether the gang
// placed.
func (r *run) greedyIn(x *dom, order []int32) bool {
	n := r.nUnits()
	at := func(i int) int32 {
		if order != nil {
			return order[i]
		}
		ui, _ := r.unitAt(i)
		return ui
	}
	i := 0
	for i < n && !r.feasible() {
		r.tryAdd(at(i))
		i++
	}
	if !r.feasible() {
		return false
	}
	for step := 1; ; step *= 2 {
		ok, _ := r.evaluate(false)
		if ok {
			break
		}
		if r.budgetHit || i >= n {
			return false
		}
		for k := 0; k < step && i < n; k++ {
			r.tryAdd(at(i))
			i++
		}
	}
	r.greedyDone(x)
	return true
}

// greedyDone ends a greedy search whose set places the gang: the victims
// are reprieved, and the set recorded if it is the cheapest yet.
func (r *run) greedyDone(x *dom) {
	if _, stale := r.reprieve(); stale && !r.reevaluate() {
		return
	}
	if r.banding {
		r.offerBand(x)
		return
	}
	if !r.best.ok || r.cur.less(r.best.key) {
		r.record(x)
		r.settled = r.quiet
	}
}

// tryAdd adds unit ui in the greedy search if the rules allow it: a whole
// gang replaces the shrinks chosen of it; a reclaim or fair-share victim
// joins only while its node still borrows (and, for fair share, keeps its
// share at least the pending side's).
func (r *run) tryAdd(ui int32) {
	u := &r.units[ui]
	if r.chosen[ui] {
		return
	}
	if u.task >= 0 && (r.jobWhole[u.ji] || r.slotCount[u.slot] >= r.slotLimit[u.slot]) {
		return
	}
	if u.node >= 0 && !r.w.Borrows(u.node, r.mask) {
		r.refusedBorrow = true
		return
	}
	if u.task < 0 && r.jobCount[u.ji] > 0 {
		for _, vi := range slices.Clone(r.set) {
			if r.units[vi].ji == u.ji {
				r.remove(vi)
			}
		}
	}
	r.add(ui)
	if u.ground == GroundFairShare && r.w.Share(u.node, nil) < r.leaves[u.leaf].shareA {
		r.remove(ui)
	}
}

// reprieve drops victims, most expensive first, while the gang still
// places without them, until none can be dropped. A drop is tried for real
// when counting allows the gang in the domain being searched or in any
// other (countsElsewhere): victims may hold GPUs in several domains, and
// the gang may place in another domain than the one searched. It reports
// whether it
// dropped any, and whether r.scratch may no longer hold the placement of
// the set (a victim was dropped, or a placement without one was tried:
// a failed placement leaves r.scratch empty).
func (r *run) reprieve() (dropped, stale bool) {
	for changed := true; changed; {
		changed = false
		r.quiet = true
		cands := append(r.psort[:0], r.set...)
		r.psort = cands
		slices.SortFunc(cands, func(a, b int32) int {
			ua, ub := &r.units[a], &r.units[b]
			switch {
			case ua.lost != ub.lost:
				if ua.lost > ub.lost {
					return -1
				}
				return 1
			case ua.prio != ub.prio:
				if ua.prio > ub.prio {
					return -1
				}
				return 1
			}
			if c := strings.Compare(r.jobID(ub), r.jobID(ua)); c != 0 {
				return c
			}
			return int(ub.task - ua.task)
		})
		for _, ui := range cands {
			r.remove(ui)
			if r.feasible() || r.countsElsewhere() {
				r.quiet = false
				var ok bool
				if !r.relevant && r.kOnly && r.feasible() && r.onlyIn(ui, r.cnt.x) {
					// The unit's hosts take no task either way: only
					// the rules and the quota can need it.
					ok = r.tree == nil || r.rulesOK() && (r.qp < 0 || r.w.Check(r.qp, r.demand) == nil)
				} else {
					ok, _ = r.evaluate(false)
					stale = true
				}
				if ok {
					changed, dropped = true, true
					continue
				}
			}
			r.add(ui)
		}
	}
	return dropped, stale || dropped
}

// countsElsewhere reports whether the current set could let the gang
// place in a domain other than the counter's: the counter's condition
// (enough GPUs, and for k-GPU tasks enough host slots) holds in some
// domain the set frees GPUs in, or, while the quota blocks the gang with
// nothing released, in some domain with enough GPUs free now. (Without
// the quota blocking it, the gang did not place with nothing released, and
// a domain nothing is released in is as it was then: placing in one domain
// depends on that domain alone.) The set's victims may hold GPUs in
// several domains, so a set chosen in one domain can place in another, and
// the reprieve pass must not keep a victim only because the counter's
// domain needs it.
func (r *run) countsElsewhere() bool {
	x := r.cnt.x
	if r.qblock && r.freeFits > 0 && (r.freeFits > 1 || r.freeA(x) < r.needA) {
		return true
	}
	acc := r.domAcc
	r.domTouch = r.domTouch[:0]
	for _, ui := range r.set {
		u := &r.units[ui]
		for _, ct := range r.contribs[u.cfrom:u.cto] {
			if ct.dom == x.i {
				continue
			}
			if acc[ct.dom] == 0 {
				r.domTouch = append(r.domTouch, ct.dom)
			}
			acc[ct.dom] += r.amount(ct.gpus, ct.milli) // ≥ 1
		}
	}
	found := false
	for _, d := range r.domTouch {
		if !found && r.freeAt(d)+acc[d] >= r.needA && (r.k < 2 || r.slotsWith(d) >= r.kTasks) {
			found = true
		}
	}
	for _, d := range r.domTouch {
		acc[d] = 0
	}
	return found
}

// slotsWith counts the tasks of k GPUs the usable hosts of domain di of
// the level would hold with the current set released (not the counter's
// domain).
func (r *run) slotsWith(di int32) int {
	n := r.baseSlots(r.c.DomainsAt(r.lv)[di])
	hf := r.s.hostFree
	hosts := r.slotHosts[:0]
	for _, ui := range r.set {
		u := &r.units[ui]
		claims := r.claims(u)
		for i := range claims {
			cl := &claims[i]
			h := cl.Host
			if len(cl.GPUs) == 0 || r.lx.hostDom[h] != di || !r.hostUsable(h) {
				continue
			}
			whole := r.allHealthy(h)
			k := int32(0)
			for _, g := range cl.GPUs {
				if whole || r.l.GPU(g.GPU).Health == topology.Healthy {
					k++
				}
			}
			if k == 0 {
				continue
			}
			if hf[h] == 0 {
				hosts = append(hosts, h)
			}
			hf[h] += k
		}
	}
	for _, h := range hosts {
		f := int32(r.l.HostFreeGPUs(h))
		n += int((f+hf[h])/int32(r.k) - f/int32(r.k))
		hf[h] = 0
	}
	r.slotHosts = hosts
	return n
}

// onlyIn reports whether unit ui frees GPUs the gang could use in domain x
// only.
func (r *run) onlyIn(ui int32, x *dom) bool {
	u := &r.units[ui]
	for _, ct := range r.contribs[u.cfrom:u.cto] {
		if ct.dom != x.i {
			return false
		}
	}
	return true
}

// reevaluate places the current set again (ignoring the budget) so that
// r.scratch holds its placement.
func (r *run) reevaluate() bool {
	ok, _ := r.evaluate(true)
	return ok
}

// plainPolish turns off polish's shortcut after a settled greedy set
// (tests compare plans made with and without it).
var plainPolish = false

// polish runs the reprieve pass on the best set if this domain's search
// improved it (the exhaustive search can keep a victim that costs nothing).
func (r *run) polish(x *dom, had bool, before key) {
	if !r.best.ok || had && !r.best.key.less(before) || r.best.dom != x.i {
		return
	}
	if r.settled && !plainPolish {
		// The greedy search recorded this set as its reprieve left it,
		// the reprieve's last pass having dropped nothing on counting
		// alone: a second reprieve would repeat that pass (the same
		// set, order and counts), evaluate nothing and drop nothing.
		return
	}
	r.resetSet(x)
	for _, ui := range r.best.set {
		r.add(ui)
	}
	if dropped, _ := r.reprieve(); dropped {
		if r.reevaluate() {
			r.record(x)
		}
	}
}
