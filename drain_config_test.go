package gpusched

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestDrainConfig: Config.DrainGrace sets the grace of drained jobs and
// Config.DrainKeep keeps jobs that end soon on a draining host.
func TestDrainConfig(t *testing.T) {
	c := testCluster(t, 1, 0)
	qs := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}
	s, err := New(Config{Cluster: c, Queues: qs, DrainGrace: 5 * time.Minute, DrainKeep: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	short, long := gpuJob("short", 4), gpuJob("long", 4)
	short.Runtime, long.Runtime = 30*time.Minute, 10*time.Hour
	for _, spec := range []workload.Job{short, long} {
		if err := s.Submit(spec, t0); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(t0)
	if len(d.Bindings) != 2 {
		t.Fatalf("bindings %+v", d.Bindings)
	}
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetHostHealth(s.Cluster().HostName(0), topology.Draining); err != nil {
		t.Fatal(err)
	}
	d = s.Schedule(t0.Add(10 * time.Minute))
	got := map[string]Recovery{}
	for _, r := range d.Recoveries {
		got[r.Job] = r
	}
	if r := got["short"]; r.Action != preempt.ActionKeep {
		t.Errorf("short: %+v, want keep (ends within DrainKeep)", r)
	}
	if r := got["long"]; r.Action != preempt.ActionDrain || r.Grace != 5*time.Minute {
		t.Errorf("long: %+v, want drain with DrainGrace", r)
	}

	for _, bad := range []Config{
		{Cluster: c, Queues: qs, MaxRestarts: -1},
		{Cluster: c, Queues: qs, DrainGrace: -time.Second},
		{Cluster: c, Queues: qs, DrainKeep: -time.Second},
	} {
		if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
