package rootsched

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// orderedJob is one live job under an Ordering.
type orderedJob struct {
	job   policy.Job
	since time.Duration // start of its current run
	idx   int           // in orderer.running, -1 when not running
	prio  int32         // the priority last set
	gone  bool          // ended: skipped if still listed in entered
}

// orderer runs a policy.Ordering for the Scheduler: it keeps what the
// ordering sees of each live job (attained service from the host calls),
// and at the start of every cycle sets the priorities the ordering gives
// the jobs that entered a queue since the last cycle and, for a
// policy.Reorderer, those of the running jobs that changed. The first
// error the ordering returns is kept (Err) and ends its calls.
type orderer struct {
	o       policy.Ordering
	re      policy.Reorderer  // o, when it reorders running jobs
	tr      policy.Tracker    // o, when it follows runs
	bound   map[string]string // job → the GPU model of its last binding, for tr
	jobs    map[string]*orderedJob
	running []*orderedJob // swap-removed: deterministic for a given call sequence
	entered []*orderedJob
	waiting int // live jobs not running
	err     error
	batch   []policy.Job // reused per call
}

// Order makes the Scheduler give jobs the priorities o sets (see
// policy.Ordering): at submission and requeue, and for a
// policy.Reorderer while they run. Priority preemption within the queue
// (Preemptor("queue", …)) lets a job o ranks higher preempt one it ranks
// lower. Call it before the simulation starts; OrderErr reports what the
// ordering failed with.
func (a *Scheduler) Order(o policy.Ordering) {
	r, _ := o.(policy.Reorderer)
	t, _ := o.(policy.Tracker)
	a.order = &orderer{o: o, re: r, tr: t, jobs: map[string]*orderedJob{}, bound: map[string]string{}}
}

// OrderErr returns the first error of the Order ordering, or nil.
func (a *Scheduler) OrderErr() error {
	if a.order == nil {
		return nil
	}
	return a.order.err
}

// CloseOrder releases what the Order ordering holds (policy.Closer: an
// external process), if anything; call it when the run ends.
func (a *Scheduler) CloseOrder() error {
	if a.order == nil {
		return nil
	}
	if c, ok := a.order.o.(policy.Closer); ok {
		return c.Close()
	}
	return nil
}

func (m *orderer) submit(now time.Duration, j *workload.Job) {
	o := &orderedJob{idx: -1, prio: j.Priority, job: policy.Job{ID: j.ID, Queue: j.Queue,
		GPUs: float64(j.Demand().GPUMilli) / topology.MilliPerGPU, Priority: j.Priority, Submit: now, Runtime: j.Runtime}}
	m.jobs[j.ID] = o
	m.entered = append(m.entered, o)
	m.waiting++
}

// bind records the GPU model of a binding's first GPU, for a Tracker.
func (m *orderer) bind(c *topology.Cluster, job string, claims []topology.Claim) {
	if m.tr == nil {
		return
	}
	model := ""
	for _, cl := range claims {
		if id := c.HostModel(cl.Host); len(cl.GPUs) > 0 && id >= 0 {
			model = c.Model(id).Model
			break
		}
	}
	m.bound[job] = model
}

func (m *orderer) started(now time.Duration, id string) {
	if m.tr != nil {
		m.tr.Started(now, id, m.bound[id])
		delete(m.bound, id)
	}
	if j := m.jobs[id]; j != nil && j.idx < 0 {
		m.waiting--
		j.since = now
		j.idx = len(m.running)
		j.job.Running = true
		m.running = append(m.running, j)
	}
}

