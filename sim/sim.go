package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// JobState is where a job is in its life. Every job of a run ends in
// exactly one of the terminal states Completed, Rejected, Failed,
// Unfinished or NotArrived.
type JobState uint8

// Job states.
const (
	StateWaiting    JobState = iota // not yet arrived
	StatePending                    // submitted, not running
	StateRunning                    // running (possibly inside a preemption's grace period)
	StateCompleted                  // ran to the end
	StateRejected                   // refused at Submit (bad spec, larger than the cluster, …)
	StateFailed                     // ended by the Scheduler's recovery (RecoverEnd: e.g. stopped by failures too often)
	StateUnfinished                 // still pending or running when the run ended
	StateNotArrived                 // submitted after the run's Horizon: never seen by the Scheduler
)

var stateNames = [...]string{"waiting", "pending", "running", "completed", "rejected", "failed", "unfinished", "not-arrived"}

// String returns the state's lower-case name.
func (s JobState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// ErrInvariant is wrapped by errors that mean the Scheduler (or the
// simulator) broke a rule: a binding for a job that is not pending, claims
// that collide, a preemption of a job that is not running.
var ErrInvariant = errors.New("sim: invariant violated")

type job struct {
	spec     workload.Job
	submit   time.Duration
	duration time.Duration // full-speed run time from the trace
	tenant   string
	state    JobState

	work      float64       // remaining full-speed seconds of work
	ckpt      time.Duration // running time between checkpoints (0: none)
	gpuMilli  int64         // GPU milli held while running
	claims    []topology.Claim
	segStart  time.Duration
	restart   time.Duration // reload time at the start of this segment
	speed     float64
	endEv     EventID
	stopEv    EventID
	stopCause StopCause     // of stopEv: StopPreempted or StopDrain
	noticeAt  time.Duration // preemption or drain notice, when stopEv is set
	ckptEv    EventID       // the next checkpoint of this segment
	shrinkEv  EventID       // a shrink's tasks stop (see resize.go)
	runStart  time.Duration // start of the current run (segments split by resizes share it)
	unsaved   float64       // work of earlier segments of the run no checkpoint covers yet (resize.go)
	ckptK     int           // checkpoints completed in this segment
	ckptN     int           // checkpoints due in this segment
	lastCkpt  time.Duration // last checkpoint of this segment (segStart: none)
	savedWall time.Duration // running time saved by checkpoints of stopped segments
	crashed   bool          // a GPU or host under it failed; awaiting its recovery
	crashAt   time.Duration
	started   bool
	firstRun  time.Duration
	waitFrom  time.Duration // start of its current wait (while pending)
	waited    time.Duration // its finished waits, all of them (TotalWait)
	end       time.Duration
	endReason string
	preempted int
	migrated  int  // times moved by a Decision's migration
	warm      bool // a ready migration's new copy is loading since warmAt
	warmAt    time.Duration
	faults    int
	drained   int
	reasons   uint16 // bit per Reason seen while pending (see reasonBits)
	lastWhy   Reason
	pendIdx   int32 // index in Simulation.pending, -1 if not pending
	minGPUs   int   // smallest whole-GPU task (0: a share), -1: CPU-only
	models    []topology.ModelID
	level     topology.Level // spread of the current placement (-1: no GPUs)
	req       *gang.Request  // while pending, for StrandedByLevel; built on demand
	reqErr    bool           // the job cannot be expressed as a gang request
	demMilli  int64          // GPU milli it demands while waiting
	tk        int32          // its tenant's index in the load tracker
	actAt     float64        // ∫ jobs in the system dt at its submission (finish-time fairness)
	rho       float64        // finish-time fairness ρ once completed (0: not computed)
	segBusy   float64        // the load tracker's busy time at segStart
	typ       int32          // its type's row of Simulation.modelFactor (0: the default factors)
}

// reasonBits fails to compile when job.reasons has no bit for a Reason.
var _ [16 - numReasons]struct{}

// Simulation replays a trace through a Scheduler. Build one with New and
// call Run once. It is not safe for concurrent use; run several
// simulations in parallel, each with its own Scheduler.
type Simulation struct {
	cfg  Config
	c    *topology.Cluster
	led  *topology.Ledger
	eng  *Engine
	jobs []job
	byID map[string]int32

	next      int // next arrival index
	pending   []int32
	running   int
	repairs   int // outstanding repair / drain-end events
	schedAt   time.Duration
	schedEv   EventID
	crashed   []int32 // jobs hit by failures, awaiting their recovery
	lastCycle time.Duration
	schedSet  bool
	wakeEv    EventID // the last Decision's Wake, when pending
	bound     bool    // the last cycle bound or preempted something
	ended     int
	ran       bool
	err       error
	gpuDown   []int16
	hostDown  []int16
	hostDrain []int16
	hostJobs  [][]int32
	failedGPU int // GPUs failed (own or host)

	rngFail, rngDrain *rand.Rand
	outages           []outage
	m                 metrics
	stats             cycleStatsLog   // Decision.Stats of every cycle (cyclestats.go)
	modelFactor       [][]float64     // Config.GPUSpeeds by job type index (job.typ), then ModelID; nil: all 1
	snaps             []time.Duration // Config.Snapshots not taken yet, sorted
}

// New validates cfg and prepares a simulation of jobs (which it sorts by
// submission time and shifts so the first arrives at zero, see
// trace.Rebase; it keeps the slice). Job IDs must be unique.
func New(cfg Config, jobs []trace.Job) (*Simulation, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	outages, err := resolveOutages(cfg.Cluster, cfg.Outages)
	if err != nil {
		return nil, err
	}
	trace.Rebase(jobs)
	c := cfg.Cluster
	s := &Simulation{
		cfg: cfg, c: c, led: topology.NewLedger(c), eng: NewEngine(),
		jobs:      make([]job, len(jobs)),
		byID:      make(map[string]int32, len(jobs)),
		gpuDown:   make([]int16, c.NumGPUs()),
		hostDown:  make([]int16, c.NumHosts()),
		hostDrain: make([]int16, c.NumHosts()),
		hostJobs:  make([][]int32, c.NumHosts()),
		rngFail:   rand.New(rand.NewPCG(cfg.Seed, 1)),
		rngDrain:  rand.New(rand.NewPCG(cfg.Seed, 2)),
		outages:   outages,
	}
	if cfg.Snapshot != nil {
		s.snaps = slices.Compact(slices.Sorted(slices.Values(cfg.Snapshots)))
	}
	rngEst := rand.New(rand.NewPCG(cfg.Seed, 3)) // one draw per job, in trace order
	for i := range jobs {
		tj := &jobs[i]
		if _, dup := s.byID[tj.Spec.ID]; dup {
			return nil, fmt.Errorf("sim: job %q (line %d) appears twice in the trace", tj.Spec.ID, tj.Line)
		}
		s.byID[tj.Spec.ID] = int32(i)
		j := &s.jobs[i]
		j.spec = tj.Spec
		if q, ok := cfg.QueueMap[j.spec.Queue]; ok {
			j.spec.Queue = q
		} else if cfg.DefaultQueue != "" {
			j.spec.Queue = cfg.DefaultQueue
		}
		j.tenant = j.spec.Queue
		j.submit, j.duration = tj.Submit, tj.Duration
		j.work = tj.Duration.Seconds()
		j.demMilli = j.spec.Demand().GPUMilli
		j.pendIdx = -1
		j.level = -1
		j.ckpt = j.spec.CheckpointInterval
		if j.ckpt == 0 {
			j.ckpt = cfg.Checkpoint.Interval
		}
		// The Scheduler learns of checkpoints only through Checkpointed,
		// as they happen: an estimate from the interval would ignore the
		// reload and checkpoint pauses of the model.
		j.spec.CheckpointInterval = 0
		if cfg.Elastic > 0 {
			j.spec.Groups = elastic(j.spec.Groups, cfg.Elastic) // (resize.go)
		}
		if cfg.RuntimeEstimate > 0 && j.spec.Runtime == 0 {
			j.spec.Runtime = cfg.EstimateError.apply(time.Duration(float64(tj.Duration)*cfg.RuntimeEstimate), rngEst)
		}
		j.minGPUs, j.models = s.smallestTask(&j.spec)
	}
	s.m.init(s)
	if cfg.GPUSpeeds != nil {
		s.typeFactors(jobs)
	}
	return s, nil
}

// typeFactors fills modelFactor: a row of factors per job type of the
// trace (row 0 the default one's), and each job's row.
func (s *Simulation) typeFactors(jobs []trace.Job) {
	idx := map[string]int32{"": 0}
	s.modelFactor = [][]float64{s.cfg.GPUSpeeds.modelFactors(s.c.Models(), "")}
	for i := range jobs {
		t := jobs[i].Type
		k, ok := idx[t]
		if !ok {
			k = int32(len(s.modelFactor))
			idx[t] = k
			s.modelFactor = append(s.modelFactor, s.cfg.GPUSpeeds.modelFactors(s.c.Models(), t))
		}
		s.jobs[i].typ = k
	}
}

// modelSpeed is the speed factor for j's type of the slowest GPU model
// among claims (1 without Config.GPUSpeeds, or for claims without GPUs).
func (s *Simulation) modelSpeed(claims []topology.Claim, j *job) float64 {
	if s.modelFactor == nil {
		return 1
	}
	row := s.modelFactor[j.typ]
	f := math.Inf(1)
	for _, c := range claims {
		if m := s.c.HostModel(c.Host); len(c.GPUs) > 0 && m >= 0 && int(m) < len(row) {
			f = min(f, row[m])
		}
	}
	if math.IsInf(f, 1) {
		return 1
	}
	return f
}

// smallestTask finds the task with the fewest whole GPUs (a share counts
// as 0) and the models it accepts; -1 for CPU-only jobs.
func (s *Simulation) smallestTask(j *workload.Job) (int, []topology.ModelID) {
	best, gi := -1, -1
	for i := range j.Groups {
		g := &j.Groups[i]
		n := g.GPUs
		if n == 0 && g.GPUMilli == 0 && g.MIGProfile == "" {
			continue
		}
		if best < 0 || n < best {
			best, gi = n, i
		}
	}
	if gi < 0 {
		return -1, nil
	}
	var ms []topology.ModelID
	for _, name := range j.Groups[gi].Models {
		if m, ok := s.c.ModelByName(name); ok {
			ms = append(ms, m)
		}
	}
	if len(j.Groups[gi].Models) > 0 && len(ms) == 0 {
		ms = []topology.ModelID{topology.NoModel} // no such model here: can use nothing
	}
	return best, ms
}

// Run replays the trace and returns the result. It returns an error for
// a broken invariant, a Scheduler error on a report call, or (with
// Config.RejectErrors) a rejected job.
func (s *Simulation) Run() (*Result, error) {
	if s.ran {
		return nil, errors.New("sim: Run called twice; build a new Simulation")
	}
	s.ran = true
	if len(s.jobs) > 0 {
		s.eng.Schedule(s.jobs[0].submit, s.arrive)
	}
	s.startModels()
	s.m.startSampling()
	for s.err == nil && !s.done() {
		at, ok := s.eng.Peek()
		if !ok {
			break
		}
		if s.cfg.Horizon > 0 && at > s.cfg.Horizon {
			s.eng.RunUntil(s.cfg.Horizon)
			break
		}
		if s.snapshots(at - 1); s.err != nil {
			break
		}
		s.eng.Step()
		if s.cfg.Audit && s.err == nil {
			s.err = s.audit()
		}
	}
	if s.err == nil && len(s.snaps) > 0 {
		// Due after the run ended: nothing changes any more.
		s.snapshots(s.snaps[len(s.snaps)-1])
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.finish(), nil
}

// snapshots calls Config.Snapshot for the snapshot times up to upTo, in
// order.
func (s *Simulation) snapshots(upTo time.Duration) {
	for len(s.snaps) > 0 && s.snaps[0] <= upTo && s.err == nil {
		at := s.snaps[0]
		s.snaps = s.snaps[1:]
		if err := s.cfg.Snapshot(at); err != nil {
			s.err = fmt.Errorf("sim: snapshot at %v: %w", at, err)
		}
	}
}

// done reports whether nothing more can happen: every job arrived, none
// runs, and either none waits or the waiting ones cannot start until
// something changes, and nothing will (no repair or drain due, and the
// last cycle started nothing).
func (s *Simulation) done() bool {
	if s.next < len(s.jobs) || s.running > 0 || s.schedSet {
		return false
	}
	return len(s.pending) == 0 || (s.repairs == 0 && !s.bound)
}

// account integrates GPU time up to now.
func (s *Simulation) account(now time.Duration) { s.m.account(now) }

func (s *Simulation) arrive(now time.Duration) {
	for s.next < len(s.jobs) && s.jobs[s.next].submit == now {
		i := int32(s.next)
		s.next++
		s.submit(now, i)
		if s.err != nil {
			return
		}
	}
	if s.next < len(s.jobs) {
		s.eng.Schedule(s.jobs[s.next].submit, s.arrive)
	} else {
		s.account(now)
		s.m.markArrivalEnd(now)
	}
	s.requestCycle(now)
}

func (s *Simulation) submit(now time.Duration, i int32) {
	j := &s.jobs[i]
	s.account(now)
	reject := func(err error) {
		if s.cfg.RejectErrors {
			s.err = fmt.Errorf("sim: job %s rejected: %w", j.spec.ID, err)
			return
		}
		j.state = StateRejected
		j.end = now
		j.endReason = err.Error()
		s.m.rejected(j, err)
		s.jobEnded()
	}
	if why := s.neverFits(&j.spec); why != "" {
		reject(errors.New(why))
		return
	}
	if err := s.cfg.Scheduler.Submit(now, j.spec); err != nil {
		reject(err)
		return
	}
	j.state = StatePending
	j.waitFrom = now
	s.addPending(i)
	j.actAt = s.m.load.activeInt
}

// neverFits reports why a job cannot run on the cluster even when empty:
// more GPUs than the cluster has, or a task larger than any host.
func (s *Simulation) neverFits(j *workload.Job) string {
	if g := j.GPUs(); g > s.c.NumGPUs() {
		return fmt.Sprintf("needs %d GPUs; the cluster has %d", g, s.c.NumGPUs())
	}
	for gi := range j.Groups {
		need := j.Groups[gi].GPUs
		if need <= s.m.maxHostGPUs {
			continue
		}
		return fmt.Sprintf("a task of group %d needs %d GPUs; the largest host has %d", gi, need, s.m.maxHostGPUs)
	}
	return ""
}

func (s *Simulation) addPending(i int32) {
	j := &s.jobs[i]
	s.m.load.wait(s.eng.Now(), int(j.tk), j.demMilli, +1)
	s.jobs[i].pendIdx = int32(len(s.pending))
	s.pending = append(s.pending, i)
}

func (s *Simulation) removePending(i int32) {
	k := s.jobs[i].pendIdx
	s.m.load.wait(s.eng.Now(), int(s.jobs[i].tk), s.jobs[i].demMilli, -1)
	last := s.pending[len(s.pending)-1]
	s.pending[k] = last
	s.jobs[last].pendIdx = k
	s.pending = s.pending[:len(s.pending)-1]
	s.jobs[i].pendIdx = -1
}

func (s *Simulation) jobEnded() {
	s.ended++
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.ended, len(s.jobs))
	}
}

