package gpusched

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Config configures a Scheduler. Only Cluster and Queues are required;
// New fills the defaults.
type Config struct {
	// Cluster is the cluster to schedule on.
	Cluster *topology.Cluster
	// Queues is the queue tree, its quotas, ordering policies and fairness.
	Queues queue.Config
	// Placer places gangs; nil means gang.New("topology") with brief
	// explanations. It runs during Schedule: a change to the Scheduler
	// made from it returns ErrReentrant.
	Placer gang.Placer
	// Preemptor, if set, proposes victims for jobs that cannot be placed
	// or admitted (see PlanPreemptor); nil means no preemption.
	Preemptor Preemptor
	// Defrag, if set, moves running jobs to make room for gangs blocked by
	// fragmentation (Decision.Migrations; see DefragConfig); nil is off.
	Defrag *DefragConfig
	// Elastic, if set, lets elastic gangs give back tasks instead of being
	// preempted whole (Decision.Shrinks) and grow back when room returns
	// (Decision.Grows); see ElasticConfig. nil is off.
	Elastic *ElasticConfig
	// MaxRestarts ends a job stopped by failures more than this many
	// times (Decision.Recoveries says so); 0 means no limit.
	MaxRestarts int
	// DrainGrace is how long a job on a draining GPU or host gets to
	// checkpoint before it must stop (the Grace of its ActionDrain
	// recovery); 0 means 2 minutes.
	DrainGrace time.Duration
	// DrainKeep lets a job on a draining GPU or host run on (ActionKeep)
	// when its estimated end (from its runtime estimate, or
	// DefaultRuntime) is at most this far away; 0 drains every job on it.
	DrainKeep time.Duration
	// DefaultRuntime is assumed for jobs without a runtime estimate when
	// computing reservations and backfill windows; 0 means such jobs are
	// treated as running until they end (they never end before a
	// reservation, and a reservation behind them waits for them).
	DefaultRuntime time.Duration
	// MaxReservations bounds how many waiting jobs hold a reservation or a
	// quota hold at once (the first blocked job of each backfilling queue,
	// in service order); 0 means 4, negative means none. As many
	// reservations again are kept on standby for jobs that held one in an
	// earlier cycle but not in the last (Scheduler.Reservations): such a
	// job's next hold reuses its reservation while nothing admitted since
	// took its place.
	MaxReservations int
	// BackfillAround places a backfill candidate around the reservations
	// when the placer's first choice would delay one (Slurm's backfill
	// does so): the placer tries again with the reservations' GPUs, cores
	// and memory held. False (the default) tries only the first choice.
	BackfillAround bool
	// ReserveDepth is how many blocked jobs of a backfilling queue hold a
	// reservation in a cycle, in service order (MaxReservations still
	// bounds all holds): each later one is planned around the earlier
	// ones, and no job may start now that would delay any of them
	// (conservative backfill for the first ReserveDepth, as Slurm plans a
	// start for every pending job). 0 or 1: only the first (EASY).
	ReserveDepth int
	// ReserveWholeHosts makes a reservation hold the whole hosts of its
	// placement from its time to its estimated end, as Slurm's backfill
	// plan does (a node planned for a pending job is not given to
	// another job overlapping that window, whatever it leaves free): a
	// backfill candidate running into the window may not touch those
	// hosts, and later reservations and BackfillAround placements avoid
	// them. False (the default) holds only the reserved GPUs, cores and
	// memory. See reserve_hosts.go.
	ReserveWholeHosts bool
	// Seed seeds randomised placers; each job's request gets Seed mixed
	// with its submission sequence number.
	Seed uint64
	// AdmitTimeout releases a job Admitted and not reported Started
	// within it (a lost bind or Started event), so that its GPUs and quota
	// come back; it waits again and Decision.Expired says so. 0 means
	// never.
	AdmitTimeout time.Duration
	// MaxGrace bounds the grace period a job may ask for
	// (workload.Job.Grace): Submit and Restore refuse more. 0 means 1 hour.
	MaxGrace time.Duration
	// OmitPending leaves Decision.Pending empty, saving O(waiting jobs)
	// per cycle for hosts that do not show reasons every cycle (a
	// simulator); Job(id).Reason still answers for any waiting job.
	OmitPending bool
	// Stats fills Decision.Stats with the cycle's figures (CycleStats: the
	// waiting jobs by queue and cause, each queue's GPUs, the GPUs
	// fragmentation strands per topology level) for a host that exports
	// them; it costs O(waiting classes + listed rows) per cycle. False
	// leaves Decision.Stats nil.
	Stats bool
	// EvictionRetry is how long a victim whose stop the host reported
	// refused (EvictionRefused: a PodDisruptionBudget) is not chosen as a
	// victim again; 0 or less means DefaultEvictionRetry.
	EvictionRetry time.Duration
	// MaxClockSkew refuses an event (Submit, Started, Finished, …)
	// stamped more than this far ahead of the latest time the Scheduler
	// has seen (ErrClockSkew; see Scheduler for the rule): one message
	// from a wrong clock must not move the Scheduler's time. 0 means
	// DefaultMaxClockSkew; negative means no limit (a simulator, whose
	// clock jumps).
	MaxClockSkew time.Duration
	// MaxTombstones bounds how many ended jobs the Scheduler remembers
	// (Tombstones), oldest forgotten first: an event for a remembered job
	// is ErrAlreadyApplied, and its ID cannot be submitted again. 0 means
	// DefaultMaxTombstones; negative remembers none.
	MaxTombstones int
}

