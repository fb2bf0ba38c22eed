// Package rootsched drives the root gpusched.Scheduler from the simulator:
// it adapts the Scheduler's host-facing calls to sim.Scheduler, so a
// simulation exercises exactly the code a production host runs —
// placement, preemption (Config.Preemptor), checkpoints and kept progress,
// and the recovery of jobs hit by failures and drains
// (Decision.Recoveries, Config.MaxRestarts) — and it builds Scheduler
// configurations for common setups (a placement policy or a preemption
// mode by name, one queue per tenant, one guaranteed queue per virtual
// cluster).
package rootsched

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/frag"
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Epoch is the wall-clock instant simulated time zero maps to; the
// Scheduler sees times Epoch + offset.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Scheduler is a *gpusched.Scheduler seen as a sim.Scheduler. The
// mapping of calls:
//
//	Submit → Submit; Schedule → Schedule (bindings with their placement's
//	claims, preemptions, migrations, shrinks and grows, recoveries,
//	pending reasons by code); Shrunk → Shrunk; Grown → Grown; Started →
//	Started; Checkpointed → Checkpointed; Finished → Finished;
//	Stopped(preempted) → Preempted; Stopped(failure) and Stopped(drain) →
//	Requeue (back in its queue at its original place, restarting from its
//	last checkpoint); Removed → Failed; SetGPUHealth / SetHostHealth →
//	the same (the Scheduler's next Decision has the recoveries of the jobs
//	they return).
//
// Recoveries map action for action (requeue, drain, keep, end; the
// Scheduler never shrinks). Saved is Progress's saved work, so the
// simulator's audit checks the Scheduler's kept progress against its own.
type Scheduler struct {
	S      *gpusched.Scheduler
	models map[string]bool // jobs that restrict the GPU model
	demote *demoter        // nil: priorities stay as submitted (see Demote)
	order  *orderer        // nil: no Ordering (see Order)
}

var (
	_ sim.Scheduler        = (*Scheduler)(nil)
	_ sim.ProgressReporter = (*Scheduler)(nil)
	_ sim.Resizer          = (*Scheduler)(nil)
)

// Wrap adapts s.
func Wrap(s *gpusched.Scheduler) *Scheduler {
	return &Scheduler{S: s, models: map[string]bool{}}
}

// New builds a Scheduler from cfg and wraps it. A zero
// cfg.MaxClockSkew becomes no limit: simulated time jumps from one event
// to the next, however far apart (a Scheduler given to Wrap keeps its
// own).
func New(cfg gpusched.Config) (*Scheduler, error) {
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = -1
	}
	s, err := gpusched.New(cfg)
	if err != nil {
		return nil, err
	}
	return Wrap(s), nil
}

func at(now time.Duration) time.Time { return Epoch.Add(now) }

// Submit submits the job.
func (a *Scheduler) Submit(now time.Duration, j workload.Job) error {
	if err := a.S.Submit(j, at(now)); err != nil {
		return err
	}
	if a.demote != nil {
		a.demote.submit(&j)
	}
	if a.order != nil {
		a.order.submit(now, &j)
	}
	for _, g := range j.Groups {
		if len(g.Models) > 0 {
			a.models[j.ID] = true
			break
		}
	}
	return nil
}