// requestCycle queues a scheduling cycle at now, after the events already
// due at now. One cycle serves every request made before it runs.
func (s *Simulation) requestCycle(now time.Duration) {
	if s.schedSet {
		return
	}
	at := now
	if gap := s.cfg.MinCycleInterval; gap > 0 && s.m.cycles > 0 && now < s.lastCycle+gap {
		at = s.lastCycle + gap
	}
	s.schedSet, s.schedAt = true, at
	s.schedEv = s.eng.Schedule(at, s.cycle)
}

// urgentCycle queues a cycle at now even within MinCycleInterval of the
// last one: a failure's recoveries are not batched, since the jobs it hit
// hold GPUs without making progress until then.
func (s *Simulation) urgentCycle(now time.Duration) {
	if s.schedSet && s.schedAt > now {
		s.eng.Cancel(s.schedEv)
		s.schedSet = false
	}
	if !s.schedSet {
		s.schedSet, s.schedAt = true, now
		s.schedEv = s.eng.Schedule(now, s.cycle)
	}
}

func (s *Simulation) cycle(now time.Duration) {
	if s.snapshots(now); s.err != nil {
		return
	}
	s.schedSet = false
	s.lastCycle = now
	s.account(now)
	d := s.cfg.Scheduler.Schedule(now)
	s.m.cycles++
	s.stats.record(now, d.Stats)
	s.bound = len(d.Bindings) > 0 || len(d.Preemptions) > 0
	for _, r := range d.Recoveries {
		if r.Action != RecoverKeep {
			s.bound = true
		}
		if err := s.recover(now, r); err != nil {
			s.fail(err)
			return
		}
		if s.err != nil {
			return
		}
	}
	if err := s.checkCrashed(); err != nil {
		s.fail(err)
		return
	}
	for _, b := range d.Bindings {
		if err := s.bind(now, b); err != nil {
			s.err = err
			return
		}
	}
	for _, p := range d.Preemptions {
		if err := s.preempt(now, p); err != nil {
			s.err = err
			return
		}
	}
	if err := s.resizes(now, &d); err != nil { // (resize.go)
		s.err = err
		return
	}
	if s.wakeEv != 0 {
		s.eng.Cancel(s.wakeEv)
		s.wakeEv = 0
	}
	if d.Wake > now {
		s.wakeEv = s.eng.Schedule(d.Wake, func(t time.Duration) {
			s.wakeEv = 0
			s.requestCycle(t)
		})
	}
	for _, p := range d.Pending {
		if i, ok := s.byID[p.Job]; ok && s.jobs[i].state == StatePending {
			j := &s.jobs[i]
			r := p.Reason
			if r >= numReasons {
				r = ReasonOther // a code this simulator does not know
			}
			j.reasons |= 1 << r
			j.lastWhy = r
			s.m.blocked[r]++
		}
	}
}

