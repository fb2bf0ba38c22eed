// Package gavel is a heterogeneity-aware job-level policy for the
// simulator in the manner of Gavel (Narayanan et al., "Heterogeneity-Aware
// Cluster Scheduling Policies for Deep Learning Workloads", OSDI'20): an
// allocation over GPU models, and rounds that steer jobs toward it.
//
// The allocation is Gavel's max-min fairness over effective throughput
// (its "LAS" policy, max_min_fairness_perf; fairshare.HeteroMaxMin):
// each live job gets a share of time on each GPU model such that the
// smallest throughput relative to an equal share of the cluster is as
// large as possible, a job's throughput on a model being its type's
// factor in the speed table (sim.SpeedTable, trace.Job.Type). The
// heterogeneity-agnostic baseline (Config.Agnostic, Gavel's
// max_min_fairness) solves the same program with every throughput 1.
// Jobs of one (type, GPUs) group are identical to the program, which
// therefore has the size of the groups, not of the jobs
// (fairshare.HeteroJob.Count).
//
// The mechanism is Gavel's round-based one, on the simulator's cycles: a
// job's priority on model m is X[m] / f[m], its allocated share over the
// share of its time in the system it has run on m (a job that has not run
// on m ranks above every job that has, by X[m]); its priority is the
// largest over models, and Policy.Placer places it on the model of the
// highest priority that fits, among those it is allocated time on. The
// allocation is recomputed once a round when jobs came or went (a job of
// a (type, GPUs) group no live job had gets one at once; one of a known
// group takes its group's row until the next round). Gavel
// fills what is left of a model with jobs of no priority there once the
// others are placed; here a job that has waited a whole round may take
// any model (its allocated ones first, then by throughput). Priorities
// change at round boundaries (Config.Round, Gavel's 6 minutes), at which
// the simulator runs a cycle, so with priority preemption a job that has
// had less than its share preempts one that has had more. Unlike Gavel,
// an arriving job is ranked at once rather than at the next round, a
// preempted job pays the simulator's preemption model (grace,
// checkpoints, restart cost) rather than a fixed round, and space sharing
// (Gavel's packing) is not modelled.
//
// A Policy is a policy.Reorderer and a policy.Tracker; it does no I/O and
// reads no clock. Not safe for concurrent use: one per run.
package gavel

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
)

// DefaultRound is Gavel's round length (its simulator's default, 360 s).
const DefaultRound = 6 * time.Minute

// Config configures a Policy.
type Config struct {
	// Cluster is the run's cluster: its GPU models and their counts.
	// Required; hard partitions' renamed models (sim.HardPartition) are
	// refused.
	Cluster *topology.Cluster
	// Speeds gives each job type's throughput on each model
	// (SpeedTable.Factor); nil: 1 everywhere.
	Speeds *sim.SpeedTable
	// Types maps job IDs to their types (trace.Job.Type); a job it does
	// not name has the default type "".
	Types map[string]string
	// Round is the round length; 0: DefaultRound.
	Round time.Duration
	// Agnostic solves the allocation with every throughput 1: Gavel's
	// heterogeneity-agnostic max-min fairness baseline.
	Agnostic bool
	// Allocator, if set, computes the allocation instead of
	// fairshare.HeteroMaxMin (an allocator in another process:
	// extproc.Allocator). Its rows are checked: shares in [0, 1], each
	// row's sum at most 1, each model's GPUs not exceeded (a tolerance of
	// 1e-6). A Policy whose Allocator has a Close method closes it in
	// Close.
	Allocator Allocator
}

// Allocator computes a round's allocation (policy.Allocator): for each
// job group, its share of time on each model.
type Allocator = policy.Allocator

// Policy is a Gavel policy for one run. Build it with New; give the
// run's Scheduler its Placer and itself as the ordering.
type Policy struct {
	cfg     Config
	names   []string // distinct GPU models, by model index
	gpus    []int    // GPUs of each model index
	modelOf []int    // topology.ModelID → model index
	jobs    map[string]*gjob
	groups  map[group]*groupAlloc
	dirty   bool      // the live jobs changed since the allocation
	fresh   bool      // a group without an allocation row appeared
	round   int64     // the round the priorities are of (-1: none yet)
	score   []float64 // rank's scratch, per model
	err     error
}

// group is a (type, GPUs) group of identical jobs.
type group struct {
	typ  string
	gpus int
}

