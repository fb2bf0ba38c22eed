package gpusched

import "github.com/gpusched/gpusched/topology"

// pieces is a hold on a ledger taken claim by claim, so that exactly what
// was taken is given back: the one hold-and-release type of the
// nominations (their placements while the victims stop), the migrations'
// destinations (defragger), and the reservations a job is planned around
// (holdReserved: backfill around reservations, deep reservations).
// Holds on the live ledger within a cycle are trial holds (trialTake,
// trialGiveBack: no generation change); holds on scratch and what-if
// ledgers are allocations (take, giveBack). The owner of a pieces value
// is its only writer.
type pieces []topology.Claim

// take allocates c in l and records it; it reports whether c was free.
func (p *pieces) take(l *topology.Ledger, c topology.Claim) bool {
	if l.Allocate(c) != nil {
		return false
	}
	*p = append(*p, c)
	return true
}

// trialTake is take by a trial allocation.
func (p *pieces) trialTake(l *topology.Ledger, c topology.Claim) bool {
	if l.TrialAllocate(c) != nil {
		return false
	}
	*p = append(*p, c)
	return true
}

// giveBack releases in l everything taken, and empties p.
func (p *pieces) giveBack(l *topology.Ledger) error {
	if len(*p) == 0 {
		return nil
	}
	err := l.Release(*p...)
	p.forget()
	return err
}

// trialGiveBack is giveBack for trial holds.
func (p *pieces) trialGiveBack(l *topology.Ledger) error {
	if len(*p) == 0 {
		return nil
	}
	err := l.TrialRelease(*p...)
	p.forget()
	return err
}

// forget empties p without giving anything back (what was taken stays
// taken, or its ledger is discarded).
func (p *pieces) forget() {
	clear(*p)
	*p = (*p)[:0]
}
