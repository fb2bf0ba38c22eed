package gpusched

import (
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
func bindAndStart(t *testing.T, s *Scheduler, now time.Time) Decision {
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
	if _, err := s.SetHostHealth(0, topology.Failed); err != nil {
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
