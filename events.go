package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/fairshare"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func (s *Scheduler) advance(now time.Time) time.Time {
	if now.Before(s.now) {
		return s.now
	}
	s.now = now
	return now
}

func jobErr(id string, err error) error { return &JobError{Job: id, Err: err} }

// Submit queues a job at time now. The job is validated and resolved
// against the cluster (a *workload.FieldError names a bad field), must
// name a leaf queue (ErrUnknownQueue) and, if the queue tree names
// priority classes, one of their priorities. A job that can never run —
// its demand exceeds what its queue could ever be admitted with, or it
// does not fit on the idle cluster — is rejected with ErrNeverFits and
// the reason. Submit copies the job; the caller may reuse it.
func (s *Scheduler) Submit(spec workload.Job, now time.Time) error {
	now = s.advance(now)
	if _, dup := s.jobs[spec.ID]; dup {
		return jobErr(spec.ID, ErrDuplicateJob)
	}
	spec = spec.Clone()
	leaf, ok := s.tree.Leaf(spec.Queue)
	if !ok {
		msg := "no leaf queue named " + fmt.Sprintf("%q", spec.Queue)
		if id, inner := s.tree.Lookup(spec.Queue); inner && s.tree.LeafOf(id) == nil {
			msg = fmt.Sprintf("queue %q has sub-queues; submit to a leaf", spec.Queue)
		}
		return jobErr(spec.ID, fmt.Errorf("%w: %s", ErrUnknownQueue, msg))
	}
	if err := s.tree.CheckPriority(spec.Priority); err != nil {
		return &workload.FieldError{Job: spec.ID, Field: "priority", Msg: err.Error()}
	}
	req, err := gang.NewRequest(s.c, &spec)
	if err != nil {
		return err
	}
	s.seq++
	req.Seed = s.cfg.Seed ^ (s.seq * 0x9E3779B97F4A7C15)
	j := &job{spec: spec, req: req, leaf: leaf, state: queue.Pending, shape: shapeKey(req)}
	j.demand = s.demandVector(req)
	if err := s.neverFits(j); err != nil {
		s.seq--
		return jobErr(spec.ID, err)
	}
	j.entry = queue.Entry{ID: spec.ID, Priority: spec.Priority, Submitted: now, Seq: s.seq, Class: j.shape, Runtime: spec.Runtime, Demand: j.demand, Ref: j}
	leaf.Add(&j.entry)
	s.jobs[spec.ID] = j
	return nil
}

