package plugin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/topology"
)

// Nodes joining, leaving and changing while scheduler mode runs go to the
// running Scheduler as live changes (gpusched's live.go), without a
// rebuild: nothing it knows is lost (fair-share history, preemption
// counts, nominations, reservations), no pod is placed again.
//
//   - a node that gains allocatable GPUs is a host added (Scheduler.
//     AddHosts) under the switch of a node with the same topology-level
//     labels, with an existing host template of its shape or a new one;
//   - a node that is deleted or no longer offers GPUs is a host removed
//     (Scheduler.RemoveHosts): at once when it runs nothing, else once
//     its jobs are gone (they are recovered as from a drained host);
//   - a node whose GPU count, model, CPU or memory changes gets its new
//     shape (Scheduler.SetHostGPUs, drained first the same way);
//   - a node whose allocatable GPUs drop below (or come back to) its GPU
//     count label has GPUs marked failed (or healthy again)
//     (Scheduler.SetGPUHealth).
//
// What a live change cannot express rebuilds the Scheduler from the pods
// as at a restart: a node joining a topology domain no current node is
// in, a node in an NVLink clique (nvidia.com/gpu.clique), a GPU model the
// cluster has not seen, a node whose topology labels change, a node that
// comes back under the name of one still draining, a node that changes
// shape while some of its GPUs are not allocatable.

// liveNodes is what the host knows of the nodes its Scheduler's cluster
// was built from: each GPU node's shape, and the template name of each
// template key.
type liveNodes struct {
	shapes    map[string]nodeShape
	templates map[string]string // template key → name in the cluster
	seq       int               // templates added
}

// record notes the shapes of nodes, after a build.
func (ln *liveNodes) record(nodes []*v1.Node, a *Args, c *topology.Cluster) {
	ln.shapes, ln.templates = map[string]nodeShape{}, map[string]string{}
	for _, n := range nodes {
		s, ok := shapeOf(n, a)
		if !ok {
			continue
		}
		ln.shapes[s.name] = s
		if h, ok := c.HostByName(s.name); ok {
			_, key := s.template()
			ln.templates[key] = c.Host(h).Template
		}
	}
}

// followCluster points the host's view at the Scheduler's current
// cluster: live changes, and cycles that take drained hosts out or bring
// them back reshaped, make new versions (host IDs stay; new hosts get new
// ones).
func (h *host) followCluster() {
	if h.s == nil || h.topo == nil {
		return
	}
	c := h.s.Cluster()
	if c == h.topo.Cluster {
		return
	}
	un := make([]int, c.NumHosts())
	copy(un, h.topo.unavailable)
	h.topo = &Topology{Cluster: c, Warnings: h.topo.Warnings, unavailable: un}
}

// sameDomain reports whether a and b sit in the same topology domains.
func sameDomain(a, b nodeShape) bool {
	return a.clique == b.clique && slices.Equal(a.levels, b.levels)
}

