package gang

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// Placer decides where a request goes on the current state of a ledger.
//
// Place resets p and fills it with a placement of every task of r (or, for
// elastic groups, of at least Min), and returns nil; or it leaves p empty
// and returns an Explanation of why r does not fit now. It does no I/O,
// never changes the ledger's state or Generation (policies that place
// tentatively on the ledger roll back exactly), and is deterministic: the
// same ledger state, request and r.Seed give the same placement. Applying
// the placement is the caller's move (Commit).
//
// A Placer keeps scratch space sized to the last cluster it saw, so that
// placing allocates nothing in the steady state; it is not safe for
// concurrent use. Give each goroutine its own.
type Placer interface {
	Place(l *topology.Ledger, r *Request, p *Placement) *Explanation
}

// Detail says how much work an Explanation may cost.
type Detail uint8

// Explanation details.
const (
	// DetailFull counts, per reason, the hosts that cannot take any task
	// of the request, and checks every domain at the required level: O(hosts
	// + domains at the level) per failed request.
	DetailFull Detail = iota
	// DetailBrief answers from the ledger's counters and indexes only:
	// O(log domains). Host counts per reason are left zero.
	DetailBrief
)

// Options configures a Placer. The zero value is valid.
type Options struct {
	// Explain sets the detail of explanations (default DetailFull).
	Explain Detail
	// Frag configures the node-level policy New builds with
	// frag.NewPolicy for the delegating policies (dot-product, gpu-packing,
	// gpu-clustering, fgd). "fgd" needs Frag.Distribution, the target
	// workload (see frag.Learn). Ignored by the native policies.
	Frag frag.Options
	// Node, if non-nil, is the per-task policy the delegating policies use
	// instead of building one from Frag: a configured policy shared with
	// other code, or one of the caller's own. Ignored by the native
	// policies.
	Node frag.Policy
	// MaxDomains bounds how many candidate domains per level a placer
	// tries before giving up on that level; 0 means all. Bounding it makes
	// failing placements cheaper on large, fragmented clusters at the cost
	// of missing fits in domains further down the order.
	MaxDomains int
	// Protect keeps jobs much smaller than a domain out of wholly free
	// multi-host NVLink domains and ToRs unless nothing else fits (see
	// Protection); the zero value protects in the "topology" policy only.
	Protect Protection
	// ProtectRatio is how many times a job's GPUs a wholly free domain must
	// hold to be protected from it; 0 means 8 (a 72-GPU NVL72 rack is kept
	// from jobs of up to 9 GPUs, a 256-GPU ToR of DGX H100 from jobs of up
	// to 32).
	ProtectRatio int
}

type policyKind uint8

const (
	kindFirst policyKind = iota
	kindBest
	kindWorst
	kindRandom
	kindTopology
	kindBuddy
	kindFrag
)

// nativePolicies are the policies implemented in this package, with the
// order they use for hosts and domains.
var nativePolicies = []struct {
	name  string
	kind  policyKind
	order orderKind
}{
	{"first-fit", kindFirst, ordFirst},
	{"best-fit", kindBest, ordBest},
	{"worst-fit", kindWorst, ordWorst},
	{"random", kindRandom, ordRandom},
	{"topology", kindTopology, ordBest},
	{"buddy", kindBuddy, ordBest},
}

// fragPolicies are the policies that delegate each task's host and GPUs to
// package frag, under the same name there.
var fragPolicies = []string{"dot-product", "gpu-packing", "gpu-clustering", "fgd"}

// PolicyNames lists the names New accepts, sorted.
func PolicyNames() []string {
	var names []string
	for _, p := range nativePolicies {
		names = append(names, p.name)
	}
	names = append(names, fragPolicies...)
	slices.Sort(names)
	return names
}

