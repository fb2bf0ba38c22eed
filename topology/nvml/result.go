package nvml

import (
	"errors"
	"reflect"
	"strconv"

	"github.com/gpusched/gpusched/topology"
)

// ErrNoDriver is returned (wrapped) by Discover when NVML cannot be used on
// this host at all: the library is not installed or the driver is not
// loaded.
var ErrNoDriver = errors.New("no NVIDIA driver found on this host; use a cluster file or a preset")

// ErrNeedsCgo is returned by DiscoverHost in a build without cgo.
var ErrNeedsCgo = errors.New("NVML discovery needs a cgo build of gpusched (CGO_ENABLED=1 and a C compiler); use a cluster file or a preset")

// Feature names the part of discovery a Warning is about.
type Feature string

// Features that discovery reports on.
const (
	FeatureHost   Feature = "host"   // host name, CPUs, memory
	FeatureGPU    Feature = "gpu"    // per-GPU basics
	FeatureModel  Feature = "model"  // accelerator model and memory
	FeatureNUMA   Feature = "numa"   // NUMA node and CPU affinity
	FeaturePCIe   Feature = "pcie"   // the PCIe tree
	FeatureNVLink Feature = "nvlink" // NVLink links and domains
	FeatureMIG    Feature = "mig"    // MIG mode and profiles
	FeatureFabric Feature = "fabric" // multi-node NVLink fabric
	FeatureNVML   Feature = "nvml"   // the library itself (shutdown)
)

// Warning is something discovery could not see or found degraded. It never
// stops discovery; the result describes what could be seen.
type Warning struct {
	// GPU is the GPU index the warning is about, or -1 for the host.
	GPU int
	// Feature is the part of discovery affected.
	Feature Feature
	// Msg says what happened and what the result does about it.
	Msg string
}

// String returns "GPU 3: nvlink: MSG" or "pcie: MSG".
func (w Warning) String() string {
	if w.GPU >= 0 {
		return "GPU " + strconv.Itoa(w.GPU) + ": " + string(w.Feature) + ": " + w.Msg
	}
	return string(w.Feature) + ": " + w.Msg
}

// RemoteKind is what the far end of an NVLink is.
type RemoteKind uint8

// Remote device kinds, as nvmlDeviceGetNvLinkRemoteDeviceType reports them.
const (
	RemoteUnknown RemoteKind = iota
	RemoteGPU
	RemoteSwitch
	RemoteCPU // an IBM NPU (POWER9 NVLink-to-CPU)
)

var remoteNames = [...]string{"unknown", "gpu", "switch", "cpu"}

// String returns "unknown", "gpu", "switch" or "cpu".
func (k RemoteKind) String() string {
	if int(k) < len(remoteNames) {
		return remoteNames[k]
	}
	return "RemoteKind(" + strconv.Itoa(int(k)) + ")"
}

// NVLink is the state of one NVLink of a GPU.
type NVLink struct {
	// Link is the link number.
	Link int
	// Active is true when the link is up.
	Active bool
	// Version is the NVLink generation (1..5), 0 when unknown or down.
	Version int
	// Remote is what the link reaches; RemoteUnknown when down.
	Remote RemoteKind
	// RemoteBusID is the PCI bus ID of the far end (a GPU or an NVSwitch),
	// normalised; empty when unknown.
	RemoteBusID string
	// RemoteGPU is the index of the peer GPU in this host, or -1.
	RemoteGPU int
}

// FabricState is the state of a GPU's registration with the NVLink fabric
// manager, as nvmlDeviceGetGpuFabricInfo reports it.
type FabricState uint8

// Fabric states (NVML_GPU_FABRIC_STATE_*).
const (
	FabricNotSupported FabricState = iota
	FabricNotStarted
	FabricInProgress
	FabricCompleted
)

var fabricStateNames = [...]string{"not supported", "not started", "in progress", "completed"}

// String returns the state in words.
func (s FabricState) String() string {
	if int(s) < len(fabricStateNames) {
		return fabricStateNames[s]
	}
	return "FabricState(" + strconv.Itoa(int(s)) + ")"
}

