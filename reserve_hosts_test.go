package gpusched

import (
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

func slurmLikeScheduler(t *testing.T, hosts int, cfg Config) *Scheduler {
	t.Helper()
	cfg.Cluster = holdCluster(t, hosts, 0)
	cfg.Queues = queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Policy: queue.Policy{Ordering: queue.StrictFIFO, Backfill: true}}}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rtJob(id string, gpus int, rt time.Duration) workload.Job {
	return workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus}}, Runtime: rt}
}

// TestReserveWholeHosts: h1 runs r1 (6 of 8 GPUs, 10 min), h2 runs r2 (all
// 8, 20 min); j needs 4 GPUs and is reserved on h1 at 10 min. A one-GPU
// job of 30 minutes fits now in h1's two free GPUs and leaves j's four at
// 10 min: holding only the reserved GPUs it backfills, with
// ReserveWholeHosts (Slurm's node-space map: h1 is planned for j from 10
// to 20 min) it waits. A job that ends before 10 min backfills in both.
func TestReserveWholeHosts(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, whole := range []bool{false, true} {
		s := slurmLikeScheduler(t, 2, Config{BackfillAround: true, ReserveWholeHosts: whole})
		for _, j := range []workload.Job{rtJob("r1", 6, 10*time.Minute), rtJob("r2", 8, 20*time.Minute)} {
			if err := s.Submit(j, t0); err != nil {
				t.Fatal(err)
			}
		}
		holdCycle(t, s, t0)
		now := t0.Add(time.Minute)
		for _, j := range []workload.Job{rtJob("j", 4, 10*time.Minute), rtJob("long", 1, 30*time.Minute), rtJob("short", 1, 5*time.Minute)} {
			if err := s.Submit(j, now); err != nil {
				t.Fatal(err)
			}
		}
		d := holdCycle(t, s, now)
		got := bindings(d)
		want := []string{"long", "short"}
		if whole {
			want = []string{"short"}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("ReserveWholeHosts=%v: started %v, want %v", whole, got, want)
		}
		// j still starts when r1's estimate says: h1 is whole again.
		holdCycle(t, s, t0.Add(10*time.Minute))
		if err := s.Finished("r1", t0.Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		d = holdCycle(t, s, t0.Add(10*time.Minute))
		if !slices.Contains(bindings(d), "j") {
			t.Errorf("ReserveWholeHosts=%v: j not started at its reserved time: %v", whole, bindings(d))
		}
	}
}
