package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// Result is what a run produced: the summary, the time series and one
// record per job.
type Result struct {
	Summary Summary
	Samples []Sample
	Jobs    []JobRecord
	// CycleStats are the library's statistics of every cycle whose
	// Decision carried them (Decision.Stats; package rootsched with
	// gpusched.Config.Stats), in cycle order: the figures an embedder of
	// the same Scheduler exports. Empty without.
	CycleStats []CycleStats
}

// Summary holds the metrics a GPU platform is judged by. Times are in
// seconds, GPU time in GPU-seconds (a share of a GPU counts as its
// fraction). Every field is deterministic for a given input and seed.
type Summary struct {
	Cluster string `json:"cluster"`
	GPUs    int    `json:"gpus"`
	// Policy and Trace are set by the caller (e.g. the CLI) to label the
	// run.
	Policy string `json:"policy,omitempty"`
	// Ordering is the job ordering the caller asked for (e.g. srtf).
	Ordering string `json:"ordering,omitempty"`
	Trace    string `json:"trace,omitempty"`
	Seed     uint64 `json:"seed"`
	// Provenance is what produced the run, set by the caller (nil: not
	// recorded).
	Provenance *Provenance `json:"provenance,omitempty"`
	// Input is what the trace reader read, skipped as malformed and
	// filtered out; set by the caller (nil: not reported).
	Input *InputStats `json:"input,omitempty"`

	Jobs JobCounts `json:"jobs"`
	// Makespan is the time from the first arrival to the end of the run.
	Makespan float64 `json:"makespanSeconds"`
	// Wait is the queue wait (first start − submit) of jobs that started:
	// the time to first start. It leaves out the waits after preemptions
	// and other stops, which TotalWait counts.
	Wait Dist `json:"waitSeconds"`
	// TotalWait is, over the same jobs, the time each spent waiting in
	// all: before its first start and again after every preemption,
	// failure or drain stop, until it ran again (or the run ended). Under a
	// preemptive policy (2D-LAS, SRTF) it can be many times Wait.
	TotalWait Dist `json:"totalWaitSeconds"`
	// StillWaiting counts the jobs that arrived but had not started when
	// the run ended, which Wait leaves out: their waits are censored
	// (each would wait at least end − submit), and with many of them Wait
	// understates the waiting.
	StillWaiting Censored `json:"stillWaiting"`
	// JCT is the completion time (end − submit) of completed jobs.
	JCT Dist `json:"jctSeconds"`
	// Slowdown is JCT / the job's full-speed duration, for completed jobs.
	Slowdown Dist `json:"slowdown"`
	// Queues has per-tenant figures, by name.
	Queues []QueueSummary `json:"queues"`
	// Priorities has per-priority figures, highest priority first, when
	// the trace has jobs of more than one priority.
	Priorities []PrioritySummary `json:"priorities,omitempty"`

	GPUTime GPUTime `json:"gpuTime"`
	// AllocationRate is used / capacity GPU time; Utilisation is useful /
	// capacity (work that counted towards completing jobs).
	AllocationRate float64 `json:"allocationRate"`
	Utilisation    float64 `json:"utilisation"`
	// ArrivalSpan is the time from the first to the last arrival, and
	// ArrivalAllocation the allocation rate over it: the load while the
	// trace is arriving, before the tail of long jobs drains (which can
	// dominate the makespan of a short trace). A run cut off by the
	// Horizon while jobs were still due counts up to the Horizon.
	ArrivalSpan       float64 `json:"arrivalSpanSeconds"`
	ArrivalAllocation float64 `json:"arrivalAllocation"`
	// OfferedLoad is the GPU time the jobs that arrived ask for (GPUs ×
	// full-speed duration) over the capacity of the arrival span: what a
	// trace's --load sets. AchievedLoad is the pressure the scheduler
	// actually saw: the mean over the arrival span of (allocated GPUs +
	// GPUs demanded by waiting jobs) over capacity. Above 1 jobs queue;
	// far below the offered load the trace's GPU time lies mostly after
	// its arrivals (a few long jobs), and no policy can make a difference.
	OfferedLoad  float64 `json:"offeredLoad"`
	AchievedLoad float64 `json:"achievedLoad"`
	// BusyTime is the time some job was waiting; BusyAllocation the
	// allocation over it (allocated GPU time / capacity while jobs
	// waited) and BusyUtilisation the useful utilisation over it (each
	// run segment's useful work counted in proportion to the part of the
	// segment during which a job waited). Whole-run figures
	// measure the trace (how much work it has, how long its longest job
	// runs); these measure the scheduler, when it had a choice to make.
	BusyTime        float64 `json:"busySeconds"`
	BusyAllocation  float64 `json:"busyAllocation"`
	BusyUtilisation float64 `json:"busyUtilisation"`
	// FinishTimeFairness is the distribution of the completed jobs' ρ
	// (JobRecord.Rho): above 1 a job finished later than it would have
	// with its fair share of the cluster.
	FinishTimeFairness Dist `json:"finishTimeFairness"`

	Fragmentation Fragmentation     `json:"fragmentation"`
	Failures      []ReasonCount     `json:"schedulingFailures"`
	Preemption    PreemptionSummary `json:"preemption"`
	Fairness      Fairness          `json:"fairness"`
	Locality      Locality          `json:"locality"`

	Cycles int    `json:"cycles"`
	Events uint64 `json:"events"`
}