func (s *Simulation) lookup(id string, want JobState, what string) (int32, error) {
	i, ok := s.byID[id]
	if !ok {
		return 0, fmt.Errorf("%w: %s names unknown job %q", ErrInvariant, what, id)
	}
	if st := s.jobs[i].state; st != want {
		return 0, fmt.Errorf("%w: %s names job %q, which is %s, not %s", ErrInvariant, what, id, st, want)
	}
	return i, nil
}

func (s *Simulation) bind(now time.Duration, b Binding) error {
	i, err := s.lookup(b.Job, StatePending, "binding")
	if err != nil {
		return err
	}
	j := &s.jobs[i]
	if n := len(b.Claims); n < j.spec.MinTasks() || n > j.spec.Tasks() {
		return fmt.Errorf("%w: binding of job %q has %d claims; the job has %d..%d tasks", ErrInvariant, b.Job, n, j.spec.MinTasks(), j.spec.Tasks())
	}
	if err := s.led.Allocate(b.Claims...); err != nil {
		return fmt.Errorf("%w: binding of job %q: %v", ErrInvariant, b.Job, err)
	}
	s.removePending(i)
	j.req = nil
	j.waited += now - j.waitFrom
	j.state = StateRunning
	j.claims = slices.Clone(b.Claims)
	j.gpuMilli = claimMilli(s.c, j.claims)
	s.m.usedMilli += j.gpuMilli
	s.m.load.run(now, int(j.tk), j.gpuMilli, +1)
	j.segBusy = s.m.load.busyTime
	s.running++
	j.level = s.spread(j.claims)
	j.speed = s.jobSpeed(j) // (scaling.go)
	j.segStart, j.runStart, j.unsaved = now, now, 0
	j.restart = 0
	if j.started {
		j.restart = s.cfg.Checkpoint.RestartCost
		if j.warm {
			j.restart = max(0, j.restart-(now-j.warmAt))
			j.warm = false
		}
	} else {
		j.started = true
		j.firstRun = now
		s.m.firstStart(j)
	}
	s.m.placed(j)
	for _, c := range j.claims {
		hj := s.hostJobs[c.Host]
		if len(hj) == 0 || hj[len(hj)-1] != i {
			s.hostJobs[c.Host] = append(hj, i)
		}
	}
	j.endEv = s.eng.Schedule(now+s.segmentLength(j), func(t time.Duration) { s.complete(t, i) })
	j.lastCkpt, j.ckptK, j.ckptN = now, 0, s.checkpointsDue(j)
	if j.ckptN > 0 {
		s.nextCheckpoint(i)
	}
	if err := s.cfg.Scheduler.Started(now, b.Job); err != nil {
		return fmt.Errorf("sim: Started(%s): %w", b.Job, err)
	}
	return nil
}

