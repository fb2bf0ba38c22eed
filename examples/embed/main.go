// Command embed is a host embedding gpusched: the loop a platform team
// writes around the library, over an in-memory cluster of four DGX H100
// hosts in two ToRs (32 GPUs), with the jobs themselves simulated by a
// clock. It prints a readable log of one working day:
//
//	09:00  jobs are submitted; Schedule binds them to exact GPUs; the host
//	       starts them and reports Started; they report checkpoints.
//	10:10  a GPU fails. The host reports it (SetGPUHealth); the next
//	       Decision's Recoveries say to stop the job on it and requeue it
//	       from its last checkpoint; the host does (Requeue). The job waits
//	       — its gang needs a whole ToR — until the GPU is repaired at 11:30
//	       and restarts from the checkpoint, its lost work counted.
//	12:05  an urgent high-priority job arrives on the full cluster. The
//	       Preemptor (gpusched.PlanPreemptor, package preempt) picks the
//	       cheapest victims: jobs that checkpoint often lose little, the
//	       restarted gang is inside its minimum run time, and a job without
//	       checkpoints would lose its whole run. The host signals them, they
//	       checkpoint within their grace period and stop (Preempted); the
//	       urgent job binds to the room they left; the victims wait in their
//	       queue with their progress kept and resume when it ends.
//	13:30  the host process restarts: it saves the Scheduler's state
//	       (package snapshot) and loads it into a fresh Scheduler, which
//	       carries on with the day exactly as the old one would have.
//	14:00  a fifth host joins the second ToR, live (Scheduler.AddHosts): a
//	       new cluster version, every existing ID kept, nothing rebuilt.
//	14:30  a quota edit (Scheduler.Reconfigure): "ml" gets a 32-GPU
//	       guarantee and a new queue "interactive" 8; the running jobs
//	       stay, and a notebook submitted to the new queue starts at once.
//
//	go run ./examples/embed
//
// The library does no I/O, starts no goroutines and reads no clock: every
// time below is the host's. The host's duties are the ones package
// gpusched's documentation lists: report events, call Schedule, carry out
// the Decision, report back.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/snapshot"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// job is the host's record of one job: the work it needs, the work it has
// saved by checkpoints, and its current run.
type job struct {
	spec     workload.Job
	work     time.Duration // total work at full speed
	saved    time.Duration // work kept by checkpoints of earlier runs
	started  time.Time     // start of the current run; zero when not running
	ckpt     time.Time     // last checkpoint of the current run (or its start)
	stopAt   time.Time     // when a signalled job will have checkpointed and stopped
	runs     int
	lost     time.Duration // GPU time lost to failures and preemptions
	finished time.Time
}

// remaining is the work left once the current run's checkpoints are kept.
func (j *job) remaining() time.Duration { return j.work - j.saved - j.ckpt.Sub(j.started) }

// restart is what a host does across a restart of its process: it saves
// the Scheduler's state (snapshot.Capture, then Encode: the bytes a real
// host writes to disk after its cycles), and the new process loads it
// into a fresh Scheduler (snapshot.Load, with the host's Preemptor) and
// carries on; the events after the save would be replayed. The rest of
// the day goes as it would have without the restart.
func (h *host) restart() error {
	st, err := snapshot.Capture(h.s, h.now, snapshot.CaptureOptions{})
	if err != nil {
		return err
	}
	var file bytes.Buffer
	if err := snapshot.Encode(&file, st, "state.yaml"); err != nil {
		return err
	}
	l, err := snapshot.Load(file.Bytes(), "state.yaml", snapshot.Options{Preemptor: h.cfg.Preemptor})
	if err != nil {
		return err
	}
	h.logf("RESTART  the host restarts: state saved (%d bytes, %d jobs) and loaded into a fresh Scheduler", file.Len(), l.Scheduler.Len())
	h.s = l.Scheduler
	return nil
}

// event is a scripted thing that happens to the cluster.
type event struct {
	at time.Time
	do func(h *host) error
}

// host is the program's side of the embedding loop.
type host struct {
	w     io.Writer
	s     *gpusched.Scheduler
	c     *topology.Cluster
	cfg   gpusched.Config // what s was built with (for its saved state)
	order []string        // job IDs in order of submission
	now   time.Time
	jobs  map[string]*job
	said  map[string]string // last pending reason printed per job
}

func (h *host) logf(format string, args ...any) {
	fmt.Fprintf(h.w, "%s  %s\n", h.now.Format("15:04"), fmt.Sprintf(format, args...))
}

