package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// recovery is what the Scheduler does about faults: the health changes
// noted since the last cycle (turned into Decision.Recoveries at its
// start), and per job its checkpoints, the progress its earlier runs
// saved and the restarts failures cost it. Its methods are the only
// writers of its fields and of each job's rec part.
type recovery struct {
	faults []preempt.Fault // health changes since the last cycle, in order
}

// jobRecovery is a job's part of recovery.
//
// progress comes first: admitting a job reads it (its estimated end,
// job.remaining), and it then shares the cache line of the victim index's
// fields that admission writes (jobVictim's tail, just before), instead
// of taking one more cold line per admission.
type jobRecovery struct {
	progress   time.Duration  // work saved by checkpoints of earlier runs
	checkpoint time.Time      // last reported checkpoint of the current run
	restarts   int            // stops by failures
	recovering bool           // a recovery action was issued
	action     preempt.Action // which
}

// Recovery is what the host should do with a job hit by a fault (see
// Decision.Recoveries).
type Recovery struct {
	Job string
	// Action: preempt.ActionRequeue (stop now, then report Requeue),
	// ActionDrain (signal, wait Grace for a checkpoint, stop, report
	// Requeue), ActionShrink (stop only Tasks, within Grace, then report
	// Shrunk: the rest of the gang runs on, as after a Decision.Shrinks
	// entry; with Config.Elastic, for an elastic gang hit only above its
	// minimum), ActionKeep (let it run; it ends before the drain matters)
	// or ActionEnd (stop, report Failed: it was stopped by failures more
	// often than allowed).
	Action preempt.Action
	Grace  time.Duration
	// Tasks, Claims and Size, for ActionShrink only: the tasks to stop,
	// in placement order, what each releases (Claims[i] is Tasks[i]'s;
	// copies), and the gang's task count once they are stopped.
	Tasks  []gang.TaskRef
	Claims []topology.Claim
	Size   int
	// Lost is the GPU time lost since its last checkpoint; RestartFrom that
	// checkpoint (zero: from the beginning).
	Lost        preempt.GPUTime
	RestartFrom time.Time
	Reason      string
}

// noteGPU and noteHost record a health change for the next cycle's
// recovery plan.
func (r *recovery) noteGPU(g topology.GPUID, h topology.Health) {
	r.faults = append(r.faults, preempt.GPUFault(g, h, ""))
}

func (r *recovery) noteHost(h topology.HostID, hh topology.Health) {
	r.faults = append(r.faults, preempt.HostFault(h, hh, ""))
}

// takeFaults returns the faults noted since the last call.
func (r *recovery) takeFaults() []preempt.Fault {
	f := r.faults
	r.faults = nil
	return f
}

// begin records that action was issued for j.
func (r *recovery) begin(j *job, action preempt.Action) {
	j.rec.recovering, j.rec.action = true, action
}

// restored sets the progress and restarts of a job restored from records.
func (r *recovery) restored(j *job, progress time.Duration, restarts int) {
	j.rec.progress, j.rec.restarts = progress, restarts
}

// checkpointed records j's checkpoint at at, if later than the last.
func (r *recovery) checkpointed(j *job, at time.Time) bool {
	if !at.After(j.rec.checkpoint) {
		return false
	}
	j.rec.checkpoint = at
	return true
}

// stopped updates a holding job that stops and waits again (Preempted or
// Requeue) at now: it keeps the work up to its last checkpoint as
// progress, and a job requeued after a failure counts a restart (drains
// do not).
func (r *recovery) stopped(j *job, now time.Time) {
	if cp := lastCheckpoint(j, now); !cp.IsZero() {
		j.rec.progress += cp.Sub(j.started)
	}
	j.rec.checkpoint = time.Time{}
	if j.rec.recovering && j.rec.action == preempt.ActionRequeue {
		j.rec.restarts++
	}
	j.rec.recovering = false
}

// remaining is j's runtime estimate less its saved progress.
func (j *job) remaining(rt time.Duration) time.Duration {
	if p := j.rec.progress; p > 0 && p < rt {
		return rt - p
	}
	return rt
}

// lastCheckpoint is j's last checkpoint in its current run at now: the
// last one reported (Checkpointed) is authoritative, one reported at the
// run's very start too; only a run that reported none is given one
// estimated from its CheckpointInterval (the last whole interval since
// it started). Zero when there is none.
func lastCheckpoint(j *job, now time.Time) time.Time {
	if j.started.IsZero() {
		return time.Time{}
	}
	if cp := j.rec.checkpoint; !cp.IsZero() && !cp.Before(j.started) {
		return cp
	}
	if iv := j.spec.CheckpointInterval; iv > 0 && now.After(j.started) {
		if est := j.started.Add(now.Sub(j.started) / iv * iv); est.After(j.started) {
			return est
		}
	}
	return time.Time{}
}

// reportedCheckpoint is the checkpoint j reported (Checkpointed) in its
// current run, zero when none: what a saved state keeps. The estimate
// lastCheckpoint makes from the CheckpointInterval is not saved: saved,
// it would be restored as a report and freeze the estimate (a restored
// Scheduler would price a stop with older checkpoints than the original
// as time goes on).
func reportedCheckpoint(j *job) time.Time {
	if cp := j.rec.checkpoint; !cp.IsZero() && !cp.Before(j.started) {
		return cp
	}
	return time.Time{}
}

