package gpusched

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// RestoredJob is one live job as a host's records, or a saved state
// (package snapshot), hold it: everything a Scheduler carries about it
// from cycle to cycle.
type RestoredJob struct {
	Spec workload.Job
	// State is Pending, Requeued or Preempted for a waiting job, Admitted
	// or Running for one that holds Tasks.
	State queue.State
	// Tasks are, for a holding job, the claims of each task per task group
	// (see Restore); nil for a waiting job.
	Tasks [][]topology.Claim
	// Submitted is when it entered its queue; Admitted when it was bound
	// (holding jobs; zero means Submitted), the start of its admission
	// clock (Config.AdmitTimeout); Started when it last started (running
	// jobs only).
	Submitted, Admitted, Started time.Time
	// Now is the time of the records: no time above may be after it.
	// Required.
	Now time.Time
	// Preemptions and Restarts count how often it was preempted, and
	// stopped by failures (JobStatus); Progress is the work its earlier
	// runs saved by checkpoints (Scheduler.Progress).
	Preemptions, Restarts int
	Progress              time.Duration
	// Checkpoint is a running job's last checkpoint reported
	// (Checkpointed) in its current run: zero for none, else between
	// Started and Now. Restored, it is authoritative; State leaves out
	// the estimate Scheduler.Progress makes from the CheckpointInterval
	// for a run that reported none, which the restored Scheduler makes
	// again as time goes on.
	Checkpoint time.Time
	// Domain names the domain a holding job's placement was made within
	// (gang.Placement's Domain, as JobStatus.Placement has it); empty
	// means the whole cluster. An elastic gang grows back only within it.
	Domain string
}