// ids returns the job IDs in order, so the host acts deterministically.
func (h *host) ids() []string {
	ids := make([]string, 0, len(h.jobs))
	for id := range h.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// submit hands a job to the Scheduler.
func (h *host) submit(spec workload.Job) error {
	if err := h.s.Submit(spec, h.now); err != nil {
		return err
	}
	h.order = append(h.order, spec.ID)
	h.jobs[spec.ID] = &job{spec: spec, work: spec.Runtime}
	var shape []string
	for _, g := range spec.Groups {
		shape = append(shape, fmt.Sprintf("%d×%d GPUs", g.Count, g.GPUs))
	}
	extra := ""
	if len(spec.Topology) > 0 {
		extra += " in one " + spec.Topology[0].Level
	}
	if spec.CheckpointInterval > 0 {
		extra += fmt.Sprintf(", checkpoints every %s", short(spec.CheckpointInterval))
	} else {
		extra += ", no checkpoints"
	}
	if spec.MinRunTime > 0 {
		extra += fmt.Sprintf(", min run time %s", short(spec.MinRunTime))
	}
	h.logf("submit   %-9s priority %d, %s%s, %s of work", spec.ID, spec.Priority, strings.Join(shape, " + "), extra, short(spec.Runtime))
	return nil
}

// next returns the time of the next thing that happens on its own: a
// checkpoint, the end of a job, a signalled job stopping.
func (h *host) next() (time.Time, bool) {
	var t time.Time
	found := false
	consider := func(at time.Time) {
		if !found || at.Before(t) {
			t, found = at, true
		}
	}
	for _, id := range h.ids() {
		j := h.jobs[id]
		if j.started.IsZero() {
			continue
		}
		if !j.stopAt.IsZero() {
			consider(j.stopAt)
			continue
		}
		consider(j.ckpt.Add(j.remaining()))
		if iv := j.spec.CheckpointInterval; iv > 0 {
			consider(j.ckpt.Add(iv))
		}
	}
	return t, found
}

// advance handles what happens at h.now: jobs that stop after their
// grace, checkpoints, and jobs that finish. It reports whether anything
// changed that calls for a cycle.
func (h *host) advance() (bool, error) {
	changed := false
	for _, id := range h.ids() {
		j := h.jobs[id]
		if j.started.IsZero() {
			continue
		}
		switch {
		case !j.stopAt.IsZero() && !j.stopAt.After(h.now):
			// The signalled job wrote its checkpoint and stopped.
			if err := h.checkpoint(id, j); err != nil {
				return false, err
			}
			if err := h.s.Preempted(id, h.now); err != nil {
				return false, err
			}
			h.stop(j)
			h.logf("stopped  %-9s checkpointed and released its GPUs; %s of work left, back in its queue", id, short(j.work-j.saved))
			changed = true
		case j.stopAt.IsZero() && !j.ckpt.Add(j.remaining()).After(h.now):
			if err := h.s.Finished(id, h.now); err != nil {
				return false, err
			}
			j.started, j.finished = time.Time{}, h.now
			h.logf("finish   %-9s", id)
			changed = true
		case j.stopAt.IsZero() && j.spec.CheckpointInterval > 0 && !j.ckpt.Add(j.spec.CheckpointInterval).After(h.now):
			if err := h.checkpoint(id, j); err != nil {
				return false, err
			}
		}
	}
	return changed, nil
}

// checkpoint records a checkpoint of a running job at h.now and reports
// it to the Scheduler.
func (h *host) checkpoint(id string, j *job) error {
	j.ckpt = h.now
	return h.s.Checkpointed(id, h.now, h.now)
}

// stop ends the current run, keeping the work saved by its checkpoints.
func (h *host) stop(j *job) {
	j.saved += j.ckpt.Sub(j.started)
	j.started, j.stopAt = time.Time{}, time.Time{}
}

// cycle runs Schedule and carries out the Decision; when it stopped jobs
// hit by a fault, it runs Schedule again so they are considered at once.
func (h *host) cycle() error {
	for {
		again, err := h.cycleOnce()
		if err != nil || !again {
			return err
		}
	}
}

func (h *host) cycleOnce() (again bool, err error) {
	d := h.s.Schedule(h.now)
	// Faults first: jobs on failed GPUs stop now and wait again, from
	// their last checkpoint.
	for _, r := range d.Recoveries {
		j := h.jobs[r.Job]
		switch r.Action {
		case preempt.ActionRequeue, preempt.ActionDrain:
			// (A drain would first signal the job and wait r.Grace for
			// a checkpoint; this host's only fault is a failed GPU.)
			j.lost += time.Duration(float64(j.spec.GPUs()) * float64(h.now.Sub(j.ckpt)))
			h.stop(j)
			if err := h.s.Requeue(r.Job, h.now); err != nil {
				return false, err
			}
			h.logf("recover  %-9s %s: stopped and requeued; restarts from its %s checkpoint, %s lost (%s)",
				r.Job, r.Action, r.RestartFrom.Format("15:04"), r.Lost, r.Reason)
			again = true
		case preempt.ActionEnd:
			h.stop(j)
			if err := h.s.Failed(r.Job, h.now); err != nil {
				return false, err
			}
			h.logf("recover  %-9s ended: %s", r.Job, r.Reason)
			again = true
		default:
			h.logf("recover  %-9s %s: %s", r.Job, r.Action, r.Reason)
		}
	}
	for _, b := range d.Bindings {
		// A real host binds each task to b.Placement.Claims[i] here (the
		// exact GPUs), starts it, and then reports Started.
		if err := h.s.Started(b.Job, h.now); err != nil {
			return false, err
		}
		j := h.jobs[b.Job]
		j.started, j.ckpt, j.runs = h.now, h.now, j.runs+1
		from := ""
		if j.saved > 0 {
			from = fmt.Sprintf(", resuming with %s of work done", short(j.saved))
		}
		h.logf("start    %-9s on %s%s", b.Job, gpusched.FormatPlacement(h.c, b.Placement), from)
		delete(h.said, b.Job)
	}
	for _, p := range d.Preemptions {
		// SIGTERM: the job checkpoints (a minute here, within its grace
		// period) and stops; the host then reports Preempted.
		j := h.jobs[p.Job]
		j.stopAt = h.now.Add(min(time.Minute, p.Grace))
		h.logf("preempt  %-9s for %s, grace %s: %s", p.Job, p.For, short(p.Grace), p.Reason)
	}
	for _, p := range d.Pending {
		if r := p.Reason.String(); h.said[p.Job] != r {
			h.said[p.Job] = r
			h.logf("wait     %-9s %s", p.Job, r)
		}
	}
	return again, nil
}

// loop runs the host until nothing is left to happen: scripted events,
// the jobs' own progress, and a cycle after every change.
func (h *host) loop(script []event) error {
	if err := h.cycle(); err != nil {
		return err
	}
	for {
		t, ok := h.next()
		if len(script) > 0 && (!ok || !script[0].at.After(t)) {
			t, ok = script[0].at, true
		}
		if !ok {
			return nil
		}
		h.now = t
		changed, err := h.advance()
		if err != nil {
			return err
		}
		for len(script) > 0 && !script[0].at.After(h.now) {
			if err := script[0].do(h); err != nil {
				return err
			}
			script = script[1:]
			changed = true
		}
		if changed {
			if err := h.cycle(); err != nil {
				return err
			}
		}
	}
}

// short renders a duration without zero minutes and seconds: "6h",
// "1h30m", "15m".
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func run(w io.Writer) error { return day(w, true) }

// day is the working day, with or without the 13:30 restart.
func day(w io.Writer, restart bool) error {
	// The cluster: 4 DGX H100 hosts, 2 per ToR switch.
	spec, err := topology.Generator{Name: "lab", Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2}.Spec()
	if err != nil {
		return err
	}
	c, err := topology.Build(spec)
	if err != nil {
		return err
	}
	// The Scheduler: one queue, the topology-aware placer (the default),
	// and the preemption planner with a 5-minute grace period.
	p, err := gpusched.NewPlanPreemptor(preempt.Config{Grace: 5 * time.Minute}, 0)
	if err != nil {
		return err
	}
	cfg := gpusched.Config{
		Cluster:   c,
		Queues:    queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "ml", Policy: queue.Policy{Ordering: queue.BestEffortFIFO}}}}},
		Preemptor: p,
	}
	s, err := gpusched.New(cfg)
	if err != nil {
		return err
	}
	t0 := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	h := &host{w: w, s: s, c: c, cfg: cfg, now: t0, jobs: map[string]*job{}, said: map[string]string{}}
	fmt.Fprintf(w, "cluster %s: %d DGX H100 hosts in 2 ToRs, %d GPUs; one queue; preemption by gpusched.PlanPreemptor\n\n", c.Name(), c.NumHosts(), c.NumGPUs())

	gpus := func(id string, prio int32, count, n int, work, ckpt time.Duration) workload.Job {
		return workload.Job{ID: id, Queue: "ml", Priority: prio, Runtime: work, CheckpointInterval: ckpt,
			Groups: []workload.TaskGroup{{Count: count, GPUs: n}}}
	}
	pretrain := gpus("pretrain", 0, 2, 8, 6*time.Hour, 30*time.Minute)
	pretrain.Topology = []workload.Constraint{{Level: "tor", Required: true}}
	pretrain.MinRunTime = time.Hour
	first := []workload.Job{
		pretrain,
		gpus("finetune", 0, 1, 4, 2*time.Hour, 20*time.Minute),
		gpus("eval", 0, 1, 4, time.Hour, 0),
	}
	for i := 1; i <= 4; i++ {
		first = append(first, gpus(fmt.Sprintf("sweep-%d", i), 0, 1, 2, 4*time.Hour, 15*time.Minute))
	}
	for _, j := range first {
		if err := h.submit(j); err != nil {
			return err
		}
	}

	// The GPU of pretrain's second host that fails at 10:10.
	var failed topology.GPUID
	script := []event{
		{t0.Add(70 * time.Minute), func(h *host) error {
			st, _ := h.s.Job("pretrain")
			failed = st.Placement.Claims[1].GPUs[3].GPU
			affected, err := h.s.SetGPUHealth(failed, topology.Failed)
			if err != nil {
				return err
			}
			h.logf("FAULT    %s failed (Xid 79: fallen off the bus); jobs on it: %s", c.GPUName(failed), strings.Join(affected, ", "))
			return nil
		}},
		{t0.Add(150 * time.Minute), func(h *host) error {
			if _, err := h.s.SetGPUHealth(failed, topology.Healthy); err != nil {
				return err
			}
			h.logf("REPAIR   %s is healthy again", c.GPUName(failed))
			return nil
		}},
		{t0.Add(165 * time.Minute), func(h *host) error {
			for _, j := range []workload.Job{gpus("batch-1", 0, 1, 4, 3*time.Hour, 0), gpus("batch-2", 0, 1, 4, 3*time.Hour, 0)} {
				if err := h.submit(j); err != nil {
					return err
				}
			}
			return nil
		}},
		{t0.Add(185 * time.Minute), func(h *host) error {
			return h.submit(gpus("urgent", 10, 1, 8, time.Hour, 10*time.Minute))
		}},
		{t0.Add(5 * time.Hour), func(h *host) error {
			// A node joins the second ToR: a live change, no restart. The
			// new cluster version keeps every existing ID.
			tor := h.c.DomainName(h.c.HostAt(topology.HostID(h.c.NumHosts()-1), topology.LevelHost+1))
			err := h.s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "dgx-h100-5", Template: h.c.Host(0).Template, Parent: tor}}}, h.now)
			if err != nil {
				return err
			}
			h.c = h.s.Cluster()
			h.logf("JOIN     dgx-h100-5 joins %s: %d GPUs now", tor, h.c.NumGPUs())
			return nil
		}},
		{t0.Add(5*time.Hour + 30*time.Minute), func(h *host) error {
			// A quota edit: "ml" keeps 32 GPUs guaranteed, a new queue
			// "interactive" gets 8. The jobs stay where they are.
			cfg := queue.Config{Root: queue.Node{Children: []queue.Node{
				{Name: "ml", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 32}}, Policy: queue.Policy{Ordering: queue.BestEffortFIFO}},
				{Name: "interactive", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
			}}}
			if _, err := h.s.Reconfigure(cfg, nil, h.now); err != nil {
				return err
			}
			h.logf("QUOTA    ml guaranteed 32 GPUs, new queue interactive 8")
			nb := workload.Job{ID: "notebook", Queue: "interactive", Runtime: time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}
			return h.submit(nb)
		}},
	}
	if restart { // 13:30: the host process restarts, from the state it saved
		script = append(script, event{t0.Add(270 * time.Minute), (*host).restart})
		slices.SortStableFunc(script, func(a, b event) int { return a.at.Compare(b.at) })
	}
	if err := h.loop(script); err != nil {
		return err
	}

	fmt.Fprintln(w, "\njob        runs  finished  GPU-hours lost")
	for _, id := range h.ids() {
		j := h.jobs[id]
		fmt.Fprintf(w, "%-10s %4d  %8s  %.1f\n", id, j.runs, j.finished.Format("15:04"), j.lost.Hours())
	}
	return nil
}