// checkpointsDue is the number of checkpoints j takes in the segment it
// starts: one after every j.ckpt of running time but the last.
func (s *Simulation) checkpointsDue(j *job) int {
	if j.ckpt <= 0 {
		return 0
	}
	return max(0, int(math.Ceil(j.work/j.speed/j.ckpt.Seconds()))-1)
}

// nextCheckpoint schedules the completion of j's next checkpoint: the
// k-th completes k × (interval + overhead) after the reload.
func (s *Simulation) nextCheckpoint(i int32) {
	j := &s.jobs[i]
	k := time.Duration(j.ckptK + 1)
	at := j.segStart + j.restart + k*(j.ckpt+s.ckptOverhead(j))
	j.ckptEv = s.eng.Schedule(at, func(t time.Duration) { s.checkpointed(t, i) })
}

// checkpointed records a completed checkpoint and reports it.
func (s *Simulation) checkpointed(now time.Duration, i int32) {
	j := &s.jobs[i]
	j.ckptEv = 0
	j.ckptK++
	j.unsaved = 0
	s.reportCheckpoint(now, i)
	if s.err == nil && j.ckptK < j.ckptN {
		s.nextCheckpoint(i)
	}
}

func (s *Simulation) reportCheckpoint(now time.Duration, i int32) {
	j := &s.jobs[i]
	j.lastCkpt = now
	if err := s.cfg.Scheduler.Checkpointed(now, j.spec.ID, now); err != nil {
		s.fail(fmt.Errorf("sim: Checkpointed(%s): %w", j.spec.ID, err))
	}
}

