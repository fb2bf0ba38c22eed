package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// ElasticConfig turns on elastic shrink and grow: a running elastic gang
// (a task group with MinCount < Count) above its minimum may give back
// tasks instead of being preempted whole (Decision.Shrinks), and grows
// back towards the size it had before its first shrink when room returns
// (Decision.Grows). Shrinks need a PlanPreemptor (Config.Preemptor): the
// planner chooses between stopping a gang whole and shrinking one by its
// cost (preempt.Search), and with this set it may shrink
// (preempt.Config.NoShrink is then honoured as given instead of forced).
//
// How a shrink is priced (the planner's cost, lexicographic): the GPU
// time lost since the job's last checkpoint on the GPUs of the stopped
// tasks only — the tasks that stay keep running and lose nothing; then
// the number of victim jobs (a shrunk gang counts once, however many
// tasks it gives back); then their priorities. A whole preemption of the
// same job loses the work since the checkpoint on all of its GPUs. So a
// shrink is chosen when the tasks it stops lose less than every other
// way to make the room — typically when the room needed is only part of
// the gang, or the gang checkpointed more recently than the other
// candidates; full ties are broken as for any victims (preempt.Search).
//
// The host protocol, in order:
//
//  1. A Shrink in a Decision: stop the listed tasks within Grace (each
//     may checkpoint; the others run on), then call Shrunk. The
//     Scheduler releases exactly the Shrink's Claims; the job it makes
//     room for binds in the next cycle, as after a preemption. A host
//     that stops the whole job instead calls Preempted.
//  2. A Grow in a Decision: the Claims are already the job's (its
//     placement is extended, the quota charged); start the new tasks
//     there, then call Grown. A host that cannot start them calls
//     Requeue (the whole job waits again and restarts from its
//     checkpoint); there is no event that undoes a grow alone.
//
// Faults too: an elastic gang a GPU or host fault hits only above its
// minimum loses only the tasks hit — a Decision.Recoveries entry with
// preempt.ActionShrink, carried out as a Shrink (stop them, call Shrunk;
// a host that stops the whole job calls Requeue) — and grows back
// later, as after a shrink for a preemption (torchrun-elastic style). A
// gang with a stop or resize in flight is stopped whole.
//
// A job grows only when no other job waits for room: nothing waits in
// any other queue except for quota, and nothing of its own queue with a
// priority at least its own (a lower-priority job of its queue it could
// preempt anyway). The new tasks go in the domain the job already holds
// (its placement's level and domain), placed by the Scheduler's placer,
// as many as fit, up to the size before the first shrink.
type ElasticConfig struct {
	// NoGrow keeps shrunk gangs at their size: they never grow back.
	NoGrow bool
}

// Shrink asks the host to stop some tasks of an elastic gang so that a
// waiting job can start; the rest of the gang runs on.
type Shrink struct {
	// Job is the gang to shrink; For the waiting job it makes room for.
	Job string
	For string
	// Tasks are the tasks to stop, in placement order; Claims what each
	// releases (Claims[i] is Tasks[i]'s), copies. Size is the gang's
	// task count once they are stopped.
	Tasks  []gang.TaskRef
	Claims []topology.Claim
	Size   int
	// Grace is how long the tasks have to checkpoint before they stop.
	Grace time.Duration
	// Reason says why, in words (the ground and the work lost).
	Reason string
}

// Grow extends a shrunk elastic gang with new tasks: they are the job's
// from this Decision on (its placement holds them); the host starts them
// and calls Grown.
type Grow struct {
	Job string
	// Tasks are the new tasks; Claims where each runs (Claims[i] is
	// Tasks[i]'s), copies. Size is the gang's task count with them.
	Tasks  []gang.TaskRef
	Claims []topology.Claim
	Size   int
}

// ErrNotResizing is returned by Shrunk and Grown for a job with no
// shrink (or grow) in flight.
var ErrNotResizing = errors.New("no shrink or grow in flight")

// elastic is the shrink-and-grow concern: the jobs that were shrunk (and
// may grow back), each job's shrink or grow in flight and its size before
// its first shrink. Its methods are the only writers of its fields and
// of each job's el part.
type elastic struct {
	cfg *ElasticConfig // nil: off
	// resized lists the jobs with an el part set, in the order their
	// first shrink was issued; pruned lazily (see jobElastic.live).
	resized []*job
}

