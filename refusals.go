package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultEvictionRetry is how long a victim whose stop the host reported
// refused (EvictionRefused) is not chosen again when
// Config.EvictionRetry is 0.
const DefaultEvictionRetry = 5 * time.Minute

// refusals is the concern of victims whose stop the host could not
// carry out: a Kubernetes host's Eviction API refused it because a
// PodDisruptionBudget forbids the disruption now, or any rule of the host
// forbade it. A refused victim keeps running and is no longer being
// preempted; the nominations that counted on it are dropped, so their jobs
// are planned again in the next cycle, and the planner does not choose
// the victim again (nor counts what it holds as free) until its refusal
// lapses: Config.EvictionRetry after the refusal, or as soon as the
// victim stops holding (it ended, or was requeued or preempted by the
// host). So a refusal never becomes a loop of evictions: a victim is
// asked to stop at most once per retry period. While a refusal is in
// force, the jobs whose plans it broke carry it in their pending reason
// (Decision.Pending). Snapshots carry the refusals in force (Refusals,
// RestoreRefusal in refusals_state.go).
//
// Its methods are the only writers of its fields and of each job's ref
// part.
type refusals struct {
	// list holds the refused victims in the order refused; a victim
	// leaves it when its refusal lapses (lapse).
	list []*job
	// count counts the refusals reported.
	count uint64
}

// jobRefusal is a job's part of the refusals: set while it is a refused
// victim.
type jobRefusal struct {
	until  time.Time // the refusal lapses then; zero: not refused
	run    time.Time // the admission of the run that was refused
	reason string    // as the host said it
	// blocked lists the jobs whose nominations counted on it, in
	// nomination order.
	blocked []string
}

// excludes reports whether j's refusal keeps it from being a victim: it
// was refused in its current run and the refusal has not lapsed (lapse
// clears it at the first cycle at or past until).
func (r *jobRefusal) excludes(j *job) bool {
	return !r.until.IsZero() && j.state.Holding() && j.admitted.Equal(r.run)
}

// refuse records that j's stop was refused, until until, breaking the
// plans of blocked.
func (r *refusals) refuse(j *job, until time.Time, reason string, blocked []string) {
	if j.ref.until.IsZero() {
		r.list = append(r.list, j)
	}
	j.ref = jobRefusal{until: until, run: j.admitted, reason: reason, blocked: blocked}
	r.count++
}

// lapse ends the refusals that lapsed by now (or whose victim stopped
// holding or runs again since), in order, calling fn for each victim
// still holding: it may be chosen again.
func (r *refusals) lapse(now time.Time, fn func(*job)) {
	keep := r.list[:0]
	for _, j := range r.list {
		if j.ref.excludes(j) && now.Before(j.ref.until) {
			keep = append(keep, j)
			continue
		}
		j.ref = jobRefusal{}
		if j.state.Holding() {
			fn(j)
		}
	}
	clear(r.list[len(keep):])
	r.list = keep
}

// annotate adds to the reasons of the pending jobs whose plans a refusal
// in force broke which victim was refused, why and until when (a copy:
// reasons are shared).
func (r *refusals) annotate(pending []Pending) {
	if len(r.list) == 0 {
		return
	}
	notes := map[string][]string{}
	for _, v := range r.list {
		if !v.ref.excludes(v) {
			continue
		}
		n := fmt.Sprintf("eviction of %s refused (%s); not a victim again before %s", v.spec.ID, v.ref.reason, v.ref.until.UTC().Format(time.RFC3339))
		for _, b := range v.ref.blocked {
			notes[b] = append(notes[b], n)
		}
	}
	if len(notes) == 0 {
		return
	}
	for i := range pending {
		n, ok := notes[pending[i].Job]
		if !ok || pending[i].Reason == nil {
			continue
		}
		rr := *pending[i].Reason
		if rr.Detail != "" {
			rr.Detail += "; "
		}
		rr.Detail += "(" + strings.Join(n, "; ") + ")"
		pending[i].Reason = &rr
	}
}

// EvictionRefused reports that the host could not stop victim, a job a
// Decision's Preemptions asked to stop, because something outside the
// Scheduler forbids it now (reason, e.g. a Kubernetes
// PodDisruptionBudget's refusal). The victim keeps running and is no
// longer being preempted. Every nomination that counted on it is dropped:
// its job is planned again in the next cycle, without this victim (the
// other victims of the dropped plan still stop, and what they free is
// free). The planner does not choose the victim again until
// Config.EvictionRetry (DefaultEvictionRetry when 0) has passed since the
// refusal, or the victim stops holding; meanwhile a job whose plan it
// broke and that still waits says so in its Decision.Pending reason. A
// job with no other plan therefore waits with that reason, and the victim
// is asked again at most once per retry period: never a loop of
// evictions.
//
// It fails with ErrUnknownJob, with ErrState when victim is not being
// preempted (no Preemption asked for it, or it already stopped), and with
// ErrTimeBackwards.
func (s *Scheduler) EvictionRefused(victim string, now time.Time, reason string) error {
	if err := s.mutating("EvictionRefused", victim); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("EvictionRefused", victim); err != nil {
		return err
	}
	now, err := s.eventAt("EvictionRefused", victim, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(victim)
	if err != nil {
		return err
	}
	if !j.state.Holding() || !j.vic.preempting {
		return jobErr(victim, fmt.Errorf("%w: EvictionRefused for a %s job not being preempted", ErrState, j.state))
	}
	var blocked []string
	for _, n := range s.noms.list {
		if n.job.nom.nominated != n || !slices.Contains(n.victims, j) {
			continue
		}
		blocked = append(blocked, n.job.spec.ID)
		s.noms.stopWaiting(n.job)
		s.dropNomination(n)
	}
	retry := s.cfg.EvictionRetry
	if retry <= 0 {
		retry = DefaultEvictionRetry
	}
	s.refused.refuse(j, now.Add(retry), reason, blocked)
	s.victims.stopped(j)
	s.victims.update(j, now) // its view: not being preempted, excluded
	return nil
}

// lapseRefusals makes the refused victims whose refusal lapsed by now
// possible victims again.
func (s *Scheduler) lapseRefusals(now time.Time) {
	s.refused.lapse(now, func(j *job) { s.victims.refile(j, now) })
}

// restore records a saved refusal of j.
func (r *refusals) restore(j *job, run, until time.Time, reason string, blocked []string) {
	r.list = append(r.list, j)
	j.ref = jobRefusal{until: until, run: run, reason: reason, blocked: blocked}
	r.count++
}
