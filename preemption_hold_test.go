package gpusched

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// holdCluster builds n dgx-h100 hosts named h1..hn, with cpu milli-cores
// each when cpu > 0.
func holdCluster(t *testing.T, n int, cpu int64) *topology.Cluster {
	t.Helper()
	tp, acc, err := topology.MachineTemplate("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	tp.Name = "t"
	if cpu > 0 {
		tp.CPUMilli = cpu
	}
	hosts := "h1"
	if n > 1 {
		hosts = "h[1-" + string(rune('0'+n)) + "]"
	}
	c, err := topology.Build(topology.Spec{Version: topology.SpecVersion, Name: "c", Accelerators: []topology.AcceleratorSpec{acc},
		Templates: []topology.HostTemplate{tp}, Hosts: []topology.HostGroup{{Name: hosts, Template: "t"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// holdCycle runs a cycle, starts what it binds and checks the invariants.
func holdCycle(t *testing.T, s *Scheduler, now time.Time) Decision {
	t.Helper()
	d := s.Schedule(now)
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	checkInvariants(t, s, now.Format(time.TimeOnly))
	return d
}

func bindings(d Decision) []string {
	var out []string
	for _, b := range d.Bindings {
		out = append(out, b.Job)
	}
	return out
}

// quotaHoldStart builds 5 DGX H100 hosts under a root GPU quota of 24,
// queue a with 16 and b with 8, starts low1 and low2 (a) and b1 (b), of 8
// GPUs each, at t0, and returns the Scheduler with a maker of 8-GPU-task
// jobs.
func quotaHoldStart(t *testing.T) (*Scheduler, *topology.Cluster, func(id, q string, prio int32, tasks int) workload.Job) {
	t.Helper()
	c := holdCluster(t, 5, 0)
	qc := queue.Config{Root: queue.Node{Quotas: []queue.Quota{{Resource: "gpu", Nominal: 24}}, Children: []queue.Node{
		{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16}}},
		{Name: "b", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 8}}},
	}}}
	pp, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: qc, Preemptor: pp, DefaultRuntime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id, q string, prio int32, tasks int) workload.Job {
		return workload.Job{ID: id, Queue: q, Priority: prio, Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: tasks, GPUs: 8}}}
	}
	for _, j := range []workload.Job{job("low1", "a", 0, 1), job("low2", "a", 0, 1), job("b1", "b", 0, 1)} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	if d := holdCycle(t, s, t0); len(d.Bindings) != 3 {
		t.Fatalf("start:\n%s", d.Format(c))
	}
	return s, c, job
}

// TestNominationHoldsQuota: a job nominated to a placement keeps the quota
// its victims free for itself while they stop one by one; neither the
// victims (requeued) nor anyone else takes it, and the job binds once they
// are all gone. (Regression: the quota freed by the first victim was
// taken back by that victim, the bind failed the quota check, and a new
// plan preempted again, forever.)
func TestNominationHoldsQuota(t *testing.T) {
	s, c, job := quotaHoldStart(t)
	now := t0
	now = now.Add(3 * time.Hour)
	if err := s.Submit(job("high", "a", 10, 2), now); err != nil {
		t.Fatal(err)
	}
	d := holdCycle(t, s, now)
	var victims []string
	for _, p := range d.Preemptions {
		victims = append(victims, p.Job)
	}
	slices.Sort(victims)
	if !slices.Equal(victims, []string{"low1", "low2"}) {
		t.Fatalf("high arrives: want low1 and low2 preempted:\n%s", d.Format(c))
	}
	// The victims stop one by one; another job of b arrives meanwhile.
	now = now.Add(time.Minute)
	if err := s.Preempted("low1", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(job("b2", "b", 0, 1), now); err != nil {
		t.Fatal(err)
	}
	d = holdCycle(t, s, now)
	if len(d.Bindings) != 0 || len(d.Preemptions) != 0 {
		t.Fatalf("low1 gone: the quota it freed is high's:\n%s", d.Format(c))
	}
	now = now.Add(time.Minute)
	if err := s.Preempted("low2", now); err != nil {
		t.Fatal(err)
	}
	d = holdCycle(t, s, now)
	if !slices.Contains(bindings(d), "high") || len(d.Preemptions) != 0 {
		t.Fatalf("low2 gone: high must bind, nothing preempted:\n%s", d.Format(c))
	}
}

// TestNominationHoldsHostCPU: while a victim still holds GPUs on a host
// of the nominated placement, the host's free CPU and memory the
// placement needs are held too: a CPU-only job arriving meanwhile does not
// take them. (Regression: only the free GPUs were held; the job that
// preempted then failed "not enough CPU".)
func TestNominationHoldsHostCPU(t *testing.T) {
	c := holdCluster(t, 1, 100000)
	pp, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}, Preemptor: pp, DefaultRuntime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	submit := func(j workload.Job) {
		t.Helper()
		j.Queue = "a"
		if err := s.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	submit(workload.Job{ID: "low", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4, CPUMilli: 10000, MemoryMiB: 1 << 10}}})
	holdCycle(t, s, now)
	now = now.Add(time.Hour)
	submit(workload.Job{ID: "high", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8, CPUMilli: 80000, MemoryMiB: 1 << 20}}})
	if d := holdCycle(t, s, now); len(d.Preemptions) != 1 || d.Preemptions[0].Job != "low" {
		t.Fatalf("high arrives:\n%s", d.Format(c))
	}
	now = now.Add(time.Second)
	free := s.Ledger().MemoryFree(0)
	submit(workload.Job{ID: "cpuhog", Priority: 10, NonPreemptible: true, Groups: []workload.TaskGroup{{Count: 1, CPUMilli: 50000}}})
	submit(workload.Job{ID: "memhog", Priority: 10, NonPreemptible: true, Groups: []workload.TaskGroup{{Count: 1, CPUMilli: 1, MemoryMiB: free - 1<<19}}})
	submit(workload.Job{ID: "small", Priority: 10, NonPreemptible: true, Groups: []workload.TaskGroup{{Count: 1, CPUMilli: 5000, MemoryMiB: 1 << 10}}})
	d := holdCycle(t, s, now)
	if b := bindings(d); !slices.Equal(b, []string{"small"}) {
		t.Fatalf("while low stops only small fits beside high's claim, bound %v:\n%s", b, d.Format(c))
	}
	now = now.Add(time.Minute)
	if err := s.Preempted("low", now); err != nil {
		t.Fatal(err)
	}
	d = holdCycle(t, s, now)
	if b := bindings(d); len(b) == 0 || b[0] != "high" {
		t.Fatalf("low gone: high must bind first:\n%s", d.Format(c))
	}
}

