package gpusched

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// HostFilter restricts the hosts a job may be placed on, beyond what its
// spec says: the host's own constraints on where a job may run (in
// Kubernetes, the pods' node selector, node affinity and tolerations of
// the nodes' taints, and nodes kube-scheduler rejected for it).
type HostFilter struct {
	// Key names the filter: jobs whose filters have the same Key and the
	// same shape share the Scheduler's cache of failed placements, so two
	// filters with one Key must allow the same hosts. Required.
	Key string
	// Allow reports whether the job may use host h. It must be a pure
	// function of h for as long as the filter is set (set it again when
	// what it allows changes). Required.
	Allow func(h topology.HostID) bool
}

// hostFilters is SetHostFilter's concern: the filters by job ID. A filter
// goes when SetHostFilter removes it, or with its job (swept lazily).
type hostFilters struct {
	byJob map[string]HostFilter
}

// SetHostFilter restricts where job id is placed from the next cycle on:
// every placement the Scheduler makes or plans for it (binding,
// reservation, backfill, preemption plan) uses only hosts f.Allow
// accepts, together with the job's model filters. A zero f removes the
// filter. Host filters are not part of the Scheduler's saved state: a
// host restoring one sets them again. It never changes a running job's
// placement.
func (s *Scheduler) SetHostFilter(id string, f HostFilter) error {
	if err := s.mutating("SetHostFilter", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("SetHostFilter", id); err != nil {
		return err
	}
	j, ok := s.jobs.byID[id]
	if !ok {
		return jobErr(id, ErrUnknownJob)
	}
	if (f.Allow == nil) != (f.Key == "") {
		return jobErr(id, fmt.Errorf("gpusched: SetHostFilter: a filter needs both Key and Allow"))
	}
	class := j.shape
	if f.Allow == nil {
		delete(s.hosts.byJob, id)
	} else {
		if s.hosts.byJob == nil {
			s.hosts.byJob = map[string]HostFilter{}
		}
		s.hosts.byJob[id] = f
		class += "#" + f.Key
	}
	// Jobs of one queue class share a cycle's placement failures: a
	// filtered job is of its own class (shape and filter).
	s.jobs.reclass(j, class)
	if n := len(s.hosts.byJob); n > 64 && n > 2*len(s.jobs.byID) {
		for jid := range s.hosts.byJob { // order does not matter: each entry on its own
			if _, ok := s.jobs.byID[jid]; !ok {
				delete(s.hosts.byJob, jid)
			}
		}
	}
	return nil
}

// apply narrows j's model choice ch by j's host filter, if it has one:
// its filters accept only hosts both accept, and its cache keys name the
// filter.
func (hf *hostFilters) apply(j *job, ch modelChoice) modelChoice {
	f, ok := hf.byJob[j.spec.ID]
	if !ok {
		return ch
	}
	ch.allow, ch.key = both(f.Allow, ch.allow), ch.key+"#"+f.Key
	if ch.guar != nil {
		ch.guar, ch.gkey = both(f.Allow, ch.guar), ch.gkey+"#"+f.Key
	}
	return ch
}

// both returns a filter accepting what a and b (nil: every host) accept.
func both(a, b func(topology.HostID) bool) func(topology.HostID) bool {
	if b == nil {
		return a
	}
	return func(h topology.HostID) bool { return a(h) && b(h) }
}
