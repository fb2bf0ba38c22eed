package preempt

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// ConsolidateOptions says what Search.Consolidate may move.
type ConsolidateOptions struct {
	// Level is the level whose domains it frees (LevelFabric for NVLink
	// domains, a network level such as the ToR).
	Level topology.Level
	// MaxMoves bounds the migrations of the plan; 0 means no bound.
	MaxMoves int
	// MaxLost bounds the GPU time the plan loses; 0 means no bound.
	MaxLost GPUTime
	// MaxDomains bounds the candidate domains tried (one trial placement
	// of their jobs each), cheapest first; 0 means 8.
	MaxDomains int
	// Skip, if set, excludes a job from moving (a domain holding it is not
	// a candidate): the caller's per-job caps, moves already in flight.
	Skip func(*Job) bool
}

// Consolidate finds the cheapest way to make one more domain at
// o.Level wholly free (every healthy GPU free) by moving every running
// job with a GPU in it elsewhere, for a cluster where nothing waits: the
// idle-time counterpart of Defragment, which packs running jobs so that a
// gang that later needs a whole domain finds one.
//
// The candidates are the domains at the level that are not wholly free
// and whose every GPU job may move (started, not stopping, preemptible,
// past its minimum run time, under its preemption cap and
// Config.MaxMigrations, not Skip); they are tried in order of the GPU
// time their jobs lose (since their last checkpoint), then the number of
// jobs, then GPUs in use, then domain ID. A trial holds every free GPU of
// the domain and of every wholly free domain at the level, then places
// the domain's jobs (largest first, then by ID) with the Placer on what is
// left, each with its spec or the request a Restricted Snapshot gives for
// it; the first domain whose jobs all place is the plan. Since every
// destination is free now and outside the held domains, carrying the plan
// out frees the domain and keeps every wholly free domain free: the count
// of wholly free domains at the level grows by at least one. CPU-only
// jobs do not count (they hold no GPU).
//
// It returns nil when no candidate works. The plan's Job is empty and its
// Placement nil (no gang); Level and Domain name the domain it frees; its
// migrations are in job ID order, each To free now. Deterministic for the
// same Snapshot state; the Snapshot is left as it was. Cost:
// O(jobs × claims) to collect, plus at most MaxDomains trials of one
// placement per job of the domain.
func (s *Search) Consolidate(snap Snapshot, o ConsolidateOptions, now time.Time) *DefragPlan {
	l := snap.Ledger()
	c := l.Cluster()
	doms := c.DomainsAt(o.Level)
	if len(doms) < 2 || o.Level == c.LevelCluster() {
		return nil
	}
	maxDomains := o.MaxDomains
	if maxDomains <= 0 {
		maxDomains = 8
	}
	free := func(d topology.DomainID) bool {
		hg := l.HealthyGPUs(d)
		return hg > 0 && l.FreeGPUs(d) == hg
	}
	// pos maps a domain to its candidate (index in doms), -1 for none.
	pos := make(map[topology.DomainID]int, len(doms))
	cands := make([]consCand, len(doms))
	for i, d := range doms {
		pos[d] = i
		cands[i] = consCand{d: d, bad: free(d) || l.HealthyGPUs(d) == 0}
	}
	nowNano := now.UnixNano()
	snap.Jobs(func(j *Job) bool {
		if j.Placement == nil {
			return true
		}
		milli, _ := j.shape(c)
		if milli == 0 {
			return true // CPU-only: holds no GPU
		}
		movable := s.movable(j, c, now) && (o.Skip == nil || !o.Skip(j))
		lost := lostOf(j, milli, now, nowNano)
		last := -1
		for _, cl := range j.Placement.Claims {
			for _, g := range cl.GPUs {
				d := c.GPUAt(g.GPU, o.Level)
				i, ok := pos[d]
				if !ok || i == last {
					continue
				}
				last = i
				cd := &cands[i]
				if n := len(cd.jobs); n > 0 && cd.jobs[n-1] == j {
					continue
				}
				cd.jobs = append(cd.jobs, j)
				cd.lost += lost
				cd.bad = cd.bad || !movable
			}
		}
		return true
	})
	order := make([]int, 0, len(cands))
	for i := range cands {
		cd := &cands[i]
		cd.used = l.HealthyGPUs(cd.d) - l.FreeGPUs(cd.d)
		switch {
		case cd.bad || len(cd.jobs) == 0:
		case o.MaxMoves > 0 && len(cd.jobs) > o.MaxMoves:
		case o.MaxLost > 0 && cd.lost > o.MaxLost:
		default:
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := &cands[a], &cands[b]
		return cmp.Or(cmp.Compare(x.lost, y.lost), cmp.Compare(len(x.jobs), len(y.jobs)),
			cmp.Compare(x.used, y.used), cmp.Compare(x.d, y.d))
	})
	if len(order) > maxDomains {
		order = order[:maxDomains]
	}
	for _, i := range order {
		cd := &cands[i]
		if moves := s.consolidateTrial(snap, doms, free, cd); moves != nil {
			dp := &DefragPlan{Level: o.Level, Domain: cd.d, Exact: true}
			for k, j := range cd.jobs {
				milli, _ := j.shape(c)
				lost := lostOf(j, milli, now, nowNano)
				dp.Migrations = append(dp.Migrations, Migration{Job: j.Spec.ID, From: j.Placement.Claims, To: moves[k], Grace: s.grace(j), Lost: lost})
				dp.Cost.Lost += lost
				dp.Cost.Victims++
				dp.Cost.Priority += int64(j.Spec.Priority)
			}
			slices.SortFunc(dp.Migrations, func(a, b Migration) int { return strings.Compare(a.Job, b.Job) })
			return dp
		}
	}
	return nil
}