// groupAlloc is a group's row of the allocation.
type groupAlloc struct {
	n    int       // live jobs of the group
	x    []float64 // time share per model index
	tput []float64 // throughput per model index
}

// gjob is what the policy keeps of one live job.
type gjob struct {
	g        group
	submit   time.Duration
	on       []float64 // seconds run on each model, finished runs
	credited float64   // the attained service (policy.Job.Ran) on credits, in seconds
	model    int       // model index of the current run; -1: not running
	runStart time.Duration
	waitFrom time.Duration // when it last entered a queue
	prio     int32         // its priority as last computed
	order    []int         // model indices in its placement order, as last computed
}

// New checks cfg and returns a Policy.
func New(cfg Config) (*Policy, error) {
	if cfg.Cluster == nil {
		return nil, errors.New("gavel: no cluster")
	}
	if cfg.Round < 0 {
		return nil, fmt.Errorf("gavel: round %v: want ≥ 0", cfg.Round)
	}
	if cfg.Round == 0 {
		cfg.Round = DefaultRound
	}
	p := &Policy{cfg: cfg, jobs: map[string]*gjob{}, groups: map[group]*groupAlloc{}, round: -1}
	c := cfg.Cluster
	idx := map[string]int{}
	p.modelOf = make([]int, len(c.Models()))
	for i, m := range c.Models() {
		if strings.Contains(m.Model, "@") {
			return nil, fmt.Errorf("gavel: model %q is a hard partition's copy: gavel allocates over the whole cluster, not over hard virtual clusters", m.Model)
		}
		k, ok := idx[m.Model]
		if !ok {
			k = len(p.names)
			idx[m.Model] = k
			p.names = append(p.names, m.Model)
			p.gpus = append(p.gpus, 0)
		}
		p.modelOf[i] = k
	}
	for h := range c.NumHosts() {
		if m := c.HostModel(topology.HostID(h)); m >= 0 {
			_, n := c.HostGPUs(topology.HostID(h))
			p.gpus[p.modelOf[m]] += n
		}
	}
	return p, nil
}

// Models returns the GPU models the policy allocates over, in model
// index order.
func (p *Policy) Models() []string { return slices.Clone(p.names) }

// Err returns the first error the allocation failed with, or nil (the
// ordering calls return it too).
func (p *Policy) Err() error { return p.err }

// throughputs returns a group's throughput on each model.
func (p *Policy) throughputs(g group) []float64 {
	out := make([]float64, len(p.names))
	for m, name := range p.names {
		out[m] = 1
		if !p.cfg.Agnostic && p.cfg.Speeds != nil {
			out[m] = p.cfg.Speeds.Factor(name, g.typ)
		}
	}
	return out
}

// add starts tracking a job that entered a queue for the first time.
func (p *Policy) add(j policy.Job) *gjob {
	g := group{typ: p.cfg.Types[j.ID], gpus: max(int(math.Ceil(j.GPUs)), 1)}
	gj := &gjob{g: g, submit: j.Submit, on: make([]float64, len(p.names)), model: -1}
	p.jobs[j.ID] = gj
	ga := p.groups[g]
	if ga == nil {
		ga = &groupAlloc{tput: p.throughputs(g)}
		p.groups[g] = ga
		p.fresh = true
	}
	ga.n++
	p.dirty = true
	return gj
}

// stop ends a job's run at now, crediting its model: for a start with
// no Enqueued since the last (not seen from the simulator).
func (gj *gjob) stop(now time.Duration) {
	if gj.model >= 0 {
		d := (now - gj.runStart).Seconds()
		gj.on[gj.model] += d
		gj.credited += d
		gj.model = -1
	}
}

// Started records that job started a run on model at now.
func (p *Policy) Started(now time.Duration, job, model string) {
	gj := p.jobs[job]
	if gj == nil {
		return
	}
	gj.stop(now)
	gj.model = slices.Index(p.names, model)
	gj.runStart = now
}

// Ended forgets a job that completed or failed.
func (p *Policy) Ended(now time.Duration, job string) {
	gj := p.jobs[job]
	if gj == nil {
		return
	}
	delete(p.jobs, job)
	if ga := p.groups[gj.g]; ga != nil {
		if ga.n--; ga.n == 0 {
			delete(p.groups, gj.g)
		}
	}
	p.dirty = true
}