// jobElastic is a job's part of the elastic concern. It describes the
// run on placement p only: once the job's placement is another (it was
// stopped, moved or resized by other means), the part is void.
type jobElastic struct {
	p *gang.Placement // the placement the part is about; nil: none
	// orig is the tasks per group before the first shrink.
	orig []int
	// shrink lists the claim indexes of p a shrink in flight stops;
	// shrinkFor, shrinkGrace and shrinkAt describe it.
	shrink      []int
	shrinkFor   string
	shrinkGrace time.Duration
	shrinkAt    time.Time
	// grow lists the claim indexes of p a grow in flight added.
	grow []int
}

// live reports whether j's part is about its current run.
func (e *jobElastic) live(j *job) bool { return e.p != nil && e.p == j.placement }

// growing reports whether a grow of j is in flight.
func (j *job) growing() bool { return j.el.live(j) && len(j.el.grow) > 0 }

func newElastic(cfg *ElasticConfig) elastic { return elastic{cfg: cfg} }

// on reports whether shrinks may be planned.
func (x *elastic) on() bool { return x.cfg != nil }

// shrinkOn says elastic gangs may be shrunk (planSource).
func (s *Scheduler) shrinkOn() bool { return s.elastic.on() }

// releasing is what a job being stopped will release of its charge: the
// charge of its shrink's tasks when it is shrinking, else all of it.
func (x *elastic) releasing(s *Scheduler, j *job) queue.Vector {
	if !j.el.live(j) || len(j.el.shrink) == 0 {
		return j.charged
	}
	return s.adm.charge(&gang.Placement{Claims: pickClaims(j.placement.Claims, j.el.shrink)})
}

func pickClaims(cs []topology.Claim, idx []int) []topology.Claim {
	out := make([]topology.Claim, len(idx))
	for i, k := range idx {
		out[i] = cs[k]
	}
	return out
}

// shrinkIndexes checks that tasks name tasks of j's placement, each once,
// leaving every group at least its minimum, and returns their claim
// indexes in placement order (nil when not).
func shrinkIndexes(j *job, tasks []gang.TaskRef) []int {
	p := j.placement
	if p == nil || len(tasks) == 0 {
		return nil
	}
	left := slices.Clone(p.Placed)
	var idx []int
	for _, t := range tasks {
		k := slices.Index(p.Tasks, t)
		if k < 0 || slices.Contains(idx, k) || int(t.Group) >= len(left) {
			return nil
		}
		left[t.Group]--
		idx = append(idx, k)
	}
	for gi := range left {
		if left[gi] < j.spec.Groups[gi].Min() {
			return nil
		}
	}
	slices.Sort(idx)
	return idx
}

// issueShrink records a shrink of victim v (of tasks idx) for waiting job
// p.For (none for a recovery), asked at now, and returns it for the
// Decision.
func (x *elastic) issueShrink(v *job, idx []int, p Preemption, now time.Time) Shrink {
	e := &v.el
	if !e.live(v) {
		*e = jobElastic{p: v.placement}
	}
	if e.orig == nil {
		e.orig = slices.Clone(v.placement.Placed)
		if !slices.Contains(x.resized, v) {
			x.resized = append(x.resized, v)
		}
	}
	e.shrink, e.shrinkFor, e.shrinkGrace, e.shrinkAt = idx, p.For, p.Grace, now
	sh := Shrink{Job: v.spec.ID, For: p.For, Claims: cloneClaims(pickClaims(v.placement.Claims, idx)), Size: v.placement.Len() - len(idx), Grace: p.Grace, Reason: p.Reason}
	for _, k := range idx {
		sh.Tasks = append(sh.Tasks, v.placement.Tasks[k])
	}
	return sh
}

// shrunk returns the placement j keeps once its shrink in flight is
// done, and the hosts it leaves claims on.
func (x *elastic) shrunk(j *job) (*gang.Placement, []topology.HostID) {
	p := j.placement
	q := &gang.Placement{Job: p.Job, Placed: slices.Clone(p.Placed), Level: p.Level, Domain: p.Domain, Relaxed: slices.Clone(p.Relaxed)}
	var hosts []topology.HostID
	for k := range p.Claims {
		if slices.Contains(j.el.shrink, k) {
			q.Placed[p.Tasks[k].Group]--
			hosts = append(hosts, p.Claims[k].Host)
			continue
		}
		q.Claims = append(q.Claims, p.Claims[k])
		q.Tasks = append(q.Tasks, p.Tasks[k])
	}
	return q.Clone(), hosts
}