// stopped ends a job's run at now; saved is the work its checkpoints
// kept. gone drops the job; otherwise it is back in its queue.
func (m *orderer) stopped(now time.Duration, id string, saved time.Duration, gone bool) {
	j := m.jobs[id]
	if j == nil {
		return
	}
	if j.idx >= 0 {
		j.job.Ran += now - j.since
		last := m.running[len(m.running)-1]
		m.running[j.idx] = last
		last.idx = j.idx
		m.running = m.running[:len(m.running)-1]
		j.idx = -1
		j.job.Running = false
		m.waiting++
	}
	j.job.Done = saved
	if gone && m.tr != nil {
		m.tr.Ended(now, id)
	}
	if gone {
		m.waiting--
		j.gone = true
		delete(m.jobs, id)
		return
	}
	m.entered = append(m.entered, j)
}

// update calls the ordering and sets the priorities it gives.
func (m *orderer) update(a *Scheduler, now time.Duration) {
	if m.err != nil {
		return
	}
	m.entered = slices.DeleteFunc(m.entered, func(j *orderedJob) bool { return j.gone })
	if len(m.entered) > 0 {
		m.batch = m.batch[:0]
		for _, j := range m.entered {
			m.batch = append(m.batch, j.job)
		}
		p, err := m.o.Enqueued(now, m.batch)
		if m.set(a, "Enqueued", m.entered, p, err) != nil {
			return
		}
		clear(m.entered)
		m.entered = m.entered[:0]
	}
	if m.re == nil || len(m.running) == 0 || m.waiting == 0 {
		return // running jobs' priorities matter only against waiting ones
	}
	m.batch = m.batch[:0]
	for _, j := range m.running {
		v := j.job
		v.Ran += now - j.since
		v.Done += now - j.since
		m.batch = append(m.batch, v)
	}
	p, err := m.re.Running(now, m.batch)
	m.set(a, "Running", m.running, p, err)
}

// set applies priorities p to jobs, or keeps the error.
func (m *orderer) set(a *Scheduler, call string, jobs []*orderedJob, p []int32, err error) error {
	switch {
	case err != nil:
		m.err = fmt.Errorf("ordering: %s: %w", call, err)
	case len(p) != len(jobs):
		m.err = fmt.Errorf("ordering: %s returned %d priorities for %d jobs", call, len(p), len(jobs))
	}
	if m.err != nil {
		return m.err
	}
	for i, j := range jobs {
		if p[i] == j.prio {
			continue
		}
		if err := a.S.SetPriority(j.job.ID, p[i]); err != nil {
			m.err = fmt.Errorf("ordering: job %s: priority %d: %w", j.job.ID, p[i], err)
			return m.err
		}
		j.prio = p[i]
	}
	return nil
}

// SRTF is shortest-remaining-time-first as a policy.Reorderer: a job's
// priority is minus its remaining time by its estimate (Runtime − Done,
// policy.Job.Remaining) in whole minutes, so with priority preemption a
// job that arrives with less work left than a running job has left
// preempts it, and a running job's priority rises as it runs. Minutes,
// not seconds, keep running jobs' priorities from changing at every
// cycle; remaining times above 2^22 minutes (8 years) tie. The trace's
// priority classes stay above it (priority × 2^22 first). Jobs without
// an estimate go last.
type SRTF struct{}

// srtfSpan is the range of remaining minutes one trace priority spans.
const srtfSpan = 1 << 22

// Enqueued gives each job its SRTF priority.
func (SRTF) Enqueued(_ time.Duration, jobs []policy.Job) ([]int32, error) {
	return srtfPriorities(jobs), nil
}

// Running gives each running job its SRTF priority.
func (SRTF) Running(_ time.Duration, jobs []policy.Job) ([]int32, error) {
	return srtfPriorities(jobs), nil
}

func srtfPriorities(jobs []policy.Job) []int32 {
	out := make([]int32, len(jobs))
	for i, j := range jobs {
		left := int64(srtfSpan - 1)
		if r, ok := j.Remaining(); ok {
			left = min(int64(math.Ceil(r.Minutes())), srtfSpan-1)
		}
		base := int64(max(min(j.Priority, 255), -256))
		out[i] = int32(base*srtfSpan - left)
	}
	return out
}
