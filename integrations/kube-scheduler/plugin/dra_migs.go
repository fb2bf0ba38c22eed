package plugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Several MIG devices in one pod (docs/dra.md).
//
// A pod whose GPU requests are all MIG requests may ask for several MIG
// devices: a request of count n, several requests, several claims. The
// library places one MIG instance per task, so such a pod is a job of
// one task per MIG device, each in the task group of
// its profile, and one CPU task carrying the pod's CPU and memory, with
// the required topology "host" (a gang of such pods: one job of every
// member's tasks, the whole gang on one host, since the library keeps
// tasks together only at a topology level, not per pod; a gang that fits
// no one node waits): the library's MIG engine picks every
// GPU and legal start slot, on one node, and its slot mask per GPU (the
// memory-slice counters) never hands out a slice twice. The pod's
// assignment holds a GPU and a part ("mig:PROFILE@START") per MIG
// device; each MIG request's result gets a device of its profile. A
// restart reads the devices back from the claims' allocations
// (draMIGHeldAnnotation).

// draMIGHeldAnnotation carries, on a pod of several MIG devices as a
// cycle sees it (never written to the apiserver), the MIG devices its
// claims' allocations name: "GPU@START,…", one per profile of its
// draPartAnnotation, in the same order.
const draMIGHeldAnnotation = "gpusched.io/dra-migs-held"

// migDevices is the number of MIG devices dp's requests ask for.
func migDevices(dp *draPod) int {
	n := 0
	for _, c := range dp.claims {
		for _, r := range c.requests {
			if r.part != nil && r.part.mig {
				n += r.count
			}
		}
	}
	return n
}

// migsPod finishes dp, a pod of several MIG devices (part.profiles), as
// the cycle sees it (out, its copy): the profiles, the nodes it may use
// and, when its claims are allocated on heldOn, the devices they name.
func (d *drat) migsPod(dp *draPod, out *v1.Pod, part *partRequest, claims []*resourceapi.ResourceClaim, heldOn string, nodes []string) *draPod {
	out.Annotations[draPartAnnotation] = "mig:" + strings.Join(part.profiles, ",")
	delete(out.Annotations, draMIGStartAnnotation)
	delete(out.Annotations, draMIGHeldAnnotation)
	onlyOn(out, nodes)
	if held, ok := d.heldMIGs(dp, claims, heldOn); ok {
		out.Annotations[draMIGHeldAnnotation] = held
	}
	dp.out = out
	return dp
}

// heldMIGs returns the MIG devices on node the allocations of dp's
// claims name, "GPU@START,…" in the order of its requests; ok is false
// unless every MIG device of its requests is named.
func (d *drat) heldMIGs(dp *draPod, claims []*resourceapi.ResourceClaim, node string) (string, bool) {
	n := d.nodes[node]
	if n == nil {
		return "", false
	}
	var held []string
	for _, c := range dp.claims {
		k := slices.IndexFunc(claims, func(cl *resourceapi.ResourceClaim) bool { return cl.Name == c.name })
		if k < 0 || claims[k].Status.Allocation == nil {
			return "", false
		}
		for _, r := range c.requests {
			got := 0
			for _, res := range claims[k].Status.Allocation.Devices.Results {
				if res.Request != r.name || res.Driver != d.driver || res.Pool != n.pool {
					continue
				}
				m := n.migOf(res.Device)
				if m == nil || m.profile != r.part.profile {
					return "", false
				}
				held = append(held, fmt.Sprintf("%d@%d", m.gpu, m.start))
				got++
			}
			if got != r.count {
				return "", false
			}
		}
	}
	return strings.Join(held, ","), true
}

// migResult returns the MIG device of node n that a gives request r: the
// first part of a (one per GPU of a.gpus, "mig:PROFILE@START" joined by
// ";") of r's profile not taken yet, which it marks taken.
func (d *drat) migResult(n *draNode, a assignment, r gpuRequest, taken []bool) (*migDev, error) {
	parts := strings.Split(a.part, ";")
	for i, p := range parts {
		profile, start, ok := parseMIGPart(p)
		if !ok {
			return nil, fmt.Errorf("request %q: gpusched's binding is no MIG device (%q)", r.name, a.part)
		}
		if i >= len(taken) || taken[i] || profile != r.part.profile || i >= len(a.gpus) {
			continue
		}
		gpu := a.gpus[i]
		m := slices.IndexFunc(n.migs, func(m *migDev) bool { return m.gpu == gpu && m.profile == profile && m.start == start })
		if m < 0 {
			return nil, fmt.Errorf("request %q: node %s publishes no MIG device %s at slot %d of GPU %d", r.name, a.node, profile, start, gpu)
		}
		taken[i] = true
		return n.migs[m], nil
	}
	return nil, fmt.Errorf("request %q: gpusched's binding (%q) has no MIG device %s left for it", r.name, a.part, r.part.profile)
}

// heldMIG is one MIG device a pod of several holds.
type heldMIG struct {
	profile    string
	gpu, start int
}

// migsOfPod returns the MIG profiles of p, a pod of several MIG devices
// as the cycle sees it (nil for any other pod), and the devices it holds
// (nil unless its claims name them all).
func migsOfPod(p *v1.Pod) (profiles []string, held []heldMIG) {
	mig, _ := partDemand(p)
	if !strings.Contains(mig, ",") {
		return nil, nil
	}
	profiles = strings.Split(mig, ",")
	at := strings.Split(p.Annotations[draMIGHeldAnnotation], ",")
	if len(at) != len(profiles) {
		return profiles, nil
	}
	for i, x := range at {
		g, s, ok := strings.Cut(x, "@")
		gpu, err1 := strconv.Atoi(g)
		start, err2 := strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil {
			return profiles, nil
		}
		held = append(held, heldMIG{profile: profiles[i], gpu: gpu, start: start})
	}
	return profiles, held
}