func claimMilli(c *topology.Cluster, claims []topology.Claim) int64 {
	var m int64
	for _, cl := range claims {
		for _, g := range cl.GPUs {
			switch g.Kind {
			case topology.ClaimWhole:
				m += topology.MilliPerGPU
			case topology.ClaimShare:
				m += int64(g.Milli)
			case topology.ClaimMIG:
				m += int64(c.Model(c.GPU(g.GPU).Model).MIGProfiles[g.Profile].Milli)
			}
		}
	}
	return m
}

// spread returns the innermost level whose one domain holds every GPU of
// the claims, or -1 when they hold no GPU or a single one.
func (s *Simulation) spread(claims []topology.Claim) topology.Level {
	first := topology.NoGPU
	distinct := false
	for _, cl := range claims {
		for _, g := range cl.GPUs {
			if first == topology.NoGPU {
				first = g.GPU
			} else if g.GPU != first {
				distinct = true
			}
		}
	}
	if !distinct {
		return -1
	}
	for l := topology.LevelFabric; l < s.c.LevelCluster(); l++ {
		d := s.c.GPUAt(first, l)
		if d == topology.NoDomain {
			continue
		}
		same := true
		for _, cl := range claims {
			for _, g := range cl.GPUs {
				if s.c.GPUAt(g.GPU, l) != d {
					same = false
					break
				}
			}
			if !same {
				break
			}
		}
		if same {
			return l
		}
	}
	return s.c.LevelCluster()
}

