package preempt

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// instance is a random small planning problem.
type instance struct {
	f    *fixture
	cfg  Config
	pend *Pending
	now  time.Time
}

// genInstance draws a cluster of 2–5 DGX H100 hosts (flat, or 2 per ToR),
// an optional queue tree of three teams, and running jobs (1–2 tasks of
// 1–8 GPUs or a GPU share, some elastic) placed at random until the
// cluster is nearly full, with random priorities, start and checkpoint
// times and protections; then a pending gang.
func genInstance(rt *rapid.T, maxJobs int) *instance {
	hosts := rapid.IntRange(2, 5).Draw(rt, "hosts")
	perToR := rapid.SampledFrom([]int{0, 2}).Draw(rt, "perToR")
	c := cluster(rt, "dgx-h100", hosts, perToR)
	var qc *queue.Config
	cfg := Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}
	if rapid.Bool().Draw(rt, "queues") {
		total := int64(hosts * 8)
		na := rapid.Int64Range(0, total/2).Draw(rt, "nominalA")
		nb := rapid.Int64Range(0, total-na).Draw(rt, "nominalB")
		qc = &queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: na}}},
			{Name: "org", Children: []queue.Node{
				{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: nb}}},
				{Name: "c"},
			}},
		}}}
		qc.Fairness.Policy = rapid.SampledFrom([]queue.FairPolicy{queue.DRF, queue.Borrowed}).Draw(rt, "fairness")
		cfg.FairSharing = rapid.Bool().Draw(rt, "fairSharing")
		cfg.Reclaim = ReclaimPolicy(rapid.IntRange(0, 2).Draw(rt, "reclaim"))
	}
	cfg.LowerPriority = Scope(rapid.IntRange(0, 2).Draw(rt, "scope"))
	cfg.NoShrink = rapid.Bool().Draw(rt, "noShrink")
	f := newFixture(rt, c, qc)
	queues := []string{"a", "b", "c"}
	placer, _ := gang.New("random", gang.Options{})
	for i := 0; i < maxJobs && f.l.FreeGPUs(c.Root()) > 0; i++ {
		id := fmt.Sprintf("j%d", i)
		g := workload.TaskGroup{Count: rapid.IntRange(1, 2).Draw(rt, "tasks")}
		if rapid.IntRange(0, 5).Draw(rt, "share") == 0 {
			g.GPUMilli = rapid.SampledFrom([]int{250, 500}).Draw(rt, "milli")
		} else {
			g.GPUs = rapid.SampledFrom([]int{2, 4, 8, 8}).Draw(rt, "gpus")
		}
		if g.Count == 2 && rapid.Bool().Draw(rt, "elastic") {
			g.MinCount = 1
		}
		spec := &workload.Job{ID: id, Queue: rapid.SampledFrom(queues).Draw(rt, "queue"), Priority: int32(rapid.IntRange(0, 3).Draw(rt, "prio")),
			Groups: []workload.TaskGroup{g}}
		switch rapid.IntRange(0, 9).Draw(rt, "protect") {
		case 0:
			spec.NonPreemptible = true
		case 1:
			spec.MinRunTime = 2 * time.Hour
		case 2:
			spec.MaxPreemptions = 1
		}
		req, err := gang.NewRequest(c, spec)
		if err != nil {
			rt.Fatal(err)
		}
		req.Seed = uint64(i)
		var p gang.Placement
		if placer.Place(f.l, req, &p) != nil {
			continue
		}
		j := &Job{Spec: spec, Placement: p.Clone(), Preemptions: rapid.IntRange(0, 1).Draw(rt, "preempted"), Stopping: rapid.IntRange(0, 7).Draw(rt, "stopping") == 0}
		if rapid.IntRange(0, 5).Draw(rt, "admitted") > 0 {
			j.Started = now.Add(-time.Duration(rapid.IntRange(1, 600).Draw(rt, "ran")) * time.Minute)
			if rapid.Bool().Draw(rt, "checkpointed") {
				j.Checkpoint = j.Started.Add(time.Duration(rapid.IntRange(0, int(now.Sub(j.Started)/time.Minute)).Draw(rt, "cp")) * time.Minute)
			}
		}
		if f.tree != nil {
			leaf, _ := f.tree.Lookup(spec.Queue)
			ch := chargeOf(j, f.tree, c)
			if f.tree.Check(leaf, ch) != nil {
				continue
			}
			f.tree.Admit(leaf, ch, t0)
		}
		if _, err := gang.Commit(f.l, j.Placement); err != nil {
			rt.Fatal(err)
		}
		if err := f.st.Add(j); err != nil {
			rt.Fatal(err)
		}
	}
	if rapid.IntRange(0, 4).Draw(rt, "failure") == 0 {
		_ = f.l.SetGPUHealth(topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(rt, "failedGPU")), topology.Failed)
	}
	// The pending gang.
	g := workload.TaskGroup{Count: rapid.IntRange(1, 3).Draw(rt, "pendTasks")}
	if rapid.IntRange(0, 5).Draw(rt, "pendShare") == 0 {
		g.GPUMilli = 500
	} else {
		g.GPUs = rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(rt, "pendGPUs")
	}
	spec := workload.Job{ID: "pending", Queue: rapid.SampledFrom(queues).Draw(rt, "pendQueue"), Priority: int32(rapid.IntRange(1, 4).Draw(rt, "pendPrio")),
		Groups: []workload.TaskGroup{g}}
	levels := []string{"", "host"}
	if perToR > 0 {
		levels = append(levels, "tor")
	}
	if lv := rapid.SampledFrom(levels).Draw(rt, "level"); lv != "" {
		spec.Topology = []workload.Constraint{{Level: lv, Required: true}}
	}
	req, err := gang.NewRequest(c, &spec)
	if err != nil {
		rt.Fatal(err)
	}
	return &instance{f: f, cfg: cfg, pend: &Pending{Request: req, Queue: spec.Queue, Priority: spec.Priority}, now: now}
}