// migTasks returns the task demands of a pod of several MIG devices
// (profiles) demanding d: its CPU and memory in one task (none when it
// asks for neither), then one task per MIG device.
func migTasks(d demand, profiles []string) []demand {
	var out []demand
	if d.cpuMilli > 0 || d.memoryMiB > 0 {
		out = append(out, demand{cpuMilli: d.cpuMilli, memoryMiB: d.memoryMiB})
	}
	for _, p := range profiles {
		out = append(out, demand{mig: p})
	}
	return out
}

// podTasks returns the tasks of a pod demanding d: the pod itself, or
// for a pod of several MIG devices or shares (several) its migTasks or
// shareTasks (dra_shares.go).
func podTasks(d demand) (tasks []demand, several bool) {
	if d.shares != "" {
		return shareTasks(d), true
	}
	if profiles := strings.Split(d.mig, ","); len(profiles) > 1 {
		return migTasks(d, profiles), true
	}
	return []demand{d}, false
}

// heldMIGClaims returns the MIG devices on host hid that p, a pod of
// several MIG devices as the cycle sees it, holds (its claims name them
// all: draMIGHeldAnnotation); nil when it holds none or not all.
func heldMIGClaims(c *topology.Cluster, hid topology.HostID, p *v1.Pod) []topology.GPUClaim {
	_, held := migsOfPod(p)
	taken := make([]bool, len(held))
	var out []topology.GPUClaim
	for _, m := range held {
		cl, ok := heldMIGClaim(c, hid, workload.TaskGroup{MIGProfile: m.profile}, held, taken)
		if !ok {
			return nil
		}
		out = append(out, cl.GPUs...)
	}
	return out
}

// onOneHost is the topology constraint of a pod of several MIG devices.
var onOneHost = workload.Constraint{Level: "host", Required: true}

// heldMIGClaim returns the claim of the next MIG device of group g's
// profile that p (a pod of several MIG devices, held its devices) holds
// on host hid and that taken (per held device) does not mark, marking
// it; ok is false when there is none.
func heldMIGClaim(c *topology.Cluster, hid topology.HostID, g workload.TaskGroup, held []heldMIG, taken []bool) (topology.Claim, bool) {
	cl := topology.Claim{Host: hid, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
	if g.MIGProfile == "" {
		return cl, true // (its CPU task)
	}
	prof, ok := c.Model(c.HostModel(hid)).MIGProfileByName(g.MIGProfile)
	first, count := c.HostGPUs(hid)
	if !ok {
		return cl, false
	}
	for i, m := range held {
		if taken[i] || m.profile != g.MIGProfile || m.gpu < 0 || m.gpu >= count {
			continue
		}
		taken[i] = true
		cl.GPUs = []topology.GPUClaim{{GPU: first + topology.GPUID(m.gpu), Kind: topology.ClaimMIG, Profile: prof, Start: int8(m.start)}}
		return cl, true
	}
	return cl, false
}

// mergeAssignment adds to a, a pod's assignment, that of another task of
// the pod (b): its GPUs and their parts.
func mergeAssignment(a, b *assignment) {
	if len(b.gpus) == 0 {
		return // (its CPU task)
	}
	a.part = strings.TrimPrefix(a.part+";"+b.part, ";")
	a.gpus = append(a.gpus, b.gpus...)
}

// assignSeveral assigns the pods of rec's job (pods of several MIG
// devices, a gang of them on one host) the GPUs and MIG devices of
// their tasks in pl (task k of group g is the job's pods[g][k]), and
// lets a single pod through or writes a gang's plan.
func (h *host) assignSeveral(job string, rec *jobRec, pl *gang.Placement, now time.Time, fx *effects) {
	c := h.topo.Cluster
	byPod := map[*v1.Pod]*assignment{}
	placed := make([]int, len(rec.job.pods))
	for i, t := range pl.Tasks {
		g := int(t.Group)
		if i >= len(pl.Claims) || g >= len(rec.job.pods) || placed[g] >= len(rec.job.pods[g]) {
			continue
		}
		p := rec.job.pods[g][placed[g]]
		placed[g]++
		x := claimAssignment(c, pl.Claims[i])
		x.job = job
		if a := byPod[p]; a == nil {
			byPod[p] = &x
		} else {
			mergeAssignment(a, &x)
		}
	}
	pods := rec.job.all()
	var planned []plannedPod
	for _, p := range pods {
		if a := byPod[p]; a != nil {
			planned = append(planned, plannedPod{pod: p, node: a.node})
		}
	}
	if len(planned) == 0 {
		return
	}
	// The plan, one pod or a gang on its node, is checked as any plan is.
	if h.refusePlan(job, rec, planned, now, fx) {
		return
	}
	var plan *planWrite
	if len(pods) > 1 {
		fx.plans = append(fx.plans, planWrite{job: job})
		plan = &fx.plans[len(fx.plans)-1]
	}
	for _, pp := range planned {
		a := byPod[pp.pod]
		a.unwritten = plan != nil
		h.setAssign(pp.pod.UID, a)
		if plan != nil {
			plan.add(pp.pod, a)
		} else {
			fx.activate = append(fx.activate, pp.pod)
		}
		h.amu.Lock()
		delete(h.notes, pp.pod.UID)
		h.amu.Unlock()
	}
}
