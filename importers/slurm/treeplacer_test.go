package slurm_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/workload"
)

// treeSite writes a two-leaf site: leaf1 holds n1-n3, leaf2 n4-n6, four
// GPUs each.
func treeSite(t *testing.T) *slurm.Site {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"slurm.conf": "ClusterName=t\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\nTopologyPlugin=topology/tree\n" +
			"SchedulerType=sched/backfill\nGresTypes=gpu\n" +
			"NodeName=n[1-6] CPUs=16 RealMemory=64000 Gres=gpu:h100:4\nPartitionName=p Nodes=n[1-6] Default=YES MaxTime=INFINITE\n",
		"topology.conf": "SwitchName=leaf1 Nodes=n[1-3]\nSwitchName=leaf2 Nodes=n[4-6]\nSwitchName=top Switches=leaf[1-2]\n",
		"gres.conf":     "NodeName=n[1-6] Name=gpu Type=h100 File=/dev/nvidia[0-3]\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := slurm.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTreeNodeOrder checks the preset's one-node placement against the
// rule topology/tree follows: the leaf switch with the fewest nodes that
// can take the job, then its first such node, not the node with the least
// room left; and that TreeNodeOrder off keeps gang's best fit.
func TestTreeNodeOrder(t *testing.T) {
	now := time.Unix(1_000, 0)
	job := func(id string, gpus int) workload.Job {
		return workload.Job{ID: id, Queue: "default", Groups: []workload.TaskGroup{{Count: 1, GPUs: gpus, CPUMilli: 1000, MemoryMiB: 1000}}, Runtime: time.Hour}
	}
	// All six nodes full, then n2 and n6 free; y (3 GPUs) takes n2 (both
	// leaves have one node with room: the lower switch), then n3 frees.
	// leaf1 has two nodes with room (n2 with one GPU, n3 with four), leaf2
	// one (n6): topology/tree puts a 1-GPU job on n6, gang's best fit on
	// n2, the node with the least room left.
	for _, tc := range []struct {
		order bool
		want  string
	}{{true, "n6"}, {false, "n2"}} {
		s := treeSite(t)
		p := s.Preset()
		if !p.TreeNodeOrder {
			t.Fatal("a topology/tree site's preset has TreeNodeOrder off")
		}
		p.TreeNodeOrder = tc.order
		cfg, err := p.Config(s)
		if err != nil {
			t.Fatal(err)
		}
		sch, err := gpusched.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		host := map[string]string{}
		run := func(j workload.Job) {
			t.Helper()
			if err := sch.Submit(j, now); err != nil {
				t.Fatal(err)
			}
			d := sch.Schedule(now)
			if len(d.Bindings) != 1 {
				t.Fatalf("TreeNodeOrder %v: %s not placed", tc.order, j.ID)
			}
			host[j.ID] = cfg.Cluster.HostName(d.Bindings[0].Placement.Claims[0].Host)
			if err := sch.Started(j.ID, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"f1", "f2", "f3", "f4", "f5", "f6"} {
			run(job(id, 4))
		}
		for _, id := range []string{"f2", "f6"} {
			if err := sch.Finished(id, now); err != nil {
				t.Fatal(err)
			}
		}
		run(job("y", 3))
		if err := sch.Finished("f3", now); err != nil {
			t.Fatal(err)
		}
		run(job("x", 1))
		if host["f2"] != "n2" || host["f3"] != "n3" || host["f6"] != "n6" || host["y"] != "n2" {
			t.Fatalf("TreeNodeOrder %v: set-up placed %v", tc.order, host)
		}
		if h := host["x"]; h != tc.want {
			t.Errorf("TreeNodeOrder %v: x on %s, want %s (placements %v)", tc.order, h, tc.want, host)
		}
	}
}
