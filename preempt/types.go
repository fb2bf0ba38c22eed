package preempt

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Job is a job that holds resources, as the planners see it: its spec,
// where its tasks run, and the state that decides what stopping it costs.
// The planners read a Job and never change its exported fields.
type Job struct {
	// Spec is the job's spec. The planners read ID, Queue, Priority,
	// MinRunTime, MaxPreemptions, NonPreemptible and each group's MinCount.
	// Required.
	Spec *workload.Job
	// Placement is where its tasks run: one claim per placed task, each
	// task's group, and the tasks placed per group. The ledger of the
	// Snapshot holds these claims. Required. Replace it rather than edit
	// it: a placement that changes is a new *gang.Placement (the Scheduler
	// makes one when a job shrinks or grows). The planners keep what they
	// derive from it (its GPUs, hosts and claim count) for as long as this
	// pointer and Spec's stay the same.
	Placement *gang.Placement
	// Started is when it started running. Zero means admitted but not
	// started: it has done no work, so stopping it loses nothing, and
	// MinRunTime does not protect it.
	Started time.Time
	// Checkpoint is when it last completed a checkpoint in its current run;
	// zero (or a time before Started) means none, so stopping it loses its
	// whole run since Started.
	Checkpoint time.Time
	// CheckpointInterval, when positive, is how often it checkpoints: a
	// job that reported no Checkpoint in its current run is taken to have
	// checkpointed at the last whole interval since Started. A reported
	// Checkpoint is authoritative: the interval is then not used.
	CheckpointInterval time.Duration
	// Stopping marks a job already asked to stop (a preemption or recovery
	// in progress): it is never chosen, and what it holds is not counted as
	// free, since it is promised to someone else.
	Stopping bool

	// placement cache (shape): its GPU milli, whether every GPU claim is
	// whole, whether no group is placed above its minimum (no shrink
	// units), and the least and greatest host of its claims, for the
	// placement cplace with cclaims claims and the spec cspec. Kept beside
	// the fields above, which every plan reads of every job it visits, so
	// that a visit reads few cache lines (not the spec, its groups, nor
	// the claims of a job within one domain).
	allWhole       bool
	rigid          bool
	hostLo, hostHi topology.HostID
	cclaims        int
	cplace         *gang.Placement
	cspec          *workload.Job
	milli          int64
	// request cache, for migrations: req is reqSpec resolved against reqC.
	req     *gang.Request
	reqSpec *workload.Job
	reqC    *topology.Cluster

	// Preemptions counts how often it was preempted already; at
	// Spec.MaxPreemptions (when positive) it is never chosen again.
	Preemptions int
	// Migrations counts how often Defragment's plans moved it already; at
	// Config.MaxMigrations (when positive) it is never moved again.
	Migrations int
	// Restarts counts how often failures stopped it already (for
	// RecoveryConfig.MaxRestarts).
	Restarts int
	// End is its estimated end (for RecoveryConfig.KeepIfEndsWithin);
	// zero means unknown.
	End time.Time
	// Charge is what its queue is charged for it, in the dimensions of the
	// Snapshot's queue tree. Nil means derived from Placement (GPU, CPU,
	// memory and the per-model GPU dimensions of the tree).
	Charge queue.Vector
	// Grace overrides Config.Grace for this job: how long it gets between
	// SIGTERM and the release of its resources. Zero means the default.
	Grace time.Duration

	// planner cache: the resolved queue and its tree.
	qtree *queue.Tree
	qid   queue.NodeID
	// charge cache when Charge is nil.
	ctree  *queue.Tree
	charge queue.Vector
	// roster filing (roster.go): the roster, the ID and flags it was
	// filed under, its group and bucket, its positions in the bucket's
	// jobs and minRun, and in the roster's stopping list (+1; 0: none),
	// and in its tail (+1) while rgen is the roster's gen.
	ro                       *Roster
	rid                      string
	rhost                    topology.HostID // of the first claim, for byHost
	rflags                   uint8
	rg                       *rgroup
	rb                       *rbucket
	rpos, rmin, rstop, rtail int32
	rgen                     uint64
}

