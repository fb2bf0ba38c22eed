package gang

import (
	"math"

	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/topology"
)

// searchBudget bounds the backtracking search in one domain, in host
// checks (deciding whether a host can take a task, or placing it there):
// a few hundred microseconds at most, spent only on gangs of several
// groups that the greedy orders could not place, in domains that pass the
// counting checks (mayFit, jointFits). Tests change it.
//
// Each domain a Place call tries gets the whole budget afresh, never what
// other domains left of it: whether a gang fits in a domain depends on
// that domain's state alone. The root Scheduler's failure cache relies on
// that: it assumes that losses (allocations, hosts failing) never make a
// failed shape fit. With a budget shared across domains, a loss in a
// domain that used to spend the budget (then failing the counting checks
// instead) would leave it to a later domain, where the search could find
// a fit. The counting checks and searchWidth are per domain too; only
// Options.MaxDomains makes the outcome depend on other domains.
var searchBudget = 1 << 11

// searchWidth is the most candidate hosts the search tries for one task.
const searchWidth = 8

// searchCand is a host the search may put the next task on.
type searchCand struct {
	i    int32 // scope index
	free int32 // usable whole GPUs left
	sig  hostSig
}

// hostSig is what decides, for whole-GPU and CPU-only tasks, which tasks
// a host can still take: two hosts with the same signature are
// interchangeable for the rest of the search.
type hostSig struct {
	model    topology.ModelID
	shape    int32
	avail    gpuSet // usable whole GPUs (buddy cells depend on which); the count otherwise
	cpu, mem int64
}

// search looks for a placement of pl.want tasks of every group inside s by
// depth-first search over task → host assignments, with the overlay
// taken back on every backtrack. Tasks go in order of their group's size
// (fewest tasks first, so a launcher chooses before its workers), and the
// tasks of one group on hosts in ascending order (they are alike, so no
// other order needs trying). Each task tries at most searchWidth hosts
// that can take it, the fullest first; when every task left is whole-GPU
// or CPU-only, hosts in the same state count once. GPUs, shares and MIG
// slots inside a host are chosen as the greedy placement chooses them.
//
// The search stops when pl.budget runs out; it is complete (finds a
// placement whenever task → host assignments allow one, for whole-GPU
// and CPU-only tasks, and share and MIG tasks placed the greedy way
// inside their host) when the budget and width do not bind: scopes of a
// few hosts and gangs of a few tasks.
//
// It searches on the overlay even for the delegating policies (the node
// policy's choice is no help in finding a feasible assignment); what it
// finds is then trial-allocated on the ledger as theirs would be.
func (pl *policy) search(s *scope) bool {
	e := &pl.e
	if pl.budget <= 0 {
		return false
	}
	r := e.r
	pl.seq = pl.seq[:0]
	// Groups by ascending task count, ties in placement order.
	for done := 0; done < len(r.order); {
		best := -1
		for _, gi := range r.order {
			if pl.want[gi] <= 0 || pl.inSeq(gi) {
				continue
			}
			if best < 0 || pl.want[gi] < pl.want[best] {
				best = gi
			}
		}
		if best < 0 {
			break
		}
		for n := 0; n < pl.want[best]; n++ {
			pl.seq = append(pl.seq, int32(best))
		}
		done++
	}
	n := len(pl.seq)
	if cap(pl.plain) < n {
		pl.plain = make([]bool, n)
		pl.at = make([]int32, n)
	}
	pl.plain, pl.at = pl.plain[:n], pl.at[:n]
	// (Hosts alike are interchangeable only if every group may use them
	// alike: with a group's own filter, each host is tried.)
	plain := !r.groupFilters()
	for d := n - 1; d >= 0; d-- {
		k := r.Groups[pl.seq[d]].Kind
		plain = plain && (k == TaskWhole || k == TaskCPU)
		pl.plain[d] = plain
	}
	trial := e.trial
	e.trial = false
	e.s = *s
	e.newEpoch()
	mark := len(e.p.Claims)
	pl.cand = pl.cand[:0]
	ok := pl.dfs(0)
	e.trial = trial
	if !ok || !trial {
		return ok
	}
	if err := e.l.TrialAllocate(e.p.Claims[mark:]...); err != nil {
		e.p.truncate(mark)
		return false
	}
	if t, ok := pl.node.(frag.Tracker); ok {
		for i := mark; i < len(e.p.Claims); i++ {
			t.Allocated(e.p.Claims[i], fragTask(&r.Groups[e.p.Tasks[i].Group]))
		}
	}
	e.newEpoch() // the ledger holds the tasks now
	return true
}

