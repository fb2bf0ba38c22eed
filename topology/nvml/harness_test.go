//go:build cgo

package nvml

import (
	"fmt"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpusched/gpusched/topology"
)

// This file models real machines on top of go-nvml's mock servers.
//
// The mock servers (pkg/nvml/mock/dgx*, built on pkg/nvml/mock/server)
// implement the basics: device count and handles, UUID, name, index,
// compute capability, memory, MIG mode, and MIG profile tables. They leave
// out everything topological (PCI bus IDs, NUMA, CPU affinity, PCIe path
// levels, NVLink, fabric), so the machine model fills those in from each
// machine's documented layout.
//
// Two of the mocks' own values differ from what NVML reports on the real
// hardware, and the model overrides them so that discovery can be compared
// with the presets (which hold the hardware's values):
//
//   - total memory: the mocks use the nominal size (81920 MiB for an H100),
//     NVML the usable size (81559 MiB);
//   - MIG: the mocks give placement sizes in compute slices (3 for a
//     3g profile, 7 for the full GPU) and round profile memory, where NVML
//     gives memory slots (4 and 8, as nvidia-smi mig -lgipp shows) and the
//     exact instance memory. The model states the hardware tables in NVML's
//     raw form (profile kind, slice count, MiB, placements), and discovery
//     has to name and order them itself.
//
// TestStockMockMIG checks discovery on the mocks' untouched MIG tables.

// machine is a real machine as NVML and the OS would show it.
type machine struct {
	name    string   // the matching preset
	gpus    int      // GPU count
	bus     []string // NVML form, "00000000:18:00.0"
	numa    []int    // per GPU
	cpus    map[int]string
	level   func(i, j int) gonvml.GpuTopologyLevel
	sysfsSw []int // PCIe switches above each GPU as sysfs shows them

	memMiB  int64 // NVML total memory per GPU
	mig     []migRow
	noMIG   bool // GetMigMode says NOT_SUPPORTED
	links   int  // NVLinks per GPU, all to NVSwitches
	version uint32

	// gpuMemNUMA is the NUMA node of each GPU's own memory (Grace
	// systems only); nil where NVML says NOT_SUPPORTED.
	gpuMemNUMA []int

	host HostInfo

	// fabric reports GetGpuFabricInfo for GPU i; nil means NOT_SUPPORTED.
	fabric func(i int) (gonvml.GpuFabricInfo, gonvml.Return)

	// Faults.
	linksDown map[int]bool   // GPUs whose links are all down
	oldDriver bool           // LookupSymbol fails for the newer calls
	noLevels  bool           // GetTopologyCommonAncestor NOT_SUPPORTED
	onCall    func(c string) // called with each topology/fabric call's name
}

// migRow is one GPU-instance profile in NVML's raw form.
type migRow struct {
	kind   int
	slices uint32
	memMiB uint64
	size   uint32
	starts []uint32
}

// hwMIG returns an A100/H100-class MIG table as NVML reports it: 8 memory
// slots; 1g at starts 0-6, 1g with double memory at 0,2,4,6 (size 2), 2g at
// 0,2,4, 3g at 0,4 and 4g at 0 (size 4), 7g at 0 (size 8); plus the
// media-extension variant of 1g, which discovery must skip.
func hwMIG(m1, m1x2, m2, m3, m4, m7 uint64) []migRow {
	return []migRow{
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, 1, m1, 1, []uint32{0, 1, 2, 3, 4, 5, 6}},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, m1, 1, []uint32{0, 1, 2, 3, 4, 5, 6}},
		{gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, m1x2, 2, []uint32{0, 2, 4, 6}},
		{gonvml.GPU_INSTANCE_PROFILE_2_SLICE, 2, m2, 2, []uint32{0, 2, 4}},
		{gonvml.GPU_INSTANCE_PROFILE_3_SLICE, 3, m3, 4, []uint32{0, 4}},
		{gonvml.GPU_INSTANCE_PROFILE_4_SLICE, 4, m4, 4, []uint32{0}},
		{gonvml.GPU_INSTANCE_PROFILE_7_SLICE, 7, m7, 8, []uint32{0}},
	}
}

// dgxLevels: GPUs 0-3 on socket 0, 4-7 on socket 1, each behind its own
// root port, so NODE within a socket and SYS across.
func dgxLevels(i, j int) gonvml.GpuTopologyLevel {
	if i/4 != j/4 {
		return gonvml.TOPOLOGY_SYSTEM
	}
	return gonvml.TOPOLOGY_NODE
}

func dgxNUMA() []int { return []int{0, 0, 0, 0, 1, 1, 1, 1} }

var dgxCPUs = map[int]string{0: "0-55,112-167", 1: "56-111,168-223"}

