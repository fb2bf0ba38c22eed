//go:build cgo

package nvml

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpusched/gpusched/topology"
)

func discover(t *testing.T, m machine) *Result {
	t.Helper()
	res, err := Discover(m.server(t), Options{Host: m.osHost(t)})
	require.NoError(t, err)
	return res
}

func warningsOf(res *Result) []string {
	var out []string
	for _, w := range res.Warnings {
		out = append(out, w.String())
	}
	return out
}

// requireTemplate compares templates field by field (empty and nil slices
// alike) so that a failure shows the difference.
func requireTemplate(t *testing.T, want, got topology.HostTemplate) {
	t.Helper()
	require.Equal(t, normTemplate(want.Canonical()), normTemplate(got.Canonical()))
}

// The discovered host must equal the matching preset: template (NUMA nodes
// and their CPUs, PCIe tree, NVLink domains and bandwidth), accelerator
// (model, memory, compute capability, MIG geometry) and, because the OS side
// of the model reports the preset's CPU and memory, the host shape too.
func TestDiscoverMatchesPreset(t *testing.T) {
	uuid := [16]uint8{0x8e, 0x3f, 0x11, 0x2c, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x01}
	for _, tc := range []struct {
		m       machine
		skipped []string
	}{
		{dgxA100(), nil},
		{dgxH100(), nil},
		{dgxH200(), nil},
		{dgxB200(), nil},
		{gb200Tray("gb200-r01-t01", uuid, 7), nil},
		{pcieBox(), nil},
	} {
		t.Run(tc.m.name, func(t *testing.T) {
			res := discover(t, tc.m)
			want, wantAcc, err := topology.MachineTemplate(tc.m.name)
			require.NoError(t, err)
			requireTemplate(t, want, res.Template)
			assert.Equal(t, want.Name, res.Template.Name)
			assert.Equal(t, tc.m.name, res.Preset)
			assert.Equal(t, wantAcc, res.Accelerator)
			assert.Equal(t, tc.skipped, res.SkippedMIGProfiles)
			assert.Empty(t, warningsOf(res))
			assert.Equal(t, tc.m.host.Hostname, res.Hostname)
			// Identities: NVML's 8-digit upper-case bus IDs in sysfs form.
			require.Len(t, res.GPUs, tc.m.gpus)
			for i, g := range res.GPUs {
				wantBus, err := topology.NormalizeBusID(tc.m.bus[i])
				require.NoError(t, err)
				assert.Equal(t, wantBus, g.BusID)
				assert.True(t, strings.HasPrefix(g.UUID, "GPU-"), g.UUID)
				assert.Equal(t, i, g.Index)
				assert.Equal(t, tc.m.numa[i], g.NUMANode)
				if tc.m.gpuMemNUMA != nil {
					assert.Equal(t, tc.m.gpuMemNUMA[i], g.MemoryNUMANode)
				} else {
					assert.Equal(t, -1, g.MemoryNUMANode)
				}
			}
			assert.Regexp(t, `^[0-9a-f]{4}:[0-9a-f]{2}:00\.0$`, res.GPUs[0].BusID)
			if tc.m.name == "gb200-nvl72" {
				require.NotNil(t, res.Fabric)
				assert.Equal(t, FabricMembership{ClusterUUID: "8e3f112c-0000-4000-8000-000000000001", CliqueID: 7, BandwidthGBps: 900}, *res.Fabric)
			} else {
				assert.Nil(t, res.Fabric)
			}
			// The one-host cluster file builds and carries the identities.
			c, err := topology.Build(res.Spec())
			require.NoError(t, err)
			assert.Equal(t, tc.m.gpus, c.NumGPUs())
			assert.Equal(t, res.GPUs[3].UUID, c.GPU(3).UUID)
			assert.Equal(t, res.GPUs[3].BusID, c.GPU(3).BusID)
		})
	}
}

