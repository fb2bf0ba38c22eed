package gpusched

import (
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestConfigAndSubmissions: Config returns the queue tree as last
// reconfigured, as a copy the caller may change; Submissions lists the
// live jobs in the order submitted, whatever their IDs and states.
func TestConfigAndSubmissions(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := stateTestScheduler(t, Config{Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{Levels: []topology.Level{topology.LevelFabric}}}})
	for _, id := range []string{"z", "a", "m", "gone"} {
		if err := s.Submit(workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
			t.Fatal(err)
		}
	}
	s.Schedule(t0)
	if err := s.Cancel("gone", t0); err != nil {
		t.Fatal(err)
	}
	if got := s.Submissions(); !slices.Equal(got, []string{"z", "a", "m"}) {
		t.Fatalf("Submissions %v", got)
	}
	next := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q", Quotas: []queue.Quota{{Resource: "gpu", Nominal: 16, Max: queue.Limit(16)}}}}}}
	if _, err := s.Reconfigure(next, nil, t0); err != nil {
		t.Fatal(err)
	}
	cfg := s.Config()
	if q := cfg.Queues.Root.Children[0].Quotas; len(q) != 1 || *q[0].Max != 16 {
		t.Fatalf("Config().Queues %+v, want as reconfigured", cfg.Queues)
	}
	*cfg.Queues.Root.Children[0].Quotas[0].Max = 1
	cfg.Defrag.Consolidate.Levels[0] = 0
	again := s.Config()
	if *again.Queues.Root.Children[0].Quotas[0].Max != 16 || again.Defrag.Consolidate.Levels[0] != topology.LevelFabric {
		t.Fatal("changing Config's result changed the Scheduler's")
	}
}