// choice is a candidate victim set: per job, nil for untouched, all of
// its claim indexes for a whole stop, or a subset for a shrink.
type choice struct {
	job   *Job
	tasks []int // claim indexes; nil = whole
}

// oracle decides everything the naive way.
type oracle struct {
	in     *instance
	placer gang.Placer
}

func newOracle(in *instance) *oracle {
	p, _ := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
	return &oracle{in: in, placer: p}
}

func (o *oracle) tree() *queue.Tree { return o.in.f.tree }

func (o *oracle) demand() queue.Vector {
	d := o.in.pend.Request.MinDemand()
	v := make(queue.Vector, o.tree().Dimensions().Len())
	v[0], v[1], v[2] = d.Milli, d.CPUMilli, d.MemoryMiB
	return v
}

// ground is the ground j may be preempted on (0: none) and the node its
// set rule depends on.
func (o *oracle) ground(j *Job) (Ground, queue.NodeID) {
	in := o.in
	sp := j.Spec
	if j.Stopping || sp.NonPreemptible || !j.Started.IsZero() && sp.MinRunTime > 0 && in.now.Sub(j.Started) < sp.MinRunTime ||
		sp.MaxPreemptions > 0 && j.Preemptions >= sp.MaxPreemptions {
		return 0, -1
	}
	lower := sp.Priority < in.pend.Priority
	scope := in.cfg.LowerPriority
	t := o.tree()
	if t == nil {
		if lower && (scope == AnyQueue || scope == WithinQueue && sp.Queue == in.pend.Queue) {
			return GroundPriority, -1
		}
		return 0, -1
	}
	qv, _ := t.Lookup(sp.Queue)
	qp, _ := t.Lookup(in.pend.Queue)
	if lower && qv == qp && scope != NeverByPriority {
		return GroundPriority, -1
	}
	if qv == qp {
		return 0, -1
	}
	var pathP []queue.NodeID
	for x := qp; x >= 0; x = t.Parent(x) {
		pathP = append(pathP, x)
	}
	lca, b := queue.NodeID(-1), queue.NodeID(-1)
	var below []queue.NodeID
	for x := qv; x >= 0; x = t.Parent(x) {
		if slices.Contains(pathP, x) {
			lca = x
			break
		}
		below = append(below, x)
		b = x
	}
	a := pathP[slices.Index(pathP, lca)-1]
	mask := o.demand()
	w := o.whatIf()
	borrow := queue.NodeID(-1)
	for _, x := range below {
		if w.Borrows(x, mask) {
			borrow = x
			break
		}
	}
	w.Add(qp, mask)
	within := true
	for x := qp; x != lca; x = t.Parent(x) {
		if w.Borrows(x, mask) {
			within = false
		}
	}
	w.Release(qp, mask)
	// Another queue's job on priority: if the pending side does not
	// borrow once admitted; else only from a borrowing side, with the
	// reclaim set rule, and never where fair sharing decides.
	if lower && scope == AnyQueue && within {
		return GroundPriority, -1
	}
	fs := in.cfg.FairSharing && t.Fairness().Policy != queue.NoFairness && w.Borrows(b, mask)
	if lower && scope == AnyQueue && borrow >= 0 && !fs {
		return GroundPriority, borrow
	}
	if borrow >= 0 && within && (in.cfg.Reclaim == ReclaimAny || in.cfg.Reclaim == ReclaimLowerPriority && lower) {
		return GroundReclaim, borrow
	}
	if in.cfg.FairSharing && t.Fairness().Policy != queue.NoFairness && w.Borrows(b, mask) {
		shareA := w.Share(a, mask)
		w.Release(qv, chargeOf(j, t, in.f.c))
		if w.Share(b, nil) >= shareA {
			return GroundFairShare, b
		}
	}
	return 0, -1
}