// neverFits checks a job against its queue's ceiling and the idle
// cluster. The idle check is cached per shape.
func (s *Scheduler) neverFits(j *job) error {
	ceil := s.tree.Ceiling(j.leaf.ID())
	dims := s.tree.Dimensions()
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
		for m := range s.c.Models() {
			if !acceptsModel(j.req, topology.ModelID(m)) {
				continue
			}
			k := s.modelDim(topology.ModelID(m))
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
	if done := s.fitChecked[j.shape]; !done {
		if s.empty == nil {
			s.empty = topology.NewLedger(s.c)
		}
		var p gang.Placement
		s.idleFail[j.shape] = s.placer.Place(s.empty, j.req, &p)
		s.fitChecked[j.shape] = true
	}
	if x := s.idleFail[j.shape]; x != nil {
		return fmt.Errorf("%w: does not fit on the idle cluster: %s", ErrNeverFits, explanationText(x))
	}
	return nil
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

func (s *Scheduler) lookup(id string) (*job, error) {
	j, ok := s.jobs[id]
	if !ok {
		return nil, jobErr(id, ErrUnknownJob)
	}
	return j, nil
}

// Started reports that an admitted job began running at now.
func (s *Scheduler) Started(id string, now time.Time) error {
	now = s.advance(now)
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if j.state != queue.Admitted {
		return jobErr(id, fmt.Errorf("%w: Started for a %s job", ErrState, j.state))
	}
	s.tree.Start(j.leaf.ID(), j.charged, now)
	j.leaf.Count(-1, 1)
	j.state = queue.Running
	j.started = now
	s.ends.Delete(j)
	s.setEnd(j, now)
	s.ends.ReplaceOrInsert(j)
	s.preUpdate(j)
	return nil
}

// setEnd sets the estimated end of a holding job that (re)started at t.
func (s *Scheduler) setEnd(j *job, t time.Time) {
	rt := j.spec.Runtime
	if rt == 0 {
		rt = s.cfg.DefaultRuntime
	}
	j.endKnown = rt > 0
	if j.endKnown {
		j.end = t.Add(j.remaining(rt))
	} else {
		j.end = time.Time{}
	}
}

// Finished reports that a job ended successfully: its resources are
// released and it is forgotten.
func (s *Scheduler) Finished(id string, now time.Time) error {
	return s.end(id, now, queue.Succeeded)
}

// Failed reports that a job failed (or, for a waiting job, that the host
// gave up on it): resources are released and it is forgotten.
func (s *Scheduler) Failed(id string, now time.Time) error {
	return s.end(id, now, queue.Failed)
}

// Cancel removes a job in any live state, releasing what it holds.
func (s *Scheduler) Cancel(id string, now time.Time) error {
	return s.end(id, now, queue.Cancelled)
}

func (s *Scheduler) end(id string, now time.Time, st queue.State) error {
	now = s.advance(now)
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if st == queue.Succeeded && !j.state.Holding() {
		return jobErr(id, fmt.Errorf("%w: Finished for a %s job", ErrState, j.state))
	}
	if j.state.Holding() {
		if err := s.release(j, now); err != nil {
			return jobErr(id, err)
		}
	} else {
		j.leaf.Remove(&j.entry)
	}
	j.state = st
	delete(s.jobs, id)
	delete(s.reservedFor, j)
	return nil
}

// Requeue puts an admitted or running job back in its queue at its
// original place (same submission time), releasing its resources: the host
// could not start it, or it must restart.
func (s *Scheduler) Requeue(id string, now time.Time) error {
	return s.back(id, now, queue.Requeued, "Requeue")
}

// Preempted reports that a job was stopped to make room (after a
// Preemption of the Decision, or the host's own): its resources are
// released and it waits in its queue again, at its original place.
func (s *Scheduler) Preempted(id string, now time.Time) error {
	return s.back(id, now, queue.Preempted, "Preempted")
}

func (s *Scheduler) back(id string, now time.Time, st queue.State, event string) error {
	now = s.advance(now)
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.state.Holding() {
		return jobErr(id, fmt.Errorf("%w: %s for a %s job", ErrState, event, j.state))
	}
	s.stopped(j, now)
	if err := s.release(j, now); err != nil {
		return jobErr(id, err)
	}
	if st == queue.Preempted {
		j.preemptions++
	}
	j.state = st
	j.preempting = false
	j.reason = nil
	j.leaf.Add(&j.entry)
	return nil
}

// indexHolder indexes a job that has just taken j.placement (admitted, or
// restored): by its estimated end, on each of its hosts, and in the
// placement tracker. release undoes it.
func (s *Scheduler) indexHolder(j *job) {
	s.ends.ReplaceOrInsert(j)
	j.hosts = j.placement.Hosts()
	for _, h := range j.hosts {
		s.onHost[h] = append(s.onHost[h], j)
	}
	if s.tracker != nil {
		s.tracker.Committed(j.req, j.placement)
	}
	s.preIndex(j)
}

// release gives back everything a holding job holds.
func (s *Scheduler) release(j *job, now time.Time) error {
	if err := j.txn.Undo(); err != nil {
		return fmt.Errorf("gpusched: ledger out of step with job: %w", err)
	}
	if s.tracker != nil {
		s.tracker.Undone(j.req, j.placement)
	}
	running := j.state == queue.Running
	s.tree.Release(j.leaf.ID(), j.charged, running, now)
	if running {
		j.leaf.Count(0, -1)
	} else {
		j.leaf.Count(-1, 0)
	}
	s.ends.Delete(j)
	s.preUnindex(j)
	for _, h := range j.hosts {
		on := s.onHost[h]
		if k := slices.Index(on, j); k >= 0 {
			s.onHost[h] = slices.Delete(on, k, k+1)
		}
		s.logGain(h)
	}
	j.placement, j.txn, j.hosts, j.charged = nil, gang.Txn{}, nil, nil
	j.admitted, j.started = time.Time{}, time.Time{}
	return nil
}

// SetPriority changes a live job's priority; a waiting job moves to its
// new place in the queue.
func (s *Scheduler) SetPriority(id string, p int32) error {
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if err := s.tree.CheckPriority(p); err != nil {
		return &workload.FieldError{Job: id, Field: "priority", Msg: err.Error()}
	}
	j.spec.Priority = p
	if j.state.Waiting() {
		j.leaf.SetPriority(&j.entry, p)
	} else {
		j.entry.Priority = p
		s.preUpdate(j)
	}
	return nil
}

// SetGPUHealth sets the health of GPU g. A GPU that is not healthy takes
// no new work; what runs on it keeps running until the host reports it
// Failed, Requeue or Preempted. It returns the IDs of the jobs holding g,
// sorted, so the host can act on them.
func (s *Scheduler) SetGPUHealth(g topology.GPUID, h topology.Health) ([]string, error) {
	if g < 0 || int(g) >= s.c.NumGPUs() {
		return nil, fmt.Errorf("gpusched: SetGPUHealth: GPU %d out of range 0..%d", g, s.c.NumGPUs()-1)
	}
	old := s.ledger.GPU(g).Health
	if err := s.ledger.SetGPUHealth(g, h); err != nil {
		return nil, err
	}
	host := s.c.GPUHost(g)
	if s.healthMoved(host, old, h) {
		s.noteGPU(g, h)
	}
	var ids []string
	for _, j := range s.onHost[host] {
		if usesGPU(j.placement, g) {
			ids = append(ids, j.spec.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// SetHostHealth sets the health of host h (and so of all its GPUs for new
// work). It returns the IDs of the jobs holding resources on h, sorted.
func (s *Scheduler) SetHostHealth(h topology.HostID, hh topology.Health) ([]string, error) {
	if h < 0 || int(h) >= s.c.NumHosts() {
		return nil, fmt.Errorf("gpusched: SetHostHealth: host %d out of range 0..%d", h, s.c.NumHosts()-1)
	}
	old := s.ledger.HostHealth(h)
	if err := s.ledger.SetHostHealth(h, hh); err != nil {
		return nil, err
	}
	if s.healthMoved(h, old, hh) {
		s.noteHost(h, hh)
	}
	var ids []string
	for _, j := range s.onHost[h] {
		ids = append(ids, j.spec.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// healthMoved does the bookkeeping of every health change, from old to h,
// of a GPU or host on host: a return to health is logged as a capacity
// gain on the host (as a release is), and a part that stops being healthy
// moves the health epoch (reservations made before it are not reused). It
// reports whether the health changed.
func (s *Scheduler) healthMoved(host topology.HostID, old, h topology.Health) bool {
	if h == topology.Healthy && old != topology.Healthy {
		s.logGain(host)
	}
	if h != old && h != topology.Healthy {
		s.healthEpoch++
	}
	return h != old
}

func usesGPU(p *gang.Placement, g topology.GPUID) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Claims {
		for _, x := range c.GPUs {
			if x.GPU == g {
				return true
			}
		}
	}
	return false
}

// Restore records a job that already holds resources, with the exact
// claims of each of its tasks: for a host that rebuilds its Scheduler from
// its own records after a restart, or a tool that loads a saved state.
// tasks holds, per task group of the job, one claim per placed task
// (between the group's MinCount and Count); each claim must match its
// group's demand (CPU, memory and whole GPUs, share or MIG instance). st
// is queue.Admitted or queue.Running; started is ignored for Admitted.
// Like Submit, Restore takes its time from submitted: restore and submit
// jobs in order of submission.
//
// The job is checked as Submit checks it, the claims against the ledger
// (all or nothing) and the charge against the quotas: a state the queue
// tree could not have produced is an error, and nothing changes.
func (s *Scheduler) Restore(spec workload.Job, tasks [][]topology.Claim, st queue.State, submitted, started time.Time) error {
	now := s.advance(submitted)
	if st != queue.Admitted && st != queue.Running {
		return jobErr(spec.ID, fmt.Errorf("%w: Restore needs state admitted or running, not %s", ErrState, st))
	}
	if _, dup := s.jobs[spec.ID]; dup {
		return jobErr(spec.ID, ErrDuplicateJob)
	}
	spec = spec.Clone()
	leaf, ok := s.tree.Leaf(spec.Queue)
	if !ok {
		return jobErr(spec.ID, fmt.Errorf("%w: no leaf queue named %q", ErrUnknownQueue, spec.Queue))
	}
	if err := s.tree.CheckPriority(spec.Priority); err != nil {
		return &workload.FieldError{Job: spec.ID, Field: "priority", Msg: err.Error()}
	}
	req, err := gang.NewRequest(s.c, &spec)
	if err != nil {
		return err
	}
	if len(tasks) != len(req.Groups) {
		return jobErr(spec.ID, fmt.Errorf("%d task groups placed, the job has %d", len(tasks), len(req.Groups)))
	}
	p := &gang.Placement{Job: spec.ID, Level: s.c.LevelCluster(), Domain: s.c.Root()}
	for gi, claims := range tasks {
		g := &req.Groups[gi]
		if len(claims) < g.Min || len(claims) > g.Count {
			return &workload.FieldError{Job: spec.ID, Field: fmt.Sprintf("groups[%d]", gi), Msg: fmt.Sprintf("%d tasks placed, want %d..%d", len(claims), g.Min, g.Count)}
		}
		for ti, cl := range claims {
			if err := s.checkClaim(g, cl); err != nil {
				return &workload.FieldError{Job: spec.ID, Field: fmt.Sprintf("groups[%d] task %d", gi, ti), Msg: err.Error()}
			}
			p.Claims = append(p.Claims, cl)
			p.Tasks = append(p.Tasks, gang.TaskRef{Group: int32(gi), Index: int32(ti)})
		}
		p.Placed = append(p.Placed, len(claims))
	}
	charged := s.chargeVector(p)
	if b := s.tree.Check(leaf.ID(), charged); b != nil {
		return jobErr(spec.ID, fmt.Errorf("%w: restoring it would break a quota: %s", ErrState, b))
	}
	txn, err := gang.Commit(s.ledger, p)
	if err != nil {
		return jobErr(spec.ID, fmt.Errorf("claims do not fit the ledger: %w", err))
	}
	s.seq++
	req.Seed = s.cfg.Seed ^ (s.seq * 0x9E3779B97F4A7C15)
	j := &job{spec: spec, req: req, leaf: leaf, state: st, shape: shapeKey(req)}
	j.demand = s.demandVector(req)
	j.entry = queue.Entry{ID: spec.ID, Priority: spec.Priority, Submitted: submitted, Seq: s.seq, Class: j.shape, Runtime: spec.Runtime, Demand: j.demand, Ref: j}
	s.tree.Admit(leaf.ID(), charged, now)
	leaf.Count(1, 0)
	j.placement, j.txn, j.charged, j.admitted = p, txn, charged, submitted
	s.setEnd(j, submitted)
	if st == queue.Running {
		s.tree.Start(leaf.ID(), charged, now)
		leaf.Count(-1, 1)
		j.started = started
		s.setEnd(j, started)
	}
	s.indexHolder(j)
	s.jobs[spec.ID] = j
	return nil
}

// checkClaim checks that a claim is what one task of g takes.
func (s *Scheduler) checkClaim(g *gang.Group, cl topology.Claim) error {
	if cl.Host < 0 || int(cl.Host) >= s.c.NumHosts() {
		return fmt.Errorf("host %d out of range", cl.Host)
	}
	if cl.CPUMilli != g.CPUMilli || cl.MemoryMiB != g.MemoryMiB {
		return fmt.Errorf("claim takes %d milli-CPU and %d MiB, the group needs %d and %d", cl.CPUMilli, cl.MemoryMiB, g.CPUMilli, g.MemoryMiB)
	}
	if g.Kind != gang.TaskCPU && !g.Accepts(s.c.HostModel(cl.Host)) {
		return fmt.Errorf("host %s has a model the group does not accept", s.c.HostName(cl.Host))
	}
	first, n := s.c.HostGPUs(cl.Host)
	for _, gc := range cl.GPUs {
		if gc.GPU < first || gc.GPU >= first+topology.GPUID(n) {
			return fmt.Errorf("GPU %d is not on host %s", gc.GPU, s.c.HostName(cl.Host))
		}
	}
	switch g.Kind {
	case gang.TaskCPU:
		if len(cl.GPUs) != 0 {
			return fmt.Errorf("a CPU-only task takes no GPU")
		}
	case gang.TaskWhole:
		if len(cl.GPUs) != g.GPUs {
			return fmt.Errorf("%d GPUs claimed, the group needs %d", len(cl.GPUs), g.GPUs)
		}
		for _, gc := range cl.GPUs {
			if gc.Kind != topology.ClaimWhole {
				return fmt.Errorf("the group needs whole GPUs")
			}
		}
	case gang.TaskShare:
		if len(cl.GPUs) != 1 || cl.GPUs[0].Kind != topology.ClaimShare || int(cl.GPUs[0].Milli) != g.Milli {
			return fmt.Errorf("the group needs a share of %d milli-GPU on one GPU", g.Milli)
		}
	case gang.TaskMIG:
		if len(cl.GPUs) != 1 || cl.GPUs[0].Kind != topology.ClaimMIG {
			return fmt.Errorf("the group needs one %s MIG instance", g.MIGProfile)
		}
		m := s.c.Model(s.c.GPU(cl.GPUs[0].GPU).Model)
		if int(cl.GPUs[0].Profile) >= len(m.MIGProfiles) || m.MIGProfiles[cl.GPUs[0].Profile].Name != g.MIGProfile {
			return fmt.Errorf("the group needs one %s MIG instance", g.MIGProfile)
		}
	}
	return nil
}
