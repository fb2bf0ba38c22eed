package rootsched

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// served is one job's attained service under a queue.Demotion.
type served struct {
	id    string
	gpus  float64
	base  int32         // its submitted priority
	ran   time.Duration // running time of its finished runs
	since time.Duration // start of its current run
	level int
	idx   int // in demoter.running, -1 when not running
	// promoteAt is when a demoted waiting job is promoted back to level 0
	// by the starvation guard (0: not due).
	promoteAt time.Duration
}

// demoter runs a queue.Demotion for the Scheduler: it counts each job's
// running time from the host calls and, at the start of every cycle,
// sets the priority of each running job whose level changed to its base
// priority minus its level (waiting jobs attain nothing, so their level
// stays). After the cycle it asks the simulator, through Decision.Wake,
// for a cycle when the next running job's level changes.
type demoter struct {
	d       queue.Demotion
	jobs    map[string]*served
	running []*served // in start order, swap-removed: deterministic for a given call sequence
	// starveLimit is Tiresias' starvation guard (0: off): a demoted job
	// that has waited starveLimit × its last run since that run ended goes
	// back to level 0 with its attained service counted from zero.
	starveLimit float64
	starving    []*served // demoted waiting jobs with a promotion due, in stop order
}

// Demote makes the Scheduler lower the priority of jobs as they attain
// service under d (queue.LAS for Tiresias' 2D-LAS, queue.TimeSlice for
// Gandiva-style leases). Priority preemption within the queue
// (Preemptor("queue", …)) lets a job of a higher level preempt one of a
// lower level; without a Preemptor levels only order the waiting jobs.
// Call it before the simulation starts.
func (a *Scheduler) Demote(d queue.Demotion) {
	a.demote = &demoter{d: d, jobs: map[string]*served{}}
}

// StarveLimit turns on Tiresias' starvation guard (Gu et al., NSDI'19,
// §4.2, the STARVELIMIT knob) for the Demote policy: a job on a lower
// level that has waited k × the length of its last run since that run
// ended is promoted back to the top level (its base priority), its
// attained service counted from zero, so it is demoted again as it runs.
// k ≤ 0 turns it off (the default). Call it after Demote.
func (a *Scheduler) StarveLimit(k float64) {
	if a.demote != nil {
		a.demote.starveLimit = max(k, 0)
	}
}

func (m *demoter) submit(j *workload.Job) {
	m.jobs[j.ID] = &served{id: j.ID, gpus: float64(j.Demand().GPUMilli) / topology.MilliPerGPU, base: j.Priority, idx: -1}
}

func (m *demoter) started(now time.Duration, id string) {
	if j := m.jobs[id]; j != nil && j.idx < 0 {
		j.promoteAt = 0
		j.since = now
		j.idx = len(m.running)
		m.running = append(m.running, j)
	}
}

// stopped ends a job's run at now; gone drops the job.
func (m *demoter) stopped(now time.Duration, id string, gone bool) {
	j := m.jobs[id]
	if j == nil {
		return
	}
	if j.idx >= 0 {
		if m.starveLimit > 0 && !gone && j.level > 0 {
			j.promoteAt = now + max(time.Duration(m.starveLimit*float64(now-j.since)), time.Second)
			m.starving = append(m.starving, j)
		}
		j.ran += now - j.since
		last := m.running[len(m.running)-1]
		m.running[j.idx] = last
		last.idx = j.idx
		m.running = m.running[:len(m.running)-1]
		j.idx = -1
	}
	if gone {
		delete(m.jobs, id)
	}
}

// update sets the priorities of running jobs whose level changed by now,
// and promotes the starving jobs that are due.
func (m *demoter) update(a *Scheduler, now time.Duration) {
	if len(m.starving) > 0 {
		m.starving = slices.DeleteFunc(m.starving, func(j *served) bool {
			if j.promoteAt == 0 || m.jobs[j.id] != j {
				return true // started again, or ended
			}
			if j.promoteAt > now {
				return false
			}
			j.promoteAt, j.level, j.ran = 0, 0, 0
			_ = a.S.SetPriority(j.id, j.base) // as in the loop below
			return true
		})
	}
	for _, j := range m.running {
		if lv := m.d.Level(j.gpus, j.ran+now-j.since); lv != j.level {
			j.level = lv
			// The job is live (running): SetPriority cannot fail but for a
			// priority outside the configured classes, which leaves it be.
			_ = a.S.SetPriority(j.id, queue.DemotedPriority(j.base, lv))
		}
	}
}

// wake returns the earliest level change of the running jobs and of
// those d binds (they start at now), or 0.
func (m *demoter) wake(now time.Duration, d *sim.Decision) time.Duration {
	var at time.Duration
	consider := func(j *served, ran time.Duration, start time.Duration) {
		if next, ok := m.d.NextChange(j.gpus, ran); ok {
			if t := start + next; at == 0 || t < at {
				at = t
			}
		}
	}
	for _, j := range m.running {
		consider(j, j.ran+now-j.since, now)
	}
	for _, j := range m.starving {
		if j.promoteAt > now && (at == 0 || j.promoteAt < at) {
			at = j.promoteAt
		}
	}
	for _, b := range d.Bindings {
		if j := m.jobs[b.Job]; j != nil && j.idx < 0 {
			consider(j, j.ran, now)
		}
	}
	return at
}
