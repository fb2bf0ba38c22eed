package plugin

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/workload"
)

// podJob is one gpusched job made of pods (scheduler mode): a single pod, or
// the live members of a gang.
type podJob struct {
	spec workload.Job
	// pods are the job's pods, per task group in name order: task k of
	// group g is pods[g][k] (a pod of several MIG devices is in several
	// tasks, dra_migs.go).
	pods [][]*v1.Pod
	// several: a pod of it asks for several MIG devices, so its pods are
	// in several tasks and it is placed on one host (dra_migs.go).
	several bool
	// sharesClaim: gang members share a GPU claim, so the gang is placed
	// on one host (dra_shared.go).
	sharesClaim bool
	// checkpoint is the latest gpusched.io/checkpointed-at of its pods.
	checkpoint time.Time
	// created is the earliest creation time of its pods: jobs are
	// submitted (and restored) in this order.
	created time.Time
	// ckey and nodeReps are nodeConstraints of its pods: their distinct
	// node constraints, and a pod of each (constraints.go). With more
	// than one, each task group's pods share one (jobOf).
	ckey     string
	nodeReps []*v1.Pod
	// domains caps its members per domain of topology keys other than
	// the hostname (domains.go).
	domains []domainCap
	// spread: its members spread on a zone or rack label (or on the
	// hostname, more of them than maxSkew × the GPU nodes) are planned by
	// quota, each member a task group of its own (spread.go); nil if not.
	spread *spreadRule
	// onHosts: the job depends on the number of GPU nodes it was built
	// for (a rigid gang spread on the hostname: jobOf); jobCache keeps
	// the number it was first built for.
	onHosts bool
	// group is the resourceVersion of the PodGroup it was read from
	// (workload.go), "" for none.
	group string
	// err says why the job cannot be submitted (bad labels or annotations);
	// problem names the pod and field for the event.
	err error
}

// all returns the job's pods in group and name order.
func (j *podJob) all() []*v1.Pod {
	var out []*v1.Pod
	for _, g := range j.pods {
		for _, p := range g {
			if !j.several || !slices.Contains(out, p) { // (a pod of several MIG devices is in several groups)
				out = append(out, p)
			}
		}
	}
	return out
}

// jobID returns the gpusched job ID of a pod: "NAMESPACE/gang/NAME" for a
// gang member (pod names cannot contain "/", so it never collides with a
// single pod's), "NAMESPACE/POD" otherwise.
func jobID(p *v1.Pod, a *Args) string {
	if g := p.Labels[a.GangLabel]; g != "" {
		return p.Namespace + "/gang/" + g
	}
	if g := gangGroup(p, a); g != "" {
		return p.Namespace + "/podgroup/" + g
	}
	return p.Namespace + "/" + p.Name
}

// jobsOf groups pods (the live, not terminal pods of one profile) into jobs,
// sorted by ID, on a cluster of gpuHosts GPU nodes (jobOf). A job whose
// pods' labels or annotations are malformed or disagree carries err and
// an empty spec.
func jobsOf(pods []*v1.Pod, a *Args, gpuHosts int) []*podJob {
	byID := map[string][]*v1.Pod{}
	for _, p := range pods {
		id := jobID(p, a)
		byID[id] = append(byID[id], p)
	}
	ids := sortedKeys(byID)
	out := make([]*podJob, 0, len(ids))
	for _, id := range ids {
		members := byID[id]
		sortPods(members)
		out = append(out, jobOf(id, members, a, gpuHosts))
	}
	return out
}

// podField names a pod and one of its fields in an error.
func podField(p *v1.Pod, field string) string {
	return fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, field)
}

