package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// nominations are the placements promised to waiting jobs once their
// victims have released (see PlacingPreemptor), and, for every job that
// asked for victims, which ones it waits for. During a cycle each
// nomination holds the free parts of its placement and its demand
// against its quotas (hold); between cycles it holds nothing. Its methods
// are the only writers of its fields and of each job's nom part.
type nominations struct {
	// list holds the nominations in the order made. n.job.nom.nominated
	// == n while n is live; one whose job moved on (bound, ended, or
	// nominated anew) stays listed until bindNominated prunes it at the
	// start of the next cycle.
	list []*nomination
	// drops counts the nominations dropped; changes the nominations made,
	// bound and dropped (part of the planner's commitments, see
	// Scheduler.commits).
	drops, changes uint64
	// holdEpochs counts the quota-tree epochs spent on the holds' charges
	// (see quotaEpoch).
	holdEpochs uint64
}

// jobNomination is a waiting job's part of the nominations.
type jobNomination struct {
	nominated  *nomination // the placement promised to it, or nil
	waitingFor []string    // the victims asked for it
}

// nomination is a placement promised to a waiting job once its victims
// have released.
type nomination struct {
	job     *job
	p       *gang.Placement
	victims []*job
	held    pieces // trial-held in the current cycle
	// charge is what p charges to the job's queue; charged whether it is
	// charged in the current cycle (see hold).
	charge  queue.Vector
	charged bool
	// due is when every victim should have stopped (the latest grace
	// period, twice over, at least a minute past the plan); a host that
	// has not reported them by then lost a stop, and the nomination no
	// longer holds quota, CPU or memory for its job (only the GPUs, as
	// victims still hold theirs), so a lost stop cannot block the other
	// jobs of its queue path for ever.
	due time.Time
}

// overdue reports whether n's victims should have stopped by now.
func (n *nomination) overdue(now time.Time) bool { return now.After(n.due) }

// broken reports whether n's placement takes a host that no longer takes
// new work (cordoned, not healthy, removed) or a GPU that is not healthy,
// since the plan: its job could never bind there. O(claims).
func (n *nomination) broken(l *topology.Ledger) bool {
	for _, cl := range n.p.Claims {
		if !l.HostUsable(cl.Host) {
			return true
		}
		for _, g := range cl.GPUs {
			if l.GPU(g.GPU).Health != topology.Healthy {
				return true
			}
		}
	}
	return false
}

// waitFor records that j waits for the victims asked for it.
func (ns *nominations) waitFor(j *job, victims []string) { j.nom.waitingFor = victims }

// stopWaiting records that j's victims are gone.
func (ns *nominations) stopWaiting(j *job) { j.nom.waitingFor = nil }

// nominate promises p (charging charge) to j once victims are gone,
// which should be by due.
func (ns *nominations) nominate(j *job, p *gang.Placement, victims []*job, charge queue.Vector, due time.Time) *nomination {
	n := &nomination{job: j, p: p, victims: victims, charge: charge, due: due}
	j.nom.nominated = n
	ns.list = append(ns.list, n)
	ns.changes++
	return n
}

// bound records that n's job is past its nomination: bound to it, or
// about to be refused (drop follows).
func (ns *nominations) bound(n *nomination) {
	n.job.nom.waitingFor = nil
	n.job.nom.nominated = nil
	ns.changes++
}

// drop forgets a nomination whose job will not take it (see
// Scheduler.dropNomination for what else it touches).
func (ns *nominations) drop(n *nomination) {
	if n.job.nom.nominated == n {
		n.job.nom.nominated = nil
	}
	ns.drops++
	ns.changes++
}

// keep keeps the nominations for which fn returns true, in order.
func (ns *nominations) keep(fn func(*nomination) bool) {
	kept := ns.list[:0]
	for _, n := range ns.list {
		if fn(n) {
			kept = append(kept, n)
		}
	}
	clear(ns.list[len(kept):])
	ns.list = kept
}

