package gang

import (
	"slices"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// Tracker is implemented by placers whose choices depend on which tasks
// run where, beyond what the ledger records (those built on frag's
// gpu-clustering). A caller that commits a placement should report it with
// Committed, and its undo with Undone. Every Placer that New returns
// implements Tracker; for the others the calls do nothing.
type Tracker interface {
	Committed(r *Request, p *Placement)
	Undone(r *Request, p *Placement)
}

// Committed implements Tracker.
func (pl *policy) Committed(r *Request, p *Placement) {
	if t, ok := pl.node.(frag.Tracker); ok {
		for i := range p.Claims {
			t.Allocated(p.Claims[i], fragTask(&r.Groups[p.Tasks[i].Group]))
		}
	}
}

// Undone implements Tracker.
func (pl *policy) Undone(r *Request, p *Placement) {
	if t, ok := pl.node.(frag.Tracker); ok {
		for i := range p.Claims {
			t.Released(p.Claims[i], fragTask(&r.Groups[p.Tasks[i].Group]))
		}
	}
}

func fragTask(g *Group) frag.Task {
	return frag.Task{GPUs: g.GPUs, GPUMilli: g.Milli, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB, Models: g.Models}
}

// fragTask places the next task of group gi with the node-level policy:
// the policy picks the host (and a share's GPU) inside the current scope;
// whole GPUs are then chosen on that host by locality (node policies take
// the lowest-numbered free GPUs, and which free GPUs a task gets does not
// change their host scores). A host whose pick breaks a GPU filter or the
// scope's fabric domain is excluded and the policy asked again. The task
// is trial-allocated on the ledger so the next pick sees it.
func (pl *policy) fragTask(gi int) bool {
	e := &pl.e
	g := &e.r.Groups[gi]
	t := fragTask(g)
	e.excl = e.excl[:0]
	e.fragGroup = g // (allowHost: the group's own filter)
	within := e.s.dom
	if e.s.fabric != topology.NoDomain {
		within = e.treeAround(e.s.hosts)
	}
	tracker, _ := pl.node.(frag.Tracker)
	for {
		cl, ok := pl.node.Pick(e.l, t, frag.Scope{Within: within, Allow: e.allowFn})
		if !ok {
			return false
		}
		h := cl.Host
		if h < 0 || int(h) >= e.c.NumHosts() || !e.s.contains(h) || slices.Contains(e.excl, h) {
			// A policy that ignores its scope: do not trust it further.
			return false
		}
		ref := TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}
		e.gcs = e.gcs[:0]
		switch g.Kind {
		case TaskWhole:
			avail := e.wholeAvail(h)
			if avail.count() < g.GPUs {
				e.excl = append(e.excl, h)
				continue
			}
			set := e.chooseWhole(h, g.GPUs, avail)
			first, _ := e.c.HostGPUs(h)
			for i := set.first(); i >= 0; i = set.first() {
				e.gcs = append(e.gcs, topology.GPUClaim{GPU: first + topology.GPUID(i), Kind: topology.ClaimWhole})
				var one gpuSet
				one.add(i)
				set = set.andNot(one)
			}
		case TaskShare:
			e.gcs = append(e.gcs, cl.GPUs...)
			if len(e.gcs) != 1 || !e.gpuOK(e.gcs[0].GPU) {
				x, ok := e.shareGPU(h, g.Milli)
				if !ok {
					e.excl = append(e.excl, h)
					continue
				}
				e.gcs = append(e.gcs[:0], topology.GPUClaim{GPU: x, Kind: topology.ClaimShare, Milli: int32(g.Milli)})
			}
		}
		if !e.record(ref, h, g) {
			e.excl = append(e.excl, h)
			continue
		}
		if tracker != nil {
			tracker.Allocated(e.p.Claims[len(e.p.Claims)-1], t)
		}
		return true
	}
}

// allowHost is the frag.Scope filter of delegated picks: in scope, allowed
// by the request, not excluded by an earlier pick of this task.
func (e *engine) allowHost(h topology.HostID) bool {
	if !e.s.contains(h) || slices.Contains(e.excl, h) {
		return false
	}
	return (e.r.AllowHost == nil || e.r.AllowHost(h)) && (e.fragGroup == nil || e.fragGroup.AllowsHost(h))
}

// treeAround returns the smallest tree domain holding all of hosts
// (ascending).
func (e *engine) treeAround(hosts []topology.HostID) topology.DomainID {
	c := e.c
	first, last := hosts[0], hosts[len(hosts)-1]
	for lv := topology.LevelHost; lv < c.LevelCluster(); lv++ {
		if d := c.HostAt(first, lv); d == c.HostAt(last, lv) {
			return d
		}
	}
	return c.Root()
}