// Enqueued gives jobs that entered a queue (arrived, or stopped and
// requeued) their priorities.
func (p *Policy) Enqueued(now time.Duration, jobs []policy.Job) ([]int32, error) {
	out := make([]int32, len(jobs))
	for _, j := range jobs {
		gj := p.jobs[j.ID]
		if gj == nil {
			gj = p.add(j)
		}
		if gj.model >= 0 {
			// A stopped run: credit its model with the run's exact length
			// (the stop may precede this cycle).
			gj.on[gj.model] += max(j.Ran.Seconds()-gj.credited, 0)
			gj.model = -1
		}
		gj.credited = j.Ran.Seconds()
		gj.waitFrom = now
	}
	if err := p.refresh(now); err != nil {
		return nil, err
	}
	for i, j := range jobs {
		gj := p.jobs[j.ID]
		p.rank(now, gj)
		out[i] = gj.prio
	}
	return out, nil
}

// Running gives running jobs their priorities, changed at round
// boundaries.
func (p *Policy) Running(now time.Duration, jobs []policy.Job) ([]int32, error) {
	if err := p.refresh(now); err != nil {
		return nil, err
	}
	out := make([]int32, len(jobs))
	for i, j := range jobs {
		if gj := p.jobs[j.ID]; gj != nil {
			out[i] = gj.prio
		} else {
			out[i] = j.Priority
		}
	}
	return out, nil
}

// refresh recomputes the allocation at the first call of a round when
// the live jobs changed (as Gavel recomputes it each round), or at once
// when a job of a new (type, GPUs) group arrived; and every job's
// priority when a new round began or the allocation changed.
func (p *Policy) refresh(now time.Duration) error {
	if p.err != nil {
		return p.err
	}
	r := int64(now / p.cfg.Round)
	changed := p.dirty && (r != p.round || p.fresh)
	if changed {
		if err := p.allocate(); err != nil {
			p.err = err
			return err
		}
		p.dirty, p.fresh = false, false
	}
	if r == p.round && !changed {
		return nil
	}
	p.round = r
	ids := make([]string, 0, len(p.jobs))
	for id := range p.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p.rank(now, p.jobs[id])
	}
	return nil
}

// allocate solves the max-min program over the live groups.
func (p *Policy) allocate() error {
	gs := make([]group, 0, len(p.groups))
	for g := range p.groups {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b group) int {
		if c := strings.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return a.gpus - b.gpus
	})
	hj := make([]fairshare.HeteroJob, len(gs))
	for i, g := range gs {
		ga := p.groups[g]
		hj[i] = fairshare.HeteroJob{ID: fmt.Sprintf("%s/%d", g.typ, g.gpus), GPUs: g.gpus, Throughput: ga.tput, Count: ga.n}
	}
	hc := fairshare.HeteroCluster{Models: p.names, GPUs: p.gpus}
	var x [][]float64
	if p.cfg.Allocator != nil {
		var err error
		if x, err = p.cfg.Allocator.Allocate(hj, hc); err != nil {
			return fmt.Errorf("gavel: allocator: %w", err)
		}
		if err := checkAllocation(hj, hc, x); err != nil {
			return fmt.Errorf("gavel: allocator: %w", err)
		}
	} else {
		a, err := fairshare.HeteroMaxMin(hj, hc)
		if err != nil {
			return fmt.Errorf("gavel: allocation over %d groups: %w", len(gs), err)
		}
		x = a.Time
	}
	for i, g := range gs {
		p.groups[g].x = x[i]
	}
	return nil
}

// checkAllocation checks an Allocator's rows.
func checkAllocation(jobs []fairshare.HeteroJob, c fairshare.HeteroCluster, x [][]float64) error {
	const tol = 1e-6
	if len(x) != len(jobs) {
		return fmt.Errorf("%d rows for %d job groups", len(x), len(jobs))
	}
	used := make([]float64, len(c.GPUs))
	for k, row := range x {
		if len(row) != len(c.GPUs) {
			return fmt.Errorf("group %s: %d shares for %d models", jobs[k].ID, len(row), len(c.GPUs))
		}
		var sum float64
		for m, v := range row {
			if !(v >= -tol && v <= 1+tol) {
				return fmt.Errorf("group %s: share %g of model %s outside [0, 1]", jobs[k].ID, v, c.Models[m])
			}
			sum += v
			used[m] += float64(max(jobs[k].Count, 1)*jobs[k].GPUs) * v
		}
		if sum > 1+tol {
			return fmt.Errorf("group %s: shares sum to %g, more than 1", jobs[k].ID, sum)
		}
	}
	for m, u := range used {
		if u > float64(c.GPUs[m])+tol {
			return fmt.Errorf("model %s: %g GPUs allocated, %d exist", c.Models[m], u, c.GPUs[m])
		}
	}
	return nil
}