// Checkpointed reports that a running job completed a checkpoint at at
// (≤ now): a preemption or failure then loses only the work since, and a
// requeued job keeps its progress up to it (its runtime estimate shrinks
// by the work saved). A reported checkpoint is authoritative: from the
// first one in a run, the job's CheckpointInterval is no longer used to
// estimate later ones (Progress, the preemption planner and
// Recovery.RestartFrom use the last reported). A checkpoint earlier than
// the last reported one is ignored.
func (s *Scheduler) Checkpointed(id string, at, now time.Time) error {
	if err := s.mutating("Checkpointed", id); err != nil {
		return err
	}
	defer s.cb.leave()
	if err := s.applied("Checkpointed", id); err != nil {
		return err
	}
	now, err := s.eventAt("Checkpointed", id, now)
	if err != nil {
		return err
	}
	j, err := s.lookup(id)
	if err != nil {
		return err
	}
	if j.state != queue.Running {
		return jobErr(id, fmt.Errorf("%w: Checkpointed for a %s job", ErrState, j.state))
	}
	if at.Before(j.started) || at.After(now) {
		return jobErr(id, fmt.Errorf("%w: checkpoint at %s outside its run (%s..%s)", ErrState, at.UTC().Format(time.RFC3339), j.started.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	if s.rec.checkpointed(j, at) {
		s.victims.checkpointed(j, at)
	}
	return nil
}

// Progress returns a live job's last checkpoint in its current run (zero
// when none) and the work its earlier runs saved by checkpoints.
func (s *Scheduler) Progress(id string) (checkpoint time.Time, saved time.Duration, ok bool) {
	j, ok := s.jobs.byID[id]
	if !ok {
		return time.Time{}, 0, false
	}
	return lastCheckpoint(j, s.now), j.rec.progress, true
}

// recoverFaults turns the faults noted since the last cycle into recovery
// actions for the jobs still holding resources on failed or draining
// parts (the ledger already has the health).
func (s *Scheduler) recoverFaults(d *Decision, now time.Time) {
	if len(s.rec.faults) == 0 {
		return
	}
	faults := s.rec.takeFaults()
	snap := recoverySnapshot{schedSnapshot{s, now}}
	// With Config.Elastic, an elastic gang hit only above its minimum
	// loses only the tasks hit (ActionShrink) and grows back later.
	plan, err := preempt.Recover(snap, faults, now, preempt.RecoveryConfig{NoShrink: !s.elastic.on(), MaxRestarts: s.cfg.MaxRestarts,
		DrainGrace: s.cfg.DrainGrace, KeepIfEndsWithin: s.cfg.DrainKeep})
	if err != nil {
		// The faults were checked by the health setters.
		panic("gpusched: recovery plan: " + err.Error())
	}
	for _, a := range plan.Actions {
		j := s.jobs.byID[a.Job]
		r := Recovery{Job: a.Job, Action: a.Action, Grace: a.Grace, Lost: a.Lost, RestartFrom: a.RestartFrom, Reason: a.Reason}
		switch a.Action {
		case preempt.ActionKeep:
		case preempt.ActionShrink:
			// A shrink in flight, as one a preemption asks for: the job
			// runs on; the host reports Shrunk (elastic.go).
			sh := s.shrinkForRecovery(j, a.Tasks, a.Grace, a.Reason, now)
			r.Tasks, r.Claims, r.Size = sh.Tasks, sh.Claims, sh.Size
		default:
			s.rec.begin(j, a.Action)
			s.victims.update(j, now)
		}
		d.Recoveries = append(d.Recoveries, r)
	}
}

// recoverySnapshot lists the holding jobs not already being recovered.
type recoverySnapshot struct{ schedSnapshot }

func (x recoverySnapshot) Jobs(fn func(*preempt.Job) bool) {
	x.s.jobs.ascendEnds(func(j *job) bool {
		if j.rec.recovering {
			return true
		}
		return fn(x.s.victims.view(j, x.now))
	})
}

// formatRecovery renders a recovery for Decision.Format.
func formatRecovery(b *strings.Builder, c *topology.Cluster, r *Recovery) {
	fmt.Fprintf(b, "recover %s: %s", r.Job, r.Action)
	if r.Grace > 0 {
		fmt.Fprintf(b, " (grace %v)", r.Grace)
	}
	if r.Action == preempt.ActionShrink {
		fmt.Fprintf(b, ", stop %d task(s) on %s, %d left", len(r.Tasks), FormatPlacement(c, &gang.Placement{Claims: r.Claims}), r.Size)
	}
	fmt.Fprintf(b, ", loses %s", r.Lost)
	if !r.RestartFrom.IsZero() {
		fmt.Fprintf(b, ", restarts from %s", r.RestartFrom.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(b, ": %s\n", r.Reason)
}

// noteDomain records the health change of a whole domain (its hosts or
// its fabric's GPUs, already set in the ledger) for the next cycle's
// recovery plan, as one fault.
func (r *recovery) noteDomain(f preempt.Fault) { r.faults = append(r.faults, f) }

// keepFaults drops the faults noted since the last cycle that ok rejects
// (live changes: a domain whose hosts all left holds nothing to recover).
func (r *recovery) keepFaults(ok func(preempt.Fault) bool) {
	r.faults = slices.DeleteFunc(r.faults, func(f preempt.Fault) bool { return !ok(f) })
}

// faultHolds says whether fault f still names something of cluster c to
// recover: a network domain whose hosts all left holds nothing (and the
// recovery plan refuses a domain without hosts).
func faultHolds(c *topology.Cluster, f preempt.Fault) bool {
	return f.Domain == topology.NoDomain || c.DomainKindOf(f.Domain) == topology.KindFabric || len(c.DomainHostList(f.Domain)) > 0
}

// restoreFaults replaces the faults noted since the last cycle with
// faults (a restore: restoring the health noted a fault for every part
// that is not healthy).
func (r *recovery) restoreFaults(faults []preempt.Fault) { r.faults = slices.Clone(faults) }