// A GPU whose NVLinks are all down (a failed link or a bad baseboard) is left
// out of the NVSwitch domain and reported; the PCIe side still matches.
func TestDiscoverNVLinkDown(t *testing.T) {
	m := dgxH100()
	m.linksDown = map[int]bool{3: true}
	res := discover(t, m)
	want, _, _ := topology.MachineTemplate("dgx-h100")
	assert.Equal(t, want.NUMA, res.Template.NUMA)
	assert.Equal(t, []topology.HostFabricSpec{{Kind: topology.FabricNVSwitch, GPUs: []int{0, 1, 2, 4, 5, 6, 7}, BandwidthGBps: 450}}, res.Template.Fabrics)
	assert.Equal(t, "", res.Preset)
	assert.Equal(t, "H100-SXM5-80GBx8", res.Template.Name)
	assert.Equal(t, []string{"GPU 3: nvlink: all 18 NVLinks are down; left out of the NVLink domain"}, warningsOf(res))
	assert.Zero(t, res.GPUs[3].ActiveLinks())
	assert.Len(t, res.GPUs[3].NVLinks, 18)
	c, err := topology.Build(res.Spec())
	require.NoError(t, err)
	assert.Equal(t, topology.LinkSYS, c.Link(3, 4).Kind)
	assert.Equal(t, topology.LinkFabric, c.Link(2, 4).Kind)
}

// An old driver lacks the fabric, NUMA-node, memory-affinity, remote-type and
// affinity-scope functions. Discovery must not call them, and falls back to sysfs for NUMA
// nodes, to GetCpuAffinity, and to bus IDs for remote device types.
func TestDiscoverOldDriver(t *testing.T) {
	m := dgxH100()
	m.oldDriver = true
	m.onCall = func(c string) {
		switch c {
		case "GetGpuFabricInfo", "GetNumaNodeId", "GetMemoryAffinity", "GetNvLinkRemoteDeviceType", "GetCpuAffinityWithinScope":
			t.Errorf("%s called on a driver without it", c)
		}
	}
	res := discover(t, m)
	want, wantAcc, _ := topology.MachineTemplate("dgx-h100")
	requireTemplate(t, want, res.Template)
	assert.Equal(t, wantAcc, res.Accelerator)
	ws := warningsOf(res)
	require.Len(t, ws, 9, "%q", ws)
	assert.Equal(t, "fabric: the driver has no nvmlDeviceGetGpuFabricInfo (it predates R535); multi-node NVLink domains are not detected", ws[0])
	assert.Contains(t, ws[1], "GPU 0: nvlink: the driver does not report remote device types")
	for _, g := range res.GPUs {
		assert.Nil(t, g.Fabric)
		assert.Equal(t, RemoteSwitch, g.NVLinks[0].Remote)
	}
}

// A GB200 tray on a driver without the fabric call looks like a host whose
// GPUs reach NVSwitches: one host-local domain, and a warning that the
// rack-wide domain went unseen.
func TestDiscoverOldDriverGB200(t *testing.T) {
	m := gb200Tray("tray1", [16]uint8{1}, 1)
	m.oldDriver = true
	res := discover(t, m)
	assert.Nil(t, res.Fabric)
	assert.Equal(t, []topology.HostFabricSpec{{Kind: topology.FabricNVSwitch, GPUs: []int{0, 1, 2, 3}, BandwidthGBps: 900}}, res.Template.Fabrics)
	assert.Contains(t, warningsOf(res)[0], "multi-node NVLink domains are not detected")
}

func TestDiscoverFabricIncomplete(t *testing.T) {
	uuid := [16]uint8{0xaa}
	m := gb200Tray("tray1", uuid, 3)
	m.fabric = func(i int) (gonvml.GpuFabricInfo, gonvml.Return) {
		info := gonvml.GpuFabricInfo{ClusterUuid: uuid, CliqueId: 3, State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}
		if i == 2 {
			info = gonvml.GpuFabricInfo{State: gonvml.GPU_FABRIC_STATE_IN_PROGRESS}
		}
		return info, gonvml.SUCCESS
	}
	res := discover(t, m)
	assert.Nil(t, res.Fabric)
	assert.Equal(t, []topology.HostFabricSpec{{Kind: topology.FabricNVSwitch, GPUs: []int{0, 1, 3}, BandwidthGBps: 900}}, res.Template.Fabrics)
	ws := warningsOf(res)
	require.Len(t, ws, 2, "%q", ws)
	assert.Equal(t, "GPU 2: fabric: fabric registration in progress; its NVLinks carry no traffic until the fabric manager finishes, so it joins no NVLink domain", ws[0])
	assert.Contains(t, ws[1], "not all registered in one multi-node NVLink domain")
	_, err := topology.Build(res.Spec())
	require.NoError(t, err)
}