func busList(ids ...string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "00000000:" + id + ":00.0"
	}
	return out
}

func repeat(n, v int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// The machines, as their vendors document them and NVML reports them.
func dgxH100() machine {
	return machine{
		name: "dgx-h100", gpus: 8,
		bus:  busList("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"),
		numa: dgxNUMA(), cpus: dgxCPUs, level: dgxLevels, sysfsSw: repeat(8, 1),
		memMiB: 81559, mig: hwMIG(9856, 19968, 19968, 40192, 40192, 80384),
		links: 18, version: 4,
		host: HostInfo{Hostname: "dgx-h100-001", CPUMilli: 224000, MemoryMiB: 2097152},
	}
}

func dgxH200() machine {
	m := dgxH100()
	m.name, m.memMiB = "dgx-h200", 143771
	m.mig = hwMIG(16384, 33280, 33280, 71424, 71424, 143360) // as the h200-sxm-1 capture reports
	m.host.Hostname = "dgx-h200-001"
	return m
}

func dgxB200() machine {
	m := dgxH100()
	m.name, m.memMiB = "dgx-b200", 183359
	m.bus = busList("1B", "43", "52", "61", "9D", "C3", "D1", "DF")
	m.mig = hwMIG(23040, 45824, 45824, 91904, 91904, 182272)
	m.version = 5
	m.host = HostInfo{Hostname: "dgx-b200-001", CPUMilli: 224000, MemoryMiB: 4194304}
	// HGX B200 boards run the fabric manager: registration completes,
	// with an all-zero cluster UUID because the NVLink domain is the host.
	m.fabric = func(int) (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}, gonvml.SUCCESS
	}
	return m
}

// dgxA100: EPYC 7742 in NPS4; GPU pairs behind a two-level PCIe switch
// complex on NUMA nodes 3, 1, 7, 5 (nvidia-smi topo -m: PXB within a pair,
// SYS otherwise), 12 NVLink 3 links per GPU to six NVSwitches.
func dgxA100() machine {
	return machine{
		name: "dgx-a100", gpus: 8,
		bus:  busList("07", "0F", "47", "4E", "87", "90", "B7", "BD"),
		numa: []int{3, 3, 1, 1, 7, 7, 5, 5},
		cpus: map[int]string{1: "16-31,144-159", 3: "48-63,176-191", 5: "80-95,208-223", 7: "112-127,240-255"},
		level: func(i, j int) gonvml.GpuTopologyLevel {
			if i/2 == j/2 {
				return gonvml.TOPOLOGY_MULTIPLE
			}
			return gonvml.TOPOLOGY_SYSTEM
		},
		sysfsSw: repeat(8, 2),
		memMiB:  81920, mig: hwMIG(9728, 19968, 19968, 40192, 40192, 80896),
		links: 12, version: 3,
		host: HostInfo{Hostname: "dgx-a100-001", CPUMilli: 256000, MemoryMiB: 2097152},
	}
}

// gb200Tray is one compute tray of a GB200 NVL72 rack: two Grace CPUs, each
// with two B200 GPUs on their own C2C root ports; 18 NVLink 5 links per GPU
// to the rack's NVSwitch trays; the fabric manager puts every GPU of the
// rack in one clique.
func gb200Tray(host string, uuid [16]uint8, clique uint32) machine {
	return machine{
		name: "gb200-nvl72", gpus: 4,
		bus:  []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"},
		numa: []int{0, 0, 1, 1}, cpus: map[int]string{0: "0-71", 1: "72-143"},
		level: func(i, j int) gonvml.GpuTopologyLevel {
			if i/2 != j/2 {
				return gonvml.TOPOLOGY_SYSTEM
			}
			return gonvml.TOPOLOGY_NODE
		},
		sysfsSw: repeat(4, 0),
		// With the GPU memory onlined, nodes 2-5 hold the GPUs' memory
		// (nvidia-smi's "GPU NUMA ID"); CPU locality stays 0 and 1.
		gpuMemNUMA: []int{2, 3, 4, 5},
		memMiB:     189471, mig: hwMIG(23552, 47104, 47104, 94208, 94208, 188416),
		links: 18, version: 5,
		host: HostInfo{Hostname: host, CPUMilli: 144000, MemoryMiB: 983040},
		fabric: func(int) (gonvml.GpuFabricInfo, gonvml.Return) {
			return gonvml.GpuFabricInfo{ClusterUuid: uuid, CliqueId: clique, State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}, gonvml.SUCCESS
		},
	}
}