// shape returns the GPU milli of j's placement and whether all its GPU
// claims are whole GPUs, cached (with rigid, hostLo, hostHi and cclaims)
// while the job keeps its placement and spec (the same pointers).
func (j *Job) shape(c *topology.Cluster) (int64, bool) {
	if !j.shaped() {
		j.reshape(c)
	}
	return j.milli, j.allWhole
}

// shaped reports whether shape's cache holds for j's placement and spec
// (inlined: a plan asks of every job it visits). It compares pointers
// only, so that a visit does not read the placement itself (a cache miss
// per job): see Placement.
func (j *Job) shaped() bool {
	return j.cplace == j.Placement && j.cspec == j.Spec
}

// reshape fills shape's cache.
func (j *Job) reshape(c *topology.Cluster) {
	p := j.Placement
	j.cplace, j.cclaims, j.cspec = p, len(p.Claims), j.Spec
	j.milli, j.allWhole, j.hostLo, j.hostHi = 0, true, 0, 0
	for i := range p.Claims {
		if h := p.Claims[i].Host; i == 0 {
			j.hostLo, j.hostHi = h, h
		} else {
			j.hostLo, j.hostHi = min(j.hostLo, h), max(j.hostHi, h)
		}
		for _, g := range p.Claims[i].GPUs {
			j.milli += gpuClaimMilli(c, g)
			if g.Kind != topology.ClaimWhole {
				j.allWhole = false
			}
		}
	}
	j.rigid = true
	for gi, placed := range p.Placed {
		if gi >= len(j.Spec.Groups) || placed > j.Spec.Groups[gi].Min() {
			j.rigid = false
		}
	}
}

// lastCheckpoint returns j's last checkpoint at now: Checkpoint when it
// is set and not before Started (a reported checkpoint is authoritative,
// one at the run's very start too), else the last whole
// CheckpointInterval since Started; zero when there is none after
// Started.
func (j *Job) lastCheckpoint(now time.Time) time.Time {
	if j.Started.IsZero() {
		return time.Time{}
	}
	if !j.Checkpoint.IsZero() && !j.Checkpoint.Before(j.Started) {
		return j.Checkpoint
	}
	if iv := j.CheckpointInterval; iv > 0 && now.After(j.Started) {
		if est := j.Started.Add(now.Sub(j.Started) / iv * iv); est.After(j.Started) {
			return est
		}
	}
	return time.Time{}
}

// ID returns Spec.ID.
func (j *Job) ID() string { return j.Spec.ID }

// validate checks what the planners rely on.
func (j *Job) validate() error {
	if j == nil || j.Spec == nil {
		return errors.New("preempt: job without Spec")
	}
	if j.Spec.ID == "" {
		return errors.New("preempt: job with an empty ID")
	}
	p := j.Placement
	if p == nil {
		return fmt.Errorf("preempt: job %s: no Placement", j.Spec.ID)
	}
	if len(p.Tasks) != len(p.Claims) {
		return fmt.Errorf("preempt: job %s: %d claims but %d task refs", j.Spec.ID, len(p.Claims), len(p.Tasks))
	}
	if len(p.Placed) != len(j.Spec.Groups) {
		return fmt.Errorf("preempt: job %s: Placed has %d groups, the spec %d", j.Spec.ID, len(p.Placed), len(j.Spec.Groups))
	}
	n := 0
	for g, k := range p.Placed {
		if k < 0 || k > j.Spec.Groups[g].Count {
			return fmt.Errorf("preempt: job %s: groups[%d]: %d tasks placed, count %d", j.Spec.ID, g, k, j.Spec.Groups[g].Count)
		}
		n += k
	}
	if n != len(p.Claims) {
		return fmt.Errorf("preempt: job %s: Placed adds up to %d tasks, %d claims", j.Spec.ID, n, len(p.Claims))
	}
	for i, t := range p.Tasks {
		if t.Group < 0 || int(t.Group) >= len(j.Spec.Groups) {
			return fmt.Errorf("preempt: job %s: task %d names group %d", j.Spec.ID, i, t.Group)
		}
	}
	return nil
}

// Snapshot is the cluster as a planner sees it: the ledger, the queue tree
// (for quotas, reclaim and fair sharing) and the jobs holding resources.
// The planners trial-release jobs on the ledger while they plan and put
// everything back exactly (state and Generation) before they return.
type Snapshot interface {
	// Ledger is the current occupancy; it holds the claims of every job.
	Ledger() *topology.Ledger
	// Queues is the queue tree whose usage includes every job's charge;
	// nil means no quotas: only priority decides, and only within a queue
	// name.
	Queues() *queue.Tree
	// Jobs calls fn for every job holding resources, in an order that is
	// the same for the same state, until fn returns false.
	Jobs(fn func(*Job) bool)
}

