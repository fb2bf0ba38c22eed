package gpusched

import (
	"fmt"
	"slices"
)

// Stopping returns, of the jobs ids in that order, those asked to stop
// (a Decision's Preemptions, Shrinks or Migrations, or RestoreNomination)
// that still hold resources: being preempted, they are no victims again
// and their stop is a commitment. A victim whose nomination was dropped
// (EvictionRefused of another victim of the plan, a nomination dropped
// otherwise) is still stopping, and only this says so: a saved state
// (package snapshot) keeps it. It only reads. O(ids).
func (s *Scheduler) Stopping(ids []string) []string {
	var out []string
	for _, id := range ids {
		if j, ok := s.jobs.byID[id]; ok && j.state.Holding() && j.vic.preempting {
			out = append(out, id)
		}
	}
	return out
}

// RestoreStopping marks holding job id as asked to stop, as a
// Decision's Preemptions does, after the nominations, resizes and
// migrations (which mark their own victims): nothing changes for a job
// already marked. It fails with ErrUnknownJob, and with ErrState for a
// job that holds nothing.
func (s *Scheduler) RestoreStopping(id string) error {
	if err := s.mutating("RestoreStopping", id); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.state.Holding() {
		return jobErr(id, fmt.Errorf("%w: RestoreStopping: a %s job holds nothing to stop", ErrState, j.state))
	}
	if !j.vic.preempting {
		s.victims.ask(j, s.now)
	}
	return nil
}

// Fresh returns, of the jobs ids in that order, the holding jobs admitted
// in the last cycle (or since a restore marked them so) that are not yet
// possible victims: the next cycle makes them so, which ends the
// PlanPreemptor's verdicts that they could change (NoPlans). A saved
// state (package snapshot) keeps them. It only reads. O(fresh + ids).
func (s *Scheduler) Fresh(ids []string) []string {
	in := make(map[string]bool, len(s.victims.fresh))
	for _, j := range s.victims.fresh {
		if j.state.Holding() {
			in[j.spec.ID] = true
		}
	}
	var out []string
	for _, id := range ids {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

// RestoreFresh marks holding job id as admitted in the last cycle (Fresh),
// after the jobs are restored: the next cycle files it as a possible
// victim anew. It fails with ErrUnknownJob, and with ErrState for a job
// that holds nothing.
func (s *Scheduler) RestoreFresh(id string) error {
	if err := s.mutating("RestoreFresh", id); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.state.Holding() {
		return jobErr(id, fmt.Errorf("%w: RestoreFresh: a %s job holds nothing", ErrState, j.state))
	}
	s.victims.restoreFresh(j)
	return nil
}

// saveStopping fills st.Stopping with the victims asked to stop that
// no nomination, migration or shrink of st names (they mark their own),
// and st.Fresh (Stopping, Fresh of st's jobs).
func (s *Scheduler) saveStopping(st *State) {
	named := map[string]bool{}
	for _, n := range st.Nominations {
		for _, v := range n.Victims {
			named[v] = true
		}
	}
	for _, m := range st.Defrag.Moving {
		named[m.Job] = true
	}
	for _, r := range st.Resizes {
		if r.Shrink != nil {
			named[r.Job] = true
		}
	}
	ids := st.ids()
	st.Fresh = s.Fresh(ids)
	for _, id := range s.Stopping(ids) {
		if !named[id] {
			st.Stopping = append(st.Stopping, id)
		}
	}
}

// restoreStopping restores st.Stopping, after the nominations, resizes
// and migrations (RestoreStopping), then st.Fresh (RestoreFresh).
func (s *Scheduler) restoreStopping(st *State) error {
	id := func(id string) string { return id }
	if err := restoreEach(st, "stopping", st.Stopping, id, s.RestoreStopping); err != nil {
		return err
	}
	if err := restoreEach(st, "fresh", st.Fresh, id, s.RestoreFresh); err != nil {
		return err
	}
	// The other holding jobs were made possible victims by the original.
	s.victims.settleFresh(func(j *job) bool { return slices.Contains(st.Fresh, j.spec.ID) }, st.Now)
	return nil
}