// Errors returned by events.
var (
	// ErrUnknownJob: no live job has this ID.
	ErrUnknownJob = errors.New("gpusched: unknown job")
	// ErrDuplicateJob: a live job already has this ID.
	ErrDuplicateJob = errors.New("gpusched: duplicate job ID")
	// ErrState: the event does not apply to the job's state (e.g. Started
	// for a job that is not Admitted).
	ErrState = errors.New("gpusched: event does not apply in the job's state")
	// ErrNeverFits: the job can never run (bigger than its queue's maximum
	// or than the cluster).
	ErrNeverFits = errors.New("gpusched: job can never fit")
	// ErrUnknownQueue: the job names no leaf queue of the tree.
	ErrUnknownQueue = errors.New("gpusched: unknown queue")
)

// JobError wraps an event error with the job it concerns.
type JobError struct {
	Job string // the job's ID
	Err error  // one of the Err* sentinels, wrapped with details
}

// Error returns "job ID: ERR".
func (e *JobError) Error() string { return "job " + e.Job + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *JobError) Unwrap() error { return e.Err }

// Scheduler is the scheduling cycle: it takes events (Submit, Started,
// Finished, …), and on Schedule decides which waiting jobs start where,
// explaining the others. It follows etcd raft's shape: the host calls
// Schedule, carries out the Decision, and reports back.
//
// A Scheduler is not safe for concurrent use; the host serialises events
// and cycles, or wraps it with Synchronize (writes serialised, reads
// concurrent). It does no I/O, starts no goroutines and never reads a clock:
// every time is an argument. The same sequence of calls gives
// byte-identical Decisions.
//
// Time never goes backwards. The Scheduler keeps the latest time it has
// seen; an event (Submit, Started, Finished, Failed, Cancel, Requeue,
// Preempted, Checkpointed) at an earlier time is refused with a *JobError
// wrapping ErrTimeBackwards that names the event, the job and both times,
// and changes nothing. Schedule, which returns no error, clamps: a cycle
// at an earlier time runs at the latest time seen, and Decision.Now says
// so. Restore and RestoreJob take their time from the job's submission,
// a time in the records' past: they clamp too, and an earlier submission
// is kept as the job's own. Health changes and SetPriority take no time.
//
// Nor does one wrong clock move it far ahead: an event stamped more than
// Config.MaxClockSkew (default a day) after the latest time seen is
// refused with a *JobError wrapping ErrClockSkew that names the event,
// the job, its time and the limit, and changes nothing. Schedule is not
// limited (its time is the host's own clock): a host idle for longer
// than the limit runs Schedule at the right time before its events.
type Scheduler struct {
	cfg     Config
	c       *topology.Cluster
	tree    *queue.Tree      // quotas and pending indexes (package queue)
	ledger  *topology.Ledger // what every GPU runs
	placer  gang.Placer
	tracker gang.Tracker // the placer's, if it tracks commitments
	now     time.Time    // the latest time seen (advance)

	// The concerns, each the only writer of its fields; see
	// ARCHITECTURE.md for what each owns and its invariants.
	jobs    jobTable      // live jobs; holding ones by end and by host (jobs.go)
	adm     admission     // demands, charges, model filters, never-fits (admission.go)
	hosts   hostFilters   // per-job host filters (hostfilter.go)
	fit     failureCache  // placement failures and capacity gains (failcache.go)
	res     reservations  // backfill: holds, reservations, shadows (reserve.go)
	noms    nominations   // placements promised to preempting jobs (nominations.go)
	victims victimIndex   // what the preemption planner sees (victims.go)
	rec     recovery      // faults, checkpoints, restarts (recovery.go)
	cyc     cycleState    // the last cycle's context (cycle.go)
	admits  admitClock    // admitted jobs not yet started, by admission (admittimeout.go)
	live    liveChanges   // hosts waiting to leave the cluster (live.go)
	dfg     defragger     // migrations planned, issued and in flight (defrag.go)
	elastic elastic       // shrinks and grows in flight, shrunk jobs (elastic.go)
	cons    consolidator  // consolidation when idle (consolidate.go)
	refused refusals      // victims whose stop the host refused (refusals.go)
	around  aroundPlacer  // backfill placement around reservations (backfill_around.go)
	deep    deepReserver  // reservations after a queue's first blocked job (reserve_depth.go)
	cb      callbackGuard // callbacks running: no change meanwhile (reentry.go)
	ended   tombstones    // ended jobs remembered: redeliveries refused (tombstones.go)
	stats   statsBook     // the cycle statistics' counts since the last cycle (stats.go)

	// testBeforeCycle, if set, runs at the start of Schedule (tests).
	testBeforeCycle func()
}