// jointFits checks a necessary condition for the gang's wanted tasks to
// fit in s together, which mayFit checks group by group: the hosts of s
// that could take a task of some group, each counted for as many tasks as
// its free GPUs, CPU and memory hold, hold all the tasks. A host's count
// is the most tasks of the gang it could take together (hostMaxTasks: an
// 8-GPU worker and a 150-core launcher do not share a host of 8 GPUs and
// 224 cores, though each fits); at most, the tasks its free GPUs, CPU and
// memory hold at the gang's smallest demand of each. Gangs with share or
// MIG tasks pass. One pass over the hosts of s, stopping once enough are
// counted; it returns the tasks counted.
func (pl *policy) jointFits(s *scope) (int, bool) {
	e := &pl.e
	r := e.r
	if !r.simple {
		return 0, true
	}
	total, minGPUs := 0, math.MaxInt
	minCPU, minMem := int64(math.MaxInt64), int64(math.MaxInt64)
	for gi, w := range pl.want {
		if w <= 0 {
			continue
		}
		g := &r.Groups[gi]
		total += w
		gpus := 0
		if g.Kind == TaskWhole {
			gpus = g.GPUs
		}
		minGPUs = min(minGPUs, gpus)
		minCPU, minMem = min(minCPU, g.CPUMilli), min(minMem, g.MemoryMiB)
	}
	e.s = *s
	e.newEpoch()
	n := 0
	for i, size := 0, s.size(); i < size && n < total; i++ {
		h := s.hostAt(i)
		ok := false
		for gi, w := range pl.want {
			if w > 0 && e.hostReason(h, &r.Groups[gi]) == reasonNone {
				ok = true
				break
			}
		}
		if !ok {
			continue
		}
		k := total
		if minGPUs > 0 {
			k = min(k, e.l.HostFreeGPUs(h)/minGPUs)
		}
		if minCPU > 0 {
			k = min(k, int(e.l.CPUFree(h)/minCPU))
		}
		if minMem > 0 {
			k = min(k, int(e.l.MemoryFree(h)/minMem))
		}
		if k > 1 {
			k = pl.hostMaxTasks(h, k)
		}
		n += k
	}
	return min(n, total), n >= total
}

// hostMaxTasks returns the most wanted tasks of the gang (whole-GPU and
// CPU-only groups) host h could take together by its free GPUs, CPU and
// memory, or at most k (an upper bound the caller knows): a depth-first
// count over how many tasks of each group, which returns k when it takes
// more than maxTaskMixSteps steps (still an upper bound).
func (pl *policy) hostMaxTasks(h topology.HostID, k int) int {
	e := &pl.e
	steps := 0
	best := 0
	var rec func(gi int, gpus int, cpu, mem int64, n int) bool
	rec = func(gi int, gpus int, cpu, mem int64, n int) bool {
		steps++
		if steps > maxTaskMixSteps {
			return false
		}
		best = max(best, n)
		if best >= k {
			return true
		}
		for ; gi < len(pl.want); gi++ {
			w := pl.want[gi]
			g := &e.r.Groups[gi]
			if w <= 0 || e.hostReason(h, g) != reasonNone {
				continue
			}
			m := w
			if g.Kind == TaskWhole {
				m = min(m, gpus/g.GPUs)
			}
			if g.CPUMilli > 0 {
				m = min(m, int(cpu/g.CPUMilli))
			}
			if g.MemoryMiB > 0 {
				m = min(m, int(mem/g.MemoryMiB))
			}
			for c := m; c >= 1; c-- {
				used := 0
				if g.Kind == TaskWhole {
					used = c * g.GPUs
				}
				if !rec(gi+1, gpus-used, cpu-int64(c)*g.CPUMilli, mem-int64(c)*g.MemoryMiB, n+c) {
					return false
				}
				if best >= k {
					return true
				}
			}
		}
		return true
	}
	if !rec(0, e.l.HostFreeGPUs(h), e.l.CPUFree(h), e.l.MemoryFree(h), 0) {
		return k
	}
	return min(best, k)
}

