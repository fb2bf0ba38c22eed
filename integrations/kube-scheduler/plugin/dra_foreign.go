package plugin

import (
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/topology"
)

// Foreign claims (docs/dra.md, "Other schedulers' pods").
//
// In scheduler mode kube's own DynamicResources plugin allocates the
// claims of the pods of other profiles (default-scheduler's): when such
// a claim names devices of gpusched's driver, those devices are taken,
// whoever allocated them. The pods of other profiles are no jobs of
// gpusched's (viewPods leaves them out), so gpusched counts their
// devices apart, as held by a foreign pod:
//
//   - the view of a cycle leaves other profiles' pods to kube: their
//     claims are never released nor allocated by gpusched (foreignPod);
//   - an allocated claim of the driver that no pod of the profile names
//     (mine) takes, on the node of its pool, the GPUs its allocation
//     names: a whole GPU or a share of it (the GPU device itself), the
//     parent of a partitionable MIG device; static MIG devices are taken
//     through d.owners already (dra_static.go). noteForeign records them
//     (d.foreign) from the claims the view lists anyway, through the
//     walk static MIG's owners use (takenBy);
//   - draHealth gives such a GPU no new job (Draining, as a device taint
//     NoSchedule does): it is no job gpusched could preempt or move. A
//     GPU gpusched holds whole keeps its job; a GPU of gpusched's MIG
//     devices or shares keeps them (draining it would evict them) — only
//     its free GPUs are fenced;
//   - once the claim's allocation goes (its pod ended, kube deallocated
//     it), the next cycle no longer lists the GPU and it is healthy
//     again; a restart reads the claims the same way.

// foreignPod reports whether p is another profile's pod, whose claims
// kube's allocator handles (scheduler mode only).
func (d *drat) foreignPod(p *v1.Pod) bool {
	return d.sched && d.profile != "" && p.Spec.SchedulerName != d.profile
}

// noteForeign sets d.foreign from claims: node → the GPU indices
// allocated claims of the driver take that no pod of the profile names
// and the cycle does not release (mine: "namespace/name" → true).
func (d *drat) noteForeign(claims []*resourceapi.ResourceClaim, mine map[string]bool) {
	clear(d.foreign)
	d.takenBy(claims, func(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequestAllocationResult) { // (dra_static.go)
		if mine[c.Namespace+"/"+c.Name] || r.AdminAccess != nil && *r.AdminAccess {
			return // (gpusched's ledger has it; admin access takes no device)
		}
		node := d.byPool[r.Pool]
		n := d.nodes[node]
		if n == nil {
			return
		}
		i, ok := n.index[r.Device]
		if !ok {
			if m := n.migOf(r.Device); m != nil {
				i, ok = m.gpu, true
			}
		}
		if !ok {
			return // (a static MIG device: d.owners)
		}
		if d.foreign == nil {
			d.foreign = map[string]map[int]bool{}
		}
		if d.foreign[node] == nil {
			d.foreign[node] = map[int]bool{}
		}
		d.foreign[node][i] = true
	})
}

// foreignHealth is the health a cycle gives GPU i of node, whose other
// reasons say health and whose ledger mode is mode: Draining when a
// foreign claim takes it and the GPU is free or held whole (draHealth
// keeps a whole GPU's job), else health.
func (d *drat) foreignHealth(node string, i int, health topology.Health, mode topology.GPUMode) topology.Health {
	if health != topology.Healthy || !d.foreign[node][i] {
		return health
	}
	if mode != topology.ModeFree && mode != topology.ModeWhole {
		return health // (gpusched's MIG devices or shares on it run on)
	}
	return topology.Draining
}