// New returns the placer with the given name (see PolicyNames):
//
//	first-fit       domains and hosts in ID order; fill each host.
//	best-fit        the domain at the required level with the fewest free
//	                GPUs that holds the gang; inside it, each task on the
//	                host with the fewest free GPUs that fits.
//	worst-fit       the most free domain; each task on the host with the
//	                most free GPUs (spread).
//	random          a seeded random domain; each task on a random host.
//	topology        the lowest level (nvlink, host, network levels…) whose
//	                domain holds the whole gang, best fit among domains, then
//	                best-fit hosts inside.
//	buddy           HiveD-style buddy cells: each task takes a free cell of
//	                the smallest size that holds it inside its host; the gang
//	                takes the smallest cell level that holds it.
//	dot-product, gpu-packing, gpu-clustering, fgd
//	                each task's host and GPUs chosen by package frag's
//	                policy of that name, task by task, inside the best-fit
//	                domain at the required level.
//
// In every policy the GPUs inside a host are chosen by locality: one
// accelerator fabric domain first, then one PCIe switch, then one NUMA
// node (see Package doc).
func New(name string, opts Options) (Placer, error) {
	if opts.Explain > DetailBrief {
		return nil, fmt.Errorf("gang: unknown explanation detail %d", opts.Explain)
	}
	if opts.MaxDomains < 0 {
		return nil, fmt.Errorf("gang: MaxDomains %d is negative", opts.MaxDomains)
	}
	if opts.Protect > ProtectOff {
		return nil, fmt.Errorf("gang: unknown protection %d", opts.Protect)
	}
	if opts.ProtectRatio < 0 {
		return nil, fmt.Errorf("gang: ProtectRatio %d is negative", opts.ProtectRatio)
	}
	if opts.ProtectRatio == 0 {
		opts.ProtectRatio = defaultProtectRatio
	}
	for _, p := range nativePolicies {
		if p.name == name {
			return &policy{name: name, kind: p.kind, order: p.order, opts: opts}, nil
		}
	}
	if slices.Contains(fragPolicies, name) {
		node := opts.Node
		if node == nil {
			var err error
			if node, err = frag.NewPolicy(name, opts.Frag); err != nil {
				return nil, fmt.Errorf("gang: policy %s: %w", name, err)
			}
		}
		return &policy{name: name, kind: kindFrag, order: ordBest, opts: opts, node: node}, nil
	}
	return nil, fmt.Errorf("gang: unknown policy %q (known: %s)", name, strings.Join(PolicyNames(), ", "))
}

// policy implements every Placer of this package; kind selects the
// algorithm.
type policy struct {
	name  string
	kind  policyKind
	order orderKind
	opts  Options
	node  frag.Policy

	e    engine
	grp  hostOrder
	dom  domOrder
	want []int

	census census
	gstat  []groupStat // per group, from scanHosts
	rooms  []room      // per group, from scanHosts
	joint  jointRoom   // the gang at its smallest demand, from scanHosts

	// backtracking search (search.go)
	budget int          // host checks left to the search in this domain
	seq    []int32      // group of each task, in search order
	plain  []bool       // per task: it and every later one are whole-GPU or CPU-only
	at     []int32      // per task: the scope index of its host
	cand   []searchCand // candidate hosts, a stack of one run per depth

	// best candidate seen at the outermost level tried, for explanations
	best      topology.DomainID
	bestTasks int
	tried     int
}

// String returns the policy's name.
func (pl *policy) String() string { return pl.name }

// Place implements Placer.
func (pl *policy) Place(l *topology.Ledger, r *Request, p *Placement) *Explanation {
	p.Reset()
	p.Job = r.ID
	for range r.Groups {
		p.Placed = append(p.Placed, 0)
	}
	e := &pl.e
	e.bind(l, r, p)
	e.bindProtect(protecting(pl.opts.Protect, pl.kind), pl.opts.ProtectRatio, r)
	e.trial = pl.kind == kindFrag
	pl.grp.kind = pl.order
	pl.dom.kind = pl.order
	pl.best, pl.bestTasks, pl.tried = topology.NoDomain, -1, 0
	if pl.plan() {
		if e.trial {
			pl.release()
		}
		pl.relaxed()
		return nil
	}
	p.Reset()
	p.Job = r.ID
	return pl.explain()
}

// plan tries the policy's levels, first with every group at Count, then
// (for elastic requests) at Min, growing each group afterwards.
func (pl *policy) plan() bool {
	r := pl.e.r
	elastic := r.minTasks < r.tasks
	for pass := 0; pass < 2; pass++ {
		pl.want = pl.want[:0]
		for i := range r.Groups {
			n := r.Groups[i].Count
			if pass == 1 {
				n = r.Groups[i].Min
			}
			pl.want = append(pl.want, n)
		}
		d := r.demand(pass == 1)
		// The explanation is of the last pass (Min tasks for an elastic
		// request): count its domains only.
		pl.best, pl.bestTasks, pl.tried = topology.NoDomain, -1, 0
		if pl.tryLevels(d, pass == 1) {
			return true
		}
		if !elastic {
			break
		}
	}
	return false
}

