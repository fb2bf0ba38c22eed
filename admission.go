package gpusched

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// admission is the quota side of deciding on a job: what a request
// demands and a placement charges per dimension of the queue tree, the
// per-model quota check that yields a candidate's model filter, and the
// "can never run" checks of Submit. It reads the tree; it writes only its
// own caches and the model filters of the job it is asked about.
type admission struct {
	c    *topology.Cluster
	tree *queue.Tree
	// vec is models()'s buffer for one model's demand; zero between calls.
	vec queue.Vector
	// charged is chargeScratch's buffer.
	charged queue.Vector
	// idle caches, per shape, whether it fits on the idle cluster:
	// checked[shape] is set once idleFail[shape] is (nil: it fits).
	empty    *topology.Ledger
	idleFail map[string]*gang.Explanation
	checked  map[string]bool
}

func newAdmission(c *topology.Cluster, tree *queue.Tree) admission {
	return admission{c: c, tree: tree, idleFail: map[string]*gang.Explanation{}, checked: map[string]bool{}}
}

// bound drops the idle-fit cache when it holds too many shapes.
func (a *admission) bound() {
	if len(a.checked) > maxCached {
		clear(a.checked)
		clear(a.idleFail)
	}
}

// modelSet is a set of GPU models as a host filter: hosts without GPUs
// and hosts of a model in the set pass. Each job owns its own (see
// jobModels), so a filter handed out for one candidate never changes
// under it while another is decided.
type modelSet struct {
	c  *topology.Cluster
	ok []bool // by ModelID
}

func (m *modelSet) allows(h topology.HostID) bool {
	model := m.c.HostModel(h)
	return model == topology.NoModel || m.ok[model]
}

// jobModels are a job's model filters, written by admission.models each
// time the job is decided on. allowFn and guarFn are the method values
// of allow and guar, made once.
type jobModels struct {
	allow, guar     modelSet
	allowFn, guarFn func(topology.HostID) bool
	// last is the host filter the job's last check returned
	// (modelChoice.allow): what the PlanPreemptor's verdict asks about
	// between cycles (hostCouldMatter).
	last func(topology.HostID) bool
}

// modelChoice is the outcome of the per-model quota check of one
// candidate: the host filter of the models whose quota has room (nil:
// no restriction; with a block, no model) and a cache-key suffix naming
// that set; the filter and
// key of the models that also keep the queue within its nominal quota
// (nil when that is no narrower, or empty), tried first so a job borrows
// only when its guaranteed models have no room; or the quota block of
// the first acceptable model when none has room.
type modelChoice struct {
	allow, guar func(topology.HostID) bool
	key, gkey   string
	block       *queue.Block
}

// models checks j (in leaf lid) against the per-model quotas and returns
// its model filters (see modelChoice); the filters are j's own, valid
// until the next check of j.
func (a *admission) models(lid queue.NodeID, j *job) modelChoice {
	ch := a.checkModels(lid, j)
	j.models.last = ch.allow
	return ch
}

// filter returns the host filter of j's last check (nil: none).
func (a *admission) filter(j *job) func(topology.HostID) bool { return j.models.last }

// checkModels is models without recording the filter.
func (a *admission) checkModels(lid queue.NodeID, j *job) modelChoice {
	dims := a.tree.Dimensions()
	if len(dims.Models) == 0 || j.demand[fairshare.DimGPU] == 0 {
		return modelChoice{}
	}
	if a.vec == nil {
		a.vec = make(queue.Vector, dims.Len())
	}
	jm := &j.models
	if jm.allow.ok == nil {
		n := len(a.c.Models())
		jm.allow, jm.guar = modelSet{c: a.c, ok: make([]bool, n)}, modelSet{c: a.c, ok: make([]bool, n)}
		jm.allowFn, jm.guarFn = jm.allow.allows, jm.guar.allows
	}
	var ch modelChoice
	all, some, nguar := true, false, 0
	var keyb, gkeyb []byte
	for m := range jm.allow.ok {
		mid := topology.ModelID(m)
		jm.allow.ok[m], jm.guar.ok[m] = false, false
		if !acceptsModel(j.req, mid) {
			continue
		}
		k := a.modelDim(mid)
		ok, within := true, true
		if k >= 0 {
			a.vec[k] = j.demand[fairshare.DimGPU]
			if b := a.tree.Check(lid, a.vec); b != nil {
				ok = false
				if ch.block == nil {
					ch.block = b
				}
			}
			within = ok && !a.tree.Borrows(lid, a.vec)
			a.vec[k] = 0
		}
		jm.allow.ok[m], jm.guar.ok[m] = ok, within
		if ok {
			some = true
			keyb = fmt.Appendf(keyb, ",%d", m)
		} else {
			all = false
		}
		if within {
			nguar++
			gkeyb = fmt.Appendf(gkeyb, ",%d", m)
		}
	}
	if !some {
		// No model has room: the filter admits only hosts without GPUs.
		return modelChoice{allow: jm.allowFn, key: "@", block: ch.block}
	}
	ch.block = nil
	if !all {
		ch.allow, ch.key = jm.allowFn, "@"+string(keyb)
	}
	if nguar > 0 && string(gkeyb) != string(keyb) {
		ch.guar, ch.gkey = jm.guarFn, "@"+string(gkeyb)
	}
	return ch
}

func acceptsModel(r *gang.Request, m topology.ModelID) bool {
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Kind != gang.TaskCPU && g.Accepts(m) {
			return true
		}
	}
	return false
}

