//go:build cgo

package nvml

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpusched/gpusched/topology"
)

// Library is the part of nvml.Interface that discovery uses: the real
// library (nvml.New()) and go-nvml's mock servers both satisfy it, and a
// test can implement it directly. Devices are go-nvml's nvml.Device.
type Library interface {
	Init() gonvml.Return
	Shutdown() gonvml.Return
	SystemGetDriverVersion() (string, gonvml.Return)
	DeviceGetCount() (int, gonvml.Return)
	DeviceGetHandleByIndex(int) (gonvml.Device, gonvml.Return)
	// Extensions gives LookupSymbol, used to ask whether the loaded
	// driver has a newer function before calling it. Nil is allowed and
	// means "only the oldest functions".
	Extensions() gonvml.ExtendedInterface
}

var _ Library = gonvml.Interface(nil)

// Symbols looked up before use: calling a function the loaded driver lacks
// would crash the process.
const (
	symFabricInfo    = "nvmlDeviceGetGpuFabricInfo"
	symNumaNode      = "nvmlDeviceGetNumaNodeId"
	symMemAffinity   = "nvmlDeviceGetMemoryAffinity"
	symRemoteType    = "nvmlDeviceGetNvLinkRemoteDeviceType"
	symAffinityScope = "nvmlDeviceGetCpuAffinityWithinScope"
)

// Sizes of the CPU and NUMA-node masks asked for, in CPUs and nodes (go-nvml
// turns them into a number of words, generously).
const (
	affinityCPUs  = 4096
	affinityNodes = 1024
)

// DiscoverHost discovers this host through the NVIDIA driver's NVML
// library (libnvidia-ml.so.1). See Discover.
func DiscoverHost(opts Options) (*Result, error) {
	return Discover(gonvml.New(), opts)
}

// Discover initialises lib, reads one host's GPUs and their topology, shuts
// lib down and returns the result. See the package documentation for how
// NVML's facts become the model.
//
// When Init fails nothing else is called: Init's LIBRARY_NOT_FOUND and
// DRIVER_NOT_LOADED give an error wrapping ErrNoDriver, any other code an
// error naming it. Failures of the calls every GPU must answer (count,
// handle, UUID, PCI info, name) are errors too; every other failure,
// NOT_SUPPORTED above all, leaves that feature out and adds a Warning.
// The result is validated by topology.Build before it is returned.
//
// Discover does I/O (NVML, and /proc and /sys through opts.Host); it is
// not safe for concurrent use with other users of the same lib.
func Discover(lib Library, opts Options) (res *Result, err error) {
	if lib == nil {
		return nil, fmt.Errorf("nvml: nil library")
	}
	switch ret := lib.Init(); ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_LIBRARY_NOT_FOUND, gonvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w (NVML: %s)", ErrNoDriver, retName(ret))
	default:
		return nil, fmt.Errorf("nvml: initialising NVML failed: %s", retName(ret))
	}
	d := &discoverer{lib: lib, opts: opts, res: &Result{}}
	defer func() {
		if ret := lib.Shutdown(); ret != gonvml.SUCCESS && res != nil {
			res.Warnings = append(res.Warnings, Warning{GPU: -1, Feature: FeatureNVML, Msg: "shutdown failed: " + retName(ret)})
		}
	}()
	if err := d.run(); err != nil {
		return nil, err
	}
	return d.res, nil
}

type discoverer struct {
	lib  Library
	opts Options
	res  *Result
	devs []gonvml.Device
	syms map[string]bool
}

func (d *discoverer) warn(g int, f Feature, format string, args ...any) {
	d.res.Warnings = append(d.res.Warnings, Warning{GPU: g, Feature: f, Msg: fmt.Sprintf(format, args...)})
}

// has reports whether the loaded library exports sym.
func (d *discoverer) has(sym string) bool {
	if v, ok := d.syms[sym]; ok {
		return v
	}
	ext := d.lib.Extensions()
	v := ext != nil && ext.LookupSymbol(sym) == nil
	d.syms[sym] = v
	return v
}