// tryLevels walks the levels of the policy for one demand.
func (pl *policy) tryLevels(d Demand, grow bool) bool {
	r := pl.e.r
	top := r.Within()
	switch pl.kind {
	case kindTopology:
		lo := topology.LevelHost
		if d.Milli > topology.MilliPerGPU || r.fabric {
			lo = topology.LevelFabric
		}
		if r.fabric {
			top = topology.LevelFabric
		}
		for lv := lo; lv <= top; lv++ {
			if d.Tasks <= 1 && lv != topology.LevelFabric && lv != top {
				// One task shares its host and every domain above it
				// with itself: only the fabric tier and the top tier
				// can differ.
				continue
			}
			if pl.placeAt(lv, d, grow) {
				return true
			}
		}
		return false
	case kindBuddy:
		if r.fabric {
			return pl.placeAt(topology.LevelFabric, d, grow)
		}
		for lv := topology.LevelHost; lv <= top; lv++ {
			if pl.placeAt(lv, d, grow) {
				return true
			}
			if lv == topology.LevelHost && pl.multiHostFabric() && topology.LevelFabric < top {
				if pl.placeAt(topology.LevelFabric, d, grow) {
					return true
				}
			}
		}
		return false
	}
	if !r.fabric {
		for _, lv := range r.Preferred {
			if lv < top && pl.placeAt(lv, d, grow) {
				return true
			}
		}
	}
	return pl.placeAt(top, d, grow)
}

// multiHostFabric reports whether the cluster's fabric domains span hosts
// (GB200 NVL72 racks), making them a buddy cell level between hosts and
// the network. Computed once per cluster.
func (pl *policy) multiHostFabric() bool { return pl.e.multiHost }

// placeAt tries the candidate domains at level lv in the policy's order.
func (pl *policy) placeAt(lv topology.Level, d Demand, grow bool) bool {
	e := pl.e.l
	var g0 *Group
	if len(pl.e.r.order) > 0 {
		g0 = &pl.e.r.Groups[pl.e.r.order[0]]
	}
	pl.dom.begin(&pl.e, lv, d.GPUs, d.Milli, g0)
	outer := lv == pl.e.r.Within()
	tried := 0
	for {
		dom, ok := pl.dom.next()
		if !ok {
			return false
		}
		if e.FreeMilli(dom) < d.Milli {
			continue
		}
		s, ok := pl.e.makeScope(lv, dom)
		if !ok {
			continue
		}
		placed, ok := pl.mayFit(&s)
		if ok && pl.several() {
			// Before any attempt: a domain whose hosts cannot hold the
			// tasks together is rejected at the cost of one count.
			placed, ok = pl.jointFits(&s)
		}
		if ok {
			placed, ok = pl.attempt(&s, grow)
		}
		if ok {
			pl.e.p.Level, pl.e.p.Domain = lv, dom
			return true
		}
		if outer {
			pl.tried++
			if placed > pl.bestTasks || placed == pl.bestTasks && e.FreeGPUs(dom) > e.FreeGPUs(pl.best) {
				pl.best, pl.bestTasks = dom, placed
			}
		}
		tried++
		if pl.opts.MaxDomains > 0 && tried >= pl.opts.MaxDomains {
			return false
		}
	}
}

// mayFit checks a necessary condition before an attempt: for every
// whole-GPU group with more than one GPU per task, or with CPU or memory,
// the hosts of s offer at least the wanted number of tasks, counting
// ⌊free GPUs/GPUs⌋ per host bounded by its CPU and memory; and for every
// CPU-only group with CPU or memory, the hosts' free CPU and memory hold
// the wanted tasks. It walks the hosts of s with at least that many free
// GPUs once through the ledger's index (no seeks), the hosts of s in
// order for CPU-only groups (until enough are counted), and returns the
// tasks counted for the first group that falls short.
func (pl *policy) mayFit(s *scope) (int, bool) {
	e := &pl.e
	r := e.r
	e.s = *s
	e.newEpoch()
	for _, gi := range r.order {
		g := &r.Groups[gi]
		want := pl.want[gi]
		if g.Kind == TaskCPU && want > 0 && (g.CPUMilli > 0 || g.MemoryMiB > 0) {
			if n, ok := e.cpuSlots(s, g, want); !ok {
				return n, false
			}
			continue
		}
		if g.Kind != TaskWhole || want == 0 || g.GPUs == 1 && g.CPUMilli == 0 && g.MemoryMiB == 0 {
			continue
		}
		e.cntGroup, e.cnt, e.cntWant = g, 0, want
		if s.fabric != topology.NoDomain {
			for _, h := range s.hosts {
				if !e.countSlots(h, e.l.HostFreeGPUs(h)) {
					break
				}
			}
		} else {
			m := topology.NoModel
			if len(g.Models) == 1 {
				m = g.Models[0]
			}
			e.l.AscendHosts(s.dom, m, g.GPUs, e.countFn)
		}
		if e.cnt < want {
			return e.cnt, false
		}
	}
	return 0, true
}

