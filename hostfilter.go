package gpusched

import (
	"fmt"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/topology"
)

// HostFilter restricts the hosts a job may be placed on, beyond what its
// spec says: the host's own constraints on where a job may run (in
// Kubernetes, the pods' node selector, node affinity and tolerations of
// the nodes' taints, and nodes kube-scheduler rejected for it), for the
// whole job (Allow) and for each of its task groups (Group: members of
// one gang whose constraints differ).
type HostFilter struct {
	// Key names the filter: jobs whose filters have the same Key and the
	// same shape share the Scheduler's cache of failed placements, so two
	// filters with one Key must allow the same hosts (to each group).
	// Required.
	Key string
	// Allow reports whether the job may use host h. It must be a pure
	// function of h for as long as the filter is set (set it again when
	// what it allows changes). nil: every host (Group must be set).
	Allow func(h topology.HostID) bool
	// Group, if non-nil, restricts each task group further: a task of
	// group g (its index in the job's TaskGroups) may use host h only if
	// Group(g, h) (and Allow(h)). A pure function of (g, h) as Allow is.
	// Each group is placed on its own hosts, all or nothing as ever: a
	// gang whose groups' hosts are disjoint is placed (groupfilter.go).
	Group func(g int, h topology.HostID) bool
}

// hostFilters is SetHostFilter's concern: the filters by job ID, and the
// task groups of those with a Group restriction (groups,
// groupfilter.go). A filter goes when SetHostFilter removes it, or with
// its job (swept lazily). Invariant: a filter applies only to the job it
// was set for (jobFilter.j), never to a job submitted again under its ID.
type hostFilters struct {
	byJob  map[string]jobFilter
	groups groupFilters
}

// jobFilter is one job's filter, and the request the job is placed with
// when a plan moves it while it runs (moveRequest).
type jobFilter struct {
	HostFilter
	// j is the job the filter was set for; move is j's request with the
	// filter (AllowHost, and its groups' when Group is set), built once
	// (j.req does not change once the job is submitted).
	j    *job
	move *gang.Request
}

// SetHostFilter restricts where job id is placed from the next cycle on:
// every placement the Scheduler makes or plans for it (binding,
// reservation, backfill, preemption and defragmentation plans) uses only
// hosts f.Allow accepts, each task group's tasks only hosts f.Group
// accepts for it, together with the job's model filters. A zero f
// removes the filter; a filter replaces the one before (Allow and Group
// both). Host filters are not part of the Scheduler's saved state: a
// host restoring one sets them again. It never changes a running job's
// placement; the running job's later re-placements honour it too: the
// destinations defragmentation and consolidation plans move it to, and
// the tasks an elastic gang grows back by (a move or grow that cannot is
// not planned). A waiting job promised a placement the filter forbids (a
// nomination: the room a preemption plan makes, a migration's
// destination) loses it and is placed again.
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
	if (f.Allow == nil && f.Group == nil) != (f.Key == "") {
		return jobErr(id, fmt.Errorf("gpusched: SetHostFilter: a filter needs a Key and Allow or Group"))
	}
	class := j.shape
	s.hosts.groups.drop(id)
	if f.Key == "" {
		delete(s.hosts.byJob, id)
	} else {
		if s.hosts.byJob == nil {
			s.hosts.byJob = map[string]jobFilter{}
		}
		if f.Allow == nil {
			f.Allow = anyHost // (the request's filter is never nil: groupfilter.go)
		}
		if f.Group != nil {
			s.hosts.groups.set(j, f.Group)
		}
		move := *j.req
		move.AllowHost = f.Allow
		s.hosts.groups.narrow(j, &move)
		s.hosts.byJob[id] = jobFilter{HostFilter: f, j: j, move: &move}
		class += "#" + f.Key
	}
	if n := j.nom.nominated; n != nil && !s.hosts.allows(j, n.p) {
		// Promised a placement the filter now forbids (by a plan, or as
		// a migration's destination): the job plans again, as when its
		// room broke (bindNominated); victims asked for still stop.
		s.noms.stopWaiting(j)
		s.dropNomination(n)
	}
	// Jobs of one queue class share a cycle's placement failures: a
	// filtered job is of its own class (shape and filter).
	s.jobs.reclass(j, class)
	sweepStale(s.hosts.byJob, len(s.jobs.byID), func(jid string, e jobFilter) bool { return s.jobs.byID[jid] == e.j })
	s.hosts.groups.sweep(len(s.jobs.byID), func(x *job) bool { return s.jobs.byID[x.spec.ID] == x })
	return nil
}

