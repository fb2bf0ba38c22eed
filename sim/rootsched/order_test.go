package rootsched_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/policy"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// ordered runs jobs on one 8-GPU host in one queue with priority
// preemption, true runtime estimates and the ordering o (nil: FIFO).
func ordered(t testing.TB, o policy.Ordering, jobs []trace.Job) *sim.Result {
	t.Helper()
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	s := oneQueue(t, c)
	if o != nil {
		s.Order(o)
	}
	res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true, RuntimeEstimate: 1,
		Checkpoint: sim.CheckpointModel{Interval: time.Hour, Overhead: 10 * time.Second}}, jobs)
	if err := s.OrderErr(); err != nil {
		t.Fatal(err)
	}
	return res
}

// oneQueue is a Scheduler on c with one queue, q, and priority
// preemption within it (30 s of grace).
func oneQueue(t testing.TB, c *topology.Cluster) *rootsched.Scheduler {
	t.Helper()
	pre, err := rootsched.Preemptor("queue", 30*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"q"}, queue.Policy{}), Preemptor: pre})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSRTFPreempts: SRTF is preemptive by remaining time. A 30-minute
// job arriving at 1 h preempts a 10-hour job (9 h left): 30 s of grace,
// then its 30 minutes, JCT 1830 s (FIFO: over 9 h). A 1-hour job
// arriving at 9h45m does not preempt it (15 min left, its priority
// refreshed as it ran): it starts when the long job ends.
func TestSRTFPreempts(t *testing.T) {
	jobs := func() []trace.Job {
		return []trace.Job{job8("long", 0, 10*time.Hour), job8("short", time.Hour, 30*time.Minute)}
	}
	got := byRecord(ordered(t, rootsched.SRTF{}, jobs()))
	if s := got["short"]; s.State != sim.StateCompleted || s.End-s.Submit != 1830 {
		t.Errorf("SRTF: short %+v, want JCT 1830 s", s)
	}
	if fifo := byRecord(ordered(t, nil, jobs()))["short"]; fifo.End-fifo.Submit < 9*3600 {
		t.Errorf("FIFO: short JCT %v s, want over 9 h", fifo.End-fifo.Submit)
	}
	late := []trace.Job{job8("long", 0, 10*time.Hour), job8("later", 9*time.Hour+45*time.Minute, time.Hour)}
	got = byRecord(ordered(t, rootsched.SRTF{}, late))
	if l := got["long"]; l.Preemptions != 0 || l.End != 36090 { // 10 h and 9 hourly checkpoints of 10 s
		t.Errorf("SRTF: long %+v, want no preemption, end at 36,090 s", l)
	}
}

// TestSRTFPriorities: minutes left, shortest highest; no estimate last;
// the trace's priority first.
func TestSRTFPriorities(t *testing.T) {
	p, _ := rootsched.SRTF{}.Enqueued(0, []policy.Job{
		{Runtime: time.Hour}, {Runtime: time.Hour, Done: 50 * time.Minute}, {}, {Priority: 1, Runtime: 100 * time.Hour},
	})
	if !(p[1] > p[0] && p[0] > p[2] && p[3] > p[1]) || p[0] != -60 || p[1] != -10 {
		t.Errorf("priorities %v", p)
	}
}

// TestStarveLimit: under 2D-LAS a demoted 10-hour job waits while
// 25-minute jobs (under the threshold) arrive back to back from 1 h to
// 11 h, on one host. Without the guard it runs only after all of them,
// the last job to end; with Tiresias' starvation guard (k = 1) it is
// promoted after waiting as long as its last run and runs again (to be
// demoted and preempted again): it takes its share of the host while the
// short jobs arrive, which end hours later than without the guard.
func TestStarveLimit(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	run := func(k float64) (long sim.JobRecord, lastShort float64) {
		jobs := []trace.Job{job8("long", 0, 10*time.Hour)}
		for i := range 24 {
			jobs = append(jobs, job8("s"+strconv.Itoa(i), time.Hour+time.Duration(i)*25*time.Minute, 25*time.Minute))
		}
		s := oneQueue(t, c)
		s.Demote(queue.LAS{Thresholds: []float64{14400}})
		s.StarveLimit(k)
		res := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true,
			Checkpoint: sim.CheckpointModel{Interval: 10 * time.Minute, Overhead: time.Second}}, jobs)
		for _, j := range res.Jobs {
			if j.ID == "long" {
				long = j
			} else {
				lastShort = max(lastShort, j.End)
			}
		}
		return long, lastShort
	}
	off, offLast := run(0)
	on, onLast := run(1)
	if off.State != sim.StateCompleted || on.State != sim.StateCompleted {
		t.Fatalf("long: off %+v, on %+v", off, on)
	}
	if off.End < offLast || off.Preemptions != 1 {
		t.Errorf("without the guard: long ends at %v s (%d preemptions), the last short job at %v s: want long last, preempted once", off.End, off.Preemptions, offLast)
	}
	if onLast < offLast+2*3600 || on.Preemptions < 5 {
		t.Errorf("with the guard: long preempted %d times, the last short job ends at %v s (%v s without): want long running between the short jobs", on.Preemptions, onLast, offLast)
	}
}

// failing is an ordering that fails on its second call.
type failing struct{ calls int }

func (f *failing) Enqueued(_ time.Duration, jobs []policy.Job) ([]int32, error) {
	if f.calls++; f.calls > 1 {
		return nil, errors.New("broken pipe")
	}
	return make([]int32, len(jobs)), nil
}

// TestOrderingError: an ordering's error is kept, with its call, and
// the run goes on without it.
func TestOrderingError(t *testing.T) {
	c, _ := topology.LoadPreset("dgx-h100")
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"q"}, queue.Policy{})})
	if err != nil {
		t.Fatal(err)
	}
	s.Order(&failing{})
	simtest.Run(t, sim.Config{Cluster: c, Scheduler: s}, []trace.Job{job8("a", 0, time.Hour), job8("b", time.Minute, time.Hour)})
	if err := s.OrderErr(); err == nil || fmt.Sprint(err) != "ordering: Enqueued: broken pipe" {
		t.Errorf("OrderErr %v", err)
	}
}

// TestTotalWait: under SRTF the 10-hour job starts at once (time to
// first start 0) and waits again after the short job preempts it at 1 h:
// from its stop after 30 s of grace to the short job's end at 1h30m30s,
// 1,800 s in all. TotalWait counts that wait; Wait does not.
func TestTotalWait(t *testing.T) {
	res := ordered(t, rootsched.SRTF{}, []trace.Job{job8("long", 0, 10*time.Hour), job8("short", time.Hour, 30*time.Minute)})
	got := byRecord(res)
	if l := got["long"]; l.Start != 0 || l.Waited != 1800 {
		t.Errorf("long: first start %v, waited %v s; want 0 and 1800", l.Start, l.Waited)
	}
	if s := got["short"]; s.Waited != 30 {
		t.Errorf("short waited %v s, want the 30 s of grace", s.Waited)
	}
	if w, tw := res.Summary.Wait.Mean, res.Summary.TotalWait.Mean; w != 15 || tw != 915 {
		t.Errorf("mean wait %v s, mean total wait %v s; want 15 and 915", w, tw)
	}
}