// cpuSlots counts, for a CPU-only group, the tasks the hosts of s could
// take by their CPU and memory, until want are found.
func (e *engine) cpuSlots(s *scope, g *Group, want int) (int, bool) {
	n := 0
	for i, size := 0, s.size(); i < size && n < want; i++ {
		h := s.hostAt(i)
		if e.hostReason(h, g) != reasonNone {
			continue
		}
		n += hostTaskCap(e, h, g)
	}
	return n, n >= want
}

// countSlots adds the tasks of e.cntGroup host h could take to e.cnt and
// reports whether more are wanted.
func (e *engine) countSlots(h topology.HostID, free int) bool {
	g := e.cntGroup
	if free < g.GPUs || e.hostReason(h, g) != reasonNone {
		return true
	}
	n := free / g.GPUs
	if g.CPUMilli > 0 {
		n = min(n, int(e.l.CPUFree(h)/g.CPUMilli))
	}
	if g.MemoryMiB > 0 {
		n = min(n, int(e.l.MemoryFree(h)/g.MemoryMiB))
	}
	e.cnt += n
	return e.cnt < e.cntWant
}

// makeScope describes domain d at level lv as a scope. Fabric domains must
// also lie inside one domain of the innermost required tree level.
func (e *engine) makeScope(lv topology.Level, d topology.DomainID) (scope, bool) {
	c := e.c
	s := scope{lv: lv, dom: d, fabric: topology.NoDomain}
	if lv != topology.LevelFabric {
		s.hosts = c.DomainHostList(d)
		return s, true
	}
	s.fabric = d
	e.hosts = e.hosts[:0]
	for _, g := range c.DomainGPUs(d) {
		h := c.GPUHost(g)
		if n := len(e.hosts); n == 0 || e.hosts[n-1] != h {
			e.hosts = append(e.hosts, h)
		}
	}
	if len(e.hosts) == 0 {
		return s, false
	}
	if w := e.r.within; w < c.LevelCluster() && c.HostAt(e.hosts[0], w) != c.HostAt(e.hosts[len(e.hosts)-1], w) {
		return s, false
	}
	s.hosts = e.hosts
	return s, true
}

// attempt places pl.want tasks of every group inside s (then grows elastic
// groups towards Count when grow is set). On failure it rolls back and
// returns how many tasks the first try had placed.
//
// Groups are placed one after the other, each task where the policy's
// order puts it, without going back on a choice. For a gang of several
// groups that can leave a domain looking full when it is not (the
// workers take the cores a launcher needed), so when that first try
// fails, attempt tries the request's other group orders (altOrders), and
// then a bounded backtracking search over task → host assignments
// (search), in a domain placeAt has found the hosts could hold the tasks
// together (jointFits). A single group needs neither: its tasks are alike, and the
// hosts' capacities add up.
func (pl *policy) attempt(s *scope, grow bool) (int, bool) {
	r := pl.e.r
	placed, ok := pl.attemptOrder(s, r.order, grow)
	if ok || !pl.several() {
		return placed, ok
	}
	// On one host, whole-GPU and CPU-only tasks fit in any order when they
	// fit at all: there is nothing to retry.
	oneHost := s.size() <= 1
	if !oneHost || !r.simple {
		for _, o := range r.alts {
			if n, ok := pl.attemptOrder(s, o, grow); ok {
				return n, true
			}
		}
	}
	pl.budget = searchBudget // every domain its own: see searchBudget
	if !oneHost && pl.search(s) {
		if grow {
			for _, gi := range r.order {
				pl.placeGroup(gi, r.Groups[gi].Count-pl.want[gi])
			}
		}
		return len(pl.e.p.Claims), true
	}
	return placed, false
}

// several reports whether more than one group has tasks to place.
func (pl *policy) several() bool {
	n := 0
	for _, w := range pl.want {
		if w > 0 {
			n++
		}
	}
	return n > 1
}