// InputStats reports what reading the trace did (see trace.Stats).
type InputStats struct {
	Read          int            `json:"read"`
	Skipped       int            `json:"skipped"`
	SkipReasons   map[string]int `json:"skipReasons,omitempty"`
	FirstSkip     string         `json:"firstSkip,omitempty"`
	Filtered      int            `json:"filtered"`
	FilterReasons map[string]int `json:"filterReasons,omitempty"`
	// IgnoredColumns lists, in header order, the columns of a tabular
	// trace the reader did not know and left unread.
	IgnoredColumns []string `json:"ignoredColumns,omitempty"`
}

// NewInputStats converts a trace reader's Stats for the summary.
func NewInputStats(st trace.Stats) *InputStats {
	in := &InputStats{Read: st.Read, Skipped: st.Skipped, SkipReasons: st.SkipReasons, Filtered: st.Filtered,
		FilterReasons: st.FilterReasons, IgnoredColumns: st.IgnoredColumns}
	if st.FirstSkip != nil {
		in.FirstSkip = st.FirstSkip.Error()
	}
	return in
}

// JobCounts counts jobs by terminal state; the five add up to Total.
type JobCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Rejected  int `json:"rejected"`
	Failed    int `json:"failed"`
	// Unfinished counts jobs that arrived and were still pending or
	// running when the run ended.
	Unfinished int `json:"unfinished"`
	// NotArrived counts jobs due after the Horizon (StateNotArrived).
	NotArrived int `json:"notArrived"`
}

// Censored summarises waits cut off by the end of the run: the jobs that
// arrived and had not started by then, and how long they had waited
// (end − submit), the mean and the longest. All zero when Jobs is 0.
type Censored struct {
	Jobs           int     `json:"jobs"`
	MeanSeconds    float64 `json:"meanSeconds"`
	LongestSeconds float64 `json:"longestSeconds"`
}

// Dist summarises a distribution. All zero when N is 0.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// QueueSummary is one tenant's figures.
type QueueSummary struct {
	Name      string `json:"name"`
	Jobs      int    `json:"jobs"`
	Completed int    `json:"completed"`
	Wait      Dist   `json:"waitSeconds"`
	// StillWaiting is its jobs that had not started by the end of the
	// run (see Summary.StillWaiting); omitted when none.
	StillWaiting Censored `json:"stillWaiting,omitzero"`
	JCT          Dist     `json:"jctSeconds"`
	// GPUSeconds is the GPU time its jobs held; Share is that over all
	// jobs' GPU time; Entitlement is its entitled share.
	GPUSeconds  float64 `json:"gpuSeconds"`
	Share       float64 `json:"share"`
	Entitlement float64 `json:"entitlement"`
	// Rho is the finish-time fairness ρ of its completed jobs
	// (JobRecord.Rho).
	Rho Dist `json:"rho"`
}

// PrioritySummary is the figures of the jobs of one priority.
type PrioritySummary struct {
	Priority  int32 `json:"priority"`
	Jobs      int   `json:"jobs"`
	Completed int   `json:"completed"`
	// Preemptions counts how often its jobs were preempted.
	Preemptions int  `json:"preemptions"`
	Wait        Dist `json:"waitSeconds"`
	// StillWaiting is its jobs that had not started by the end of the
	// run; omitted when none.
	StillWaiting Censored `json:"stillWaiting,omitzero"`
	JCT          Dist     `json:"jctSeconds"`
}

// GPUTime accounts for capacity × time: Used + Idle + Failed = Capacity.
// Useful, LostPreemption, LostFailure, LostDrain and Overhead split Used:
// work kept; the GPU time of stopped runs since their last checkpoint (the
// whole run when they had none), by what stopped them — preemptions,
// failures (requeued or ended by the Scheduler's recovery) and drains —
// as the Scheduler's Recovery.Lost counts it; and the rest (reload and
// checkpoint pauses, slowdown of spread gangs, work of jobs cut off by the
// end of the run).
type GPUTime struct {
	Capacity       float64 `json:"capacity"`
	Used           float64 `json:"used"`
	Idle           float64 `json:"idle"`
	Failed         float64 `json:"failed"`
	Useful         float64 `json:"useful"`
	LostPreemption float64 `json:"lostPreemption"`
	LostFailure    float64 `json:"lostFailure"`
	LostDrain      float64 `json:"lostDrain"`
	Overhead       float64 `json:"overhead"`
}

// Fragmentation averages, over the samples of the time series where some
// GPU job was pending, the free GPUs and the free GPUs no pending job
// could use: GPUs on hosts whose free count is below the smallest
// whole-GPU task of every pending job that accepts the host's model.
// Free GPUs that no pending job may use at all are not fragmentation but
// partition boundaries, counted apart (Partitioned): hosts of a model no
// pending job accepts (another hard VC's, sim.HardPartition), and hosts
// only jobs held by their queue's quota could use.
type Fragmentation struct {
	Samples           int     `json:"samples"`
	MeanFreeGPUs      float64 `json:"meanFreeGPUs"`
	MeanUnusableGPUs  float64 `json:"meanUnusableGPUs"`
	UnusableShareFree float64 `json:"unusableShareOfFree"`
	// MeanPartitionedGPUs and PartitionedShareFree are the free GPUs
	// behind partition boundaries and quotas, out of fragmentation's
	// count.
	MeanPartitionedGPUs  float64 `json:"meanPartitionedGPUs"`
	PartitionedShareFree float64 `json:"partitionedShareOfFree"`
	// Levels, with Config.StrandedByLevel, averages gang.Stranded over the
	// same samples: per topology level, innermost first, the free GPUs no
	// pending job could use if it had to fit inside one domain of that
	// level.
	Levels []LevelFragmentation `json:"levels,omitempty"`
}

