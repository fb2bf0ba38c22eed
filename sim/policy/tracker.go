package policy

import "time"

// Tracker is an Ordering that follows each job's runs: where a job runs
// and when it leaves. A policy that allocates time per GPU model, as
// Gavel does, needs both; the Ordering calls alone say neither (a job
// that starts and ends between two cycles is never listed running).
// The simulator calls Started when a job starts a run and Ended when it
// completes or fails, each once, in simulated-time order, before the
// next cycle's Enqueued and Running.
type Tracker interface {
	Ordering
	// Started says job started a run at now on GPUs of model (the model
	// of its first GPU; "" for a job without GPUs).
	Started(now time.Duration, job, model string)
	// Ended says job left at now: it completed or failed, and is never
	// listed again.
	Ended(now time.Duration, job string)
}