// attemptOrder is attempt's greedy try with the groups in the given order.
func (pl *policy) attemptOrder(s *scope, order []int, grow bool) (int, bool) {
	e := &pl.e
	e.s = *s
	e.newEpoch()
	mark := len(e.p.Claims)
	for _, gi := range order {
		if n := pl.placeGroup(gi, pl.want[gi]); n < pl.want[gi] {
			placed := len(e.p.Claims) - mark
			pl.rollback(mark)
			return placed, false
		}
	}
	if grow {
		for _, gi := range order {
			pl.placeGroup(gi, e.r.Groups[gi].Count-pl.want[gi])
		}
	}
	return len(e.p.Claims) - mark, true
}

// rollback drops the claims from mark on, releasing trial allocations
// (and reporting them released to a tracking node policy).
func (pl *policy) rollback(mark int) {
	e := &pl.e
	if e.trial && mark < len(e.p.Claims) {
		if err := e.l.TrialRelease(e.p.Claims[mark:]...); err != nil {
			panic("gang: rolling back trial placement: " + err.Error())
		}
		if t, ok := pl.node.(frag.Tracker); ok {
			for i := mark; i < len(e.p.Claims); i++ {
				t.Released(e.p.Claims[i], fragTask(&e.r.Groups[e.p.Tasks[i].Group]))
			}
		}
	}
	e.p.truncate(mark)
}

// release takes back the trial allocations of a finished placement,
// keeping the claims.
func (pl *policy) release() {
	e := &pl.e
	if err := e.l.TrialRelease(e.p.Claims...); err != nil {
		panic("gang: rolling back trial placement: " + err.Error())
	}
	if t, ok := pl.node.(frag.Tracker); ok {
		for i := range e.p.Claims {
			t.Released(e.p.Claims[i], fragTask(&e.r.Groups[e.p.Tasks[i].Group]))
		}
	}
}

// placeGroup places up to want more tasks of group gi in the current
// scope and returns how many it placed.
func (pl *policy) placeGroup(gi, want int) int {
	if want <= 0 {
		return 0
	}
	e := &pl.e
	g := &e.r.Groups[gi]
	placed := 0
	if pl.kind == kindFrag && g.Kind != TaskMIG {
		for placed < want && pl.fragTask(gi) {
			placed++
		}
		return placed
	}
	if g.Kind == TaskWhole {
		o := &pl.grp
		o.begin(e, &e.s, g, g.GPUs, !e.trial)
		for placed < want {
			h, ok := o.next()
			if !ok {
				break
			}
			most := want - placed
			if !o.fill() {
				most = 1
			}
			n := e.fillWhole(gi, h, most, pl.kind == kindBuddy)
			placed += n
			if n > 0 && !o.fill() {
				o.placed(h)
			}
		}
		return placed
	}
	if g.Kind == TaskCPU && e.protect {
		return pl.placeCPU(gi, want)
	}
	if g.Kind == TaskCPU {
		// First fit in ID order, hosts without GPUs first. Hosts that
		// failed a task fail the next ones too (resources only shrink
		// within an attempt), so each pass walks the scope once.
		for pass := 0; pass < 2 && placed < want; pass++ {
			for i := 0; i < e.s.size() && placed < want; i++ {
				h := e.s.hostAt(i)
				if _, n := e.c.HostGPUs(h); (pass == 0) != (n == 0) {
					continue
				}
				for placed < want && e.tryTask(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h) {
					placed++
				}
			}
		}
		return placed
	}
	for placed < want && pl.placeSmall(gi) {
		placed++
	}
	return placed
}

// placeSmall places one share or MIG task of group gi: they pack onto
// partly used GPUs first (best fit), else open a free GPU on the first
// host of the policy's order that takes the task.
func (pl *policy) placeSmall(gi int) bool {
	e := &pl.e
	g := &e.r.Groups[gi]
	t := TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}
	switch g.Kind {
	case TaskShare:
		if h, ok := e.bestSharedHost(g); ok && e.tryTask(t, h) {
			return true
		}
	case TaskMIG:
		if h, ok := e.bestMIGHost(g); ok && e.tryTask(t, h) {
			return true
		}
	}
	o := &pl.grp
	o.begin(e, &e.s, g, 1, !e.trial)
	for {
		h, ok := o.next()
		if !ok {
			return false
		}
		if e.tryTask(t, h) {
			return true
		}
	}
}

