package plugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// demand is what one pod takes from its node, as gpusched counts it.
type demand struct {
	gpus      int
	cpuMilli  int64
	memoryMiB int64
	// mig (a MIG profile) or milli (a share of one GPU) is what a DRA pod's
	// claim asks for instead of whole GPUs (draPartAnnotation).
	mig   string
	milli int
	// shares are, for a pod of several shares, the milli of each,
	// comma-separated ("250,500"; dra_shares.go); mig and milli are then
	// unset.
	shares string
	// models are the acceptable GPU models of a MIG device or share,
	// comma-separated ("": any; draModelsAnnotation).
	models string
}

// demandOf returns the effective requests of p (containers, init containers
// and overhead, as the scheduler computes them): whole GPUs of a.GPUResource,
// CPU in milli-cores and memory in MiB, rounded up.
func demandOf(p *v1.Pod, a *Args) demand {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	var d demand
	if q, ok := req[v1.ResourceName(a.GPUResource)]; ok {
		d.gpus = int(min(q.Value(), topology.MaxGPUsPerHost+1))
	}
	if q, ok := req[v1.ResourceCPU]; ok {
		d.cpuMilli = q.MilliValue()
	}
	if q, ok := req[v1.ResourceMemory]; ok {
		d.memoryMiB = (q.Value() + 1<<20 - 1) >> 20
	}
	d.mig, d.milli = partDemand(p) // (dra_mig.go)
	d.shares = sharesDemand(p)     // (dra_shares.go)
	if d.mig != "" || d.milli > 0 || d.shares != "" {
		d.models = p.Annotations[draModelsAnnotation]
	}
	return d
}

// taskGroup returns d as a workload task group of count tasks.
func (d demand) taskGroup(name string, count int) workload.TaskGroup {
	g := workload.TaskGroup{Name: name, Count: count, GPUs: d.gpus, GPUMilli: d.milli, MIGProfile: d.mig, CPUMilli: d.cpuMilli, MemoryMiB: d.memoryMiB}
	if d.models != "" {
		g.Models = strings.Split(d.models, ",")
	}
	return g
}

// groupIndex returns the index in job of the task group of demand d
// (demands: each group's demand, in job's order), adding an empty group
// "gN" of it (added) when there is none.
func groupIndex(job *workload.Job, demands *[]demand, d demand) (gi int, added bool) {
	if gi = slices.Index(*demands, d); gi >= 0 {
		return gi, false
	}
	*demands = append(*demands, d)
	job.Groups = append(job.Groups, d.taskGroup(fmt.Sprintf("g%d", len(*demands)-1), 0))
	return len(*demands) - 1, true
}

// gangSpec is a pod's gang as its labels and annotations describe it.
type gangSpec struct {
	// key is "namespace/name", unique in the cluster.
	key, namespace, name string
	size, min            int
	required             string
	preferred            []string
	// group: read from a PodGroup (workload.go), whose size is its live
	// pods' count (at least min); missing: that PodGroup does not exist
	// yet; version: its resourceVersion.
	group, missing bool
	version        string
}

// gangOf reads p's gang. ok is false for a pod without the gang label; an
// error says which label or annotation is malformed.
func gangOf(p *v1.Pod, a *Args) (g gangSpec, ok bool, err error) {
	name := p.Labels[a.GangLabel]
	if name == "" {
		return podGroupGang(p, a)
	}
	get := func(key string) string {
		if v, ok := p.Labels[key]; ok {
			return v
		}
		return p.Annotations[key]
	}
	g = gangSpec{key: p.Namespace + "/" + name, namespace: p.Namespace, name: name}
	sz := get(a.GangSizeKey)
	if sz == "" {
		return g, true, fmt.Errorf("gang %s: pod %s/%s has no %s", g.key, p.Namespace, p.Name, a.GangSizeKey)
	}
	if g.size, err = strconv.Atoi(sz); err != nil || g.size < 1 || g.size > workload.MaxTasks {
		return g, true, fmt.Errorf("gang %s: %s=%q is not a size between 1 and %d", g.key, a.GangSizeKey, sz, workload.MaxTasks)
	}
	g.min = g.size
	if m := get(a.GangMinKey); m != "" {
		if g.min, err = strconv.Atoi(m); err != nil || g.min < 1 || g.min > g.size {
			return g, true, fmt.Errorf("gang %s: %s=%q is not a minimum between 1 and the size %d", g.key, a.GangMinKey, m, g.size)
		}
	}
	g.required = get(a.GangTopologyKey)
	if pref := get(a.GangPreferredKey); pref != "" {
		for _, l := range strings.Split(pref, ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(g.preferred, l) {
				g.preferred = append(g.preferred, l)
			}
		}
	}
	return g, true, nil
}

// sameGang reports whether two pods' gang labels and annotations agree.
func (g gangSpec) equal(o gangSpec) bool {
	return g.key == o.key && g.size == o.size && g.min == o.min && g.required == o.required && slices.Equal(g.preferred, o.preferred)
}

// constraints returns the gang's topology constraints for a workload.Job.
func (g gangSpec) constraints() []workload.Constraint {
	var cs []workload.Constraint
	if g.required != "" {
		cs = append(cs, workload.Constraint{Level: g.required, Required: true})
	}
	for _, l := range g.preferred {
		if l != g.required {
			cs = append(cs, workload.Constraint{Level: l})
		}
	}
	return cs
}

// formatIndices writes GPU indices as the annotation value "0,1,2".
func formatIndices(idx []int) string {
	var b strings.Builder
	for i, x := range idx {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// parseIndices reads an annotation value written by formatIndices: distinct
// indices in 0..n-1. It returns nil for anything else.
func parseIndices(s string, n int) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 0 || x >= n || slices.Contains(out, x) {
			return nil
		}
		out = append(out, x)
	}
	return out
}

// isTerminal reports whether p holds no resources any more.
func isTerminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}
