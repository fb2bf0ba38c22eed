package plugin

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// jobCache keeps the jobs jobsOf built last cycle, per job ID with the pod
// objects they were built from. A cycle reads every pod of the profile;
// most are unchanged since the last one (the informer hands out a new
// object for every change), so their job is taken from the cache instead of
// parsing their labels, annotations and requests again. Only host.decide
// uses it, under host.mu.
type jobCache struct {
	byID map[string]cachedJob
}

type cachedJob struct {
	members []*v1.Pod // sorted by name, as jobOf got them
	job     *podJob
	hosts   int // the GPU nodes jobOf was given
}

// jobsOf returns jobsOf(pods, a, gpuHosts), reusing the jobs whose pods
// are the same objects as last time. Each call returns fresh podJob
// values (sharing the read-only pods and task groups): callers may set
// their fields. A job keeps the number of GPU nodes it was first built
// for while its ID is seen every cycle (podJob.onHosts: a gang spread on
// the hostname is planned by cap or by quota for good, as it was
// submitted, not switched when nodes come and go).
func (c *jobCache) jobsOf(pods []*v1.Pod, a *Args, gpuHosts int) []*podJob {
	byID := map[string][]*v1.Pod{}
	for _, p := range pods {
		id := jobID(p, a)
		byID[id] = append(byID[id], p)
	}
	ids := sortedKeys(byID)
	next := make(map[string]cachedJob, len(ids))
	out := make([]*podJob, 0, len(ids))
	for _, id := range ids {
		members := byID[id]
		sortPods(members)
		e, ok := c.byID[id]
		hosts := gpuHosts
		if ok && e.hosts > 0 {
			hosts = e.hosts // (0: built before there was a cluster)
		}
		if !ok || !slices.Equal(e.members, members) || e.job.group != groupVersion(members[0], a) || (e.job.onHosts && e.hosts != hosts) {
			e = cachedJob{members: members, job: jobOf(id, members, a, hosts), hosts: hosts}
		}
		next[id] = e
		j := *e.job
		out = append(out, &j)
	}
	c.byID = next
	return out
}