// hold keeps what n's job will take off limits to the other jobs of the
// cycle at now while its victims stop. It trial-allocates the parts of
// n's placement that are free now: whole claims where they are free,
// else each GPU of the claim that is (or the free share of a shared GPU
// a victim shares, see freeShare), and of the host's CPU and memory as
// much of the claim's as is free (a victim still holds the rest, which it
// releases to n). And it charges n's demand to its queue, as if
// admitted: no job admitted meanwhile takes the quota n's victims free,
// so n's bind passes the quota check when they are gone. A victim's
// charge stays until it stops, so the quotas on n's path count both
// meanwhile (a conservative hold, for a grace period). unhold undoes
// both.
func (ns *nominations) hold(n *nomination, l *topology.Ledger, tree *queue.Tree, now time.Time) {
	for _, cl := range n.p.Claims {
		if n.held.trialTake(l, cl) {
			continue
		}
		for _, g := range cl.GPUs {
			if !n.held.trialTake(l, topology.Claim{Host: cl.Host, GPUs: []topology.GPUClaim{g}}) {
				if part, ok := freeShare(l, cl.Host, g); ok {
					n.held.trialTake(l, part)
				}
			}
		}
		if n.overdue(now) {
			continue
		}
		part := topology.Claim{Host: cl.Host, CPUMilli: min(cl.CPUMilli, l.CPUFree(cl.Host)), MemoryMiB: min(cl.MemoryMiB, l.MemoryFree(cl.Host))}
		if part.CPUMilli > 0 || part.MemoryMiB > 0 {
			n.held.trialTake(l, part)
		}
	}
	if !n.charged && !n.overdue(now) && tree.GovernsAny() {
		tree.Admit(n.job.leaf.ID(), n.charge, now)
		n.charged = true
		ns.holdEpochs++
	}
}

// freeShare is the free share of a shared GPU that claim g of a
// nomination needs whole or in part while a victim holds the rest: the
// part hold keeps off the others (else a job of the cycle takes it, and
// the nomination finds its GPU busy once the victim is gone). ok is false
// when g is not such a claim or nothing is free.
func freeShare(l *topology.Ledger, h topology.HostID, g topology.GPUClaim) (topology.Claim, bool) {
	var want int32
	switch g.Kind {
	case topology.ClaimWhole:
		want = topology.MilliPerGPU
	case topology.ClaimShare:
		want = g.Milli
	default:
		return topology.Claim{}, false
	}
	free := min(want, int32(l.GPUFreeMilli(g.GPU)))
	if free <= 0 || l.GPU(g.GPU).Mode != topology.ModeShared {
		return topology.Claim{}, false
	}
	return topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: g.GPU, Kind: topology.ClaimShare, Milli: free}}}, true
}

// unholdAll gives back what the holds of the cycle at now took, last
// first.
func (ns *nominations) unholdAll(l *topology.Ledger, tree *queue.Tree, now time.Time) {
	for i := len(ns.list) - 1; i >= 0; i-- {
		ns.unhold(ns.list[i], l, tree, now)
	}
}

func (ns *nominations) unhold(n *nomination, l *topology.Ledger, tree *queue.Tree, now time.Time) {
	if err := n.held.trialGiveBack(l); err != nil {
		panic("gpusched: releasing a nomination's hold failed: " + err.Error())
	}
	if n.charged {
		tree.Release(n.job.leaf.ID(), n.charge, false, now)
		n.charged = false
		ns.holdEpochs++
	}
}

// heldDetail notes, for a quota block b met in a cycle, the nominated
// jobs whose held demand b's usage counts ("" when none).
func (ns *nominations) heldDetail(tree *queue.Tree, b *queue.Block) string {
	if len(ns.list) == 0 {
		return ""
	}
	node, ok := tree.Lookup(b.Queue)
	if !ok {
		return ""
	}
	var ids []string
	for _, n := range ns.list {
		if !n.charged {
			continue
		}
		for id := n.job.leaf.ID(); id >= 0; id = tree.Parent(id) {
			if id == node {
				ids = append(ids, n.job.spec.ID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return fmt.Sprintf("(in use counts what is held for %s while its victims stop)", strings.Join(ids, ", "))
}

// quotaEpoch is the tree's usage epoch less the changes of the holds'
// charges, which are taken and given back every cycle (changes follows
// the nominations themselves).
func (ns *nominations) quotaEpoch(tree *queue.Tree) uint64 {
	return tree.Epoch() - ns.holdEpochs
}

// nomRelease is a nominated job in a reservation's shadow: it holds
// claims until end (known) or for ever.
type nomRelease struct {
	end    time.Time
	known  bool
	claims []topology.Claim
}

// shadow models the nominations in sh, a copy of the ledger while they
// hold their placements' free parts (hold): as though each nominated job
// started at now on its placement and its victims were gone (the victims
// are stopping; what they hold is the nominated job's or free once they
// stop). It gives back the trial holds and the claims of the victims
// still holding, and allocates each placement whole. It returns when the
// nominated jobs release their placements, in order of estimated end
// (now plus the remaining runtime estimate, defaultRuntime for jobs
// without one; unknown last), and the victims whose claims it released,
// which the caller no longer releases at their own ends. A nomination
// whose placement does not fit so (not expected) is left as it was: its
// holds never released, its victims released at their ends.
func (ns *nominations) shadow(sh whatIfLedger, now time.Time, defaultRuntime time.Duration) ([]nomRelease, []*job) {
	if len(ns.list) == 0 {
		return nil, nil
	}
	var (
		rels    []nomRelease
		victims []*job
	)
	for _, n := range ns.list {
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
				rt = defaultRuntime
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
