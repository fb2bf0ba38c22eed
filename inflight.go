package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Nomination is a preemption in flight, as a host's records or a saved
// state (package snapshot) hold it: a waiting job for which victims were
// asked to stop (Decision.Preemptions) and, with a PlacingPreemptor, the
// placement promised to it once they are gone.
type Nomination struct {
	Job string // the waiting job
	// Victims are the jobs asked to stop for it that still hold (none
	// once all have stopped: the job binds to Tasks at the next cycle).
	Victims []string
	// Tasks are the claims promised per task group (as Restore's tasks),
	// nil when no placement was promised; Due is when the victims should
	// have stopped (zero without Tasks).
	Tasks [][]topology.Claim
	Due   time.Time
	// Domain names the domain the promised placement was made within
	// (as RestoredJob.Domain); empty means the whole cluster. The job
	// binds with it: an elastic gang grows back only within it.
	Domain string
}

// Nominations returns the preemptions in flight: first the placements
// promised, in the order made (the order the cycle holds them in), then,
// in order of submission among ids, the waiting jobs of ids that wait for
// victims without one. A victim that has stopped is not listed.
func (s *Scheduler) Nominations(ids []string) []Nomination {
	var out []Nomination
	for _, n := range s.noms.list {
		j := n.job
		if j.nom.nominated != n || !j.state.Waiting() {
			continue
		}
		out = append(out, Nomination{Job: j.spec.ID, Victims: s.stillStopping(j), Due: n.due, Tasks: claimsPerGroup(n.p, len(j.req.Groups)), Domain: s.domainOf(n.p)})
	}
	for _, id := range ids {
		j, ok := s.jobs.byID[id]
		if !ok || !j.state.Waiting() || j.nom.nominated != nil {
			continue
		}
		if v := s.stillStopping(j); len(v) > 0 {
			out = append(out, Nomination{Job: id, Victims: v})
		}
	}
	return out
}

// claimsPerGroup copies placement p of a job with groups task groups as
// claims per task group (as Restore's tasks).
func claimsPerGroup(p *gang.Placement, groups int) [][]topology.Claim {
	out := make([][]topology.Claim, groups)
	for i, cl := range p.Claims {
		g := 0
		if i < len(p.Tasks) {
			g = int(p.Tasks[i].Group)
		}
		c := cl
		c.GPUs = slices.Clone(cl.GPUs)
		out[g] = append(out[g], c)
	}
	return out
}

// stillStopping lists the victims asked for j that still hold.
func (s *Scheduler) stillStopping(j *job) []string {
	var out []string
	for _, id := range j.nom.waitingFor {
		if v, ok := s.jobs.byID[id]; ok && v.state.Holding() && v.vic.preempting {
			out = append(out, id)
		}
	}
	return out
}

