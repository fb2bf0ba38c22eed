package sim_test

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
)

// TestHardPartition: two VCs of one 8-GPU host each on a 3-host cluster.
// VC a's second job waits for a's host although b's host is idle; a job
// of no VC runs on the shared third host; the VCs' hosts keep their
// switches.
func TestHardPartition(t *testing.T) {
	sp, p, c := twoVCs(t)
	if c.NumHosts() != 3 || c.NumGPUs() != 24 {
		t.Fatalf("partitioned cluster: %d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
	if got := p.Models["a"]; len(got) != 1 || got[0] == p.Models["b"][0] {
		t.Fatalf("models %v", p.Models)
	}
	jobs := []trace.Job{
		tj("a1", 0, time.Hour, 0, gpus(8)), tj("a2", time.Minute, time.Hour, 0, gpus(8)),
		tj("free", 2*time.Minute, time.Hour, 0, gpus(8)),
	}
	jobs[0].Spec.Queue, jobs[1].Spec.Queue, jobs[2].Spec.Queue = "a", "a", "none"
	for i := range 2 {
		orig := jobs[i].Spec.Groups
		if !p.Restrict(&jobs[i].Spec, "a") {
			t.Fatal("Restrict: a is a VC")
		}
		if len(orig[0].Models) != 0 {
			t.Fatal("Restrict changed the caller's groups")
		}
	}
	if p.Restrict(&jobs[2].Spec, "none") {
		t.Fatal("Restrict: none is no VC")
	}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Audit: true}, jobs)
	got := byID(r)
	// a2 waits for a1 (59 min), on a's host; free starts at once.
	if w := got["a2"].Start - got["a2"].Submit; w != 3540 {
		t.Errorf("a2 waited %v s, want 3540 (for a1, not on b's idle host)", w)
	}
	if got["free"].Start != got["free"].Submit {
		t.Errorf("free waited: %+v", got["free"])
	}
	if _, err := sim.HardPartition(sp, []trace.VC{{Name: "a", Nodes: 2}, {Name: "b", Nodes: 2}}); err == nil {
		t.Error("4 VC hosts on a 3-host cluster: no error")
	}
}

// twoVCs partitions a 3-host cluster of 8-GPU hosts into VCs a and b of
// one host each; the third host is shared.
func twoVCs(t *testing.T) (topology.Spec, *sim.Partition, *topology.Cluster) {
	t.Helper()
	sp, err := topology.Generator{Machine: "pcie-8gpu", Hosts: 3, HostsPerToR: 2}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sim.HardPartition(sp, []trace.VC{{Name: "a", Nodes: 1, GPUs: 8}, {Name: "b", Nodes: 1, GPUs: 8}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(p.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return sp, p, c
}

// TestPartitionNotFragmentation: while VC a's second job waits for a's
// host, b's idle host and the shared host are free, but no pending job
// may use them: partition boundaries, not fragmentation (all 16 free
// GPUs counted as unusable before).
func TestPartitionNotFragmentation(t *testing.T) {
	_, p, c := twoVCs(t)
	jobs := []trace.Job{tj("a1", 0, time.Hour, 0, gpus(8)), tj("a2", time.Minute, time.Hour, 0, gpus(8))}
	for i := range jobs {
		jobs[i].Spec.Queue = "a"
		p.Restrict(&jobs[i].Spec, "a")
	}
	r := simtest.Run(t, sim.Config{Cluster: c, Scheduler: simtest.NewFIFO(c), Audit: true, SampleEvery: time.Minute}, jobs)
	f := r.Summary.Fragmentation
	// (The sample at a1's end also sees a's own host free, usable by a2.)
	if f.Samples == 0 || f.UnusableShareFree != 0 || f.MeanPartitionedGPUs != 16 || f.PartitionedShareFree < 0.98 {
		t.Errorf("fragmentation %+v: want the 16 free GPUs of b and the shared host behind the partition, none fragmented", f)
	}
}