// pcieBox is a dual-socket server with eight L40S and no NVLink: per socket
// a root port feeds a PCIe switch fanning out to two switches of two GPUs.
func pcieBox() machine {
	return machine{
		name: "pcie-8gpu", gpus: 8,
		bus:  busList("4F", "52", "56", "57", "CE", "D1", "D5", "D6"),
		numa: dgxNUMA(), cpus: map[int]string{0: "0-31,64-95", 1: "32-63,96-127"},
		level: func(i, j int) gonvml.GpuTopologyLevel {
			switch {
			case i/2 == j/2:
				return gonvml.TOPOLOGY_SINGLE
			case i/4 == j/4:
				return gonvml.TOPOLOGY_MULTIPLE
			}
			return gonvml.TOPOLOGY_SYSTEM
		},
		sysfsSw: repeat(8, 2),
		memMiB:  46068, noMIG: true,
		host: HostInfo{Hostname: "pcie-001", CPUMilli: 128000, MemoryMiB: 1048576},
	}
}

// gpu configurations the mock packages lack.
var (
	gb200Config = gpus.Config{Name: "NVIDIA GB200", Architecture: gonvml.DEVICE_ARCH_BLACKWELL, Brand: gonvml.BRAND_NVIDIA,
		MemoryMB: 189471, CudaMajor: 10, CudaMinor: 0, PciDeviceId: 0x294110DE, MIGProfiles: gpus.B200_SXM5_180GB.MIGProfiles}
	l40sConfig = gpus.Config{Name: "NVIDIA L40S", Architecture: gonvml.DEVICE_ARCH_ADA, Brand: gonvml.BRAND_NVIDIA,
		MemoryMB: 46068, CudaMajor: 8, CudaMinor: 9, PciDeviceId: 0x26B910DE}
)

// server returns the go-nvml mock server for m, with m's topology filled in.
func (m machine) server(t testing.TB) *server.Server {
	var s *server.Server
	switch m.name {
	case "dgx-a100":
		s = dgxa100.NewWithGPUs(gpus.Multiple(8, gpus.A100_SXM4_80GB)...) // DGX A100 640GB
	case "dgx-h100":
		s = dgxh100.New()
	case "dgx-h200":
		s = dgxh200.New()
	case "dgx-b200":
		s = dgxb200.New()
	case "gb200-nvl72":
		var err error
		if s, err = server.New(server.WithGPUs(gpus.Multiple(m.gpus, gb200Config)...), server.WithDriverVersion("570.133.20")); err != nil {
			t.Fatal(err)
		}
	case "pcie-8gpu":
		var err error
		if s, err = server.New(server.WithGPUs(gpus.Multiple(m.gpus, l40sConfig)...), server.WithDriverVersion("550.54.15")); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no mock for %s", m.name)
	}
	if len(s.Devices) != m.gpus {
		t.Fatalf("%s: mock has %d GPUs, want %d", m.name, len(s.Devices), m.gpus)
	}
	newer := map[string]bool{symFabricInfo: true, symNumaNode: true, symMemAffinity: true, symRemoteType: true, symAffinityScope: true}
	s.LookupSymbolFunc = func(sym string) error {
		if m.oldDriver && newer[sym] {
			return fmt.Errorf("undefined symbol: %s", sym)
		}
		return nil
	}
	for i := range s.Devices {
		m.fill(t, s, i)
	}
	return s
}

func toC(s string) [32]int8 {
	var b [32]int8
	for i := 0; i < len(s) && i < 31; i++ {
		b[i] = int8(s[i])
	}
	return b
}

// switchBus is the PCI bus ID of NVSwitch k, as NVLink remote PCI info shows.
func switchBus(k int) string { return fmt.Sprintf("00000000:%02X:00.0", 0xE0+k) }

