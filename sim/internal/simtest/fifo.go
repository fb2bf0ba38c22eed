// Package simtest holds small, naive schedulers for testing the
// simulator without the root Scheduler (they implement sim.Scheduler with
// the plainest rules that exercise every call), and the fixture builders
// the simulator's tests share: clusters, synthetic traces, runs.
package simtest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// FIFO is a best-effort FIFO scheduler: each cycle it walks the pending
// jobs by priority, then submission order (a stopped job keeps its place) and places
// every one that fits, task by task on the best-fit host. With Quota set,
// a queue never holds more GPUs than its quota. With Preempt set, a
// pending job that does not fit preempts the running jobs of lower
// priority, lowest first, newest first, until it would.
//
// After health changes, the next cycle recovers the running jobs on
// failed parts (requeue, or end once stopped by failures more than
// MaxRestarts times) and on draining ones (drain with DrainGrace).
type FIFO struct {
	c       *topology.Cluster
	led     *topology.Ledger
	seq     int
	pending []*entry // by priority (high first), then seq
	jobs    map[string]*entry
	used    map[string]int64
	health  bool // health changed since the last cycle
	// Quota caps the GPU milli each queue may hold; absent queues are
	// uncapped.
	Quota map[string]int64
	// Preempt enables priority preemption.
	Preempt bool
	// Grace is the grace period of preemptions.
	Grace time.Duration
	// MaxRestarts ends a job stopped by failures more often; 0: never.
	MaxRestarts int
	// DrainGrace is the grace period of drained jobs.
	DrainGrace time.Duration
}

type entry struct {
	job        workload.Job
	seq        int
	claims     []topology.Claim
	running    bool
	stopping   bool
	recovering bool
	restarts   int
}

// NewFIFO returns an empty FIFO scheduler of c.
func NewFIFO(c *topology.Cluster) *FIFO {
	return &FIFO{c: c, led: topology.NewLedger(c), jobs: map[string]*entry{}, used: map[string]int64{}}
}

// Submit queues the job.
func (f *FIFO) Submit(_ time.Duration, j workload.Job) error {
	if err := j.Validate(); err != nil {
		return err
	}
	if _, dup := f.jobs[j.ID]; dup {
		return fmt.Errorf("simtest: duplicate job %q", j.ID)
	}
	for _, g := range j.Groups {
		if g.MIGProfile != "" {
			return errors.New("simtest: MIG not supported")
		}
	}
	f.seq++
	e := &entry{job: j, seq: f.seq}
	f.jobs[j.ID] = e
	f.requeue(e)
	return nil
}

func (f *FIFO) requeue(e *entry) {
	k, _ := slices.BinarySearchFunc(f.pending, e, func(x, y *entry) int {
		if x.job.Priority != y.job.Priority {
			return int(y.job.Priority - x.job.Priority)
		}
		return x.seq - y.seq
	})
	f.pending = slices.Insert(f.pending, k, e)
}

// Schedule recovers jobs hit by health changes and places what fits.
func (f *FIFO) Schedule(now time.Duration) sim.Decision {
	var d sim.Decision
	if f.health {
		f.health = false
		d.Recoveries = f.recover()
	}
	failed := map[string]sim.Reason{}
	keep := f.pending[:0]
	for _, e := range f.pending {
		key := shapeKey(&e.job)
		why, seen := failed[key]
		if !seen {
			var ok bool
			ok, why = f.place(e)
			if ok {
				e.running = true
				d.Bindings = append(d.Bindings, sim.Binding{Job: e.job.ID, Claims: e.claims})
				continue
			}
			if why != sim.ReasonQuota {
				failed[key] = why
			}
			if f.Preempt && why != sim.ReasonQuota {
				d.Preemptions = append(d.Preemptions, f.victims(e)...)
			}
		}
		d.Pending = append(d.Pending, sim.Pending{Job: e.job.ID, Reason: why})
		keep = append(keep, e)
	}
	clear(f.pending[len(keep):])
	f.pending = keep
	return d
}

func shapeKey(j *workload.Job) string {
	return fmt.Sprint(j.Queue, j.Groups)
}