func (d *discoverer) run() error {
	d.syms = map[string]bool{}
	r := d.res
	if v, ret := d.lib.SystemGetDriverVersion(); ret == gonvml.SUCCESS {
		r.DriverVersion = v
	} else {
		d.warn(-1, FeatureNVML, "driver version unknown: %s", retName(ret))
	}
	n, ret := d.lib.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: counting GPUs: %s", retName(ret))
	}
	if n < 0 || n > topology.MaxGPUsPerHost {
		return fmt.Errorf("nvml: NVML reports %d GPUs; at most %d are supported", n, topology.MaxGPUsPerHost)
	}
	for i := 0; i < n; i++ {
		dev, ret := d.lib.DeviceGetHandleByIndex(i)
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("nvml: GPU %d: getting its handle: %s", i, retName(ret))
		}
		d.devs = append(d.devs, dev)
	}
	if err := d.hostFacts(); err != nil {
		return err
	}
	facts := PCIeFacts{NUMA: make([]int, n), CPUs: make([]string, n), Switches: make([]int, n)}
	for i, dev := range d.devs {
		g, err := d.gpu(i, dev)
		if err != nil {
			return err
		}
		r.GPUs = append(r.GPUs, g)
		facts.NUMA[i], facts.CPUs[i], facts.Switches[i] = g.NUMANode, g.CPUAffinity, g.PCIeSwitches
	}
	if err := d.checkUnique(); err != nil {
		return err
	}
	d.resolveLinks()
	facts.Levels = d.levels()
	numa, ws := InferPCIe(facts)
	r.Warnings = append(r.Warnings, ws...)
	fabrics, member, ws := BuildFabrics(r.GPUs)
	r.Warnings = append(r.Warnings, ws...)
	r.Fabric = member

	t := &r.Template
	t.GPUs = n
	t.NUMA = numa
	t.Fabrics = fabrics
	if n > 0 {
		acc, err := d.accelerator()
		if err != nil {
			return err
		}
		r.Accelerator = acc
		t.Accelerator = acc.Model
	}
	if err := d.hostShape(); err != nil {
		return err
	}
	*t = t.Canonical()
	r.Preset = MatchPreset(*t)
	switch {
	case d.opts.TemplateName != "":
		t.Name = d.opts.TemplateName
	case r.Preset != "":
		t.Name = r.Preset
	default:
		t.Name = templateName(t.Accelerator, n)
	}
	if _, err := topology.Build(r.Spec()); err != nil {
		return fmt.Errorf("nvml: the discovered host does not make a valid cluster spec: %w", err)
	}
	return nil
}

// hostFacts fills the host name; CPUs and memory come with hostShape.
func (d *discoverer) hostFacts() error {
	info, err := d.opts.host().Info()
	if err != nil {
		d.warn(-1, FeatureHost, "%v", err)
	}
	name := d.opts.Hostname
	if name == "" {
		name = info.Hostname
	}
	if name == "" {
		return fmt.Errorf("nvml: the host name is unknown; set it (Options.Hostname, --hostname)")
	}
	if strings.ContainsAny(name, " \t\r\n/[]") {
		return fmt.Errorf("nvml: host name %q may not contain white space, '/', '[' or ']'", name)
	}
	d.res.Hostname = name
	d.res.Template.CPUMilli = info.CPUMilli
	d.res.Template.MemoryMiB = info.MemoryMiB
	return nil
}

func (d *discoverer) hostShape() error {
	t := &d.res.Template
	if d.opts.CPUMilli > 0 {
		t.CPUMilli = d.opts.CPUMilli
	}
	if d.opts.MemoryMiB > 0 {
		t.MemoryMiB = d.opts.MemoryMiB
	}
	if t.CPUMilli <= 0 {
		d.warn(-1, FeatureHost, "CPU count unknown; the template has no allocatable CPU (set it with Options.CPUMilli, --cpu-milli)")
	}
	if t.MemoryMiB <= 0 {
		d.warn(-1, FeatureHost, "memory size unknown; the template has no allocatable memory (set it with Options.MemoryMiB, --memory-mib)")
	}
	if t.CPUMilli > topology.MaxCPUMilli || t.MemoryMiB > topology.MaxMemoryMiB || t.CPUMilli < 0 || t.MemoryMiB < 0 {
		return fmt.Errorf("nvml: host CPU %d milli-cores or memory %d MiB out of range", t.CPUMilli, t.MemoryMiB)
	}
	return nil
}