// GPUs of one host in two cliques cannot be written as one host in one
// multi-node domain: discovery keeps each clique's GPUs together locally.
func TestDiscoverConflictingCliques(t *testing.T) {
	uuid := [16]uint8{0xbb}
	m := gb200Tray("tray1", uuid, 1)
	m.fabric = func(i int) (gonvml.GpuFabricInfo, gonvml.Return) {
		return gonvml.GpuFabricInfo{ClusterUuid: uuid, CliqueId: uint32(1 + i/2), State: gonvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(gonvml.SUCCESS)}, gonvml.SUCCESS
	}
	res := discover(t, m)
	assert.Nil(t, res.Fabric)
	assert.Equal(t, []topology.HostFabricSpec{
		{Kind: topology.FabricNVSwitch, GPUs: []int{0, 1}, BandwidthGBps: 900},
		{Kind: topology.FabricNVSwitch, GPUs: []int{2, 3}, BandwidthGBps: 900},
	}, res.Template.Fabrics)
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0].Msg, "GPU 2 in (bb000000-0000-0000-0000-000000000000, 2)")
}

// Without PCIe path levels (virtual machines often lack them) the NUMA ids
// still group the GPUs, each node one host bridge.
func TestDiscoverNoLevels(t *testing.T) {
	m := dgxH100()
	m.noLevels = true
	res := discover(t, m)
	require.Len(t, res.Template.NUMA, 2)
	assert.Equal(t, []topology.PCIeSpec{{GPUs: []int{0, 1, 2, 3}}}, res.Template.NUMA[0].PCIe)
	assert.Equal(t, "56-111,168-223", res.Template.NUMA[1].CPUs)
	ws := warningsOf(res)
	require.Len(t, ws, 2, "%q", ws)
	assert.Contains(t, ws[0], "pcie: PCIe path levels unknown (GPUs 0 and 1: ERROR_NOT_SUPPORTED)")
	assert.Contains(t, ws[1], "each NUMA node is modelled as one host bridge")
}

// go-nvml's mocks, untouched, report MIG placements in compute slices
// (3g at size 3, 7g at size 7) and nominal memory. Discovery reproduces
// exactly that: 7 slots, the mock's sizes, nvidia-smi's names.
func TestStockMockMIG(t *testing.T) {
	m := dgxH100()
	m.mig = nil          // keep the mock's MIG tables
	m.memMiB = 80 * 1024 // and its memory
	res := discover(t, m)
	mig := res.Accelerator.MIG
	require.NotNil(t, mig)
	assert.Equal(t, 7, mig.Slots)
	type p struct {
		name   string
		size   int
		starts []int
		mem    int64
	}
	var got []p
	for _, pr := range mig.Profiles {
		got = append(got, p{pr.Name, pr.Size, pr.Starts, pr.MemoryMiB})
	}
	assert.Equal(t, []p{
		{"1g.10gb", 1, []int{0, 1, 2, 3, 4, 5, 6}, 10240},
		{"1g.20gb", 1, []int{0, 1, 2, 3, 4, 5, 6}, 20480},
		{"2g.20gb", 2, []int{0, 2, 4}, 20480},
		{"3g.40gb", 3, []int{0, 4}, 40960},
		{"4g.40gb", 4, []int{0}, 40960},
		{"7g.80gb", 7, []int{0}, 81920},
		{"1g.10gb+me", 1, []int{0, 1, 2, 3, 4, 5, 6}, 10240},
	}, got)
	assert.Empty(t, res.SkippedMIGProfiles)
	// The topology is the harness's and still matches.
	assert.Equal(t, "dgx-h100", res.Preset)
}

