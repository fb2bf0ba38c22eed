package plugin

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"

	"github.com/gpusched/gpusched/topology"
)

// Device taints (docs/dra.md).
//
// A device's taints are those its slice publishes and those of every
// DeviceTaintRule whose selector names it (driver, pool, device; a rule
// without a selector names none), as kube's allocator sees them
// (taintsOf; readSlices gives each device its taints so). Whole GPUs map
// them onto the library's GPU health (taintHealth, host.draHealth; a free
// tainted GPU is lent to the pods that tolerate it, dra_lend.go). The
// library keeps health per GPU, not per MIG slot, so MIG devices do not:
// setting the GPU's health would recover every MIG device on it. Instead
//
//   - a MIG request is not given a node one of whose MIG devices of its
//     profile has a NoSchedule or NoExecute taint the request does not
//     tolerate (requestNodes, through taintFree): the library picks the
//     GPU and start on a node, so the node is the finest gpusched can keep
//     a request off one device; other profiles, and requests that
//     tolerate the taint, still use the node;
//   - a pod whose claim is allocated a MIG device with a NoExecute taint
//     its request does not tolerate is struck (draPod.struck): its job is
//     recovered as for a failed GPU (host.draStruck), the other MIG
//     devices of the GPU run on.

// taintsOf returns the taints of device dev of pool of the driver: its
// own and those rules add; own itself when no rule names it.
func taintsOf(own []resourceapi.DeviceTaint, rules []*resourceapi.DeviceTaintRule, driver, pool, dev string) []resourceapi.DeviceTaint {
	out := own
	for _, r := range rules {
		sel := r.Spec.DeviceSelector
		if sel == nil || sel.Driver != nil && *sel.Driver != driver || sel.Pool != nil && *sel.Pool != pool || sel.Device != nil && *sel.Device != dev {
			continue
		}
		out = append(slices.Clip(out), r.Spec.Taint) // (never into own's array: the informer's)
	}
	return out
}

// rulesKey lists the rules' names and versions, for the slices' key.
func rulesKey(rules []*resourceapi.DeviceTaintRule) string {
	var b strings.Builder
	for _, r := range rules {
		b.WriteString("rule " + r.Name + "@" + r.ResourceVersion + ";")
	}
	return b.String()
}

// untolerated returns the first taint of ts of one of effects that tols
// do not tolerate; ok is false when there is none.
func untolerated(ts []resourceapi.DeviceTaint, tols []resourceapi.DeviceToleration, effects ...resourceapi.DeviceTaintEffect) (resourceapi.DeviceTaint, bool) {
	for _, t := range ts {
		if !slices.Contains(effects, t.Effect) {
			continue
		}
		if !slices.ContainsFunc(tols, func(tol resourceapi.DeviceToleration) bool { return resourceclaim.ToleratesTaint(tol, t) }) {
			return t, true
		}
	}
	return resourceapi.DeviceTaint{}, false
}

// taintFree reports whether n may take MIG request r: none of its MIG
// devices of r's profile has a NoSchedule or NoExecute taint r does not
// tolerate. Other requests: true (whole GPUs go by GPU health).
func taintFree(n *draNode, r gpuRequest) bool {
	if r.part == nil || !r.part.mig {
		return true
	}
	for _, m := range n.migs {
		if m.profile != r.part.profile {
			continue
		}
		if _, bad := untolerated(m.spec.Taints, r.tols, resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); bad {
			return false
		}
	}
	return true
}

// struckBy returns why claims (a bound pod's, with their requests reqs by
// claim name) hold a MIG device of node with a NoExecute taint its
// request does not tolerate (the allocation's copy of the request's
// tolerations, else the request's own); "" when none does.
func (d *drat) struckBy(claims []*resourceapi.ResourceClaim, reqs map[string][]gpuRequest, node string) string {
	n := d.nodes[node]
	if n == nil {
		return ""
	}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.Driver != d.driver || res.Pool != n.pool {
				continue
			}
			var spec *resourceapi.Device
			if m := n.migOf(res.Device); m != nil {
				spec = m.spec
			} else if m := n.staticOf(res.Device); m != nil {
				spec = m.spec // (static MIG, dra_static.go)
			} else {
				continue
			}
			if t, bad := untolerated(spec.Taints, resultTols(res, reqs[c.Name]), resourceapi.DeviceTaintEffectNoExecute); bad {
				return fmt.Sprintf("MIG device %s of node %s tainted %s=%s:%s", res.Device, node, t.Key, t.Value, t.Effect)
			}
		}
	}
	return ""
}

// resultTols are the tolerations of the request of allocation result res
// (one of reqs): the allocation's copy, else the request's own.
func resultTols(res resourceapi.DeviceRequestAllocationResult, reqs []gpuRequest) []resourceapi.DeviceToleration {
	if res.Tolerations != nil {
		return res.Tolerations
	}
	name, _, _ := strings.Cut(res.Request, "/")
	if i := slices.IndexFunc(reqs, func(r gpuRequest) bool { return r.name == name || r.name == res.Request }); i >= 0 {
		return reqs[i].tols
	}
	return nil
}

// toleratedGPUs returns the whole GPUs of node (device names) that claims
// (a bound pod's, with their requests reqs by claim name) are allocated
// and whose NoExecute and NoSchedule taints, one at least, their requests
// all tolerate: the pod keeps such a GPU (host.draHealth).
func (d *drat) toleratedGPUs(claims []*resourceapi.ResourceClaim, reqs map[string][]gpuRequest, node string) []string {
	n := d.nodes[node]
	if n == nil {
		return nil
	}
	var out []string
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, res := range c.Status.Allocation.Devices.Results {
			i, ok := n.index[res.Device]
			if res.Driver != d.driver || res.Pool != n.pool || !ok || taintHealth(n.specs[i].Taints) == topology.Healthy {
				continue
			}
			if _, bad := untolerated(n.specs[i].Taints, resultTols(res, reqs[c.Name]), resourceapi.DeviceTaintEffectNoSchedule, resourceapi.DeviceTaintEffectNoExecute); !bad {
				out = append(out, res.Device)
			}
		}
	}
	return out
}

// tolerates reports whether a bound pod's claims hold the whole GPU dev of
// node and tolerate its taints (toleratedGPUs).
func (d *drat) tolerates(node, dev string) bool {
	for _, dp := range d.pods {
		if dp.src.Spec.NodeName == node && slices.Contains(dp.tolerated, dev) {
			return true
		}
	}
	return false
}

// draStruck recovers the jobs a pod of which holds a MIG device tainted
// NoExecute that its request does not tolerate (draPod.struck), as the
// library recovers a job on a failed GPU: a GPUSchedRecovery Warning, its
// pods deleted with deleteOnRecovery, the job queued again once they are
// gone (its claims are released then, and taintFree keeps its profile off
// the node while the taint stays). Without deleteOnRecovery it is told
// once per cause. h.mu is held.
func (h *host) draStruck(fx *effects) {
	if h.dra == nil || h.s == nil {
		return
	}
	for _, id := range sortedKeys(h.jobs) {
		rec := h.jobs[id]
		why := ""
		for _, p := range rec.job.all() {
			if dp := h.dra.pods[p.UID]; dp != nil && dp.struck != "" && p.Spec.NodeName != "" {
				why = dp.struck
				break
			}
		}
		if why == "" || rec.evicting || why == rec.struck {
			rec.struck = why
			continue
		}
		rec.struck = why
		h.recoverJob(fx, rec, fmt.Sprintf("job %s: %s", id, why))
	}
}