// Schedule runs one cycle and translates its Decision.
func (a *Scheduler) Schedule(now time.Duration) sim.Decision {
	if a.demote != nil {
		a.demote.update(a, now)
	}
	if a.order != nil {
		a.order.update(a, now)
	}
	d := a.S.Schedule(at(now))
	out := sim.Decision{
		Bindings:    make([]sim.Binding, len(d.Bindings)),
		Preemptions: make([]sim.Preemption, len(d.Preemptions)),
		Pending:     make([]sim.Pending, len(d.Pending)),
		Stats:       d.Stats, // the caller's: Recycle does not reuse it
	}
	if len(d.Recoveries) > 0 {
		out.Recoveries = make([]sim.Recovery, len(d.Recoveries))
		for i, r := range d.Recoveries {
			act := actions[r.Action]
			if r.Action == preempt.ActionShrink {
				// The simulator's faults stop a whole job (a failure
				// crashes it): it carries out a recovery shrink as a
				// whole stop, which the Scheduler accepts (Requeue).
				act = sim.RecoverRequeue
				if r.Grace > 0 {
					act = sim.RecoverDrain
				}
			}
			out.Recoveries[i] = sim.Recovery{Job: r.Job, Action: act, Grace: r.Grace, Lost: r.Lost.GPUSeconds(), Reason: r.Reason}
		}
	}
	for i, b := range d.Bindings {
		out.Bindings[i] = sim.Binding{Job: b.Job, Claims: b.Placement.Claims}
		if a.order != nil {
			a.order.bind(a.S.Cluster(), b.Job, b.Placement.Claims)
		}
	}
	for i, p := range d.Preemptions {
		out.Preemptions[i] = sim.Preemption{Job: p.Job, Grace: p.Grace, Reason: p.Reason}
	}
	for _, m := range d.Migrations {
		why := "migration for " + m.For
		if m.For == "" {
			why = "migration to consolidate"
		}
		out.Preemptions = append(out.Preemptions, sim.Preemption{Job: m.Job, Grace: m.Grace, Reason: why, Migrate: true, Ready: m.Ready})
	}
	for _, x := range d.Shrinks {
		out.Shrinks = append(out.Shrinks, sim.Shrink{Job: x.Job, Claims: x.Claims, Grace: x.Grace})
	}
	for _, x := range d.Grows {
		out.Grows = append(out.Grows, sim.Grow{Job: x.Job, Claims: x.Claims})
	}
	for i, p := range d.Pending {
		// Detail stays empty: rendering every pending job's reason every
		// cycle would cost more than the metrics need.
		out.Pending[i] = sim.Pending{Job: p.Job, Reason: a.reason(p)}
	}
	a.S.Recycle(d) // out holds copies: the next cycle may reuse d's rows
	if a.demote != nil {
		out.Wake = a.demote.wake(now, &out)
	}
	return out
}

// actions maps the Scheduler's recovery actions (a shrink: see
// Schedule).
var actions = map[preempt.Action]sim.RecoveryAction{
	preempt.ActionRequeue: sim.RecoverRequeue,
	preempt.ActionDrain:   sim.RecoverDrain,
	preempt.ActionKeep:    sim.RecoverKeep,
	preempt.ActionEnd:     sim.RecoverEnd,
}

// reason maps the Scheduler's wait codes onto the simulator's failure
// classes: quota and quota-held are quota, too-large is topology, the
// others map to the class of the same name (preempting to
// waiting-for-victims). A capacity shortfall of a job that restricts the
// GPU model counts as a model failure. A quota block at the root whose
// limit is the cluster's own capacity (no root quota configured:
// queue.Block.Capacity) is capacity, not quota: the cluster is full, no
// queue's quota binds.
func (a *Scheduler) reason(p gpusched.Pending) sim.Reason {
	if p.Reason == nil {
		return sim.ReasonOther
	}
	switch p.Reason.Code {
	case gpusched.WaitQuota:
		if b := p.Reason.Quota; b != nil && b.Capacity {
			return a.capacity(p.Job)
		}
		return sim.ReasonQuota
	case gpusched.WaitQuotaHeld:
		return sim.ReasonQuota
	case gpusched.WaitCapacity:
		return a.capacity(p.Job)
	case gpusched.WaitTopology, gpusched.WaitTooLarge:
		return sim.ReasonTopology
	case gpusched.WaitFragmentation:
		return sim.ReasonFragmentation
	case gpusched.WaitBackfill:
		return sim.ReasonBackfill
	case gpusched.WaitBehindHead:
		return sim.ReasonBehindHead
	case gpusched.WaitPreemption:
		return sim.ReasonVictims
	}
	return sim.ReasonOther
}

// capacity is the class of a capacity shortfall of job: a model failure
// when the job restricts the GPU model.
func (a *Scheduler) capacity(job string) sim.Reason {
	if a.models[job] {
		return sim.ReasonModel
	}
	return sim.ReasonCapacity
}