// whatIf is the tree with the charges of stopping jobs released.
func (o *oracle) whatIf() *queue.WhatIf {
	t := o.tree()
	w := t.WhatIf()
	o.in.f.st.Jobs(func(j *Job) bool {
		if j.Stopping {
			leaf, _ := t.Lookup(j.Spec.Queue)
			w.Release(leaf, chargeOf(j, t, o.in.f.c))
		}
		return true
	})
	return w
}

func (ch choice) claims() []topology.Claim {
	if ch.tasks == nil {
		return ch.job.Placement.Claims
	}
	var out []topology.Claim
	for _, i := range ch.tasks {
		out = append(out, ch.job.Placement.Claims[i])
	}
	return out
}

func (o *oracle) charge(ch choice) queue.Vector {
	v := make(queue.Vector, o.tree().Dimensions().Len())
	addCharge(v, ch.claims(), o.tree(), o.in.f.c)
	return v
}

// feasible reports whether stopping set lets the pending gang place and
// fit its quota, within the rules.
func (o *oracle) feasible(set []choice) bool {
	in := o.in
	if t := o.tree(); t != nil {
		w := o.whatIf()
		for _, ch := range set {
			leaf, _ := t.Lookup(ch.job.Spec.Queue)
			w.Release(leaf, o.charge(ch))
		}
		// Set rules, per node: the largest victim added back, the node
		// must still borrow; fair share: the node's final share.
		mask := o.demand()
		for _, ch := range set {
			g, node := o.ground(ch.job)
			if node < 0 {
				continue
			}
			var big choice
			var bigCharge int64 = -1
			for _, x := range set {
				if _, n := o.ground(x.job); n == node && o.charge(x)[0] > bigCharge {
					big, bigCharge = x, o.charge(x)[0]
				}
			}
			leaf, _ := t.Lookup(big.job.Spec.Queue)
			w.Add(leaf, o.charge(big))
			ok := w.Borrows(node, mask)
			w.Release(leaf, o.charge(big))
			if !ok {
				return false
			}
			if g == GroundFairShare {
				qp, _ := t.Lookup(in.pend.Queue)
				var a queue.NodeID
				for x := qp; x >= 0; x = t.Parent(x) {
					if t.Parent(x) == t.Parent(node) {
						a = x
					}
				}
				w2 := o.whatIf()
				shareA := w2.Share(a, mask)
				if w.Share(node, nil) < shareA {
					return false
				}
			}
		}
		if qp, ok := t.Lookup(in.pend.Queue); ok && w.Check(qp, o.demand()) != nil {
			return false
		}
	}
	l := in.f.l.Clone()
	for _, ch := range set {
		if err := l.Release(ch.claims()...); err != nil {
			panic(err)
		}
	}
	var p gang.Placement
	return o.placer.Place(l, in.pend.Request, &p) == nil
}

func (o *oracle) cost(set []choice) Cost {
	var c Cost
	for _, ch := range set {
		c.Lost += o.lost(ch)
		c.Victims++
		c.Priority += int64(ch.job.Spec.Priority)
		if ch.tasks == nil {
			lost, stops := o.restart(ch.job)
			c.Lost += lost
			c.Victims += stops
		}
	}
	return c
}