// Close closes the Allocator when it has a Close method (a process).
func (p *Policy) Close() error {
	if c, ok := p.cfg.Allocator.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// Priority bands: a job that has not run on a model it is allocated time
// on ranks in the top band by its share there; the others by log2 of
// their best X/f ratio around the middle of the lower band.
const (
	topBand   = 1 << 30
	midBand   = 1 << 29
	perDouble = 1 << 20 // priority per doubling of the ratio
)

// rank computes a job's priority and placement order at now.
func (p *Policy) rank(now time.Duration, gj *gjob) {
	ga := p.groups[gj.g] // never nil for a live job (add, Ended)
	nm := len(p.names)
	life := max((now - gj.submit).Seconds(), 1)
	if cap(p.score) < nm {
		p.score = make([]float64, nm)
	}
	score := p.score[:nm] // per model: X/f, +Inf when f = 0 < X
	clear(score)
	best := 0.0
	for m := range nm {
		x := 0.0
		if ga.x != nil {
			x = ga.x[m]
		}
		if x <= 1e-9 {
			continue
		}
		on := gj.on[m]
		if gj.model == m {
			on += (now - gj.runStart).Seconds()
		}
		if on <= 0 {
			score[m] = math.Inf(1)
			best = math.Max(best, topBand+x*1e6)
			continue
		}
		score[m] = x / (on / life)
		if best < topBand {
			best = math.Max(best, float64(midBand)+math.Log2(score[m])*perDouble)
		}
	}
	gj.prio = int32(min(max(best, 0), math.MaxInt32))
	gj.order = gj.order[:0]
	fill := gj.model < 0 && now-gj.waitFrom >= p.cfg.Round
	for m := range nm {
		if score[m] > 0 || fill {
			gj.order = append(gj.order, m)
		}
	}
	tput := ga.tput
	slices.SortStableFunc(gj.order, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		case tput[a] > tput[b]:
			return -1
		case tput[a] < tput[b]:
			return 1
		}
		return 0
	})
}

// Allocation returns the time share per model (by Models' order) of a
// live job as of the last Enqueued or Running call, and false for a job
// the policy does not know.
func (p *Policy) Allocation(job string) ([]float64, bool) {
	gj := p.jobs[job]
	if gj == nil || p.groups[gj.g] == nil || p.groups[gj.g].x == nil {
		return nil, false
	}
	return slices.Clone(p.groups[gj.g].x), true
}

// Placer wraps base so that a job the policy knows is placed on one GPU
// model, tried in the job's order: the models it is allocated time on,
// highest priority first, then (once it has waited a round) the others,
// by throughput; a job it does not know, or a cluster of one model, goes
// to base as it is. A gang no single model can hold waits (Gavel never
// spans models). Hosts the request's own AllowHost refuses stay refused.
func (p *Policy) Placer(base gang.Placer) gang.Placer {
	return &placer{p: p, base: base}
}

// placer is Policy.Placer's gang.Placer.
type placer struct {
	p    *Policy
	base gang.Placer
	req  gang.Request // scratch copy of the request, per model
}

// Place places r on the job's models in order.
func (pl *placer) Place(l *topology.Ledger, r *gang.Request, out *gang.Placement) *gang.Explanation {
	p := pl.p
	gj := p.jobs[r.ID]
	if gj == nil || len(p.names) < 2 {
		return pl.base.Place(l, r, out)
	}
	c := p.cfg.Cluster
	allow := r.AllowHost
	if len(gj.order) == 0 { // no share anywhere yet: waits, explained as filtered
		pl.req = *r
		pl.req.FilterLabel = "gavel: no GPU model allocated yet"
		pl.req.AllowHost = func(topology.HostID) bool { return false }
		return pl.base.Place(l, &pl.req, out)
	}
	var last *gang.Explanation
	for _, m := range gj.order {
		pl.req = *r
		pl.req.FilterLabel = "gavel: model " + p.names[m]
		pl.req.AllowHost = func(h topology.HostID) bool {
			id := c.HostModel(h)
			return id >= 0 && p.modelOf[id] == m && (allow == nil || allow(h))
		}
		if last = pl.base.Place(l, &pl.req, out); last == nil {
			return nil
		}
	}
	return last
}
