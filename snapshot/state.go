package snapshot

import (
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Version is the version of the file format this package writes. It
// reads every version from 1 (which lacks the settings, queue usage and
// per-job counts version 2 added; a version 1 file loads with them zero;
// versions 1 and 2 lack the preemptions in flight and a running job's
// last checkpoint, which version 3 added; versions 1 to 3 lack the
// backfill reservations kept across cycles, which version 4 added;
// versions 1 to 4 lack the cordons, the defragmentation settings and
// migrations in flight, and the preemption verdicts, which version 5
// added: an older file loads with none; versions 1 to 5 lack
// consolidation when idle with its state, Config.EvictionRetry, the
// refusals in force and placement domains, which version 6 added;
// versions 1 to 6 lack the hosts that changed since each preemption
// verdict and the placement domains of nominations, reservations and
// migrations, which version 7 added: an older file's verdicts look back
// at nothing before the capture, and those placements are made within
// the whole cluster; versions 1 to 7 lack the seal, State.Hosts, the
// trailer, Config.MaxClockSkew, Config.MaxTombstones and the tombstones,
// which version 8 added: an older file loads unchecked, and its
// Scheduler remembers no ended job; versions 1 to 8 lack the faults not
// yet planned and the recoveries in flight, which version 9 added: an
// older file's first cycle lists recoveries for the jobs on every part
// that is not healthy, and counts no restart for a recovery issued
// before the capture).
const Version = 9

// State is a saved Scheduler state, as the file holds it (see the package
// documentation for the format). It is plain data: Capture fills it,
// Decode reads it, Encode writes it and Restore turns it into a
// Scheduler.
type State struct {
	// Version is the format's version; 0 means Version.
	Version int `yaml:"version" json:"version"`
	// Now is the time of the state: the time a cycle on the loaded
	// Scheduler runs at.
	Now time.Time `yaml:"now" json:"now"`
	// Cluster names the cluster or holds it inline.
	Cluster Cluster `yaml:"cluster" json:"cluster"`
	// Hosts is the number of hosts of the cluster, not counting removed
	// ones (version 8; absent: not checked): Load refuses a state whose
	// cluster has another number (ErrNotWhole).
	Hosts int `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// Placer is the gang placer's name (gang.New); empty means topology.
	Placer string `yaml:"placer,omitempty" json:"placer,omitempty"`
	// Workload is the target workload of the fgd placer, which needs one.
	Workload []WorkloadClass `yaml:"workload,omitempty" json:"workload,omitempty"`
	// Seed, DefaultRuntime and MaxReservations are those of
	// gpusched.Config.
	Seed            uint64        `yaml:"seed,omitempty" json:"seed,omitempty"`
	DefaultRuntime  time.Duration `yaml:"defaultRuntime,omitempty" json:"defaultRuntime,omitempty"`
	MaxReservations int           `yaml:"maxReservations,omitempty" json:"maxReservations,omitempty"`
	// MaxRestarts, DrainGrace, DrainKeep, AdmitTimeout and MaxGrace are
	// those of gpusched.Config (version 2).
	MaxRestarts  int           `yaml:"maxRestarts,omitempty" json:"maxRestarts,omitempty"`
	DrainGrace   time.Duration `yaml:"drainGrace,omitempty" json:"drainGrace,omitempty"`
	DrainKeep    time.Duration `yaml:"drainKeep,omitempty" json:"drainKeep,omitempty"`
	AdmitTimeout time.Duration `yaml:"admitTimeout,omitempty" json:"admitTimeout,omitempty"`
	MaxGrace     time.Duration `yaml:"maxGrace,omitempty" json:"maxGrace,omitempty"`
	// Elastic is gpusched.Config.Elastic: nil off.
	Elastic *Elastic `yaml:"elastic,omitempty" json:"elastic,omitempty"`
	// BackfillAround is gpusched.Config.BackfillAround (absent: false).
	BackfillAround bool `yaml:"backfillAround,omitempty" json:"backfillAround,omitempty"`
	// ReserveDepth is gpusched.Config.ReserveDepth (absent: 0).
	ReserveDepth int `yaml:"reserveDepth,omitempty" json:"reserveDepth,omitempty"`
	// ReserveWholeHosts is gpusched.Config.ReserveWholeHosts (version 7;
	// absent: false).
	ReserveWholeHosts bool `yaml:"reserveWholeHosts,omitempty" json:"reserveWholeHosts,omitempty"`
	// MaxClockSkew is gpusched.Config.MaxClockSkew (version 8; absent: 0,
	// gpusched.DefaultMaxClockSkew).
	MaxClockSkew time.Duration `yaml:"maxClockSkew,omitempty" json:"maxClockSkew,omitempty"`
	// MaxTombstones is gpusched.Config.MaxTombstones (version 8; absent:
	// 0, gpusched.DefaultMaxTombstones).
	MaxTombstones int `yaml:"maxTombstones,omitempty" json:"maxTombstones,omitempty"`
	// Tombstones are the ended jobs the Scheduler remembers
	// (gpusched.Scheduler.Tombstones; version 8), oldest first: the
	// loaded Scheduler refuses their redelivered events and submissions.
	Tombstones []Tombstone `yaml:"tombstones,omitempty" json:"tombstones,omitempty"`
	// Queues is the queue tree.
	Queues queue.Config `yaml:"queues" json:"queues"`
	// Usage is the decayed Fair Tree usage of the queues that have any
	// (version 2): the history their order depends on.
	Usage []QueueUsage `yaml:"usage,omitempty" json:"usage,omitempty"`
	// Health lists the GPUs and hosts that are not healthy.
	Health []Health `yaml:"health,omitempty" json:"health,omitempty"`
	// Jobs are the live jobs, in order of submission.
	Jobs []Job `yaml:"jobs" json:"jobs"`
	// Nominations are the preemptions in flight (version 3), in the
	// order gpusched.Scheduler.Nominations lists them.
	Nominations []Nomination `yaml:"nominations,omitempty" json:"nominations,omitempty"`
	// Reservations are the backfill reservations kept from the last
	// cycle (version 4), in the order gpusched.Scheduler.Reservations
	// lists them.
	Reservations []Reservation `yaml:"reservations,omitempty" json:"reservations,omitempty"`
	// Resizes are the resized elastic jobs (gpusched.Scheduler.Resizes):
	// their size before their first shrink and a shrink or grow in
	// flight. Optional; restored after the jobs, before the nominations.
	Resizes []Resize `yaml:"resizes,omitempty" json:"resizes,omitempty"`
	// Cordoned lists the hosts cordoned (gpusched.Scheduler.Cordon;
	// version 5), in host order.
	Cordoned []string `yaml:"cordoned,omitempty" json:"cordoned,omitempty"`
	// Leaving lists the hosts waiting to leave the cluster once their
	// jobs are gone, or, with a template, to come back with it
	// (gpusched.Scheduler.Leaving; version 5), in the order asked.
	Leaving []Leaving `yaml:"leaving,omitempty" json:"leaving,omitempty"`
	// Defrag is gpusched.Config.Defrag (version 5); nil is off.
	Defrag *Defrag `yaml:"defrag,omitempty" json:"defrag,omitempty"`
	// Migrations are the migrations in flight (version 5): issued
	// (gpusched.Decision.Migrations) and not yet reported Migrated, in
	// the order issued. The gang each makes room for is a nomination
	// whose victims are the moving jobs.
	Migrations []Migration `yaml:"migrations,omitempty" json:"migrations,omitempty"`
	// DefragLog is the defragmentation budget's log (version 5): the
	// migrations issued in the hour before Now, oldest first.
	DefragLog []DefragIssued `yaml:"defragLog,omitempty" json:"defragLog,omitempty"`
	// NoPlans are the waiting jobs for which the PlanPreemptor's last
	// search found no plan and which it will not search for again until
	// something that could change that happens (version 5): which jobs
	// get one of its plans per cycle depends on them.
	NoPlans []NoPlan `yaml:"noPlans,omitempty" json:"noPlans,omitempty"`
	// Consolidation is the state of consolidation when idle
	// (gpusched.Scheduler.ConsolidateState; version 6), with
	// Defrag.Consolidate.
	Consolidation *Consolidation `yaml:"consolidation,omitempty" json:"consolidation,omitempty"`
	// EvictionRetry is gpusched.Config.EvictionRetry (version 6; absent:
	// 0, gpusched.DefaultEvictionRetry).
	EvictionRetry time.Duration `yaml:"evictionRetry,omitempty" json:"evictionRetry,omitempty"`
	// Refusals are the refused stops not yet lapsed
	// (gpusched.Scheduler.Refusals; version 6), in the order refused.
	Refusals []Refusal `yaml:"refusals,omitempty" json:"refusals,omitempty"`
	// Stopping lists the jobs asked to stop that still hold resources
	// and that no nomination, migration or shrink in flight names
	// (gpusched.Scheduler.Stopping; version 6): the other victims of a
	// plan whose nomination was dropped, as when another victim's stop was
	// refused. They are no victims again.
	Stopping []string `yaml:"stopping,omitempty" json:"stopping,omitempty"`
	// Fresh lists the holding jobs admitted in the last cycle that the
	// next cycle makes possible victims (gpusched.Scheduler.Fresh;
	// version 6): that ends the preemption verdicts they could change.
	Fresh []string `yaml:"fresh,omitempty" json:"fresh,omitempty"`
	// Faults are the health changes noted since the last cycle, in the
	// order noted (gpusched.RecoveryState.Faults; version 9): the loaded
	// Scheduler's first cycle turns them into recoveries, as the captured
	// one's would. A file of an older version (or without a version) that
	// lists none has every part of Health noted again: its first cycle
	// lists recoveries for the jobs there, which the captured Scheduler
	// may have handled already.
	Faults []Fault `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Recovering are the recoveries issued (gpusched.Decision.Recoveries)
	// and not yet carried out (gpusched.RecoveryState.InFlight; version
	// 9), in order of submission: the loaded Scheduler does not recover
	// those jobs again, and counts the restart their Requeue carries out
	// (gpusched.Config.MaxRestarts).
	Recovering []Recovering `yaml:"recovering,omitempty" json:"recovering,omitempty"`
	// Notes say what the state could not carry of the Scheduler it was
	// captured from (see Capture); informational.
	Notes []string `yaml:"notes,omitempty" json:"notes,omitempty"`
}

// Cluster is the state's cluster: exactly one of Preset, File, Machine
// (with the generator's fan-outs) and Spec.
type Cluster struct {
	// Preset names a built-in cluster (topology.PresetNames).
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// File is a cluster file, relative to the state file's directory.
	File string `yaml:"file,omitempty" json:"file,omitempty"`
	// Machine generates a cluster of Hosts machines of this preset (default
	// one), HostsPerToR to a ToR and TorsPerSpine ToRs to a spine; its
	// hosts are named MACHINE-1, MACHINE-2, … (topology.Generator with the
	// machine as its Name).
	Machine      string `yaml:"machine,omitempty" json:"machine,omitempty"`
	Hosts        int    `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	HostsPerToR  int    `yaml:"hostsPerToR,omitempty" json:"hostsPerToR,omitempty"`
	TorsPerSpine int    `yaml:"torsPerSpine,omitempty" json:"torsPerSpine,omitempty"`
	// Spec is the cluster inline, as a cluster file holds it.
	Spec *topology.Spec `yaml:"spec,omitempty" json:"spec,omitempty"`
}

// QueueUsage is one queue's decayed Fair Tree usage (fairshare.Usage):
// Value resource-seconds as of At. Queue "" is the root.
type QueueUsage struct {
	Queue string    `yaml:"queue" json:"queue"`
	Value float64   `yaml:"value" json:"value"`
	At    time.Time `yaml:"at" json:"at"`
}

// Health is the health of one host or one GPU (named HOST/gpuN): exactly
// one of Host and GPU.
type Health struct {
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	GPU  string `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	// State is healthy, draining or failed.
	State string `yaml:"state" json:"state"`
}

// Job is one live job: its spec (as submitted, priority as last set),
// its state and times, and where it runs.
type Job struct {
	workload.Job `yaml:",inline"`
	// Submitted is when it entered its queue; required, not after Now.
	Submitted time.Time `yaml:"submitted" json:"submitted"`
	// State is pending (the default), requeued, preempted, admitted or
	// running.
	State string `yaml:"state,omitempty" json:"state,omitempty"`
	// Started is when a running job last started: required for running
	// jobs, between Submitted and Now, and only for them.
	Started time.Time `yaml:"started,omitempty" json:"started,omitzero"`
	// Admitted is when an admitted or running job was bound (its
	// admission clock; version 2): not before Submitted, not after Now;
	// zero means Submitted.
	Admitted time.Time `yaml:"admitted,omitempty" json:"admitted,omitzero"`
	// Progress is the work saved by checkpoints of the job's earlier runs
	// (gpusched.Scheduler.Progress); not negative.
	Progress time.Duration `yaml:"progress,omitempty" json:"progress,omitempty"`
	// Checkpoint is a running job's last checkpoint reported in its
	// current run (version 3): between Started and Now; zero for none (a
	// CheckpointInterval's estimate is not saved: the loaded Scheduler
	// estimates again).
	Checkpoint time.Time `yaml:"checkpoint,omitempty" json:"checkpoint,omitzero"`
	// Preemptions and Restarts count how often the job was preempted and
	// stopped by failures (version 2): what Job.MaxPreemptions and
	// Config.MaxRestarts cap.
	Preemptions int `yaml:"preemptions,omitempty" json:"preemptions,omitempty"`
	Restarts    int `yaml:"restarts,omitempty" json:"restarts,omitempty"`
	// Moves counts the job's completed migrations (version 5): what
	// Defrag.MaxPerJob caps.
	Moves int `yaml:"moves,omitempty" json:"moves,omitempty"`
	// Domain names the domain an admitted or running job's placement was
	// made within (version 6; absent: the cluster): where an elastic gang
	// grows back.
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
	// Placement is where an admitted or running job's tasks are, one
	// entry per task.
	Placement []Task `yaml:"placement,omitempty" json:"placement,omitempty"`
}

// Task is where one task of a job runs: a host and, for a task with GPUs,
// its whole GPUs (GPUs, indexes within the host), or one GPU (GPU) with a
// share (Milli) or a MIG instance (MIG, Start).
type Task struct {
	// Group names the task's group (its name, or its index); empty fills
	// the groups in order, each up to its count.
	Group string `yaml:"group,omitempty" json:"group,omitempty"`
	Host  string `yaml:"host" json:"host"`
	GPUs  []int  `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	GPU   *int   `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	Milli int    `yaml:"milli,omitempty" json:"milli,omitempty"`
	MIG   string `yaml:"mig,omitempty" json:"mig,omitempty"`
	Start int    `yaml:"start,omitempty" json:"start,omitempty"`
}

// WorkloadClass is one task class of fgd's target workload
// (frag.Distribution), with models by name.
type WorkloadClass struct {
	GPUs      int      `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	GPUMilli  int      `yaml:"gpuMilli,omitempty" json:"gpuMilli,omitempty"`
	CPUMilli  int64    `yaml:"cpuMilli,omitempty" json:"cpuMilli,omitempty"`
	MemoryMiB int64    `yaml:"memoryMiB,omitempty" json:"memoryMiB,omitempty"`
	Models    []string `yaml:"models,omitempty" json:"models,omitempty"`
	Weight    float64  `yaml:"weight" json:"weight"`
}

// Job states as the file names them.
var jobStates = map[string]queue.State{
	"": queue.Pending, "pending": queue.Pending, "requeued": queue.Requeued, "preempted": queue.Preempted,
	"admitted": queue.Admitted, "running": queue.Running,
}

// healthStates maps the file's health names.
var healthStates = map[string]topology.Health{"healthy": topology.Healthy, "draining": topology.Draining, "failed": topology.Failed}

func healthName(h topology.Health) string {
	switch h {
	case topology.Draining:
		return "draining"
	case topology.Failed:
		return "failed"
	}
	return "healthy"
}

// Error is a bad state: the file (the name given to Decode or Load), the
// line (0 when unknown) and the field path, such as
// "jobs[3].placement[1].host", of what is wrong.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

// Error returns "FILE:LINE: FIELD: ERR".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Nomination is a preemption in flight (gpusched.Nomination): a waiting
// job, the victims asked to stop for it that still hold, and, with a
// placing Preemptor, the placement promised to it once they are gone and
// when they should have stopped (Due).
type Nomination struct {
	Job       string    `yaml:"job" json:"job"`
	Victims   []string  `yaml:"victims" json:"victims"`
	Due       time.Time `yaml:"due,omitempty" json:"due,omitzero"`
	Placement []Task    `yaml:"placement,omitempty" json:"placement,omitempty"`
	// Domain names the domain the placement was made within (version 7;
	// absent: the cluster): the job binds with it, and an elastic gang
	// grows back only within it.
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
}

// Reservation is a backfill reservation kept from the last cycle
// (gpusched.Reservation): the blocked job, its reserved time (none when
// Forever) and placement, whether the next cycle reuses it as is
// (Current; the what-if ledger is rebuilt on load) and the model filter
// it was computed under (opaque) and when its what-if ledger was built
// (Built).
type Reservation struct {
	Job       string    `yaml:"job" json:"job"`
	At        time.Time `yaml:"at,omitempty" json:"at,omitzero"`
	Forever   bool      `yaml:"forever,omitempty" json:"forever,omitempty"`
	Placement []Task    `yaml:"placement" json:"placement"`
	Current   bool      `yaml:"current,omitempty" json:"current,omitempty"`
	Filter    string    `yaml:"filter,omitempty" json:"filter,omitempty"`
	Built     time.Time `yaml:"built,omitempty" json:"built,omitzero"`
	// Domain names the domain the placement was made within (version 7;
	// absent: the cluster).
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
}

// Resize is a resized elastic job (gpusched.Resize): its tasks per group
// before its first shrink (Size), and the tasks a shrink in flight stops
// (Shrink, asked for job For with Grace) or a grow in flight added (Grow),
// each a task of the job's placement.
type Resize struct {
	Job    string        `yaml:"job" json:"job"`
	Size   []int         `yaml:"size" json:"size"`
	Shrink []Task        `yaml:"shrink,omitempty" json:"shrink,omitempty"`
	For    string        `yaml:"for,omitempty" json:"for,omitempty"`
	Grace  time.Duration `yaml:"grace,omitempty" json:"grace,omitempty"`
	Grow   []Task        `yaml:"grow,omitempty" json:"grow,omitempty"`
}

// Elastic turns on elastic shrink and grow (gpusched.ElasticConfig).
type Elastic struct {
	NoGrow bool `yaml:"noGrow,omitempty" json:"noGrow,omitempty"`
}

// Defrag is gpusched.DefragConfig: when a blocked gang may have jobs moved
// for it (After), the budget (PerHour migrations and LostPerHour GPU time
// lost per hour, MinValue GPUs gained per GPU-hour lost), MaxPerJob and
// Grace. GPU times are in thousandths of a GPU-second (preempt.GPUTime).
type Defrag struct {
	After       time.Duration `yaml:"after,omitempty" json:"after,omitempty"`
	PerHour     int           `yaml:"perHour,omitempty" json:"perHour,omitempty"`
	LostPerHour int64         `yaml:"lostPerHour,omitempty" json:"lostPerHour,omitempty"`
	MinValue    float64       `yaml:"minValue,omitempty" json:"minValue,omitempty"`
	MaxPerJob   int           `yaml:"maxPerJob,omitempty" json:"maxPerJob,omitempty"`
	Grace       time.Duration `yaml:"grace,omitempty" json:"grace,omitempty"`
	// Consolidate is DefragConfig.Consolidate (version 6); nil is off.
	Consolidate *Consolidate `yaml:"consolidate,omitempty" json:"consolidate,omitempty"`
}

// Consolidate is gpusched.ConsolidateConfig: the levels whose domains it
// frees, by name (topology.Cluster.LevelName; absent: the defaults), how
// long nothing must have waited (Idle), its own budget (PerHour,
// LostPerHour in thousandths of a GPU-second), Target and MaxDomains.
type Consolidate struct {
	Levels      []string      `yaml:"levels,omitempty" json:"levels,omitempty"`
	Idle        time.Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	PerHour     int           `yaml:"perHour,omitempty" json:"perHour,omitempty"`
	LostPerHour int64         `yaml:"lostPerHour,omitempty" json:"lostPerHour,omitempty"`
	Target      int           `yaml:"target,omitempty" json:"target,omitempty"`
	MaxDomains  int           `yaml:"maxDomains,omitempty" json:"maxDomains,omitempty"`
}

// Consolidation is consolidation's state (gpusched.ConsolidateState): its
// budget's log of the hour before Now (Log), the last time a job waited
// (Busy), and whether the last pass found nothing on the cluster as it is
// (NothingFound, with the budgets then leaving FoundMoves migrations and
// FoundLost GPU time, 0 meaning no bound).
type Consolidation struct {
	Log          []DefragIssued `yaml:"log,omitempty" json:"log,omitempty"`
	Busy         time.Time      `yaml:"busy,omitempty" json:"busy,omitzero"`
	NothingFound bool           `yaml:"nothingFound,omitempty" json:"nothingFound,omitempty"`
	FoundMoves   int            `yaml:"foundMoves,omitempty" json:"foundMoves,omitempty"`
	FoundLost    int64          `yaml:"foundLost,omitempty" json:"foundLost,omitempty"`
}

// Refusal is a refused stop in force (gpusched.Refusal): the victim, the
// admission of its run that was refused (Run), when the refusal lapses,
// the host's reason, and the jobs whose plans it broke.
type Refusal struct {
	Victim  string    `yaml:"victim" json:"victim"`
	Run     time.Time `yaml:"run" json:"run"`
	Until   time.Time `yaml:"until" json:"until"`
	Reason  string    `yaml:"reason,omitempty" json:"reason,omitempty"`
	Blocked []string  `yaml:"blocked,omitempty" json:"blocked,omitempty"`
}

// Fault is a health change noted and not yet planned: exactly one of
// Host, GPU (named HOST/gpuN) and Domain (a network or fabric domain, or
// the cluster, by name), and its new health (State: healthy, draining or
// failed).
type Fault struct {
	Host   string `yaml:"host,omitempty" json:"host,omitempty"`
	GPU    string `yaml:"gpu,omitempty" json:"gpu,omitempty"`
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
	State  string `yaml:"state" json:"state"`
}

// Recovering is a recovery in flight (gpusched.RecoveryInFlight): the
// job and its action, requeue, drain or end.
type Recovering struct {
	Job    string `yaml:"job" json:"job"`
	Action string `yaml:"action" json:"action"`
}

// Tombstone is an ended job the Scheduler remembers
// (gpusched.Tombstone): its ID, how it ended and when.
type Tombstone struct {
	Job   string      `yaml:"job" json:"job"`
	State queue.State `yaml:"state" json:"state"`
	At    time.Time   `yaml:"at" json:"at"`
}

// Migration is a migration in flight: the moving job and where it goes.
type Migration struct {
	Job string `yaml:"job" json:"job"`
	To  []Task `yaml:"to" json:"to"`
	// Domain names the domain the destination was placed within
	// (version 7; absent: the cluster).
	Domain string `yaml:"domain,omitempty" json:"domain,omitempty"`
}

// DefragIssued is one migration of the budget's log: when it was issued
// and the GPU time it lost, in thousandths of a GPU-second.
type DefragIssued struct {
	At   time.Time `yaml:"at" json:"at"`
	Lost int64     `yaml:"lost,omitempty" json:"lost,omitempty"`
}

// NoPlan is a standing "no preemption plan" verdict (gpusched.NoPlan):
// the job, when a minimum run time it counted on ends (Until), the job's
// priority then, and whether it depends on the quotas' usage (Quotas) or
// holds only while nothing changes (Exact).
type NoPlan struct {
	Job      string    `yaml:"job" json:"job"`
	Until    time.Time `yaml:"until,omitempty" json:"until,omitzero"`
	Priority int32     `yaml:"priority,omitempty" json:"priority,omitempty"`
	Quotas   bool      `yaml:"quotas,omitempty" json:"quotas,omitempty"`
	Exact    bool      `yaml:"exact,omitempty" json:"exact,omitempty"`
	// Gained and Eligible name the hosts where, since the verdict,
	// capacity came back or a job became a possible victim (version 7):
	// the next cycle that asks about the verdict asks whether one of
	// them could then take a task of the job (gpusched.NoPlan.Gained).
	Gained   []string `yaml:"gained,omitempty,flow" json:"gained,omitempty"`
	Eligible []string `yaml:"eligible,omitempty,flow" json:"eligible,omitempty"`
}

// Leaving is a host waiting to leave (RemoveHosts), or with Template to
// come back with that template of the cluster (SetHostGPUs).
type Leaving struct {
	Host     string `yaml:"host" json:"host"`
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
}