// Started reports the job running.
func (a *Scheduler) Started(now time.Duration, id string) error {
	if a.demote != nil {
		a.demote.started(now, id)
	}
	if a.order != nil {
		a.order.started(now, id)
	}
	return a.S.Started(id, at(now))
}

// Checkpointed reports a completed checkpoint.
func (a *Scheduler) Checkpointed(now time.Duration, id string, ckpt time.Duration) error {
	return a.S.Checkpointed(id, at(ckpt), at(now))
}

// Saved returns the work a job's earlier runs saved (Progress).
func (a *Scheduler) Saved(id string) (time.Duration, bool) {
	_, saved, ok := a.S.Progress(id)
	return saved, ok
}

// Finished reports the job done.
func (a *Scheduler) Finished(now time.Duration, id string) error {
	delete(a.models, id)
	a.stopped(now, id, true)
	return a.S.Finished(id, at(now))
}

// Stopped reports a preempted job as Preempted and a job stopped by a
// recovery (failure or drain) as Requeue.
func (a *Scheduler) Stopped(now time.Duration, id string, cause sim.StopCause) error {
	err := a.stopCall(now, id, cause)
	a.stopped(now, id, false) // after the call: saved work includes this run's checkpoints
	return err
}

func (a *Scheduler) stopCall(now time.Duration, id string, cause sim.StopCause) error {
	switch cause {
	case sim.StopPreempted:
		return a.S.Preempted(id, at(now))
	case sim.StopMigrated:
		return a.S.Migrated(id, at(now))
	}
	return a.S.Requeue(id, at(now))
}

// Shrunk reports a shrink of the last Decisions done (Scheduler.Shrunk).
func (a *Scheduler) Shrunk(now time.Duration, id string) error { return a.S.Shrunk(id, at(now)) }

// Grown reports a grow of the last Decision done (Scheduler.Grown).
func (a *Scheduler) Grown(now time.Duration, id string) error { return a.S.Grown(id, at(now)) }

// Removed reports a job ended by its recovery as Failed.
func (a *Scheduler) Removed(now time.Duration, id string) error {
	delete(a.models, id)
	a.stopped(now, id, true)
	return a.S.Failed(id, at(now))
}

// stopped tells the demoter and the orderer that a job's run ended at
// now; gone: the job ended.
func (a *Scheduler) stopped(now time.Duration, id string, gone bool) {
	if a.demote != nil {
		a.demote.stopped(now, id, gone)
	}
	if a.order != nil {
		var saved time.Duration
		if !gone {
			_, saved, _ = a.S.Progress(id)
		}
		a.order.stopped(now, id, saved, gone)
	}
}

// SetGPUHealth sets a GPU's health.
func (a *Scheduler) SetGPUHealth(_ time.Duration, g topology.GPUID, h topology.Health) error {
	_, err := a.S.SetGPUHealth(g, h)
	return err
}

// SetHostHealth sets a host's health.
func (a *Scheduler) SetHostHealth(_ time.Duration, h topology.HostID, hh topology.Health) error {
	_, err := a.S.SetHostHealth(a.S.Cluster().HostName(h), hh)
	return err
}

// Placer builds the named gang placement policy (see gang.PolicyNames).
// "fgd" needs the target workload, which it learns from jobs (the trace
// to be replayed, as the FGD paper does; see Workload); the other policies
// ignore jobs.
// Options, when given, change the placer's options before it is built
// (e.g. Protect).
func Placer(c *topology.Cluster, name string, jobs []trace.Job, options ...func(*gang.Options)) (gang.Placer, error) {
	var opt gang.Options
	for _, f := range options {
		f(&opt)
	}
	if name == "fgd" {
		d, err := Workload(c, jobs)
		if err != nil {
			return nil, err
		}
		opt.Frag.Distribution = d
	}
	p, err := gang.New(name, opt)
	if err != nil {
		return nil, fmt.Errorf("rootsched: policy %q: %w", name, err)
	}
	return p, nil
}