// gpu reads one GPU. Identity calls are required; the rest degrade.
func (d *discoverer) gpu(i int, dev gonvml.Device) (GPU, error) {
	g := GPU{Index: i, NUMANode: -1, MemoryNUMANode: -1, PCIeSwitches: -1}
	var ret gonvml.Return
	if g.UUID, ret = dev.GetUUID(); ret != gonvml.SUCCESS {
		return g, fmt.Errorf("nvml: GPU %d: reading its UUID: %s", i, retName(ret))
	}
	pci, ret := dev.GetPciInfo()
	if ret != gonvml.SUCCESS {
		return g, fmt.Errorf("nvml: GPU %d: reading its PCI info: %s", i, retName(ret))
	}
	bus, err := topology.NormalizeBusID(busIDString(pci.BusId))
	if err != nil {
		return g, fmt.Errorf("nvml: GPU %d: %v", i, err)
	}
	g.BusID = bus
	if g.Name, ret = dev.GetName(); ret != gonvml.SUCCESS {
		return g, fmt.Errorf("nvml: GPU %d: reading its name: %s", i, retName(ret))
	}
	if idx, ret := dev.GetIndex(); ret == gonvml.SUCCESS && idx != i {
		d.warn(i, FeatureGPU, "NVML reports index %d for the device at position %d; using %d", idx, i, i)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == gonvml.SUCCESS {
		g.MemoryMiB = int64(mem.Total >> 20)
	} else {
		d.warn(i, FeatureModel, "memory size unknown: %s", retName(ret))
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == gonvml.SUCCESS {
		g.ComputeCapability = strconv.Itoa(major) + "." + strconv.Itoa(minor)
	} else {
		d.warn(i, FeatureModel, "compute capability unknown: %s", retName(ret))
	}
	d.numa(i, dev, &g)
	d.mig(i, dev, &g)
	g.NVLinks = d.nvlinks(i, dev)
	g.Fabric = d.fabric(i, dev)
	return g, nil
}

func (d *discoverer) numa(i int, dev gonvml.Device, g *GPU) {
	pd, err := d.opts.host().PCIDevice(g.BusID)
	if err != nil {
		d.warn(i, FeaturePCIe, "%v", err)
	}
	g.PCIeSwitches = pd.Switches
	// The CPU-side NUMA node is the GPU's memory affinity (nvidia-smi's
	// "NUMA Affinity"), else sysfs; nvmlDeviceGetNumaNodeId is something
	// else: the node of the GPU's own memory where the platform onlines it
	// (Grace Hopper, Grace Blackwell).
	if d.has(symMemAffinity) {
		if mask, ret := dev.GetMemoryAffinity(affinityNodes, gonvml.AFFINITY_SCOPE_NODE); ret == gonvml.SUCCESS {
			nodes, _ := ParseCPUList(FormatCPUList(mask)) // the set bits, ascending
			switch {
			case len(nodes) == 1:
				g.NUMANode = nodes[0]
			case len(nodes) > 1:
				g.NUMANode = nodes[0]
				d.warn(i, FeatureNUMA, "memory affinity spans NUMA nodes %s; using node %d", FormatCPUList(mask), nodes[0])
			}
		}
	}
	switch {
	case g.NUMANode < 0:
		g.NUMANode = pd.NUMANode
	case pd.NUMANode >= 0 && pd.NUMANode != g.NUMANode:
		d.warn(i, FeatureNUMA, "NVML gives NUMA node %d, sysfs %d; using NVML's", g.NUMANode, pd.NUMANode)
	}
	g.MemoryNUMANode = -1
	if d.has(symNumaNode) {
		if id, ret := dev.GetNumaNodeId(); ret == gonvml.SUCCESS && id >= 0 {
			g.MemoryNUMANode = id
		}
	}
	var mask []uint
	var ret gonvml.Return
	if d.has(symAffinityScope) {
		mask, ret = dev.GetCpuAffinityWithinScope(affinityCPUs, gonvml.AFFINITY_SCOPE_NODE)
	} else {
		mask, ret = dev.GetCpuAffinity(affinityCPUs)
	}
	if ret == gonvml.SUCCESS {
		g.CPUAffinity = FormatCPUList(mask)
	} else {
		d.warn(i, FeatureNUMA, "CPU affinity unknown: %s", retName(ret))
	}
}

func (d *discoverer) mig(i int, dev gonvml.Device, g *GPU) {
	cur, pending, ret := dev.GetMigMode()
	switch ret {
	case gonvml.SUCCESS:
		g.MIG = MIGState{Capable: true, Enabled: cur == gonvml.DEVICE_MIG_ENABLE, Pending: pending == gonvml.DEVICE_MIG_ENABLE}
	case gonvml.ERROR_NOT_SUPPORTED:
	default:
		d.warn(i, FeatureMIG, "MIG mode unknown: %s", retName(ret))
	}
}

// migFacts lists the GPU-instance profiles of dev.
func (d *discoverer) migFacts(i int, dev gonvml.Device) []MIGProfileFacts {
	var out []MIGProfileFacts
	for kind := 0; kind < profileCount; kind++ {
		info, ret := dev.GetGpuInstanceProfileInfo(kind)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			continue
		default:
			d.warn(i, FeatureMIG, "profile %d: %s", kind, retName(ret))
			continue
		}
		f := MIGProfileFacts{Kind: kind, Slices: int(info.SliceCount), MemoryMiB: int64(info.MemorySizeMB)}
		pl, ret := dev.GetGpuInstancePossiblePlacements(&info)
		if ret != gonvml.SUCCESS {
			d.warn(i, FeatureMIG, "placements of profile %d unknown: %s", kind, retName(ret))
			continue
		}
		for _, p := range pl {
			f.Placements = append(f.Placements, MIGPlacement{Start: int(p.Start), Size: int(p.Size)})
		}
		out = append(out, f)
	}
	return out
}

func (d *discoverer) nvlinks(i int, dev gonvml.Device) []NVLink {
	var links []NVLink
	remoteType := d.has(symRemoteType)
	for l := 0; l < gonvml.NVLINK_MAX_LINKS; l++ {
		st, ret := dev.GetNvLinkState(l)
		switch ret {
		case gonvml.SUCCESS:
		case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_INVALID_ARGUMENT:
			continue // no such link
		default:
			d.warn(i, FeatureNVLink, "link %d state unknown: %s", l, retName(ret))
			continue
		}
		link := NVLink{Link: l, RemoteGPU: -1}
		if st == gonvml.FEATURE_ENABLED {
			link.Active = true
			if v, ret := dev.GetNvLinkVersion(l); ret == gonvml.SUCCESS {
				link.Version = int(v)
			}
			if remoteType {
				if t, ret := dev.GetNvLinkRemoteDeviceType(l); ret == gonvml.SUCCESS {
					switch t {
					case gonvml.NVLINK_DEVICE_TYPE_GPU:
						link.Remote = RemoteGPU
					case gonvml.NVLINK_DEVICE_TYPE_SWITCH:
						link.Remote = RemoteSwitch
					case gonvml.NVLINK_DEVICE_TYPE_IBMNPU:
						link.Remote = RemoteCPU
					}
				}
			}
			if pci, ret := dev.GetNvLinkRemotePciInfo(l); ret == gonvml.SUCCESS {
				if b, err := topology.NormalizeBusID(busIDString(pci.BusId)); err == nil {
					link.RemoteBusID = b
				}
			}
		}
		links = append(links, link)
	}
	return links
}

func (d *discoverer) fabric(i int, dev gonvml.Device) *GPUFabric {
	if !d.has(symFabricInfo) {
		if i == 0 {
			d.warn(-1, FeatureFabric, "the driver has no %s (it predates R535); multi-node NVLink domains are not detected", symFabricInfo)
		}
		return nil
	}
	info, ret := dev.GetGpuFabricInfo()
	switch ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_NOT_SUPPORTED:
		return nil
	default:
		d.warn(i, FeatureFabric, "fabric information unknown: %s", retName(ret))
		return nil
	}
	f := &GPUFabric{
		State:       FabricState(info.State),
		OK:          gonvml.Return(info.Status) == gonvml.SUCCESS,
		ClusterUUID: formatUUID(info.ClusterUuid),
		CliqueID:    info.CliqueId,
	}
	if f.State == FabricNotSupported {
		return nil
	}
	return f
}

