package gpusched

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Decision is what one scheduling cycle decided: the host binds the
// bindings, carries out the preemptions, and reports back with Started,
// Preempted and the other events. It is the caller's: no later cycle
// writes its slices or what they point to, so it may be kept, shared
// with other goroutines or changed (changing it changes nothing in the
// Scheduler). Reasons may be shared between its Pending rows and with
// other Decisions: read them only. A host listing many waiting jobs every
// cycle may hand a Decision it is done with back (Scheduler.Recycle), so
// that a later cycle reuses its Pending array.
type Decision struct {
	// Now is the time the cycle ran at: Schedule's now, or the latest
	// time the Scheduler had seen if now was earlier.
	Now time.Time
	// Bindings are the jobs admitted this cycle, in admission order, each
	// with the exact GPUs of every task. Their resources are already held
	// in the Scheduler's ledger (the jobs are Admitted); the host starts
	// them and calls Started, or Requeue/Failed if it cannot.
	Bindings []Binding
	// Preemptions are running jobs to stop so that pending jobs can start
	// (empty unless a Preemptor is configured). The host stops each within
	// its grace period and calls Preempted.
	Preemptions []Preemption
	// Recoveries are what to do with jobs on GPUs and hosts that failed or
	// are draining since the last cycle (SetGPUHealth, SetHostHealth), in
	// job ID order: stop and Requeue them (they restart from their last
	// checkpoint), or stop and report Failed when they exhausted
	// Config.MaxRestarts.
	Recoveries []Recovery
	// Expired are the jobs admitted more than Config.AdmitTimeout ago and
	// never reported started, released at the start of this cycle (they
	// wait again and may be bound again below).
	Expired []Expiry
	// Migrations are running jobs to move so that gangs blocked by
	// fragmentation can start (empty unless Config.Defrag is set): the
	// host checkpoints each within its grace period, stops it and calls
	// Migrated; the job then binds on its destination.
	Migrations []Migration
	// Shrinks are elastic gangs to shrink so that pending jobs can start
	// (empty unless Config.Elastic is set): the host stops the listed
	// tasks within the grace period and calls Shrunk (see ElasticConfig).
	Shrinks []Shrink
	// Grows are shrunk elastic gangs extended with new tasks, already
	// held for them: the host starts the tasks and calls Grown.
	Grows []Grow
	// Pending lists every job still waiting, queue by queue (depth-first
	// order of the queue tree) and in queue order within each, with the
	// reason it waits.
	Pending []Pending
	// Stats are the cycle's figures (stats.go) when Config.Stats is set:
	// counts by cause and queue, each queue's GPUs, the GPUs
	// fragmentation strands. The caller's; nil without Config.Stats.
	Stats *CycleStats
}

// Binding is one admitted job and where each of its tasks runs.
type Binding struct {
	Job   string // the admitted job
	Queue string // its leaf queue
	// Placement holds one topology.Claim per task (host, CPU, memory and
	// the exact GPUs, share or MIG slot). It is the host's copy.
	Placement *gang.Placement
	// Borrowing is true when the job took its queue beyond its nominal
	// quota, using quota lent by other queues.
	Borrowing bool
	// Backfill is true when the job started ahead of a job holding a
	// reservation, which it cannot delay.
	Backfill bool
}

// Preemption asks the host to stop a job.
type Preemption struct {
	// Job is the victim; For the pending job it makes room for.
	Job string
	For string // the job the room is for
	// Grace is how long the victim has to checkpoint before its resources
	// must be released; not negative (a Preemptor's entry with a negative
	// Grace is dropped: see Preemptor).
	Grace time.Duration
	// Reason says why this victim, in words.
	Reason string
	// Shrink, if not nil, lists the tasks to stop of an elastic gang
	// above its minimum (the rest runs on): with Config.Elastic the
	// Scheduler reports it in Decision.Shrinks, not Preemptions. Without
	// it, or when the tasks are not ones the running gang may give back,
	// the Scheduler drops the entry (and so makes no nomination).
	Shrink []gang.TaskRef
}

