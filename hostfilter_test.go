package gpusched

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
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