// of returns j's filter; ok is false when j has none (an entry left by an
// ended job submitted again under j's ID is not j's).
func (hf *hostFilters) of(j *job) (e jobFilter, ok bool) {
	e, ok = hf.byJob[j.spec.ID]
	return e, ok && e.j == j
}

// apply narrows j's model choice ch by j's host filter, if it has one:
// its filters accept only hosts both accept, and its cache keys name the
// filter.
func (hf *hostFilters) apply(j *job, ch modelChoice) modelChoice {
	f, ok := hf.of(j)
	if !ok {
		return ch // (a job submitted again under an ended one's ID has its own)
	}
	ch.allow, ch.key = both(f.Allow, ch.allow), ch.key+"#"+f.Key
	if ch.guar != nil {
		ch.guar, ch.gkey = both(f.Allow, ch.guar), ch.gkey+"#"+f.Key
	}
	return ch
}

// moveRequest returns the request running job id (of jobs, the live
// jobs by ID) is placed with when a defragmentation or consolidation
// plan moves it: its own with its filter, or nil when it has none (its
// spec's). O(1); nothing to look up when no job has a filter.
func (hf *hostFilters) moveRequest(id string, jobs map[string]*job) *gang.Request {
	if len(hf.byJob) == 0 {
		return nil
	}
	if j := jobs[id]; j != nil {
		if e, ok := hf.of(j); ok {
			return e.move
		}
	}
	return nil
}

var _ preempt.Restricted = schedSnapshot{}

// MoveRequest makes the Scheduler a preempt.Restricted Snapshot: the
// jobs its defragmentation and consolidation plans move are placed with
// their host filters (SetHostFilter).
func (x schedSnapshot) MoveRequest(pj *preempt.Job) *gang.Request {
	return x.s.hosts.moveRequest(pj.Spec.ID, x.s.jobs.byID)
}

// allows reports whether j's filter, if it has one, allows every task of
// p on its host (the job-wide part, and each task's group's). O(claims).
func (hf *hostFilters) allows(j *job, p *gang.Placement) bool {
	e, ok := hf.of(j)
	if !ok {
		return true
	}
	for i, cl := range p.Claims {
		if !e.Allow(cl.Host) {
			return false
		}
		if g := e.move.Groups[p.Tasks[i].Group].AllowHost; g != nil && !g(cl.Host) {
			return false
		}
	}
	return true
}

// narrowGrow gives req, the request of the tasks running job j grows by
// (growPlacement: its group i is j's task group gmap[i]), j's filter:
// the job-wide part on req, each group's on its group. Nothing when j
// has none.
func (hf *hostFilters) narrowGrow(j *job, req *gang.Request, gmap []int) {
	e, ok := hf.of(j)
	if !ok {
		return
	}
	req.AllowHost = both(e.Allow, req.AllowHost)
	for i := range req.Groups {
		if g := e.move.Groups[gmap[i]].AllowHost; g != nil {
			req.Groups[i].AllowHost = both(g, req.Groups[i].AllowHost)
		}
	}
}

// both returns a filter accepting what a and b (nil: every host) accept.
func both(a, b func(topology.HostID) bool) func(topology.HostID) bool {
	if b == nil {
		return a
	}
	return func(h topology.HostID) bool { return a(h) && b(h) }
}
