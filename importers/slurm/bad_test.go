package slurm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/importers/slurm"
)

// TestBadInput: every broken file is an *Error naming file, line and
// setting; none panics.
func TestBadInput(t *testing.T) {
	conf := func(s string) func() error {
		return func() error { _, _, err := slurm.ParseConf([]byte(s), "slurm.conf"); return err }
	}
	topo := func(s string) func() error {
		return func() error { _, _, err := slurm.ParseTopology([]byte(s), "topology.conf"); return err }
	}
	topoYAML := func(s string) func() error {
		return func() error { _, _, err := slurm.ParseTopologyYAML([]byte(s), "topology.yaml"); return err }
	}
	gres := func(s string) func() error {
		return func() error { _, _, err := slurm.ParseGres([]byte(s), "gres.conf"); return err }
	}
	assoc := func(s string) func() error {
		return func() error { _, _, err := slurm.ParseAssoc([]byte(s), "assoc.txt"); return err }
	}
	site := func(c, g string) func() error {
		return func() error {
			cc, _, err := slurm.ParseConf([]byte(c), "slurm.conf")
			if err != nil {
				return err
			}
			gg, _, err := slurm.ParseGres([]byte(g), "gres.conf")
			if err != nil {
				return err
			}
			_, err = (&slurm.Site{Conf: cc, Gres: gg}).Spec()
			return err
		}
	}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"no nodes", conf("ClusterName=x\n"), "slurm.conf: NodeName: no nodes declared"},
		{"bad CPUs", conf("NodeName=n1 CPUs=eight\n"), `slurm.conf:1: CPUs: "eight": want an integer`},
		{"bad range", conf("\n\nNodeName=n[5-1] CPUs=8\n"), "slurm.conf:3: NodeName:"},
		{"huge range", conf("NodeName=n[0-99999999] CPUs=8\n"), "slurm.conf:1: NodeName:"},
		{"duplicate node", conf("NodeName=n[1-2] CPUs=8\nNodeName=n2 CPUs=4\n"), "slurm.conf:2: NodeName: node n2 already declared on line 1"},
		{"bad gres", conf("NodeName=n1 Gres=gpu:a:b:c:d\n"), "slurm.conf:1: Gres:"},
		{"bad gres count", conf("NodeName=n1 Gres=gpu:h100:x8\n"), "slurm.conf:1: Gres:"},
		{"too many GPUs", conf("NodeName=n1 Gres=gpu:4096\n"), "slurm.conf:1: Gres: 4096 GPUs on one node"},
		{"partition names unknown node", conf("NodeName=n1\nPartitionName=p Nodes=n[1-2]\n"), "slurm.conf:2: Nodes: partition p names node n2"},
		{"bad time", conf("NodeName=n1\nPartitionName=p Nodes=n1 MaxTime=1-2-3\n"), "slurm.conf:2: MaxTime:"},
		{"bad bf_window", conf("NodeName=n1\nSchedulerParameters=bf_window=soon\n"), "slurm.conf:2: SchedulerParameters: bf_window="},
		{"bad weight", conf("NodeName=n1\nPriorityWeightAge=-3\n"), "slurm.conf:2: PriorityWeightAge:"},
		{"unterminated quote", conf("NodeName=n1 Feature=\"a,b\n"), "slurm.conf:1: Feature: unterminated quote"},
		{"value without key", conf("NodeName=n1 =3\n"), "slurm.conf:1: a value without a key"},
		{"unknown child switch", topo("SwitchName=s1 Switches=s2\n"), "topology.conf:1: Switches: switch s1 names child s2"},
		{"switch cycle", topo("SwitchName=a Switches=b\nSwitchName=b Switches=a\n"), "is its own ancestor"},
		{"two parents", topo("SwitchName=l Nodes=n1\nSwitchName=a Switches=l\nSwitchName=b Switches=l\n"), "topology.conf:3: Switches: switch l is a child of both a and b"},
		{"node under two leaves", topo("SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n"), "topology.conf:2: Nodes: node n2 is under both a and b"},
		{"duplicate switch", topo("SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n"), "topology.conf:2: SwitchName: switch a already declared on line 1"},
		{"tree and block", topo("SwitchName=a Nodes=n1\nBlockName=b Nodes=n2\n"), "topology.conf:2: BlockName: BlockName in a file with SwitchName lines"},
		{"bad block sizes", topo("BlockName=b Nodes=n1\nBlockSizes=4,x\n"), "topology.conf:2: BlockSizes:"},
		{"yaml not a list", topoYAML("tree: {}\n"), "topology.yaml:1: want a list of topologies"},
		{"yaml no default", topoYAML("- topology: a\n  flat: true\n- topology: b\n  flat: true\n"), "2 topologies and none is cluster_default"},
		{"yaml bad switches", topoYAML("- topology: a\n  tree:\n    switches: 3\n"), "topology.yaml:3: tree: want switches: a list"},
		{"yaml syntax", topoYAML("- topology: a\n  tree: [\n"), "topology.yaml:"},
		{"gres without name", gres("File=/dev/nvidia0\n"), "gres.conf:1: Name: a line without Name="},
		{"gres count vs files", gres("Name=gpu File=/dev/nvidia[0-3] Count=2\n"), "gres.conf:1: Count: Count=2 but File= names 4 devices"},
		{"gres bad cores", gres("Name=gpu File=/dev/nvidia0 Cores=7-3\n"), "gres.conf:1: Cores:"},
		{"gres bad links", gres("Name=gpu File=/dev/nvidia0 Links=-1,x\n"), "gres.conf:1: Links:"},
		{"gres no devices", gres("Name=gpu Type=a100\n"), "gres.conf:1: File: a gpu line with neither File= nor Count="},
		{"gres vs slurm.conf", site("NodeName=n1 Gres=gpu:8\n", "NodeName=n1 Name=gpu File=/dev/nvidia[0-3]\n"), "gres.conf:1: NodeName: node n1: gres.conf declares 4 GPUs, slurm.conf line 1 says Gres=gpu:8"},
		{"assoc empty", assoc("\n"), "assoc.txt:1: empty file"},
		{"assoc no account", assoc("User|Share\nx|1\n"), "assoc.txt:1: Account: no Account column"},
		{"assoc short row", assoc("Account|User|Share\nroot|\n"), "assoc.txt:2: 2 fields; the header has 3"},
		{"assoc bad share", assoc("Account|User|Par Name|Share\nroot|||x\n"), `assoc.txt:2: Share: "x"`},
		{"assoc two roots", assoc("Account|User|Par Name|Share\nroot|||1\nother|||1\n"), "2 accounts without a parent"},
		{"assoc unknown parent", assoc("Account|User|Par Name|Share\nroot|||1\na||zz|1\n"), "assoc.txt:3: ParentName: parent account zz is not listed"},
		{"assoc bad tres", assoc("Account|User|Par Name|GrpTRES\nroot|||gpu\n"), "assoc.txt:2: GrpTRES:"},
		{"assoc two clusters", assoc("Cluster|Account|User|Par Name\nc1|root||\nc2|a||root\n"), "assoc.txt:3: Cluster: associations of two clusters"},
		{"assoc bad indentation", assoc("Account|User\nroot|\n   deep|\n"), "assoc.txt:3: Account: indented 3 deep"},
	} {
		err := tc.run()
		if err == nil {
			t.Errorf("%s: no error, want %q", tc.name, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if !errors.Is(err, slurm.ErrInvalid) {
			t.Errorf("%s: %v does not unwrap to ErrInvalid", tc.name, err)
		}
	}
}
