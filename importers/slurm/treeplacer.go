package slurm

import (
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// treePlacer places one-node jobs as Slurm's topology/tree with
// select/cons_tres does, and hands every other request to the inner
// placer (gang's "topology"):
//
//   - among the leaf switches holding a node that can take the job, the
//     one with the fewest such nodes (the lowest switch index on ties);
//   - in it, the first such node in index order (Slurm's node bitmap
//     order), whatever its free GPUs: no best fit over GPUs.
//
// gang's topology policy instead takes the host with the least room
// left; on a busy site the two drift apart after a few one-GPU jobs (the
// conformance harness's scenario (d) showed it on every captured run).
// Which GPUs the job takes on the node is the inner placer's choice.
//
// It tries the request on each allowed host in turn: O(hosts) placements
// of a one-node job, fine for a site of hundreds of nodes, not meant for
// a data centre's worth.
type treePlacer struct {
	inner gang.Placer
	count []int // per leaf-switch domain: hosts that can take the job
}

// TreeNodeOrder wraps inner, gang's "topology" placer, so that one-node
// jobs are placed as Slurm's topology/tree does (Preset.TreeNodeOrder):
// the leaf switch with the fewest nodes that can take the job, then its
// first such node. Preset.Config uses it; a host that builds its own
// placer for a Slurm site (the simulator's --slurm) wraps it with this.
func TreeNodeOrder(inner gang.Placer) gang.Placer { return &treePlacer{inner: inner} }

// Place implements gang.Placer.
func (t *treePlacer) Place(l *topology.Ledger, r *gang.Request, p *gang.Placement) *gang.Explanation {
	c := r.Cluster()
	if r.Tasks() != 1 || c == nil || c.NumLevels() <= 3 {
		return t.inner.Place(l, r, p)
	}
	if x := t.inner.Place(l, r, p); x != nil {
		return x // fits nowhere: the inner placer explains why
	}
	leaf := topology.Level(2) // the lowest switch level
	allow := r.AllowHost
	defer func() { r.AllowHost = allow }()
	if n := c.NumDomains(); len(t.count) < n {
		t.count = make([]int, n)
	}
	clear(t.count)
	var only topology.HostID
	r.AllowHost = func(h topology.HostID) bool { return h == only }
	fits := make([]bool, c.NumHosts())
	for h := range topology.HostID(c.NumHosts()) {
		if allow != nil && !allow(h) {
			continue
		}
		only = h
		if t.inner.Place(l, r, p) == nil {
			fits[h] = true
			t.count[c.HostAt(h, leaf)]++
		}
	}
	best := topology.HostID(-1)
	for h := range topology.HostID(c.NumHosts()) {
		if !fits[h] {
			continue
		}
		if best < 0 {
			best = h
			continue
		}
		d, bd := c.HostAt(h, leaf), c.HostAt(best, leaf)
		if t.count[d] < t.count[bd] || (t.count[d] == t.count[bd] && d < bd) {
			best = h // fewer fitting nodes; else the lower switch, first node of it
		}
	}
	if best < 0 { // no single allowed host fits on its own: keep the inner choice
		r.AllowHost = allow
		return t.inner.Place(l, r, p)
	}
	only = best
	return t.inner.Place(l, r, p)
}
