package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// TestFinishTimeFairness: under queue.FinishTime the Scheduler serves the
// queue whose next job is furthest behind its fair finish time, using the
// cycle's time. One 8-GPU host, queues a and b (fair share 4 GPUs each);
// a runs a1 on 4 GPUs. At 2 h, a2 (4 GPUs, 10 min, waiting since 0) and
// b1 (4 GPUs, 1 h, just arrived) want the 4 free GPUs:
//
//	ρ(a2) = (2 h + 10 min) / (10 min × (4 + 4) / 4) = 130 / 20 = 6.5
//	ρ(b1) = 1 h / 1 h = 1
//
// so a2 starts, where DRF would start b1 (b uses nothing).
func TestFinishTimeFairness(t *testing.T) {
	for _, tc := range []struct {
		policy queue.FairPolicy
		want   string
	}{{queue.FinishTime, "a2"}, {queue.DRF, "b1"}} {
		s, err := New(Config{Cluster: testCluster(t, 1, 0), Queues: queue.Config{
			Fairness: queue.Fairness{Policy: tc.policy},
			Root:     queue.Node{Children: []queue.Node{{Name: "a"}, {Name: "b"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		job := func(id, q string, rt time.Duration) workload.Job {
			return workload.Job{ID: id, Queue: q, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}, Runtime: rt}
		}
		if err := s.Submit(job("a1", "a", 8*time.Hour), t0); err != nil {
			t.Fatal(err)
		}
		if d := s.Schedule(t0); len(d.Bindings) != 1 || d.Bindings[0].Job != "a1" {
			t.Fatalf("%s: first cycle %+v", tc.policy, d.Bindings)
		}
		// A 4-GPU filler in b keeps the other half busy until 2 h; it goes
		// before a2 under both policies (ρ 1 against 0.5; share 0).
		if err := s.Submit(job("fill", "b", 2*time.Hour), t0); err != nil {
			t.Fatal(err)
		}
		if err := s.Submit(job("a2", "a", 10*time.Minute), t0); err != nil {
			t.Fatal(err)
		}
		if d := s.Schedule(t0); len(d.Bindings) != 1 || d.Bindings[0].Job != "fill" {
			t.Fatalf("%s: second cycle %+v", tc.policy, d.Bindings)
		}
		at := t0.Add(2 * time.Hour)
		if err := s.Submit(job("b1", "b", time.Hour), at); err != nil {
			t.Fatal(err)
		}
		if err := s.Finished("fill", at); err != nil {
			t.Fatal(err)
		}
		d := s.Schedule(at)
		if len(d.Bindings) != 1 || d.Bindings[0].Job != tc.want {
			t.Fatalf("%s: at 2 h bound %+v, want %s", tc.policy, d.Bindings, tc.want)
		}
	}
}