// MIG-capable GPUs whose driver lists no profiles (MIG disabled on some
// drivers) get the preset geometry of their model, with a warning.
func TestDiscoverMIGFromPreset(t *testing.T) {
	m := dgxA100()
	m.mig = []migRow{} // the harness answers NOT_SUPPORTED for every profile
	res := discover(t, m)
	_, wantAcc, _ := topology.MachineTemplate("dgx-a100")
	assert.Equal(t, wantAcc.MIG, res.Accelerator.MIG)
	assert.Equal(t, []string{"mig: NVML lists no MIG profiles (MIG mode is disabled); the geometry of A100-SXM4-80GB is taken from the presets"}, warningsOf(res))

	res, err := Discover(m.server(t), Options{Host: m.osHost(t), NoPresetMIG: true})
	require.NoError(t, err)
	assert.Nil(t, res.Accelerator.MIG)
	assert.Contains(t, warningsOf(res)[0], "no MIG geometry")
}

// Options override what the OS reports and name things.
func TestDiscoverOptions(t *testing.T) {
	m := dgxH100()
	res, err := Discover(m.server(t), Options{Host: m.osHost(t), Hostname: "node7", CPUMilli: 200000, MemoryMiB: 1 << 20,
		TemplateName: "h100-node", Models: map[string]string{"NVIDIA H100 80GB HBM3": "H100"}})
	require.NoError(t, err)
	assert.Equal(t, "node7", res.Hostname)
	assert.Equal(t, int64(200000), res.Template.CPUMilli)
	assert.Equal(t, int64(1<<20), res.Template.MemoryMiB)
	assert.Equal(t, "h100-node", res.Template.Name)
	assert.Equal(t, "H100", res.Accelerator.Model)
	assert.Equal(t, "", res.Preset) // another model name: no preset has it

	// Unknown host facts are warnings, a missing host name an error.
	h := m.osHost(t)
	h.HostInfo = HostInfo{Hostname: "x"}
	res, err = Discover(m.server(t), Options{Host: h})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"host: CPU count unknown; the template has no allocatable CPU (set it with Options.CPUMilli, --cpu-milli)",
		"host: memory size unknown; the template has no allocatable memory (set it with Options.MemoryMiB, --memory-mib)",
	}, warningsOf(res))
	h.HostInfo = HostInfo{}
	_, err = Discover(m.server(t), Options{Host: h})
	require.ErrorContains(t, err, "host name is unknown")
	_, err = Discover(m.server(t), Options{Host: h, Hostname: "bad name"})
	require.ErrorContains(t, err, `host name "bad name" may not contain`)
}