// demand is the quota estimate of a request before placement: the Min
// tasks of every group, MIG instances at their smallest size; model
// dimensions stay zero (the placement decides the model).
func (a *admission) demand(r *gang.Request) queue.Vector {
	d := r.MinDemand()
	v := make(queue.Vector, a.tree.Dimensions().Len())
	v[fairshare.DimGPU] = d.Milli
	v[fairshare.DimCPU] = d.CPUMilli
	v[fairshare.DimMemory] = d.MemoryMiB
	return v
}

// demandOf is demand (planSource).
func (s *Scheduler) demandOf(r *gang.Request) queue.Vector { return s.adm.demand(r) }

// charge is what a placement takes, per dimension of the tree.
func (a *admission) charge(p *gang.Placement) queue.Vector {
	return a.chargeInto(make(queue.Vector, a.tree.Dimensions().Len()), p)
}

// chargeScratch is charge in a buffer valid until the next call.
func (a *admission) chargeScratch(p *gang.Placement) queue.Vector {
	if n := a.tree.Dimensions().Len(); len(a.charged) != n {
		a.charged = make(queue.Vector, n)
	} else {
		clear(a.charged)
	}
	return a.chargeInto(a.charged, p)
}

// chargeInto adds what placement p takes to v (zero, one entry per
// dimension of the tree) and returns v.
func (a *admission) chargeInto(v queue.Vector, p *gang.Placement) queue.Vector {
	for _, cl := range p.Claims {
		v[fairshare.DimCPU] += cl.CPUMilli
		v[fairshare.DimMemory] += cl.MemoryMiB
		for _, g := range cl.GPUs {
			var milli int64
			info := a.c.GPU(g.GPU)
			switch g.Kind {
			case topology.ClaimWhole:
				milli = topology.MilliPerGPU
			case topology.ClaimShare:
				milli = int64(g.Milli)
			case topology.ClaimMIG:
				milli = int64(a.c.Model(info.Model).MIGProfiles[g.Profile].Milli)
			}
			v[fairshare.DimGPU] += milli
			if k := a.modelDim(info.Model); k >= 0 {
				v[k] += milli
			}
		}
	}
	return v
}

// modelDim returns the tree dimension of model m, or −1 if no quota
// names it.
func (a *admission) modelDim(m topology.ModelID) int {
	if m == topology.NoModel {
		return -1
	}
	name := a.c.Model(m).Model
	for i, x := range a.tree.Dimensions().Models {
		if x == name {
			return fairshare.DimModel + i
		}
	}
	return -1
}

// dimOf returns the tree dimension named resource (GPU if none is).
func (a *admission) dimOf(resource string) int {
	dims := a.tree.Dimensions()
	for r := 0; r < dims.Len(); r++ {
		if dims.Name(r) == resource {
			return r
		}
	}
	return fairshare.DimGPU
}

// neverFits checks a new job against its queue's ceiling and the idle
// cluster (placed by placer). The idle check is cached per shape.
func (a *admission) neverFits(j *job, placer gang.Placer) error {
	ceil := a.tree.Ceiling(j.leaf.ID())
	dims := a.tree.Dimensions()
	for r := 0; r < fairshare.DimModel; r++ {
		if ceil[r] >= 0 && j.demand[r] > ceil[r] {
			return fmt.Errorf("%w: needs %s of %s, more than queue %s could ever be admitted with (%s)",
				ErrNeverFits, amount(r, j.demand[r]), dims.Name(r), j.leaf.Name(), amount(r, ceil[r]))
		}
	}
	if len(dims.Models) > 0 && j.demand[fairshare.DimGPU] > 0 {
		// Some acceptable model must have room for the whole GPU demand.
		ok := false
		var tried []string
		for m := range a.c.Models() {
			if !acceptsModel(j.req, topology.ModelID(m)) {
				continue
			}
			k := a.modelDim(topology.ModelID(m))
			if k < 0 || ceil[k] >= j.demand[fairshare.DimGPU] {
				ok = true
				break
			}
			tried = append(tried, fmt.Sprintf("%s: %s", dims.Name(k), amount(fairshare.DimGPU, ceil[k])))
		}
		if !ok {
			return fmt.Errorf("%w: needs %s, more than queue %s could ever be admitted with on any acceptable model (%s)",
				ErrNeverFits, amount(fairshare.DimGPU, j.demand[fairshare.DimGPU]), j.leaf.Name(), strings.Join(tried, ", "))
		}
	}
	if !a.checked[j.shape] {
		if a.empty == nil {
			a.empty = topology.NewLedger(a.c)
		}
		var p gang.Placement
		a.idleFail[j.shape] = placer.Place(a.empty, j.req, &p)
		a.checked[j.shape] = true
	}
	if x := a.idleFail[j.shape]; x != nil {
		return fmt.Errorf("%w: does not fit on the idle cluster: %s", ErrNeverFits, explanationText(x))
	}
	return nil
}

func amount(r int, v int64) string {
	switch r {
	case fairshare.DimCPU:
		return fmt.Sprintf("%g cores", float64(v)/1000)
	case fairshare.DimMemory:
		return fmt.Sprintf("%g GiB", float64(v)/1024)
	}
	if v == 1000 {
		return "1 GPU"
	}
	return fmt.Sprintf("%g GPUs", float64(v)/1000)
}

// follow switches admission to a new version of the cluster (live
// changes): the idle ledger follows it, and what fit or not on the idle
// cluster is asked again.
func (a *admission) follow(c *topology.Cluster) {
	if a.empty != nil && a.empty.Follow(c) != nil {
		a.empty = nil // several versions behind: made again when needed
	}
	a.c = c
	clear(a.checked)
	clear(a.idleFail)
}

// followTree switches admission to a reconfigured queue tree; the
// never-fits answers depend on its quotas.
func (a *admission) followTree(tree *queue.Tree) {
	a.tree = tree
	clear(a.checked)
	clear(a.idleFail)
}