// consCand is a domain Consolidate may free: the jobs with a GPU in it
// (in the Snapshot's order), what they lose, the GPUs in use.
type consCand struct {
	d    topology.DomainID
	jobs []*Job
	lost GPUTime
	used int
	bad  bool // wholly free already, no healthy GPU, or a job that may not move
}

// movable reports whether j may be moved by Consolidate (the rules of
// classifyMove, and started: a job still starting is left alone).
func (s *Search) movable(j *Job, c *topology.Cluster, now time.Time) bool {
	if j.Started.IsZero() {
		return false
	}
	_, excluded := s.moveExclusion(j, c, now)
	return !excluded
}

// lostOf is the GPU time j (milli GPUs) loses when stopped at now.
func lostOf(j *Job, milli int64, now time.Time, nowNano int64) GPUTime {
	if j.Started.IsZero() {
		return 0
	}
	from := j.Started.UnixNano()
	if cp := j.lastCheckpoint(now); !cp.IsZero() {
		from = cp.UnixNano()
	}
	return lostNanos(milli, from, nowNano)
}

// consolidateTrial holds the free GPUs of cd's domain and of every wholly
// free domain of doms, places cd's jobs (largest first, then by ID, each
// with its moveRequest) on what is left of snap's ledger and returns
// their destinations in cd.jobs' order, or nil when one does not place.
// The ledger is left as it was.
func (s *Search) consolidateTrial(snap Snapshot, doms []topology.DomainID, free func(topology.DomainID) bool, cd *consCand) []*gang.Placement {
	l := snap.Ledger()
	c := l.Cluster()
	var held []topology.Claim
	hold := func(d topology.DomainID) {
		var cl topology.Claim
		cl.Host = topology.NoHost
		flush := func() {
			if cl.Host != topology.NoHost && len(cl.GPUs) > 0 && l.TrialAllocate(cl) == nil {
				held = append(held, cl)
			}
		}
		for _, g := range c.DomainGPUs(d) {
			if !l.GPUIsFree(g) {
				continue
			}
			if h := c.GPUHost(g); h != cl.Host {
				flush()
				cl = topology.Claim{Host: h}
			}
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: g, Kind: topology.ClaimWhole})
		}
		flush()
	}
	for _, d := range doms {
		if d == cd.d || free(d) {
			hold(d)
		}
	}
	idx := make([]int, len(cd.jobs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		ma, _ := cd.jobs[a].shape(c)
		mb, _ := cd.jobs[b].shape(c)
		return cmp.Or(cmp.Compare(mb, ma), strings.Compare(cd.jobs[a].Spec.ID, cd.jobs[b].Spec.ID))
	})
	moves := make([]*gang.Placement, len(cd.jobs))
	var placed []int
	ok := true
	for _, i := range idx {
		req := moveRequest(snap, cd.jobs[i], c)
		var p gang.Placement
		if s.cfg.Placer.Place(l, req, &p) != nil || l.TrialAllocate(p.Claims...) != nil {
			ok = false
			break
		}
		moves[i] = p.Clone()
		placed = append(placed, i)
	}
	for k := len(placed) - 1; k >= 0; k-- {
		if err := l.TrialRelease(moves[placed[k]].Claims...); err != nil {
			panic("preempt: releasing a trial consolidation failed: " + err.Error())
		}
	}
	for k := len(held) - 1; k >= 0; k-- {
		if err := l.TrialRelease(held[k]); err != nil {
			panic("preempt: releasing a consolidation hold failed: " + err.Error())
		}
	}
	if !ok {
		return nil
	}
	return moves
}
