package plugin

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/gpusched/gpusched/workload"
)

// The upstream gang API (issue 26, deliver 5). Where kube-apiserver runs
// with the GenericWorkload feature gate and serves scheduling.k8s.io/v1beta1
// (Kubernetes 1.37: beta, off by default), a workload controller creates a
// PodGroup (from a Workload's podGroupTemplates) and its pods name it in
// spec.schedulingGroup.podGroupName. Scheduler mode reads those PodGroups
// beside the gpusched.io/gang* labels:
//
//   - a PodGroup with the gang policy makes its live pods one gang job,
//     "NAMESPACE/podgroup/NAME": it is submitted once gang.minCount of its
//     pods exist, all of them placed together, at least minCount of them
//     when the pods have one shape (the labels' gang-min);
//   - its topology constraint (schedulingConstraints.topology[0].key, a node
//     label) is the gang's required level: the topologyLevels entry reading
//     that label, "host" for kubernetes.io/hostname, "nvlink" for the GPU
//     clique label; any other key is an error on the pods' events;
//   - the basic policy makes no gang: each pod is a job of its own;
//   - a pod whose PodGroup does not exist yet waits for it;
//   - a pod with the gang label is formed from its labels alone: the labels
//     take precedence over its schedulingGroup (they are gpusched's own,
//     explicit configuration).
//
// Where the API is not served, Args.groups is nil and the labels alone form
// gangs; a pod's schedulingGroup is then ignored.

// podGroupLookup reads PodGroups (scheduling.k8s.io/v1beta1) by namespace
// and name; ok is false for one that does not exist.
type podGroupLookup interface {
	podGroup(namespace, name string) (pg *schedulingv1beta1.PodGroup, ok bool)
}

// groupRef returns the name of the PodGroup p names in
// spec.schedulingGroup, "" for none.
func groupRef(p *v1.Pod) string {
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		return *sg.PodGroupName
	}
	return ""
}

// gangGroup returns the name of the PodGroup that makes p a gang member:
// p has no gang label, the API is read (a.groups), and p names a PodGroup
// that has the gang policy or does not exist yet. It returns "" otherwise.
func gangGroup(p *v1.Pod, a *Args) string {
	if a.groups == nil || p.Labels[a.GangLabel] != "" {
		return ""
	}
	name := groupRef(p)
	if name == "" {
		return ""
	}
	if pg, ok := a.groups.podGroup(p.Namespace, name); ok && pg.Spec.SchedulingPolicy.Gang == nil {
		return ""
	}
	return name
}

// podGroupGang reads the gang of a pod that has no gang label from its
// PodGroup; ok is false for a pod that is no PodGroup gang member.
func podGroupGang(p *v1.Pod, a *Args) (g gangSpec, ok bool, err error) {
	name := gangGroup(p, a)
	if name == "" {
		return g, false, nil
	}
	g = gangSpec{key: p.Namespace + "/" + name, namespace: p.Namespace, name: name, group: true}
	pg, found := a.groups.podGroup(p.Namespace, name)
	if !found {
		g.missing = true
		return g, true, nil
	}
	g.version = pg.ResourceVersion
	g.min = int(pg.Spec.SchedulingPolicy.Gang.MinCount)
	if g.min < 1 || g.min > workload.MaxTasks {
		return g, true, fmt.Errorf("PodGroup %s: spec.schedulingPolicy.gang.minCount=%d is not between 1 and %d", g.key, g.min, workload.MaxTasks)
	}
	g.size = g.min
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		key := c.Topology[0].Key
		if g.required = groupLevel(key, a); g.required == "" {
			return g, true, fmt.Errorf("PodGroup %s: spec.schedulingConstraints.topology[0].key=%q: no topology level reads this node label (topologyLevels[].nodeLabel, %s or %s)", g.key, key, a.GPUCliqueLabel, v1.LabelHostname)
		}
	}
	return g, true, nil
}

// groupLevel maps a PodGroup topology key (a node label) to gpusched's
// level: the topologyLevels entry reading it, "host" for the hostname
// label, "nvlink" for the GPU clique label; "" for any other.
func groupLevel(key string, a *Args) string {
	for _, l := range a.TopologyLevels {
		if l.NodeLabel == key {
			return l.Name
		}
	}
	switch key {
	case v1.LabelHostname:
		return "host"
	case a.GPUCliqueLabel:
		return "nvlink"
	}
	return ""
}

// groupVersion is the resourceVersion of the PodGroup p's gang is read from
// ("" for none): a job built from another version is built again.
func groupVersion(p *v1.Pod, a *Args) string {
	name := gangGroup(p, a)
	if name == "" {
		return ""
	}
	if pg, ok := a.groups.podGroup(p.Namespace, name); ok {
		return pg.ResourceVersion
	}
	return ""
}