// checkUnique rejects duplicate UUIDs and bus IDs, which would make the
// host's identities ambiguous.
func (d *discoverer) checkUnique() error {
	uuids, buses := map[string]int{}, map[string]int{}
	for _, g := range d.res.GPUs {
		if j, dup := uuids[g.UUID]; dup {
			return fmt.Errorf("nvml: GPUs %d and %d report the same UUID %s", j, g.Index, g.UUID)
		}
		if j, dup := buses[g.BusID]; dup {
			return fmt.Errorf("nvml: GPUs %d and %d report the same PCI bus ID %s", j, g.Index, g.BusID)
		}
		uuids[g.UUID], buses[g.BusID] = g.Index, g.Index
	}
	return nil
}

// resolveLinks names the peer GPU of each GPU link and settles links whose
// remote type the driver did not report: a link reaching another GPU's bus
// ID is a GPU link, any other an NVSwitch link.
func (d *discoverer) resolveLinks() {
	byBus := map[string]int{}
	for _, g := range d.res.GPUs {
		byBus[g.BusID] = g.Index
	}
	for gi := range d.res.GPUs {
		g := &d.res.GPUs[gi]
		guessed := false
		for li := range g.NVLinks {
			l := &g.NVLinks[li]
			if !l.Active {
				continue
			}
			peer, isGPU := byBus[l.RemoteBusID]
			if l.Remote == RemoteUnknown {
				if isGPU {
					l.Remote = RemoteGPU
				} else {
					l.Remote = RemoteSwitch
					guessed = true
				}
			}
			if l.Remote == RemoteGPU && isGPU && peer != gi {
				l.RemoteGPU = peer
			}
		}
		if guessed {
			d.warn(gi, FeatureNVLink, "the driver does not report remote device types; links that reach no GPU of this host are taken to reach NVSwitches")
		}
	}
}

