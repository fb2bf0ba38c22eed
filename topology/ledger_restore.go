package topology

// TrialRestore re-applies claims that TrialRelease took back, ignoring
// health: the companion of TrialRelease for planners that ask "what if
// these jobs were gone?" on the ledger itself. Jobs keep what they hold
// on GPUs and hosts that became unhealthy (Allocate refuses those), so
// putting their claims back must not check health. Everything else is
// checked as Allocate checks it (capacity, CPU, memory, MIG slots), all or
// nothing, and an *AllocError says what failed; Generation does not
// advance. Use it only to restore what a trial released: it can put work
// on failed GPUs. Same cost as Allocate.
func (l *Ledger) TrialRestore(claims ...Claim) error {
	for ci := range claims {
		if err := l.applyClaim(ci, &claims[ci], false); err != nil {
			for j := ci - 1; j >= 0; j-- {
				l.undoClaim(&claims[j], len(claims[j].GPUs))
			}
			return err
		}
	}
	return nil
}

// Reinstate puts back claims that a what-if ledger released, for work
// that in fact still holds them: like TrialRestore it ignores health and
// cordons (a job keeps what it holds on a host cordoned or failed since),
// and like Allocate it advances Generation. All or nothing; an *AllocError
// says what failed. Same cost as Allocate.
func (l *Ledger) Reinstate(claims ...Claim) error {
	if err := l.TrialRestore(claims...); err != nil {
		return err
	}
	l.gen++
	return nil
}
