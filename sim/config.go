package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// Config configures a simulation. Cluster and Scheduler are required;
// every model is optional and off in its zero value. New validates the
// whole struct and fills defaults.
type Config struct {
	// Cluster is the cluster to simulate; the Scheduler must schedule the
	// same one.
	Cluster *topology.Cluster
	// Scheduler is driven through its public calls. The simulation owns
	// it for the duration of Run.
	Scheduler Scheduler
	// Seed seeds every random model (each from its own stream).
	Seed uint64

	Checkpoint CheckpointModel
	Failures   FailureModel
	// Outages are scheduled failures ("lose a ToR every week"), on top
	// of the random ones of Failures.
	Outages []Outage
	Drain   DrainModel
	Speed   SpeedModel
	// GPUSpeeds, when set, slows or speeds jobs by the GPU models they
	// run on: a job runs at the factor of the slowest model among its
	// GPUs for its type (SpeedTable.Factor with the trace job's Type as
	// the class; "" the default factors) times the Speed model's factor.
	// Nil: every model at 1.
	GPUSpeeds *SpeedTable
	// Scaling, when set, is a throughput model: each job runs at the
	// speed it gives for the GPUs the job holds and their placement
	// (Scaling.Factor), times its GPU models' factor (GPUSpeeds). It
	// replaces the Speed model's placement factor and the linear scaling
	// of elastic jobs (see Resizer), so Speed.Enabled must be off.
	Scaling    Scaling
	Preemption PreemptionModel
	// Tenants are the entitlements fairness is measured against; jobs
	// name their tenant in Spec.Queue. Nil means equal entitlements among
	// the tenants that appear in the trace.
	Tenants []Tenant
	// QueueMap renames trace tenants to scheduler queues before Submit
	// (e.g. virtual clusters to queues); tenants it does not name go to
	// DefaultQueue when that is set, else keep their name. Per-queue
	// metrics and fairness use the queue names.
	QueueMap     map[string]string
	DefaultQueue string

	// Elastic, when positive (at most 1), makes every task group of more
	// than one task elastic: MinCount becomes ⌈Elastic × Count⌉ (unless
	// the trace set one), so a Scheduler may bind, shrink and grow it
	// between the two (see Resizer).
	Elastic float64
	// RuntimeEstimate, when positive, sets each job's Spec.Runtime to its
	// true duration times this factor (1 = perfect estimates, for
	// backfill), unless the trace gave one.
	RuntimeEstimate float64
	// EstimateError models users' estimates: with RuntimeEstimate, each
	// estimate is further multiplied by exp(σ·Z), Z standard normal (a
	// log-normal error, median unchanged), and rounded up to the first
	// of RoundUp at or above it (the round walltime limits users pick;
	// past the last, unrounded).
	EstimateError EstimateError
	// ScheduleEvery, when positive, also runs a scheduling cycle at this
	// period; cycles always run after every arrival, completion, stop and
	// health change.
	ScheduleEvery time.Duration
	// MinCycleInterval spaces event-triggered cycles: a cycle requested
	// less than this after the previous one runs at previous + interval
	// (as Slurm's sched_min_interval does), so bursts of events share one
	// cycle. Zero runs a cycle at the time of every event.
	MinCycleInterval time.Duration
	// StrandedByLevel also measures, at every sample, the free GPUs no
	// pending job could use at each topology level (gang.Stranded); it
	// costs O(distinct pending shapes × levels × hosts) per sample.
	// It is the simulator's own measure, not the figure an embedder
	// exports: gang.Stranded counts the free GPUs no pending job could be
	// placed on if the whole job had to fit inside one domain of the
	// level, while the library's gpusched.CycleStats.Stranded (recorded in
	// Result.CycleStats with gpusched.Config.Stats, and exported by a kube
	// plugin) is a threshold: the free GPUs of domains holding fewer than
	// every waiting shape needs in one domain of that level (the whole
	// gang only where the shape requires one domain, one task elsewhere).
	StrandedByLevel bool
	// SampleEvery is the period of the time series (plus a last row at
	// the end of the run). Zero lets the simulator choose: the span of
	// arrivals (up to the Horizon) / 500, at least one minute, doubled
	// whenever the series would pass 5,000 rows (every other row kept), so
	// a long tail after a short arrival span stays a few thousand rows.
	SampleEvery time.Duration
	// FairnessWindow is the window of Fairness.WindowJain: the run is cut
	// into windows of this length from time zero and tenants' allocations
	// are compared with their demand-capped fair shares in each; 0 means
	// 10 minutes.
	FairnessWindow time.Duration
	// Horizon stops the simulation at this time; zero runs until every
	// job has ended or nothing can change any more.
	Horizon time.Duration
	// RejectErrors makes a job the Scheduler rejects at Submit (or one
	// larger than the cluster) an error that stops the run, instead of a
	// job counted as rejected.
	RejectErrors bool
	// Progress, if set, is called after each job ends with the number of
	// jobs ended and the total. It must not call back into the simulation.
	Progress func(done, total int)
	// Audit checks the simulator's ledger and time accounting against a
	// naive recount after every event: slow, for tests.
	Audit bool

	// Snapshots are times of the run (offsets from the first arrival, as
	// every time of a run) at which Snapshot is called, in increasing
	// order (duplicates once); none may be negative or, when a Horizon is
	// set, after it.
	Snapshots []time.Duration
	// Snapshot, if set, is called once for each time in Snapshots, with
	// that time, when the run reaches it: after every event due before
	// it, and after the arrivals, completions, stops, checkpoints and
	// health changes due at it, but before the scheduling cycle due at it
	// — so the Scheduler is in the state its cycle at that time sees (or,
	// when no cycle runs then, the state a cycle then would see). A time
	// after the run ended (every job ended, or nothing more could change)
	// sees the final state. Snapshot may read the Scheduler (package
	// snapshot captures a gpusched.Scheduler's state) but must not change
	// it, or the run would differ; an error stops the run, and Run
	// returns it.
	Snapshot func(at time.Duration) error
}

