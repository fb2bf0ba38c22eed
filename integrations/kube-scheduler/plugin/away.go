package plugin

import (
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// awayNodes follows GPU nodes that are temporarily unavailable (issue 26,
// defect 5): kubelet reports allocatable GPUs 0 while the device plugin
// restarts and registers again, though the node's capacity (or its GPU
// count label) still says it has GPUs. For Args.GPUUnavailableGrace from
// when it was first seen so, such a node keeps its place in the cluster
// with the GPUs it had, cordoned in the Scheduler (Scheduler.Cordon: no
// new work; what runs there runs on, keeps its GPUs, and is neither
// recovered nor deleted). When its GPUs come back it is uncordoned; when
// the grace ends first, it is taken as it is: a node without GPUs, which
// leaves the cluster (its jobs are recovered).
type awayNodes struct {
	since    map[string]time.Time // first seen unavailable
	cordoned map[string]bool      // cordoned by this concern
}

// view returns nodes as the cluster model takes them at now: a node
// unavailable within its grace gets its GPUs back in a copy (its
// allocatable from its capacity, or count label). away lists those nodes.
func (a *awayNodes) view(nodes []*v1.Node, args *Args, now time.Time) (out []*v1.Node, away []string) {
	if a.since == nil {
		a.since, a.cordoned = map[string]time.Time{}, map[string]bool{}
	}
	res := v1.ResourceName(args.GPUResource)
	out = make([]*v1.Node, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		alloc := n.Status.Allocatable[res]
		has := hasGPUs(n, args)
		if alloc.Value() > 0 || has == 0 {
			out = append(out, n)
			continue
		}
		seen[n.Name] = true
		t, ok := a.since[n.Name]
		if !ok {
			t = now
			a.since[n.Name] = t
		}
		if now.Sub(t) >= args.GPUUnavailableGrace() {
			out = append(out, n) // the grace is over: taken as it is
			continue
		}
		c := n.DeepCopy()
		if c.Status.Allocatable == nil {
			c.Status.Allocatable = v1.ResourceList{}
		}
		c.Status.Allocatable[res] = *resource.NewQuantity(int64(has), resource.DecimalSI)
		out = append(out, c)
		away = append(away, n.Name)
	}
	for name := range a.since {
		if !seen[name] {
			delete(a.since, name)
		}
	}
	return out, away
}

// hasGPUs is how many GPUs n says it has beside its allocatable: its
// capacity, else its GPU count label.
func hasGPUs(n *v1.Node, args *Args) int {
	if q, ok := n.Status.Capacity[v1.ResourceName(args.GPUResource)]; ok && q.Value() > 0 {
		return int(q.Value())
	}
	if c, err := strconv.Atoi(n.Labels[args.GPUCountLabel]); err == nil && c > 0 {
		return c
	}
	return 0
}

// cordonAway cordons the away nodes in the Scheduler and uncordons those
// this concern cordoned that are back.
func (h *host) cordonAway(away []string) {
	if h.s == nil {
		return
	}
	now := map[string]bool{}
	for _, name := range away {
		now[name] = true
		hid, ok := h.s.Cluster().HostByName(name)
		if !ok {
			continue
		}
		if !h.s.Ledger().HostCordoned(hid) {
			if err := h.s.Cordon(name); err != nil {
				h.log.Error(err, "Cordoning a node whose GPUs are temporarily unavailable", "node", name)
				continue
			}
			h.log.Info("GPUs temporarily unavailable (allocatable 0, capacity > 0): no new pods on the node; its pods keep their GPUs", "node", name, "grace", h.args.GPUUnavailableGrace())
		}
		h.away.cordoned[name] = true
	}
	for _, name := range sortedKeys(h.away.cordoned) {
		if now[name] {
			continue
		}
		delete(h.away.cordoned, name)
		if _, ok := h.s.Cluster().HostByName(name); ok {
			_ = h.s.Uncordon(name) // (fails only for a node leaving: it stays cordoned)
		}
	}
}

// restoreOn runs restore, which restores a job holding claims, with the
// hosts of claims this concern cordoned uncordoned meanwhile: a pod bound
// on a node whose GPUs are temporarily unavailable keeps them, also when
// the scheduler starts (or rebuilds) during the grace (a cordoned host
// takes no claim, and the job would be taken for invalid, its GPUs for
// free).
func (a *awayNodes) restoreOn(s *gpusched.Scheduler, claims [][]topology.Claim, restore func() error) error {
	c, l := s.Cluster(), s.Ledger()
	var back []string
	for _, cls := range claims {
		for _, cl := range cls {
			name := c.HostName(cl.Host)
			if a.cordoned[name] && l.HostCordoned(cl.Host) && !slices.Contains(back, name) && s.Uncordon(name) == nil {
				back = append(back, name)
			}
		}
	}
	err := restore()
	for _, name := range back {
		_ = s.Cordon(name) // (it was cordoned a moment ago)
	}
	return err
}