func (s *Simulation) speedFor(l topology.Level) float64 {
	if !s.cfg.Speed.Enabled || l <= topology.LevelFabric {
		return 1
	}
	if l == topology.LevelHost {
		return s.cfg.Speed.SameHost
	}
	return s.cfg.Speed.SameSwitch * math.Pow(s.cfg.Speed.PerLevel, float64(l-topology.LevelHost-1))
}

func (s *Simulation) ckptOverhead(j *job) time.Duration {
	if j.ckpt <= 0 {
		return 0
	}
	return s.cfg.Checkpoint.Overhead
}

// segmentLength is the wall time to finish j's remaining work from the
// start of its segment: reload, work at j.speed, and a checkpoint pause
// after every j.ckpt of work except at the very end.
func (s *Simulation) segmentLength(j *job) time.Duration {
	wall := j.work / j.speed
	d := j.restart + secs(wall)
	if j.ckpt > 0 {
		n := math.Ceil(wall/j.ckpt.Seconds()) - 1
		if n > 0 {
			d += time.Duration(n) * s.ckptOverhead(j)
		}
	}
	return max(d, 1)
}

// secs converts seconds to a Duration, rounding up to the nanosecond.
func secs(f float64) time.Duration { return time.Duration(math.Ceil(f * 1e9)) }

// workedBy returns the wall time spent working (not reloading or
// checkpointing) in j's segment by time t, and the part of it covered by
// a completed checkpoint, in seconds. It counts in whole nanoseconds, so
// that a checkpoint completing at t is counted at t.
func (s *Simulation) workedBy(j *job, t time.Duration) (worked, saved float64) {
	e := t - j.segStart - j.restart
	if e <= 0 {
		return 0, 0
	}
	if j.ckpt <= 0 {
		return e.Seconds(), 0
	}
	per := j.ckpt + s.ckptOverhead(j)
	k := e / per
	w := k*j.ckpt + min(e-k*per, j.ckpt)
	return w.Seconds(), (k * j.ckpt).Seconds()
}

