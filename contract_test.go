package gpusched

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// contractScheduler is one DGX H100 host (8 GPUs), one queue with two
// priority classes and a PlanPreemptor that preempts lower priorities,
// plus cfg's other settings.
func contractScheduler(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	p, err := NewPlanPreemptor(preempt.Config{LowerPriority: preempt.WithinQueue}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster == nil {
		cfg.Cluster = testCluster(t, 1, 0)
	}
	cfg.Preemptor = p
	cfg.Queues = queue.Config{
		PriorityClasses: []queue.PriorityClass{{Name: "low", Value: 0}, {Name: "high", Value: 10}},
		Root:            queue.Node{Children: []queue.Node{{Name: "q"}}},
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bindAndStart schedules at now and reports every binding Started.
func bindAndStart(t interface {
	Helper()
	Fatal(args ...any)
}, s *Scheduler, now time.Time) Decision {
	t.Helper()
	d := s.Schedule(now)
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestReportedCheckpointAuthoritative is issue 25's defect 3: slow (4
// GPUs, CheckpointInterval 15m, started 09:00) reports a checkpoint at
// 09:05; at 09:40 the estimate (the last whole interval, 09:30) must not
// override it. Stopping slow loses 4 GPUs × 35 min = 140 GPU-min, fast
// (4 GPUs, started 09:25, no checkpoint) 4 × 15 = 60: the planner stops
// fast. A host fault then restarts slow from 09:05, the checkpoint it
// reported.
func TestReportedCheckpointAuthoritative(t *testing.T) {
	s := contractScheduler(t, Config{})
	at := func(hm string) time.Time {
		v, err := time.Parse("15:04", hm)
		if err != nil {
			t.Fatal(err)
		}
		return t0.Add(time.Duration(v.Hour())*time.Hour + time.Duration(v.Minute())*time.Minute)
	}
	slow := workload.Job{ID: "slow", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}, CheckpointInterval: 15 * time.Minute}
	fast := workload.Job{ID: "fast", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
	if err := s.Submit(slow, at("09:00")); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, at("09:00"))
	if err := s.Submit(fast, at("09:25")); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, at("09:25"))
	if err := s.Checkpointed("slow", at("09:05"), at("09:30")); err != nil {
		t.Fatal(err)
	}
	now := at("09:40")
	urgent := workload.Job{ID: "urgent", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
	if err := s.Submit(urgent, now); err != nil {
		t.Fatal(err)
	}
	if cp, _, _ := s.Progress("slow"); !cp.Equal(at("09:05")) {
		t.Errorf("Progress(slow) = %s, want the reported 09:05", stamp(cp))
	}
	d := s.Schedule(now)
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "fast" {
		t.Fatalf("preemptions %+v, want fast (60 GPU-min lost) rather than slow (140)", d.Preemptions)
	}
	if _, err := s.SetHostHealth(s.Cluster().HostName(0), topology.Failed); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(now.Add(time.Minute))
	for _, r := range d.Recoveries {
		if r.Job == "slow" && !r.RestartFrom.Equal(at("09:05")) {
			t.Errorf("slow restarts from %s, want the reported 09:05", stamp(r.RestartFrom))
		}
	}
	if len(d.Recoveries) == 0 {
		t.Error("no recovery for the failed host")
	}
}

// TestCheckpointAtStartAuthoritative: a checkpoint reported at the very
// start of a run (a job that saves as soon as it resumes) is a reported
// one too: the estimate from CheckpointInterval must not replace it.
// Progress, the planner's price and Recovery.RestartFrom say the run's
// start, as the host reported (issue 25, item 3; a probe's variation:
// lastCheckpoint took only a checkpoint after the start as reported).
func TestCheckpointAtStartAuthoritative(t *testing.T) {
	s := contractScheduler(t, Config{})
	a := workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}, CheckpointInterval: 30 * time.Minute}
	b := workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
	if err := s.Submit(a, t0); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, t0)
	if err := s.Checkpointed("a", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(b, t0.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, t0.Add(20*time.Minute))
	now := t0.Add(40 * time.Minute)
	if cp, _, _ := s.Progress("a"); !cp.Equal(t0) {
		t.Errorf("Progress(a) = %s, want the reported %s (the run's start)", stamp(cp), stamp(t0))
	}
	// a loses 4 GPUs × 40 min since its reported checkpoint, b 4 × 20:
	// the planner stops b (the estimate, 09:30, would price a at 40).
	urgent := workload.Job{ID: "urgent", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
	if err := s.Submit(urgent, now); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(now)
	if len(d.Preemptions) != 1 || d.Preemptions[0].Job != "b" {
		t.Fatalf("preemptions %+v, want b (80 GPU-min lost) rather than a (160)", d.Preemptions)
	}
	if _, err := s.SetHostHealth(s.Cluster().HostName(0), topology.Failed); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(now.Add(time.Minute))
	found := false
	for _, r := range d.Recoveries {
		if r.Job == "a" {
			found = true
			if !r.RestartFrom.Equal(t0) {
				t.Errorf("a restarts from %s, want the reported %s", stamp(r.RestartFrom), stamp(t0))
			}
		}
	}
	if !found {
		t.Error("no recovery for a")
	}
}

// TestFutureTimestampRefused is issue 25's defect 4: an event stamped a
// year ahead (a wrong clock) is refused with ErrClockSkew naming the
// event, its time and the limit, and changes nothing: the events at the
// real time that follow are accepted, and the cycle runs at the real
// time. Config.MaxClockSkew bounds how far ahead; negative is no limit.
func TestFutureTimestampRefused(t *testing.T) {
	s := contractScheduler(t, Config{AdmitTimeout: 10 * time.Minute})
	job := workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}
	if err := s.Submit(job, t0); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, t0)
	year := t0.AddDate(1, 0, 0)
	err := s.Checkpointed("a", year, year)
	if !errors.Is(err, ErrClockSkew) {
		t.Fatalf("Checkpointed a year ahead: %v, want ErrClockSkew", err)
	}
	for _, want := range []string{"Checkpointed(a)", stamp(year), "24h0m0s", "MaxClockSkew"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if !s.Now().Equal(t0) {
		t.Errorf("Now() = %s after the refusal, want %s", stamp(s.Now()), stamp(t0))
	}
	if cp, _, _ := s.Progress("a"); !cp.IsZero() {
		t.Errorf("checkpoint %s recorded", stamp(cp))
	}
	if err := s.Submit(workload.Job{ID: "b", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, year); !errors.Is(err, ErrClockSkew) {
		t.Errorf("Submit a year ahead: %v", err)
	}
	now := t0.Add(time.Hour)
	if err := s.Checkpointed("a", now, now); err != nil {
		t.Fatalf("a real-time event after the refusal: %v", err)
	}
	if d := s.Schedule(now); !d.Now.Equal(now) || len(d.Expired) != 0 {
		t.Errorf("cycle at %s expired %v", stamp(d.Now), d.Expired)
	}
	// Within the limit, and at its edge, events are accepted.
	if err := s.Checkpointed("a", now.Add(24*time.Hour), now.Add(24*time.Hour)); err != nil {
		t.Errorf("an event at the limit: %v", err)
	}

	// A configured limit; the first event of a new Scheduler sets its
	// clock whatever its time.
	s = contractScheduler(t, Config{MaxClockSkew: 10 * time.Minute})
	if err := s.Submit(job, year); err != nil {
		t.Fatalf("first event: %v", err)
	}
	if err := s.Cancel("a", year.Add(11*time.Minute)); !errors.Is(err, ErrClockSkew) || !strings.Contains(err.Error(), "10m0s") {
		t.Errorf("11 minutes ahead of a 10-minute limit: %v", err)
	}
	if err := s.Cancel("a", year.Add(9*time.Minute)); err != nil {
		t.Errorf("9 minutes ahead: %v", err)
	}

	// Negative: no limit.
	s = contractScheduler(t, Config{MaxClockSkew: -1})
	if err := s.Submit(job, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Cancel("a", year); err != nil {
		t.Errorf("no limit: %v", err)
	}
	if _, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}}); err != nil {
		t.Fatal(err)
	}
}