// State is a Snapshot kept by the caller: a ledger, an optional queue
// tree and the jobs holding resources, in ID order, indexed by a Roster
// (so that a plan visits only the jobs that may be its victims). Add and
// Remove keep the job list; Update files a job again after a change of
// the fields the planners classify it by (see Roster); the caller keeps
// the ledger and tree in step (a job's claims on the ledger, its charge in
// the tree). Not safe for concurrent use.
type State struct {
	ledger *topology.Ledger
	tree   *queue.Tree
	jobs   []*Job
	roster *Roster
}

// NewState returns a State over l and tree (nil: no quotas) with no jobs.
func NewState(l *topology.Ledger, tree *queue.Tree) *State {
	return &State{ledger: l, tree: tree, roster: NewRoster()}
}

// Roster returns the State's index of its jobs (Indexed).
func (s *State) Roster() *Roster { return s.roster }

// Ledger returns the ledger.
func (s *State) Ledger() *topology.Ledger { return s.ledger }

// Queues returns the queue tree, or nil.
func (s *State) Queues() *queue.Tree { return s.tree }

// Jobs calls fn for every job in ID order until it returns false.
func (s *State) Jobs(fn func(*Job) bool) {
	for _, j := range s.jobs {
		if !fn(j) {
			return
		}
	}
}

// Len returns the number of jobs.
func (s *State) Len() int { return len(s.jobs) }

func (s *State) find(id string) (int, bool) {
	return slices.BinarySearchFunc(s.jobs, id, func(j *Job, id string) int { return strings.Compare(j.Spec.ID, id) })
}

// Add records a job that holds resources (its claims must already be on
// the ledger). It returns an error for a job without Spec or Placement, an
// inconsistent placement, or a duplicate ID. O(jobs).
func (s *State) Add(j *Job) error {
	if err := j.validate(); err != nil {
		return err
	}
	i, ok := s.find(j.Spec.ID)
	if ok {
		return fmt.Errorf("preempt: duplicate job %s", j.Spec.ID)
	}
	if err := s.roster.Add(j); err != nil {
		return err
	}
	s.jobs = slices.Insert(s.jobs, i, j)
	return nil
}

// Remove forgets a job; it reports whether it was there. O(jobs).
func (s *State) Remove(id string) bool {
	i, ok := s.find(id)
	if ok {
		s.roster.Remove(s.jobs[i])
		s.jobs = slices.Delete(s.jobs, i, i+1)
	}
	return ok
}

// Update files the job with the given ID again after its Spec.Priority,
// Spec.NonPreemptible, Spec.MinRunTime, Spec.MaxPreemptions, Preemptions,
// Started or Stopping changed (Spec.ID and Spec.Queue must not change
// while it is in the State). It reports whether the job is there.
func (s *State) Update(id string) bool {
	j, ok := s.Job(id)
	if ok {
		s.roster.Update(j)
	}
	return ok
}

// Job returns the job with the given ID.
func (s *State) Job(id string) (*Job, bool) {
	if i, ok := s.find(id); ok {
		return s.jobs[i], true
	}
	return nil, false
}

// Pending is the gang a plan makes room for.
type Pending struct {
	// Request is the gang, resolved against the Snapshot's cluster. Its
	// AllowHost and AllowGPU filters are honoured. Required.
	Request *gang.Request
	// Queue names its leaf queue in the Snapshot's tree ("" without one).
	Queue string
	// Priority is its priority; only jobs of lower priority are preempted
	// on the priority ground.
	Priority int32
	// Demand is what its admission charges its queue, in the tree's
	// dimensions; nil means the minimum demand of the Request (GPU, CPU,
	// memory).
	Demand queue.Vector
	// Unplaced says that the caller has just tried placing Request on the
	// Snapshot's ledger as it is, with the Planner's placer, and it did not
	// place: Plan does not try again (a scheduler asks for a plan only for
	// a job that did not place).
	Unplaced bool
}

