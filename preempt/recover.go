package preempt

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// Fault is a change of health of part of the cluster: a GPU, a host, or
// every host of a domain (a ToR or spine switch, a multi-host NVLink
// domain). Build it with GPUFault, HostFault or DomainFault.
type Fault struct {
	// Exactly one of GPU, Host and Domain is set; the others hold
	// topology.NoGPU, NoHost and NoDomain.
	GPU    topology.GPUID
	Host   topology.HostID
	Domain topology.DomainID
	// Health is the new health: Failed (out of service now), Draining
	// (keeps what runs, takes nothing new; its jobs are moved off) or
	// Healthy (repaired: back in service).
	Health topology.Health
	// Reason is recorded in the actions, e.g. "Xid 79" or "ToR down".
	Reason string
}

// GPUFault returns a fault of GPU g.
func GPUFault(g topology.GPUID, h topology.Health, reason string) Fault {
	return Fault{GPU: g, Host: topology.NoHost, Domain: topology.NoDomain, Health: h, Reason: reason}
}

// HostFault returns a fault of host h.
func HostFault(h topology.HostID, hh topology.Health, reason string) Fault {
	return Fault{GPU: topology.NoGPU, Host: h, Domain: topology.NoDomain, Health: hh, Reason: reason}
}

// DomainFault returns a fault of every host (or, for a fabric domain,
// every GPU) of domain d.
func DomainFault(d topology.DomainID, h topology.Health, reason string) Fault {
	return Fault{GPU: topology.NoGPU, Host: topology.NoHost, Domain: d, Health: h, Reason: reason}
}

// RecoveryConfig configures Recover. The zero value is valid.
type RecoveryConfig struct {
	// DrainGrace is how long a job on a draining part gets to checkpoint
	// before it stops; 0 means 2 minutes. Job.Grace overrides it.
	DrainGrace time.Duration
	// KeepIfEndsWithin lets a job on a draining part run on when its
	// estimated end (Job.End) is at most this far from now; 0 stops every
	// drained job.
	KeepIfEndsWithin time.Duration
	// MaxRestarts ends a job as failed once it has been stopped by
	// failures more than this many times (Job.Restarts counts the earlier
	// ones); 0 means no limit.
	MaxRestarts int
	// NoShrink stops an elastic gang whole even when only members above
	// its minimum are hit. A job with Stopping set (already asked to stop,
	// shrink or grow) is always stopped whole: a second resize would race
	// the one in flight.
	NoShrink bool
}

// Action is what a recovery plan does with an affected job.
type Action uint8

// Actions.
const (
	// ActionRequeue: stop the job now (its GPUs failed; no grace) and
	// queue it again; it restarts from its last checkpoint.
	ActionRequeue Action = iota + 1
	// ActionDrain: signal the job, give it Grace to checkpoint, stop it
	// and queue it again.
	ActionDrain
	// ActionShrink: stop only the tasks hit (members of an elastic gang
	// above its minimum); the rest runs on.
	ActionShrink
	// ActionKeep: the job runs on (it is on a draining part and ends
	// before the drain deadline).
	ActionKeep
	// ActionEnd: stop the job and end it as failed (Reason says why).
	ActionEnd
)

var actionNames = [...]string{"", "requeue", "drain", "shrink", "keep", "end"}