// New validates cfg and returns a Scheduler with an empty ledger (every
// GPU healthy and free). Errors name the field: *queue.ConfigError for
// the queue tree, or a plain error for the rest.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Cluster == nil {
		return nil, errors.New("gpusched: Config.Cluster is nil")
	}
	c := cfg.Cluster
	tree, err := queue.Build(cfg.Queues, capacityOf(c)) // live.go
	if err != nil {
		return nil, err
	}
	if cfg.DefaultRuntime < 0 {
		return nil, fmt.Errorf("gpusched: Config.DefaultRuntime: negative %v", cfg.DefaultRuntime)
	}
	if cfg.MaxRestarts < 0 {
		return nil, fmt.Errorf("gpusched: Config.MaxRestarts: negative %d", cfg.MaxRestarts)
	}
	if cfg.DrainGrace < 0 || cfg.DrainKeep < 0 {
		return nil, fmt.Errorf("gpusched: Config.DrainGrace %v, DrainKeep %v: negative", cfg.DrainGrace, cfg.DrainKeep)
	}
	if cfg.AdmitTimeout < 0 || cfg.MaxGrace < 0 {
		return nil, fmt.Errorf("gpusched: Config.AdmitTimeout %v, MaxGrace %v: negative", cfg.AdmitTimeout, cfg.MaxGrace)
	}
	if cfg.MaxGrace == 0 {
		cfg.MaxGrace = time.Hour
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	if cfg.MaxReservations == 0 {
		cfg.MaxReservations = 4
	}
	if cfg.Placer == nil {
		p, err := gang.New("topology", gang.Options{Explain: gang.DetailBrief})
		if err != nil {
			return nil, err
		}
		cfg.Placer = p
	}
	dfg, err := newDefragger(cfg.Defrag)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: cfg, c: c, tree: tree, ledger: topology.NewLedger(c), placer: cfg.Placer,
		jobs: newJobTable(c, cfg.Seed), adm: newAdmission(c, tree), fit: newFailureCache(),
		res:    newReservations(c, cfg.Placer, cfg.DefaultRuntime, cfg.MaxReservations),
		admits: newAdmitClock(cfg.AdmitTimeout), dfg: dfg, elastic: newElastic(cfg.Elastic),
		cons: newConsolidator(cfg.Defrag), ended: newTombstones(cfg.MaxTombstones),
		around: aroundPlacer{on: cfg.BackfillAround}, deep: deepReserver{depth: cfg.ReserveDepth},
	}
	s.res.holdWhole(cfg.ReserveWholeHosts)
	s.tracker, _ = cfg.Placer.(gang.Tracker)
	s.cyc.readGroups(&s.hosts.groups)
	return s, nil
}