// moved files j's part on its new placement p after a resize; grow lists
// the claim indexes of p a grow adds (nil after a shrink).
func (x *elastic) moved(j *job, p *gang.Placement, grow []int) {
	e := &j.el
	e.p, e.shrink, e.shrinkFor, e.grow = p, nil, "", grow
}

// grown records that j's grow in flight is done.
func (x *elastic) grown(j *job) { j.el.grow = nil }

// growers returns the jobs that may grow back now, highest priority
// first (then by submission), pruning the list of jobs whose part is void
// or that are back at their size.
func (x *elastic) growers() []*job {
	keep := x.resized[:0]
	for _, j := range x.resized {
		if e := &j.el; e.live(j) && (j.placement.Len() < total(e.orig) || len(e.shrink) > 0 || len(e.grow) > 0) {
			keep = append(keep, j)
		} else {
			j.el = jobElastic{}
		}
	}
	clear(x.resized[len(keep):])
	x.resized = keep
	var out []*job
	for _, j := range keep {
		if j.state == queue.Running && len(j.el.shrink) == 0 && len(j.el.grow) == 0 && !j.vic.preempting && !j.rec.recovering {
			out = append(out, j)
		}
	}
	slices.SortStableFunc(out, func(a, b *job) int {
		if a.spec.Priority != b.spec.Priority {
			return int(b.spec.Priority) - int(a.spec.Priority)
		}
		return int(a.entry.Seq) - int(b.entry.Seq)
	})
	return out
}