// TestEventsIdempotent is issue 25's defect 9: a redelivered event is
// reported as already applied (ErrAlreadyApplied, distinguishable from a
// job that never existed) and changes nothing — even stamped before the
// latest time seen, as a redelivery is; an ended ID cannot be submitted
// again while it is remembered (Config.MaxTombstones, oldest forgotten
// first); Migrated for an unknown job is ErrUnknownJob.
func TestEventsIdempotent(t *testing.T) {
	s := contractScheduler(t, Config{MaxTombstones: 2})
	job := func(id string) workload.Job {
		return workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 2}}}
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		if err := s.Submit(job(id), t0); err != nil {
			t.Fatal(err)
		}
	}
	t1 := t0.Add(time.Minute)
	bindAndStart(t, s, t1)
	applied := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrAlreadyApplied) || errors.Is(err, ErrUnknownJob) {
			t.Errorf("%s: %v, want ErrAlreadyApplied", what, err)
		}
	}
	applied("Started again", s.Started("a", t1))
	applied("Started again, stamped earlier", s.Started("a", t0))
	t2 := t1.Add(time.Minute)
	if err := s.Finished("a", t2); err != nil {
		t.Fatal(err)
	}
	applied("Finished again", s.Finished("a", t2))
	applied("Finished again, stamped earlier", s.Finished("a", t1))
	applied("Cancel after Finished", s.Cancel("a", t2))
	applied("Started after Finished", s.Started("a", t2))
	applied("re-Submit of a finished ID", s.Submit(job("a"), t2))
	if _, ok := s.Job("a"); ok || s.Len() != 3 {
		t.Errorf("the finished job came back (%d jobs)", s.Len())
	}
	if err := s.Finished("never", t2); !errors.Is(err, ErrUnknownJob) || errors.Is(err, ErrAlreadyApplied) {
		t.Errorf("Finished for a job that never existed: %v, want ErrUnknownJob", err)
	}
	if err := s.Migrated("never", t2); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("Migrated for a job that never existed: %v, want ErrUnknownJob", err)
	}
	applied("Migrated after Finished", s.Migrated("a", t2))

	if err := s.Preempted("b", t2); err != nil {
		t.Fatal(err)
	}
	applied("Preempted again", s.Preempted("b", t2))
	applied("Preempted again, stamped earlier", s.Preempted("b", t1))
	if st, _ := s.Job("b"); st.State != queue.Preempted || st.Preemptions != 1 {
		t.Errorf("b after a duplicate Preempted: %s, %d preemptions", st.State, st.Preemptions)
	}
	if !s.Now().Equal(t2) {
		t.Errorf("Now() = %s, the duplicates moved the clock", stamp(s.Now()))
	}

	// Two tombstones: a, c, d end; a is forgotten first and may come back.
	if err := s.Cancel("c", t2); err != nil {
		t.Fatal(err)
	}
	if err := s.Failed("d", t2); err != nil {
		t.Fatal(err)
	}
	applied("re-Submit of a cancelled ID", s.Submit(job("c"), t2))
	applied("re-Submit of a failed ID", s.Submit(job("d"), t2))
	if err := s.Submit(job("a"), t2); err != nil {
		t.Errorf("a, forgotten by the bounded tombstones, submitted again: %v", err)
	}
	if got := s.Tombstones(); len(got) != 2 || got[0].Job != "c" || got[1].Job != "d" || got[0].State != queue.Cancelled || got[1].State != queue.Failed {
		t.Errorf("tombstones %+v, want c (cancelled) then d (failed)", got)
	}
}

