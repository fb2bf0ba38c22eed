package gpusched

import "github.com/gpusched/gpusched/topology"

// saveHealth fills st.Health: the hosts, then the GPUs, that are not
// healthy, in ID order (removed hosts left out: the cluster says so).
func (s *Scheduler) saveHealth(st *State) {
	c := s.c
	for h := topology.HostID(0); int(h) < c.NumHosts(); h++ {
		if hh := s.ledger.HostHealth(h); !c.Removed(h) && hh != topology.Healthy {
			st.Health = append(st.Health, Unhealthy{Host: c.HostName(h), Health: hh})
		}
	}
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g++ {
		if gh := s.ledger.GPU(g).Health; !c.Removed(c.GPUHost(g)) && gh != topology.Healthy {
			st.Health = append(st.Health, Unhealthy{GPU: g, Health: gh})
		}
	}
}

// restoreHealth restores st.Health, after the jobs that hold resources
// there (their GPUs may have failed since): SetHostHealth, SetGPUHealth.
func (s *Scheduler) restoreHealth(st *State) error {
	for i, u := range st.Health {
		var err error
		switch {
		case u.Host != "":
			_, err = s.SetHostHealth(u.Host, u.Health)
		default:
			_, err = s.SetGPUHealth(u.GPU, u.Health)
		}
		if err != nil {
			return stateErr(err, "health[%d]", i)
		}
	}
	return nil
}