// RestoreJob records a live job from a host's records: a waiting job
// queued as Submit would (in its state, with its counts and progress), or
// a holding job on its claims as Restore does, with its admission time.
// Its times are checked against r.Now — a start or admission in the
// future, or before its submission, is a *workload.FieldError naming the
// job and the field — and so are its counts; the rest is checked as
// Submit and Restore check it. Nothing changes on error. Restore jobs in
// order of submission.
func (s *Scheduler) RestoreJob(r RestoredJob) error {
	if err := s.mutating("RestoreJob", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	id := r.Spec.ID
	bad := func(field, format string, args ...any) error {
		return &workload.FieldError{Job: id, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Now.IsZero():
		return bad("now", "missing: the time of the records")
	case r.Preemptions < 0:
		return bad("preemptions", "negative count %d", r.Preemptions)
	case r.Restarts < 0:
		return bad("restarts", "negative count %d", r.Restarts)
	case r.Progress < 0:
		return bad("progress", "negative progress %v", r.Progress)
	}
	admitted := r.Admitted
	if admitted.IsZero() {
		admitted = r.Submitted
	}
	if err := checkTimes(id, r.State, r.Submitted, admitted, r.Started, r.Now); err != nil {
		return err
	}
	if !r.Checkpoint.IsZero() {
		switch {
		case r.State != queue.Running:
			return bad("checkpoint", "a %s job has no checkpoint in a current run", r.State)
		case r.Checkpoint.Before(r.Started) || r.Checkpoint.After(r.Now):
			return bad("checkpoint", "%s is outside its run (%s..%s)", stamp(r.Checkpoint), stamp(r.Started), stamp(r.Now))
		}
	}
	if r.Domain != "" && r.State != queue.Admitted && r.State != queue.Running {
		return bad("domain", "%q is not a placement domain of a holding job", r.Domain)
	}
	lv, dom, msg := s.domainWithin(r.Domain, r.Tasks)
	if msg != "" {
		return bad("domain", "%s", msg)
	}
	set := func(j *job) {
		j.preemptions = r.Preemptions
		s.rec.restored(j, r.Progress, r.Restarts)
		if !r.Checkpoint.IsZero() {
			s.rec.checkpointed(j, r.Checkpoint)
		}
	}
	switch r.State {
	case queue.Admitted, queue.Running:
		if err := s.restoreHolding(r.Spec, r.Tasks, r.State, r.Submitted, admitted, r.Started, set); err != nil {
			return err
		}
		s.jobs.placedWithin(s.jobs.byID[id], lv, dom)
		return nil
	case queue.Pending, queue.Requeued, queue.Preempted:
		if len(r.Tasks) > 0 {
			return bad("tasks", "a %s job holds no claims", r.State)
		}
		s.advance(r.Submitted)
		j, err := s.newJob(r.Spec, r.Submitted)
		if err != nil {
			return err
		}
		// No ErrNeverFits check, unlike Submit: a job can wait that no
		// longer fits (a quota lowered, a host reshaped after it came),
		// and the Scheduler that had it keeps it waiting, saying why; so
		// does the restored one (TestRestoreKeepsJobThatNoLongerFits).
		s.jobs.add(j)
		j.state = r.State
		set(j)
		if r.State != queue.Pending {
			// It waits again after a stop: with the runtime estimate a
			// stop leaves it (less its progress), as the queue orders
			// and backfills it.
			j.entry.Runtime = j.waitingRuntime()
		}
		j.leaf.Add(&j.entry)
		return nil
	}
	return bad("state", "unknown state %s", r.State)
}

// checkTimes checks a restored job's times: submitted set, a running
// job's start set and not before submitted, an admission not before
// submitted; with now set, none of them after now.
func checkTimes(id string, st queue.State, submitted, admitted, started, now time.Time) error {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	bad := func(field, format string, args ...any) error {
		return &workload.FieldError{Job: id, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case submitted.IsZero():
		return bad("submitted", "missing submission time")
	case !now.IsZero() && submitted.After(now):
		return bad("submitted", "%s is after now (%s): the job was not submitted yet", at(submitted), at(now))
	}
	if st.Holding() {
		switch {
		case admitted.Before(submitted):
			return bad("admitted", "%s is before the job was submitted (%s)", at(admitted), at(submitted))
		case !now.IsZero() && admitted.After(now):
			return bad("admitted", "%s is after now (%s): the job was not admitted yet", at(admitted), at(now))
		}
	}
	if st == queue.Running {
		switch {
		case started.IsZero():
			return bad("started", "a running job needs its start time")
		case started.Before(submitted):
			return bad("started", "%s is before the job was submitted (%s)", at(started), at(submitted))
		case !now.IsZero() && started.After(now):
			return bad("started", "%s is after now (%s): the job has not started yet", at(started), at(now))
		}
	}
	return nil
}

// RestoreQueueUsage sets the decayed Fair Tree usage of a queue (by name;
// "" is the root) from a host's records or a saved state: the history its
// queue order depends on (queue.TreeReader's FairTreeUsage reads it).
// Call it after restoring the jobs.
func (s *Scheduler) RestoreQueueUsage(name string, u fairshare.Usage) error {
	if err := s.mutating("RestoreQueueUsage", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	id := queue.NodeID(0)
	if name != "" {
		var ok bool
		if id, ok = s.tree.Lookup(name); !ok {
			return fmt.Errorf("%w: no queue named %q", ErrUnknownQueue, name)
		}
	}
	return s.tree.RestoreUsage(id, u)
}

// saveJobs fills st.Jobs: every live job in order of submission, as
// RestoreJob takes it.
func (s *Scheduler) saveJobs(st *State) {
	js := make([]*job, 0, len(s.jobs.byID))
	for _, j := range s.jobs.byID {
		js = append(js, j)
	}
	slices.SortFunc(js, func(a, b *job) int {
		if c := a.entry.Submitted.Compare(b.entry.Submitted); c != 0 {
			return c
		}
		return cmp.Compare(a.entry.Seq, b.entry.Seq)
	})
	st.Jobs = make([]RestoredJob, 0, len(js))
	for _, j := range js {
		r := RestoredJob{Spec: j.spec.Clone(), State: j.state, Submitted: j.entry.Submitted, Now: st.Now,
			Preemptions: j.preemptions, Restarts: j.rec.restarts, Progress: j.rec.progress}
		if j.state.Holding() {
			r.Tasks, r.Admitted, r.Domain = claimsPerGroup(j.placement, len(j.req.Groups)), j.admitted, s.domainOf(j.placement)
		}
		if j.state == queue.Running {
			r.Started, r.Checkpoint = j.started, reportedCheckpoint(j)
		}
		st.Jobs = append(st.Jobs, r)
	}
}

// restoredFields are the fields RestoreJob names in its errors that are
// fields of RestoredJob too.
var restoredFields = map[string]bool{"domain": true, "submitted": true, "admitted": true, "started": true, "preemptions": true, "restarts": true, "progress": true, "checkpoint": true}

// restoreJobs restores st.Jobs in order of submission (a stable sort:
// jobs submitted at the same time in the State's order), each at the
// State's time.
func (s *Scheduler) restoreJobs(st *State) error {
	order := make([]int, len(st.Jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return st.Jobs[a].Submitted.Compare(st.Jobs[b].Submitted) })
	for _, i := range order {
		r := st.Jobs[i]
		r.Now = st.Now
		if err := s.RestoreJob(r); err != nil {
			var we *workload.FieldError
			if errors.As(err, &we) && restoredFields[we.Field] {
				return stateErr(errors.New(we.Msg), "jobs[%d].%s", i, we.Field)
			}
			return stateErr(err, "jobs[%d]", i)
		}
	}
	return nil
}

// saveUsage fills st.Usage: under Fair Tree, every queue's decayed usage
// that is not zero, root first.
func (s *Scheduler) saveUsage(st *State) {
	t := s.tree.ReadOnly()
	if t.Fairness().Policy != queue.FairTree {
		return
	}
	for id := queue.NodeID(0); int(id) < t.NumNodes(); id++ {
		if u := t.FairTreeUsage(id); u.Value != 0 || !u.At.IsZero() {
			name := t.Name(id)
			if id == 0 {
				name = "" // the root
			}
			st.Usage = append(st.Usage, QueueUsage{Queue: name, Usage: u})
		}
	}
}

// restoreUsage restores st.Usage (RestoreQueueUsage).
func (s *Scheduler) restoreUsage(st *State) error {
	for i, u := range st.Usage {
		if err := s.RestoreQueueUsage(u.Queue, u.Usage); err != nil {
			return stateErr(err, "usage[%d]", i)
		}
	}
	return nil
}
