package gpusched

import (
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func jobErr(id string, err error) error { return &JobError{Job: id, Err: err} }

// Submit queues a job at time now. The job is validated and resolved
// against the cluster (a *workload.FieldError names a bad field), must
// name a leaf queue (ErrUnknownQueue) and, if the queue tree names
// priority classes, one of their priorities. A job that can never run —
// its demand exceeds what its queue could ever be admitted with, or it
// does not fit on the idle cluster — is rejected with ErrNeverFits and
// the reason; a task that asks for no GPU, CPU or memory is a
// *workload.FieldError naming its group. Submit copies the job; the caller may reuse it. An ID that
// ended and is still remembered (Tombstones) is ErrAlreadyApplied: a
// redelivered Submit does not bring a finished job back.
func (s *Scheduler) Submit(spec workload.Job, now time.Time) error {
	if err := s.mutating("Submit", spec.ID); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Submit", spec.ID); err != nil {
		return err
	}
	now, err := s.eventAt("Submit", spec.ID, now)
	if err != nil {
		return err
	}
	j, err := s.newJob(spec, now)
	if err != nil {
		return err
	}
	if err := emptyTask(&j.spec); err != nil {
		return err
	}
	if err := s.adm.neverFits(j, s.placer); err != nil {
		return jobErr(j.spec.ID, err)
	}
	s.jobs.add(j)
	j.leaf.Add(&j.entry)
	return nil
}

// emptyTask refuses a job with a task that asks for no GPU (whole, share
// or MIG instance), no CPU and no memory: it would be bound to a host
// while taking nothing there.
func emptyTask(spec *workload.Job) error {
	for i := range spec.Groups {
		g := &spec.Groups[i]
		if g.GPUs == 0 && g.GPUMilli == 0 && g.MIGProfile == "" && g.CPUMilli == 0 && g.MemoryMiB == 0 {
			return &workload.FieldError{Job: spec.ID, Field: fmt.Sprintf("groups[%d]", i), Msg: "a task asks for no GPU, CPU or memory; give it at least one of gpus, gpuMilli, migProfile, cpuMilli, memoryMiB"}
		}
	}
	return nil
}

// newJob checks spec as Submit and Restore do (unique ID, leaf queue,
// priority, request) and builds its job, submitted at submitted, in state
// Pending; jobTable.add files it.
func (s *Scheduler) newJob(spec workload.Job, submitted time.Time) (*job, error) {
	if _, dup := s.jobs.byID[spec.ID]; dup {
		return nil, jobErr(spec.ID, ErrDuplicateJob)
	}
	if t, ok := s.ended.lookup(spec.ID); ok {
		return nil, jobErr(spec.ID, fmt.Errorf("%w: the job ended (%s) at %s and is remembered (Config.MaxTombstones)", ErrAlreadyApplied, t.State, stamp(t.At)))
	}
	spec = spec.Clone()
	leaf, ok := s.tree.Leaf(spec.Queue)
	if !ok {
		msg := "no leaf queue named " + fmt.Sprintf("%q", spec.Queue)
		if id, inner := s.tree.Lookup(spec.Queue); inner && s.tree.LeafOf(id) == nil {
			msg = fmt.Sprintf("queue %q has sub-queues; submit to a leaf", spec.Queue)
		}
		return nil, jobErr(spec.ID, fmt.Errorf("%w: %s", ErrUnknownQueue, msg))
	}
	if err := s.tree.CheckPriority(spec.Priority); err != nil {
		return nil, &workload.FieldError{Job: spec.ID, Field: "priority", Msg: err.Error()}
	}
	if spec.Grace > s.cfg.MaxGrace {
		return nil, &workload.FieldError{Job: spec.ID, Field: "grace", Msg: fmt.Sprintf("grace period %v above the Scheduler's maximum %v (Config.MaxGrace)", spec.Grace, s.cfg.MaxGrace)}
	}
	req, err := gang.NewRequest(s.c, &spec)
	if err != nil {
		return nil, err
	}
	j := &job{spec: spec, req: req, leaf: leaf, state: queue.Pending, shape: shapeKey(req)}
	j.demand = s.adm.demand(req)
	j.entry = queue.Entry{ID: spec.ID, Priority: spec.Priority, Submitted: submitted, Class: j.shape, Runtime: spec.Runtime, Demand: j.demand, Ref: j}
	return j, nil
}

func (s *Scheduler) lookup(id string) (*job, error) {
	j, ok := s.jobs.byID[id]
	if !ok {
		return nil, jobErr(id, ErrUnknownJob)
	}
	return j, nil
}

