package preempt

import (
	"time"

	"github.com/gpusched/gpusched/topology"
)

// Protection says why j may not be stopped, shrunk or moved at now,
// whatever the ground, and reports false when nothing protects it: it
// is already being stopped (ExclStopping), non-preemptible
// (ExclNonPreemptible), inside its minimum run time (ExclMinRunTime: a
// job not started yet is not protected by it) or at its preemption cap
// (ExclMaxPreemptions), checked in that order.
//
// It is the one rule of victim eligibility: Plan (classify), Defragment
// (classifyMove), Consolidate and the Roster's bulk counts apply it, and
// a scheduler's own quick pre-checks may (gpusched's PlanPreemptor does,
// on a view with Started zero: an optimistic test that ignores minimum
// run times).
func (j *Job) Protection(now time.Time) (Exclusion, bool) {
	switch {
	case j.Stopping:
		return ExclStopping, true
	case j.Spec.NonPreemptible:
		return ExclNonPreemptible, true
	case j.inMinRun(now):
		return ExclMinRunTime, true
	case j.capped():
		return ExclMaxPreemptions, true
	}
	return 0, false
}

// inMinRun reports whether j, started, has run for less than its
// minimum run time at now.
func (j *Job) inMinRun(now time.Time) bool {
	return !j.Started.IsZero() && j.Spec.MinRunTime > 0 && now.Sub(j.Started) < j.Spec.MinRunTime
}

// capped reports whether j was preempted as often as its cap allows.
func (j *Job) capped() bool {
	return j.Spec.MaxPreemptions > 0 && j.Preemptions >= j.Spec.MaxPreemptions
}

// moveExclusion says why j may not be moved at now (Defragment,
// Consolidate): a Protection, its migration cap, or a spec that does not
// resolve against c; false when it may.
func (s *Search) moveExclusion(j *Job, c *topology.Cluster, now time.Time) (Exclusion, bool) {
	if ex, ok := j.Protection(now); ok {
		return ex, true
	}
	if s.cfg.MaxMigrations > 0 && j.Migrations >= s.cfg.MaxMigrations {
		return ExclMaxMigrations, true
	}
	if _, err := j.request(c); err != nil {
		return ExclSpec, true
	}
	return 0, false
}
