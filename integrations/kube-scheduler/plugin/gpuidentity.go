package plugin

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/topology"
)

// Which GPUs of a node failed (issue 26, defect 8c). A node whose device
// plugin offers fewer GPUs than its nvidia.com/gpu.count label has lost
// some, but neither the device plugin nor GPU feature discovery says
// which: kube sees only the allocatable count. Marking the highest
// indices failed, as the plugin did, recovers (with deleteOnRecovery:
// deletes) whichever job runs there, which may not be the one on the
// failed GPU. So:
//
//   - a node that names its failed GPUs, by the indices of the
//     gpusched.io/gpu-indices annotation, in the annotation
//     UnhealthyGPUsAnnotation (written by a health agent: DCGM health
//     checks, NVSentinel, an operator), as many as it lacks, has exactly
//     those marked failed: the job on them is recovered;
//   - otherwise the mapping is unknown. The lost GPUs are taken out of
//     the free ones (highest index first), so nothing new is placed on
//     them; a job is recovered only when it certainly holds a failed GPU
//     (the node's other GPUs are fewer than the GPUs it lost); the rest
//     stay counted until GPUs free up, and the pods on the node get a
//     GPUSchedRecovery Warning saying that the mapping is unknown and no
//     pod is recovered by guess.

// UnhealthyGPUsAnnotation is the node annotation naming the node's failed
// GPUs by index (as in gpusched.io/gpu-indices: "1" or "1,5").
const UnhealthyGPUsAnnotation = "gpusched.io/unhealthy-gpus"

// failedIndices returns the GPU indices n's UnhealthyGPUsAnnotation names
// when they are exactly lost of its gpus (sorted), else nil.
func failedIndices(n *v1.Node, gpus, lost int) []int {
	idx := parseIndices(n.Annotations[UnhealthyGPUsAnnotation], gpus)
	if lost <= 0 || len(idx) != lost {
		return nil
	}
	slices.Sort(idx)
	return idx
}

// lostGPUs is the concern of GPUs marked failed because their node does
// not offer them: the hosts it marked, and what it last said about a
// host whose mapping is unknown. Its methods are the only writers.
type lostGPUs struct {
	marked map[string]bool   // node → some of its GPUs are marked failed
	said   map[string]string // node → the unknown-mapping message last given
}

// markLost brings the failed marks of every GPU node's GPUs in line with
// what the node offers (see above), under mu, after reconcile.
func (h *host) markLost(fx *effects) {
	c, l := h.topo.Cluster, h.s.Ledger()
	var names []string
	for name, s := range h.live.shapes {
		if s.gpus > s.allocGPUs || h.lost.marked[name] {
			names = append(names, name)
		}
	}
	for name := range h.lost.marked {
		if _, ok := h.live.shapes[name]; !ok {
			delete(h.lost.marked, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		s := h.live.shapes[name]
		hid, ok := c.HostByName(name)
		if !ok {
			continue
		}
		first, count := c.HostGPUs(hid)
		if count != s.gpus {
			continue // being reshaped (livenodes.go)
		}
		lost := max(0, s.gpus-s.allocGPUs)
		want, unknown := s.failed, 0
		if want == nil && lost > 0 {
			want, unknown = h.guessLost(hid, first, count, lost)
		}
		for i := range count {
			g := first + topology.GPUID(i)
			failed := slices.Contains(want, i)
			if failed == (l.GPU(g).Health == topology.Failed) {
				continue
			}
			health := topology.Healthy
			if failed {
				health = topology.Failed
			}
			if _, err := h.s.SetGPUHealth(g, health); err != nil {
				h.log.Error(err, "Setting the health of a GPU", "node", name, "index", i)
			}
		}
		if h.lost.marked == nil {
			h.lost.marked, h.lost.said = map[string]bool{}, map[string]string{}
		}
		h.lost.marked[name] = len(want) > 0
		h.sayUnknown(fx, name, lost, count, unknown)
	}
}

// guessLost chooses which lost GPUs of host hid to mark failed when its
// node does not say: those marked already (up to lost; a job recovered
// from them is not recovered twice), then free GPUs from the highest
// index down, then the GPUs of jobs that certainly hold a failed one
// (count − their GPUs on the host < lost). unknown is how many it could
// not place.
func (h *host) guessLost(hid topology.HostID, first topology.GPUID, count, lost int) (want []int, unknown int) {
	l := h.s.Ledger()
	for i := range count {
		if len(want) < lost && l.GPU(first+topology.GPUID(i)).Health == topology.Failed {
			want = append(want, i)
		}
	}
	for i := count - 1; i >= 0 && len(want) < lost; i-- {
		if g := l.GPU(first + topology.GPUID(i)); g.Health != topology.Failed && g.Mode == topology.ModeFree {
			want = append(want, i)
		}
	}
	if len(want) < lost {
		for _, id := range sortedKeys(h.jobs) {
			st, ok := h.s.Job(id)
			if !ok || st.Placement == nil {
				continue
			}
			var held []int
			for _, cl := range st.Placement.Claims {
				if cl.Host != hid {
					continue
				}
				for _, x := range cl.GPUs {
					held = append(held, int(x.GPU-first))
				}
			}
			if len(held) == 0 || count-len(held) >= lost {
				continue // the lost GPUs may all be elsewhere
			}
			for _, i := range held {
				if len(want) < lost && !slices.Contains(want, i) {
					want = append(want, i)
				}
			}
		}
	}
	return want, lost - len(want)
}

// sayUnknown tells the pods bound on node name, once per message, that
// unknown of its lost GPUs could not be attributed.
func (h *host) sayUnknown(fx *effects, name string, lost, count, unknown int) {
	if unknown == 0 {
		delete(h.lost.said, name)
		return
	}
	msg := fmt.Sprintf("gpusched: node %s offers %d of its %d GPUs and does not say which GPU failed (node annotation %s): no pod is recovered by guess; %d lost GPU(s) stay counted as in use until GPUs of the node free up",
		name, count-lost, count, UnhealthyGPUsAnnotation, unknown)
	if h.lost.said[name] == msg {
		return
	}
	h.lost.said[name] = msg
	h.log.Info("Lost GPUs of a node not attributed: no pod recovered by guess", "node", name, "lost", lost, "unattributed", unknown)
	for _, id := range sortedKeys(h.jobs) {
		for _, p := range h.jobs[id].job.all() {
			if p.Spec.NodeName == name && !isTerminal(p) {
				fx.events = append(fx.events, podEvent{p, v1.EventTypeWarning, ReasonRecovery, msg})
			}
		}
	}
}