// lost is the work ch loses since its job's last checkpoint.
func (o *oracle) lost(ch choice) GPUTime {
	j := ch.job
	if j.Started.IsZero() {
		return 0
	}
	from := j.Started
	if j.Checkpoint.After(from) {
		from = j.Checkpoint
	}
	return GPUTime(claimsMilli(o.in.f.c, ch.claims()) * int64(o.in.now.Sub(from)/time.Second))
}

// restart is what stopping v whole is expected to stop in turn: for a
// victim on the reclaim or fair-share ground, where priority is a ground,
// its GPUs covered by the eligible lower-priority jobs of its queue,
// cheapest lost work per GPU first (then ID), the last in proportion;
// nothing when they cannot cover them.
func (o *oracle) restart(v *Job) (GPUTime, int) {
	g, _ := o.ground(v)
	need := claimsMilli(o.in.f.c, v.Placement.Claims)
	if o.tree() == nil || o.in.cfg.LowerPriority == NeverByPriority || g != GroundReclaim && g != GroundFairShare || need == 0 {
		return 0, 0
	}
	var mates []*Job
	o.in.f.st.Jobs(func(w *Job) bool {
		if g, _ := o.ground(w); g != 0 && w != v && w.Spec.Queue == v.Spec.Queue && w.Spec.Priority < v.Spec.Priority &&
			claimsMilli(o.in.f.c, w.Placement.Claims) > 0 {
			mates = append(mates, w)
		}
		return true
	})
	perGPU := func(w *Job) float64 {
		return float64(o.lost(choice{job: w})) / float64(claimsMilli(o.in.f.c, w.Placement.Claims))
	}
	slices.SortFunc(mates, func(a, b *Job) int {
		if pa, pb := perGPU(a), perGPU(b); pa != pb {
			if pa < pb {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Spec.ID, b.Spec.ID)
	})
	var lost GPUTime
	for i, w := range mates {
		m, l := claimsMilli(o.in.f.c, w.Placement.Claims), o.lost(choice{job: w})
		if m >= need {
			return lost + GPUTime(int64(l)*need/m), i + 1
		}
		lost += l
		need -= m
	}
	return 0, 0
}

// options lists what may be done to an eligible job: stop it, or (elastic,
// shrinking allowed) stop a non-empty subset of the tasks above the
// minimum of each group.
func (o *oracle) options(j *Job) [][]int {
	out := [][]int{nil}
	if o.in.cfg.NoShrink {
		return out
	}
	p := j.Placement
	excess := make([]int, len(p.Placed))
	for g, k := range p.Placed {
		excess[g] = k - j.Spec.Groups[g].Min()
	}
	n := len(p.Claims)
	for mask := 1; mask < 1<<n; mask++ {
		per := make([]int, len(p.Placed))
		var tasks []int
		ok := true
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				g := p.Tasks[i].Group
				per[g]++
				if per[g] > excess[g] {
					ok = false
				}
				tasks = append(tasks, i)
			}
		}
		if ok {
			out = append(out, tasks)
		}
	}
	return out
}

// best enumerates every victim set of eligible jobs and returns the
// cheapest feasible one's cost.
func (o *oracle) best() (Cost, bool) {
	c, _, ok := o.bestSet()
	return c, ok
}

func (o *oracle) bestSet() (Cost, []choice, bool) {
	var jobs []*Job
	o.in.f.st.Jobs(func(j *Job) bool {
		if g, _ := o.ground(j); g != 0 {
			jobs = append(jobs, j)
		}
		return true
	})
	var best Cost
	var bestSet []choice
	found := false
	var set []choice
	var rec func(i int)
	rec = func(i int) {
		if i == len(jobs) {
			if len(set) == 0 {
				return
			}
			if c := o.cost(set); (!found || c.Less(best)) && o.feasible(set) {
				best, found = c, true
				bestSet = slices.Clone(set)
			}
			return
		}
		rec(i + 1)
		for _, opt := range o.options(jobs[i]) {
			set = append(set, choice{job: jobs[i], tasks: opt})
			rec(i + 1)
			set = set[:len(set)-1]
		}
	}
	rec(0)
	return best, bestSet, found
}