// smallScope is the largest scope (in hosts) whose GPUs bestSharedHost
// looks at directly rather than walking the cluster's index of shared
// GPUs. Tests lower it to exercise the index.
var smallScope = 64

// bestSharedHost returns the host of the partly used GPU in scope with the
// least free milli that still fits g's share (ties to the lowest GPU).
func (e *engine) bestSharedHost(g *Group) (topology.HostID, bool) {
	best, bestFree := topology.NoGPU, 0
	consider := func(x topology.GPUID) {
		h := e.c.GPUHost(x)
		if !e.s.contains(h) || !g.Accepts(e.c.HostModel(h)) {
			return
		}
		f, partly := e.shareFree(x)
		if !partly || f < g.Milli || e.hostReason(h, g) != reasonNone {
			return
		}
		if best == topology.NoGPU || f < bestFree || f == bestFree && x < best {
			best, bestFree = x, f
		}
	}
	if e.s.size() <= smallScope {
		// A small scope: look at its GPUs directly rather than walk the
		// cluster's index of shared GPUs.
		for i := 0; i < e.s.size(); i++ {
			h := e.s.hostAt(i)
			first, n := e.c.HostGPUs(h)
			for k := 0; k < n; k++ {
				consider(first + topology.GPUID(k))
			}
		}
		if best == topology.NoGPU {
			return topology.NoHost, false
		}
		return e.c.GPUHost(best), true
	}
	for _, x := range e.shared {
		consider(x)
	}
	visit := func(m topology.ModelID) {
		e.l.AscendSharedGPUs(m, g.Milli, func(x topology.GPUID, free int) bool {
			if best != topology.NoGPU && free > bestFree {
				return false
			}
			if !e.gpuTouched(x) {
				consider(x)
			}
			return best == topology.NoGPU || free < bestFree
		})
	}
	if g.Models != nil {
		for _, m := range g.Models {
			visit(m)
		}
	} else {
		for m := range e.c.Models() {
			visit(topology.ModelID(m))
		}
	}
	if best == topology.NoGPU {
		return topology.NoHost, false
	}
	return e.c.GPUHost(best), true
}

// bestMIGHost returns the host of the GPU in scope already in MIG mode that
// takes g's profile leaving the fewest placements (ties to the lowest
// GPU). O(GPUs in scope): the ledger keeps no index of MIG GPUs.
func (e *engine) bestMIGHost(g *Group) (topology.HostID, bool) {
	best, bestAfter := topology.NoHost, 0
	for i := 0; i < e.s.size(); i++ {
		h := e.s.hostAt(i)
		m := e.c.HostModel(h)
		if m == topology.NoModel || !g.Accepts(m) || e.l.FreeMilli(e.c.HostDomain(h)) < g.gpuMilli {
			continue
		}
		first, n := e.c.HostGPUs(h)
		for k := 0; k < n; k++ {
			mask, ok := e.migSlots(first + topology.GPUID(k))
			if !ok || mask == 0 {
				continue
			}
			if st, after := migStart(e.c.Model(m), g.mig[m], mask); st >= 0 && (best == topology.NoHost || after < bestAfter) {
				if e.hostReason(h, g) == reasonNone {
					best, bestAfter = h, after
				}
			}
		}
	}
	return best, best != topology.NoHost
}

// relaxed records the preferred levels the placement does not honour,
// checked on the claims themselves.
func (pl *policy) relaxed() {
	e := &pl.e
	p := e.p
	for _, lv := range e.r.Preferred {
		if !holds(e.c, p, lv) {
			p.Relaxed = append(p.Relaxed, lv)
		}
	}
}

// holds reports whether every task of p shares one domain at level lv:
// for LevelFabric, every GPU lies in one fabric domain; for other levels,
// every host lies in one domain of that level.
func holds(c *topology.Cluster, p *Placement, lv topology.Level) bool {
	if lv == topology.LevelFabric {
		f := topology.NoDomain
		for i := range p.Claims {
			for _, gc := range p.Claims[i].GPUs {
				gf := c.GPUFabric(gc.GPU)
				if gf == topology.NoDomain || f != topology.NoDomain && gf != f {
					return false
				}
				f = gf
			}
		}
		return true
	}
	d := topology.NoDomain
	for i := range p.Claims {
		hd := c.HostAt(p.Claims[i].Host, lv)
		if d != topology.NoDomain && hd != d {
			return false
		}
		d = hd
	}
	return true
}