// GPUFabric is a GPU's fabric information.
type GPUFabric struct {
	State FabricState
	// OK is true when the registration's status is success (meaningful
	// when State is FabricCompleted).
	OK bool
	// ClusterUUID is the fabric cluster UUID in canonical text form, empty
	// when it is all zero.
	ClusterUUID string
	// CliqueID is the clique within the cluster.
	CliqueID uint32
}

// MultiNode reports whether the GPU is a registered member of a multi-node
// NVLink domain.
func (f *GPUFabric) MultiNode() bool {
	return f != nil && f.State == FabricCompleted && f.OK && f.ClusterUUID != ""
}

// MIGState is a GPU's MIG mode.
type MIGState struct {
	// Capable is true when the GPU supports MIG.
	Capable bool
	// Enabled is the current mode; Pending the mode after the next reset.
	Enabled, Pending bool
}

// GPU is what discovery learned about one GPU.
type GPU struct {
	// Index is NVML's device index, the GPU's index in the host template.
	Index int
	// UUID is the driver's UUID ("GPU-…").
	UUID string
	// BusID is the PCI bus ID in sysfs form ("0000:18:00.0").
	BusID string
	// Name is NVML's product name ("NVIDIA H100 80GB HBM3").
	Name string
	// MemoryMiB is the total device memory.
	MemoryMiB int64
	// ComputeCapability is e.g. "9.0"; empty when unknown.
	ComputeCapability string
	// NUMANode is the NUMA node the GPU is attached to (its CPU-side
	// locality, nvidia-smi's "NUMA Affinity"), -1 when unknown.
	NUMANode int
	// MemoryNUMANode is the NUMA node of the GPU's own memory on platforms
	// that online it as one (Grace Hopper and Grace Blackwell;
	// nvidia-smi's "GPU NUMA ID"), -1 elsewhere. Informational.
	MemoryNUMANode int
	// CPUAffinity is the CPUs of the GPU's NUMA node as a Linux cpulist;
	// empty when unknown.
	CPUAffinity string
	// PCIeSwitches is the number of PCIe switches between the GPU and its
	// root port as sysfs shows them, -1 when unknown.
	PCIeSwitches int
	// MIG is the GPU's MIG mode.
	MIG MIGState
	// NVLinks lists the links NVML reports, in link order; empty for GPUs
	// without NVLink.
	NVLinks []NVLink
	// Fabric is the fabric information, nil when the driver or the GPU
	// does not report one.
	Fabric *GPUFabric
}

// ActiveLinks returns how many of g's NVLinks are up.
func (g *GPU) ActiveLinks() int {
	n := 0
	for _, l := range g.NVLinks {
		if l.Active {
			n++
		}
	}
	return n
}

// FabricMembership says that a host's GPUs belong to a multi-node NVLink
// domain (such as a GB200 NVL72 rack).
type FabricMembership struct {
	ClusterUUID string
	CliqueID    uint32
	// BandwidthGBps is the per-GPU NVLink bandwidth, one direction.
	BandwidthGBps float64
}

// DomainName returns the name Result.Spec and Assemble give the domain:
// "mnnvl-<cluster UUID>-<clique ID>".
func (m FabricMembership) DomainName() string {
	return "mnnvl-" + m.ClusterUUID + "-" + strconv.FormatUint(uint64(m.CliqueID), 10)
}

// Result is what Discover learned about one host.
type Result struct {
	// Hostname is the host's name (from Options or the Host).
	Hostname string
	// DriverVersion is the NVIDIA driver version, empty when unknown.
	DriverVersion string
	// Template is the host's canonical template. Its Name is the machine
	// preset it matches (Preset) or "<model>x<gpus>".
	Template topology.HostTemplate
	// Accelerator describes the host's GPU model; zero when it has none.
	Accelerator topology.AcceleratorSpec
	// GPUs are the host's GPUs in index order.
	GPUs []GPU
	// Fabric is the host's multi-node NVLink domain, nil when none.
	Fabric *FabricMembership
	// Preset is the machine preset (topology.MachineNames) whose topology
	// the host matches, ignoring CPU and memory; empty when none.
	Preset string
	// SkippedMIGProfiles names MIG profiles the GPU offers that the model
	// leaves out (variants such as "1g.10gb+me.all" or "1g.23gb+gfx").
	SkippedMIGProfiles []string
	// Warnings are in the order discovery met them.
	Warnings []Warning
}