// LevelFragmentation is the mean stranded capacity at one level.
type LevelFragmentation struct {
	Level             string  `json:"level"`
	MeanStrandedGPUs  float64 `json:"meanStrandedGPUs"`
	StrandedShareFree float64 `json:"strandedShareOfFree"`
}

// LevelStranded is the stranded free GPUs at one level in one sample.
type LevelStranded struct {
	Level    string `json:"level"`
	Stranded int    `json:"stranded"`
}

// ReasonCount counts scheduling failures of one reason: job-cycles (a job
// pending through a cycle for that reason) and distinct jobs.
type ReasonCount struct {
	Reason    string `json:"reason"`
	JobCycles int    `json:"jobCycles"`
	Jobs      int    `json:"jobs"`
}

// PreemptionSummary counts stops and how jobs recovered from them.
type PreemptionSummary struct {
	Preemptions int `json:"preemptions"`
	// FaultStops counts stops of jobs by failures (requeued or ended);
	// DrainStops stops by drains; Faults the failures (GPU, host,
	// switch) injected; Drains the hosts drained.
	FaultStops int `json:"faultStops"`
	DrainStops int `json:"drainStops"`
	Faults     int `json:"faults"`
	Drains     int `json:"drains"`
	// Recoveries counts the Scheduler's recovery actions by kind.
	Recoveries RecoveryCounts `json:"recoveries"`
	// JobsStopped counts distinct jobs stopped at least once; Recovered
	// those of them that went on to complete.
	JobsStopped  int     `json:"jobsStopped"`
	Recovered    int     `json:"recovered"`
	RecoveryRate float64 `json:"recoveryRate"`
	// GPUHoursLost is GPU time thrown away, in GPU-hours (see GPUTime).
	GPUHoursLostPreemption float64 `json:"gpuHoursLostPreemption"`
	GPUHoursLostFailure    float64 `json:"gpuHoursLostFailure"`
	GPUHoursLostDrain      float64 `json:"gpuHoursLostDrain"`

	// Migrations counts the moves the Scheduler's Decision.Migrations
	// asked for and GPUHoursLostMigration the work since checkpoint they
	// threw away (part of GPUTime.Overhead).
	Migrations            int     `json:"migrations,omitempty"`
	GPUHoursLostMigration float64 `json:"gpuHoursLostMigration,omitempty"`

	// Shrinks counts the elastic gangs' shrinks carried out (Decision.Shrinks),
	// Grows their grows; GPUHoursLostShrink is the work since checkpoint
	// the stopped tasks had done (see Resizer).
	Shrinks            int     `json:"shrinks,omitempty"`
	Grows              int     `json:"grows,omitempty"`
	GPUHoursLostShrink float64 `json:"gpuHoursLostShrink,omitempty"`
}

// RecoveryCounts counts the recovery actions of the Scheduler's
// Decisions (Decision.Recoveries) by kind.
type RecoveryCounts struct {
	Requeue int `json:"requeue"`
	Drain   int `json:"drain"`
	Keep    int `json:"keep"`
	End     int `json:"end"`
}

// Fairness compares tenants' GPU time with their entitlements.
//
// JainIndex is Jain's index over share/entitlement of the whole run's GPU
// time, of the tenants that submitted work (1 = everyone got exactly
// their entitlement): it mostly measures the trace (what each tenant
// asked for), not the scheduler.
//
// WindowJain measures the scheduler: the run is cut into windows of
// WindowSeconds (Config.FairnessWindow); in each window in which some job
// waited, each tenant with demand gets a fair share of the GPUs by
// weighted max-min capped by its demand (FairShares: its mean allocated
// plus waiting GPUs in the window, weighted by its entitlement), and
// Jain's index is taken over allocation / fair share. WindowJain is the
// mean over those Windows, WindowJainMin the lowest.
//
// MaxQueueRho is Themis' objective: the largest mean finish-time
// fairness ρ over the queues (QueueSummary.Rho.Mean); 1 or less means no
// queue's jobs finished later, on average, than with their fair share.
type Fairness struct {
	Tenants       int     `json:"tenants"`
	JainIndex     float64 `json:"jainIndex"`
	WindowSeconds float64 `json:"windowSeconds"`
	Windows       int     `json:"windows"`
	WindowJain    float64 `json:"windowJain"`
	WindowJainMin float64 `json:"windowJainMin"`
	MaxQueueRho   float64 `json:"maxQueueRho"`
}

// Locality counts placements of jobs on more than one GPU and the share
// that stayed inside one NVLink domain, one host, and one switch of the
// innermost network level.
type Locality struct {
	MultiGPUPlacements int     `json:"multiGPUPlacements"`
	InFabric           float64 `json:"inFabric"`
	InHost             float64 `json:"inHost"`
	InSwitch           float64 `json:"inSwitch"`
}

// Sample is one row of the time series: the state at Time, and the
// useful utilisation over the period since the previous row.
type Sample struct {
	Time          float64 `json:"t"`
	AllocatedGPUs float64 `json:"allocatedGPUs"`
	Allocation    float64 `json:"allocation"`
	// Utilisation is the useful GPU work done since the previous row
	// (work that counted towards completing jobs, as Summary.Utilisation
	// counts it) over the GPU capacity of that period; 0 in the first row.
	// Each run segment's useful work is spread evenly over the time it
	// was done in, so Σ Utilisation × GPUs × period over the rows equals
	// GPUTime.Useful.
	Utilisation  float64 `json:"utilisation"`
	FreeGPUs     int     `json:"freeGPUs"`
	UnusableGPUs int     `json:"unusableGPUs"`
	// PartitionedGPUs are free GPUs no pending job may use (another hard
	// VC's, or usable only by jobs their quota holds): not fragmentation.
	PartitionedGPUs int     `json:"partitionedGPUs"`
	FailedGPUs      int     `json:"failedGPUs"`
	Running         int     `json:"running"`
	Pending         int     `json:"pending"`
	PendingGPUs     float64 `json:"pendingGPUs"`
	// Stranded is set with Config.StrandedByLevel while GPU jobs wait.
	Stranded []LevelStranded `json:"stranded,omitempty"`

	at         time.Duration
	gpuPending bool // a GPU job was pending: the row counts in Fragmentation
}