// GPUTime is an amount of GPU time in milli-GPU-seconds: a GPU for one
// second is 1000. It is integral so that sums do not depend on order.
type GPUTime int64

// GPUSeconds returns t in GPU-seconds.
func (t GPUTime) GPUSeconds() float64 { return float64(t) / 1000 }

// String renders t as GPU-seconds, GPU-minutes or GPU-hours:
// "0 GPU-s", "45 GPU-s", "12.5 GPU-min", "3.2 GPU-h".
func (t GPUTime) String() string {
	s := t.GPUSeconds()
	switch {
	case s < 60:
		return strconv.FormatFloat(s, 'f', -1, 64) + " GPU-s"
	case s < 3600:
		return strconv.FormatFloat(round1(s/60), 'f', -1, 64) + " GPU-min"
	}
	return strconv.FormatFloat(round1(s/3600), 'f', -1, 64) + " GPU-h"
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// lostNanos is the GPU time milli GPUs lose from from to now (Unix
// nanoseconds), in whole seconds.
func lostNanos(milli, from, now int64) GPUTime {
	if now <= from {
		return 0
	}
	return GPUTime(milli * ((now - from) / int64(time.Second)))
}

// Cost is what a plan costs, compared in this order: the GPU time lost
// since each victim's last checkpoint, then the number of victims (jobs
// stopped or shrunk), then the sum of the victims' priorities. Lost and
// Victims include what the victims' restarts are expected to stop
// (Victim.RestartLost and RestartStops).
type Cost struct {
	Lost     GPUTime
	Victims  int
	Priority int64
}

// Less reports whether c is cheaper than o.
func (c Cost) Less(o Cost) bool {
	if c.Lost != o.Lost {
		return c.Lost < o.Lost
	}
	if c.Victims != o.Victims {
		return c.Victims < o.Victims
	}
	return c.Priority < o.Priority
}

// String renders "LOST lost, N victims (priority sum P)".
func (c Cost) String() string {
	return fmt.Sprintf("%s lost, %d victims (priority sum %d)", c.Lost, c.Victims, c.Priority)
}

// Ground says why a job may be preempted for a pending one.
type Ground uint8

// Grounds, in the order a planner tries them for a job.
const (
	// GroundPriority: lower priority than the pending job (in its queue, or
	// in any queue with Config.LowerPriority = AnyQueue, within the limits
	// AnyQueue says).
	GroundPriority Ground = iota + 1
	// GroundReclaim: its queue borrows beyond its guarantee, and the
	// pending job's queue stays within its own guarantee: the lender takes
	// its quota back. The job's queue must still borrow when it is chosen.
	GroundReclaim
	// GroundFairShare: its queue borrows and, with the job and the other
	// victims of that queue gone, still has a fair-share standing at least
	// that of the pending job's queue with the pending job admitted
	// (Kueue's LessThanOrEqualToFinalShare, which cannot cycle).
	GroundFairShare
	// GroundMigration: moved elsewhere by Defragment.
	GroundMigration
)

var groundNames = [...]string{"", "priority", "reclaim", "fair-share", "migration"}

// String returns "priority", "reclaim" or "fair-share".
func (g Ground) String() string {
	if int(g) < len(groundNames) && g > 0 {
		return groundNames[g]
	}
	return "Ground(" + strconv.Itoa(int(g)) + ")"
}

// Victim is one job a plan stops (or shrinks).
type Victim struct {
	Job      string
	Queue    string
	Priority int32
	Ground   Ground
	// Tasks lists the tasks to stop when the plan shrinks an elastic gang
	// (members above its minimum), in placement order; nil means the whole
	// gang stops.
	Tasks []gang.TaskRef
	// Claims is what it releases: the claims of the whole placement or of
	// the stopped tasks. Shared with the job's Placement; read only.
	Claims []topology.Claim
	// GPUMilli is the GPU capacity released, in milli-GPU.
	GPUMilli int64
	// Lost is the GPU time lost since its last checkpoint.
	Lost GPUTime
	// RestartLost and RestartStops are what its own restart is expected
	// to stop in turn, for a whole victim taken from another queue
	// (reclaim, fair share) whose queue holds lower-priority jobs the
	// plan may stop: the lost work (a lower bound: its GPUs covered by
	// the cheapest per GPU) and how many jobs. The plan's Cost counts
	// them; zero otherwise.
	RestartLost  GPUTime
	RestartStops int
	// Grace is how long the host waits between SIGTERM and the release.
	Grace time.Duration
}

// Whole reports whether the whole gang stops.
func (v *Victim) Whole() bool { return v.Tasks == nil }

// Plan is a way to make room for a pending gang: the victims, where the
// gang goes once they are gone, and what it costs.
type Plan struct {
	// Job is the pending job's ID.
	Job string
	// Victims in ascending ID order. Empty when the gang fits without any.
	Victims []Victim
	// Placement is where the gang goes once every victim has released its
	// claims; it places on the Snapshot's ledger with those claims
	// released. It is not committed.
	Placement *gang.Placement
	// Level and Domain name the domain at the gang's required level (the
	// cluster when none; the host for a gang of one task, which always
	// sits on one host) that the gang places in.
	Level  topology.Level
	Domain topology.DomainID
	// Cost is the plan's cost.
	Cost Cost
	// Exact is true when the search in the chosen domain was exhaustive
	// (the victims are the cheapest set there) and false when it was
	// greedy (too many candidates, or the search budget ran out). Either
	// way no victim can be dropped without the plan failing.
	Exact bool
	// Domains is how many candidate domains were searched, Placements how
	// many placement attempts the search made.
	Domains, Placements int
}

// Victim returns the victim with the given job ID.
func (p *Plan) Victim(id string) (*Victim, bool) {
	i, ok := slices.BinarySearchFunc(p.Victims, id, func(v Victim, id string) int { return strings.Compare(v.Job, id) })
	if !ok {
		return nil, false
	}
	return &p.Victims[i], true
}

// String renders the plan on one line.
func (p *Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: ", p.Job)
	if len(p.Victims) == 0 {
		b.WriteString("fits without preemption")
		return b.String()
	}
	b.WriteString("preempt")
	for i, v := range p.Victims {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s (%s", v.Job, v.Ground)
		if !v.Whole() {
			fmt.Fprintf(&b, ", shrink by %d", len(v.Tasks))
		}
		fmt.Fprintf(&b, ", %s)", v.Lost)
	}
	fmt.Fprintf(&b, "; cost %s", p.Cost)
	return b.String()
}

// Verdict says why no plan exists.
type Verdict uint8

// Verdicts.
const (
	// VerdictTooLarge: no domain at the required level has enough healthy
	// GPUs for the gang even if nothing ran there.
	VerdictTooLarge Verdict = iota + 1
	// VerdictProtected: no domain has enough GPUs free or held by jobs that
	// may be preempted (the others are protected, see NoPlan.Excluded).
	VerdictProtected
	// VerdictQuota: the gang's queue quota would not admit it even with
	// every eligible victim gone (NoPlan.Quota says which quota).
	VerdictQuota
	// VerdictPlacement: some domains have enough GPUs counted, but no set
	// of eligible victims there lets the gang place (the tasks do not pack
	// on the hosts, CPU, memory, models, or the victims' rules).
	VerdictPlacement
	// VerdictBudget: the search budget ran out before a plan was found.
	VerdictBudget
	// VerdictCapacity: (Defragment) the cluster lacks the free GPUs the
	// gang needs anywhere: it is not blocked by fragmentation.
	VerdictCapacity
)

var verdictNames = [...]string{"", "too large", "protected", "quota", "placement", "budget", "capacity"}

// String returns "too large", "protected", "quota", "placement",
// "budget" or "capacity".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v > 0 {
		return verdictNames[v]
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Exclusion is why a running job may not be a victim.
type Exclusion uint8

// Exclusions, in the order they are checked: a job counts under the first
// that applies.
const (
	// ExclStopping: it is already being stopped.
	ExclStopping Exclusion = iota
	// ExclNonPreemptible: its spec says never.
	ExclNonPreemptible
	// ExclMinRunTime: it has run for less than its minimum run time.
	ExclMinRunTime
	// ExclMaxPreemptions: it was preempted as often as its cap allows.
	ExclMaxPreemptions
	// ExclPriority: in the pending job's queue (or any queue, where
	// priority preemption spans queues) with a priority not lower.
	ExclPriority
	// ExclGuaranteed: in another queue that does not borrow: its guarantee
	// protects it.
	ExclGuaranteed
	// ExclBorrowing: its queue borrows, but the pending job's queue would
	// borrow too (no reclaim) and fair sharing does not allow it.
	ExclBorrowing
	// ExclSpec: (Defragment) its spec does not resolve against the
	// cluster, so it could not be placed again.
	ExclSpec
	// ExclMaxMigrations: (Defragment) it was migrated as often as
	// Config.MaxMigrations allows.
	ExclMaxMigrations
	// NumExclusions is the number of exclusions.
	NumExclusions
)

var exclusionNames = [...]string{"stopping", "non-preemptible", "min-run-time", "max-preemptions", "priority", "guaranteed", "borrowing", "spec", "max-migrations"}

// String returns the exclusion's short name.
func (e Exclusion) String() string {
	if int(e) < len(exclusionNames) {
		return exclusionNames[e]
	}
	return "Exclusion(" + strconv.Itoa(int(e)) + ")"
}

// DomainShort is a domain at the required level and how far it is from
// holding the gang.
type DomainShort struct {
	Domain topology.DomainID
	Name   string
	// Free is its free GPUs; Evictable the GPUs that eligible victims hold
	// there (shared GPUs counted once per victim, an upper bound).
	Free, Evictable int
	// Short is how many GPUs it lacks even with every eligible victim
	// gone (0 when enough were counted but no victim set let the gang
	// place).
	Short int
}

// NoPlan says why no plan makes room for a pending gang. It is data; String
// renders it for people.
type NoPlan struct {
	Job     string
	Verdict Verdict
	// GPUs is what the gang needs (whole GPUs, minimum tasks); Milli its
	// GPU capacity in milli-GPU.
	GPUs  int
	Milli int64
	// Level is the level the gang must fit in one domain of (the host for
	// a gang of one task that needs GPUs).
	Level     topology.Level
	LevelName string
	// Domains is the number of domains at Level; TooSmall how many have
	// fewer healthy GPUs than the gang needs; Candidates how many have
	// enough free and evictable GPUs (for a gang of one task, among the
	// hosts eligible victims hold; with enough CPU and memory too);
	// Searched how many of those were searched for a victim set.
	Domains, TooSmall, Candidates, Searched int
	// Best is the domain that came closest (the largest free + evictable).
	Best DomainShort
	// Eligible is the number of running jobs that may be victims;
	// Excluded counts the others per reason.
	Eligible int
	Excluded [NumExclusions]int
	// Quota is the quota that still binds with every eligible victim gone,
	// for VerdictQuota.
	Quota *queue.Block
	// Until is the earliest time a running job now inside its minimum run
	// time leaves it (zero when none is): until then, planning again on
	// the same state gives the same answer.
	Until time.Time
	// Err is set when the Snapshot is inconsistent: a job's claims are not
	// held on the ledger as the job says.
	Err error
}

// String renders the reasons on one line, e.g.
//
//	job j: no plan (protected): needs 64 GPUs in one tor; best tor03 has 12 free + 40 evictable (12 short); 38 jobs eligible, excluded: 12 priority, 3 min-run-time
func (n *NoPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: no plan (%s): needs %d GPUs", n.Job, n.Verdict, n.GPUs)
	if n.GPUs == 0 {
		fmt.Fprintf(&b, " (%d milli-GPU)", n.Milli)
	}
	fmt.Fprintf(&b, " in one %s", n.LevelName)
	if n.Best.Name != "" {
		fmt.Fprintf(&b, "; best %s has %d free + %d evictable", n.Best.Name, n.Best.Free, n.Best.Evictable)
		if n.Best.Short > 0 {
			fmt.Fprintf(&b, " (%d short)", n.Best.Short)
		}
	}
	if n.TooSmall > 0 {
		fmt.Fprintf(&b, "; %d of %d %ss too small", n.TooSmall, n.Domains, n.LevelName)
	}
	if n.Quota != nil {
		b.WriteString("; quota: " + n.Quota.String())
	}
	fmt.Fprintf(&b, "; %d jobs eligible", n.Eligible)
	first := true
	for e, k := range n.Excluded {
		if k == 0 {
			continue
		}
		if first {
			b.WriteString(", excluded:")
			first = false
		} else {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %d %s", k, Exclusion(e))
	}
	return b.String()
}
