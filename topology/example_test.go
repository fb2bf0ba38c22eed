package topology_test

import (
	"fmt"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// Build a preset cluster and ask how GPUs are connected: inside an
// NVSwitch domain, across hosts under one ToR, across ToRs.
func ExampleCluster_Link() {
	c, err := topology.LoadPreset("h100-1k") // 125 DGX H100, 32 to a ToR
	if err != nil {
		panic(err)
	}
	fmt.Println(c)
	gpu := func(host string, i int) topology.GPUID {
		h, _ := c.HostByName(host)
		first, _ := c.HostGPUs(h)
		return first + topology.GPUID(i)
	}
	for _, pair := range [][2]topology.GPUID{
		{gpu("dgx-h100-001", 0), gpu("dgx-h100-001", 7)},
		{gpu("dgx-h100-001", 0), gpu("dgx-h100-002", 0)},
		{gpu("dgx-h100-001", 0), gpu("dgx-h100-033", 0)},
	} {
		l := c.Link(pair[0], pair[1])
		fmt.Printf("%s - %s: %v via %s, %g GB/s\n", c.GPUName(pair[0]), c.GPUName(pair[1]), l.Kind, c.LevelName(l.Level), l.BandwidthGBps)
	}
	// Output:
	// cluster h100-1k: 125 hosts, 1000 GPUs, 2505 domains
	// dgx-h100-001/gpu0 - dgx-h100-001/gpu7: NV via nvlink, 450 GB/s
	// dgx-h100-001/gpu0 - dgx-h100-002/gpu0: NET via tor, 8 GB/s
	// dgx-h100-001/gpu0 - dgx-h100-033/gpu0: NET via cluster, 4 GB/s
}

// Allocate a gang of two tasks as one transaction and release it; the
// free counters of every domain follow.
func ExampleLedger_Allocate() {
	c, _ := topology.LoadPreset("h100-1k")
	l := topology.NewLedger(c)
	h0, _ := c.HostByName("dgx-h100-001")
	h1, _ := c.HostByName("dgx-h100-002")
	first0, _ := c.HostGPUs(h0)
	first1, _ := c.HostGPUs(h1)
	tor := c.HostAt(h0, c.LevelCluster()-1)
	show := func(when string) {
		fmt.Printf("%-9s host0 %d free, ToR %d free, cluster %d free, %d milli-cores left on host0\n",
			when, l.HostFreeGPUs(h0), l.FreeGPUs(tor), l.FreeGPUs(c.Root()), l.CPUFree(h0))
	}
	show("empty:")
	gang := []topology.Claim{
		{Host: h0, CPUMilli: 32000, MemoryMiB: 262144, GPUs: []topology.GPUClaim{{GPU: first0}, {GPU: first0 + 1}}},
		{Host: h1, CPUMilli: 32000, MemoryMiB: 262144, GPUs: []topology.GPUClaim{{GPU: first1}, {GPU: first1 + 1}}},
	}
	if err := l.Allocate(gang...); err != nil {
		panic(err)
	}
	show("gang:")
	// A second claim on a busy GPU fails whole and changes nothing.
	err := l.Allocate(topology.Claim{Host: h0, GPUs: []topology.GPUClaim{{GPU: first0 + 2}, {GPU: first0}}})
	fmt.Println("again:", err)
	if err := l.Release(gang...); err != nil {
		panic(err)
	}
	show("released:")
	fmt.Println("check:", l.Check())
	// Output:
	// empty:    host0 8 free, ToR 256 free, cluster 1000 free, 224000 milli-cores left on host0
	// gang:     host0 6 free, ToR 252 free, cluster 996 free, 192000 milli-cores left on host0
	// again: allocate dgx-h100-001/gpu0: GPU busy (GPU is whole, 1000/1000 milli used)
	// released: host0 8 free, ToR 256 free, cluster 1000 free, 224000 milli-cores left on host0
	// check: <nil>
}

// Find the best-fit host for a 4-GPU task under one ToR: the host with the
// fewest free GPUs that still has 4, so that emptier hosts stay whole for
// larger tasks.
func ExampleLedger_BestHost() {
	c, _ := topology.LoadPreset("h100-1k")
	l := topology.NewLedger(c)
	// Fill the first hosts of ToR 1 unevenly: host i keeps 8-i free GPUs.
	for h := topology.HostID(0); h < 8; h++ {
		first, _ := c.HostGPUs(h)
		for g := first; g < first+topology.GPUID(h); g++ {
			if err := l.AllocateGPU(g); err != nil {
				panic(err)
			}
		}
	}
	tor, _ := c.LevelByName("tor")
	tor1 := c.DomainsAt(tor)[0]
	h, ok := l.BestHost(tor1, 4, topology.NoModel)
	fmt.Println(c.DomainName(tor1), c.HostName(h), ok, l.HostFreeGPUs(h))
	// The three best fits, in order.
	n := 0
	l.AscendHosts(tor1, topology.NoModel, 4, func(h topology.HostID, free int) bool {
		fmt.Printf("  %s: %d free\n", c.HostName(h), free)
		n++
		return n < 3
	})
	// Output:
	// tor1 dgx-h100-005 true 4
	//   dgx-h100-005: 4 free
	//   dgx-h100-004: 5 free
	//   dgx-h100-003: 6 free
}

// Describe a cluster in code: two ToRs of PCIe hosts whose GPUs are paired
// by NVLink bridges, then build it and look at one host.
func ExampleBuild() {
	s := topology.Spec{
		Version: topology.SpecVersion,
		Name:    "lab",
		Levels:  []topology.LevelSpec{{Name: "tor", BandwidthGBps: 25}},
		Accelerators: []topology.AcceleratorSpec{
			{Model: "L40S-48GB", Vendor: "nvidia", MemoryMiB: 46068, ComputeCapability: "8.9"},
		},
		Templates: []topology.HostTemplate{{
			Name: "l40s-4", CPUMilli: 64000, MemoryMiB: 524288, Accelerator: "L40S-48GB", GPUs: 4,
			NUMA: []topology.NUMASpec{
				{ID: 0, PCIe: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{GPUs: []int{0, 1}}}}}},
				{ID: 1, PCIe: []topology.PCIeSpec{{Switches: []topology.PCIeSpec{{GPUs: []int{2, 3}}}}}},
			},
			Fabrics: []topology.HostFabricSpec{
				{Kind: topology.FabricNVLinkBridge, GPUs: []int{0, 1}},
				{Kind: topology.FabricNVLinkBridge, GPUs: []int{2, 3}},
			},
		}},
		Switches: []topology.SwitchGroup{{Name: "tor[1-2]", Level: "tor"}},
		Hosts:    []topology.HostGroup{{Name: "node[01-06]", Template: "l40s-4", Parent: "tor[1-2]", PerParent: 3}},
	}
	c, err := topology.Build(s)
	if err != nil {
		panic(err)
	}
	fmt.Println(c)
	first, n := c.HostGPUs(0)
	for a := first; a < first+topology.GPUID(n); a++ {
		var row []string
		for b := first; b < first+topology.GPUID(n); b++ {
			row = append(row, c.Link(a, b).Kind.String())
		}
		fmt.Println(c.GPUName(a), strings.Join(row, " "))
	}
	var up []string
	for _, d := range c.Ancestors(first) {
		up = append(up, c.DomainName(d))
	}
	fmt.Println(strings.Join(up, " < "))
	// A mistake names the field.
	s.Hosts[0].Template = "l40s-8"
	_, err = topology.Build(s)
	fmt.Println(err)
	// Output:
	// cluster lab: 6 hosts, 24 GPUs, 57 domains
	// node01/gpu0 X NV SYS SYS
	// node01/gpu1 NV X SYS SYS
	// node01/gpu2 SYS SYS X NV
	// node01/gpu3 SYS SYS NV X
	// node01/numa0/pci0/sw0 < node01/numa0/pci0 < node01/numa0 < node01 < tor1 < lab
	// hosts[0].template: unknown template "l40s-8"
}

// Load your own node list in the CSV form of the Alibaba GPU trace.
func ExampleParseNodeList() {
	const nodes = `sn,cpu_milli,memory_mib,gpu,model
gpu-01,96000,393216,8,V100M32
gpu-02,96000,393216,8,V100M32
gpu-03,96000,393216,8,V100M32
cpu-01,32000,131072,0,
`
	s, err := topology.ParseNodeList(strings.NewReader(nodes), "mine")
	if err != nil {
		panic(err)
	}
	for _, g := range s.Hosts {
		fmt.Println(g.Name, g.Template)
	}
	c, _ := topology.Build(s)
	fmt.Println(c)
	_, err = topology.ParseNodeList(strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\nn1,lots,1,0,\n"), "bad")
	fmt.Println(err)
	// Output:
	// gpu-[01-03] V100M32x8-96c-384Gi
	// cpu-01 cpu-32c-128Gi
	// cluster mine: 4 hosts, 24 GPUs, 13 domains
	// line 2, column 4 (cpu_milli): "lots" is not a whole number
}
