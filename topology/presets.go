package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Machine presets: one host (or rack) of a well-known system, described as
// its vendor documents it. They are the building blocks of Generate and the
// reference NVML discovery is tested against.
//
// Figures that vary between SKUs (CPU model, memory size) follow the vendor's
// reference configuration; GPU memory is what NVML reports as total memory.

// migGeometry returns the MIG geometry NVML reports for A100 to GB200: 8
// memory slots, 1-slot profiles at starts 0..6, 2-slot at 0,2,4(,6),
// 4-slot at 0,4 (3g) or 0 (4g), the full GPU at 0, and last the
// media-extension variant of the 1-slot profile (n1+"+me", one per GPU).
func migGeometry(mem1, mem1x2, mem2, mem3, mem4, mem7 int64, n1, n1x2, n2, n3, n4, n7 string) *MIGSpec {
	return &MIGSpec{Slots: 8, Profiles: []MIGProfileSpec{
		{Name: n1, Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: mem1, ComputeSlices: 1},
		{Name: n1x2, Size: 2, Starts: []int{0, 2, 4, 6}, MemoryMiB: mem1x2, ComputeSlices: 1},
		{Name: n2, Size: 2, Starts: []int{0, 2, 4}, MemoryMiB: mem2, ComputeSlices: 2},
		{Name: n3, Size: 4, Starts: []int{0, 4}, MemoryMiB: mem3, ComputeSlices: 3},
		{Name: n4, Size: 4, Starts: []int{0}, MemoryMiB: mem4, ComputeSlices: 4},
		{Name: n7, Size: 8, Starts: []int{0}, MemoryMiB: mem7, ComputeSlices: 7},
		{Name: n1 + "+me", Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: mem1, ComputeSlices: 1, Exclusive: MediaExtensions},
	}}
}

// Accelerator models used by the presets.
var presetAccelerators = []AcceleratorSpec{
	{Model: "A100-SXM4-80GB", Vendor: "nvidia", MemoryMiB: 81920, ComputeCapability: "8.0",
		MIG: migGeometry(9728, 19968, 19968, 40192, 40192, 80896, "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")},
	{Model: "H100-SXM5-80GB", Vendor: "nvidia", MemoryMiB: 81559, ComputeCapability: "9.0",
		MIG: migGeometry(9856, 19968, 19968, 40192, 40192, 80384, "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")},
	{Model: "H200-SXM5-141GB", Vendor: "nvidia", MemoryMiB: 143771, ComputeCapability: "9.0",
		// MIG memory as driver 580 reports it on a real H200 (the
		// h200-sxm-1 capture in nvml/testdata/golden).
		MIG: migGeometry(16384, 33280, 33280, 71424, 71424, 143360, "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb")},
	{Model: "B200-SXM6-180GB", Vendor: "nvidia", MemoryMiB: 183359, ComputeCapability: "10.0",
		MIG: migGeometry(23040, 45824, 45824, 91904, 91904, 182272, "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb")},
	{Model: "GB200-186GB", Vendor: "nvidia", MemoryMiB: 189471, ComputeCapability: "10.0",
		MIG: migGeometry(23552, 47104, 47104, 94208, 94208, 188416, "1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb")},
	{Model: "L40S-48GB", Vendor: "nvidia", MemoryMiB: 46068, ComputeCapability: "8.9"},
	{Model: "Ascend910", Vendor: "huawei", MemoryMiB: 32768, ComputeCapability: "ascend910"},
}

func presetAccelerator(model string) AcceleratorSpec {
	for _, a := range presetAccelerators {
		if a.Model == model {
			return a
		}
	}
	panic("topology: no preset accelerator " + model)
}