// Pending is a job that waits, and why.
type Pending struct {
	Job   string // the waiting job
	Queue string // its leaf queue
	// State is Pending, Requeued or Preempted.
	State  queue.State
	Reason *Reason // why it waits; shared by jobs waiting for the same cause
}

// ReasonCode classifies why a job waits.
type ReasonCode uint8

// Reason codes.
const (
	// WaitQuota: admitting the job would exceed a quota of its queue or an
	// ancestor (Reason.Quota says which).
	WaitQuota ReasonCode = iota + 1
	// WaitQuotaHeld: the quota it needs is held for an earlier job of a
	// backfilling queue that is waiting for it (Reason.Blocker).
	WaitQuotaHeld
	// WaitCapacity: not enough free GPUs of an acceptable model anywhere;
	// on a cluster of several models, counting only hosts whose shape can
	// hold one of its tasks (the reason then names the models that can,
	// and the free GPUs on hosts too small or of a model it does not
	// accept: gang.Explanation's Shape fields).
	WaitCapacity
	// WaitTopology: enough free GPUs, but no domain at the required
	// topology level holds the whole gang.
	WaitTopology
	// WaitFragmentation: enough free GPUs, but spread so that the tasks do
	// not fit on the hosts.
	WaitFragmentation
	// WaitTooLarge: the gang needs more than any domain at its required
	// level has even when idle, with the cluster's current health.
	WaitTooLarge
	// WaitBackfill: the job fits now but would delay a job holding a
	// reservation (Reason.Blocker); it waits for a backfill window.
	WaitBackfill
	// WaitBehindHead: its queue is strict FIFO and an earlier job
	// (Reason.Blocker) cannot start.
	WaitBehindHead
	// WaitPreemption: victims are being preempted to make room for it.
	WaitPreemption
)

var reasonNames = [...]string{"", "quota", "quota-held", "capacity", "topology", "fragmentation", "too-large", "backfill-window", "behind-head", "preempting"}

// String returns a short name: "quota", "capacity", "topology", …
func (c ReasonCode) String() string {
	if int(c) < len(reasonNames) && c > 0 {
		return reasonNames[c]
	}
	return fmt.Sprintf("ReasonCode(%d)", uint8(c))
}

// Reason says why a job waits. It is structured data; String renders it
// for people. Jobs of one class waiting for the same cause share one
// *Reason; treat it as read-only.
type Reason struct {
	Code ReasonCode // the kind of wait
	// Quota is the quota that binds, for WaitQuota; for WaitCapacity, the
	// root quota block whose limit is the cluster's capacity, when that is
	// what stopped the job (queue.Block.Capacity), else nil.
	Quota *queue.Block
	// Placement is the placer's explanation, for the capacity, topology,
	// fragmentation and too-large codes (and WaitPreemption).
	Placement *gang.Explanation
	// Blocker is the job this one waits behind, for WaitQuotaHeld,
	// WaitBackfill, WaitBehindHead and WaitPreemption.
	Blocker string
	// Queue and Cause, for WaitBehindHead: the strict queue and why its
	// head (Blocker) waits.
	Queue string
	Cause ReasonCode // the head's own reason code
	// HeldQueue and HeldResource name the quota held for Blocker, for
	// WaitQuotaHeld.
	HeldQueue, HeldResource string
	// Until is the reserved start of Blocker, for WaitBackfill; with
	// UntilForever, Blocker waits for jobs without a runtime estimate.
	Until        time.Time
	UntilForever bool // Blocker waits for jobs without an estimate
	// Victims are the jobs being preempted for this one (WaitPreemption).
	Victims []string
	// Reserved is set when this job holds a reservation: the earliest time
	// it is expected to start, from the runtime estimates of running jobs.
	// ReservedForever means it can start only when jobs without an
	// estimate end. HoldsQuota means the quota it waits for is held for it
	// (later jobs may not take it).
	Reserved        time.Time
	ReservedForever bool // reserved, but only after jobs without an estimate end
	HoldsQuota      bool // the quota it waits for is held for it
	// Detail is extra text for rare cases.
	Detail string
	// ExplainedAt is when Placement was computed. The Scheduler does not
	// place a job again while nothing that could let it fit has changed
	// (no capacity returned where it could use it), and repeats the
	// explanation of that earlier cycle: then ExplainedAt is before
	// Decision.Now, and the free counts Placement quotes are those of
	// ExplainedAt (capacity taken since only makes the job fit less).
	ExplainedAt time.Time
}

