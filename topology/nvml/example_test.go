package nvml_test

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/topology/nvml"
)

// Assemble joins hosts discovered one by one: here three GB200 trays of one
// NVLink clique (as `gpusched topology discover` writes them) and a ToR per
// rack derived from the host names.
func ExampleAssemble() {
	tray, gb200, _ := topology.MachineTemplate("gb200-nvl72")
	var inputs []nvml.Input
	for i := 1; i <= 3; i++ {
		r := nvml.Result{
			Hostname: fmt.Sprintf("rack7-tray%02d", i), Template: tray, Accelerator: gb200,
			Fabric: &nvml.FabricMembership{ClusterUUID: "5eed0000-0000-4000-8000-000000000007", CliqueID: 1, BandwidthGBps: 900},
		}
		inputs = append(inputs, nvml.Input{Name: r.Hostname + ".yaml", Spec: r.Spec()})
	}
	rule, err := nvml.ParseHostRule(`^(rack\d+)-`, "tor-$1")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := nvml.Assemble(inputs, nvml.AssembleOptions{Name: "lab", Rule: &rule})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range spec.Fabrics {
		fmt.Printf("%s domain over %s (clique %d)\n", f.Kind, f.Hosts, f.CliqueID)
	}
	c, err := topology.Build(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.NumHosts(), "hosts,", c.NumGPUs(), "GPUs, templates:", c.Templates())
	fmt.Println("GPU 0 to GPU 11:", c.Link(0, 11).Kind)
	// Output:
	// mnnvl domain over rack7-tray[01-03] (clique 1)
	// 3 hosts, 12 GPUs, templates: [gb200-nvl72]
	// GPU 0 to GPU 11: NV
}