// Calls every GPU must answer fail discovery; others degrade.
func TestDiscoverCallFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		breakGPU func(d *server.Device)
		err      string
		warn     string
	}{
		{name: "uuid", breakGPU: func(d *server.Device) {
			d.GetUUIDFunc = func() (string, gonvml.Return) { return "", gonvml.ERROR_GPU_IS_LOST }
		}, err: "nvml: GPU 5: reading its UUID: ERROR_GPU_IS_LOST"},
		{name: "pci", breakGPU: func(d *server.Device) {
			d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{}, gonvml.ERROR_UNKNOWN }
		}, err: "nvml: GPU 5: reading its PCI info: ERROR_UNKNOWN"},
		{name: "bad bus id", breakGPU: func(d *server.Device) {
			d.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) { return gonvml.PciInfo{BusId: toC("garbage")}, gonvml.SUCCESS }
		}, err: `nvml: GPU 5: bus ID "garbage" is not DOMAIN:BUS:DEVICE.FUNCTION`},
		{name: "duplicate uuid", breakGPU: func(d *server.Device) {
			d.GetUUIDFunc = func() (string, gonvml.Return) { return "GPU-same", gonvml.SUCCESS }
		}, err: ""},
		{name: "mixed models", breakGPU: func(d *server.Device) {
			d.GetNameFunc = func() (string, gonvml.Return) { return "NVIDIA H200", gonvml.SUCCESS }
		}, err: `nvml: GPUs 0 and 5 are different models ("NVIDIA H100 80GB HBM3", "NVIDIA H200"); a host template holds one model`},
		{name: "memory", breakGPU: func(d *server.Device) {
			d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) { return gonvml.Memory{}, gonvml.ERROR_NOT_SUPPORTED }
		}, warn: "GPU 5: model: memory size unknown: ERROR_NOT_SUPPORTED"},
		{name: "affinity", breakGPU: func(d *server.Device) {
			d.GetCpuAffinityWithinScopeFunc = func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) { return nil, gonvml.ERROR_NOT_SUPPORTED }
		}, warn: "GPU 5: numa: CPU affinity unknown: ERROR_NOT_SUPPORTED"},
		{name: "memory affinity spans nodes", breakGPU: func(d *server.Device) {
			d.GetMemoryAffinityFunc = func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) { return []uint{0b1010}, gonvml.SUCCESS }
		}, warn: "GPU 5: numa: memory affinity spans NUMA nodes 1,3; using node 1"},
		{name: "NVML and sysfs disagree", breakGPU: func(d *server.Device) {
			d.GetMemoryAffinityFunc = func(int, gonvml.AffinityScope) ([]uint, gonvml.Return) { return []uint{1}, gonvml.SUCCESS }
		}, warn: "GPU 5: numa: NVML gives NUMA node 0, sysfs 1; using NVML's"},
		{name: "nvlink state", breakGPU: func(d *server.Device) {
			d.GetNvLinkStateFunc = func(l int) (gonvml.EnableState, gonvml.Return) {
				if l == 17 {
					return 0, gonvml.ERROR_UNKNOWN
				}
				return gonvml.FEATURE_ENABLED, gonvml.SUCCESS
			}
		}, warn: "GPU 5: nvlink: link 17 state unknown: ERROR_UNKNOWN"},
		{name: "mig mode", breakGPU: func(d *server.Device) {
			d.GetMigModeFunc = func() (int, int, gonvml.Return) { return 0, 0, gonvml.ERROR_NO_PERMISSION }
		}, warn: "GPU 5: mig: MIG mode unknown: ERROR_NO_PERMISSION"},
		{name: "fabric", breakGPU: func(d *server.Device) {
			d.GetGpuFabricInfoFunc = func() (gonvml.GpuFabricInfo, gonvml.Return) { return gonvml.GpuFabricInfo{}, gonvml.ERROR_UNKNOWN }
		}, warn: "GPU 5: fabric: fabric information unknown: ERROR_UNKNOWN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := dgxH100()
			s := m.server(t)
			if tc.name == "duplicate uuid" {
				tc.breakGPU(s.Devices[2].(*server.Device))
				tc.err = "nvml: GPUs 2 and 5 report the same UUID GPU-same"
			}
			tc.breakGPU(s.Devices[5].(*server.Device))
			res, err := Discover(s, Options{Host: m.osHost(t)})
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				assert.Nil(t, res)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, warningsOf(res), tc.warn)
		})
	}
}

// recordingLibrary fails the test on any call but Init: after a failed
// Init, any NVML call would crash a real process.
type recordingLibrary struct {
	t    *testing.T
	init gonvml.Return
}

func (r *recordingLibrary) Init() gonvml.Return { return r.init }
func (r *recordingLibrary) Shutdown() gonvml.Return {
	r.t.Error("Shutdown called after a failed Init")
	return gonvml.SUCCESS
}
func (r *recordingLibrary) SystemGetDriverVersion() (string, gonvml.Return) {
	r.t.Error("SystemGetDriverVersion called after a failed Init")
	return "", gonvml.SUCCESS
}
func (r *recordingLibrary) DeviceGetCount() (int, gonvml.Return) {
	r.t.Error("DeviceGetCount called after a failed Init")
	return 0, gonvml.SUCCESS
}
func (r *recordingLibrary) DeviceGetHandleByIndex(int) (gonvml.Device, gonvml.Return) {
	r.t.Error("DeviceGetHandleByIndex called after a failed Init")
	return nil, gonvml.SUCCESS
}
func (r *recordingLibrary) Extensions() gonvml.ExtendedInterface {
	r.t.Error("Extensions called after a failed Init")
	return nil
}

// recordingHost fails the test if discovery asks the OS anything.
type recordingHost struct{ t *testing.T }

func (h recordingHost) Info() (HostInfo, error) {
	h.t.Error("Host.Info called after a failed Init")
	return HostInfo{}, nil
}
func (h recordingHost) PCIDevice(string) (PCIDevice, error) {
	h.t.Error("Host.PCIDevice called after a failed Init")
	return PCIDevice{}, nil
}