// applyLive brings the running Scheduler's cluster to nodes by live
// changes; it reports false when they cannot express the change (the
// caller rebuilds), having changed nothing or only what a rebuild redoes.
func (h *host) applyLive(nodes []*v1.Node, now time.Time) bool {
	if h.s == nil || h.live.shapes == nil {
		return false
	}
	c := h.s.Cluster()
	next := map[string]nodeShape{}
	var names []string
	for _, n := range nodes {
		if s, ok := shapeOf(n, h.args); ok {
			next[s.name] = s
			names = append(names, s.name)
		}
	}
	var removed, health []string
	type reshape struct {
		name string
		s    nodeShape
	}
	var reshaped []reshape
	var add topology.Change
	for _, name := range sortedKeys(h.live.shapes) {
		if _, ok := next[name]; !ok {
			removed = append(removed, name)
		}
	}
	newTemplate := func(s nodeShape) (string, bool) {
		if _, ok := c.ModelByName(s.model); !ok {
			return "", false // a model the cluster has not seen
		}
		ht, key := s.template()
		if name, ok := h.live.templates[key]; ok {
			return name, true
		}
		h.live.seq++
		ht.Name = fmt.Sprintf("live%d-%dx%s", h.live.seq, s.gpus, strings.ReplaceAll(s.model, " ", "-"))
		add.Templates = append(add.Templates, ht)
		h.live.templates[key] = ht.Name
		return ht.Name, true
	}
	for _, name := range names {
		s := next[name]
		old, known := h.live.shapes[name]
		switch {
		case !known:
			if _, taken := c.HostByName(name); taken || s.clique != "" {
				return false
			}
			hg := topology.HostGroup{Name: name}
			if len(s.levels) > 0 {
				parent := ""
				for _, o := range sortedKeys(h.live.shapes) {
					os := h.live.shapes[o]
					if !slices.Contains(removed, o) && sameDomain(os, s) && !slices.Contains(s.levels, "") {
						if hid, ok := c.HostByName(o); ok {
							parent = c.DomainName(c.Host(hid).Parent)
							break
						}
					}
				}
				if parent == "" {
					return false // a domain no current node is in
				}
				hg.Parent = parent
			}
			t, ok := newTemplate(s)
			if !ok {
				return false
			}
			hg.Template = t
			add.Hosts = append(add.Hosts, hg)
		case !sameDomain(old, s):
			return false
		case old.gpus != s.gpus || old.model != s.model || old.cpuMilli != s.cpuMilli || old.memoryMiB != s.memoryMiB || old.machine != s.machine:
			if s.gpus > s.allocGPUs {
				return false // its missing GPUs would be marked once it is back: rebuild
			}
			reshaped = append(reshaped, reshape{name, s})
		case old.allocGPUs != s.allocGPUs:
			health = append(health, name)
		}
	}
	// Templates for the reshaped hosts go with the additions.
	type hostTemplate struct{ name, template string }
	var shapesTo []hostTemplate
	for _, r := range reshaped {
		t, ok := newTemplate(r.s)
		if !ok {
			return false
		}
		shapesTo = append(shapesTo, hostTemplate{r.name, t})
	}
	if len(add.Hosts) > 0 || len(add.Templates) > 0 {
		if err := h.s.AddHosts(add, now); err != nil {
			h.log.Info("Nodes joined that a live change cannot add; rebuilding", "err", err)
			return false
		}
	}
	for _, r := range shapesTo {
		if _, err := h.s.SetHostGPUs(r.name, r.template, nil, now); err != nil {
			h.log.Info("A node changed shape in a way a live change cannot apply; rebuilding", "node", r.name, "err", err)
			return false
		}
	}
	if len(removed) > 0 {
		jobs, err := h.s.RemoveHosts(removed, now)
		if err != nil {
			h.log.Info("Nodes left that a live change cannot remove; rebuilding", "nodes", removed, "err", err)
			return false
		}
		h.log.Info("GPU nodes leaving", "nodes", removed, "jobsToLeaveFirst", jobs)
	}
	// GPUs the device plugin no longer offers (or offers again): their
	// marks follow in the cycle (host.markLost, gpuidentity.go).
	c = h.s.Cluster()
	unavail := make([]int, c.NumHosts())
	for _, name := range names {
		s := next[name]
		if hid, ok := c.HostByName(name); ok && s.gpus > s.allocGPUs {
			unavail[hid] = s.gpus - s.allocGPUs
		}
	}
	h.topo = &Topology{Cluster: c, Warnings: h.topo.Warnings, unavailable: unavail}
	h.live.shapes = next
	if len(add.Hosts)+len(removed)+len(reshaped)+len(health) > 0 {
		h.log.V(2).Info("GPU nodes changed live", "added", len(add.Hosts), "removed", len(removed), "reshaped", len(reshaped), "gpuHealth", len(health))
	}
	return true
}
