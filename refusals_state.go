package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Refusal is a refused stop (EvictionRefused) as a saved state (package
// snapshot) holds it: the victim, the admission of the run whose stop was
// refused (Run), when the refusal lapses (Until), the host's reason, and
// the jobs whose plans it broke, in nomination order.
type Refusal struct {
	Victim  string
	Run     time.Time
	Until   time.Time
	Reason  string
	Blocked []string
}

// Refusals returns the refusals not yet lapsed, in the order refused
// (a copy). It only reads. O(refusals).
func (s *Scheduler) Refusals() []Refusal {
	var out []Refusal
	for _, j := range s.refused.list {
		if _, live := s.jobs.byID[j.spec.ID]; !live || j.ref.until.IsZero() {
			continue
		}
		out = append(out, Refusal{Victim: j.spec.ID, Run: j.ref.run, Until: j.ref.until, Reason: j.ref.reason, Blocked: slices.Clone(j.ref.blocked)})
	}
	return out
}

// RestoreRefusal restores one refusal, after the jobs and the nominations,
// in the order Refusals lists them: its victim is not chosen again until
// Until while it holds in run Run, as after EvictionRefused. The victim
// must be a live job not being preempted; Until and Run must be set (a
// Run other than the victim's admission restores a refusal that lapses
// at the next cycle, as the captured one would). Errors name the job; nothing changes
// on error.
func (s *Scheduler) RestoreRefusal(r Refusal) error {
	if err := s.mutating("RestoreRefusal", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(r.Victim)
	if err != nil {
		return err
	}
	switch {
	case r.Until.IsZero():
		return jobErr(r.Victim, fmt.Errorf("%w: RestoreRefusal: until: missing", ErrState))
	case r.Run.IsZero():
		return jobErr(r.Victim, fmt.Errorf("%w: RestoreRefusal: run: missing", ErrState))
	case !j.ref.until.IsZero():
		return jobErr(r.Victim, fmt.Errorf("%w: RestoreRefusal: refused twice", ErrState))
	case j.vic.preempting:
		return jobErr(r.Victim, fmt.Errorf("%w: RestoreRefusal: the victim is being preempted", ErrState))
	}
	s.refused.restore(j, r.Run, r.Until, r.Reason, slices.Clone(r.Blocked))
	s.victims.update(j, s.now) // its view: excluded while the refusal holds
	return nil
}

// saveRefusals fills st.Refusals (Refusals).
func (s *Scheduler) saveRefusals(st *State) { st.Refusals = s.Refusals() }

// restoreRefusals restores st.Refusals, after the nominations (a refusal
// dropped those that counted on its victim): RestoreRefusal.
func (s *Scheduler) restoreRefusals(st *State) error {
	for i, r := range st.Refusals {
		switch {
		case st.hasJob(r.Victim, "") != nil:
			return stateErr(fmt.Errorf("no job %q in the state", r.Victim), "refusals[%d].victim", i)
		case r.Run.IsZero():
			return stateErr(errors.New("missing: the admission of the run whose stop was refused"), "refusals[%d].run", i)
		case r.Until.IsZero():
			return stateErr(errors.New("missing: when the refusal lapses"), "refusals[%d].until", i)
		case r.Run.After(st.Now):
			return stateErr(fmt.Errorf("%s is after now", stamp(r.Run)), "refusals[%d].run", i)
		}
		if err := s.RestoreRefusal(r); err != nil {
			return stateErr(err, "refusals[%d]", i)
		}
	}
	return nil
}
