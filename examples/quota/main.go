// Command quota shows three teams sharing a 64-GPU cluster through
// gpusched's queue tree: guaranteed (nominal) quotas, borrowing of what
// others leave idle, a lending limit, and what happens when an owner comes
// back for its guarantee (reclaim).
//
//	go run ./examples/quota
//	go run ./examples/quota -preempt=false
//
// The teams are the ones a training platform typically has:
//
//	pretraining   32 GPUs guaranteed: long multi-host runs, idle at first
//	experiments   16 GPUs guaranteed, may borrow up to 32 more
//	evaluation    16 GPUs guaranteed, lends at most 8 of them
//
// The program prints the quota view of every queue (used / reserved / free
// / borrowed / lent, the three-tier view a team lead's dashboard shows)
// while experiments borrows pretraining's idle guarantee, and again after
// pretraining reclaims it. By default the Scheduler has a Preemptor
// (gpusched.PlanPreemptor over package preempt), so borrowed jobs are
// preempted at once: they checkpoint, stop, and wait in their queue again
// with their progress kept. With -preempt=false there is no Preemptor and
// the owner's jobs are served first as the borrower's jobs end (with a
// reservation, around which shorter jobs are backfilled).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func main() {
	on := flag.Bool("preempt", true, "reclaim by preemption (false: wait for the borrower's jobs to end)")
	flag.Parse()
	if err := run(os.Stdout, *on); err != nil {
		fmt.Fprintln(os.Stderr, "quota:", err)
		os.Exit(1)
	}
}

// queues is the queue tree: three teams under the cluster.
func queues() queue.Config {
	return queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "pretraining", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 32}},
			Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}},
		{Name: "experiments", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16, BorrowingLimit: queue.Limit(32)}},
			Policy: queue.Policy{Ordering: queue.BestEffortFIFO}},
		{Name: "evaluation", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16, LendingLimit: queue.Limit(8)}},
			Policy: queue.Policy{Ordering: queue.BestEffortFIFO}},
	}}}
}

// host is the program's side of the embedding loop: it keeps the clock,
// carries out Decisions and reports back.
type host struct {
	w     io.Writer
	s     *gpusched.Scheduler
	c     *topology.Cluster
	now   time.Time
	start time.Time
	// ends holds when each running job will end.
	ends map[string]time.Time
	// work is each job's run time; preempted jobs keep what they did.
	work map[string]time.Duration
	// said is the last reason printed for each waiting job.
	said map[string]string
}

func (h *host) logf(format string, args ...any) {
	fmt.Fprintf(h.w, "%s  %s\n", h.now.Format("15:04"), fmt.Sprintf(format, args...))
}

func (h *host) submit(id, q string, tasks, gpus int, runtime time.Duration, tor bool) error {
	j := workload.Job{ID: id, Queue: q, Runtime: runtime, CheckpointInterval: 10 * time.Minute,
		Groups: []workload.TaskGroup{{Count: tasks, GPUs: gpus}}}
	if tor {
		j.Topology = []workload.Constraint{{Level: "tor", Required: true}}
	}
	if err := h.s.Submit(j, h.now); err != nil {
		return err
	}
	h.work[id] = runtime
	h.logf("submit %-8s %-12s %2d GPUs, %s", id, q, tasks*gpus, runtime)
	return nil
}

// cycle runs Schedule and carries out the Decision: bindings start at
// once; a preempted job checkpoints on SIGTERM (within its grace period,
// taken here as elapsed at once), reports it, and stops; then the cycle
// runs again so the job it made room for binds.
func (h *host) cycle() error {
	for {
		d := h.s.Schedule(h.now)
		for _, b := range d.Bindings {
			if err := h.s.Started(b.Job, h.now); err != nil {
				return err
			}
			h.ends[b.Job] = h.now.Add(h.work[b.Job])
			note := ""
			if b.Borrowing {
				note = " (borrowing)"
			}
			if b.Backfill {
				note += " (backfill: ends before the reserved start of a waiting job)"
			}
			h.logf("start  %-8s %-12s on %s%s", b.Job, b.Queue, gpusched.FormatPlacement(h.c, b.Placement), note)
		}
		for _, p := range d.Pending {
			if r := p.Reason.String(); h.said[p.Job] != r { // only what changed
				h.said[p.Job] = r
				h.logf("wait   %-8s %-12s %s", p.Job, p.Queue, r)
			}
		}
		for _, p := range d.Preemptions {
			st, _ := h.s.Job(p.Job)
			if err := h.s.Checkpointed(p.Job, h.now, h.now); err != nil {
				return err
			}
			h.work[p.Job] -= h.now.Sub(st.Started) // checkpointed: nothing is lost
			delete(h.ends, p.Job)
			if err := h.s.Preempted(p.Job, h.now); err != nil {
				return err
			}
			h.logf("preempt %-7s for %s (%s; grace %s); %s left to run", p.Job, p.For, p.Reason, p.Grace, h.work[p.Job])
		}
		if len(d.Preemptions) == 0 {
			return nil
		}
	}
}

