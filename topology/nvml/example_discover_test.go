//go:build cgo

package nvml_test

import (
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpusched/gpusched/topology/nvml"
)

// describeDGXH100 fills in what go-nvml's DGX H100 mock leaves out: bus IDs,
// NUMA nodes, PCIe levels (NODE within a socket, SYS across) and 18 NVLinks
// per GPU to the NVSwitches. On a real host, NVML answers all of this.
func describeDGXH100(s *server.Server) {
	bus := []string{"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"}
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
			var p gonvml.PciInfo
			for k, c := range "00000000:" + bus[i] + ":00.0" {
				p.BusId[k] = int8(c)
			}
			return p, gonvml.SUCCESS
		}
		dev.GetMemoryAffinityFunc = func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) {
			return []uint{1 << uint(i/4)}, gonvml.SUCCESS // NUMA node 0 or 1
		}
		dev.GetNumaNodeIdFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
		dev.GetCpuAffinityWithinScopeFunc = func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) {
			return []uint{0xff << (8 * uint(i/4))}, gonvml.SUCCESS // CPUs 0-7 or 8-15
		}
		dev.GetTopologyCommonAncestorFunc = func(o gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
			if o.(*server.Device).Index/4 != i/4 {
				return gonvml.TOPOLOGY_SYSTEM, gonvml.SUCCESS
			}
			return gonvml.TOPOLOGY_NODE, gonvml.SUCCESS
		}
		dev.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
			if l >= 18 {
				return 0, gonvml.ERROR_INVALID_ARGUMENT
			}
			return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
		}
		dev.GetNvLinkVersionFunc = func(int) (uint32, gonvml.Return) { return 4, gonvml.SUCCESS }
		dev.GetNvLinkRemoteDeviceTypeFunc = func(int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
			return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
		}
		dev.GetNvLinkRemotePciInfoFunc = func(int) (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, gonvml.SUCCESS }
		dev.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
			return gonvml.GpuFabricInfo{}, gonvml.ERROR_NOT_SUPPORTED
		}
	}
}

// Discover reads a host through NVML; here go-nvml's DGX H100 mock server
// plays the driver and a StaticHost plays /proc and /sys.
func ExampleDiscover() {
	lib := dgxh100.New()
	describeDGXH100(lib)
	host := nvml.StaticHost{HostInfo: nvml.HostInfo{Hostname: "dgx-a01", CPUMilli: 16000, MemoryMiB: 65536}}

	res, err := nvml.Discover(lib, nvml.Options{Host: host})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := res.Template
	fmt.Printf("%s: %d × %s (%s), driver %s\n", res.Hostname, t.GPUs, t.Accelerator, res.GPUs[0].Name, res.DriverVersion)
	fmt.Println("GPU 4 is", res.GPUs[4].BusID)
	for _, n := range t.NUMA {
		fmt.Printf("NUMA %d (CPUs %s): %d host bridges\n", n.ID, n.CPUs, len(n.PCIe))
	}
	for _, f := range t.Fabrics {
		fmt.Printf("%s domain: GPUs %v at %v GB/s\n", f.Kind, f.GPUs, f.BandwidthGBps)
	}
	fmt.Println("MIG profiles:", len(res.Accelerator.MIG.Profiles))
	fmt.Println("warnings:", len(res.Warnings))
	// Output:
	// dgx-a01: 8 × H100-SXM5-80GB (NVIDIA H100 80GB HBM3), driver 550.54.15
	// GPU 4 is 0000:9a:00.0
	// NUMA 0 (CPUs 0-7): 4 host bridges
	// NUMA 1 (CPUs 8-15): 4 host bridges
	// nvswitch domain: GPUs [0 1 2 3 4 5 6 7] at 450 GB/s
	// MIG profiles: 7
	// warnings: 0
}