// maxTaskMixSteps bounds hostMaxTasks' count on one host.
const maxTaskMixSteps = 64

func (pl *policy) inSeq(gi int) bool {
	for _, x := range pl.seq {
		if int(x) == gi {
			return true
		}
	}
	return false
}

// dfs places the tasks of pl.seq from depth d on; on failure it leaves the
// overlay as it found it.
func (pl *policy) dfs(d int) bool {
	if d == len(pl.seq) {
		return true
	}
	e := &pl.e
	gi := int(pl.seq[d])
	g := &e.r.Groups[gi]
	lo := 0
	if d > 0 && pl.seq[d-1] == pl.seq[d] {
		lo = int(pl.at[d-1])
	}
	base := len(pl.cand)
	for i, n := lo, e.s.size(); i < n && len(pl.cand)-base < searchWidth; i++ {
		pl.budget--
		if pl.budget < 0 {
			pl.cand = pl.cand[:base]
			return false
		}
		c, ok := pl.candidate(g, i, pl.plain[d])
		if !ok || pl.plain[d] && pl.seen(base, c.sig) {
			continue
		}
		// Insert in ascending (free, index) order: the fullest host first.
		pl.cand = append(pl.cand, c)
		for k := len(pl.cand) - 1; k > base && pl.cand[k-1].free > c.free; k-- {
			pl.cand[k], pl.cand[k-1] = pl.cand[k-1], pl.cand[k]
		}
	}
	for k := base; k < len(pl.cand); k++ {
		i := pl.cand[k].i
		pl.budget--
		if !pl.tryOne(gi, e.s.hostAt(int(i))) {
			continue
		}
		pl.at[d] = i
		if pl.dfs(d + 1) {
			pl.cand = pl.cand[:base]
			return true
		}
		e.unrecord()
		if pl.budget < 0 {
			break
		}
	}
	pl.cand = pl.cand[:base]
	return false
}

// candidate checks whether the host at scope index i can take a task of g
// now, and describes it.
func (pl *policy) candidate(g *Group, i int, sig bool) (searchCand, bool) {
	e := &pl.e
	h := e.s.hostAt(i)
	if g.Kind == TaskWhole && e.freeGPUs(h) < g.GPUs || e.hostReason(h, g) != reasonNone {
		return searchCand{}, false
	}
	avail := e.wholeAvail(h)
	c := searchCand{i: int32(i), free: int32(avail.count())}
	switch g.Kind {
	case TaskWhole:
		if int(c.free) < g.GPUs {
			return searchCand{}, false
		}
	case TaskShare, TaskMIG:
		if !e.gpuFits(h, g) {
			return searchCand{}, false
		}
	}
	if sig {
		_, cpu, mem := e.ovHost(h)
		c.sig = hostSig{model: e.c.HostModel(h), shape: e.hostShape[h], cpu: e.l.CPUFree(h) - cpu, mem: e.l.MemoryFree(h) - mem}
		if pl.kind == kindBuddy {
			c.sig.avail = avail
		} else {
			c.sig.avail[0] = uint64(c.free)
		}
	}
	return c, true
}

// seen reports whether a candidate of this depth has signature s.
func (pl *policy) seen(base int, s hostSig) bool {
	for _, c := range pl.cand[base:] {
		if c.sig == s {
			return true
		}
	}
	return false
}

// tryOne places one task of group gi on h in the overlay, as the policy
// would choose its GPUs there.
func (pl *policy) tryOne(gi int, h topology.HostID) bool {
	e := &pl.e
	if g := &e.r.Groups[gi]; g.Kind == TaskWhole {
		return e.fillWhole(gi, h, 1, pl.kind == kindBuddy) == 1
	}
	return e.tryTask(TaskRef{Group: int32(gi), Index: int32(e.p.Placed[gi])}, h)
}