// dump renders the instance for failure messages.
func (o *oracle) dump() string {
	in := o.in
	var b []byte
	in.f.st.Jobs(func(j *Job) bool {
		g, _ := o.ground(j)
		b = fmt.Appendf(b, "%s q=%s prio=%d ground=%v lost=%s:", j.Spec.ID, j.Spec.Queue, j.Spec.Priority, g, o.cost([]choice{{job: j}}).Lost)
		for _, cl := range j.Placement.Claims {
			b = fmt.Appendf(b, " %s%v", in.f.c.HostName(cl.Host), cl.GPUs)
		}
		b = append(b, '\n')
		return true
	})
	_, set, _ := o.bestSet()
	for _, ch := range set {
		b = fmt.Appendf(b, "oracle: %s %v\n", ch.job.Spec.ID, ch.tasks)
	}
	return string(b)
}

func (o *oracle) eligibleUnits() int {
	n := 0
	o.in.f.st.Jobs(func(j *Job) bool {
		if g, _ := o.ground(j); g != 0 {
			n += len(o.options(j))
		}
		return true
	})
	return n
}

// planChoices turns a plan's victims into choices.
func planChoices(in *instance, p *Plan) []choice {
	var out []choice
	for _, v := range p.Victims {
		j, _ := in.f.st.Job(v.Job)
		ch := choice{job: j}
		if !v.Whole() {
			for _, t := range v.Tasks {
				ch.tasks = append(ch.tasks, slices.Index(j.Placement.Tasks, t))
			}
		}
		out = append(out, ch)
	}
	return out
}

// TestPropertyPlans checks, on random small instances: a plan applied to a
// clone of the ledger lets its placement commit and the gang place; every
// victim is eligible and the set obeys the rules; removing any one victim
// (or any one stopped task of a shrink) makes the plan fail; the plan's
// cost equals a brute-force oracle's minimum over every victim set; and no
// plan exactly when the oracle finds none. Plan leaves the ledger as it
// was.
func TestPropertyPlans(t *testing.T) {
	var plans, noPlans, shrinks, fits, skipped, restarts [1]int
	byGround := map[Ground]int{}
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 10)
		o := newOracle(in)
		if o.eligibleUnits() > 14 {
			skipped[0]++
			rt.Skip("too many candidates for the oracle")
		}
		s := newSearch(rt, in.cfg)
		gen := in.f.l.Generation()
		p, np := s.Plan(in.f.st, in.pend, in.now)
		if in.f.l.Generation() != gen {
			rt.Fatal("Plan changed the ledger's generation")
		}
		if err := in.f.l.Check(); err != nil {
			rt.Fatal(err)
		}
		want, found := o.best()
		if p == nil {
			noPlans[0]++
			if np.Err != nil {
				rt.Fatal(np.Err)
			}
			if found {
				rt.Fatalf("no plan (%s) but the oracle finds one costing %s", np, want)
			}
			return
		}
		if len(p.Victims) == 0 {
			fits[0]++
			// Fits as is.
			if !o.feasible(nil) {
				rt.Fatal("empty plan but the gang does not fit")
			}
			return
		}
		plans[0]++
		if !p.Exact {
			rt.Fatalf("small instance not searched exactly: %s", p)
		}
		checkApplies(rt, in.f, p, in.pend)
		set := planChoices(in, p)
		for _, ch := range set {
			if g, _ := o.ground(ch.job); g == 0 {
				rt.Fatalf("victim %s is not eligible", ch.job.Spec.ID)
			}
			if ch.tasks != nil {
				shrinks[0]++
			}
			g, _ := o.ground(ch.job)
			byGround[g]++
		}
		for _, v := range p.Victims {
			if v.RestartStops > 0 {
				restarts[0]++
			}
		}
		if !o.feasible(set) {
			rt.Fatalf("plan %s infeasible for the oracle", p)
		}
		for i := range set {
			rest := slices.Delete(slices.Clone(set), i, i+1)
			if o.feasible(rest) && len(rest) > 0 {
				rt.Fatalf("plan %s not minimal: works without %s", p, set[i].job.Spec.ID)
			}
			if len(set[i].tasks) > 1 {
				for k := range set[i].tasks {
					fewer := slices.Clone(set)
					fewer[i].tasks = slices.Delete(slices.Clone(set[i].tasks), k, k+1)
					if o.feasible(fewer) {
						rt.Fatalf("plan %s not minimal: %s can keep a task", p, set[i].job.Spec.ID)
					}
				}
			}
		}
		if got := o.cost(set); got != p.Cost {
			rt.Fatalf("plan reports cost %s, its victims cost %s", p.Cost, got)
		}
		if !found {
			rt.Fatalf("plan %s but the oracle finds none", p)
		}
		if p.Cost != want {
			rt.Fatalf("plan %s costs %s, the oracle's minimum is %s\n%s", p, p.Cost, want, o.dump())
		}
	})
	t.Logf("%d plans (%d shrinks; victims by ground %v; %d priced with their restart), %d without, %d fit as they were, %d skipped",
		plans[0], shrinks[0], byGround, restarts[0], noPlans[0], fits[0], skipped[0])
	if plans[0] == 0 || noPlans[0] == 0 {
		t.Error("the property was not exercised both ways")
	}
}

