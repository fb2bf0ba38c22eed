package gpusched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// deepReserver gives reservations to blocked jobs of a backfilling queue
// after its first (Config.ReserveDepth > 1): conservative backfill for the
// first ReserveDepth blocked jobs of each queue, as Slurm's backfill plans
// a start for every pending job in priority order. A later reservation is
// planned around the earlier ones: at each candidate time (now, then each
// distinct estimated end of a running job) the GPUs, cores and memory of
// every earlier reservation whose estimated run overlaps the job's own
// are held, and the placer must fit the job in what is left. Its shadow
// (the ledger at its time) holds those too, so a backfill candidate
// passes it only if it delays none of them; like every reservation it
// takes part in reservations.check. The first blocked job of a queue is
// reserved as before (reservations.reserve). Nominations are not
// modelled in these plans. Its methods are the only writers of its
// fields.
type deepReserver struct {
	depth  int            // Config.ReserveDepth (≤ 1: off)
	buf    gang.Placement // the placer's result
	pieces pieces         // the pieces of earlier reservations held at one candidate time
	ends   []time.Time    // the earlier reservations' estimated ends, in order
}

// more reports whether j, blocked in leaf after the leaf's first blocked
// job, may take a reservation too: the option is on, a hold is free
// under MaxReservations, and fewer than depth jobs of leaf hold one.
func (d *deepReserver) more(s *Scheduler, leaf *queue.Leaf) bool {
	if d.depth <= 1 || !leaf.Policy().Backfill || !s.res.room() {
		return false
	}
	n := 0
	for _, h := range s.res.holds {
		if h.holder.leaf == leaf {
			n++
		}
	}
	return n < d.depth
}

// after plans reservations once j, its queue's candidate, was blocked for
// capacity or conflicted with a reservation (reason r; mkey names its
// model filter): for j unless it holds one already (the queue's first
// blocked job does), then for the jobs of j's class behind it in queue
// order, which the cycle skips, while more allows. Each is held and
// recorded in the job's reason.
func (d *deepReserver) after(s *Scheduler, leaf *queue.Leaf, j *job, r *Reason, mkey string, allow func(topology.HostID) bool, now time.Time) {
	if d.depth <= 1 || r == nil || r.Code == WaitQuotaHeld {
		return
	}
	if !holds(s, j) && !d.reserve(s, leaf, j, r, mkey, allow, now) {
		return
	}
	cl := j.entry.ClassOf()
	if cl == nil {
		return
	}
	cl.Ascend(func(e *queue.Entry) bool {
		cj := e.Ref.(*job)
		if cj == j || cj.nom.nominated != nil || len(cj.nom.waitingFor) > 0 || holds(s, cj) {
			return true
		}
		ch := s.hosts.apply(cj, s.adm.models(leaf.ID(), cj))
		if ch.block != nil {
			return true
		}
		return d.reserve(s, leaf, cj, r, ch.key, ch.allow, now)
	})
}

// holds reports whether j holds something in this cycle.
func holds(s *Scheduler, j *job) bool {
	for _, h := range s.res.holds {
		if h.holder == j {
			return true
		}
	}
	return false
}

// reserve plans and holds a reservation for j if more allows; it reports
// whether another may follow (a hold was free).
func (d *deepReserver) reserve(s *Scheduler, leaf *queue.Leaf, j *job, r *Reason, mkey string, allow func(topology.HostID) bool, now time.Time) bool {
	if !d.more(s, leaf) {
		return false
	}
	res := d.plan(s, j, mkey, allow, now)
	if res == nil {
		return true
	}
	s.res.holdCapacity(j, res)
	jr := *r
	jr.Reserved = res.at
	s.cyc.explain(j, &jr)
	return true
}

