package topology

// Trial allocations for what-if planning. A planner that places a gang task
// by task on the ledger itself (so that each query sees the tasks placed so
// far) and then takes everything back should not make the ledger look
// changed to callers that cache answers by Generation: a failed or
// tentative plan changes nothing.

// TrialAllocate is Allocate for tentative placement: it applies claims all
// or nothing and returns the same errors, but does not advance Generation.
// HostGeneration does advance on every host touched, so per-host caches stay
// sound. Every successful TrialAllocate must be undone by TrialRelease of
// the same claims before the ledger is handed to anyone else; until then
// Generation does not describe the state. Same cost as Allocate.
func (l *Ledger) TrialAllocate(claims ...Claim) error {
	g := l.gen
	err := l.Allocate(claims...)
	l.gen = g
	return err
}

// TrialRelease undoes a TrialAllocate: it releases claims like Release but
// does not advance Generation. Claims may be released in any grouping, but
// all of a trial must be released for the state to match its Generation
// again.
func (l *Ledger) TrialRelease(claims ...Claim) error {
	g := l.gen
	err := l.Release(claims...)
	l.gen = g
	return err
}