func (s *Simulation) complete(now time.Duration, i int32) {
	j := &s.jobs[i]
	s.account(now)
	s.cancelEvents(j)
	s.m.segment(j, now, now, j.work, false, 0)
	j.work = 0
	s.release(i)
	j.state = StateCompleted
	j.end = now
	s.m.completed(j)
	j.rho = s.m.finishTimeFairness(j)
	s.jobEnded()
	if err := s.cfg.Scheduler.Finished(now, j.spec.ID); err != nil {
		s.err = fmt.Errorf("sim: Finished(%s): %w", j.spec.ID, err)
		return
	}
	s.requestCycle(now)
}

// cancelEvents cancels j's completion, checkpoint and stop events.
func (s *Simulation) cancelEvents(j *job) {
	for _, ev := range []*EventID{&j.endEv, &j.ckptEv, &j.stopEv, &j.shrinkEv} {
		if *ev != 0 {
			s.eng.Cancel(*ev)
			*ev = 0
		}
	}
}

func (s *Simulation) release(i int32) {
	j := &s.jobs[i]
	if err := s.led.Release(j.claims...); err != nil && s.err == nil {
		s.err = fmt.Errorf("%w: releasing job %q: %v", ErrInvariant, j.spec.ID, err)
	}
	for _, c := range j.claims {
		hj := s.hostJobs[c.Host]
		if k := slices.Index(hj, i); k >= 0 {
			s.hostJobs[c.Host] = slices.Delete(hj, k, k+1)
		}
	}
	s.m.usedMilli -= j.gpuMilli
	s.m.load.run(s.eng.Now(), int(j.tk), j.gpuMilli, -1)
	s.running--
	j.claims = nil
	j.gpuMilli = 0
	j.level = -1
}

func (s *Simulation) preempt(now time.Duration, p Preemption) error {
	i, err := s.lookup(p.Job, StateRunning, "preemption")
	if err != nil {
		return err
	}
	j := &s.jobs[i]
	if j.stopEv != 0 || j.crashed {
		return nil // already on its way out
	}
	grace := p.Grace
	if grace <= 0 {
		grace = s.cfg.Preemption.Grace
	}
	cause := StopPreempted
	if p.Migrate {
		cause = StopMigrated
		j.warm, j.warmAt = p.Ready, now
	}
	s.stopAfter(now, i, grace, cause)
	return nil
}

// stopAfter signals j at now and stops it gracefully after grace.
func (s *Simulation) stopAfter(now time.Duration, i int32, grace time.Duration, cause StopCause) {
	j := &s.jobs[i]
	j.noticeAt, j.stopCause = now, cause
	j.stopEv = s.eng.Schedule(now+grace, func(t time.Duration) {
		s.jobs[i].stopEv = 0
		s.stop(t, i, cause, true)
	})
}

// recover carries out one recovery of a Decision.
func (s *Simulation) recover(now time.Duration, r Recovery) error {
	i, err := s.lookup(r.Job, StateRunning, "recovery")
	if err != nil {
		return err
	}
	j := &s.jobs[i]
	s.m.recovered(r)
	switch r.Action {
	case RecoverRequeue:
		s.stop(now, i, StopFailure, false)
	case RecoverEnd:
		s.end(now, i, r.Reason)
	case RecoverDrain:
		switch {
		case j.crashed:
			// Hit by a failure too: nothing left to checkpoint.
			s.stop(now, i, StopFailure, false)
		case j.stopEv != 0:
			// Already being stopped (a preemption): that stop stands.
		default:
			s.stopAfter(now, i, r.Grace, StopDrain)
		}
	case RecoverKeep:
	default:
		return fmt.Errorf("%w: recovery of job %q: unsupported action %s", ErrInvariant, r.Job, r.Action)
	}
	return nil
}

// checkCrashed, after a cycle's recoveries, finds jobs hit by failures
// that the Scheduler left running on failed parts.
func (s *Simulation) checkCrashed() error {
	var err error
	for _, i := range s.crashed {
		j := &s.jobs[i]
		if j.state == StateRunning && j.crashed && err == nil {
			err = fmt.Errorf("%w: job %q runs on a failed GPU or host, and the Scheduler's Decision has no recovery for it", ErrInvariant, j.spec.ID)
		}
	}
	s.crashed = s.crashed[:0]
	return err
}

