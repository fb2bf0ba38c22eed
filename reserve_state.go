package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// Reservation is a backfill reservation kept from the last cycle, as a
// saved state (package snapshot) holds it: the next cycle keeps it where
// it is while it stays valid (a reservation never moves later because of
// jobs that backfilled behind it), so a Scheduler restored without it may
// reserve another time and decide otherwise.
type Reservation struct {
	Job     string    // the blocked job holding it
	At      time.Time // the reserved start (zero when Forever)
	Forever bool      // reserved only once jobs without an estimate end
	// Tasks are the reserved claims per task group (as Restore's tasks).
	Tasks [][]topology.Claim
	// Current: the next cycle reuses the reservation's what-if ledger
	// as is unless the nominations, the health or the model filter
	// change (RestoreReservation rebuilds it from the live state);
	// otherwise it computes the reservation again, keeping At while that
	// is still free. Filter is the holder's model filter when it was
	// computed (opaque); Built when its what-if ledger was built (the
	// nominations are modelled as starting then).
	Current bool
	Filter  string
	Built   time.Time
	// Domain names the domain the reserved placement was made within
	// (as RestoredJob.Domain); empty means the whole cluster. A job
	// admitted on its reservation takes it: an elastic gang grows back
	// only within it.
	Domain string
}

// Reservations returns the backfill reservations kept from the last
// cycle: those held in it, in the order taken, then those kept on standby
// for jobs that still wait but held none in it (at most MaxReservations
// of each; a standby reservation delays no one until its job holds it
// again).
func (s *Scheduler) Reservations() []Reservation {
	rs := &s.res
	var out []Reservation
	for _, r := range rs.kept {
		j := r.holder
		if j == nil || rs.byJob[j] != r || !j.state.Waiting() {
			continue
		}
		out = append(out, Reservation{Job: j.spec.ID, At: r.at, Forever: r.forever, Tasks: reservedTasks(j, r.claims, r.p),
			Current: r.shadow != nil && r.health == rs.healthEpoch && r.commits == s.commits(), Filter: r.mkey, Built: r.built, Domain: s.domainOf(r.p)})
	}
	return out
}

// reservedTasks groups a reservation's claims per task group of j.
func reservedTasks(j *job, claims []topology.Claim, p *gang.Placement) [][]topology.Claim {
	out := make([][]topology.Claim, len(j.req.Groups))
	for i, cl := range claims {
		g := 0
		if p != nil && i < len(p.Tasks) {
			g = int(p.Tasks[i].Group)
		}
		c := cl
		c.GPUs = slices.Clone(cl.GPUs)
		out[g] = append(out[g], c)
	}
	return out
}

// RestoreReservation restores a kept reservation after the jobs and the
// nominations are restored (RestoreJob, RestoreNomination), in the order
// Reservations lists them: the job waits, and a current reservation's
// what-if ledger is rebuilt from the live state as it will be at At.
// Nothing changes on error.
func (s *Scheduler) RestoreReservation(r Reservation) error {
	if err := s.mutating("RestoreReservation", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(r.Job)
	if err != nil {
		return err
	}
	rs := &s.res
	if !j.state.Waiting() || rs.byJob[j] != nil {
		return jobErr(r.Job, fmt.Errorf("%w: RestoreReservation for a %s job, or one restored already", ErrState, j.state))
	}
	if rs.max <= 0 || len(rs.kept) >= 2*rs.max {
		return jobErr(r.Job, fmt.Errorf("%w: more reservations than twice Config.MaxReservations (held and standby)", ErrState))
	}
	if r.Forever != r.At.IsZero() {
		return jobErr(r.Job, fmt.Errorf("%w: a reservation has a time unless it is forever", ErrState))
	}
	p, err := s.placementOf(j, r.Tasks)
	if err != nil {
		return err
	}
	if err := s.placeWithin(p, "reservation", r.Domain, r.Tasks); err != nil {
		return err
	}
	res := &reservation{holder: j, built: r.Built, at: r.At, forever: r.Forever, claims: p.Claims, p: p, health: rs.healthEpoch, mkey: r.Filter, commits: s.commits()}
	if r.Current {
		if r.Built.IsZero() || (!r.Forever && r.At.Before(r.Built)) {
			return jobErr(r.Job, fmt.Errorf("%w: a current reservation has a build time, not after its time", ErrState))
		}
		if res.shadow = rs.rebuild(res, s.ledger, &s.jobs, &s.noms); res.shadow == nil {
			return jobErr(r.Job, fmt.Errorf("%w: the reserved claims are not free at the reserved time", ErrState))
		}
	}
	rs.byJob[j] = res
	rs.kept = append(rs.kept, res)
	return nil
}

// rebuild builds r's shadow from the live ledger as reserve leaves it: the
// nominations modelled, every job (and nominated job) estimated to end by
// r's time released (overdue ones ending when it was built), then r's claims allocated.
// It returns nil if they do not fit.
func (rs *reservations) rebuild(r *reservation, live *topology.Ledger, jobs *jobTable, noms *nominations) shadowState {
	now := r.built
	sh := rs.shadowLedger(live)
	by := func(end time.Time, known bool) bool {
		if !known {
			return r.forever
		}
		if end.Before(now) {
			end = now
		}
		return r.forever || !end.After(r.at)
	}
	rels, victims := noms.shadow(sh, now, rs.defaultRuntime)
	for _, n := range rels {
		if by(n.end, n.known) {
			_ = sh.Release(n.claims...)
		}
	}
	jobs.ascendEnds(func(h *job) bool {
		if len(victims) > 0 && h.vic.preempting && slices.Contains(victims, h) { // no victims: h.vic unread (a cache line per holder)
			return true
		}
		if by(h.end, h.endKnown) {
			_ = sh.Release(h.placement.Claims...)
		}
		return true
	})
	if sh.Allocate(r.claims...) != nil {
		rs.shadowPool = append(rs.shadowPool, sh)
		return nil
	}
	return sh
}

// saveReservations fills st.Reservations (Reservations).
func (s *Scheduler) saveReservations(st *State) { st.Reservations = s.Reservations() }

// restoreReservations restores st.Reservations last but for the
// verdicts: their what-if ledgers are rebuilt from the live state,
// health and cordons included (RestoreReservation).
func (s *Scheduler) restoreReservations(st *State) error {
	return restoreEach(st, "reservations", st.Reservations, func(r Reservation) string { return r.Job }, s.RestoreReservation)
}