// Identities returns the identity (index, UUID, bus ID) of each GPU.
func (r *Result) Identities() []topology.GPUIdentity {
	ids := make([]topology.GPUIdentity, len(r.GPUs))
	for i, g := range r.GPUs {
		ids[i] = topology.GPUIdentity{Index: g.Index, UUID: g.UUID, BusID: g.BusID}
	}
	return ids
}

// DefaultClusterName is the name Result.Spec gives a one-host cluster.
const DefaultClusterName = "discovered"

// Spec returns the host as a one-host cluster file: its accelerator, its
// template, one host group carrying the GPU identities and, when the host
// is in a multi-node NVLink domain, a fabric group naming it by cluster UUID
// and clique ID (Assemble joins the hosts of one domain).
func (r *Result) Spec() topology.Spec {
	s := topology.Spec{
		Version:   topology.SpecVersion,
		Name:      DefaultClusterName,
		Templates: []topology.HostTemplate{r.Template.Canonical()},
		Hosts:     []topology.HostGroup{{Name: r.Hostname, Template: r.Template.Name, GPUs: r.Identities()}},
	}
	if r.Template.GPUs > 0 {
		s.Accelerators = []topology.AcceleratorSpec{cloneAccelerator(r.Accelerator)}
	}
	if len(r.GPUs) == 0 {
		s.Hosts[0].GPUs = nil
	}
	if r.Fabric != nil {
		s.Fabrics = []topology.FabricGroup{{
			Name: r.Fabric.DomainName(), Kind: topology.FabricMNNVL, Hosts: r.Hostname,
			BandwidthGBps: r.Fabric.BandwidthGBps, ClusterUUID: r.Fabric.ClusterUUID, CliqueID: r.Fabric.CliqueID,
		}}
	}
	return s
}

func cloneAccelerator(a topology.AcceleratorSpec) topology.AcceleratorSpec {
	if a.MIG != nil {
		m := *a.MIG
		m.Profiles = append([]topology.MIGProfileSpec(nil), m.Profiles...)
		for i := range m.Profiles {
			m.Profiles[i].Starts = append([]int(nil), m.Profiles[i].Starts...)
		}
		a.MIG = &m
	}
	return a
}

// MatchPreset returns the machine preset (one of topology.MachineNames)
// whose template has the same accelerator model, GPU count, NUMA/PCIe tree
// and fabric domains as t, or "" when none does. Template names, CPU and
// memory are ignored: those come from the operating system and never match
// a vendor's reference figures exactly.
func MatchPreset(t topology.HostTemplate) string {
	for _, name := range topology.MachineNames() {
		pt, _, err := topology.MachineTemplate(name)
		if err != nil {
			continue
		}
		if SameTopology(t, pt) {
			return name
		}
	}
	return ""
}

// SameTopology reports whether two templates describe the same machine apart
// from their names, CPU and memory: same accelerator model and GPU count,
// and equal NUMA nodes (ids and CPU lists), PCIe trees and fabric domains
// once canonical.
func SameTopology(a, b topology.HostTemplate) bool {
	a, b = a.Canonical(), b.Canonical()
	a.Name, b.Name = "", ""
	a.CPUMilli, b.CPUMilli = 0, 0
	a.MemoryMiB, b.MemoryMiB = 0, 0
	return reflect.DeepEqual(normTemplate(a), normTemplate(b))
}

// normTemplate maps empty slices to nil so that DeepEqual compares content.
func normTemplate(t topology.HostTemplate) topology.HostTemplate {
	if len(t.NUMA) == 0 {
		t.NUMA = nil
	}
	if len(t.Fabrics) == 0 {
		t.Fabrics = nil
	}
	for i := range t.NUMA {
		t.NUMA[i].PCIe = normPCIe(t.NUMA[i].PCIe)
	}
	for i := range t.Fabrics {
		if len(t.Fabrics[i].GPUs) == 0 {
			t.Fabrics[i].GPUs = nil
		}
	}
	return t
}

func normPCIe(s []topology.PCIeSpec) []topology.PCIeSpec {
	if len(s) == 0 {
		return nil
	}
	for i := range s {
		if len(s[i].GPUs) == 0 {
			s[i].GPUs = nil
		}
		s[i].Switches = normPCIe(s[i].Switches)
	}
	return s
}