// perGPUSwitches returns one host bridge per GPU, each with one PCIe switch
// holding that GPU: the layout of DGX/HGX systems, where each GPU sits
// behind its own switch with its NIC.
func perGPUSwitches(gpus ...int) []PCIeSpec {
	out := make([]PCIeSpec, len(gpus))
	for i, g := range gpus {
		out[i] = PCIeSpec{Switches: []PCIeSpec{{GPUs: []int{g}}}}
	}
	return out
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

func dgxTemplate(name, model string, cpuMilli, memMiB int64, bw float64) HostTemplate {
	return HostTemplate{
		Name: name, CPUMilli: cpuMilli, MemoryMiB: memMiB, Accelerator: model, GPUs: 8,
		NUMA: []NUMASpec{
			{ID: 0, CPUs: "0-55,112-167", PCIe: perGPUSwitches(0, 1, 2, 3)},
			{ID: 1, CPUs: "56-111,168-223", PCIe: perGPUSwitches(4, 5, 6, 7)},
		},
		Fabrics: []HostFabricSpec{{Kind: FabricNVSwitch, GPUs: seq(0, 8), BandwidthGBps: bw}},
	}
}

// MachineTemplate returns the host template and accelerator of a machine
// preset (dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72 (one compute
// tray), pcie-8gpu, ascend-910).
//
// pcie-8gpu is a dual-socket server with eight L40S on PCIe alone (no
// NVLink), the common 4U layout in which each socket's root port feeds
// one PCIe switch cascaded into two leaf switches of two GPUs each. That
// gives the three PCIe tiers nvidia-smi topo -m reports on such boxes: PIX
// between the two GPUs of a leaf switch, PXB between GPUs of different
// leaves of one socket (through the upper switch, not the CPU), and SYS
// across sockets. There is no NODE, because both leaves of a socket hang
// off the same host bridge; NODE appears on boxes whose switches sit under
// different host bridges of one NUMA node, as in the PCIe view (fabric
// aside) of dgx-h100, dgx-h200 and dgx-b200, whose four GPUs per socket
// each have their own root port. (dgx-a100 shows SYS there instead: in
// NPS4 mode each GPU pair's host bridge is a NUMA node of its own.) The
// layout is fixed: discovery tests compare the specs NVML reports for
// such machines with it.
func MachineTemplate(name string) (HostTemplate, AcceleratorSpec, error) {
	switch name {
	case "dgx-h100":
		// 2× Xeon Platinum 8480C (56 cores, 112 threads each), 2 TiB, four
		// NVSwitch chips joining all eight GPUs (NVLink 4: 900 GB/s both ways).
		return dgxTemplate(name, "H100-SXM5-80GB", 224000, 2097152, 450), presetAccelerator("H100-SXM5-80GB"), nil
	case "dgx-h200":
		return dgxTemplate(name, "H200-SXM5-141GB", 224000, 2097152, 450), presetAccelerator("H200-SXM5-141GB"), nil
	case "dgx-b200":
		// 2× Xeon Platinum 8570 (56 cores each), 4 TiB, NVLink 5 (1.8 TB/s).
		return dgxTemplate(name, "B200-SXM6-180GB", 224000, 4194304, 900), presetAccelerator("B200-SXM6-180GB"), nil
	case "dgx-a100":
		// 2× EPYC 7742 (64 cores each) in NPS4 mode: eight NUMA nodes, the
		// GPUs in pairs on nodes 3, 1, 7, 5; each pair behind a two-level PCIe
		// switch complex; six NVSwitches (NVLink 3: 600 GB/s both ways).
		pair := func(a, b int) []PCIeSpec {
			return []PCIeSpec{{Switches: []PCIeSpec{{Switches: []PCIeSpec{{GPUs: []int{a}}, {GPUs: []int{b}}}}}}}
		}
		return HostTemplate{
			Name: name, CPUMilli: 256000, MemoryMiB: 2097152, Accelerator: "A100-SXM4-80GB", GPUs: 8,
			NUMA: []NUMASpec{
				{ID: 1, CPUs: "16-31,144-159", PCIe: pair(2, 3)},
				{ID: 3, CPUs: "48-63,176-191", PCIe: pair(0, 1)},
				{ID: 5, CPUs: "80-95,208-223", PCIe: pair(6, 7)},
				{ID: 7, CPUs: "112-127,240-255", PCIe: pair(4, 5)},
			},
			Fabrics: []HostFabricSpec{{Kind: FabricNVSwitch, GPUs: seq(0, 8), BandwidthGBps: 300}},
		}, presetAccelerator("A100-SXM4-80GB"), nil
	case "gb200-nvl72":
		// One compute tray of a GB200 NVL72 rack: two Grace CPUs (72 cores,
		// 480 GB LPDDR5X each), four B200 GPUs, two per Grace over
		// NVLink-C2C. The rack's 18 trays share one NVLink domain (see
		// Preset("gb200-nvl72")).
		return HostTemplate{
			Name: name, CPUMilli: 144000, MemoryMiB: 983040, Accelerator: "GB200-186GB", GPUs: 4,
			NUMA: []NUMASpec{
				{ID: 0, CPUs: "0-71", PCIe: []PCIeSpec{{GPUs: []int{0}}, {GPUs: []int{1}}}},
				{ID: 1, CPUs: "72-143", PCIe: []PCIeSpec{{GPUs: []int{2}}, {GPUs: []int{3}}}},
			},
		}, presetAccelerator("GB200-186GB"), nil
	case "pcie-8gpu":
		// A dual-socket PCIe server with eight L40S and no NVLink: on each
		// socket one root port (host bridge) feeds a PCIe switch cascaded
		// into two leaf switches of two GPUs each, so GPUs are PIX within a
		// leaf, PXB across the leaves of one socket and SYS across sockets;
		// never NODE (one host bridge per socket) or PHB. See the doc
		// comment above for why, and keep the shape: NVML discovery tests
		// compare with it.
		sock := func(g int) []PCIeSpec {
			return []PCIeSpec{{Switches: []PCIeSpec{{Switches: []PCIeSpec{{GPUs: []int{g, g + 1}}, {GPUs: []int{g + 2, g + 3}}}}}}}
		}
		return HostTemplate{
			Name: name, CPUMilli: 128000, MemoryMiB: 1048576, Accelerator: "L40S-48GB", GPUs: 8,
			NUMA: []NUMASpec{
				{ID: 0, CPUs: "0-31,64-95", PCIe: sock(0)},
				{ID: 1, CPUs: "32-63,96-127", PCIe: sock(4)},
			},
		}, presetAccelerator("L40S-48GB"), nil
	case "ascend-910":
		// Atlas 800 training server: 4× Kunpeng 920 (48 cores each), eight
		// Ascend 910 NPUs, two per NUMA node; NPUs 0-3 and 4-7 form two HCCS
		// full-mesh groups, joined only through PCIe.
		return HostTemplate{
			Name: name, CPUMilli: 192000, MemoryMiB: 1048576, Accelerator: "Ascend910", GPUs: 8,
			NUMA: []NUMASpec{
				{ID: 0, CPUs: "0-47", PCIe: []PCIeSpec{{GPUs: []int{0, 1}}}},
				{ID: 1, CPUs: "48-95", PCIe: []PCIeSpec{{GPUs: []int{2, 3}}}},
				{ID: 2, CPUs: "96-143", PCIe: []PCIeSpec{{GPUs: []int{4, 5}}}},
				{ID: 3, CPUs: "144-191", PCIe: []PCIeSpec{{GPUs: []int{6, 7}}}},
			},
			Fabrics: []HostFabricSpec{
				{Kind: FabricHCCS, GPUs: []int{0, 1, 2, 3}, BandwidthGBps: 56},
				{Kind: FabricHCCS, GPUs: []int{4, 5, 6, 7}, BandwidthGBps: 56},
			},
		}, presetAccelerator("Ascend910"), nil
	}
	return HostTemplate{}, AcceleratorSpec{}, fmt.Errorf("topology: unknown machine preset %q (known: %s)", name, strings.Join(MachineNames(), ", "))
}

// MachineNames lists the machine presets MachineTemplate knows.
func MachineNames() []string {
	return []string{"ascend-910", "dgx-a100", "dgx-b200", "dgx-h100", "dgx-h200", "gb200-nvl72", "pcie-8gpu"}
}

// Generator describes a generated cluster: Hosts hosts of one machine
// preset, HostsPerToR to a ToR switch and ToRsPerSpine ToRs to a spine.
// Zero HostsPerToR means no network levels (a flat cluster); zero
// ToRsPerSpine means ToRs only. GB200 NVL72 trays are grouped 18 to a rack
// NVLink domain; Hosts must then be a multiple of 18.
type Generator struct {
	Name         string
	Machine      string
	Hosts        int
	HostsPerToR  int
	ToRsPerSpine int
}

// Spec returns the cluster spec g describes.
func (g Generator) Spec() (Spec, error) {
	t, acc, err := MachineTemplate(g.Machine)
	if err != nil {
		return Spec{}, err
	}
	if g.Hosts < 1 || g.Hosts > 10_000_000 {
		return Spec{}, fmt.Errorf("topology: generator: %d hosts out of range", g.Hosts)
	}
	if g.HostsPerToR < 0 || g.ToRsPerSpine < 0 {
		return Spec{}, fmt.Errorf("topology: generator: negative fan-out")
	}
	if g.ToRsPerSpine > 0 && g.HostsPerToR == 0 {
		return Spec{}, fmt.Errorf("topology: generator: spines need ToRs (set HostsPerToR)")
	}
	name := g.Name
	if name == "" {
		name = fmt.Sprintf("%s-x%d", g.Machine, g.Hosts)
	}
	s := Spec{Version: SpecVersion, Name: name, Accelerators: []AcceleratorSpec{acc}, Templates: []HostTemplate{t}}
	hosts := HostGroup{Name: rangeName(hostPrefix(g.Machine), g.Hosts), Template: t.Name}
	if g.HostsPerToR > 0 {
		nToR := (g.Hosts + g.HostsPerToR - 1) / g.HostsPerToR
		tors := SwitchGroup{Name: rangeName("tor", nToR), Level: "tor"}
		if g.ToRsPerSpine > 0 {
			nSpine := (nToR + g.ToRsPerSpine - 1) / g.ToRsPerSpine
			s.Levels = append(s.Levels, LevelSpec{Name: "spine"})
			s.Switches = append(s.Switches, SwitchGroup{Name: rangeName("spine", nSpine), Level: "spine"})
			tors.Parent = rangeName("spine", nSpine)
			tors.PerParent = g.ToRsPerSpine
		}
		s.Levels = append(s.Levels, LevelSpec{Name: "tor"})
		s.Switches = append(s.Switches, tors)
		hosts.Parent = rangeName("tor", nToR)
		hosts.PerParent = g.HostsPerToR
	}
	s.Hosts = []HostGroup{hosts}
	if g.Machine == "gb200-nvl72" {
		if g.Hosts%18 != 0 {
			return Spec{}, fmt.Errorf("topology: generator: gb200-nvl72 needs a multiple of 18 trays, got %d", g.Hosts)
		}
		s.Fabrics = []FabricGroup{{Name: rangeName("nvl72-", g.Hosts/18), Kind: FabricMNNVL, Hosts: hosts.Name, PerDomain: 18, BandwidthGBps: 900}}
	}
	return s, nil
}

func hostPrefix(machine string) string { return machine + "-" }

// rangeName returns "prefix[1-n]" zero-padded to the width of n, or
// "prefix1" when n is 1.
func rangeName(prefix string, n int) string {
	w := len(fmt.Sprint(n))
	if n == 1 {
		return fmt.Sprintf("%s%0*d", prefix, w, 1)
	}
	return fmt.Sprintf("%s[%0*d-%d]", prefix, w, 1, n)
}

// Preset returns the spec of a named preset: a machine preset as a
// one-host cluster (a full 18-tray rack for gb200-nvl72), or a cluster
// preset (see PresetNames).
func Preset(name string) (Spec, error) {
	switch name {
	case "gb200-nvl72":
		return Generator{Name: name, Machine: name, Hosts: 18}.Spec()
	case "h100-1k":
		return Generator{Name: name, Machine: "dgx-h100", Hosts: 125, HostsPerToR: 32}.Spec()
	case "h100-10k":
		return Generator{Name: name, Machine: "dgx-h100", Hosts: 1250, HostsPerToR: 32, ToRsPerSpine: 16}.Spec()
	case "h100-100k":
		return Generator{Name: name, Machine: "dgx-h100", Hosts: 12500, HostsPerToR: 32, ToRsPerSpine: 16}.Spec()
	}
	if slices.Contains(MachineNames(), name) {
		return Generator{Name: name, Machine: name, Hosts: 1}.Spec()
	}
	if sp, ok, err := extraPreset(name); ok {
		return sp, err
	}
	return Spec{}, fmt.Errorf("topology: unknown preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
}

// PresetNames lists every name Preset accepts, sorted.
func PresetNames() []string {
	names := append(MachineNames(), "h100-1k", "h100-10k", "h100-100k")
	names = append(names, extraPresetNames()...)
	slices.Sort(names)
	return slices.Compact(names)
}

// LoadPreset builds the named preset.
func LoadPreset(name string) (*Cluster, error) {
	s, err := Preset(name)
	if err != nil {
		return nil, err
	}
	return Build(s)
}
