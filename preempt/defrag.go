package preempt

import (
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Migration is a running job to move: checkpoint, stop, restart on To.
type Migration struct {
	Job string
	// From is what it releases: every claim of its placement. Shared with
	// its Placement; read only.
	From []topology.Claim
	// To is where it restarts, on the ledger with every migrated job
	// released and the pending gang placed. Not committed.
	To *gang.Placement
	// Grace is the time it gets to checkpoint before it stops.
	Grace time.Duration
	// Lost is the GPU time lost since its last checkpoint.
	Lost GPUTime
}

// DefragPlan is a way to let a gang blocked only by fragmentation place
// by moving running jobs elsewhere.
type DefragPlan struct {
	// Job is the pending job's ID.
	Job string
	// Migrations in job ID order.
	Migrations []Migration
	// Placement is where the gang goes once every migrated job has
	// released its claims (and before they restart on their To); the To
	// placements assume the gang's claims are taken.
	Placement *gang.Placement
	// Level and Domain name the domain the gang lands in.
	Level  topology.Level
	Domain topology.DomainID
	// Cost counts the migrated jobs as victims.
	Cost Cost
	// Exact and Domains are as for Plan.
	Exact               bool
	Domains, Placements int
}

// moved is a migrated unit and where it goes.
type moved struct {
	unit int32
	to   *gang.Placement
}

// Defragment finds the cheapest set of running jobs to migrate so that the
// pending gang places, each migrated job restarting elsewhere: the
// same search as Plan (domains by lower bound, branch and bound or greedy,
// reprieve), where a set is feasible when, with its jobs released, the
// gang places and then every job of the set places again (largest first,
// each with its own spec, or the request a Restricted Snapshot gives
// for it, and the Placer, on what the gang and the jobs placed before it
// leave). Any running job may move, whatever its
// priority or queue (it keeps its queue's charge), except one that is
// stopping, non-preemptible, inside its minimum run time, at its
// preemption cap or at Config.MaxMigrations. Cost is the lost work of the migrated jobs (restart from
// their last checkpoint), then their number and priorities.
//
// It returns VerdictProtected-style reasons when no set works, and
// VerdictCapacity when the cluster lacks the free GPUs for the gang
// altogether (that is not fragmentation), VerdictQuota when the gang's
// queue quota does not admit it. The Snapshot is left as it was.
func (s *Search) Defragment(snap Snapshot, p *Pending, now time.Time) (*DefragPlan, *NoPlan) {
	r := s.begin(snap, p, now)
	defer r.end()
	r.defrag = true
	if r.qblock {
		r.quota = r.w.Check(r.qp, r.demand)
		return nil, r.noPlan(VerdictQuota)
	}
	r.tree = nil // migrations keep every charge as it is
	r.placements++
	if s.cfg.Placer.Place(r.l, r.req, &r.scratch) == nil {
		return &DefragPlan{Job: r.req.ID, Placement: r.scratch.Clone(), Level: r.lv, Domain: r.placedDomain(&r.scratch), Exact: true, Placements: r.placements}, nil
	}
	if !r.fragmented() {
		return nil, r.noPlan(VerdictCapacity)
	}
	r.confine = r.req.AllowDomain == nil
	r.collect()
	if v := r.rank(); v != 0 {
		return nil, r.noPlan(v)
	}
	r.searchDomains(r.solveDomain)
	if !r.best.ok {
		v := VerdictPlacement
		if r.budgetHit {
			v = VerdictBudget
		}
		return nil, r.noPlan(v)
	}
	p0 := r.plan()
	dp := &DefragPlan{Job: p0.Job, Placement: p0.Placement, Level: p0.Level, Domain: p0.Domain, Cost: p0.Cost, Exact: p0.Exact, Domains: p0.Domains, Placements: p0.Placements}
	if len(p0.Victims) > 0 {
		dp.Migrations = make([]Migration, 0, len(p0.Victims))
	}
	for _, v := range p0.Victims {
		m := Migration{Job: v.Job, From: v.Claims, Grace: v.Grace, Lost: v.Lost}
		for _, mv := range r.best.moves {
			if r.jobID(&r.units[mv.unit]) == v.Job {
				m.To = mv.to
			}
		}
		dp.Migrations = append(dp.Migrations, m)
	}
	return dp, nil
}

// fragmented reports whether the cluster has enough free GPUs the gang
// could use (acceptable model, healthy, allowed), wherever they are.
func (r *run) fragmented() bool {
	if r.need.GPUs == 0 {
		return r.l.FreeMilli(r.c.Root()) >= r.need.Milli
	}
	free := 0
	root := r.c.Root()
	if r.req.AllowHost == nil && r.req.AllowGPU == nil && r.allModels() {
		return r.l.FreeGPUs(root) >= r.need.GPUs
	}
	r.l.AscendHosts(root, topology.NoModel, 1, func(h topology.HostID, f int) bool {
		if r.hostUsable(h) {
			free += f
		}
		return free < r.need.GPUs
	})
	return free >= r.need.GPUs
}

// allModels reports whether some GPU group of the gang accepts every
// model of the cluster (and has no host filter of its own).
func (r *run) allModels() bool {
	for i := range r.req.Groups {
		g := &r.req.Groups[i]
		if g.Kind == gang.TaskCPU || g.AllowHost != nil {
			continue
		}
		ok := true
		for m := range r.c.Models() {
			ok = ok && g.Accepts(topology.ModelID(m))
		}
		if ok {
			return true
		}
	}
	return false
}

// classifyMove decides whether j may be migrated.
func (r *run) classifyMove(j *Job) (Exclusion, Ground, queue.NodeID) {
	if ex, ok := r.s.moveExclusion(j, r.c, r.now); ok {
		return ex, 0, -1
	}
	return 0, GroundMigration, -1
}

// Restricted is optionally implemented by a Snapshot whose jobs are
// restricted beyond their specs (a host's node selectors, taints or
// other per-job host filters): Defragment and Consolidate place each job
// they move with the request MoveRequest returns for it, so that its
// destination honours that request's AllowHost, AllowGPU and task
// groups' AllowHost; a move that cannot is not planned (the search
// looks for another set of moves, or returns none). Without it, or
// where MoveRequest returns nil, a moved job is placed with its Spec
// resolved against the Snapshot's cluster.
type Restricted interface {
	// MoveRequest returns the request j is placed with when it moves:
	// its Spec's, resolved against the Snapshot's cluster (the same task
	// groups, in order), with its restrictions; or nil. The planners
	// only read it, and keep it no longer than the call.
	MoveRequest(j *Job) *gang.Request
}

// moveRequest returns the request j is placed with when it moves: the
// Snapshot's when it is Restricted (and names one), else j's spec
// resolved against c.
func moveRequest(snap Snapshot, j *Job, c *topology.Cluster) *gang.Request {
	if rs, ok := snap.(Restricted); ok {
		if req := rs.MoveRequest(j); req != nil {
			return req
		}
	}
	req, _ := j.request(c) // (checked valid when the job was classified)
	return req
}

// request returns j's spec resolved against c (cached).
func (j *Job) request(c *topology.Cluster) (*gang.Request, error) {
	if j.req != nil && j.reqC == c && j.reqSpec == j.Spec {
		return j.req, nil
	}
	req, err := gang.NewRequest(c, j.Spec)
	if err != nil {
		return nil, err
	}
	j.req, j.reqSpec, j.reqC = req, j.Spec, c
	return req, nil
}

// replace is the second half of a defragmentation feasibility test: with
// the set released and the gang's placement in r.scratch, place the gang
// and then each migrated job; keep their placements in r.moves. The
// ledger is left as it was.
func (r *run) replace() bool {
	l := r.l
	if err := l.TrialAllocate(r.scratch.Claims...); err != nil {
		return false
	}
	order := slices.Clone(r.set)
	slices.SortFunc(order, func(a, b int32) int {
		ua, ub := &r.units[a], &r.units[b]
		if ua.milli != ub.milli {
			if ua.milli > ub.milli {
				return -1
			}
			return 1
		}
		return strings.Compare(r.jobID(ua), r.jobID(ub))
	})
	r.moves = r.moves[:0]
	ok := true
	for _, ui := range order {
		req := moveRequest(r.snap, r.jobs[r.units[ui].ji], r.c)
		var p gang.Placement
		if r.s.cfg.Placer.Place(l, req, &p) != nil {
			ok = false
			break
		}
		if err := l.TrialAllocate(p.Claims...); err != nil {
			ok = false
			break
		}
		r.moves = append(r.moves, moved{unit: ui, to: p.Clone()})
	}
	for i := len(r.moves) - 1; i >= 0; i-- {
		if err := l.TrialRelease(r.moves[i].to.Claims...); err != nil {
			panic("preempt: releasing a trial migration failed: " + err.Error())
		}
	}
	if err := l.TrialRelease(r.scratch.Claims...); err != nil {
		panic("preempt: releasing the trial gang failed: " + err.Error())
	}
	return ok
}