// CheckpointModel says how often jobs checkpoint and what it costs. A
// job's k-th checkpoint of a run completes k × (interval + Overhead) after
// its reload; the simulator reports each to the Scheduler
// (Scheduler.Checkpointed) as it completes. Those reports are the
// Scheduler's one source of checkpoints: the specs the simulator submits
// carry no CheckpointInterval, so the Scheduler never estimates one.
type CheckpointModel struct {
	// Interval is the running time between checkpoints for jobs whose
	// spec gives none (a spec's CheckpointInterval takes precedence);
	// zero means such jobs never checkpoint (a stop loses their whole
	// run).
	Interval time.Duration
	// Overhead is the time each checkpoint pauses the job.
	Overhead time.Duration
	// RestartCost is the time a job spends reloading before it makes
	// progress again after a stop.
	RestartCost time.Duration
	// ResizeCost is the time a job pauses at each shrink or grow before
	// it makes progress at its new size (elastic frameworks restart their
	// workers; Pollux's simulator charges 30 s per re-allocation). Zero: a
	// resize is free.
	ResizeCost time.Duration
}

// FailureModel injects faults. Each kind arrives as a Poisson process at
// the rate its MTBF gives for the whole cluster (e.g. 10,000 GPUs with a
// GPU MTBF of 10,000 h fail about once an hour), hits a component chosen
// uniformly, and is repaired after RepairTime. Jobs on failed parts stop
// making progress at once; what happens to them is the Scheduler's
// recovery (Decision.Recoveries, in a cycle run at the failure): requeued
// from their last checkpoint, or ended as failed — with the root
// Scheduler, once stopped by failures more than gpusched.Config.MaxRestarts
// times.
type FailureModel struct {
	// GPUMTBF is the mean time between failures of one GPU; zero: none.
	GPUMTBF time.Duration
	// HostMTBF is the mean time between failures of one host.
	HostMTBF time.Duration
	// ToRMTBF is the mean time between outages of one switch at the
	// innermost network level (all its hosts fail together).
	ToRMTBF time.Duration
	// RepairTime is how long a failed part stays out; zero means 1 hour.
	RepairTime time.Duration
}

