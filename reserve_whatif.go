package gpusched

import "github.com/gpusched/gpusched/topology"

// shadowState is a reservation's shadow, the ledger as it will be at the
// reserved time, which later jobs' claims are checked against
// (reservations.check): a topology.Occupancy for the reservations reserve
// computes, a Ledger for the deep reserver's and restored ones (their
// planners need the ledger's queries). Both decide Allocate and Release
// alike.
type shadowState interface {
	Allocate(claims ...topology.Claim) error
	Release(claims ...topology.Claim) error
}

// whatIfLedger is what nominations.shadow changes: a shadow Ledger, or
// the whatIf on the live one.
type whatIfLedger interface {
	shadowState
	TrialRestore(claims ...topology.Claim) error
}

// whatIf is reserve's what-if on the live ledger: the changes of a
// reservation's search (nominations modelled, running jobs released at
// their estimated ends, claims put back, the reservation taken) are made
// on the live ledger itself, each recorded, and rollback takes them all
// back in reverse order, so that no copy of the ledger is made (a Clone
// at 100k GPUs copies about 5.7 MB; reserve keeps an Occupancy tracking
// the state it found instead, which rollback's changes give their hosts'
// states to). Every change advances the ledger's
// Generation and host stamps as any change does, so caches keyed by them
// stay sound; after rollback the ledger holds exactly what it held before
// (TestPropertyWhatIfRollback), with newer stamps. Its methods are the
// only writers of its fields.
type whatIf struct {
	l   *topology.Ledger
	ops []whatIfOp
}

// whatIfOp is one recorded change: claims released (undone by Reinstate)
// or taken (undone by Release).
type whatIfOp struct {
	claims   []topology.Claim
	released bool
}

// begin starts a what-if on l (the last one was rolled back).
func (w *whatIf) begin(l *topology.Ledger) *whatIf {
	w.l, w.ops = l, w.ops[:0]
	return w
}

// record notes a change that succeeded.
func (w *whatIf) record(err error, claims []topology.Claim, released bool) error {
	if err == nil {
		w.ops = append(w.ops, whatIfOp{claims: claims, released: released})
	}
	return err
}

// Allocate is Ledger.Allocate, recorded.
func (w *whatIf) Allocate(claims ...topology.Claim) error {
	return w.record(w.l.Allocate(claims...), claims, false)
}

// Release is Ledger.Release, recorded.
func (w *whatIf) Release(claims ...topology.Claim) error {
	return w.record(w.l.Release(claims...), claims, true)
}

// Reinstate is Ledger.Reinstate, recorded.
func (w *whatIf) Reinstate(claims ...topology.Claim) error {
	return w.record(w.l.Reinstate(claims...), claims, false)
}

// TrialRestore puts back claims ignoring health, as Ledger.TrialRestore
// does, but advances Generation (Ledger.Reinstate): the live ledger's
// Generation always describes its state. Recorded.
func (w *whatIf) TrialRestore(claims ...topology.Claim) error {
	return w.Reinstate(claims...)
}

// rollback takes back every recorded change, newest first. Each undoes
// exactly what succeeded (a release is re-taken ignoring health and
// cordons, as the work holding it still does), so none can fail on a
// consistent ledger; a failure is a ledger bug and panics, like the
// ledger's own rollback.
func (w *whatIf) rollback() {
	for i := len(w.ops) - 1; i >= 0; i-- {
		op := w.ops[i]
		var err error
		if op.released {
			err = w.l.Reinstate(op.claims...)
		} else {
			err = w.l.Release(op.claims...)
		}
		if err != nil {
			panic("gpusched: reservation what-if rollback failed: " + err.Error())
		}
	}
	clear(w.ops)
	w.ops = w.ops[:0]
}

// occupancy returns an Occupancy holding l's occupancy now, pooled when
// one is free. It tracks l (Occupancy.Track): nothing is copied now, and
// each host is copied when the shadow or l first changes it — a
// reservation's shadow reads the few hosts of the claims checked against
// it, where a copy of every GPU's state (0.8 MB at 100k GPUs) was a
// twentieth of a cold 100k-GPU cycle with four reservations.
func (rs *reservations) occupancy(l *topology.Ledger) *topology.Occupancy {
	o, ok := popPooled(&rs.occPool)
	if !ok {
		o = new(topology.Occupancy)
	}
	o.Track(l)
	return o
}

// popPooled takes the last shadow of a pool, if there is one.
func popPooled[T any](pool *[]T) (T, bool) {
	var x T
	n := len(*pool)
	if n == 0 {
		return x, false
	}
	x = (*pool)[n-1]
	*pool = (*pool)[:n-1]
	return x, true
}

// recycleShadow takes back a shadow no reservation keeps, for reuse.
func (rs *reservations) recycleShadow(sh shadowState) {
	switch x := sh.(type) {
	case *topology.Ledger:
		rs.shadowPool = append(rs.shadowPool, x)
	case *topology.Occupancy:
		x.Forget() // the live ledger no longer keeps hosts for it
		rs.occPool = append(rs.occPool, x)
	}
}