// TestNominationWaitsForCountedStop: a plan counts every stop in progress
// as done for quota, here a job draining off a host. When the nominated
// job's own victim is gone first, the job keeps its nomination and waits
// for the drain rather than losing it to the quota check; it binds when
// the drained job has stopped. (Regression: the nomination was dropped
// with its victim already stopped.)
func TestNominationWaitsForCountedStop(t *testing.T) {
	c := holdCluster(t, 3, 0)
	qc := queue.Config{Root: queue.Node{Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16}}, Children: []queue.Node{
		{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16}}},
	}}}
	pp, err := NewPlanPreemptor(preempt.Config{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Cluster: c, Queues: qc, Preemptor: pp, DefaultRuntime: time.Hour, DrainGrace: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, prio int32, tasks int) workload.Job {
		return workload.Job{ID: id, Queue: "a", Priority: prio, Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: tasks, GPUs: 8}}}
	}
	now := t0
	for _, j := range []workload.Job{job("w", 0, 1), job("v", 0, 1)} {
		if err := s.Submit(j, now); err != nil {
			t.Fatal(err)
		}
	}
	holdCycle(t, s, now)
	now = now.Add(time.Hour)
	st, _ := s.Job("w")
	if _, err := s.SetHostHealth(s.Cluster().HostName(st.Placement.Claims[0].Host), topology.Draining); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(job("high", 10, 2), now); err != nil {
		t.Fatal(err)
	}
	d := holdCycle(t, s, now)
	if len(d.Recoveries) != 1 || d.Recoveries[0].Job != "w" || len(d.Preemptions) != 1 || d.Preemptions[0].Job != "v" {
		t.Fatalf("drain and high: want w drained and v preempted:\n%s", d.Format(c))
	}
	now = now.Add(time.Minute)
	if err := s.Preempted("v", now); err != nil {
		t.Fatal(err)
	}
	d = holdCycle(t, s, now)
	st, _ = s.Job("high")
	if len(d.Bindings) != 0 || st.Reason == nil || st.Reason.Code != WaitPreemption || st.Reason.Blocker != "w" {
		t.Fatalf("v gone, w draining: high must wait for w, reason %v:\n%s", st.Reason, d.Format(c))
	}
	now = now.Add(9 * time.Minute)
	if err := s.Requeue("w", now); err != nil {
		t.Fatal(err)
	}
	d = holdCycle(t, s, now)
	if b := bindings(d); len(b) == 0 || b[0] != "high" {
		t.Fatalf("w gone: high must bind first:\n%s", d.Format(c))
	}
}

// TestNominationOverdueStopsHolding: a host that never reports a victim
// stopped must not block the nominated job's queue path for ever. Until
// the victims are due (their grace, twice over) the nomination holds its
// quota; after that only its GPUs, and other jobs may use the quota the
// stopped victims freed.
func TestNominationOverdueStopsHolding(t *testing.T) {
	s, c, job := quotaHoldStart(t)
	now := t0
	now = now.Add(3 * time.Hour)
	if err := s.Submit(job("high", "a", 10, 2), now); err != nil {
		t.Fatal(err)
	}
	d := holdCycle(t, s, now)
	var grace time.Duration
	for _, p := range d.Preemptions {
		grace = max(grace, p.Grace)
	}
	if len(d.Preemptions) != 2 {
		t.Fatalf("high arrives: want two victims:\n%s", d.Format(c))
	}
	due := now.Add(grace + max(grace, time.Minute))
	// low1 stops; low2 never does. b2 arrives.
	now = now.Add(time.Minute)
	if err := s.Preempted("low1", now); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(job("b2", "b", 0, 1), now); err != nil {
		t.Fatal(err)
	}
	if d = holdCycle(t, s, now); len(d.Bindings) != 0 {
		t.Fatalf("before the victims are due, high's quota is held:\n%s", d.Format(c))
	}
	now = due.Add(time.Second)
	d = holdCycle(t, s, now)
	if len(d.Bindings) == 0 {
		t.Fatalf("after the victims are due, the quota low1 freed is no longer held:\n%s", d.Format(c))
	}
	for _, p := range d.Pending {
		if p.Job == "high" && !strings.Contains(p.Reason.String(), "overdue") {
			t.Errorf("high's reason should say the stop is overdue: %s", p.Reason)
		}
	}
}