// TestPropertyGreedy forces the greedy search (MaxExact 1) on random
// instances: plans still apply, obey the rules and are minimal (the
// reprieve pass), and without quotas (whose rules are not monotone) a plan
// is found whenever one exists.
func TestPropertyGreedy(t *testing.T) {
	var plans, greedy int
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		in.cfg.MaxExact = 1
		o := newOracle(in)
		s := newSearch(rt, in.cfg)
		p, np := s.Plan(in.f.st, in.pend, in.now)
		if err := in.f.l.Check(); err != nil {
			rt.Fatal(err)
		}
		if p == nil {
			if np.Err != nil {
				rt.Fatal(np.Err)
			}
			if in.f.tree == nil && o.eligibleUnits() <= 14 {
				if _, found := o.best(); found {
					rt.Fatalf("greedy finds no plan (%s) but one exists\n%s", np, o.dump())
				}
			}
			return
		}
		if len(p.Victims) == 0 {
			return
		}
		plans++
		if !p.Exact {
			greedy++
		}
		checkApplies(rt, in.f, p, in.pend)
		set := planChoices(in, p)
		for _, ch := range set {
			if g, _ := o.ground(ch.job); g == 0 {
				rt.Fatalf("victim %s is not eligible", ch.job.Spec.ID)
			}
		}
		if !o.feasible(set) {
			rt.Fatalf("plan %s infeasible for the oracle", p)
		}
		for i := range set {
			rest := slices.Delete(slices.Clone(set), i, i+1)
			if len(rest) > 0 && o.feasible(rest) {
				rt.Fatalf("plan %s not minimal: works without %s", p, set[i].job.Spec.ID)
			}
		}
	})
	t.Logf("%d plans, %d by the greedy search", plans, greedy)
	if greedy == 0 {
		t.Error("the greedy search was never used")
	}
}

// changeJobs makes up to four random changes to the jobs of st that the
// Roster is told of (Update, or Remove and Add): Stopping, priority,
// preemptions, minimum run time, start, refiling.
func changeJobs(rt *rapid.T, st *State, now time.Time) {
	var ids []string
	st.Jobs(func(j *Job) bool { ids = append(ids, j.Spec.ID); return true })
	for k := rapid.IntRange(0, 4).Draw(rt, "changes"); k > 0 && len(ids) > 0; k-- {
		id := rapid.SampledFrom(ids).Draw(rt, "changed")
		j, _ := st.Job(id)
		switch rapid.IntRange(0, 5).Draw(rt, "change") {
		case 0:
			j.Stopping = !j.Stopping
		case 1:
			j.Spec.Priority = int32(rapid.IntRange(0, 4).Draw(rt, "newPrio"))
		case 2:
			j.Preemptions++
		case 3:
			j.Spec.MinRunTime = time.Duration(rapid.IntRange(0, 600).Draw(rt, "newMinRun")) * time.Minute
		case 4:
			if j.Started.IsZero() {
				j.Started = now.Add(-time.Duration(rapid.IntRange(1, 600).Draw(rt, "newRan")) * time.Minute)
			} else {
				j.Started = time.Time{}
			}
		case 5:
			st.Remove(id)
			if err := st.Add(j); err != nil {
				rt.Fatal(err)
			}
			continue
		}
		if !st.Update(id) {
			rt.Fatalf("Update(%s) found no job", id)
		}
	}
}

