package topology_test

import (
	"fmt"
	"os"

	"github.com/gpusched/gpusched/topology"
)

// Load a cluster file from a string: two 8-GPU hosts under one ToR switch,
// described once as a template and named with a range.
func ExampleLoad() {
	const file = `
version: 1
name: lab
levels:
  - name: tor
accelerators:
  - model: H100-SXM5-80GB
    memoryMiB: 81559
templates:
  - name: dgx
    cpuMilli: 224000
    memoryMiB: 2097152
    accelerator: H100-SXM5-80GB
    gpus: 8
    numa:
      - id: 0
        pcie: [{switches: [{gpus: [0, 1, 2, 3]}]}]
      - id: 1
        pcie: [{switches: [{gpus: [4, 5, 6, 7]}]}]
    fabrics:
      - {kind: nvswitch, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
switches:
  - {name: tor1, level: tor}
hosts:
  - name: dgx[1-2]
    template: dgx
    parent: tor1
`
	c, err := topology.Load([]byte(file), "lab.yaml", topology.FormatYAML)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c)
	a, _ := c.HostByName("dgx1")
	b, _ := c.HostByName("dgx2")
	ga, _ := c.HostGPUs(a)
	gb, _ := c.HostGPUs(b)
	fmt.Println("dgx1 gpu0 - gpu1:", c.Link(ga, ga+1).Kind)
	l := c.Link(ga, gb)
	fmt.Println("dgx1 gpu0 - dgx2 gpu0:", l.Kind, "via", c.LevelName(l.Level))

	// A mistake is reported with its file, line, column and field.
	_, err = topology.Load([]byte("version: 1\ntemplates:\n  - name: dgx\n    gpus: eight\n"), "bad.yaml", topology.FormatAuto)
	fmt.Println(err)

	// Output:
	// cluster lab: 2 hosts, 16 GPUs, 18 domains
	// dgx1 gpu0 - gpu1: NV
	// dgx1 gpu0 - dgx2 gpu0: NET via tor
	// bad.yaml:4:11: templates[0].gpus: want an integer, got the string "eight"
}

// Save a preset as YAML; LoadFile reads it back.
func ExampleEncode() {
	s, err := topology.Preset("ascend-910")
	if err != nil {
		fmt.Println(err)
		return
	}
	s.Accelerators[0].ComputeCapability = "" // keep the output short
	if err := topology.Encode(os.Stdout, s, topology.FormatYAML); err != nil {
		fmt.Println(err)
	}
	// Output:
	// version: 1
	// name: ascend-910
	// accelerators:
	//   - model: Ascend910
	//     vendor: huawei
	//     memoryMiB: 32768
	// templates:
	//   - name: ascend-910
	//     cpuMilli: 192000
	//     memoryMiB: 1048576
	//     accelerator: Ascend910
	//     gpus: 8
	//     numa:
	//       - id: 0
	//         cpus: 0-47
	//         pcie: [{gpus: [0, 1]}]
	//       - id: 1
	//         cpus: 48-95
	//         pcie: [{gpus: [2, 3]}]
	//       - id: 2
	//         cpus: 96-143
	//         pcie: [{gpus: [4, 5]}]
	//       - id: 3
	//         cpus: 144-191
	//         pcie: [{gpus: [6, 7]}]
	//     fabrics:
	//       - kind: hccs
	//         gpus: [0, 1, 2, 3]
	//         bandwidthGBps: 56
	//       - kind: hccs
	//         gpus: [4, 5, 6, 7]
	//         bandwidthGBps: 56
	// hosts:
	//   - name: ascend-910-1
	//     template: ascend-910
}