// halt ends j's running segment at now: it keeps the work up to its last
// checkpoint (or, graceful, a final checkpoint taken in the grace period
// when it covers one) and releases its resources. A job hit by a failure
// stopped working at the failure.
func (s *Simulation) halt(now time.Duration, i int32, cause StopCause, graceful bool) {
	j := &s.jobs[i]
	s.account(now)
	s.cancelEvents(j)
	cut := now
	if j.crashed {
		cut, graceful, cause = j.crashAt, false, StopFailure
	}
	_, saved := s.workedBy(j, cut)
	keptBy := j.lastCkpt // the kept work was done by the last checkpoint
	if graceful && j.ckpt > 0 {
		ov := s.ckptOverhead(j)
		if now-ov >= j.segStart+j.restart && now-ov >= j.noticeAt && now > j.segStart {
			w, _ := s.workedBy(j, now-ov)
			saved = max(saved, w)
			keptBy = now - ov
			j.unsaved = 0
			s.reportCheckpoint(now, i)
		}
	}
	done := math.Min(saved*j.speed, j.work)
	s.m.segment(j, now, keptBy, done, true, cause)
	j.savedWall += j.lastCkpt - j.runStart
	j.work -= done
	j.work += j.unsaved // earlier segments' work since the last checkpoint is lost too
	j.unsaved = 0
	s.release(i)
	j.crashed = false
	switch cause {
	case StopPreempted:
		j.preempted++
	case StopFailure:
		j.faults++
	case StopDrain:
		j.drained++
	case StopMigrated:
		j.migrated++
	}
	if cause != StopMigrated {
		j.warm = false // a new copy loads only for a move
	}
}

// stop halts j and hands it back to the Scheduler to wait again.
func (s *Simulation) stop(now time.Duration, i int32, cause StopCause, graceful bool) {
	j := &s.jobs[i]
	if j.crashed {
		cause = StopFailure
	}
	s.halt(now, i, cause, graceful)
	j.state = StatePending
	j.waitFrom = now
	if err := s.cfg.Scheduler.Stopped(now, j.spec.ID, cause); err != nil {
		s.fail(fmt.Errorf("sim: Stopped(%s): %w", j.spec.ID, err))
		return
	}
	if s.cfg.Audit {
		if pr, ok := s.cfg.Scheduler.(ProgressReporter); ok {
			if saved, ok := pr.Saved(j.spec.ID); ok && saved != j.savedWall {
				s.fail(fmt.Errorf("%w: job %q: the Scheduler keeps %v of progress, the simulator %v", ErrInvariant, j.spec.ID, saved, j.savedWall))
				return
			}
		}
	}
	s.addPending(i)
	s.requestCycle(now)
}

// end halts j and ends it as failed, as a RecoverEnd asked.
func (s *Simulation) end(now time.Duration, i int32, reason string) {
	j := &s.jobs[i]
	s.halt(now, i, StopFailure, false)
	j.state = StateFailed
	j.end = now
	j.endReason = reason
	s.m.failedJob(j)
	s.jobEnded()
	if err := s.cfg.Scheduler.Removed(now, j.spec.ID); err != nil {
		s.fail(fmt.Errorf("sim: Removed(%s): %w", j.spec.ID, err))
		return
	}
	s.requestCycle(now)
}

// finish marks what is left as unfinished (or, due after the Horizon,
// not arrived), takes the last sample and builds the result.
func (s *Simulation) finish() *Result {
	now := s.eng.Now()
	if s.cfg.Horizon > 0 && now > s.cfg.Horizon {
		now = s.cfg.Horizon
	}
	s.account(now)
	if s.next < len(s.jobs) {
		// Cut off by the Horizon while jobs were still arriving.
		s.m.markArrivalEnd(now)
	}
	s.m.finalSample(now)
	for i := range s.jobs {
		j := &s.jobs[i]
		switch j.state {
		case StateRunning:
			cut := now
			if j.crashed {
				cut = j.crashAt
			}
			worked, _ := s.workedBy(j, cut)
			s.m.segment(j, now, cut, math.Min(worked*j.speed, j.work), false, 0)
			fallthrough
		case StatePending:
			j.waited += now - j.waitFrom // censored: it waits on
			j.state = StateUnfinished
			j.end = now
			s.m.unfinished(j)
		case StateWaiting:
			// Due after the Horizon: it never arrived.
			j.state = StateNotArrived
			j.end = now
		}
	}
	res := s.m.result(now)
	res.CycleStats = s.stats.cycles
	return res
}
