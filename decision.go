package gpusched

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// Decision is what one scheduling cycle decided: the host binds the
// bindings, carries out the preemptions, and reports back with Started,
// Preempted and the other events. It is a plain value; the Scheduler keeps
// no reference to it.
type Decision struct {
	// Now is the time the cycle ran at.
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
	// Pending lists every job still waiting, queue by queue (depth-first
	// order of the queue tree) and in queue order within each, with the
	// reason it waits.
	Pending []Pending
}

// Binding is one admitted job and where each of its tasks runs.
type Binding struct {
	Job   string
	Queue string
	// Placement holds one topology.Claim per task (host, CPU, memory and
	// the exact GPUs, share or MIG slot). It is owned by the Scheduler until
	// the job ends; read it, do not modify it.
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
	For string
	// Grace is how long the victim has to checkpoint before its resources
	// must be released.
	Grace time.Duration
	// Reason says why this victim, in words.
	Reason string
}

// Pending is a job that waits, and why.
type Pending struct {
	Job   string
	Queue string
	// State is Pending, Requeued or Preempted.
	State  queue.State
	Reason *Reason
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
	// WaitCapacity: not enough free GPUs of an acceptable model anywhere.
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

// Reason says why a job waits. Jobs of one class waiting for the same
// cause share one *Reason; treat it as read-only.
type Reason struct {
	Code ReasonCode
	// Message is one line for people.
	Message string
	// Quota is the quota that binds, for WaitQuota.
	Quota *queue.Block
	// Placement is the placer's explanation, for the capacity, topology,
	// fragmentation and too-large codes (and for a reserved job).
	Placement *gang.Explanation
	// Blocker is the job this one waits behind, for WaitQuotaHeld,
	// WaitBackfill, WaitBehindHead and WaitPreemption.
	Blocker string
	// Reserved is set when this job holds a reservation: the earliest time
	// it is expected to start, from the runtime estimates of running jobs.
	// ReservedForever means it can start only when jobs without an
	// estimate end.
	Reserved        time.Time
	ReservedForever bool
}

// String renders the reason on one line: "CODE: MESSAGE".
func (r *Reason) String() string {
	if r == nil {
		return "<nil>"
	}
	return r.Code.String() + ": " + r.Message
}

func placementReason(x *gang.Explanation, c *topology.Cluster) *Reason {
	r := &Reason{Placement: x, Message: explanationText(x)}
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
	for _, p := range d.Pending {
		fmt.Fprintf(&b, "wait %s (%s", p.Job, p.Queue)
		if p.State != queue.Pending {
			b.WriteString(", " + p.State.String())
		}
		fmt.Fprintf(&b, ") %s\n", p.Reason)
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