func (m machine) fill(t testing.TB, s *server.Server, i int) {
	d := s.Devices[i].(*server.Device)
	call := func(name string) {
		if m.onCall != nil {
			m.onCall(name)
		}
	}
	d.PciBusID = m.bus[i]
	d.MemoryInfo.Total = uint64(m.memMiB) << 20
	d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		return gonvml.PciInfo{BusId: toC(m.bus[i]), PciDeviceId: d.Config.PciDeviceId}, gonvml.SUCCESS
	}
	d.GetMemoryAffinityFunc = func(n int, scope gonvml.AffinityScope) ([]uint, gonvml.Return) {
		call("GetMemoryAffinity")
		if scope != gonvml.AFFINITY_SCOPE_NODE {
			t.Errorf("memory affinity scope %d, want the NUMA node", scope)
		}
		return cpuMask([]int{m.numa[i]}), gonvml.SUCCESS
	}
	d.GetNumaNodeIdFunc = func() (int, gonvml.Return) {
		call("GetNumaNodeId")
		if m.gpuMemNUMA == nil {
			return 0, gonvml.ERROR_NOT_SUPPORTED // x86: GPU memory is not a NUMA node
		}
		return m.gpuMemNUMA[i], gonvml.SUCCESS
	}
	mask := func() []uint {
		cpus, err := ParseCPUList(m.cpus[m.numa[i]])
		if err != nil {
			t.Fatal(err)
		}
		return cpuMask(cpus)
	}
	d.GetCpuAffinityWithinScopeFunc = func(n int, scope gonvml.AffinityScope) ([]uint, gonvml.Return) {
		call("GetCpuAffinityWithinScope")
		if scope != gonvml.AFFINITY_SCOPE_NODE {
			t.Errorf("affinity scope %d, want the NUMA node", scope)
		}
		return mask(), gonvml.SUCCESS
	}
	d.GetCpuAffinityFunc = func(n int) ([]uint, gonvml.Return) { return mask(), gonvml.SUCCESS }
	d.GetTopologyCommonAncestorFunc = func(other gonvml.Device) (gonvml.GpuTopologyLevel, gonvml.Return) {
		if m.noLevels {
			return 0, gonvml.ERROR_NOT_SUPPORTED
		}
		return m.level(i, other.(*server.Device).Index), gonvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
		switch {
		case m.links == 0:
			return 0, gonvml.ERROR_NOT_SUPPORTED
		case l >= m.links:
			return 0, gonvml.ERROR_INVALID_ARGUMENT
		case m.linksDown[i]:
			return gonvml.FEATURE_DISABLED, gonvml.SUCCESS
		}
		return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(l int) (uint32, gonvml.Return) { return m.version, gonvml.SUCCESS }
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (gonvml.IntNvLinkDeviceType, gonvml.Return) {
		call("GetNvLinkRemoteDeviceType")
		return gonvml.NVLINK_DEVICE_TYPE_SWITCH, gonvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (gonvml.PciInfo, gonvml.Return) {
		return gonvml.PciInfo{BusId: toC(switchBus(l % 4))}, gonvml.SUCCESS
	}
	d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) {
		call("GetGpuFabricInfo")
		if m.fabric == nil {
			return gonvml.GpuFabricInfo{}, gonvml.ERROR_NOT_SUPPORTED
		}
		return m.fabric(i)
	}
	if m.noMIG {
		d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NOT_SUPPORTED }
		d.GetGpuInstanceProfileInfoFunc = func(int) (gonvml.GpuInstanceProfileInfo, gonvml.Return) {
			t.Error("GetGpuInstanceProfileInfo called on a GPU without MIG")
			return gonvml.GpuInstanceProfileInfo{}, gonvml.ERROR_NOT_SUPPORTED
		}
	} else if m.mig != nil {
		d.GetGpuInstanceProfileInfoFunc = func(kind int) (gonvml.GpuInstanceProfileInfo, gonvml.Return) {
			if kind < 0 || kind >= gonvml.GPU_INSTANCE_PROFILE_COUNT {
				return gonvml.GpuInstanceProfileInfo{}, gonvml.ERROR_INVALID_ARGUMENT
			}
			for _, r := range m.mig {
				if r.kind == kind {
					return gonvml.GpuInstanceProfileInfo{Id: uint32(kind) + 100, SliceCount: r.slices, MemorySizeMB: r.memMiB,
						InstanceCount: uint32(len(r.starts))}, gonvml.SUCCESS
				}
			}
			return gonvml.GpuInstanceProfileInfo{}, gonvml.ERROR_NOT_SUPPORTED
		}
		d.GetGpuInstancePossiblePlacementsFunc = func(info *gonvml.GpuInstanceProfileInfo) ([]gonvml.GpuInstancePlacement, gonvml.Return) {
			for _, r := range m.mig {
				if uint32(r.kind)+100 == info.Id {
					var out []gonvml.GpuInstancePlacement
					for _, st := range r.starts {
						out = append(out, gonvml.GpuInstancePlacement{Start: st, Size: r.size})
					}
					return out, gonvml.SUCCESS
				}
			}
			return nil, gonvml.ERROR_INVALID_ARGUMENT
		}
	}
}

// osHost is m's operating-system side: host facts and sysfs NUMA nodes and
// PCIe depth, keyed by normalised bus ID.
func (m machine) osHost(t testing.TB) StaticHost {
	h := StaticHost{HostInfo: m.host, Devices: map[string]PCIDevice{}}
	for i, b := range m.bus {
		n, err := topology.NormalizeBusID(b)
		if err != nil {
			t.Fatal(err)
		}
		h.Devices[n] = PCIDevice{NUMANode: m.numa[i], Switches: m.sysfsSw[i]}
	}
	return h
}