// plainSnap is a State seen without its Roster: the planner visits every
// job.
type plainSnap struct{ st *State }

func (p plainSnap) Ledger() *topology.Ledger { return p.st.Ledger() }
func (p plainSnap) Queues() *queue.Tree      { return p.st.Queues() }
func (p plainSnap) Jobs(fn func(*Job) bool)  { p.st.Jobs(fn) }

// TestPropertyRoster checks that planning through the State's Roster
// (collectIndexed: buckets of queue and priority counted in bulk) gives
// exactly what visiting every job gives — the same plan (victims,
// placement, cost, search figures) or the same reasons — after random
// changes filed with Update and jobs removed and added again (which also
// changes the order the Roster holds them in).
func TestPropertyRoster(t *testing.T) {
	var plans, noPlans int
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		if rapid.Bool().Draw(rt, "greedy") {
			in.cfg.MaxExact = 1
		}
		st := in.f.st
		changeJobs(rt, st, in.now)
		a, b := newSearch(rt, in.cfg), newSearch(rt, in.cfg)
		p1, n1 := a.Plan(st, in.pend, in.now)
		p2, n2 := b.Plan(plainSnap{st}, in.pend, in.now)
		if !reflect.DeepEqual(p1, p2) {
			rt.Fatalf("through the roster: %v\nevery job: %v", p1, p2)
		}
		if !reflect.DeepEqual(n1, n2) {
			rt.Fatalf("through the roster: %+v\nevery job: %+v", n1, n2)
		}
		if p1 != nil {
			plans++
		} else {
			noPlans++
		}
	})
	t.Logf("%d plans, %d without", plans, noPlans)
}

// TestPropertyOneDomainShortcut: contribute's shortcut for a whole gang
// within one domain (its GPUs read off the job's shape, not its claims)
// makes the same plans and the same reasons (candidates, evictable GPUs)
// as reading every claim.
func TestPropertyOneDomainShortcut(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		p1, n1 := newSearch(rt, in.cfg).Plan(in.f.st, in.pend, in.now)
		genericContrib = true
		defer func() { genericContrib = false }()
		p2, n2 := newSearch(rt, in.cfg).Plan(in.f.st, in.pend, in.now)
		if !reflect.DeepEqual(p1, p2) {
			rt.Fatalf("shortcut: %v\nevery claim: %v", p1, p2)
		}
		if !reflect.DeepEqual(n1, n2) {
			rt.Fatalf("shortcut: %+v\nevery claim: %+v", n1, n2)
		}
	})
}

