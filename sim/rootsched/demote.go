package rootsched

import (
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

func (m *demoter) submit(j *workload.Job) {
	m.jobs[j.ID] = &served{id: j.ID, gpus: float64(j.Demand().GPUMilli) / topology.MilliPerGPU, base: j.Priority, idx: -1}
}

func (m *demoter) started(now time.Duration, id string) {
	if j := m.jobs[id]; j != nil && j.idx < 0 {
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

// update sets the priorities of running jobs whose level changed by now.
func (m *demoter) update(a *Scheduler, now time.Duration) {
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
	for _, b := range d.Bindings {
		if j := m.jobs[b.Job]; j != nil && j.idx < 0 {
			consider(j, j.ran, now)
		}
	}
	return at
}