// plan returns j's reservation around the earlier ones, or nil when j has
// no runtime estimate (its run cannot be placed in time), or fits only
// once jobs without an estimate end.
func (d *deepReserver) plan(s *Scheduler, j *job, mkey string, allow func(topology.HostID) bool, now time.Time) *reservation {
	if _, known := s.res.estimatedEnd(j, now); !known {
		return nil
	}
	sh := s.res.shadowLedger(s.ledger)
	prev := s.res.byJob[j]
	need := j.req.MinDemand().Milli
	req := s.cyc.request(j, allow)
	root := s.c.Root()
	var claims []topology.Claim
	var p *gang.Placement
	try := func(t time.Time) bool {
		d.holdEarlier(s, sh, j, t)
		if sh.FreeMilli(root) >= need && s.placer.Place(sh, req, &d.buf) == nil {
			p = d.buf.Clone()
			claims = p.Claims
		} else if prev != nil && prev.p != nil && !prev.forever && !t.Before(prev.at) && sh.Allocate(prev.claims...) == nil {
			// The last cycle's reservation is still free at its time: keep
			// it rather than let it move later.
			_ = sh.Release(prev.claims...)
			p, claims = prev.p, prev.claims
		}
		if p != nil {
			return true
		}
		_ = d.pieces.giveBack(sh)
		return false
	}
	// The candidate times: now, each distinct estimated end of a running
	// job (released from sh in order), and each earlier reservation's
	// estimated end (nothing to release: its pieces are simply no longer
	// held from then on).
	d.ends = d.ends[:0]
	for _, h := range s.res.holds {
		if h.res != nil && !h.res.forever && h.holder != j {
			if e, ok := s.res.estimatedEnd(h.holder, h.res.at); ok && e.After(now) {
				d.ends = append(d.ends, e)
			}
		}
	}
	slices.SortFunc(d.ends, time.Time.Compare)
	at, found := now, try(now)
	tryHoldEnds := func(before time.Time, all bool) bool {
		for len(d.ends) > 0 && (all || d.ends[0].Before(before)) {
			t := d.ends[0]
			d.ends = d.ends[1:]
			if try(t) {
				at = t
				return true
			}
		}
		return false
	}
	ends := endGroups{now: now}
	if !found {
		s.jobs.ascendEnds(func(h *job) bool {
			if !h.endKnown {
				return false
			}
			end, closes := ends.next(h.end, true)
			if closes {
				group := ends.end
				if found = try(group); found {
					at = group
					return false
				}
				// Only the ends after group: the state is as at group.
				for len(d.ends) > 0 && !d.ends[0].After(group) {
					d.ends = d.ends[1:]
				}
				if found = tryHoldEnds(end, false); found {
					return false
				}
			}
			_ = sh.Release(h.placement.Claims...)
			ends.join(end, true)
			return true
		})
	}
	if !found && ends.open {
		if found = try(ends.end); found {
			at = ends.end
		}
	}
	if !found {
		for len(d.ends) > 0 && ends.open && !d.ends[0].After(ends.end) {
			d.ends = d.ends[1:]
		}
		found = tryHoldEnds(time.Time{}, true)
	}
	if !found || sh.Allocate(claims...) != nil {
		s.res.recycle(sh)
		return nil
	}
	return &reservation{holder: j, built: now, at: at, claims: claims, p: p, shadow: sh, health: s.res.healthEpoch, mkey: mkey, commits: s.commits(), deep: true}
}

// holdEarlier holds in l, piece by piece (what is taken already stays
// taken), what the reservations held so far in this cycle need while j
// would run from t by its estimate; d.pieces lists what it took.
func (d *deepReserver) holdEarlier(s *Scheduler, l *topology.Ledger, j *job, t time.Time) {
	d.pieces.forget() // taken for good in a shadow that became a reservation, or given back
	end, _ := s.res.estimatedEnd(j, t)
	for _, h := range s.res.holds {
		if h.res == nil || h.holder == j || !h.res.at.Before(end) {
			continue
		}
		if hEnd, known := s.res.estimatedEnd(h.holder, h.res.at); !h.res.forever && known && !hEnd.After(t) {
			continue
		}
		holdReserved(l, h.res.claims, s.res.wholeHosts, &d.pieces)
	}
}