// Outage is a scheduled failure: at At, and every Every after it when
// Every is set, a component fails for For and is then repaired; its jobs
// go through the Scheduler's recovery as with random failures.
type Outage struct {
	// Level is "gpu", "host" or a network level of the cluster ("tor",
	// "spine", …: every host under the switch fails).
	Level string
	// Name names the component (a GPU as "HOST/gpuN", a host, a switch);
	// empty draws one uniformly at each occurrence (seeded).
	Name  string
	At    time.Duration
	Every time.Duration
	For   time.Duration
}

// DrainModel takes hosts out for maintenance: at Poisson times with
// MeanInterval between them, a random healthy host is drained (it takes
// no new jobs) for Duration, then returns. Its running jobs are the
// Scheduler's to recover: each is drained (checkpoints in its grace
// period, stops, waits again) or kept running, as the Decision's
// Recoveries say (with the root Scheduler, gpusched.Config.DrainGrace and
// DrainKeep).
type DrainModel struct {
	MeanInterval time.Duration
	Duration     time.Duration
}

// SpeedModel slows gangs by how far apart their GPUs are. A job whose
// GPUs share one NVLink/NVSwitch domain runs at full speed; one spread
// over a host's PCIe runs at SameHost; over hosts under one switch of the
// innermost network level (ToR) at SameSwitch; each network level further
// out multiplies by PerLevel. Factors lie in (0, 1]; zero values take the
// defaults 0.95, 0.85 and 0.9 when Enabled. Single-GPU and CPU-only jobs
// always run at full speed.
type SpeedModel struct {
	Enabled    bool
	SameHost   float64
	SameSwitch float64
	PerLevel   float64
}

// PreemptionModel sets the grace period of preemptions.
type PreemptionModel struct {
	// Grace is the default time a preempted job gets to checkpoint before
	// its resources are released, when the Decision gives none. A job
	// that checkpoints at all saves its progress at the end of the grace
	// period if Grace covers one checkpoint's overhead.
	Grace time.Duration
}

// EstimateError is the error model of runtime estimates (see
// Config.EstimateError). Published traces show estimates that are mostly
// over-estimates and cluster on round values — Tsafrir, Etsion and
// Feitelson, "Modeling User Runtime Estimates" (JSSPP 2005) and
// Mu'alem and Feitelson (IEEE TPDS 2001): a RuntimeEstimate factor above
// 1 with RoundUp such as 1h, 4h, 12h, 24h, 48h reproduces both; Sigma
// adds the scatter.
type EstimateError struct {
	// Sigma is the standard deviation of the log-normal factor; 0: none.
	Sigma float64
	// RoundUp are the values estimates are rounded up to, ascending.
	RoundUp []time.Duration
}

// Tenant is an entitlement for fairness metrics.
type Tenant struct {
	// Name is the queue (after Config.QueueMap).
	Name string
	// GPUs is its guaranteed (entitled) number of GPUs.
	GPUs int
}

// ErrConfig is the sentinel every configuration error wraps.
var ErrConfig = errors.New("sim: invalid config")

func cfgErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

