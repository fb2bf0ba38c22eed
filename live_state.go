package gpusched

import "github.com/gpusched/gpusched/topology"

// saveHosts fills st.Cordoned (in host order) and st.Leaving (Leaving).
func (s *Scheduler) saveHosts(st *State) {
	for h := topology.HostID(0); int(h) < s.c.NumHosts(); h++ {
		if !s.c.Removed(h) && s.ledger.HostCordoned(h) {
			st.Cordoned = append(st.Cordoned, s.c.HostName(h))
		}
	}
	st.Leaving = s.Leaving()
}

// restoreHosts restores the cordons (Cordon), then asks again for the
// hosts leaving or changing shape at the State's time (RemoveHosts,
// SetHostGPUs with the cluster's templates), after their health and
// cordons, which the asking keeps: an idle one goes at once.
func (s *Scheduler) restoreHosts(st *State) error {
	for i, name := range st.Cordoned {
		if err := s.Cordon(name); err != nil {
			return stateErr(err, "cordoned[%d]", i)
		}
	}
	for i, lh := range st.Leaving {
		var err error
		if lh.Template == "" {
			_, err = s.RemoveHosts([]string{lh.Name}, st.Now)
		} else {
			_, err = s.SetHostGPUs(lh.Name, lh.Template, nil, st.Now)
		}
		if err != nil {
			return stateErr(err, "leaving[%d]", i)
		}
	}
	return nil
}
