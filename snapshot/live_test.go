package snapshot

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// A state captured after live changes (a host joined, another left, one
// failed) loads into a Scheduler on the same cluster, IDs included: the
// cluster's spec carries the changes (Spec.Live), and removed hosts are
// not reported as failed.
func TestCaptureAfterLiveChanges(t *testing.T) {
	sp, err := topology.Generator{Name: "lab", Machine: "dgx-h100", Hosts: 4, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := gpusched.Config{Cluster: c, Queues: queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}}
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	tor := c.DomainName(c.HostAt(0, topology.LevelHost+1))
	if err := s.AddHosts(topology.Change{Hosts: []topology.HostGroup{{Name: "joined", Template: c.Host(0).Template, Parent: tor}}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveHosts([]string{c.HostName(1)}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetHostHealth(c.HostName(2), topology.Failed); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}}, now); err != nil {
		t.Fatal(err)
	}
	for _, b := range s.Schedule(now).Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Cluster = s.Cluster()
	st, err := Capture(s, now, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := Encode(&file, st, ""); err != nil {
		t.Fatal(err)
	}
	l, err := Load(file.Bytes(), "state.yaml", Options{NoPreemption: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, file.String())
	}
	if got, want := l.Cluster.String(), s.Cluster().String(); got != want {
		t.Fatalf("loaded %s, captured %s", got, want)
	}
	a, _ := s.Job("a")
	b, _ := l.Scheduler.Job("a")
	if gpusched.FormatPlacement(s.Cluster(), a.Placement) != gpusched.FormatPlacement(l.Cluster, b.Placement) {
		t.Fatalf("placement %s, loaded %s", gpusched.FormatPlacement(s.Cluster(), a.Placement), gpusched.FormatPlacement(l.Cluster, b.Placement))
	}
}

// TestLoadedKeepsLeavingHosts: hosts waiting to leave (RemoveHosts) or to
// change shape (SetHostGPUs) once their jobs are gone are asked again on
// load (version 5): when the jobs end, they leave (or come back) in the
// loaded Scheduler as in the original.
func TestLoadedKeepsLeavingHosts(t *testing.T) {
	c := lab(t, 4)
	cfg := gpusched.Config{Cluster: c, Queues: oneQueue(queue.BestEffortFIFO)}
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"a", "b"} {
		if err := s.Submit(workload.Job{ID: id, Queue: "a", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now); err != nil {
			t.Fatal(err)
		}
	}
	d := s.Schedule(now)
	if len(d.Bindings) != 2 {
		t.Fatalf("bindings %s", d.Format(c))
	}
	for _, b := range d.Bindings {
		if err := s.Started(b.Job, now); err != nil {
			t.Fatal(err)
		}
	}
	host := func(id string) string { st, _ := s.Job(id); return c.HostName(st.Placement.Claims[0].Host) }
	ha, hb := host("a"), host("b")
	if _, err := s.RemoveHosts([]string{ha}, now); err != nil {
		t.Fatal(err)
	}
	small := topology.HostTemplate{Name: "small", CPUMilli: 100000, MemoryMiB: 1 << 20, Accelerator: c.Models()[0].Model, GPUs: 4}
	if _, err := s.SetHostGPUs(hb, small.Name, []topology.HostTemplate{small}, now); err != nil {
		t.Fatal(err)
	}
	cfg.Cluster = s.Cluster()
	l, file := reload(t, s, now, cfg, Options{NoPreemption: true})
	if got, want := fmt.Sprint(l.Scheduler.Leaving()), fmt.Sprint(s.Leaving()); got != want || len(l.State.Leaving) != 2 {
		t.Fatalf("loaded leaving %s, original %s\n%s", got, want, file)
	}
	now = now.Add(time.Minute)
	for _, x := range []*gpusched.Scheduler{s, l.Scheduler} {
		for _, id := range []string{"a", "b"} {
			if err := x.Finished(id, now); err != nil {
				t.Fatal(err)
			}
		}
		x.Schedule(now)
		if len(x.Leaving()) != 0 {
			t.Fatalf("still leaving: %v", x.Leaving())
		}
	}
	if got, want := l.Scheduler.Cluster().String(), s.Cluster().String(); got != want {
		t.Fatalf("loaded cluster %s, original %s", got, want)
	}
	if _, ok := l.Scheduler.Cluster().HostByName(ha); ok {
		t.Fatalf("%s did not leave", ha)
	}
	if h, ok := l.Scheduler.Cluster().HostByName(hb); !ok || l.Scheduler.Cluster().Host(h).NumGPUs != 4 {
		t.Fatalf("%s did not come back with 4 GPUs", hb)
	}
}
