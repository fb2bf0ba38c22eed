package gpusched

import "fmt"

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
