package snapshot

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/workload"
)

// TestLoadedOrdersRequeuedByRemainingTime (regression, found by
// TestLoadedDecidesAsOriginalBackfillPreempting after about 97,000
// streams): a job requeued with saved progress waits with its runtime
// estimate less that progress, which orders a shortest-first queue and
// picks the short jobs that backfill. Restore gave it its full estimate:
// here the loaded Scheduler started p (1 h) where the original started r
// (30 min left of 2 h).
func TestLoadedOrdersRequeuedByRemainingTime(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	base := "now: 2025-01-01T09:00:00Z\n" + tinyCluster + "queues: {root: {children: [{name: a, policy: {ordering: shortest-first}}]}}\n"
	l, must := loadBase(t, base, Options{NoPreemption: true})
	a := l.Scheduler
	job := func(id string, rt time.Duration) workload.Job {
		return workload.Job{ID: id, Queue: "a", Runtime: rt, Groups: []workload.TaskGroup{{Count: 1, GPUs: 2}}}
	}
	must(a.Submit(job("r", 2*time.Hour), at(9, 0)))
	must(a.Submit(job("f", 10*time.Hour), at(9, 0)))
	for _, b := range a.Schedule(at(9, 0)).Bindings {
		must(a.Started(b.Job, at(9, 0)))
	}
	// r saved 1 h 30 min of work and is requeued; p (1 h) arrives.
	must(a.Checkpointed("r", at(10, 30), at(10, 40)))
	must(a.Requeue("r", at(10, 40)))
	must(a.Submit(job("p", time.Hour), at(10, 40)))
	lb, file := reloaded(t, a, at(10, 40), CaptureOptions{}, Options{NoPreemption: true})
	da, db := a.Schedule(at(10, 40)), lb.Scheduler.Schedule(at(10, 40))
	x, y := da.Format(l.Cluster), db.Format(lb.Cluster)
	if x != y {
		t.Fatalf("the loaded Scheduler decides\n%s\nthe original\n%s\nstate:\n%s", y, x, file)
	}
	if len(da.Bindings) != 1 || da.Bindings[0].Job != "r" {
		t.Fatalf("want r (30 min left) started first:\n%s", x)
	}
}