// Cluster returns the cluster.
func (s *Scheduler) Cluster() *topology.Cluster { return s.c }

// planPlacer is the placer the cycle places with (planSource).
func (s *Scheduler) planPlacer() gang.Placer { return s.placer }

// Ledger returns a read-only view of the Scheduler's ledger: what every
// GPU runs, as the Scheduler sees it (admitted and running jobs), always
// current. It has no method that changes the ledger; Clone gives a
// private copy for what-ifs.
//
// Its Ascend callbacks may read the Scheduler but not change it (a
// change returns ErrReentrant).
func (s *Scheduler) Ledger() topology.LedgerReader {
	return guardedLedger{s.ledger.ReadOnly(), &s.cb}
}

// Tree returns a read-only view of the queue tree (quotas, usage, Fair
// Tree history, the pending jobs of each leaf), always current; every
// slice it returns is a copy.
// A leaf's Ascend callback may read the Scheduler but not change it (a
// change returns ErrReentrant).
func (s *Scheduler) Tree() queue.TreeReader { return guardedTree{s.tree.ReadOnly(), &s.cb} }

// Queues returns the quota view of every queue, root first.
func (s *Scheduler) Queues() []queue.View { return s.tree.View() }

// JobStatus is what the Scheduler knows about one live job. It is the
// caller's: Job and Holding return deep copies, which the caller may
// change without changing the Scheduler.
type JobStatus struct {
	Spec  workload.Job // as submitted (priority as last set; queue where Reconfigure moved it)
	State queue.State  // see queue.State
	// Reason is why it waits (for waiting jobs, after the last Schedule).
	Reason *Reason
	// Placement is where it runs (for Admitted and Running jobs).
	Placement *gang.Placement
	Submitted time.Time // when it entered its queue
	Admitted  time.Time // when it was last bound (zero while waiting)
	Started   time.Time // when it last started running (zero if not)
	// Preemptions counts how often it was preempted; Restarts how often
	// failures stopped it.
	Preemptions, Restarts int
}

// Job returns the status of a live job (terminal jobs are forgotten once
// their event is processed).
func (s *Scheduler) Job(id string) (JobStatus, bool) {
	j, ok := s.jobs.byID[id]
	if !ok {
		return JobStatus{}, false
	}
	st := JobStatus{Spec: j.spec.Clone(), State: j.state, Submitted: j.entry.Submitted, Admitted: j.admitted, Started: j.started, Preemptions: j.preemptions, Restarts: j.rec.restarts}
	if j.state.Waiting() && s.cyc.leaves != nil {
		st.Reason = s.cyc.reason(j).clone()
	}
	if j.state.Holding() {
		st.Placement = j.placement.Clone()
	}
	return st, true
}

// Holding calls fn for every job holding resources (Admitted or Running)
// in order of estimated end (unknown last), until fn returns false. fn
// may read the Scheduler (Job, Holding, …) but not change it: an event
// or any other change called from fn returns ErrReentrant and changes
// nothing — collect the IDs, and act after Holding returns.
func (s *Scheduler) Holding(fn func(id string, st JobStatus) bool) {
	s.cb.enter()
	defer s.cb.leave()
	s.jobs.ascendEnds(func(j *job) bool {
		st, _ := s.Job(j.spec.ID)
		return fn(j.spec.ID, st)
	})
}

// Len returns the number of live jobs.
func (s *Scheduler) Len() int { return len(s.jobs.byID) }