// TestEmptyTaskRefused (issue 25, "Also"): a task asking for no GPU, CPU
// or memory is refused at Submit, naming the group; nothing is queued.
func TestEmptyTaskRefused(t *testing.T) {
	s := contractScheduler(t, Config{})
	for _, groups := range [][]workload.TaskGroup{
		{{Count: 1}},
		{{Name: "w", Count: 2, GPUs: 1}, {Name: "idle", Count: 1}},
	} {
		err := s.Submit(workload.Job{ID: "e", Queue: "q", Groups: groups}, t0)
		var fe *workload.FieldError
		if !errors.As(err, &fe) || !strings.Contains(fe.Field, fmt.Sprintf("groups[%d]", len(groups)-1)) || !strings.Contains(err.Error(), "no GPU, CPU or memory") {
			t.Errorf("groups %+v: %v, want a field error naming the empty group", groups, err)
		}
	}
	if s.Len() != 0 || len(s.Schedule(t0).Bindings) != 0 {
		t.Error("an empty task was queued")
	}
	// A CPU-only or memory-only task is not empty.
	if err := s.Submit(workload.Job{ID: "cpu", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, CPUMilli: 500}}}, t0); err != nil {
		t.Error(err)
	}
	if err := s.Submit(workload.Job{ID: "mem", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, MemoryMiB: 512}}}, t0); err != nil {
		t.Error(err)
	}
}

// TestSetHostHealthByName (issue 25, "Also"): SetHostHealth takes a host
// name, as Cordon, RemoveHosts and SetDomainHealth do; an unknown name is
// an error naming it.
func TestSetHostHealthByName(t *testing.T) {
	s := contractScheduler(t, Config{Cluster: testCluster(t, 2, 0)})
	if err := s.Submit(workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, t0); err != nil {
		t.Fatal(err)
	}
	bindAndStart(t, s, t0)
	st, _ := s.Job("a")
	host := s.Cluster().HostName(st.Placement.Claims[0].Host)
	ids, err := s.SetHostHealth(host, topology.Failed)
	if err != nil || len(ids) != 1 || ids[0] != "a" {
		t.Fatalf("SetHostHealth(%s) = %v, %v", host, ids, err)
	}
	if _, err := s.SetHostHealth("nope", topology.Failed); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown host: %v", err)
	}
}