// clone returns a deep copy of r (nil for nil): what Job hands out.
func (r *Reason) clone() *Reason {
	if r == nil {
		return nil
	}
	c := *r
	if r.Quota != nil {
		q := *r.Quota
		c.Quota = &q
	}
	if r.Placement != nil {
		x := *r.Placement
		c.Placement = &x
	}
	c.Victims = slices.Clone(r.Victims)
	return &c
}

// Stale reports whether r carries a placer explanation computed before
// now (see ExplainedAt).
func (r *Reason) Stale(now time.Time) bool {
	return r != nil && r.Placement != nil && !r.ExplainedAt.IsZero() && r.ExplainedAt.Before(now)
}

// String renders the reason on one line: "CODE: WHAT".
func (r *Reason) String() string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(r.Code.String())
	b.WriteString(": ")
	switch r.Code {
	case WaitQuota:
		if r.Quota != nil {
			b.WriteString(r.Quota.String())
		}
	case WaitQuotaHeld:
		fmt.Fprintf(&b, "%s quota of queue %s is held for %s", r.HeldResource, r.HeldQueue, r.Blocker)
	case WaitBackfill:
		if r.UntilForever {
			fmt.Fprintf(&b, "would take resources reserved for %s (which waits for jobs without a runtime estimate)", r.Blocker)
		} else {
			fmt.Fprintf(&b, "would delay %s, reserved to start at %s", r.Blocker, r.Until.UTC().Format(time.RFC3339))
		}
	case WaitBehindHead:
		fmt.Fprintf(&b, "behind %s in strict FIFO queue %s (%s)", r.Blocker, r.Queue, r.Cause)
	case WaitPreemption:
		if len(r.Victims) > 0 {
			fmt.Fprintf(&b, "preempting %d job(s) to make room: %v", len(r.Victims), r.Victims)
		} else {
			fmt.Fprintf(&b, "waiting for %s to be preempted", r.Blocker)
		}
	default:
		if r.Placement != nil {
			b.WriteString(explanationText(r.Placement))
		} else if r.Quota != nil {
			b.WriteString(r.Quota.String())
		}
	}
	if r.Detail != "" {
		if b.Len() > len(r.Code.String())+2 {
			b.WriteByte(' ')
		}
		b.WriteString(r.Detail)
	}
	if r.HoldsQuota {
		b.WriteString("; its quota is held for it")
	}
	if r.ReservedForever {
		b.WriteString("; reserved to start when jobs without a runtime estimate end")
	} else if !r.Reserved.IsZero() {
		b.WriteString("; reserved to start at " + r.Reserved.UTC().Format(time.RFC3339))
	}
	return b.String()
}

func placementReason(x *gang.Explanation, c *topology.Cluster, now time.Time) *Reason {
	r := &Reason{Placement: x, ExplainedAt: now}
	switch x.Verdict {
	case gang.VerdictCapacity:
		r.Code = WaitCapacity
	case gang.VerdictQuota:
		r.Code = WaitQuota
	case gang.VerdictTooLarge:
		r.Code = WaitTooLarge
	default:
		r.Code = WaitFragmentation
		if x.Level != c.LevelCluster() {
			r.Code = WaitTopology
		}
	}
	return r
}

