package gpusched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func oneQueue(t *testing.T, hosts int, pol queue.Policy) *Scheduler {
	t.Helper()
	s, err := New(Config{Cluster: testCluster(t, hosts, 0), Queues: queue.Config{
		PriorityClasses: []queue.PriorityClass{{Name: "low", Value: 0}, {Name: "high", Value: 10}},
		Root:            queue.Node{Children: []queue.Node{{Name: "q", Policy: pol}, {Name: "org", Children: []queue.Node{{Name: "team"}}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func gpuJob(id string, gpus int) workload.Job {
	return workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}, Runtime: time.Hour}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "Cluster is nil") {
		t.Fatalf("nil cluster: %v", err)
	}
	c := testCluster(t, 1, 0)
	_, err := New(Config{Cluster: c})
	var ce *queue.ConfigError
	if !errors.As(err, &ce) || ce.Field != "root.children" {
		t.Fatalf("empty tree: %v", err)
	}
	_, err = New(Config{Cluster: c, DefaultRuntime: -1, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "a"}}}}})
	if err == nil || !strings.Contains(err.Error(), "DefaultRuntime") {
		t.Fatalf("negative runtime: %v", err)
	}
}

func TestSubmitErrors(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	now := t0
	if err := s.Submit(gpuJob("a", 1), now); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		job  workload.Job
		is   error
		want string
	}{
		{"duplicate", gpuJob("a", 1), ErrDuplicateJob, "job a: gpusched: duplicate job ID"},
		{"no queue", workload.Job{ID: "b", Queue: "nope", Groups: []workload.TaskGroup{{Count: 1}}}, ErrUnknownQueue, `no leaf queue named "nope"`},
		{"inner queue", workload.Job{ID: "b", Queue: "org", Groups: []workload.TaskGroup{{Count: 1}}}, ErrUnknownQueue, `queue "org" has sub-queues`},
		{"class", workload.Job{ID: "b", Queue: "q", Priority: 5, Groups: []workload.TaskGroup{{Count: 1}}}, workload.ErrInvalid, "priority: priority 5 is not a configured priority class (low=0, high=10)"},
		{"invalid", workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 0}}}, workload.ErrInvalid, "groups[0].count"},
		{"unknown model", workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1, Models: []string{"TPU"}}}}, workload.ErrInvalid, "groups[0].models[0]"},
		{"too big", gpuJob("b", 16), ErrNeverFits, "does not fit on the idle cluster"},
		{"unknown level", workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 1}}, Topology: []workload.Constraint{{Level: "rack", Required: true}}}, workload.ErrInvalid, "topology[0].level"},
	} {
		err := s.Submit(tc.job, now)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v containing %q", tc.name, err, tc.is, tc.want)
		}
	}
	if s.Len() != 1 {
		t.Fatalf("rejected jobs were kept: %d", s.Len())
	}
}

