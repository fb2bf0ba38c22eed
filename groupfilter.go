package gpusched

import (
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// groupFilters is the task-group part of SetHostFilter's concern (issue
// 26, defect 4: the members of one Kubernetes gang with node selectors
// that differ): for each job whose HostFilter has a Group restriction, a
// copy of its request's groups, each with its own gang.Group.AllowHost.
// Every placement the Scheduler makes or plans for the job while it
// waits goes through cycleState.request, which gives the job's request
// these groups, so every placer (binding, reservation, backfill,
// preemption and defragmentation plans) honours them; the job-wide part
// of the filter travels as the request's AllowHost (hostFilters.apply),
// which is never nil for such a job. Once it runs, its moves are placed
// with jobFilter.move, which holds them too, and its grows narrowed by
// them (hostFilters.narrowGrow).
//
// Written only by set and drop (SetHostFilter); read by
// cycleState.request. Not part of the saved state (as hostFilters).
type groupFilters struct {
	// byJob: the groups by job ID. Invariant: an entry's job is the live
	// job its groups were copied from (a job submitted again under the
	// same ID does not inherit them: narrow checks the job).
	byJob map[string]groupFiltered
}

// groupFiltered is one job's task groups with their filters.
type groupFiltered struct {
	j      *job
	groups []gang.Group
}

// set gives j the group restriction allow: task group g (its index in
// j's TaskGroups) may use host h only if allow(g, h).
func (gf *groupFilters) set(j *job, allow func(g int, h topology.HostID) bool) {
	groups := append([]gang.Group(nil), j.req.Groups...)
	for i := range groups {
		groups[i].AllowHost = func(h topology.HostID) bool { return allow(i, h) }
	}
	if gf.byJob == nil {
		gf.byJob = map[string]groupFiltered{}
	}
	gf.byJob[j.spec.ID] = groupFiltered{j: j, groups: groups}
}

// drop forgets job id's group restriction, if any.
func (gf *groupFilters) drop(id string) { delete(gf.byJob, id) }

// sweep forgets the restrictions of jobs live no more (live reports
// whether a job is), once they outnumber the live jobs (sweepStale).
func (gf *groupFilters) sweep(jobs int, live func(*job) bool) {
	sweepStale(gf.byJob, jobs, func(_ string, e groupFiltered) bool { return live(e.j) })
}

// sweepStale deletes the entries of m, keyed by job ID, whose job live
// reports gone, once m holds more than 64 entries and over twice the
// jobs live: O(entries), rare, so the filters of ended jobs cost nothing
// until they outnumber the live ones. Order does not matter: each entry
// is judged on its own.
func sweepStale[V any](m map[string]V, jobs int, live func(id string, v V) bool) {
	if n := len(m); n <= 64 || n <= 2*jobs {
		return
	}
	for id, v := range m {
		if !live(id, v) {
			delete(m, id)
		}
	}
}

// narrow gives r (a copy of j's request) j's filtered groups, if j has
// any. O(1); nothing when no job has a group restriction.
func (gf *groupFilters) narrow(j *job, r *gang.Request) {
	if len(gf.byJob) == 0 {
		return
	}
	if e, ok := gf.byJob[j.spec.ID]; ok && e.j == j {
		r.Groups = e.groups
	}
}

// anyHost accepts every host: the job-wide part of a filter that
// restricts its groups alone.
func anyHost(topology.HostID) bool { return true }