// RestoreNomination restores a preemption in flight after the jobs are
// restored (RestoreJob): the job waits, its victims hold and are marked
// as being preempted (not offered again), and the promised placement,
// if any, must match the job's groups as Restore's tasks do. Restore
// nominations in the order Nominations lists them. Nothing changes on
// error.
func (s *Scheduler) RestoreNomination(n Nomination) error {
	if err := s.mutating("RestoreNomination", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(n.Job)
	if err != nil {
		return err
	}
	if !j.state.Waiting() || j.nom.nominated != nil || len(j.nom.waitingFor) > 0 {
		return jobErr(n.Job, fmt.Errorf("%w: RestoreNomination for a %s job, or one restored already", ErrState, j.state))
	}
	if len(n.Victims) == 0 && n.Tasks == nil {
		return jobErr(n.Job, fmt.Errorf("%w: a nomination names its victims or its placement", ErrState))
	}
	victims := make([]*job, 0, len(n.Victims))
	for _, id := range n.Victims {
		v, ok := s.jobs.byID[id]
		if !ok || !v.state.Holding() || v == j || slices.Contains(victims, v) {
			return jobErr(n.Job, fmt.Errorf("%w: victim %q is not a distinct job holding resources", ErrState, id))
		}
		victims = append(victims, v)
	}
	var p *gang.Placement
	if n.Tasks != nil {
		if n.Due.IsZero() {
			return jobErr(n.Job, fmt.Errorf("%w: a promised placement needs its due time", ErrState))
		}
		if p, err = s.placementOf(j, n.Tasks); err != nil {
			return err
		}
		if err := s.placeWithin(p, "nomination", n.Domain, n.Tasks); err != nil {
			return err
		}
	} else if n.Domain != "" {
		return jobErr(n.Job, fmt.Errorf("%w: a nomination's domain without its placement", ErrState))
	}
	now := s.now
	for _, v := range victims {
		s.victims.ask(v, now)
	}
	s.noms.waitFor(j, slices.Clone(n.Victims))
	if p != nil {
		s.noms.nominate(j, p, victims, s.adm.charge(p), n.Due)
	}
	return nil
}

// placementOf builds, unplaced, the placement of j's claims per task
// group, each checked against its group (as Restore does).
func (s *Scheduler) placementOf(j *job, tasks [][]topology.Claim) (*gang.Placement, error) {
	id, req := j.spec.ID, j.req
	if len(tasks) != len(req.Groups) {
		return nil, jobErr(id, fmt.Errorf("%d task groups placed, the job has %d", len(tasks), len(req.Groups)))
	}
	p := &gang.Placement{Job: id, Level: s.c.LevelCluster(), Domain: s.c.Root()}
	for gi, claims := range tasks {
		g := &req.Groups[gi]
		if len(claims) < g.Min || len(claims) > g.Count {
			return nil, &workload.FieldError{Job: id, Field: fmt.Sprintf("groups[%d]", gi), Msg: fmt.Sprintf("%d tasks placed, want %d..%d", len(claims), g.Min, g.Count)}
		}
		for ti, cl := range claims {
			if err := s.checkClaim(g, cl); err != nil {
				return nil, &workload.FieldError{Job: id, Field: fmt.Sprintf("groups[%d] task %d", gi, ti), Msg: err.Error()}
			}
			c := cl
			c.GPUs = slices.Clone(cl.GPUs)
			p.Claims = append(p.Claims, c)
			p.Tasks = append(p.Tasks, gang.TaskRef{Group: int32(gi), Index: int32(ti)})
		}
		p.Placed = append(p.Placed, len(claims))
	}
	return p, nil
}

// domainOf names the domain placement p was made within; "" for the
// whole cluster (or none).
func (s *Scheduler) domainOf(p *gang.Placement) string {
	if p == nil || p.Level >= s.c.LevelCluster() || p.Domain == topology.NoDomain || p.Domain == s.c.Root() {
		return ""
	}
	return s.c.DomainName(p.Domain)
}

// placeWithin sets the domain of p, a restored placement of tasks (what
// says whose), to the one name names (domainWithin); an error says what
// is wrong.
func (s *Scheduler) placeWithin(p *gang.Placement, what, name string, tasks [][]topology.Claim) error {
	lv, dom, msg := s.domainWithin(name, tasks)
	if msg != "" {
		return jobErr(p.Job, fmt.Errorf("%w: %s domain: %s", ErrState, what, msg))
	}
	p.Level, p.Domain = lv, dom
	return nil
}

// domainWithin resolves name as the domain a placement of tasks was made
// within (gang.Placement's Level and Domain): every GPU of tasks must be
// in it. Empty means the whole cluster. msg says what is wrong, if
// anything.
func (s *Scheduler) domainWithin(name string, tasks [][]topology.Claim) (lv topology.Level, dom topology.DomainID, msg string) {
	lv, dom = s.c.LevelCluster(), s.c.Root()
	if name == "" {
		return lv, dom, ""
	}
	d, ok := s.c.DomainByName(name)
	if !ok || s.c.Domain(d).Level < 0 {
		return lv, dom, fmt.Sprintf("%q is not a placement domain", name)
	}
	lv = s.c.Domain(d).Level
	for _, g := range tasks {
		for _, cl := range g {
			for _, gc := range cl.GPUs {
				if gc.GPU < 0 || int(gc.GPU) >= s.c.NumGPUs() {
					continue // placementOf says what is wrong
				}
				if lv != topology.LevelFabric && s.c.GPUAt(gc.GPU, lv) != d || lv == topology.LevelFabric && !slices.Contains(s.c.DomainGPUs(d), gc.GPU) {
					return lv, dom, fmt.Sprintf("GPU %s is not in %s", s.c.GPUName(gc.GPU), name)
				}
			}
		}
	}
	return lv, d, ""
}

// saveNominations fills st.Nominations (Nominations of st's jobs).
func (s *Scheduler) saveNominations(st *State) { st.Nominations = s.Nominations(st.ids()) }

// restoreNominations restores st.Nominations, after the jobs and resizes
// (RestoreNomination).
func (s *Scheduler) restoreNominations(st *State) error {
	return restoreEach(st, "nominations", st.Nominations, func(n Nomination) string { return n.Job }, s.RestoreNomination)
}