// JobRecord is one job's outcome. Start is -1 for jobs that never
// started; End is the end of the run for unfinished and not-arrived jobs.
type JobRecord struct {
	ID       string
	Queue    string
	Priority int32
	GPUs     float64
	State    JobState
	Submit   float64
	Start    float64
	End      float64
	Duration float64
	// Waited is its waiting time in all (Summary.TotalWait): before its
	// first start and after every stop, up to the end of the run.
	Waited      float64
	Preemptions int
	FaultStops  int
	DrainStops  int
	// Rho is its finish-time fairness (Mahajan et al., "Themis", NSDI'20)
	// for a completed job, else 0: its completion time over the time it
	// would take with its fair share of the cluster alone, Duration ×
	// max(1, GPUs × N / cluster GPUs), N the mean number of jobs in the
	// system (waiting or running) over its life.
	Rho float64
	// LastReason is the last reason it waited; EndReason why it was
	// rejected or ended as failed.
	LastReason string
	EndReason  string
}

type metrics struct {
	s           *Simulation
	capMilli    int64
	maxHostGPUs int
	last        time.Duration
	usedMilli   int64
	used        float64 // GPU-seconds
	failed      float64
	useful      float64
	lostPre     float64
	lostMigr    float64 // GPU-seconds lost to migrations (within Used, counted as overhead)
	lostShrink  float64 // GPU-seconds the tasks stopped by shrinks lost since their job's checkpoint
	shrinks     int     // shrinks carried out (resize.go)
	grows       int     // grows carried out
	lostFail    float64
	lostDrain   float64
	recov       RecoveryCounts
	cycles      int
	blocked     [numReasons]int
	faults      int
	drains      int
	tenantUsed  map[string]float64
	samples     []Sample
	every       time.Duration
	auto        bool // every was chosen here: it doubles to keep samples ≤ maxAutoSamples
	// Useful GPU-seconds per sampling period k, (k·every, (k+1)·every]:
	// usefulEdge[k] plus every × the sum of usefulRate[0..k] (a
	// difference array of GPU rates, so a segment costs O(1)).
	usefulEdge     []float64
	usefulRate     []float64
	multi          int
	inFabric       int
	inHost         int
	inSwitch       int
	minByModel     []int
	minFreeByModel []int // minByModel over the jobs no quota holds
	arrivalEnd     time.Duration
	arrivalUsed    float64
	levelNames     []string
	reqs           []*gang.Request
	load           loadTracker
	arrivalDem     float64 // load.demandInt at arrivalEnd
	busyUseful     float64 // useful GPU-seconds done while a job waited
	tenantNames    []string
}

func (m *metrics) init(s *Simulation) {
	m.s = s
	m.capMilli = int64(s.c.NumGPUs()) * topology.MilliPerGPU
	for h := range s.c.NumHosts() {
		_, n := s.c.HostGPUs(topology.HostID(h))
		m.maxHostGPUs = max(m.maxHostGPUs, n)
	}
	m.tenantUsed = map[string]float64{}
	m.minByModel = make([]int, len(s.c.Models()))
	m.minFreeByModel = make([]int, len(s.c.Models()))
	// Tenants: those of the jobs and of Config.Tenants, sorted; weights
	// their entitled GPUs, or equal when none are configured.
	idx := map[string]int32{}
	for i := range s.jobs {
		idx[s.jobs[i].tenant] = 0
	}
	for _, t := range s.cfg.Tenants {
		idx[t.Name] = 0
	}
	for n := range idx {
		m.tenantNames = append(m.tenantNames, n)
	}
	slices.Sort(m.tenantNames)
	weights := make([]float64, len(m.tenantNames))
	for k, n := range m.tenantNames {
		idx[n] = int32(k)
		if len(s.cfg.Tenants) == 0 {
			weights[k] = 1
		}
	}
	for _, t := range s.cfg.Tenants {
		weights[idx[t.Name]] = float64(t.GPUs)
	}
	for i := range s.jobs {
		s.jobs[i].tk = idx[s.jobs[i].tenant]
	}
	win := s.cfg.FairnessWindow
	if win == 0 {
		win = defaultFairnessWindow
	}
	m.load.init(s.c.NumGPUs(), win, weights)
}

// markArrivalEnd records the end of the arrival span at now.
func (m *metrics) markArrivalEnd(now time.Duration) {
	m.load.advance(now)
	m.arrivalEnd, m.arrivalUsed, m.arrivalDem = now, m.used, m.load.demandInt
}

// finishTimeFairness returns a job's ρ as it completes (see
// JobRecord.Rho); 0 for a job of no duration.
func (m *metrics) finishTimeFairness(j *job) float64 {
	life := (j.end - j.submit).Seconds()
	d := j.duration.Seconds()
	if d <= 0 {
		return 0
	}
	n := 1.0
	if life > 0 {
		n = max(1, (m.load.activeInt-j.actAt)/life)
	}
	gpus := float64(j.spec.Demand().GPUMilli) / topology.MilliPerGPU
	ideal := d * max(1, gpus*n/float64(m.s.c.NumGPUs()))
	return life / ideal
}