// until advances the clock to t, finishing the jobs that end on the way
// (each followed by a cycle).
func (h *host) until(t time.Time) error {
	for {
		var next string
		for id, end := range h.ends { // the earliest end, ties by ID
			if !end.After(t) && (next == "" || end.Before(h.ends[next]) || end.Equal(h.ends[next]) && id < next) {
				next = id
			}
		}
		if next == "" {
			h.now = t
			return nil
		}
		h.now = h.ends[next]
		delete(h.ends, next)
		if err := h.s.Finished(next, h.now); err != nil {
			return err
		}
		h.logf("finish %s", next)
		if err := h.cycle(); err != nil {
			return err
		}
	}
}

// printQuota prints the GPU quota view of every queue.
func (h *host) printQuota(title string) {
	fmt.Fprintf(h.w, "\n%s — quota view at %s (GPUs)\n", title, h.now.Format("15:04"))
	tw := tabwriter.NewWriter(h.w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tnominal\tused\treserved\tfree\tborrowed\tlent\trunning\tpending\t")
	for _, v := range h.s.Queues() {
		for _, r := range v.Resources {
			if r.Resource != "gpu" {
				continue
			}
			name := strings.Repeat("  ", v.Depth) + v.Queue
			fmt.Fprintf(tw, "%s\t%g\t%g\t%g\t%g\t%g\t%g\t%d\t%d\t\n", name, r.Nominal, r.Used, r.Reserved, r.Free, r.Borrowed, r.Lent, v.Running, v.Pending)
		}
	}
	tw.Flush()
	fmt.Fprintln(h.w)
}

// newScheduler builds the Scheduler; the preemptor, if non-nil, is the
// library's planner.
func newScheduler(c *topology.Cluster, p gpusched.Preemptor) (*gpusched.Scheduler, error) {
	return gpusched.New(gpusched.Config{Cluster: c, Queues: queues(), Preemptor: p})
}

func run(w io.Writer, withPreemption bool) error {
	spec, err := topology.Generator{Name: "lab", Machine: "dgx-h100", Hosts: 8, HostsPerToR: 4}.Spec()
	if err != nil {
		return err
	}
	c, err := topology.Build(spec)
	if err != nil {
		return err
	}
	p, err := preemptor(withPreemption)
	if err != nil {
		return err
	}
	s, err := newScheduler(c, p)
	if err != nil {
		return err
	}
	start := time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC)
	h := &host{w: w, s: s, c: c, now: start, start: start, ends: map[string]time.Time{}, work: map[string]time.Duration{}, said: map[string]string{}}
	fmt.Fprintf(w, "cluster %s: %d hosts × 8 H100 in 2 ToRs (%d GPUs)\n", c.Name(), c.NumHosts(), c.NumGPUs())
	if p != nil {
		fmt.Fprintln(w, "reclaim by preemption (gpusched.PlanPreemptor configured): borrowed jobs are preempted when the owner returns")
	} else {
		fmt.Fprintln(w, "reclaim without preemption (no Preemptor, -preempt=false): the owner's jobs are served first as the borrower's jobs end")
	}
	fmt.Fprintln(w)

	// experiments fills the idle cluster; evaluation runs its own work.
	for i, rt := range []time.Duration{2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 5 * time.Hour, 6 * time.Hour, 8 * time.Hour} {
		if err := h.submit(fmt.Sprintf("exp-%d", i+1), "experiments", 1, 8, rt, false); err != nil {
			return err
		}
	}
	for i := range 2 {
		if err := h.submit(fmt.Sprintf("eval-%d", i+1), "evaluation", 1, 4, 90*time.Minute, false); err != nil {
			return err
		}
	}
	// A seventh experiment would take evaluation's unlendable reserve.
	if err := h.submit("exp-7", "experiments", 1, 8, time.Hour, false); err != nil {
		return err
	}
	if err := h.cycle(); err != nil {
		return err
	}
	h.printQuota("experiments borrows pretraining's idle guarantee")

	// 10:00: pretraining comes back for its guarantee: one 32-GPU run in
	// one ToR.
	if err := h.until(start.Add(time.Hour)); err != nil {
		return err
	}
	if err := h.submit("pretrain", "pretraining", 4, 8, 12*time.Hour, true); err != nil {
		return err
	}
	if err := h.cycle(); err != nil {
		return err
	}
	// Follow the day until pretraining runs.
	for step := 0; step < 24; step++ {
		if st, ok := s.Job("pretrain"); ok && st.State == queue.Running {
			break
		}
		if err := h.until(h.now.Add(30 * time.Minute)); err != nil {
			return err
		}
	}
	if st, ok := s.Job("pretrain"); !ok || st.State != queue.Running {
		return fmt.Errorf("pretraining never got its guarantee back")
	}
	h.printQuota("pretraining has reclaimed its guarantee")
	fmt.Fprintf(w, "pretraining waited %s for its 32 guaranteed GPUs\n", h.now.Sub(start.Add(time.Hour)))
	return nil
}
