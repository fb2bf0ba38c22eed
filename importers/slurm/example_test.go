package slurm_test

import (
	"fmt"

	"github.com/gpusched/gpusched/importers/slurm"
)

// Import a small site from its slurm.conf and topology.conf: every setting
// gpusched does not model is a warning with its file and line.
func Example() {
	conf, warns, err := slurm.ParseConf([]byte(`
NodeName=gpu[01-04] CPUs=64 RealMemory=512000 Gres=gpu:h100:8
SchedulerParameters=bf_window=1440,bf_max_job_user=10
PartitionName=batch Nodes=ALL Default=YES MaxTime=2-0
`), "slurm.conf")
	if err != nil {
		fmt.Println(err)
		return
	}
	topo, _, err := slurm.ParseTopology([]byte("SwitchName=leaf1 Nodes=gpu[01-02]\nSwitchName=leaf2 Nodes=gpu[03-04]\nSwitchName=spine Switches=leaf[1-2]\n"), "topology.conf")
	if err != nil {
		fmt.Println(err)
		return
	}
	site := &slurm.Site{Conf: conf, Topology: topo, Warnings: warns}
	c, err := site.Cluster()
	if err != nil {
		fmt.Println(err)
		return
	}
	p := site.Preset()
	fmt.Println(c)
	fmt.Println("placer:", p.Placer, "backfill window:", p.BfWindow, "default runtime:", p.DefaultRuntime)
	for _, w := range site.Warnings {
		fmt.Println("warning:", w)
	}
	_, _, err = slurm.ParseTopology([]byte("SwitchName=leaf1 Nodes=gpu[01-02]\nSwitchName=spine Switches=leaf[1-2]\n"), "topology.conf")
	fmt.Println(err)
	// Output:
	// cluster slurm: 4 hosts, 32 GPUs, 16 domains
	// placer: topology backfill window: 24h0m0s default runtime: 48h0m0s
	// warning: slurm.conf:3: SchedulerParameters: bf_max_job_user: not modelled (ignored)
	// topology.conf:2: Switches: switch spine names child leaf2, which no SwitchName line declares
}