// TestLevelIndexContig: a level's domains count as consecutive host ranges
// on a built cluster, and not once a host joins the first ToR (it takes
// the next free ID, after the other ToR's hosts), so that contribute's
// one-domain shortcut then reads the claims.
func TestLevelIndexContig(t *testing.T) {
	c := cluster(t, "dgx-h100", 4, 2)
	tor := topology.LevelHost + 1
	var s Search
	if !s.prepare(c, tor).contig || !s.prepare(c, topology.LevelFabric).contig {
		t.Fatal("built cluster: ToRs or NVLink domains not consecutive")
	}
	h0, _ := c.HostByName(c.HostName(0))
	next, err := c.Apply(topology.Change{Hosts: []topology.HostGroup{{Name: "new", Template: c.Host(h0).Template, Parent: c.DomainName(c.HostAt(h0, tor))}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.prepare(next, tor).contig {
		t.Fatal("a host joined the first ToR after the second's: still counted consecutive")
	}
	if !s.prepare(next, topology.LevelHost).contig {
		t.Fatal("hosts are their own ranges")
	}
}

// TestPropertyOneDomainShortcutNVL72: the same on two GB200 NVL72 racks,
// at the NVLink level, with gangs of whole trays that may span the two
// racks: Plan and Defragment alike.
func TestPropertyOneDomainShortcutNVL72(t *testing.T) {
	c := cluster(t, "gb200-nvl72", 36, 0)
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(rt, c, nil)
		for h, n := 0, 0; h < 36; n++ {
			k := rapid.IntRange(0, 4).Draw(rt, "trays")
			if k == 0 {
				h++
				continue
			}
			var tasks []task
			for i := 0; i < k && h < 36; i++ {
				tasks = append(tasks, task{c.HostName(topology.HostID(h)), 0, 4})
				h++
			}
			f.run(rt, jobSpec{id: "j" + itoa(n), queue: "q", prio: int32(rapid.IntRange(0, 9).Draw(rt, "prio")), tasks: tasks,
				started: time.Duration(rapid.IntRange(1, 600).Draw(rt, "started")) * time.Minute})
		}
		pend := f.pending(rt, "big", "q", 10, rapid.IntRange(2, 18).Draw(rt, "count"), 4, "nvlink")
		at := t0.Add(time.Duration(rapid.IntRange(600, 900).Draw(rt, "now")) * time.Minute)
		cfg := Config{MaxPlacements: 1 << 20, MaxNodes: 1 << 24}
		p1, n1 := newSearch(rt, cfg).Plan(f.st, pend, at)
		d1, m1 := newSearch(rt, cfg).Defragment(f.st, pend, at)
		genericContrib = true
		defer func() { genericContrib = false }()
		p2, n2 := newSearch(rt, cfg).Plan(f.st, pend, at)
		d2, m2 := newSearch(rt, cfg).Defragment(f.st, pend, at)
		if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(n1, n2) {
			rt.Fatalf("plan, shortcut: %v %+v\nevery claim: %v %+v", p1, n1, p2, n2)
		}
		if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(m1, m2) {
			rt.Fatalf("defrag, shortcut: %v %+v\nevery claim: %v %+v", d1, m1, d2, m2)
		}
	})
}

// TestPropertyReusedSearch: a Search that planned other gangs on other
// clusters before (its scratch and kept best placement reused) returns
// exactly what a fresh one returns, each time.
func TestPropertyReusedSearch(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		in := genInstance(rt, 12)
		reused := newSearch(rt, in.cfg)
		for i := 0; i < 3; i++ {
			if i > 0 {
				in = genInstance(rt, 12)
				reused.cfg = newSearch(rt, in.cfg).cfg
			}
			p1, n1 := reused.Plan(in.f.st, in.pend, in.now)
			p2, n2 := newSearch(rt, in.cfg).Plan(in.f.st, in.pend, in.now)
			if !reflect.DeepEqual(p1, p2) {
				rt.Fatalf("plan %d, reused: %+v\nfresh: %+v", i, p1, p2)
			}
			if !reflect.DeepEqual(n1, n2) {
				rt.Fatalf("plan %d, reused: %+v\nfresh: %+v", i, n1, n2)
			}
		}
	})
}

// TestKeptPlacement: keptPlacement.set copies as Clone does (nil slices
// stay nil, empty ones empty), also over a longer copy before.
func TestKeptPlacement(t *testing.T) {
	long := &gang.Placement{Job: "a", Claims: []topology.Claim{{Host: 1, GPUs: []topology.GPUClaim{{GPU: 8}, {GPU: 9}}}, {Host: 2}},
		Tasks: []gang.TaskRef{{Index: 0}, {Index: 1}}, Placed: []int{2}, Relaxed: []topology.Level{3}, Level: 2, Domain: 7}
	for _, src := range []*gang.Placement{
		long,
		{Job: "b", Claims: []topology.Claim{{Host: 3, GPUs: []topology.GPUClaim{{GPU: 24}}}}, Tasks: []gang.TaskRef{{}}, Placed: []int{1}},
		{Job: "c", Claims: []topology.Claim{}, Tasks: []gang.TaskRef{}, Placed: []int{}, Relaxed: []topology.Level{}},
		{Job: "d"},
	} {
		var k keptPlacement
		k.set(long)
		k.set(src)
		if want := src.Clone(); !reflect.DeepEqual(k.p.Clone(), want) {
			t.Fatalf("kept %+v\nClone %+v", k.p.Clone(), want)
		}
		if (k.p.Relaxed == nil) != (src.Relaxed == nil) || (k.p.Tasks == nil) != (src.Tasks == nil) || (k.p.Placed == nil) != (src.Placed == nil) || (k.p.Claims == nil) != (src.Claims == nil) {
			t.Fatalf("%s: nil slices differ: kept %#v, source %#v", src.Job, k.p, src)
		}
	}
}
