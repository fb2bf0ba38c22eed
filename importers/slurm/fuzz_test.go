package slurm_test

import (
	"errors"
	"os"
	"testing"

	"github.com/gpusched/gpusched/importers/slurm"
	"github.com/gpusched/gpusched/topology"
)

func seed(f *testing.F, path string, more ...string) {
	if b, err := os.ReadFile(path); err == nil {
		f.Add(b)
	}
	for _, m := range more {
		f.Add([]byte(m))
	}
}

// checkErr fails unless err is nil or an *Error (never another kind).
func checkErr(t *testing.T, err error) {
	var e *slurm.Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("error %v is not a *slurm.Error", err)
	}
}

// FuzzParseConf: slurm.conf never panics, and whatever parses builds a
// cluster Spec that either builds or fails with an error.
func FuzzParseConf(f *testing.F) {
	seed(f, "testdata/site/slurm.conf", "NodeName=n[1-4] CPUs=8 Gres=gpu:a100:4\nPartitionName=p Nodes=ALL\n",
		"NodeName=DEFAULT CPUs=2\nNodeName=x Sockets=2 CoresPerSocket=4 \\\n RealMemory=9\n", "SchedulerParameters=bf_window=1,bf_continue\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := slurm.ParseConf(data, "slurm.conf")
		checkErr(t, err)
		if err != nil {
			return
		}
		s := &slurm.Site{Conf: c}
		sp, err := s.Spec()
		checkErr(t, err)
		if err == nil && len(c.Nodes) <= 256 {
			_, _ = topology.Build(sp)
		}
		_ = s.Preset()
	})
}

// FuzzParseTopology: topology.conf never panics; a parsed tree imports.
func FuzzParseTopology(f *testing.F) {
	seed(f, "testdata/site/topology.conf", "BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,8\n", "SwitchName=a Switches=b\nSwitchName=b Nodes=n1\n")
	conf, _, err := slurm.ParseConf([]byte("NodeName=n[1-8] CPUs=4 Gres=gpu:2\n"), "slurm.conf")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, _, err := slurm.ParseTopology(data, "topology.conf")
		checkErr(t, err)
		if err != nil || len(tp.Switches)+len(tp.Blocks) > 256 {
			return
		}
		s := &slurm.Site{Conf: conf, Topology: tp}
		if sp, err := s.Spec(); err == nil {
			_, _ = topology.Build(sp)
		}
	})
}

// FuzzParseTopologyYAML: topology.yaml never panics.
func FuzzParseTopologyYAML(f *testing.F) {
	seed(f, "", "- topology: t\n  cluster_default: true\n  tree:\n    switches:\n      - switch: s\n        nodes: n[1-2]\n",
		"- topology: b\n  block:\n    block_sizes: 4\n    blocks:\n      - block: b1\n        nodes: n1\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := slurm.ParseTopologyYAML(data, "topology.yaml")
		checkErr(t, err)
	})
}

// FuzzParseGres: gres.conf never panics.
func FuzzParseGres(f *testing.F) {
	seed(f, "testdata/site/gres.conf", "AutoDetect=off\nName=gpu Type=a File=/dev/nvidia[0-1] Cores=0-3\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		g, _, err := slurm.ParseGres(data, "gres.conf")
		checkErr(t, err)
		if err == nil {
			_ = g.GPUsOf("n1")
		}
	})
}

// FuzzParseAssoc: sacctmgr output never panics; a parsed tree converts.
func FuzzParseAssoc(f *testing.F) {
	seed(f, "testdata/site/assoc.txt", "Account|User|Share\nroot||1\n a||2\n a|u|1\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		a, _, err := slurm.ParseAssoc(data, "assoc.txt")
		checkErr(t, err)
		if err == nil {
			var w []slurm.Warning
			_ = a.Queues(0, &w)
		}
	})
}