// String returns the action's short name.
func (a Action) String() string {
	if int(a) < len(actionNames) && a > 0 {
		return actionNames[a]
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Recovery is what to do with one job hit by faults.
type Recovery struct {
	Job    string
	Action Action
	// Tasks lists the tasks to stop for ActionShrink, in placement order.
	Tasks []gang.TaskRef
	// Claims is what the job releases (all its claims, or the stopped
	// tasks'; none for ActionKeep). Shared with its Placement.
	Claims []topology.Claim
	// Grace is the time between SIGTERM and release (0 for failures).
	Grace time.Duration
	// Lost is the GPU time lost: the work since its last checkpoint (of
	// the stopped tasks for a shrink). A drained job that checkpoints in
	// its grace period loses less.
	Lost GPUTime
	// RestartFrom is the checkpoint it restarts from; zero means from the
	// beginning.
	RestartFrom time.Time
	// Reason says what hit it, e.g. "GPU dgx01/gpu3 failed (Xid 79)".
	Reason string
}

// HealthChange is a health to set on the ledger: of a GPU (Host is
// NoHost) or of a host (GPU is NoGPU).
type HealthChange struct {
	GPU    topology.GPUID
	Host   topology.HostID
	Health topology.Health
}

// RecoveryPlan is what Recover decided: the health to set so that failed
// and draining parts take no new work (until a later plan repairs them),
// and an action for every job the faults hit.
type RecoveryPlan struct {
	// Health lists the changes, hosts (ascending) then GPUs (ascending),
	// one per part, the last fault given for a part winning.
	Health []HealthChange
	// Actions has one entry per affected job, in job ID order.
	Actions []Recovery
	// Lost is the GPU time lost by all actions.
	Lost GPUTime
}

// ErrFault is the sentinel of errors about bad faults.
var ErrFault = errors.New("preempt: bad fault")

// Recover plans the recovery from faults at time now: the health changes
// and, for every job holding a task on a failed or draining part, an
// action. A job on a failed part is requeued from its last checkpoint (or
// ended once it has exhausted cfg.MaxRestarts); one on a draining part is
// drained with a grace period (or kept when it ends soon); an elastic gang
// hit only above its minimum is shrunk (unless cfg.NoShrink, or the job
// is Stopping). Repairs (Healthy) change health
// only. No job is lost: every affected job gets exactly one action, and a
// job that ends has a Reason.
//
// It returns an error naming the fault (faults[i]) for a fault with no or
// several targets, an out-of-range target or an unknown health. The
// Snapshot is only read. O(jobs × claims + hosts and GPUs faulted).
func Recover(snap Snapshot, faults []Fault, now time.Time, cfg RecoveryConfig) (*RecoveryPlan, error) {
	l := snap.Ledger()
	c := l.Cluster()
	if cfg.DrainGrace < 0 || cfg.KeepIfEndsWithin < 0 || cfg.MaxRestarts < 0 {
		return nil, fmt.Errorf("%w: negative RecoveryConfig value", ErrFault)
	}
	if cfg.DrainGrace == 0 {
		cfg.DrainGrace = 2 * time.Minute
	}
	// Resolve faults to parts; the last fault of a part wins.
	hostH := map[topology.HostID]int{} // → index in faults
	gpuH := map[topology.GPUID]int{}
	var gpus []topology.GPUID // the keys of gpuH, in first-seen order
	setGPU := func(g topology.GPUID, i int) {
		if _, ok := gpuH[g]; !ok {
			gpus = append(gpus, g)
		}
		gpuH[g] = i
	}
	for i, f := range faults {
		set := 0
		if f.GPU != topology.NoGPU {
			set++
		}
		if f.Host != topology.NoHost {
			set++
		}
		if f.Domain != topology.NoDomain {
			set++
		}
		switch {
		case set != 1:
			return nil, fmt.Errorf("%w: faults[%d]: %d targets set (want exactly one of GPU, Host, Domain)", ErrFault, i, set)
		case f.Health > topology.Failed:
			return nil, fmt.Errorf("%w: faults[%d]: unknown health %d", ErrFault, i, f.Health)
		case f.GPU != topology.NoGPU && (f.GPU < 0 || int(f.GPU) >= c.NumGPUs()):
			return nil, fmt.Errorf("%w: faults[%d]: GPU %d out of range 0..%d", ErrFault, i, f.GPU, c.NumGPUs()-1)
		case f.Host != topology.NoHost && (f.Host < 0 || int(f.Host) >= c.NumHosts()):
			return nil, fmt.Errorf("%w: faults[%d]: host %d out of range 0..%d", ErrFault, i, f.Host, c.NumHosts()-1)
		case f.Domain != topology.NoDomain && (f.Domain < 0 || int(f.Domain) >= c.NumDomains()):
			return nil, fmt.Errorf("%w: faults[%d]: domain %d out of range 0..%d", ErrFault, i, f.Domain, c.NumDomains()-1)
		}
		switch {
		case f.GPU != topology.NoGPU:
			setGPU(f.GPU, i)
		case f.Host != topology.NoHost:
			hostH[f.Host] = i
		default:
			d := f.Domain
			if c.DomainKindOf(d) == topology.KindFabric {
				for _, g := range c.DomainGPUs(d) {
					setGPU(g, i)
				}
				break
			}
			hosts := c.DomainHostList(d)
			if len(hosts) == 0 {
				return nil, fmt.Errorf("%w: faults[%d]: domain %s holds no host (use a network, host or fabric domain)", ErrFault, i, c.DomainName(d))
			}
			for _, h := range hosts {
				hostH[h] = i
			}
		}
	}
	plan := &RecoveryPlan{}
	for h := topology.HostID(0); int(h) < c.NumHosts() && len(hostH) > 0; h++ {
		if i, ok := hostH[h]; ok {
			plan.Health = append(plan.Health, HealthChange{GPU: topology.NoGPU, Host: h, Health: faults[i].Health})
		}
	}
	slices.Sort(gpus)
	for _, g := range gpus {
		plan.Health = append(plan.Health, HealthChange{GPU: g, Host: topology.NoHost, Health: faults[gpuH[g]].Health})
	}
	// The fault hitting a task: the worst of its host's and its GPUs'.
	hit := func(cl *topology.Claim) (topology.Health, int) {
		worst, by := topology.Healthy, -1
		if i, ok := hostH[cl.Host]; ok && faults[i].Health != topology.Healthy {
			worst, by = faults[i].Health, i
		}
		for _, g := range cl.GPUs {
			if i, ok := gpuH[g.GPU]; ok && faults[i].Health > worst {
				worst, by = faults[i].Health, i
			}
		}
		return worst, by
	}
	nowNano := now.UnixNano()
	snap.Jobs(func(j *Job) bool {
		if j.Placement == nil || j.Spec == nil {
			return true
		}
		p := j.Placement
		worst, by := topology.Healthy, -1
		var tasks []int
		failed := false
		for ci := range p.Claims {
			h, i := hit(&p.Claims[ci])
			if h == topology.Healthy {
				continue
			}
			tasks = append(tasks, ci)
			if h > worst {
				worst, by = h, i
			}
			failed = failed || h == topology.Failed
		}
		if worst == topology.Healthy {
			return true
		}
		from := int64(0)
		var restart time.Time
		if !j.Started.IsZero() {
			from = j.Started.UnixNano()
			if cp := j.lastCheckpoint(now); !cp.IsZero() {
				from = cp.UnixNano()
				restart = cp
			}
		}
		lost := func(claims []topology.Claim) GPUTime {
			if j.Started.IsZero() {
				return 0
			}
			return lostNanos(claimsMilli(c, claims), from, nowNano)
		}
		rec := Recovery{Job: j.Spec.ID, RestartFrom: restart, Reason: faultText(c, faults[by])}
		shrinkable := !cfg.NoShrink && !j.Stopping && len(tasks) < len(p.Claims) && withinExcess(j, tasks)
		switch {
		case failed && cfg.MaxRestarts > 0 && j.Restarts+1 > cfg.MaxRestarts:
			rec.Action, rec.Claims = ActionEnd, p.Claims
			rec.Lost = lost(p.Claims)
			rec.Reason += fmt.Sprintf("; stopped by failures %d times, more than the %d allowed", j.Restarts+1, cfg.MaxRestarts)
			rec.RestartFrom = time.Time{}
		case shrinkable:
			rec.Action = ActionShrink
			for _, ci := range tasks {
				rec.Tasks = append(rec.Tasks, p.Tasks[ci])
				rec.Claims = append(rec.Claims, p.Claims[ci])
			}
			rec.Lost = lost(rec.Claims)
			if !failed {
				rec.Grace = graceOf(j, cfg.DrainGrace)
			}
		case failed:
			rec.Action, rec.Claims = ActionRequeue, p.Claims
			rec.Lost = lost(p.Claims)
		case cfg.KeepIfEndsWithin > 0 && !j.End.IsZero() && !j.End.After(now.Add(cfg.KeepIfEndsWithin)):
			rec.Action = ActionKeep
			rec.Reason += fmt.Sprintf("; ends by %s, within the drain deadline", j.End.UTC().Format(time.RFC3339))
		default:
			rec.Action, rec.Claims = ActionDrain, p.Claims
			rec.Grace = graceOf(j, cfg.DrainGrace)
			rec.Lost = lost(p.Claims)
		}
		plan.Lost += rec.Lost
		plan.Actions = append(plan.Actions, rec)
		return true
	})
	slices.SortFunc(plan.Actions, func(a, b Recovery) int { return strings.Compare(a.Job, b.Job) })
	return plan, nil
}

func graceOf(j *Job, def time.Duration) time.Duration {
	if j.Grace > 0 {
		return j.Grace
	}
	return def
}

// withinExcess reports whether stopping the claims tasks of j leaves every
// group at or above its minimum.
func withinExcess(j *Job, tasks []int) bool {
	p := j.Placement
	left := slices.Clone(p.Placed)
	for _, ci := range tasks {
		left[p.Tasks[ci].Group]--
	}
	for g, k := range left {
		if k < j.Spec.Groups[g].Min() {
			return false
		}
	}
	return true
}

func faultText(c *topology.Cluster, f Fault) string {
	var what string
	switch {
	case f.GPU != topology.NoGPU:
		what = "GPU " + c.GPUName(f.GPU)
	case f.Host != topology.NoHost:
		what = "host " + c.HostName(f.Host)
	default:
		what = c.LevelName(c.Domain(f.Domain).Level) + " " + c.DomainName(f.Domain)
		if c.DomainKindOf(f.Domain) == topology.KindFabric {
			what = "fabric " + c.DomainName(f.Domain)
		}
	}
	s := what + " " + f.Health.String()
	if f.Reason != "" {
		s += " (" + f.Reason + ")"
	}
	return s
}

// ApplyHealth sets the plan's health changes on l, in order. It stops at
// the first error.
func (p *RecoveryPlan) ApplyHealth(l *topology.Ledger) error {
	for _, h := range p.Health {
		var err error
		if h.Host != topology.NoHost {
			err = l.SetHostHealth(h.Host, h.Health)
		} else {
			err = l.SetGPUHealth(h.GPU, h.Health)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Action returns the action for job id.
func (p *RecoveryPlan) Action(id string) (*Recovery, bool) {
	i, ok := slices.BinarySearchFunc(p.Actions, id, func(r Recovery, id string) int { return strings.Compare(r.Job, id) })
	if !ok {
		return nil, false
	}
	return &p.Actions[i], true
}