func (m *metrics) account(now time.Duration) {
	if now <= m.last {
		return
	}
	dt := (now - m.last).Seconds()
	m.used += dt * float64(m.usedMilli) / topology.MilliPerGPU
	m.failed += dt * float64(m.s.failedGPU)
	m.last = now
}

// segment records the end at now of a running segment that kept `done`
// seconds of full-speed work, done by keptBy.
func (m *metrics) segment(j *job, now, keptBy time.Duration, done float64, stopped bool, cause StopCause) {
	gpus := float64(j.gpuMilli) / topology.MilliPerGPU
	held := (now - j.segStart).Seconds() * gpus
	kept := done * gpus
	m.tenantUsed[j.tenant] += held
	m.useful += kept
	m.load.advance(now)
	if span := (now - j.segStart).Seconds(); span > 0 {
		m.busyUseful += kept * (m.load.busyTime - j.segBusy) / span
	}
	m.spreadUseful(min(j.segStart+j.restart, keptBy), keptBy, kept)
	if stopped {
		lost := (now - max(j.segStart, j.lastCkpt)).Seconds() * gpus
		switch cause {
		case StopFailure:
			m.lostFail += lost
		case StopDrain:
			m.lostDrain += lost
		case StopMigrated:
			m.lostMigr += lost
		default:
			m.lostPre += lost
		}
	}
}

// shrunk counts a shrink whose stopped tasks lost lost GPU-seconds.
func (m *metrics) shrunk(lost float64) {
	m.shrinks++
	m.lostShrink += lost
}

func (m *metrics) recovered(r Recovery) {
	switch r.Action {
	case RecoverRequeue:
		m.recov.Requeue++
	case RecoverDrain:
		m.recov.Drain++
	case RecoverKeep:
		m.recov.Keep++
	case RecoverEnd:
		m.recov.End++
	}
}

func (m *metrics) firstStart(*job) {}

func (m *metrics) placed(j *job) {
	if j.level < 0 {
		return
	}
	m.multi++
	if j.level <= topology.LevelFabric {
		m.inFabric++
	}
	if j.level <= topology.LevelHost {
		m.inHost++
	}
	if j.level <= topology.LevelHost+1 && m.s.c.LevelCluster() > topology.LevelHost+1 {
		m.inSwitch++
	}
}

func (m *metrics) rejected(*job, error) {}
func (m *metrics) completed(*job)       {}
func (m *metrics) failedJob(*job)       {}
func (m *metrics) unfinished(*job)      {}

// maxAutoSamples bounds the time series when the simulator chooses the
// sampling period: past it, the period doubles and every other row goes.
const maxAutoSamples = 5000

// startSampling schedules the samples: at 0 and every m.every, on the
// grid k·m.every. With the period left to the simulator it starts at the
// arrival span (up to the Horizon) / 500, at least a minute, and doubles
// whenever the series would pass maxAutoSamples rows, keeping the rows on
// the coarser grid; a run's long tail so costs a few thousand rows.
func (m *metrics) startSampling() {
	s := m.s
	m.every = s.cfg.SampleEvery
	if m.every == 0 {
		m.auto = true
		span := time.Duration(0)
		if len(s.jobs) > 0 {
			span = s.jobs[len(s.jobs)-1].submit
		}
		if s.cfg.Horizon > 0 {
			span = min(span, s.cfg.Horizon)
		}
		m.every = max(time.Minute, span/500)
	}
	var tick func(time.Duration)
	tick = func(now time.Duration) {
		if m.auto && len(m.samples) >= maxAutoSamples {
			m.coarsen()
		}
		if now%m.every == 0 {
			m.sample(now)
		}
		if !s.done() {
			s.eng.Schedule((now/m.every+1)*m.every, tick)
		}
	}
	s.eng.Schedule(0, tick)
}

// coarsen doubles the sampling period: it keeps the rows on the new grid
// (every other row, the first included) and merges the useful-work
// periods pairwise.
func (m *metrics) coarsen() {
	p := m.every
	m.every *= 2
	kept := m.samples[:0]
	for _, sm := range m.samples {
		if sm.at%m.every == 0 {
			kept = append(kept, sm)
		}
	}
	clear(m.samples[len(kept):])
	m.samples = kept
	// A rate change at an odd period starts halfway through the merged
	// one: the merged period's sum already counts it over its whole
	// length, so take back the first half.
	n := (len(m.usefulEdge) + 1) / 2
	at := func(xs []float64, k int) float64 {
		if k < len(xs) {
			return xs[k]
		}
		return 0
	}
	for k := range n {
		e0, e1 := at(m.usefulEdge, 2*k), at(m.usefulEdge, 2*k+1)
		r0, r1 := at(m.usefulRate, 2*k), at(m.usefulRate, 2*k+1)
		m.usefulEdge[k] = e0 + e1 - r1*p.Seconds()
		m.usefulRate[k] = r0 + r1
	}
	clear(m.usefulEdge[n:])
	clear(m.usefulRate[n:])
	m.usefulEdge, m.usefulRate = m.usefulEdge[:n], m.usefulRate[:n]
}

// period returns the sampling period (k·every, (k+1)·every] holding t
// (period 0 for t ≤ 0), growing the useful-work arrays to hold it.
func (m *metrics) period(t time.Duration) int {
	k := 0
	if t > 0 {
		k = int((t - 1) / m.every)
	}
	if k >= len(m.usefulEdge) {
		m.usefulEdge = append(m.usefulEdge, make([]float64, k+1-len(m.usefulEdge))...)
		m.usefulRate = append(m.usefulRate, make([]float64, k+1-len(m.usefulRate))...)
	}
	return k
}

