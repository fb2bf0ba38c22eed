package gpusched

import (
	"errors"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestSetHostFilter (issue 26, defect 4): a job with a host filter is
// placed only on hosts it allows, though another host is the placer's
// first choice; one whose filter allows no free host waits, and jobs
// without a filter are unaffected. Removing the filter lets it go
// anywhere again.
func TestSetHostFilter(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 3, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"only2", "none", "free"} {
		if err := s.Submit(gpuJob(id, 8), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetHostFilter("only2", HostFilter{Key: "h2", Allow: func(h topology.HostID) bool { return h == 2 }}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHostFilter("none", HostFilter{Key: "none", Allow: func(topology.HostID) bool { return false }}); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t0)
	where := map[string]topology.HostID{}
	for _, b := range d.Bindings {
		where[b.Job] = b.Placement.Claims[0].Host
	}
	if h, ok := where["only2"]; !ok || h != 2 {
		t.Errorf("only2 on %v %v, want host 2:\n%s", h, ok, d.Format(s.Cluster()))
	}
	if _, ok := where["none"]; ok {
		t.Errorf("none was placed against its filter")
	}
	if _, ok := where["free"]; !ok {
		t.Errorf("free (no filter) not placed:\n%s", d.Format(s.Cluster()))
	}
	if err := s.SetHostFilter("none", HostFilter{}); err != nil {
		t.Fatal(err)
	}
	if d := s.Schedule(t0.Add(1)); len(d.Bindings) != 1 || d.Bindings[0].Job != "none" {
		t.Errorf("after removing the filter:\n%s", d.Format(s.Cluster()))
	}
	if err := s.SetHostFilter("nobody", HostFilter{Key: "k", Allow: func(topology.HostID) bool { return true }}); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("unknown job: %v", err)
	}
	if err := s.SetHostFilter("only2", HostFilter{Key: "k"}); err == nil {
		t.Error("a filter without Allow accepted")
	}
}

// TestSetHostFilterGroups (issue 26, defect 4): a gang of two 8-GPU task
// groups whose own host filters share no host (group a on host 0 only,
// group b on host 2 only; three empty hosts) is placed in one cycle,
// each task on its group's host, though host 1 is as free; a job whose
// groups' filters leave room for one task only (both on host 1) waits.
// Keys tell filters apart: the two jobs share a shape, not a Key.
func TestSetHostFilterGroups(t *testing.T) {
	s, err := New(Config{Cluster: testCluster(t, 3, 0), Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	two := func(id string) workload.Job {
		return workload.Job{ID: id, Queue: "q", Groups: []workload.TaskGroup{{Name: "a", Count: 1, GPUs: 8}, {Name: "b", Count: 1, GPUs: 8}}, Runtime: time.Hour}
	}
	for _, id := range []string{"split", "crowded"} {
		if err := s.Submit(two(id), t0); err != nil {
			t.Fatal(err)
		}
	}
	split := HostFilter{Key: "a0-b2", Group: func(g int, h topology.HostID) bool { return h == topology.HostID(2*g) }}
	if err := s.SetHostFilter("split", split); err != nil {
		t.Fatal(err)
	}
	crowded := HostFilter{Key: "a1-b1", Group: func(_ int, h topology.HostID) bool { return h == 1 }}
	if err := s.SetHostFilter("crowded", crowded); err != nil {
		t.Fatal(err)
	}
	d := s.Schedule(t0)
	if len(d.Bindings) != 1 || d.Bindings[0].Job != "split" {
		t.Fatalf("want split alone placed:\n%s", d.Format(s.Cluster()))
	}
	for _, cl := range d.Bindings[0].Placement.Claims {
		if cl.Host != 0 && cl.Host != 2 {
			t.Errorf("split has a task on host %d", cl.Host)
		}
	}
	if a, b := d.Bindings[0].Placement.Claims[0].Host, d.Bindings[0].Placement.Claims[1].Host; a == b {
		t.Errorf("split's tasks share host %d", a)
	}
	if err := s.SetHostFilter("crowded", HostFilter{Key: "k"}); err == nil {
		t.Error("a filter with a Key and neither Allow nor Group accepted")
	}
}