func TestInitFailureCallsNothingElse(t *testing.T) {
	for _, tc := range []struct {
		ret    gonvml.Return
		noDrv  bool
		errMsg string
	}{
		{gonvml.ERROR_LIBRARY_NOT_FOUND, true, "no NVIDIA driver found on this host; use a cluster file or a preset (NVML: ERROR_LIBRARY_NOT_FOUND)"},
		{gonvml.ERROR_DRIVER_NOT_LOADED, true, "no NVIDIA driver found on this host; use a cluster file or a preset (NVML: ERROR_DRIVER_NOT_LOADED)"},
		{gonvml.ERROR_NO_PERMISSION, false, "nvml: initialising NVML failed: ERROR_NO_PERMISSION"},
		{gonvml.ERROR_LIB_RM_VERSION_MISMATCH, false, "nvml: initialising NVML failed: ERROR_LIB_RM_VERSION_MISMATCH"},
	} {
		t.Run(retName(tc.ret), func(t *testing.T) {
			res, err := Discover(&recordingLibrary{t: t, init: tc.ret}, Options{Host: recordingHost{t}})
			require.EqualError(t, err, tc.errMsg)
			assert.Equal(t, tc.noDrv, errors.Is(err, ErrNoDriver))
			assert.Nil(t, res)
		})
	}
}