// place allocates every task of e or nothing.
func (f *FIFO) place(e *entry) (bool, sim.Reason) {
	dem := e.job.Demand()
	if q, ok := f.Quota[e.job.Queue]; ok && f.used[e.job.Queue]+dem.GPUMilli > q {
		return false, sim.ReasonQuota
	}
	e.claims = e.claims[:0]
	for gi := range e.job.Groups {
		g := &e.job.Groups[gi]
		for range g.Count {
			cl, ok := f.pick(g)
			if ok {
				ok = f.led.Allocate(cl) == nil
			}
			if !ok {
				if err := f.led.Release(e.claims...); err != nil {
					panic("simtest: undo failed: " + err.Error())
				}
				e.claims = nil
				if f.led.FreeMilli(f.c.Root()) < dem.GPUMilli {
					return false, sim.ReasonCapacity
				}
				return false, sim.ReasonFragmentation
			}
			e.claims = append(e.claims, cl)
		}
	}
	f.used[e.job.Queue] += dem.GPUMilli
	return true, 0
}

func (f *FIFO) models(g *workload.TaskGroup) []topology.ModelID {
	if len(g.Models) == 0 {
		return []topology.ModelID{topology.NoModel}
	}
	var ms []topology.ModelID
	for _, n := range g.Models {
		if m, ok := f.c.ModelByName(n); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

func (f *FIFO) fits(h topology.HostID, g *workload.TaskGroup) bool {
	return f.led.CPUFree(h) >= g.CPUMilli && f.led.MemoryFree(h) >= g.MemoryMiB
}

// pick chooses a host and GPUs for one task of g without allocating.
func (f *FIFO) pick(g *workload.TaskGroup) (topology.Claim, bool) {
	cl := topology.Claim{Host: topology.NoHost, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
	switch {
	case g.GPUs > 0:
		for _, m := range f.models(g) {
			f.led.AscendHosts(f.c.Root(), m, g.GPUs, func(h topology.HostID, _ int) bool {
				if !f.fits(h, g) {
					return true
				}
				cl.Host = h
				return false
			})
			if cl.Host != topology.NoHost {
				break
			}
		}
		if cl.Host == topology.NoHost {
			return cl, false
		}
		first, n := f.c.HostGPUs(cl.Host)
		for x := first; x < first+topology.GPUID(n) && len(cl.GPUs) < g.GPUs; x++ {
			if f.led.GPUIsFree(x) {
				cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: x, Kind: topology.ClaimWhole})
			}
		}
		return cl, true
	case g.GPUMilli > 0:
		for _, m := range f.models(g) {
			ms := []topology.ModelID{m}
			if m == topology.NoModel {
				ms = ms[:0]
				for k := range f.c.Models() {
					ms = append(ms, topology.ModelID(k))
				}
			}
			for _, mm := range ms {
				f.led.AscendSharedGPUs(mm, g.GPUMilli, func(x topology.GPUID, _ int) bool {
					if !f.fits(f.c.GPUHost(x), g) {
						return true
					}
					cl.Host = f.c.GPUHost(x)
					cl.GPUs = []topology.GPUClaim{{GPU: x, Kind: topology.ClaimShare, Milli: int32(g.GPUMilli)}}
					return false
				})
				if cl.Host != topology.NoHost {
					return cl, true
				}
			}
			whole := *g
			whole.GPUs, whole.GPUMilli = 1, 0
			if w, ok := f.pick(&whole); ok {
				w.GPUs[0].Kind, w.GPUs[0].Milli = topology.ClaimShare, int32(g.GPUMilli)
				return w, true
			}
		}
		return cl, false
	default:
		for h := range f.c.NumHosts() {
			hid := topology.HostID(h)
			if f.led.HostHealth(hid) == topology.Healthy && f.fits(hid, g) {
				cl.Host = hid
				return cl, true
			}
		}
		return cl, false
	}
}

// recover decides what to do with the running jobs on unhealthy parts.
func (f *FIFO) recover() []sim.Recovery {
	var out []sim.Recovery
	for _, id := range f.sortedIDs() {
		e := f.jobs[id]
		if !e.running || e.recovering {
			continue
		}
		worst := topology.Healthy
		for _, cl := range e.claims {
			worst = max(worst, f.led.HostHealth(cl.Host))
			for _, g := range cl.GPUs {
				worst = max(worst, f.led.GPU(g.GPU).Health)
			}
		}
		r := sim.Recovery{Job: id}
		switch {
		case worst == topology.Healthy:
			continue
		case worst == topology.Failed && f.MaxRestarts > 0 && e.restarts+1 > f.MaxRestarts:
			r.Action, r.Reason = sim.RecoverEnd, fmt.Sprintf("stopped by failures %d times", e.restarts+1)
		case worst == topology.Failed:
			r.Action, r.Reason = sim.RecoverRequeue, "failed"
		default:
			r.Action, r.Grace, r.Reason = sim.RecoverDrain, f.DrainGrace, "draining"
		}
		e.recovering = true
		out = append(out, r)
	}
	return out
}

// victims lists running jobs of lower priority than e to preempt, lowest
// priority first, then newest first, until their GPUs cover e's demand.
func (f *FIFO) victims(e *entry) []sim.Preemption {
	var cand []*entry
	for _, id := range f.sortedIDs() {
		r := f.jobs[id]
		if r.running && !r.stopping && !r.recovering && r.job.Priority < e.job.Priority && !r.job.NonPreemptible {
			cand = append(cand, r)
		}
	}
	slices.SortFunc(cand, func(a, b *entry) int {
		if a.job.Priority != b.job.Priority {
			return int(a.job.Priority - b.job.Priority)
		}
		return b.seq - a.seq
	})
	need := e.job.Demand().GPUMilli - f.led.FreeMilli(f.c.Root())
	var out []sim.Preemption
	for _, r := range cand {
		if need <= 0 {
			break
		}
		r.stopping = true
		need -= r.job.Demand().GPUMilli
		out = append(out, sim.Preemption{Job: r.job.ID, Grace: f.Grace, Reason: "priority"})
	}
	return out
}

func (f *FIFO) sortedIDs() []string {
	ids := make([]string, 0, len(f.jobs))
	for id := range f.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (f *FIFO) get(id string, running bool) (*entry, error) {
	e, ok := f.jobs[id]
	if !ok || e.running != running {
		return nil, fmt.Errorf("simtest: job %q unknown or in the wrong state", id)
	}
	return e, nil
}

// Started records nothing: FIFO allocates when it decides.
func (f *FIFO) Started(time.Duration, string) error { return nil }

func (f *FIFO) free(e *entry) error {
	if err := f.led.Release(e.claims...); err != nil {
		return err
	}
	f.used[e.job.Queue] -= e.job.Demand().GPUMilli
	e.claims, e.running, e.stopping, e.recovering = nil, false, false, false
	return nil
}

// Checkpointed checks that the job runs.
func (f *FIFO) Checkpointed(_ time.Duration, id string, _ time.Duration) error {
	_, err := f.get(id, true)
	return err
}

// Finished releases the job for good.
func (f *FIFO) Finished(_ time.Duration, id string) error {
	e, err := f.get(id, true)
	if err != nil {
		return err
	}
	delete(f.jobs, id)
	return f.free(e)
}

// Stopped releases the job and queues it again in its old place.
func (f *FIFO) Stopped(_ time.Duration, id string, cause sim.StopCause) error {
	e, err := f.get(id, true)
	if err != nil {
		return err
	}
	if cause == sim.StopFailure {
		e.restarts++
	}
	if err := f.free(e); err != nil {
		return err
	}
	f.requeue(e)
	return nil
}

// Removed forgets a running job (ended by a recovery).
func (f *FIFO) Removed(_ time.Duration, id string) error {
	e, err := f.get(id, true)
	if err != nil {
		return err
	}
	delete(f.jobs, id)
	return f.free(e)
}

// SetGPUHealth updates the ledger.
func (f *FIFO) SetGPUHealth(_ time.Duration, g topology.GPUID, h topology.Health) error {
	f.health = true
	return f.led.SetGPUHealth(g, h)
}

// SetHostHealth updates the ledger.
func (f *FIFO) SetHostHealth(_ time.Duration, h topology.HostID, hh topology.Health) error {
	f.health = true
	return f.led.SetHostHealth(h, hh)
}