// Started reports that an admitted job began running at now.
func (s *Scheduler) Started(id string, now time.Time) error {
	if err := s.mutating("Started", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Started", id); err != nil {
		return err
	}
	now, err := s.eventAt("Started", id, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if j.state != queue.Admitted {
		return jobErr(id, fmt.Errorf("%w: Started for a %s job", ErrState, j.state))
	}
	s.jobs.refile(j, func() { s.start(j, now, now) })
	s.victims.update(j, now)
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
// released and it is forgotten, but for a tombstone (Tombstones): a
// second Finished, or any other event for it, is ErrAlreadyApplied.
func (s *Scheduler) Finished(id string, now time.Time) error {
	if err := s.mutating("Finished", id); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.end(id, now, queue.Succeeded)
}

// Failed reports that a job failed (or, for a waiting job, that the host
// gave up on it): resources are released and it is forgotten.
func (s *Scheduler) Failed(id string, now time.Time) error {
	if err := s.mutating("Failed", id); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.end(id, now, queue.Failed)
}

// Cancel removes a job in any live state, releasing what it holds.
func (s *Scheduler) Cancel(id string, now time.Time) error {
	if err := s.mutating("Cancel", id); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.end(id, now, queue.Cancelled)
}

func (s *Scheduler) end(id string, now time.Time, st queue.State) error {
	event := "Cancel"
	switch st {
	case queue.Succeeded:
		event = "Finished"
	case queue.Failed:
		event = "Failed"
	}
	if err := s.applied(event, id); err != nil {
		return err
	}
	now, err := s.eventAt(event, id, now)
	if err != nil {
		return err
	}
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
	s.forget(j)
	return nil
}

// rejected ends a waiting job whose queue a reconfiguration removed (its
// entry already out of the queue tree): it is Cancelled and forgotten.
func (s *Scheduler) rejected(j *job) {
	j.state = queue.Cancelled
	s.forget(j)
}

// forget drops an ended job (it holds nothing and waits in no queue)
// from every concern that keeps it, and remembers it ended (tombstones).
func (s *Scheduler) forget(j *job) {
	s.ended.add(Tombstone{Job: j.spec.ID, State: j.state, At: s.now})
	s.jobs.remove(j)
	s.res.forget(j)
	s.dropMove(j.spec.ID, true) // defrag_state.go
}

// Requeue puts an admitted or running job back in its queue at its
// original place (same submission time), releasing its resources: the host
// could not start it, or it must restart.
func (s *Scheduler) Requeue(id string, now time.Time) error {
	if err := s.mutating("Requeue", id); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.back(id, now, queue.Requeued, "Requeue")
}

// Preempted reports that a job was stopped to make room (after a
// Preemption of the Decision, or the host's own): its resources are
// released and it waits in its queue again, at its original place.
func (s *Scheduler) Preempted(id string, now time.Time) error {
	if err := s.mutating("Preempted", id); err != nil {
		return err
	}
	defer s.cb.leave()
	return s.back(id, now, queue.Preempted, "Preempted")
}

func (s *Scheduler) back(id string, now time.Time, st queue.State, event string) error {
	if err := s.applied(event, id); err != nil {
		return err
	}
	now, err := s.eventAt(event, id, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if !j.state.Holding() {
		return jobErr(id, fmt.Errorf("%w: %s for a %s job", ErrState, event, j.state))
	}
	s.rec.stopped(j, now)
	s.dropMove(id, false)
	if err := s.release(j, now); err != nil {
		return jobErr(id, err)
	}
	if st == queue.Preempted {
		j.preemptions++
	}
	j.state = st
	s.victims.stopped(j)
	s.cyc.forget(j)
	j.entry.Runtime = j.waitingRuntime()
	j.leaf.Add(&j.entry)
	return nil
}

// waitingRuntime is the runtime estimate j waits with after a stop: its
// Runtime less the work its checkpoints saved, at least a second (so a
// ShortestFirst queue orders a requeued job by its remaining time: SRTF);
// 0 when it has no estimate.
func (j *job) waitingRuntime() time.Duration {
	rt := j.spec.Runtime
	if rt <= 0 {
		return rt
	}
	return max(rt-j.rec.progress, time.Second)
}

// holding is what a job takes when it is admitted or restored.
type holding struct {
	p        *gang.Placement
	txn      gang.Txn // p committed to the ledger
	charged  queue.Vector
	admitted time.Time
	// running and started: it is restored as running since started.
	running bool
	started time.Time
}

// take records that j holds h, at now: the charge to its queue, the
// state, its estimated end, and its filing by every concern that indexes
// holding jobs (the job table, the placer's tracker, the victim index).
// admit and Restore both take through it; release undoes it.
func (s *Scheduler) take(j *job, h holding, now time.Time) {
	s.tree.Admit(j.leaf.ID(), h.charged, now)
	j.leaf.Count(1, 0)
	j.state = queue.Admitted
	j.placement, j.txn, j.charged, j.admitted = h.p, h.txn, h.charged, h.admitted
	s.setEnd(j, h.admitted)
	if h.running {
		s.start(j, h.started, now)
	}
	s.indexHolding(j, now)
	if !h.running {
		s.admits.admitted(j)
	}
}

// indexHolding files holding job j's placement (as take and resize set
// it) with the concerns that follow where jobs hold: the job table's
// indexes by end and host, the placer's tracker, the victim index.
// unindexHolding undoes it; take, release and resize fan out through
// this pair.
func (s *Scheduler) indexHolding(j *job, now time.Time) {
	s.jobs.index(j)
	if s.tracker != nil {
		s.tracker.Committed(j.req, j.placement)
	}
	s.victims.index(j, now)
}

// unindexHolding takes holding job j's placement out of the concerns
// indexHolding filed it with, and out of the reservations' shadows that
// may model it (reservations.released); it returns the hosts j leaves.
func (s *Scheduler) unindexHolding(j *job) []topology.HostID {
	s.res.released(j)
	if s.tracker != nil {
		s.tracker.Undone(j.req, j.placement)
	}
	s.victims.unindex(j)
	return s.jobs.unindex(j)
}

// start records that admitted job j runs since started (at now): the
// quota tree counts it running, its estimated end runs from started.
func (s *Scheduler) start(j *job, started, now time.Time) {
	s.admits.done(j)
	s.tree.Start(j.leaf.ID(), j.charged, now)
	j.leaf.Count(-1, 1)
	j.state = queue.Running
	j.started = started
	end, known := j.end, j.endKnown
	s.setEnd(j, started)
	s.res.endMoved(j, end, known)
}

// release gives back everything a holding job holds, fanning out to
// every concern take filed it with; each host it leaves gains capacity
// (the failure cache's log); a reservation shadow that may model it
// running is rebuilt (reservations.released).
func (s *Scheduler) release(j *job, now time.Time) error {
	if err := j.txn.Undo(); err != nil {
		return fmt.Errorf("gpusched: ledger out of step with job: %w", err)
	}
	left := s.unindexHolding(j)
	running := j.state == queue.Running
	if !running {
		s.admits.done(j)
	}
	s.tree.Release(j.leaf.ID(), j.charged, running, now)
	if running {
		j.leaf.Count(0, -1)
	} else {
		j.leaf.Count(-1, 0)
	}
	gen := s.ledger.Generation()
	for _, h := range left {
		s.fit.gained(gen, h)
	}
	j.placement, j.txn, j.hosts, j.charged = nil, gang.Txn{}, nil, nil
	j.admitted, j.started = time.Time{}, time.Time{}
	return nil
}

// SetPriority changes a live job's priority; a waiting job moves to its
// new place in the queue. For a job that ended and is remembered
// (Tombstones) it is ErrAlreadyApplied, as every event is.
func (s *Scheduler) SetPriority(id string, p int32) error {
	if err := s.mutating("SetPriority", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("SetPriority", id); err != nil {
		return err
	}
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
		s.victims.update(j, s.now)
	}
	return nil
}

// SetGPUHealth sets the health of GPU g. A GPU that is not healthy takes
// no new work; what runs on it keeps running until the host reports it
// Failed, Requeue or Preempted. It returns the IDs of the jobs holding g,
// sorted, so the host can act on them.
func (s *Scheduler) SetGPUHealth(g topology.GPUID, h topology.Health) ([]string, error) {
	if err := s.mutating("SetGPUHealth", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	if g < 0 || int(g) >= s.c.NumGPUs() {
		return nil, fmt.Errorf("gpusched: SetGPUHealth: GPU %d out of range 0..%d", g, s.c.NumGPUs()-1)
	}
	old := s.ledger.GPU(g).Health
	if err := s.ledger.SetGPUHealth(g, h); err != nil {
		return nil, err
	}
	host := s.c.GPUHost(g)
	if s.healthMoved(host, old, h) {
		s.rec.noteGPU(g, h)
	}
	var ids []string
	for _, j := range s.jobs.onHost[host] {
		if usesGPU(j.placement, g) {
			ids = append(ids, j.spec.ID)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// SetHostHealth sets the health of the host named name (and so of all
// its GPUs for new work), as Cordon, RemoveHosts and SetDomainHealth name
// hosts. It returns the IDs of the jobs holding resources on it, sorted.
// An unknown name is an error naming it, and nothing changes.
func (s *Scheduler) SetHostHealth(name string, hh topology.Health) ([]string, error) {
	if err := s.mutating("SetHostHealth", ""); err != nil {
		return nil, err
	}
	defer s.cb.leave()
	h, ok := s.c.HostByName(name)
	if !ok {
		return nil, fmt.Errorf("gpusched: SetHostHealth: unknown host %q", name)
	}
	return s.setHostHealth(h, hh)
}

// setHostHealth sets the health of host h (SetHostHealth, and the drain
// of a host that leaves).
func (s *Scheduler) setHostHealth(h topology.HostID, hh topology.Health) ([]string, error) {
	old := s.ledger.HostHealth(h)
	if err := s.ledger.SetHostHealth(h, hh); err != nil {
		return nil, err
	}
	if s.healthMoved(h, old, hh) {
		s.rec.noteHost(h, hh)
	}
	var ids []string
	for _, j := range s.jobs.onHost[h] {
		ids = append(ids, j.spec.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// healthMoved fans a health change, from old to h, of a GPU or host on
// host out to the concerns that follow health: a return to health is a
// capacity gain on the host for the failure cache (as a release is), and
// any change makes the reservations' shadows stale (a part that stops
// being healthy may be reserved; one healthy again is free in the ledger
// a shadow would be rebuilt from, so a loaded Scheduler's rebuilt shadow
// matches only if the kept one is rebuilt too). It reports whether the
// health changed.
func (s *Scheduler) healthMoved(host topology.HostID, old, h topology.Health) bool {
	if h == topology.Healthy && old != topology.Healthy {
		s.fit.gained(s.ledger.Generation(), host)
	}
	if h != old {
		s.res.healthLost()
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
// is queue.Admitted or queue.Running; started is ignored for Admitted,
// and for a running job may not be zero or before submitted (a
// *workload.FieldError naming the job and the field). Like Submit,
// Restore takes its time from submitted: restore and submit jobs in order
// of submission. RestoreJob restores everything else a job carries (its
// counts, progress, admission time, a waiting state), and checks its
// times against the time of the records.
//
// The job is checked as Submit checks it, the claims against the ledger
// (all or nothing) and the charge against the quotas: a state the queue
// tree could not have produced is an error, and nothing changes.
func (s *Scheduler) Restore(spec workload.Job, tasks [][]topology.Claim, st queue.State, submitted, started time.Time) error {
	if err := s.mutating("Restore", spec.ID); err != nil {
		return err
	}
	defer s.cb.leave()
	if st != queue.Admitted && st != queue.Running {
		return jobErr(spec.ID, fmt.Errorf("%w: Restore needs state admitted or running, not %s", ErrState, st))
	}
	if err := checkTimes(spec.ID, st, submitted, submitted, started, time.Time{}); err != nil {
		return err
	}
	return s.restoreHolding(spec, tasks, st, submitted, submitted, started, nil)
}

// restoreHolding restores a job that holds resources (Restore and
// RestoreJob); after, if set, runs on the job once it holds.
func (s *Scheduler) restoreHolding(spec workload.Job, tasks [][]topology.Claim, st queue.State, submitted, admitted, started time.Time, after func(*job)) error {
	now := s.advance(submitted)
	j, err := s.newJob(spec, submitted)
	if err != nil {
		return err
	}
	id := j.spec.ID
	p, err := s.placementOf(j, tasks)
	if err != nil {
		return err
	}
	charged := s.adm.charge(p)
	if b := s.tree.Check(j.leaf.ID(), charged); b != nil {
		return jobErr(id, fmt.Errorf("%w: restoring it would break a quota: %s", ErrState, b))
	}
	txn, err := gang.Commit(s.ledger, p)
	if err != nil {
		return jobErr(id, fmt.Errorf("claims do not fit the ledger: %w", err))
	}
	s.jobs.add(j)
	if after != nil {
		after(j)
	}
	s.take(j, holding{p: p, txn: txn, charged: charged, admitted: admitted, running: st == queue.Running, started: started}, now)
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
		if pr := cl.GPUs[0].Profile; pr < 0 || int(pr) >= len(m.MIGProfiles) || m.MIGProfiles[pr].Name != g.MIGProfile {
			return fmt.Errorf("the group needs one %s MIG instance", g.MIGProfile)
		}
	}
	return nil
}