// The real go-nvml library, pointed at a library that does not exist, is
// how a host without the driver looks.
func TestRealLibraryMissing(t *testing.T) {
	lib := gonvml.New(gonvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1"))
	_, err := Discover(lib, Options{Host: recordingHost{t}})
	require.ErrorIs(t, err, ErrNoDriver)
	require.EqualError(t, err, "no NVIDIA driver found on this host; use a cluster file or a preset (NVML: ERROR_LIBRARY_NOT_FOUND)")
}

// The package mirrors a few NVML enumerations so that its pure-Go parts
// build without cgo; they must keep NVML's values.
func TestMirroredConstants(t *testing.T) {
	assert.Equal(t, []PathLevel{PathInternal, PathPIX, PathPXB, PathPHB, PathNODE, PathSYS},
		[]PathLevel{PathLevel(gonvml.TOPOLOGY_INTERNAL), PathLevel(gonvml.TOPOLOGY_SINGLE), PathLevel(gonvml.TOPOLOGY_MULTIPLE),
			PathLevel(gonvml.TOPOLOGY_HOSTBRIDGE), PathLevel(gonvml.TOPOLOGY_NODE), PathLevel(gonvml.TOPOLOGY_SYSTEM)})
	assert.Equal(t, []FabricState{FabricNotSupported, FabricNotStarted, FabricInProgress, FabricCompleted},
		[]FabricState{gonvml.GPU_FABRIC_STATE_NOT_SUPPORTED, gonvml.GPU_FABRIC_STATE_NOT_STARTED, gonvml.GPU_FABRIC_STATE_IN_PROGRESS, gonvml.GPU_FABRIC_STATE_COMPLETED})
	assert.Equal(t, []int{profile1Slice, profile2Slice, profile3Slice, profile4Slice, profile7Slice, profile8Slice, profile6Slice,
		profile1SliceRev1, profile2SliceRev1, profile1SliceRev2, profile1SliceGfx, profile2SliceGfx, profile4SliceGfx,
		profile1SliceNoME, profile2SliceNoME, profile1SliceAllME, profile2SliceAllME, profile3SliceGfx, profileCount},
		[]int{gonvml.GPU_INSTANCE_PROFILE_1_SLICE, gonvml.GPU_INSTANCE_PROFILE_2_SLICE, gonvml.GPU_INSTANCE_PROFILE_3_SLICE,
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE, gonvml.GPU_INSTANCE_PROFILE_7_SLICE, gonvml.GPU_INSTANCE_PROFILE_8_SLICE,
			gonvml.GPU_INSTANCE_PROFILE_6_SLICE, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1,
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_GFX,
			gonvml.GPU_INSTANCE_PROFILE_4_SLICE_GFX, gonvml.GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_NO_ME,
			gonvml.GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, gonvml.GPU_INSTANCE_PROFILE_3_SLICE_GFX,
			gonvml.GPU_INSTANCE_PROFILE_COUNT})
}

// Eighteen discovered GB200 trays of one clique assemble into the
// gb200-nvl72 preset: same hosts, templates and accelerator, and every GPU
// pair linked the same way.
func TestAssembleGB200RackMatchesPreset(t *testing.T) {
	uuid := [16]uint8{0x5e, 0xed, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0x72}
	var inputs []Input
	for i := 1; i <= 18; i++ {
		res := discover(t, gb200Tray(fmt.Sprintf("gb200-nvl72-%02d", i), uuid, 0))
		inputs = append(inputs, Input{Name: res.Hostname + ".yaml", Spec: res.Spec()})
	}
	got, err := Assemble(inputs, AssembleOptions{Name: "gb200-nvl72"})
	require.NoError(t, err)
	require.Len(t, got.Fabrics, 1)
	assert.Equal(t, topology.FabricGroup{Name: "mnnvl-5eed0000-0000-4000-8000-000000000072-0", Kind: topology.FabricMNNVL,
		Hosts: "gb200-nvl72-[01-18]", BandwidthGBps: 900, ClusterUUID: "5eed0000-0000-4000-8000-000000000072"}, got.Fabrics[0])
	wantSpec, err := topology.Preset("gb200-nvl72")
	require.NoError(t, err)
	require.Len(t, got.Templates, 1)
	requireTemplate(t, wantSpec.Templates[0], got.Templates[0])
	assert.Equal(t, wantSpec.Accelerators, got.Accelerators)

	gc, err := topology.Build(got)
	require.NoError(t, err)
	wc, err := topology.Build(wantSpec)
	require.NoError(t, err)
	require.Equal(t, wc.NumHosts(), gc.NumHosts())
	require.Equal(t, wc.NumGPUs(), gc.NumGPUs())
	for h := 0; h < gc.NumHosts(); h++ {
		assert.Equal(t, wc.HostName(topology.HostID(h)), gc.HostName(topology.HostID(h)))
	}
	for a := 0; a < gc.NumGPUs(); a++ {
		for b := 0; b < gc.NumGPUs(); b++ {
			ga, gb := topology.GPUID(a), topology.GPUID(b)
			require.Equal(t, wc.Link(ga, gb), gc.Link(ga, gb), "GPUs %d, %d", a, b)
		}
	}
}

// Two hosts of a GB200 clique, discovered apart, join one NVLink domain.
func TestAssembleTwoHostClique(t *testing.T) {
	uuid := [16]uint8{0xc1}
	a := discover(t, gb200Tray("rack1-n01", uuid, 9))
	b := discover(t, gb200Tray("rack1-n02", uuid, 9))
	spec, err := Assemble([]Input{{Name: "a.yaml", Spec: a.Spec()}, {Name: "b.yaml", Spec: b.Spec()}}, AssembleOptions{})
	require.NoError(t, err)
	c, err := topology.Build(spec)
	require.NoError(t, err)
	fabrics := c.DomainsAt(topology.LevelFabric)
	require.Len(t, fabrics, 1)
	assert.Len(t, c.DomainGPUs(fabrics[0]), 8)
	assert.Equal(t, uint32(9), c.Domain(fabrics[0]).CliqueID)
	assert.Equal(t, topology.LinkFabric, c.Link(0, 7).Kind)
}

// A host whose driver sees no GPU (all of them fallen off the bus, or a
// login node with the driver installed) is a CPU-only host, not an error.
func TestDiscoverNoGPUs(t *testing.T) {
	s, err := server.New(server.WithDriverVersion("550.54.15"))
	require.NoError(t, err)
	res, err := Discover(s, Options{Host: StaticHost{HostInfo: HostInfo{Hostname: "login1", CPUMilli: 64000, MemoryMiB: 262144}}})
	require.NoError(t, err)
	assert.Equal(t, topology.HostTemplate{Name: "cpu-only", CPUMilli: 64000, MemoryMiB: 262144}, res.Template)
	assert.Empty(t, res.Warnings)
	c, err := topology.Build(res.Spec())
	require.NoError(t, err)
	assert.Equal(t, 0, c.NumGPUs())
}