// validate checks c and fills defaults.
func (c *Config) validate() error {
	if c.Cluster == nil {
		return cfgErr("Cluster", "nil")
	}
	if c.Scheduler == nil {
		return cfgErr("Scheduler", "nil")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Checkpoint.Interval", c.Checkpoint.Interval}, {"Checkpoint.Overhead", c.Checkpoint.Overhead},
		{"Checkpoint.RestartCost", c.Checkpoint.RestartCost}, {"Checkpoint.ResizeCost", c.Checkpoint.ResizeCost}, {"Failures.GPUMTBF", c.Failures.GPUMTBF},
		{"Failures.HostMTBF", c.Failures.HostMTBF}, {"Failures.ToRMTBF", c.Failures.ToRMTBF},
		{"Failures.RepairTime", c.Failures.RepairTime}, {"Drain.MeanInterval", c.Drain.MeanInterval},
		{"Drain.Duration", c.Drain.Duration}, {"Preemption.Grace", c.Preemption.Grace},
		{"ScheduleEvery", c.ScheduleEvery}, {"SampleEvery", c.SampleEvery}, {"FairnessWindow", c.FairnessWindow}, {"Horizon", c.Horizon},
		{"MinCycleInterval", c.MinCycleInterval},
	} {
		if d.v < 0 {
			return cfgErr(d.name, "negative duration %v", d.v)
		}
	}
	if c.Failures.RepairTime == 0 {
		c.Failures.RepairTime = time.Hour
	}
	if c.Drain.MeanInterval > 0 && c.Drain.Duration == 0 {
		return cfgErr("Drain.Duration", "zero: a drain must last")
	}
	if c.Failures.ToRMTBF > 0 && c.Cluster.NumLevels() <= 3 { // fabric, host, cluster
		return cfgErr("Failures.ToRMTBF", "cluster %s has no network levels", c.Cluster.Name())
	}
	if !(c.Elastic >= 0 && c.Elastic <= 1) {
		return cfgErr("Elastic", "share %g; want one in [0, 1]", c.Elastic)
	}
	if c.RuntimeEstimate < 0 || math.IsNaN(c.RuntimeEstimate) || math.IsInf(c.RuntimeEstimate, 0) {
		return cfgErr("RuntimeEstimate", "factor %g; want ≥ 0", c.RuntimeEstimate)
	}
	if e := c.EstimateError.Sigma; e < 0 || math.IsNaN(e) || math.IsInf(e, 0) {
		return cfgErr("EstimateError.Sigma", "%g; want ≥ 0", e)
	}
	for i, d := range c.EstimateError.RoundUp {
		if d <= 0 || (i > 0 && d <= c.EstimateError.RoundUp[i-1]) {
			return cfgErr(fmt.Sprintf("EstimateError.RoundUp[%d]", i), "%v: want positive and ascending", d)
		}
	}
	if c.Speed.Enabled && c.Scaling != nil {
		return cfgErr("Speed.Enabled", "with a Scaling model: both model placement; turn one off")
	}
	if c.Speed.Enabled {
		def := func(p *float64, v float64, name string) error {
			if *p == 0 {
				*p = v
			}
			if !(*p > 0 && *p <= 1) {
				return cfgErr("Speed."+name, "factor %g outside (0, 1]", *p)
			}
			return nil
		}
		if err := def(&c.Speed.SameHost, 0.95, "SameHost"); err != nil {
			return err
		}
		if err := def(&c.Speed.SameSwitch, 0.85, "SameSwitch"); err != nil {
			return err
		}
		if err := def(&c.Speed.PerLevel, 0.9, "PerLevel"); err != nil {
			return err
		}
	}
	for i, at := range c.Snapshots {
		if at < 0 || c.Horizon > 0 && at > c.Horizon {
			return cfgErr(fmt.Sprintf("Snapshots[%d]", i), "%v is outside the run (0 to the Horizon %v)", at, c.Horizon)
		}
	}
	seen := map[string]bool{}
	for i, t := range c.Tenants {
		if t.Name == "" || seen[t.Name] {
			return cfgErr(fmt.Sprintf("Tenants[%d]", i), "empty or duplicate name %q", t.Name)
		}
		if t.GPUs < 0 {
			return cfgErr(fmt.Sprintf("Tenants[%d].GPUs", i), "negative %d", t.GPUs)
		}
		seen[t.Name] = true
	}
	return nil
}

// PhillyCluster is the cluster the Philly trace ran on as the Helios
// simulator models it: 352 hosts of 8 GPUs (2,816 GPUs), here 8-GPU PCIe
// boxes, 16 to a ToR. Build it with topology.Build(PhillyCluster.Spec()).
var PhillyCluster = topology.Generator{Name: "philly", Machine: "pcie-8gpu", Hosts: 352, HostsPerToR: 16}

// apply returns estimate with the error model applied, drawing from rng
// only when Sigma is set.
func (e EstimateError) apply(estimate time.Duration, rng *rand.Rand) time.Duration {
	if e.Sigma > 0 {
		f := math.Exp(e.Sigma * rng.NormFloat64())
		estimate = time.Duration(min(float64(estimate)*f, float64(math.MaxInt64/2)))
	}
	for _, r := range e.RoundUp {
		if estimate <= r {
			return r
		}
	}
	return max(estimate, 1)
}
