package gpusched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// victimIndex is what the preemption planner sees of the holding jobs:
// each job's preempt.Job view, the roster that indexes them (built on the
// planner's first use), the jobs too fresh to be victims, the stops in
// progress, and the log of hosts where a job became a possible victim
// (for the PlanPreemptor's no-plan memos). The job transitions keep it in
// step through index, unindex and update; its methods are the only
// writers of its fields and of each job's vic part.
type victimIndex struct {
	// roster indexes the holding jobs for the planner; nil until a plan
	// asks. Invariant: j.vic.indexed iff j.vic.pj is in it.
	roster   *preempt.Roster
	noRoster bool // (tests) plan by visiting every holding job
	// fresh lists the jobs admitted in the last cycles, filed as stopping
	// until a later cycle; stopping the jobs being preempted or recovered
	// (their charges are commitments; j.vic.listed), pruned lazily.
	fresh    []*job
	stopping []*job
	// elig logs the hosts of jobs that became possible victims without a
	// release (admitted in an earlier cycle, priority changed), under its
	// own sequence.
	elig hostLog
	// stops counts the stops begun (preemptions asked, recoveries):
	// part of the planner's commitments (Scheduler.commits).
	stops uint64
}

// jobVictim is a holding job's filing in the victimIndex.
type jobVictim struct {
	pj         preempt.Job
	indexed    bool  // pj is in the roster
	listed     bool  // in victimIndex.stopping
	prio       int32 // the priority pj was last filed with
	preempting bool  // a preemption was asked; do not offer again
}

// view refreshes j's preempt.Job view at now (and its filing in the
// roster).
func (x *victimIndex) view(j *job, now time.Time) *preempt.Job {
	pj := &j.vic.pj
	pj.Spec, pj.Placement, pj.Started = &j.spec, j.placement, j.started
	pj.Checkpoint, pj.CheckpointInterval = j.rec.checkpoint, j.spec.CheckpointInterval
	pj.Preemptions, pj.Restarts, pj.Charge = j.preemptions, j.rec.restarts, j.charged
	pj.Grace = j.spec.Grace // its own grace period (bounded by Config.MaxGrace), 0: the planner's
	pj.Stopping = j.vic.preempting || j.rec.recovering || j.fresh(now) || j.growing() || j.ref.excludes(j)
	pj.End = time.Time{}
	if j.endKnown {
		pj.End = j.end
	}
	if x.roster != nil && j.vic.indexed {
		x.roster.Update(pj)
	}
	return pj
}

// fresh reports whether j was admitted in the cycle at now: it is not a
// victim before the next one.
func (j *job) fresh(now time.Time) bool {
	return j.state == queue.Admitted && !j.admitted.Before(now)
}

// index files a job that has just taken its placement (at now). A job
// admitted in a cycle is a candidate from the next on: refreshFresh
// files it again then.
func (x *victimIndex) index(j *job, now time.Time) {
	j.vic.prio = j.spec.Priority
	if j.fresh(now) {
		x.fresh = append(x.fresh, j)
	}
	if x.roster == nil || j.vic.indexed {
		return
	}
	x.file(j, now)
}

// file adds a holding job to the roster.
func (x *victimIndex) file(j *job, now time.Time) {
	if err := x.roster.Add(x.view(j, now)); err != nil {
		panic("gpusched: filing a holding job for preemption: " + err.Error())
	}
	j.vic.indexed = true
}

// buildRoster builds the roster on first use from the holding jobs, in
// order of estimated end.
func (x *victimIndex) buildRoster(t *jobTable, now time.Time) *preempt.Roster {
	if x.noRoster {
		return nil
	}
	if x.roster == nil {
		x.roster = preempt.NewRoster()
		t.ascendEnds(func(j *job) bool {
			if !j.vic.indexed {
				x.file(j, now)
			}
			return true
		})
	}
	return x.roster
}

// unindex forgets a job that released its placement.
func (x *victimIndex) unindex(j *job) {
	if j.vic.indexed {
		x.roster.Remove(&j.vic.pj)
		j.vic.indexed = false
	}
}

// update files a holding job again after a change (started, priority,
// being preempted or recovered).
func (x *victimIndex) update(j *job, now time.Time) {
	if (j.vic.preempting || j.rec.recovering) && !j.vic.listed {
		x.stopping = append(x.stopping, j)
		j.vic.listed = true
		x.stops++
	}
	if j.state.Holding() && j.vic.prio != j.spec.Priority {
		x.logElig(j) // it may have become a victim
		j.vic.prio = j.spec.Priority
	}
	if j.vic.indexed {
		x.view(j, now)
	}
}

