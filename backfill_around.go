package gpusched

import (
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// aroundPlacer is backfill placement around reservations
// (Config.BackfillAround), as Slurm's backfill places a job: when the
// placer's choice for a candidate would delay a reservation, the job is
// placed again on a scratch copy of the ledger in which every reservation
// the job would still be running at holds its GPUs, cores and memory, so
// the placer picks what those reservations do not need. The placement it
// finds still goes through the reservations' check (reservations.check),
// so a reservation is never delayed; with the option off nothing changes.
// Its methods are the only writers of its fields.
type aroundPlacer struct {
	on      bool
	scratch *topology.Ledger // the ledger with the reservations' claims held; reused
	held    pieces           // what they hold in scratch (never given back: scratch is copied afresh)
	buf     gang.Placement   // the placement found; valid until the next call
}

// place places j (starting now, with model filter allow) around the
// capacity reservations held in this cycle that it would overlap, or
// returns nil: the option is off, no reservation is in the way, or the
// job does not fit around them.
func (a *aroundPlacer) place(s *Scheduler, j *job, allow func(topology.HostID) bool, now time.Time) *gang.Placement {
	if !a.on {
		return nil
	}
	end, known := s.res.estimatedEnd(j, now)
	if a.scratch == nil || a.scratch.Cluster() != s.ledger.Cluster() {
		a.scratch = s.ledger.Clone()
	} else {
		a.scratch.CopyFrom(s.ledger)
	}
	held := false
	a.held.forget() // nothing to give back: scratch is copied afresh each call
	for _, h := range s.res.holds {
		if h.res == nil || (known && !h.res.forever && !end.After(h.res.at)) {
			continue
		}
		held = holdReserved(a.scratch, h.res.claims, s.res.wholeHosts, &a.held) || held
	}
	if !held || s.placer.Place(a.scratch, s.cyc.request(j, allow), &a.buf) != nil {
		return nil
	}
	return &a.buf
}
