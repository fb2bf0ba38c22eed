package rootsched_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/rootsched"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// failures runs jobs on one DGX H100 under the root Scheduler with one
// queue of policy p and returns the distinct jobs per failure reason.
func failures(t *testing.T, p queue.Policy, pre gpusched.Preemptor, jobs []trace.Job) map[string]int {
	t.Helper()
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: rootsched.FlatQueues([]string{"q"}, p), Preemptor: pre})
	if err != nil {
		t.Fatal(err)
	}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true, RuntimeEstimate: 1}, jobs)
	if r.Summary.Jobs.Completed != len(jobs) {
		t.Fatalf("jobs %+v", r.Summary.Jobs)
	}
	out := map[string]int{}
	for _, f := range r.Summary.Failures {
		out[f.Reason] = f.Jobs
	}
	return out
}

func rj(id string, prio int32, submit, dur time.Duration, g int) trace.Job {
	return trace.Job{Spec: workload.Job{ID: id, Queue: "q", Priority: prio, Groups: []workload.TaskGroup{{Count: 1, GPUs: g}}}, Submit: submit, Duration: dur}
}

// TestRootWaitReasons: the Scheduler's backfill-window, behind-head and
// preempting waits are counted under their own names, not as other.
func TestRootWaitReasons(t *testing.T) {
	// Strict FIFO: b waits for capacity, c (which would fit) behind it.
	got := failures(t, queue.Policy{Ordering: queue.StrictFIFO}, nil, []trace.Job{
		rj("a", 0, 0, time.Hour, 6), rj("b", 0, time.Second, time.Hour, 8), rj("c", 0, 2*time.Second, time.Hour, 1)})
	if got["behind-head"] != 1 || got["other"] != 0 {
		t.Errorf("strict FIFO: %v", got)
	}
	// Backfill: b holds a reservation at 1 h; c fits now but would run
	// past it.
	got = failures(t, queue.Policy{Backfill: true}, nil, []trace.Job{
		rj("a", 0, 0, time.Hour, 6), rj("b", 0, time.Second, time.Hour, 8), rj("c", 0, 2*time.Second, 2*time.Hour, 2)})
	if got["backfill-window"] != 1 || got["other"] != 0 {
		t.Errorf("backfill: %v", got)
	}
	// Preemption: high waits while low checkpoints in its grace period.
	got = failures(t, queue.Policy{}, lowestFirst{grace: time.Minute}, []trace.Job{
		rj("low", 0, 0, time.Hour, 8), rj("high", 10, 10*time.Minute, time.Hour, 8)})
	if got["waiting-for-victims"] != 1 || got["other"] != 0 {
		t.Errorf("preemption: %v", got)
	}
}

// TestCapacityNotQuota: a job that waits because the cluster is full is
// counted as capacity even when its queue tree governs GPUs (the root's
// limit is then the cluster's capacity); quota only when a queue's limit
// binds.
func TestCapacityNotQuota(t *testing.T) {
	c, err := topology.LoadPreset("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	run := func(qc queue.Config, jobs []trace.Job) map[string]int {
		s, err := rootsched.New(gpusched.Config{Cluster: c, Queues: qc})
		if err != nil {
			t.Fatal(err)
		}
		r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: s, Audit: true}, jobs)
		out := map[string]int{}
		for _, f := range r.Summary.Failures {
			out[f.Reason] = f.Jobs
		}
		return out
	}
	vj := func(id, q string, submit time.Duration, g int) trace.Job {
		j := rj(id, 0, submit, time.Hour, g)
		j.Spec.Queue = q
		return j
	}
	// Two VCs of 4 GPUs each (guarantees, free borrowing): a borrows the
	// whole host; b, within its VC's guarantee, waits for capacity.
	vcs := rootsched.VCQueues([]trace.VC{{Name: "v1", GPUs: 4}, {Name: "v2", GPUs: 4}}, nil, queue.Policy{})
	if got := run(vcs, []trace.Job{vj("a", "v1", 0, 8), vj("b", "v2", time.Second, 4)}); got["capacity"] != 1 || got["quota"] != 0 {
		t.Errorf("full cluster: %v, want capacity 1, quota 0", got)
	}
	// v1 may not borrow: a2 waits for quota although 4 GPUs are free.
	vcs.Root.Children[0].Quotas[0].BorrowingLimit = queue.Limit(0)
	if got := run(vcs, []trace.Job{vj("a1", "v1", 0, 4), vj("a2", "v1", time.Second, 4)}); got["quota"] != 1 || got["capacity"] != 0 {
		t.Errorf("borrowing limit: %v, want quota 1, capacity 0", got)
	}
}