// ask marks j as being preempted (it is not offered again).
func (x *victimIndex) ask(j *job, now time.Time) {
	j.vic.preempting = true
	x.update(j, now)
}

// refile files j again as a possible victim after its exclusion lapsed
// (a refused stop, refusals.go).
func (x *victimIndex) refile(j *job, now time.Time) {
	x.logElig(j)
	if j.vic.indexed {
		x.view(j, now)
	}
}

// stopped clears j's preemption mark: it released and waits again (or
// its stop was refused).
func (x *victimIndex) stopped(j *job) { j.vic.preempting = false }

// checkpointed notes j's new checkpoint in its view.
func (x *victimIndex) checkpointed(j *job, at time.Time) { j.vic.pj.Checkpoint = at }

// refreshFresh files again the jobs admitted in earlier cycles, now
// candidates.
func (x *victimIndex) refreshFresh(now time.Time) {
	keep := x.fresh[:0]
	for _, j := range x.fresh {
		switch {
		case !j.state.Holding():
		case j.fresh(now):
			keep = append(keep, j)
		default:
			x.logElig(j) // a possible victim from now on
			if j.vic.indexed {
				x.view(j, now)
			}
		}
	}
	clear(x.fresh[len(keep):])
	x.fresh = keep
}

// anyDue reports whether fn holds for a host of a job that the next
// cycle at now files again as a possible victim (refreshFresh logs it
// then): a read-only look ahead for verdicts read between cycles.
func (x *victimIndex) anyDue(now time.Time, fn func(h topology.HostID) bool) bool {
	for _, j := range x.fresh {
		if !j.state.Holding() || j.fresh(now) {
			continue
		}
		for _, h := range j.hosts {
			if fn(h) {
				return true
			}
		}
	}
	return false
}

// logElig notes that a job on j's hosts may have become a victim.
func (x *victimIndex) logElig(j *job) {
	for _, h := range j.hosts {
		x.elig.add(x.elig.next(), h)
	}
}

// stoppingJobs calls fn for every job still being preempted or
// recovered, pruning the others from the list.
func (x *victimIndex) stoppingJobs(fn func(*job)) {
	keep := x.stopping[:0]
	for _, j := range x.stopping {
		if j.state.Holding() && (j.vic.preempting || j.rec.recovering) {
			fn(j)
			keep = append(keep, j)
		} else {
			j.vic.listed = false
		}
	}
	clear(x.stopping[len(keep):])
	x.stopping = keep
}

// stoppingUnder returns a job being preempted or recovered that still
// holds a charge of dimension r below node (its stop lowers the usage
// there), or nil.
func (x *victimIndex) stoppingUnder(tree *queue.Tree, node queue.NodeID, r int) *job {
	for _, w := range x.stopping {
		if !w.state.Holding() || !w.vic.preempting && !w.rec.recovering || w.charged[r] <= 0 {
			continue
		}
		for id := w.leaf.ID(); id >= 0; id = tree.Parent(id) {
			if id == node {
				return w
			}
		}
	}
	return nil
}

// restoreFresh files j as admitted in the last cycle (RestoreFresh): the
// next cycle makes it a possible victim (refreshFresh).
func (x *victimIndex) restoreFresh(j *job) {
	if !slices.Contains(x.fresh, j) {
		x.fresh = append(x.fresh, j)
	}
}

// settleFresh ends, as of now, the freshness of the jobs filed as fresh
// that keep does not name and that were admitted before now: a restore
// files a holding job as fresh when its admission is the latest time
// restored so far, which a saved state's Fresh may say it was not (the
// original's cycle had made it a possible victim). As the original did
// then, it is viewed again; its hosts are not logged, as the verdicts
// restored after it carry what was logged (NoPlan.Eligible).
func (x *victimIndex) settleFresh(keep func(*job) bool, now time.Time) {
	out := x.fresh[:0]
	for _, j := range x.fresh {
		switch {
		case keep(j) || j.fresh(now):
			out = append(out, j)
		case j.vic.indexed:
			x.view(j, now)
		}
	}
	clear(x.fresh[len(out):])
	x.fresh = out
}