func TestEventStates(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	now := t0
	for _, id := range []string{"a", "b"} {
		if err := s.Submit(gpuJob(id, 4), now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Started("a", now); !errors.Is(err, ErrState) {
		t.Fatalf("Started before admission: %v", err)
	}
	if err := s.Finished("a", now); !errors.Is(err, ErrState) {
		t.Fatalf("Finished while pending: %v", err)
	}
	if err := s.Requeue("a", now); !errors.Is(err, ErrState) {
		t.Fatalf("Requeue while pending: %v", err)
	}
	if err := s.Finished("zz", now); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("unknown: %v", err)
	}
	d := s.Schedule(now)
	if len(d.Bindings) != 2 {
		t.Fatalf("bindings %v", d.Bindings)
	}
	st, _ := s.Job("a")
	if st.State != queue.Admitted || st.Placement == nil {
		t.Fatalf("a: %+v", st)
	}
	if err := s.Started("a", now); err != nil {
		t.Fatal(err)
	}
	// Preempted: back in the queue at its place, counted.
	if err := s.Preempted("a", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Job("a")
	if st.State != queue.Preempted || st.Preemptions != 1 || st.Placement != nil {
		t.Fatalf("after preemption: %+v", st)
	}
	d = s.Schedule(now.Add(2 * time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "a" {
		t.Fatalf("a not re-admitted: %+v", d)
	}
	// Cancel an admitted job releases it; the ledger is empty of it.
	if err := s.Cancel("a", now.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Job("a"); ok {
		t.Fatal("cancelled job still known")
	}
	if err := s.Failed("b", now.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if free := s.Ledger().FreeGPUs(s.Cluster().Root()); free != 8 {
		t.Fatalf("free %d, want 8", free)
	}
	checkInvariants(t, s, "end")
	// Times going back are refused (TestTimeBackwards); at the latest
	// time seen, an event applies.
	if err := s.Submit(gpuJob("c", 1), t0); !errors.Is(err, ErrTimeBackwards) {
		t.Fatalf("Submit at an earlier time: %v", err)
	}
	if err := s.Submit(gpuJob("c", 1), now.Add(4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Job("c"); !st.Submitted.Equal(now.Add(4 * time.Minute)) {
		t.Fatalf("submitted %v", st.Submitted)
	}
}

func TestHealthAndGains(t *testing.T) {
	s := oneQueue(t, 2, queue.Policy{})
	c := s.Cluster()
	if err := s.Submit(gpuJob("a", 8), t0); err != nil {
		t.Fatal(err)
	}
	s.Schedule(t0)
	_ = s.Started("a", t0)
	if _, err := s.SetGPUHealth(-1, topology.Failed); err == nil {
		t.Fatal("GPU -1 accepted")
	}
	if _, err := s.SetHostHealth("nope", topology.Failed); err == nil {
		t.Fatal("host 99 accepted")
	}
	first, _ := c.HostGPUs(0)
	ids, err := s.SetGPUHealth(first+3, topology.Failed)
	if err != nil || len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("affected %v %v", ids, err)
	}
	// The other host fails: an 8-GPU job cannot fit anywhere now.
	if _, err := s.SetHostHealth(c.HostName(1), topology.Failed); err != nil {
		t.Fatal(err)
	}
	_ = s.Submit(gpuJob("b", 8), t0)
	d := s.Schedule(t0.Add(time.Minute))
	if len(d.Bindings) != 0 || d.Pending[0].Reason.Code != WaitCapacity {
		t.Fatalf("b placed on unhealthy capacity: %s", d.Format(c))
	}
	// a ends: host 0 has a failed GPU, still no room; host 1 recovers.
	_ = s.Finished("a", t0.Add(2*time.Minute))
	d = s.Schedule(t0.Add(2 * time.Minute))
	if len(d.Bindings) != 0 {
		t.Fatalf("b placed on a host with a failed GPU: %s", d.Format(c))
	}
	if _, err := s.SetHostHealth(c.HostName(1), topology.Healthy); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t0.Add(3 * time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Placement.Claims[0].Host != 1 {
		t.Fatalf("b not placed after recovery: %s", d.Format(c))
	}
}

// fakePreemptor evicts the lowest-priority holding job.
type fakePreemptor struct{ asked int }

func (f *fakePreemptor) Preempt(s PreemptView, job PreemptCandidate, now time.Time) []Preemption {
	f.asked++
	var victim string
	best := int32(1 << 30)
	s.Holding(func(id string, st JobStatus) bool {
		if st.Spec.Priority < best && st.Spec.Priority < job.Job.Priority {
			victim, best = id, st.Spec.Priority
		}
		return true
	})
	if victim == "" {
		return nil
	}
	return []Preemption{{Job: victim, Grace: 30 * time.Second, Reason: "lower priority"}}
}

func TestPreemptorHook(t *testing.T) {
	fp := &fakePreemptor{}
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Preemptor: fp, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	low := gpuJob("low", 8)
	_ = s.Submit(low, t0)
	for _, b := range s.Schedule(t0).Bindings {
		_ = s.Started(b.Job, t0)
	}
	high := gpuJob("high", 8)
	high.Priority = 5
	_ = s.Submit(high, t0.Add(time.Minute))
	d := s.Schedule(t0.Add(time.Minute))
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "low" || d.Preemptions[0].For != "high" {
		t.Fatalf("preemptions %+v", d.Preemptions)
	}
	if r := d.Pending[0].Reason; r.Code != WaitPreemption || !strings.Contains(r.String(), "preempting 1 job(s)") {
		t.Fatalf("reason %v", r)
	}
	// Until the host reports it, the victim is not asked for again.
	d = s.Schedule(t0.Add(2 * time.Minute))
	if len(d.Preemptions) != 0 || d.Pending[0].Reason.Code != WaitPreemption || fp.asked != 1 {
		t.Fatalf("second cycle: %+v asked %d", d, fp.asked)
	}
	if err := s.Preempted("low", t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t0.Add(3 * time.Minute))
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "high" {
		t.Fatalf("high not bound: %s", d.Format(s.Cluster()))
	}
	if d.Pending[0].Job != "low" || d.Pending[0].State != queue.Preempted {
		t.Fatalf("low not waiting as preempted: %+v", d.Pending)
	}
}

func TestRestore(t *testing.T) {
	s := oneQueue(t, 2, queue.Policy{})
	c := s.Cluster()
	first, _ := c.HostGPUs(1)
	claim := func(h topology.HostID, gpus ...int) topology.Claim {
		f, _ := c.HostGPUs(h)
		cl := topology.Claim{Host: h}
		for _, g := range gpus {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: f + topology.GPUID(g), Kind: topology.ClaimWhole})
		}
		return cl
	}
	job := workload.Job{ID: "r", Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: 4}}, Runtime: 2 * time.Hour}
	if err := s.Restore(job, [][]topology.Claim{{claim(1, 0, 1, 2, 3), claim(1, 4, 5, 6, 7)}}, queue.Running, t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Job("r")
	if st.State != queue.Running || st.Placement.Claims[0].GPUs[0].GPU != first || !st.Started.Equal(t0.Add(time.Minute)) {
		t.Fatalf("restored %+v", st)
	}
	for _, tc := range []struct {
		name  string
		job   workload.Job
		tasks [][]topology.Claim
		st    queue.State
		want  string
	}{
		{"state", gpuJob("x", 1), [][]topology.Claim{{claim(0, 0)}}, queue.Pending, "needs state admitted or running"},
		{"dup", job, nil, queue.Running, "duplicate"},
		{"groups", gpuJob("x", 1), nil, queue.Running, "0 task groups placed, the job has 1"},
		{"count", gpuJob("x", 1), [][]topology.Claim{{}}, queue.Running, "0 tasks placed, want 1..1"},
		{"gpus", gpuJob("x", 2), [][]topology.Claim{{claim(0, 0)}}, queue.Running, "1 GPUs claimed, the group needs 2"},
		{"overlap", gpuJob("x", 1), [][]topology.Claim{{claim(1, 0)}}, queue.Running, "claims do not fit the ledger"},
		{"host", gpuJob("x", 1), [][]topology.Claim{{{Host: 7}}}, queue.Running, "host 7 out of range"},
	} {
		err := s.Restore(tc.job, tc.tasks, tc.st, t0, t0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	checkInvariants(t, s, "restore")
	// The restored job ends on its estimate; a waiting job gets host 1.
	_ = s.Submit(gpuJob("w", 8), t0.Add(time.Minute))
	_ = s.Submit(gpuJob("w2", 8), t0.Add(time.Minute))
	d := s.Schedule(t0.Add(time.Minute))
	if len(d.Bindings) != 1 || d.Pending[0].Job != "w2" {
		t.Fatalf("%s", d.Format(c))
	}
	if err := s.Finished("r", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0.Add(2 * time.Hour)); len(d.Bindings) != 1 || d.Bindings[0].Job != "w2" {
		t.Fatalf("%s", d.Format(c))
	}
}

func TestReasonStrings(t *testing.T) {
	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		r    *Reason
		want string
	}{
		{nil, "<nil>"},
		{&Reason{Code: WaitQuotaHeld, Blocker: "big", HeldQueue: "org", HeldResource: "gpu"}, "quota-held: gpu quota of queue org is held for big"},
		{&Reason{Code: WaitBackfill, Blocker: "big", Until: at}, "backfill-window: would delay big, reserved to start at 2025-01-01T12:00:00Z"},
		{&Reason{Code: WaitBackfill, Blocker: "big", UntilForever: true}, "backfill-window: would take resources reserved for big (which waits for jobs without a runtime estimate)"},
		{&Reason{Code: WaitBehindHead, Blocker: "h", Queue: "q", Cause: WaitTopology}, "behind-head: behind h in strict FIFO queue q (topology)"},
		{&Reason{Code: WaitPreemption, Blocker: "v"}, "preempting: waiting for v to be preempted"},
		{&Reason{Code: WaitCapacity, Detail: "x", ReservedForever: true}, "capacity: x; reserved to start when jobs without a runtime estimate end"},
		{&Reason{Code: ReasonCode(99)}, "ReasonCode(99): "},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}
}

func TestOmitPending(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 1, 0), OmitPending: true, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Submit(gpuJob("a", 8), t0)
	_ = s.Submit(gpuJob("b", 8), t0)
	d := s.Schedule(t0)
	if len(d.Bindings) != 1 || d.Pending != nil {
		t.Fatalf("%+v", d)
	}
	if st, _ := s.Job("b"); st.Reason == nil || st.Reason.Code != WaitCapacity {
		t.Fatalf("b: %+v", st)
	}
}

// TestRequeueRemainingRuntime: a preempted job waits with its remaining
// time as its runtime estimate, so a shortest-first queue runs it before a
// fresh job that is shorter than its whole runtime but longer than what is
// left (SRTF). "long" (3 h, checkpoints hourly) runs 2 h 30 min and is
// preempted: 2 h saved, 1 h left < "fresh"'s 2 h.
func TestRequeueRemainingRuntime(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{Ordering: queue.ShortestFirst})
	long := gpuJob("long", 8)
	long.Runtime, long.CheckpointInterval = 3*time.Hour, time.Hour
	if err := s.Submit(long, t0); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0); len(d.Bindings) != 1 {
		t.Fatalf("bindings %v", d.Bindings)
	}
	if err := s.Started("long", t0); err != nil {
		t.Fatal(err)
	}
	fresh := gpuJob("fresh", 8)
	fresh.Runtime = 2 * time.Hour
	if err := s.Submit(fresh, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(150 * time.Minute)
	if err := s.Preempted("long", at); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(at)
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "long" {
		t.Fatalf("want long (1 h left) before fresh (2 h): %+v", d.Bindings)
	}
	// A job whose checkpoints saved all of its estimate waits with 1 s.
	j, _ := s.lookup("long")
	j.rec.progress = 4 * time.Hour
	if got := j.waitingRuntime(); got != time.Second {
		t.Fatalf("waitingRuntime = %v, want 1s", got)
	}
}

// TestFullClusterIsCapacity: with no root quota configured, a job that
// the root's quota (the cluster's capacity) stops waits for capacity, not
// quota; the block stays on the reason for detail.
func TestFullClusterIsCapacity(t *testing.T) {
	// q is guaranteed 4 of the 8 GPUs and borrows the rest: gpu is
	// governed, the root's quota is the cluster's 8 GPUs.
	s, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: "q", Quotas: []queue.Quota{{Resource: queue.ResourceGPU, Nominal: 4}}}, {Name: "other"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Submit(gpuJob(id, 8), t0); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(t0)
	if len(d.Bindings) != 1 || len(d.Pending) != 1 {
		t.Fatalf("bindings %v pending %v", d.Bindings, d.Pending)
	}
	r := d.Pending[0].Reason
	if r.Code != WaitCapacity || r.Quota == nil || !r.Quota.Capacity {
		t.Fatalf("reason %v (quota %v), want capacity with the root block", r.Code, r.Quota)
	}
	want := "capacity: queue cluster: gpu: 8 GPUs in use + 8 GPUs > cluster capacity 8 GPUs"
	if got := r.String(); got != want {
		t.Fatalf("reason %q, want %q", got, want)
	}
}