func total(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// shrinkVictim turns preemption v of holding job vj (for waiting job j)
// into a shrink when v.Shrink names tasks vj may give back, appending it
// to d. It reports false (nothing recorded) when the tasks are not
// valid, or shrinking is off.
func (s *Scheduler) shrinkVictim(d *Decision, vj *job, v Preemption, now time.Time) bool {
	if !s.elastic.on() || !vj.state.Holding() || vj.growing() {
		return false
	}
	idx := shrinkIndexes(vj, v.Shrink)
	if idx == nil {
		return false
	}
	s.victims.ask(vj, now)
	d.Shrinks = append(d.Shrinks, s.elastic.issueShrink(vj, idx, v, now))
	return true
}

// shrinkForRecovery records the shrink of holding job j by tasks, the
// tasks a fault hit (preempt.Recover checked that they leave every group
// its minimum and that j has no stop or resize in flight), and returns
// it. j is being stopped in part, as a shrunk victim is (victims.ask).
func (s *Scheduler) shrinkForRecovery(j *job, tasks []gang.TaskRef, grace time.Duration, reason string, now time.Time) Shrink {
	idx := shrinkIndexes(j, tasks)
	if idx == nil {
		panic("gpusched: recovery shrink of " + j.spec.ID + " is not a valid shrink of its placement")
	}
	s.victims.ask(j, now)
	return s.elastic.issueShrink(j, idx, Preemption{Job: j.spec.ID, Grace: grace, Reason: reason}, now)
}

// Shrunk reports that job id, asked by a Decision.Shrinks entry (or a
// Decision.Recoveries entry with ActionShrink), has
// stopped the tasks listed there at now: exactly their claims are
// released, the rest of the job runs on, and the job the shrink made room
// for binds in the next cycle.
func (s *Scheduler) Shrunk(id string, now time.Time) error {
	if err := s.mutating("Shrunk", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Shrunk", id); err != nil {
		return err
	}
	now, err := s.eventAt("Shrunk", id, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.state.Holding() || !j.el.live(j) || len(j.el.shrink) == 0 {
		return jobErr(id, ErrNotResizing)
	}
	p, hosts := s.elastic.shrunk(j)
	if err := s.resize(j, p, hosts, now); err != nil {
		return jobErr(id, err)
	}
	s.elastic.moved(j, p, nil)
	s.victims.stopped(j)
	s.victims.update(j, now)
	return nil
}

// Grown reports that job id started the new tasks of a Decision.Grows
// entry at now.
func (s *Scheduler) Grown(id string, now time.Time) error {
	if err := s.mutating("Grown", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Grown", id); err != nil {
		return err
	}
	now, err := s.eventAt("Grown", id, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.growing() {
		return jobErr(id, ErrNotResizing)
	}
	s.elastic.grown(j)
	s.victims.update(j, now)
	return nil
}

// growBack grows shrunk jobs back, when nothing else waits for room
// (see ElasticConfig), appending the grows to d. It runs after the
// queues were served, while the nominations and migrations still hold
// their room in the ledger.
func (s *Scheduler) growBack(d *Decision, now time.Time) {
	x := &s.elastic
	if x.cfg == nil || x.cfg.NoGrow || len(x.resized) == 0 {
		return
	}
	for _, j := range x.growers() {
		if s.roomWanted(j) {
			continue
		}
		p, added := s.growPlacement(j)
		if p == nil {
			continue
		}
		ext := &gang.Placement{Claims: pickClaims(p.Claims, added)}
		if s.tree.Check(j.leaf.ID(), s.adm.charge(ext)) != nil {
			continue
		}
		if err := s.resize(j, p, nil, now); err != nil {
			continue // (the placer found the room free: not expected)
		}
		x.moved(j, p, added)
		s.victims.update(j, now)
		g := Grow{Job: j.spec.ID, Claims: cloneClaims(ext.Claims), Size: p.Len()}
		for _, k := range added {
			g.Tasks = append(g.Tasks, p.Tasks[k])
		}
		d.Grows = append(d.Grows, g)
	}
}

// roomWanted reports whether a waiting job wants room that a grow of j
// would take: any job of another queue waiting for something other than
// quota, or one of j's queue with a priority at least j's.
func (s *Scheduler) roomWanted(j *job) bool {
	wanted := false
	for _, id := range s.tree.Leaves() {
		l := s.tree.LeafOf(id)
		l.Ascend(func(e *queue.Entry) bool {
			w := e.Ref.(*job)
			if w.leaf == j.leaf && w.spec.Priority < j.spec.Priority {
				return true
			}
			switch s.cyc.reason(w).Code {
			case WaitQuota, WaitQuotaHeld, WaitTooLarge:
				return true
			}
			wanted = true
			return false
		})
		if wanted {
			return true
		}
	}
	return false
}

// growPlacement places the tasks j lacks of its size before its first
// shrink, as many as fit, in the domain j holds, and returns j's
// placement extended with them and their claim indexes in it (nil when
// none fits).
func (s *Scheduler) growPlacement(j *job) (*gang.Placement, []int) {
	p := j.placement
	sub := j.spec
	sub.Groups = nil
	var gmap []int
	for gi, g := range j.spec.Groups {
		if miss := j.el.orig[gi] - p.Placed[gi]; miss > 0 {
			g.Count, g.MinCount = miss, 1
			sub.Groups = append(sub.Groups, g)
			gmap = append(gmap, gi)
		}
	}
	if len(sub.Groups) == 0 {
		return nil, nil
	}
	req, err := gang.NewRequest(s.c, &sub)
	if err != nil {
		return nil, nil
	}
	req.Seed = j.req.Seed
	s.hosts.narrowGrow(j, req, gmap) // its host filter (hostfilter.go)
	s.confine(req, j, p)
	// MaxTasksPerHost counts the tasks j keeps: hosts at the cap are
	// refused, and new tasks beyond it on a host left out.
	var have map[topology.HostID]int
	if limit := j.spec.MaxTasksPerHost; limit > 0 {
		have = map[topology.HostID]int{}
		for _, cl := range p.Claims {
			have[cl.Host]++
		}
		inner := req.AllowHost
		req.AllowHost = func(h topology.HostID) bool { return have[h] < limit && (inner == nil || inner(h)) }
	}
	var np gang.Placement
	if s.placer.Place(s.ledger, req, &np) != nil || np.Len() == 0 {
		return nil, nil
	}
	q := p.Clone()
	var added []int
	for i, cl := range np.Claims {
		if have != nil {
			if have[cl.Host] >= j.spec.MaxTasksPerHost {
				continue
			}
			have[cl.Host]++
		}
		gi := gmap[np.Tasks[i].Group]
		k := int32(0)
		for slices.Contains(q.Tasks, gang.TaskRef{Group: int32(gi), Index: k}) {
			k++
		}
		added = append(added, len(q.Claims))
		q.Claims = append(q.Claims, cl)
		q.Tasks = append(q.Tasks, gang.TaskRef{Group: int32(gi), Index: k})
		q.Placed[gi]++
	}
	if len(added) == 0 {
		return nil, nil
	}
	return q.Clone(), added
}

// confine keeps req's tasks in the domain j's placement p holds: its
// level and domain, or, for a placement that does not say (a restored
// one names the cluster), the domain of its GPUs at j's innermost
// required level (nothing is confined when that is the whole cluster);
// and on the GPU model of its GPUs, when they have one.
func (s *Scheduler) confine(req *gang.Request, j *job, p *gang.Placement) {
	model := topology.NoModel
	for _, cl := range p.Claims {
		for _, g := range cl.GPUs {
			if m := s.c.GPU(g.GPU).Model; model == topology.NoModel {
				model = m
			} else if m != model {
				model = topology.NoModel
				break
			}
		}
	}
	if model != topology.NoModel {
		req.AllowGPU = func(g topology.GPUID) bool { return s.c.GPU(g).Model == model }
	}
	d := p.Domain
	if p.Level >= s.c.LevelCluster() {
		d = topology.NoDomain
		if len(j.req.Required) > 0 {
			for _, cl := range p.Claims {
				if len(cl.GPUs) > 0 {
					d = s.c.GPUAt(cl.GPUs[0].GPU, j.req.Required[0])
					break
				}
			}
		}
	}
	if d == topology.NoDomain || d == s.c.Root() {
		return
	}
	if hosts := s.c.DomainHostList(d); hosts != nil {
		req.AllowHost = func(h topology.HostID) bool {
			_, ok := slices.BinarySearch(hosts, h)
			return ok
		}
		return
	}
	gpus := slices.Clone(s.c.DomainGPUs(d))
	slices.Sort(gpus)
	req.AllowGPU = func(g topology.GPUID) bool {
		_, ok := slices.BinarySearch(gpus, g)
		return ok && (model == topology.NoModel || s.c.GPU(g).Model == model)
	}
	req.AllowHost = func(h topology.HostID) bool {
		first, n := s.c.HostGPUs(h)
		i, _ := slices.BinarySearch(gpus, first)
		return i < len(gpus) && gpus[i] < first+topology.GPUID(n)
	}
}

// resize switches holding job j to placement p — what it keeps after a
// shrink, or its placement extended by a grow — at now, fanning out as
// release and take do: the ledger (all or nothing), the reservations'
// shadows that may model j, the placer's tracker, the quota charge, the
// victim index and the job table; released are the hosts a shrink gives
// claims back on (capacity gains for the failure cache).
func (s *Scheduler) resize(j *job, p *gang.Placement, released []topology.HostID, now time.Time) error {
	old := j.placement
	if err := j.txn.Undo(); err != nil {
		return fmt.Errorf("gpusched: ledger out of step with job: %w", err)
	}
	// Reinstate, not Commit: the tasks the job keeps may be on a host
	// cordoned, draining or failed since (Commit refuses those: Shrunk
	// panicked restoring the placement); a grow's new tasks were placed
	// this cycle on usable hosts.
	txn, err := gang.Reinstate(s.ledger, p)
	if err != nil {
		back, err2 := gang.Reinstate(s.ledger, old)
		if err2 != nil {
			panic("gpusched: restoring a placement after a failed resize: " + err2.Error())
		}
		j.txn = back
		return err
	}
	// Out of every concern as release takes it out, back in as take
	// files it, with the quota charged for the new placement.
	s.unindexHolding(j)
	charge := s.adm.charge(p)
	running := j.state == queue.Running
	s.tree.Release(j.leaf.ID(), j.charged, running, now)
	s.tree.Admit(j.leaf.ID(), charge, now)
	if running {
		s.tree.Start(j.leaf.ID(), charge, now)
	}
	j.placement, j.txn, j.charged = p, txn, charge
	s.indexHolding(j, now)
	gen := s.ledger.Generation()
	for _, h := range released {
		s.fit.gained(gen, h)
	}
	return nil
}

// formatResizes writes d's shrinks and grows, one line each.
func formatResizes(b *strings.Builder, c *topology.Cluster, d *Decision) {
	for _, x := range d.Shrinks {
		fmt.Fprintf(b, "shrink %s for %s (grace %v): stop %d task(s) on %s, %d left: %s\n", x.Job, x.For, x.Grace, len(x.Tasks),
			FormatPlacement(c, &gang.Placement{Claims: x.Claims}), x.Size, x.Reason)
	}
	for _, x := range d.Grows {
		fmt.Fprintf(b, "grow %s: %d task(s) on %s, %d in all\n", x.Job, len(x.Tasks), FormatPlacement(c, &gang.Placement{Claims: x.Claims}), x.Size)
	}
}

// Resize is what the Scheduler keeps of a resized elastic job beyond its
// placement: its size before its first shrink, and a shrink or grow in
// flight. Resizes lists them and RestoreResize restores them, so that a
// saved state carries them (package snapshot).
type Resize struct {
	Job string
	// Size is the job's tasks per group before its first shrink: what it
	// grows back to.
	Size []int
	// Shrink lists the claims of the tasks a shrink in flight stops (nil:
	// none), asked for job For (empty for a failure recovery's shrink)
	// with Grace.
	Shrink []topology.Claim
	For    string
	Grace  time.Duration
	// Grow lists the claims of the tasks a grow in flight added (nil:
	// none).
	Grow []topology.Claim
}

// Resizes lists the resized elastic jobs that hold resources, in the
// order of their first shrink; the claims are copies.
func (s *Scheduler) Resizes() []Resize {
	var out []Resize
	for _, j := range s.elastic.resized {
		e := &j.el
		if !e.live(j) || !j.state.Holding() {
			continue
		}
		r := Resize{Job: j.spec.ID, Size: slices.Clone(e.orig)}
		if len(e.shrink) > 0 {
			r.Shrink, r.For, r.Grace = cloneClaims(pickClaims(j.placement.Claims, e.shrink)), e.shrinkFor, e.shrinkGrace
		}
		if len(e.grow) > 0 {
			r.Grow = cloneClaims(pickClaims(j.placement.Claims, e.grow))
		}
		out = append(out, r)
	}
	return out
}

// RestoreResize restores a resized elastic job after the jobs are
// restored (RestoreJob) and before the nominations (RestoreNomination):
// the job holds resources, Size has one entry per group between the tasks it holds
// and its count, and the claims of Shrink or Grow (not both) are claims
// of its placement, each once, a shrink leaving every group its minimum.
// A shrink in flight marks the job as being stopped (as a victim is).
// Nothing changes on error.
func (s *Scheduler) RestoreResize(r Resize) error {
	if err := s.mutating("RestoreResize", ""); err != nil {
		return err
	}
	defer s.cb.leave()
	j, err := s.lookup(r.Job)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return jobErr(r.Job, fmt.Errorf("%w: RestoreResize: "+format, append([]any{ErrState}, args...)...))
	}
	switch {
	case !j.state.Holding():
		return bad("a %s job (want admitted or running)", j.state)
	case j.el.live(j):
		return bad("restored already")
	case len(r.Size) != len(j.spec.Groups):
		return bad("%d sizes for %d task groups", len(r.Size), len(j.spec.Groups))
	case r.Shrink != nil && r.Grow != nil:
		return bad("both a shrink and a grow in flight")
	}
	p := j.placement
	for gi, n := range r.Size {
		if n < p.Placed[gi] || n > j.spec.Groups[gi].Count {
			return bad("size %d of group %d outside %d..%d", n, gi, p.Placed[gi], j.spec.Groups[gi].Count)
		}
	}
	shrink, ok := claimIndexes(p, r.Shrink)
	if !ok {
		return bad("a shrink's claim is not one of the job's")
	}
	grow, ok := claimIndexes(p, r.Grow)
	if !ok {
		return bad("a grow's claim is not one of the job's")
	}
	if shrink != nil {
		var tasks []gang.TaskRef
		for _, k := range shrink {
			tasks = append(tasks, p.Tasks[k])
		}
		if shrinkIndexes(j, tasks) == nil {
			return bad("the shrink leaves a group below its minimum")
		}
	}
	s.elastic.restore(j, slices.Clone(r.Size), shrink, r.For, r.Grace, grow, s.now)
	if shrink != nil {
		s.victims.ask(j, s.now)
	} else {
		s.victims.update(j, s.now)
	}
	return nil
}

// restore files j's part as RestoreResize found it.
func (x *elastic) restore(j *job, orig, shrink []int, forID string, grace time.Duration, grow []int, now time.Time) {
	j.el = jobElastic{p: j.placement, orig: orig, shrink: shrink, shrinkFor: forID, shrinkGrace: grace, shrinkAt: now, grow: grow}
	x.resized = append(x.resized, j)
}

// claimIndexes returns the indexes in p of claims cs, in ascending
// order, each matched once (nil, true for none; false when one is not
// p's).
func claimIndexes(p *gang.Placement, cs []topology.Claim) ([]int, bool) {
	if len(cs) == 0 {
		return nil, true
	}
	var out []int
	for _, c := range cs {
		k := slices.IndexFunc(p.Claims, func(x topology.Claim) bool { return x.Equal(c) })
		for k >= 0 && slices.Contains(out, k) {
			n := slices.IndexFunc(p.Claims[k+1:], func(x topology.Claim) bool { return x.Equal(c) })
			if n < 0 {
				k = -1
			} else {
				k += 1 + n
			}
		}
		if k < 0 {
			return nil, false
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out, true
}