// explanationText is x.String() without the "job ID: " prefix, since
// jobs of one class share the explanation.
func explanationText(x *gang.Explanation) string {
	s := x.String()
	if p := "job " + x.Job + ": "; strings.HasPrefix(s, p) {
		s = s[len(p):]
	}
	return s
}

// Format writes the decision as text, one line per binding, preemption and
// pending job, deterministic for the same decision; the form the scenario
// tests and `gpusched explain` print.
func (d *Decision) Format(c *topology.Cluster) string {
	var b strings.Builder
	for _, x := range d.Bindings {
		fmt.Fprintf(&b, "bind %s (%s)", x.Job, x.Queue)
		if x.Borrowing {
			b.WriteString(" borrowing")
		}
		if x.Backfill {
			b.WriteString(" backfill")
		}
		b.WriteString(": ")
		b.WriteString(FormatPlacement(c, x.Placement))
		b.WriteByte('\n')
	}
	for _, p := range d.Preemptions {
		fmt.Fprintf(&b, "preempt %s for %s (grace %v): %s\n", p.Job, p.For, p.Grace, p.Reason)
	}
	for _, m := range d.Migrations {
		ready := ""
		if m.Ready {
			ready = "; ready (start it there first)"
		}
		why := "for " + m.For
		if m.For == "" {
			why = "to consolidate"
		}
		fmt.Fprintf(&b, "migrate %s %s (grace %v): %s -> %s; loses %s since its last checkpoint%s\n", m.Job, why, m.Grace,
			FormatPlacement(c, &gang.Placement{Claims: m.From}), FormatPlacement(c, &gang.Placement{Claims: m.To}), m.Lost, ready)
	}
	formatResizes(&b, c, d)
	for i := range d.Recoveries {
		formatRecovery(&b, c, &d.Recoveries[i])
	}
	for _, x := range d.Expired {
		fmt.Fprintf(&b, "expire %s: %s\n", x.Job, x.Reason)
	}
	for _, p := range d.Pending {
		fmt.Fprintf(&b, "wait %s (%s", p.Job, p.Queue)
		if p.State != queue.Pending {
			b.WriteString(", " + p.State.String())
		}
		fmt.Fprintf(&b, ") %s", p.Reason)
		if p.Reason.Stale(d.Now) {
			fmt.Fprintf(&b, " [as explained at %s]", p.Reason.ExplainedAt.UTC().Format(time.RFC3339))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// FormatPlacement renders a placement compactly: hosts with the GPU
// indexes each task takes, e.g. "dgx01[0-3] dgx02[0-3]", shares as
// "dgx01[2]:500m" and MIG instances as "dgx01[0]:3g.40gb@4".
func FormatPlacement(c *topology.Cluster, p *gang.Placement) string {
	if p == nil {
		return "-"
	}
	var b strings.Builder
	for i, cl := range p.Claims {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.HostName(cl.Host))
		if len(cl.GPUs) == 0 {
			b.WriteString("[cpu]")
			continue
		}
		first, _ := c.HostGPUs(cl.Host)
		var idx []int
		for _, g := range cl.GPUs {
			idx = append(idx, int(g.GPU-first))
		}
		b.WriteString("[" + ranges(idx) + "]")
		switch g := cl.GPUs[0]; g.Kind {
		case topology.ClaimShare:
			fmt.Fprintf(&b, ":%dm", g.Milli)
		case topology.ClaimMIG:
			m := c.Model(c.GPU(g.GPU).Model)
			fmt.Fprintf(&b, ":%s@%d", m.MIGProfiles[g.Profile].Name, g.Start)
		}
	}
	return b.String()
}

// ranges renders ascending ints as "0-3,6".
func ranges(v []int) string {
	var b strings.Builder
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", v[i], v[j])
		} else {
			fmt.Fprintf(&b, "%d", v[i])
		}
		i = j + 1
	}
	return b.String()
}