// spreadUseful records amt useful GPU-seconds done evenly over [a, b].
func (m *metrics) spreadUseful(a, b time.Duration, amt float64) {
	if amt == 0 {
		return
	}
	kb := m.period(b)
	if b <= a {
		m.usefulEdge[kb] += amt
		return
	}
	ka := int(a / m.every)
	if ka == kb {
		m.usefulEdge[ka] += amt
		return
	}
	r := amt / (b - a).Seconds()
	m.usefulEdge[ka] += r * (time.Duration(ka+1)*m.every - a).Seconds()
	m.usefulRate[ka+1] += r
	m.usefulRate[kb] -= r
	m.usefulEdge[kb] += r * (b - time.Duration(kb)*m.every).Seconds()
}

// finalSample takes a last sample at the end of the run, unless one was
// taken then, so that the series covers the whole run.
func (m *metrics) finalSample(now time.Duration) {
	if n := len(m.samples); n == 0 || m.samples[n-1].at < now {
		m.sample(now)
	}
}

// fillUtilisation sets each row's useful utilisation over the period
// since the previous row.
func (m *metrics) fillUtilisation() {
	useful := make([]float64, len(m.usefulEdge))
	rate := 0.0
	for k := range useful {
		rate += m.usefulRate[k]
		useful[k] = m.usefulEdge[k] + rate*m.every.Seconds()
	}
	gpus := float64(m.s.c.NumGPUs())
	for i := 1; i < len(m.samples); i++ {
		sm, prev := &m.samples[i], &m.samples[i-1]
		k := 0
		if sm.at > 0 {
			k = int((sm.at - 1) / m.every)
		}
		if k < len(useful) {
			sm.Utilisation = ratio(useful[k], gpus*(sm.at-prev.at).Seconds())
		}
	}
}

func (m *metrics) sample(now time.Duration) {
	s := m.s
	sm := Sample{
		Time:          now.Seconds(),
		AllocatedGPUs: float64(m.usedMilli) / topology.MilliPerGPU,
		Allocation:    ratio(float64(m.usedMilli), float64(m.capMilli)),
		FreeGPUs:      s.led.FreeGPUs(s.c.Root()),
		FailedGPUs:    s.failedGPU,
		Running:       s.running,
		Pending:       len(s.pending),
		at:            now,
	}
	const none = math.MaxInt
	// The smallest task of any pending GPU job, and of those their quota
	// does not hold, per accepted model (minByModel) or for any model.
	minAny, minFree := none, none
	for k := range m.minByModel {
		m.minByModel[k], m.minFreeByModel[k] = none, none
	}
	gpuPending := false
	for _, i := range s.pending {
		j := &s.jobs[i]
		sm.PendingGPUs += float64(j.spec.Demand().GPUMilli) / topology.MilliPerGPU
		if j.minGPUs < 0 {
			continue
		}
		gpuPending = true
		need := max(j.minGPUs, 1)
		held := j.reasons != 0 && j.lastWhy == ReasonQuota
		if len(j.models) == 0 {
			minAny = min(minAny, need)
			if !held {
				minFree = min(minFree, need)
			}
			continue
		}
		for _, md := range j.models {
			if md >= 0 {
				m.minByModel[md] = min(m.minByModel[md], need)
				if !held {
					m.minFreeByModel[md] = min(m.minFreeByModel[md], need)
				}
			}
		}
	}
	if gpuPending {
		for h := range s.c.NumHosts() {
			hid := topology.HostID(h)
			f := s.led.HostFreeGPUs(hid)
			if f == 0 {
				continue
			}
			need, needFree := minAny, minFree
			if md := s.c.HostModel(hid); md >= 0 {
				need, needFree = min(need, m.minByModel[md]), min(needFree, m.minFreeByModel[md])
			}
			switch {
			case need == none: // no pending job accepts the host's model
				sm.PartitionedGPUs += f
			case f < need:
				sm.UnusableGPUs += f
			case f < needFree: // only jobs their quota holds could use it
				sm.PartitionedGPUs += f
			}
		}
		sm.gpuPending = true
		if s.cfg.StrandedByLevel {
			sm.Stranded = m.stranded()
		}
	}
	m.samples = append(m.samples, sm)
}

