package gpusched

import (
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
)

// RecoveryInFlight is a recovery the Scheduler issued (Decision.Recoveries)
// that the host has not yet carried out: ActionRequeue or ActionDrain
// until the job's Requeue or Preempted (a Requeue after ActionRequeue
// counts a restart: Config.MaxRestarts), ActionEnd until its Failed.
// Meanwhile the job is no possible victim and gets no other recovery.
type RecoveryInFlight struct {
	Job    string
	Action preempt.Action
}

// RecoveryState is what the recovery concern carries from cycle to cycle,
// as a saved state (package snapshot) holds it.
type RecoveryState struct {
	// Faults are the health changes noted since the last cycle
	// (SetGPUHealth, SetHostHealth, SetDomainHealth), in order: the next
	// cycle turns them into Decision.Recoveries. Those on hosts that left
	// the cluster are left out (nothing runs there).
	Faults []preempt.Fault
	// InFlight are the recoveries issued and not yet carried out.
	InFlight []RecoveryInFlight
}

// RecoveryState returns the faults noted since the last cycle and, of the
// jobs ids in that order, the recoveries in flight (copies). It only
// reads. O(faults + ids).
func (s *Scheduler) RecoveryState(ids []string) RecoveryState {
	var st RecoveryState
	c := s.c
	for _, f := range s.rec.faults {
		switch {
		case f.Host != topology.NoHost && c.Removed(f.Host):
		case f.GPU != topology.NoGPU && c.Removed(c.GPUHost(f.GPU)):
		default:
			st.Faults = append(st.Faults, f)
		}
	}
	for _, id := range ids {
		if j, ok := s.jobs.byID[id]; ok && j.state.Holding() && j.rec.recovering {
			st.InFlight = append(st.InFlight, RecoveryInFlight{Job: id, Action: j.rec.action})
		}
	}
	return st
}

// RestoreRecovery restores the recovery concern's state, after the jobs,
// the health and the hosts: st.Faults replace the faults noted since the
// last cycle (restoring the health noted one for every part that is not
// healthy, which the captured Scheduler may have planned already; a state
// that lists none drops them), each job of st.InFlight is being recovered
// with its action, as after the cycle that issued it. A fault must name
// exactly one GPU, host or domain of the cluster (one of a network domain
// whose hosts all left is dropped, as a live change drops it); a
// recovery in flight a holding job not already being recovered, with
// ActionRequeue, ActionDrain or ActionEnd. Errors name the entry;
// nothing changes on error.
func (s *Scheduler) RestoreRecovery(st RecoveryState) error {
	if err := s.mutating("RestoreRecovery", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	faults := make([]preempt.Fault, 0, len(st.Faults))
	for i, f := range st.Faults {
		if err := s.checkFault(f); err != nil {
			return fmt.Errorf("gpusched: RestoreRecovery: faults[%d]: %w", i, err)
		}
		if faultHolds(s.c, f) {
			faults = append(faults, f)
		}
	}
	js, _, err := s.inFlight(st.InFlight)
	if err != nil {
		return err
	}
	s.rec.restoreFaults(faults)
	for i, j := range js {
		s.rec.begin(j, st.InFlight[i].Action)
		s.victims.update(j, s.now)
	}
	return nil
}

// inFlight returns the jobs of the recoveries in flight in, checked as
// RestoreRecovery checks them, or the index of the first bad one and the
// error.
func (s *Scheduler) inFlight(in []RecoveryInFlight) ([]*job, int, error) {
	js := make([]*job, len(in))
	for i, r := range in {
		j, err := s.lookup(r.Job)
		if err != nil {
			return nil, i, err
		}
		switch {
		case r.Action != preempt.ActionRequeue && r.Action != preempt.ActionDrain && r.Action != preempt.ActionEnd:
			err = fmt.Errorf("%w: RestoreRecovery: action %s is not one in flight (requeue, drain or end)", ErrState, r.Action)
		case !j.state.Holding():
			err = fmt.Errorf("%w: RestoreRecovery: a %s job holds nothing to recover", ErrState, j.state)
		case j.rec.recovering || slices.Contains(js[:i], j):
			err = fmt.Errorf("%w: RestoreRecovery: recovered twice", ErrState)
		}
		if err != nil {
			return nil, i, jobErr(r.Job, err)
		}
		js[i] = j
	}
	return js, 0, nil
}

// checkFault checks a restored fault as the recovery plan will: exactly
// one target, within the cluster, a known health.
func (s *Scheduler) checkFault(f preempt.Fault) error {
	c, set := s.c, 0
	for _, on := range []bool{f.GPU != topology.NoGPU, f.Host != topology.NoHost, f.Domain != topology.NoDomain} {
		if on {
			set++
		}
	}
	switch {
	case set != 1:
		return fmt.Errorf("%d targets set (want exactly one of GPU, host and domain)", set)
	case f.Health > topology.Failed:
		return fmt.Errorf("unknown health %d", f.Health)
	case f.GPU != topology.NoGPU && (f.GPU < 0 || int(f.GPU) >= c.NumGPUs()):
		return fmt.Errorf("GPU %d out of range 0..%d", f.GPU, c.NumGPUs()-1)
	case f.Host != topology.NoHost && (f.Host < 0 || int(f.Host) >= c.NumHosts()):
		return fmt.Errorf("host %d out of range 0..%d", f.Host, c.NumHosts()-1)
	case f.Domain != topology.NoDomain && (f.Domain < 0 || int(f.Domain) >= c.NumDomains()):
		return fmt.Errorf("domain %d out of range 0..%d", f.Domain, c.NumDomains()-1)
	case f.Domain != topology.NoDomain && c.DomainKindOf(f.Domain) != topology.KindFabric && c.DomainKindOf(f.Domain) != topology.KindNetwork &&
		c.DomainKindOf(f.Domain) != topology.KindCluster:
		return fmt.Errorf("domain %s is a %s domain (want the cluster, a network or a fabric domain)", c.DomainName(f.Domain), c.DomainKindOf(f.Domain))
	}
	return nil
}

// saveRecovery fills st.Recovery (RecoveryState of st's jobs).
func (s *Scheduler) saveRecovery(st *State) { st.Recovery = s.RecoveryState(st.ids()) }

// restoreRecovery restores st.Recovery, after the health and the hosts
// (whose restore noted faults that these replace) and before what is
// computed from the jobs being stopped (reservations, the preemption
// verdicts): RestoreRecovery.
func (s *Scheduler) restoreRecovery(st *State) error {
	for i, r := range st.Recovery.InFlight {
		if err := st.hasJob(r.Job, "recovery.inFlight[%d].job", i); err != nil {
			return err
		}
	}
	for i, f := range st.Recovery.Faults {
		if err := s.checkFault(f); err != nil {
			return stateErr(err, "recovery.faults[%d]", i)
		}
	}
	if _, i, err := s.inFlight(st.Recovery.InFlight); err != nil {
		return stateErr(err, "recovery.inFlight[%d]", i)
	}
	if err := s.RestoreRecovery(st.Recovery); err != nil {
		return stateErr(err, "recovery")
	}
	return nil
}
