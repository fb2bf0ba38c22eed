package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestMaxTasksPerHostGrowBack: an elastic job of one task per host (three
// 4-GPU tasks on three 8-GPU hosts) shrinks by one task for an urgent
// 8-GPU job and grows back when it ends: the new task goes to the host
// without one of the job's tasks, not next to a task it kept (where the
// other 4 GPUs are free too).
func TestMaxTasksPerHostGrowBack(t *testing.T) {
	s := elasticScheduler(t, 3)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	hostsOf := func(cls []topology.Claim) map[topology.HostID]int {
		m := map[topology.HostID]int{}
		for _, cl := range cls {
			m[cl.Host]++
		}
		return m
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	must(s.Submit(workload.Job{ID: "train", Queue: "q", MaxTasksPerHost: 1, Groups: []workload.TaskGroup{{Count: 3, MinCount: 2, GPUs: 4}}}, now))
	for _, b := range s.Schedule(now).Bindings {
		if len(hostsOf(b.Placement.Claims)) != 3 {
			t.Fatalf("train placed %v, want one task per host", hostsOf(b.Placement.Claims))
		}
		must(s.Started(b.Job, now))
	}
	now = now.Add(time.Hour)
	must(s.Submit(workload.Job{ID: "urgent", Queue: "q", Priority: 10, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now))
	d := s.Schedule(now)
	if len(d.Shrinks) != 1 {
		t.Fatalf("shrinks %+v, want train's", d.Shrinks)
	}
	must(s.Shrunk("train", now.Add(time.Minute)))
	// grown handles a cycle's grows of train and checks its tasks per host.
	grown := func(d Decision) int {
		t.Helper()
		for _, g := range d.Grows {
			must(s.Grown(g.Job, now))
		}
		st, _ := s.Job("train")
		for h, n := range hostsOf(st.Placement.Claims) {
			if n > 1 {
				t.Fatalf("train has %d tasks on host %d after %d grows", n, h, len(d.Grows))
			}
		}
		return len(d.Grows)
	}
	now = now.Add(time.Minute)
	d = s.Schedule(now)
	for _, b := range d.Bindings {
		must(s.Started(b.Job, now))
	}
	if grown(d) != 0 {
		t.Fatalf("train grew while urgent holds the only host without its tasks")
	}
	now = now.Add(time.Hour)
	must(s.Finished("urgent", now))
	if grown(s.Schedule(now)) != 1 {
		t.Fatalf("train did not grow back once urgent ended")
	}
	st, _ := s.Job("train")
	if m := hostsOf(st.Placement.Claims); len(m) != 3 {
		t.Fatalf("train after the grow: tasks per host %v, want one on each of three hosts", m)
	}
}