// Workload is the target workload Placer gives "fgd": the task classes of
// jobs on c (frag.Learn with its defaults), tasks the cluster cannot
// express left out.
func Workload(c *topology.Cluster, jobs []trace.Job) (frag.Distribution, error) {
	var tasks []frag.Task
	for i := range jobs {
		for gi := range jobs[i].Spec.Groups {
			t, err := frag.TaskFor(c, &jobs[i].Spec.Groups[gi])
			if err != nil {
				continue // a task the cluster cannot express: the Scheduler will say so
			}
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return frag.Distribution{}, errors.New("rootsched: fgd needs a workload to learn from; the trace has no placeable task")
	}
	return frag.Learn(tasks, frag.LearnOptions{})
}

// PreemptModes are the modes Preemptor accepts, in increasing reach.
var PreemptModes = []string{"off", "reclaim", "queue", "cluster", "fair"}

// Preemptor builds the Scheduler's preemption planner for a mode: "off"
// (or "") none; "reclaim" lets a queue within its guarantee take back
// what other queues borrow; "queue" adds priority preemption within a
// queue; "cluster" priority preemption across queues; "fair" adds to
// "queue" Kueue's fair-share preemption among borrowing queues. grace is
// the victims' time to checkpoint (0: 2 minutes); plans bounds the plans
// per cycle (0: 8).
// Options, when given, change the planner's configuration after the
// mode set it (e.g. FragAware).
func Preemptor(mode string, grace time.Duration, plans int, options ...func(*preempt.Config)) (gpusched.Preemptor, error) {
	cfg := preempt.Config{Grace: grace, Reclaim: preempt.ReclaimAny}
	switch mode {
	case "", "off":
		return nil, nil
	case "reclaim":
		cfg.LowerPriority = preempt.NeverByPriority
	case "queue":
		cfg.LowerPriority = preempt.WithinQueue
	case "cluster":
		cfg.LowerPriority = preempt.AnyQueue
	case "fair":
		cfg.LowerPriority, cfg.FairSharing = preempt.WithinQueue, true
	default:
		return nil, fmt.Errorf("rootsched: preemption mode %q: want one of %v", mode, PreemptModes)
	}
	for _, f := range options {
		f(&cfg)
	}
	p, err := gpusched.NewPlanPreemptor(cfg, plans)
	if err != nil {
		return nil, fmt.Errorf("rootsched: preemption mode %q: %w", mode, err)
	}
	return p, nil
}

// Tenants returns the distinct Spec.Queue names of jobs, sorted; jobs
// without one count as "default".
func Tenants(jobs []trace.Job) []string {
	seen := map[string]bool{}
	var out []string
	for i := range jobs {
		q := jobs[i].Spec.Queue
		if q == "" {
			q = "default"
		}
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return out
}

// FlatQueues is a queue tree with one leaf per name, no quotas, and the
// given ordering for every leaf.
func FlatQueues(names []string, p queue.Policy) queue.Config {
	cfg := queue.Config{Root: queue.Node{Name: "cluster"}}
	for _, n := range names {
		cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: n, Policy: p})
	}
	return cfg
}

// VCQueues is a queue tree with one leaf per virtual cluster, each
// guaranteed (nominal) its GPUs and free to borrow idle GPUs of others,
// plus, when extra is not empty, leaves without a guarantee for tenants
// that have no VC (they only borrow). Names must be unique.
func VCQueues(vcs []trace.VC, extra []string, p queue.Policy) queue.Config {
	cfg := queue.Config{Root: queue.Node{Name: "cluster"}}
	have := map[string]bool{}
	for _, v := range vcs {
		have[v.Name] = true
		cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: v.Name, Policy: p,
			Quotas: []queue.Quota{{Resource: "gpu", Nominal: int64(v.GPUs)}}})
	}
	for _, n := range extra {
		if !have[n] {
			have[n] = true
			cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: n, Policy: p,
				Quotas: []queue.Quota{{Resource: "gpu", Nominal: 0}}})
		}
	}
	return cfg
}

// VCTenants returns the entitlements of vcs for fairness metrics.
func VCTenants(vcs []trace.VC) []sim.Tenant {
	out := make([]sim.Tenant, len(vcs))
	for i, v := range vcs {
		out[i] = sim.Tenant{Name: v.Name, GPUs: v.GPUs}
	}
	return out
}