// levels reads the pairwise PCIe path levels; nil when NVML cannot tell.
func (d *discoverer) levels() [][]PathLevel {
	n := len(d.devs)
	m := make([][]PathLevel, n)
	for i := range m {
		m[i] = make([]PathLevel, n)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			l, ret := d.devs[i].GetTopologyCommonAncestor(d.devs[j])
			if ret != gonvml.SUCCESS {
				d.warn(-1, FeaturePCIe, "PCIe path levels unknown (GPUs %d and %d: %s)", i, j, retName(ret))
				return nil
			}
			switch pl := PathLevel(l); pl {
			case PathInternal, PathPIX, PathPXB, PathPHB, PathNODE, PathSYS:
				m[i][j], m[j][i] = pl, pl
			default:
				d.warn(-1, FeaturePCIe, "GPUs %d and %d: unknown path level %d, taken as SYS", i, j, l)
				m[i][j], m[j][i] = PathSYS, PathSYS
			}
		}
	}
	return m
}

// accelerator describes the host's GPU model from its GPUs.
func (d *discoverer) accelerator() (topology.AcceleratorSpec, error) {
	gs := d.res.GPUs
	for _, g := range gs[1:] {
		if g.Name != gs[0].Name {
			return topology.AcceleratorSpec{}, fmt.Errorf("nvml: GPUs 0 and %d are different models (%q, %q); a host template holds one model", g.Index, gs[0].Name, g.Name)
		}
	}
	model, known := ModelName(gs[0].Name, d.opts.Models)
	if !known {
		d.warn(-1, FeatureModel, "GPU name %q is not in the model table; using %q (map it with Options.Models)", gs[0].Name, model)
	}
	acc := topology.AcceleratorSpec{Model: model, Vendor: "nvidia", MemoryMiB: gs[0].MemoryMiB, ComputeCapability: gs[0].ComputeCapability}
	for _, g := range gs[1:] {
		if g.MemoryMiB != acc.MemoryMiB && g.MemoryMiB > 0 {
			d.warn(g.Index, FeatureModel, "reports %d MiB where GPU 0 reports %d MiB; the model keeps the smaller", g.MemoryMiB, acc.MemoryMiB)
			if acc.MemoryMiB == 0 || g.MemoryMiB < acc.MemoryMiB {
				acc.MemoryMiB = g.MemoryMiB
			}
		}
	}
	// MIG geometry from the first MIG-capable GPU; the others must agree.
	var first *topology.MIGSpec
	firstGPU := -1
	for i, g := range gs {
		if !g.MIG.Capable {
			continue
		}
		mig, skipped, ws := BuildMIG(g.MemoryMiB, d.migFacts(i, d.devs[i]))
		for _, w := range ws {
			w.GPU = i
			d.res.Warnings = append(d.res.Warnings, w)
		}
		if firstGPU < 0 {
			first, firstGPU = mig, i
			d.res.SkippedMIGProfiles = skipped
			continue
		}
		if !reflect.DeepEqual(mig, first) {
			d.warn(i, FeatureMIG, "its MIG profiles differ from GPU %d's; the model keeps GPU %d's", firstGPU, firstGPU)
		}
	}
	acc.MIG = first
	if firstGPU >= 0 && first == nil {
		if p, ok := presetAccelerator(model); ok && p.MIG != nil && !d.opts.NoPresetMIG {
			acc.MIG = p.MIG
			d.warn(-1, FeatureMIG, "NVML lists no MIG profiles (MIG mode is %s); the geometry of %s is taken from the presets", onOff(gs[firstGPU].MIG.Enabled), model)
		} else {
			d.warn(-1, FeatureMIG, "the GPUs are MIG-capable but NVML lists no profiles (MIG mode is %s); no MIG geometry", onOff(gs[firstGPU].MIG.Enabled))
		}
	}
	return acc, nil
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// busIDString reads NVML's NUL-terminated bus ID.
func busIDString(b [32]int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

// retName names an NVML return code without asking the library, which
// may not be loaded (and must not be called after a failed Init).
func retName(r gonvml.Return) string {
	names := map[gonvml.Return]string{
		gonvml.SUCCESS:                       "SUCCESS",
		gonvml.ERROR_UNINITIALIZED:           "ERROR_UNINITIALIZED",
		gonvml.ERROR_INVALID_ARGUMENT:        "ERROR_INVALID_ARGUMENT",
		gonvml.ERROR_NOT_SUPPORTED:           "ERROR_NOT_SUPPORTED",
		gonvml.ERROR_NO_PERMISSION:           "ERROR_NO_PERMISSION",
		gonvml.ERROR_ALREADY_INITIALIZED:     "ERROR_ALREADY_INITIALIZED",
		gonvml.ERROR_NOT_FOUND:               "ERROR_NOT_FOUND",
		gonvml.ERROR_INSUFFICIENT_SIZE:       "ERROR_INSUFFICIENT_SIZE",
		gonvml.ERROR_DRIVER_NOT_LOADED:       "ERROR_DRIVER_NOT_LOADED",
		gonvml.ERROR_TIMEOUT:                 "ERROR_TIMEOUT",
		gonvml.ERROR_LIBRARY_NOT_FOUND:       "ERROR_LIBRARY_NOT_FOUND",
		gonvml.ERROR_FUNCTION_NOT_FOUND:      "ERROR_FUNCTION_NOT_FOUND",
		gonvml.ERROR_GPU_IS_LOST:             "ERROR_GPU_IS_LOST",
		gonvml.ERROR_RESET_REQUIRED:          "ERROR_RESET_REQUIRED",
		gonvml.ERROR_LIB_RM_VERSION_MISMATCH: "ERROR_LIB_RM_VERSION_MISMATCH",
		gonvml.ERROR_UNKNOWN:                 "ERROR_UNKNOWN",
	}
	if s, ok := names[r]; ok {
		return s
	}
	return "NVML error " + strconv.Itoa(int(r))
}

// presetAccelerator returns the accelerator of the machine presets named
// model, if any.
func presetAccelerator(model string) (topology.AcceleratorSpec, bool) {
	for _, name := range topology.MachineNames() {
		if _, acc, err := topology.MachineTemplate(name); err == nil && acc.Model == model {
			return acc, true
		}
	}
	return topology.AcceleratorSpec{}, false
}

func (o *Options) host() Host {
	if o.Host == nil {
		return SysHost{}
	}
	return o.Host
}

// templateName names a template that matches no preset: "<model>x<gpus>",
// or "cpu-only" for a host without GPUs.
func templateName(model string, gpus int) string {
	if gpus == 0 {
		return "cpu-only"
	}
	return model + "x" + strconv.Itoa(gpus)
}

// formatUUID writes 16 bytes as a canonical UUID, or "" when all are zero.
func formatUUID(b [16]uint8) string {
	zero := true
	for _, x := range b {
		if x != 0 {
			zero = false
			break
		}
	}
	if zero {
		return ""
	}
	var sb strings.Builder
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			sb.WriteByte('-')
		}
		fmt.Fprintf(&sb, "%02x", x)
	}
	return sb.String()
}
