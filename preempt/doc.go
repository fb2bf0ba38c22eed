// Package preempt decides what to stop: which running jobs to preempt so
// that a pending gang can start, how to recover when GPUs, hosts or a ToR
// fail or are drained, and which jobs to move so that a gang blocked only
// by fragmentation fits. Everything is planned as data for the host to
// carry out; nothing here does I/O, starts goroutines or reads a clock
// (times are arguments), and the same state gives the same plan.
//
// # Preemption
//
//	s, _ := preempt.New(preempt.Config{})         // placer, grace, rules
//	state := preempt.NewState(ledger, queueTree)  // or any Snapshot
//	state.Add(&preempt.Job{Spec: &spec, Placement: p, Started: t, Checkpoint: c})
//	plan, why := s.Plan(state, &preempt.Pending{Request: r, Queue: "team-a", Priority: 100}, now)
//	if why != nil {
//		log.Print(why) // "job j: no plan (protected): needs 64 GPUs in one tor; best tor03 has 12 free + 40 evictable (12 short); …"
//	}
//	for _, v := range plan.Victims {
//		// SIGTERM v.Job (or v.Tasks of it), wait v.Grace for a checkpoint, release v.Claims
//	}
//	// then commit plan.Placement
//
// A job may be a victim of a pending job on one of three grounds (Ground):
// it has a lower priority (in the pending job's queue, or in any queue with
// Config.LowerPriority = AnyQueue, though a borrower never so takes another
// queue's guarantee); its queue borrows beyond its
// guarantee while the pending job's queue stays within its own (reclaim;
// only while the victim's queue still borrows); or, with
// Config.FairSharing, its queue borrows and keeps a fair-share standing at
// least the pending queue's once its victims are gone (Kueue's
// LessThanOrEqualToFinalShare rule, which cannot cycle: after the
// preemption the preemptor's queue is not better off than the preempted
// one, so the preempted one cannot preempt back). Never a job that is
// non-preemptible, inside its minimum run time, or at its preemption cap.
//
// Plans are gang-aware (a victim is a whole gang; only members of an
// elastic group above its minimum may stop alone, shrinking the gang) and
// topology-aware (a gang that must sit in one NVLink domain, host or ToR
// gets one domain cleared: the cheapest, found through the ledger's
// per-domain counters and a lower bound per domain). Cost is the GPU time
// lost since each victim's last checkpoint (its whole run when it has
// none), then the number of victims, then their priorities; a reprieve pass
// drops every victim that turns out unnecessary. See Search for the
// algorithm and its bounds.
//
// # Faults
//
// Recover turns failures and drains of GPUs, hosts or whole network
// domains into a RecoveryPlan: the health to set on the ledger (so failed
// parts stay out of placement until they are healthy again) and, for every
// affected job, what to do — requeue from its last checkpoint, stop after a
// grace period (drains), shrink an elastic gang, keep it running, or end it
// with a recorded reason — and the GPU time that costs. HealthProfile turns
// per-GPU error counters (ECC, Xid, NVLink) over a sliding window into a
// health verdict.
//
// # Defragmentation
//
// Defragment finds, for a gang blocked only by fragmentation, the cheapest
// running jobs to migrate (checkpoint, stop, restart elsewhere) so that it
// fits, with where each migrated job goes. A Snapshot whose jobs have
// host restrictions beyond their specs implements Restricted: each moved
// job (of Defragment and Consolidate) is placed with its own request, so
// no move lands where it may not run.
package preempt