// jobOf builds the job of members (sorted by name), on a cluster of
// gpuHosts GPU nodes (0: not known; it decides only how a gang spread on
// the hostname is planned).
func jobOf(id string, members []*v1.Pod, a *Args, gpuHosts int) *podJob {
	j := &podJob{created: members[0].CreationTimestamp.Time}
	for _, m := range members {
		if m.CreationTimestamp.Time.Before(j.created) {
			j.created = m.CreationTimestamp.Time
		}
	}
	first := members[0]
	fail := func(format string, args ...any) *podJob {
		j.spec.ID = id // so a job known under it is found (host.survives)
		j.err = fmt.Errorf(format, args...)
		j.pods = [][]*v1.Pod{members}
		return j
	}
	queueOf := func(p *v1.Pod) string {
		if q := p.Labels[a.QueueLabel]; q != "" {
			return q
		}
		if q := a.NamespaceQueues[p.Namespace]; q != "" {
			return q
		}
		return a.DefaultQueue
	}
	spec := workload.Job{ID: id, Queue: queueOf(first)}
	if first.Spec.Priority != nil {
		spec.Priority = *first.Spec.Priority
	}
	g, inGang, err := gangOf(first, a)
	if err != nil {
		return fail("%s: %v", podField(first, "gang labels"), err)
	}
	var runtime string
	for _, m := range members {
		if q := queueOf(m); q != spec.Queue {
			return fail("%s=%q: gang members disagree on the queue (%s has %q)", podField(m, "label "+a.QueueLabel), q, first.Name, spec.Queue)
		}
		var prio int32
		if m.Spec.Priority != nil {
			prio = *m.Spec.Priority
		}
		if prio != spec.Priority {
			return fail("%s=%d: gang members disagree on the priority (%s has %d)", podField(m, "priority"), prio, first.Name, spec.Priority)
		}
		if inGang {
			mg, _, err := gangOf(m, a)
			if err != nil {
				return fail("%s: %v", podField(m, "gang labels"), err)
			}
			if !mg.equal(g) {
				return fail("%s: gang members disagree on size, minimum or topology (%s differs)", podField(m, "gang labels"), first.Name)
			}
		}
		if r := m.Annotations[a.RuntimeKey]; r != "" {
			d, err := time.ParseDuration(r)
			if err != nil || d <= 0 {
				return fail("%s=%q: not a positive duration such as 90m", podField(m, "annotation "+a.RuntimeKey), r)
			}
			if runtime != "" && r != runtime {
				return fail("%s=%q: gang members disagree on the runtime estimate (%q)", podField(m, "annotation "+a.RuntimeKey), r, runtime)
			}
			runtime, spec.Runtime = r, d
		}
		if c := m.Annotations[a.CheckpointKey]; c != "" {
			t, err := time.Parse(time.RFC3339, c)
			if err != nil {
				return fail("%s=%q: not an RFC 3339 time", podField(m, "annotation "+a.CheckpointKey), c)
			}
			if t.After(j.checkpoint) {
				j.checkpoint = t
			}
		}
	}
	if inGang && g.group {
		// A PodGroup names no size: its gang is its live pods.
		g.size = max(g.min, len(members))
		j.group = g.version
	}
	if inGang {
		if len(members) > g.size {
			return fail("%s: gang %s has %d live pods, more than its size %d", podField(members[g.size], "gang labels"), g.key, len(members), g.size)
		}
		spec.Topology = g.constraints()
		skip := ""
		if g.min >= g.size && !slices.ContainsFunc(members, func(m *v1.Pod) bool { _, several := podTasks(demandOf(m, a)); return several }) {
			// A rigid gang of single-device pods: planned by quota on its
			// spread's domains (spread.go), not capped there.
			if j.spread = spreadRuleOf(members); j.spread != nil {
				skip = j.spread.c.TopologyKey
			} else if r := hostSpreadRuleOf(members); r != nil {
				// On the hostname: capped at maxSkew per node, which kube
				// accepts in any order, unless that cannot hold the gang
				// on the GPU nodes there are (spread.go).
				j.onHosts = true
				if gpuHosts > 0 && g.size > int(r.c.MaxSkew)*gpuHosts {
					j.spread, skip = r, r.c.TopologyKey
				}
			}
		}
		spec.MaxTasksPerHost = perHostCap(members, skip)
		j.domains = domainCaps(members, skip)
		if slices.ContainsFunc(members, func(m *v1.Pod) bool { return m.Annotations[draSharedWithAnnotation] != "" }) {
			// Members sharing a GPU claim: the gang on its node (dra_shared.go).
			if spec.MaxTasksPerHost > 0 {
				return fail("%s: gang members share a GPU ResourceClaim, so the gang goes on one node, which its pods' anti-affinity or spread on the hostname forbids", podField(members[0], "resourceClaims"))
			}
			spec.Topology = append(spec.Topology, onOneHost)
			j.sharesClaim = true
		}
	}
	// One task group per distinct demand, in order of first appearance,
	// and per distinct node constraint when the members' differ: each
	// group then has a node filter of its own (constraints.go,
	// gpusched.HostFilter.Group).
	ckey, reps := nodeConstraints(members)
	type groupKey struct {
		d  demand
		ck string
		// slot: a member's own task group (spread.go), from 1; 0 none.
		slot int
	}
	var demands []groupKey
	for mi, m := range members {
		tasks, several := podTasks(demandOf(m, a))
		if several {
			// Several MIG devices: a task each, on one host; a gang of
			// such pods goes whole on one host (dra_migs.go).
			if !inGang && len(members) > 1 {
				return fail("%s: several pods of several MIG devices or shares in one job", podField(m, "resourceClaims"))
			}
			if spec.MaxTasksPerHost > 0 {
				return fail("%s: a gang of pods with several MIG devices or shares is placed on one node, which its pods' anti-affinity or spread on the hostname forbids", podField(m, "resourceClaims"))
			}
			if !slices.Contains(spec.Topology, onOneHost) {
				spec.Topology = append(spec.Topology, onOneHost)
			}
			j.several = true
		}
		ck := ""
		if len(reps) > 1 {
			ck = constraintKey(m)
		}
		slot := 0
		if j.spread != nil {
			slot = mi + 1
		}
		for _, d := range tasks {
			gk := groupKey{d, ck, slot}
			gi := slices.Index(demands, gk)
			if gi < 0 {
				gi = len(demands)
				demands = append(demands, gk)
				spec.Groups = append(spec.Groups, d.taskGroup(fmt.Sprintf("g%d", gi), 0))
				j.pods = append(j.pods, nil)
			}
			spec.Groups[gi].Count++
			j.pods[gi] = append(j.pods[gi], m)
		}
	}
	if inGang {
		if g.missing {
			j.err = errIncomplete{have: len(members), group: g.key}
		} else if missing := g.size - len(members); missing > 0 {
			// Not every member exists yet: the job waits for them (see
			// host.incomplete); it is submitted once complete.
			j.err = errIncomplete{have: len(members), size: g.size, min: g.min}
		} else if g.min < g.size && len(spec.Groups) == 1 {
			spec.Groups[0].MinCount = g.min
		}
	}
	j.spec = spec
	j.ckey, j.nodeReps = ckey, reps
	return j
}

// errIncomplete: a gang some of whose members do not exist yet.
// group names its PodGroup ("namespace/name") when that does not exist yet.
type errIncomplete struct {
	have, size, min int
	group           string
}

func (e errIncomplete) Error() string {
	if e.group != "" {
		return fmt.Sprintf("waiting for the gang's PodGroup %s (scheduling.k8s.io/v1beta1) to exist", e.group)
	}
	return fmt.Sprintf("waiting for the gang's pods: %d of %d exist", e.have, e.size)
}