// stranded runs gang.Stranded over the pending GPU jobs.
func (m *metrics) stranded() []LevelStranded {
	s := m.s
	m.reqs = m.reqs[:0]
	for _, i := range s.pending {
		j := &s.jobs[i]
		if j.minGPUs < 0 || j.reqErr {
			continue
		}
		if j.req == nil {
			r, err := gang.NewRequest(s.c, &j.spec)
			if err != nil {
				j.reqErr = true
				continue
			}
			j.req = r
		}
		m.reqs = append(m.reqs, j.req)
	}
	lf := gang.Stranded(s.led, m.reqs)
	out := make([]LevelStranded, len(lf))
	if m.levelNames == nil {
		for _, f := range lf {
			m.levelNames = append(m.levelNames, f.Name)
		}
	}
	for k, f := range lf {
		out[k] = LevelStranded{Level: f.Name, Stranded: f.Stranded}
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	slices.Sort(xs)
	return Dist{
		N: len(xs), Mean: stat.Mean(xs, nil),
		P50: stat.Quantile(0.50, stat.Empirical, xs, nil),
		P95: stat.Quantile(0.95, stat.Empirical, xs, nil),
		P99: stat.Quantile(0.99, stat.Empirical, xs, nil),
		Max: xs[len(xs)-1],
	}
}

func (m *metrics) result(now time.Duration) *Result {
	s := m.s
	sum := Summary{Cluster: s.c.Name(), GPUs: s.c.NumGPUs(), Seed: s.cfg.Seed, Cycles: m.cycles, Events: s.eng.Fired()}
	sum.Makespan = now.Seconds()
	m.fillUtilisation()
	res := &Result{Samples: m.samples, Jobs: make([]JobRecord, len(s.jobs))}

	type tenantAcc struct {
		jobs, completed int
		wait, jct, rho  []float64
		still           censoredAcc
	}
	tenants := map[string]*tenantAcc{}
	type prioAcc struct {
		jobs, completed, preempted int
		wait, jct                  []float64
		still                      censoredAcc
	}
	var still censoredAcc
	prios := map[int32]*prioAcc{}
	var wait, totalWait, jct, slow, rhos []float64
	var jobsWith [numReasons]int
	pre := &sum.Preemption
	for i := range s.jobs {
		j := &s.jobs[i]
		ta := tenants[j.tenant]
		if ta == nil {
			ta = &tenantAcc{}
			tenants[j.tenant] = ta
		}
		ta.jobs++
		pa := prios[j.spec.Priority]
		if pa == nil {
			pa = &prioAcc{}
			prios[j.spec.Priority] = pa
		}
		pa.jobs++
		pa.preempted += j.preempted
		rec := JobRecord{ID: j.spec.ID, Queue: j.tenant, Priority: j.spec.Priority, GPUs: float64(j.spec.Demand().GPUMilli) / topology.MilliPerGPU, State: j.state,
			Submit: j.submit.Seconds(), Start: -1, End: j.end.Seconds(), Duration: j.duration.Seconds(), Preemptions: j.preempted, FaultStops: j.faults,
			DrainStops: j.drained, EndReason: j.endReason, Rho: j.rho, Waited: j.waited.Seconds()}
		if j.reasons != 0 {
			rec.LastReason = j.lastWhy.String()
		}
		if j.started {
			rec.Start = j.firstRun.Seconds()
			w := (j.firstRun - j.submit).Seconds()
			wait = append(wait, w)
			totalWait = append(totalWait, j.waited.Seconds())
			ta.wait = append(ta.wait, w)
			pa.wait = append(pa.wait, w)
		} else if j.state == StateUnfinished {
			w := (now - j.submit).Seconds()
			still.add(w)
			ta.still.add(w)
			pa.still.add(w)
		}
		for r := range numReasons {
			if j.reasons&(1<<r) != 0 {
				jobsWith[r]++
			}
		}
		if j.preempted+j.faults+j.drained > 0 {
			pre.JobsStopped++
			if j.state == StateCompleted {
				pre.Recovered++
			}
		}
		pre.Preemptions += j.preempted
		pre.Migrations += j.migrated
		pre.FaultStops += j.faults
		pre.DrainStops += j.drained
		switch j.state {
		case StateCompleted:
			sum.Jobs.Completed++
			ta.completed++
			c := (j.end - j.submit).Seconds()
			jct = append(jct, c)
			ta.jct = append(ta.jct, c)
			pa.completed++
			pa.jct = append(pa.jct, c)
			if d := j.duration.Seconds(); d > 0 {
				slow = append(slow, c/d)
			}
			if j.rho > 0 {
				rhos = append(rhos, j.rho)
				ta.rho = append(ta.rho, j.rho)
			}
		case StateRejected:
			sum.Jobs.Rejected++
		case StateFailed:
			sum.Jobs.Failed++
		case StateNotArrived:
			sum.Jobs.NotArrived++
		default:
			sum.Jobs.Unfinished++
		}
		res.Jobs[i] = rec
	}
	sum.Jobs.Total = len(s.jobs)
	if len(prios) > 1 {
		ps := make([]int32, 0, len(prios))
		for p := range prios {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for k := len(ps) - 1; k >= 0; k-- {
			pa := prios[ps[k]]
			sum.Priorities = append(sum.Priorities, PrioritySummary{Priority: ps[k], Jobs: pa.jobs, Completed: pa.completed,
				Preemptions: pa.preempted, Wait: dist(pa.wait), StillWaiting: pa.still.summary(), JCT: dist(pa.jct)})
		}
	}
	sum.Wait, sum.JCT, sum.Slowdown, sum.FinishTimeFairness = dist(wait), dist(jct), dist(slow), dist(rhos)
	sum.TotalWait = dist(totalWait)
	sum.StillWaiting = still.summary()
	pre.Faults, pre.Drains = m.faults, m.drains
	pre.RecoveryRate = ratio(float64(pre.Recovered), float64(pre.JobsStopped))
	pre.GPUHoursLostPreemption = m.lostPre / 3600
	pre.GPUHoursLostMigration = m.lostMigr / 3600
	pre.Shrinks, pre.Grows, pre.GPUHoursLostShrink = m.shrinks, m.grows, m.lostShrink/3600
	pre.GPUHoursLostFailure = m.lostFail / 3600
	pre.GPUHoursLostDrain = m.lostDrain / 3600
	pre.Recoveries = m.recov

	// Entitlements: configured tenants, else equal among those present.
	names := make([]string, 0, len(tenants))
	for n := range tenants {
		names = append(names, n)
	}
	for _, t := range s.cfg.Tenants {
		if tenants[t.Name] == nil {
			names = append(names, t.Name)
			tenants[t.Name] = &tenantAcc{}
		}
	}
	slices.Sort(names)
	ent := map[string]float64{}
	if len(s.cfg.Tenants) > 0 {
		total := 0
		for _, t := range s.cfg.Tenants {
			total += t.GPUs
		}
		for _, t := range s.cfg.Tenants {
			ent[t.Name] = ratio(float64(t.GPUs), float64(total))
		}
	} else {
		for _, n := range names {
			ent[n] = 1 / float64(len(names))
		}
	}
	var totalUsed float64
	for _, n := range names {
		totalUsed += m.tenantUsed[n]
	}
	var xs []float64
	for _, n := range names {
		ta := tenants[n]
		q := QueueSummary{Name: n, Jobs: ta.jobs, Completed: ta.completed, Wait: dist(ta.wait), StillWaiting: ta.still.summary(), JCT: dist(ta.jct),
			GPUSeconds: m.tenantUsed[n], Share: ratio(m.tenantUsed[n], totalUsed), Entitlement: ent[n], Rho: dist(ta.rho)}
		sum.Queues = append(sum.Queues, q)
		if ta.jobs > 0 && q.Entitlement > 0 {
			xs = append(xs, q.Share/q.Entitlement)
		}
	}
	sum.Fairness = Fairness{Tenants: len(xs), JainIndex: jain(xs)}
	for _, q := range sum.Queues {
		sum.Fairness.MaxQueueRho = max(sum.Fairness.MaxQueueRho, q.Rho.Mean)
	}
	m.load.finish(now)
	lt := &m.load
	sum.Fairness.WindowSeconds = lt.every.Seconds()
	sum.Fairness.Windows = lt.windows
	if lt.windows > 0 {
		sum.Fairness.WindowJain, sum.Fairness.WindowJainMin = lt.jainSum/float64(lt.windows), lt.jainMin
	}

	capacity := float64(s.c.NumGPUs()) * now.Seconds()
	sum.GPUTime = GPUTime{Capacity: capacity, Used: m.used, Failed: m.failed, Idle: capacity - m.used - m.failed,
		Useful: m.useful, LostPreemption: m.lostPre, LostFailure: m.lostFail, LostDrain: m.lostDrain}
	sum.GPUTime.Overhead = m.used - m.useful - m.lostPre - m.lostFail - m.lostDrain
	sum.AllocationRate = ratio(m.used, capacity)
	sum.ArrivalSpan = m.arrivalEnd.Seconds()
	sum.ArrivalAllocation = ratio(m.arrivalUsed, float64(s.c.NumGPUs())*m.arrivalEnd.Seconds())
	sum.Utilisation = ratio(m.useful, capacity)
	span := m.arrivalEnd.Seconds()
	gpus := float64(s.c.NumGPUs())
	var offered float64
	for i := range s.jobs {
		if j := &s.jobs[i]; j.state != StateNotArrived && j.state != StateRejected {
			offered += float64(j.demMilli) / topology.MilliPerGPU * j.duration.Seconds()
		}
	}
	sum.OfferedLoad = ratio(offered, gpus*span)
	sum.AchievedLoad = ratio(m.arrivalDem, gpus*span)
	sum.BusyTime = lt.busyTime
	sum.BusyAllocation = ratio(lt.busyUsed, gpus*lt.busyTime)
	sum.BusyUtilisation = ratio(m.busyUseful, gpus*lt.busyTime)

	sum.Fragmentation = m.fragmentation()
	for r := range numReasons {
		sum.Failures = append(sum.Failures, ReasonCount{Reason: r.String(), JobCycles: m.blocked[r], Jobs: jobsWith[r]})
	}
	slices.SortStableFunc(sum.Failures, func(a, b ReasonCount) int { return cmp.Compare(b.JobCycles, a.JobCycles) })
	sum.Locality = Locality{MultiGPUPlacements: m.multi, InFabric: ratio(float64(m.inFabric), float64(m.multi)),
		InHost: ratio(float64(m.inHost), float64(m.multi)), InSwitch: ratio(float64(m.inSwitch), float64(m.multi))}
	res.Summary = sum
	return res
}

// fragmentation averages the rows of the time series where a GPU job was
// pending.
func (m *metrics) fragmentation() Fragmentation {
	var n int
	var free, unusable, parted float64
	levels := make([]float64, len(m.levelNames))
	for i := range m.samples {
		sm := &m.samples[i]
		if !sm.gpuPending {
			continue
		}
		n++
		free += float64(sm.FreeGPUs)
		unusable += float64(sm.UnusableGPUs)
		parted += float64(sm.PartitionedGPUs)
		for k := range min(len(levels), len(sm.Stranded)) {
			levels[k] += float64(sm.Stranded[k].Stranded)
		}
	}
	if n == 0 {
		return Fragmentation{}
	}
	f := Fragmentation{Samples: n, MeanFreeGPUs: free / float64(n), MeanUnusableGPUs: unusable / float64(n), UnusableShareFree: ratio(unusable, free),
		MeanPartitionedGPUs: parted / float64(n), PartitionedShareFree: ratio(parted, free)}
	for k, name := range m.levelNames {
		f.Levels = append(f.Levels, LevelFragmentation{Level: name, MeanStrandedGPUs: levels[k] / float64(n), StrandedShareFree: ratio(levels[k], free)})
	}
	return f
}

// censoredAcc accumulates censored waits.
type censoredAcc struct {
	n        int
	sum, max float64
}

func (c *censoredAcc) add(w float64) {
	c.n++
	c.sum += w
	c.max = max(c.max, w)
}

func (c *censoredAcc) summary() Censored {
	if c.n == 0 {
		return Censored{}
	}
	return Censored{Jobs: c.n, MeanSeconds: c.sum / float64(c.n), LongestSeconds: c.max}
}

// jain returns Jain's fairness index (Σx)² / (n Σx²), 1 for an empty or
// all-zero set.
func jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if s2 == 0 {
		return 1
	}
	return s * s / (float64(len(xs)) * s2)
}
