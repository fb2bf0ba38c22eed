package topology

import (
	"cmp"
	"math"
	"slices"
)

// This file holds the serialisable shape of a cluster: what a cluster file
// (YAML or JSON, version 1) says, what presets and the generator produce, and
// what NVML discovery writes. Build turns a Spec into an immutable Cluster.
//
// Field paths used in errors follow the YAML/JSON keys, e.g.
// "templates[2].numa[0].pcie[1].switches[0].gpus[3]".

// SpecVersion is the only cluster-file version this package reads and writes.
const SpecVersion = 1

// Spec is a whole cluster as written in a cluster file.
//
// A Spec is plain data: it may be built in code, decoded from a file with
// LoadFile/Decode, and turned into a Cluster with Build. Build does not keep
// the caller's Spec; it keeps a normalised copy (see Cluster.Spec).
type Spec struct {
	// Version must be SpecVersion.
	Version int `yaml:"version" json:"version"`
	// Name names the cluster; it becomes the name of the root domain.
	Name string `yaml:"name" json:"name"`
	// Levels are the network levels above hosts, outermost first
	// (e.g. spine, then tor). Empty for a single box or a flat cluster.
	Levels []LevelSpec `yaml:"levels,omitempty" json:"levels,omitempty"`
	// Accelerators describes each GPU model used by a template.
	Accelerators []AcceleratorSpec `yaml:"accelerators,omitempty" json:"accelerators,omitempty"`
	// Templates are host shapes that host groups refer to by name.
	Templates []HostTemplate `yaml:"templates" json:"templates"`
	// Switches are the network switches (domains of the network levels).
	Switches []SwitchGroup `yaml:"switches,omitempty" json:"switches,omitempty"`
	// Hosts are the hosts, in groups that share a template.
	Hosts []HostGroup `yaml:"hosts" json:"hosts"`
	// Fabrics are accelerator fabric domains that span hosts, such as the
	// multi-node NVLink domain of a GB200 NVL72 rack.
	Fabrics []FabricGroup `yaml:"fabrics,omitempty" json:"fabrics,omitempty"`
	// Live are the live changes applied to the cluster the fields above
	// describe, in order (see Cluster.Apply). Build applies them after
	// building the rest, so the cluster it returns has the IDs the live
	// cluster has. Cluster files written by hand leave it empty.
	Live []Change `yaml:"live,omitempty" json:"live,omitempty"`
}

// Change is one live change of a cluster (Cluster.Apply): hosts removed,
// then host templates, switches, hosts and multi-host fabric domains added.
// A host that changes shape is removed and added again under its name, in
// one Change. Paths in errors are relative to the change ("hosts[0].name").
type Change struct {
	// Remove names hosts to take out. They keep their IDs, which no list
	// of the cluster returns any more (Cluster.Removed).
	Remove []string `yaml:"remove,omitempty" json:"remove,omitempty"`
	// Templates are new host templates (their accelerators must exist).
	Templates []HostTemplate `yaml:"templates,omitempty" json:"templates,omitempty"`
	// Switches are new network switches, under existing or new parents.
	Switches []SwitchGroup `yaml:"switches,omitempty" json:"switches,omitempty"`
	// Hosts are new hosts, under existing or new innermost switches.
	Hosts []HostGroup `yaml:"hosts,omitempty" json:"hosts,omitempty"`
	// Fabrics are new multi-host fabric domains over hosts this change
	// adds.
	Fabrics []FabricGroup `yaml:"fabrics,omitempty" json:"fabrics,omitempty"`
}

// LevelSpec names one network level.
type LevelSpec struct {
	// Name is the level's name, e.g. "spine" or "tor". It must not collide
	// with the built-in level names (nvlink, fabric, host, node, cluster).
	Name string `yaml:"name" json:"name"`
	// BandwidthGBps is the indicative per-GPU bandwidth, in GB/s, between two
	// GPUs whose nearest common domain is at this level. Zero means a
	// default (see DefaultNetworkBandwidth).
	BandwidthGBps float64 `yaml:"bandwidthGBps,omitempty" json:"bandwidthGBps,omitempty"`
}

// AcceleratorSpec describes one accelerator model. It is vendor-neutral.
type AcceleratorSpec struct {
	// Model is the unique model name, e.g. "H100-SXM5-80GB", "T4", "Ascend910B".
	Model string `yaml:"model" json:"model"`
	// Vendor is e.g. "nvidia" or "huawei".
	Vendor string `yaml:"vendor,omitempty" json:"vendor,omitempty"`
	// MemoryMiB is the device memory; zero means unknown.
	MemoryMiB int64 `yaml:"memoryMiB,omitempty" json:"memoryMiB,omitempty"`
	// ComputeCapability is e.g. "9.0" for NVIDIA; free text for others.
	ComputeCapability string `yaml:"computeCapability,omitempty" json:"computeCapability,omitempty"`
	// MIG, when set, lists the MIG profiles the model supports.
	MIG *MIGSpec `yaml:"mig,omitempty" json:"mig,omitempty"`
}

// MIGSpec describes how a GPU model can be partitioned.
//
// A GPU is divided into Slots memory slices (8 on A100/H100); a profile
// occupies Size consecutive slots starting at one of its legal Starts, as
// NVML's GetGpuInstancePossiblePlacements reports.
type MIGSpec struct {
	// Slots is the number of placement slots of one GPU (1..16).
	Slots int `yaml:"slots" json:"slots"`
	// Profiles are the GPU-instance profiles, e.g. 1g.10gb.
	Profiles []MIGProfileSpec `yaml:"profiles" json:"profiles"`
}

// MIGProfileSpec is one GPU-instance profile and its legal placements.
type MIGProfileSpec struct {
	// Name is the profile name, e.g. "3g.40gb".
	Name string `yaml:"name" json:"name"`
	// Size is the number of slots the profile occupies.
	Size int `yaml:"size" json:"size"`
	// Starts are the legal start slots.
	Starts []int `yaml:"starts" json:"starts"`
	// MemoryMiB is the instance memory, informational.
	MemoryMiB int64 `yaml:"memoryMiB,omitempty" json:"memoryMiB,omitempty"`
	// ComputeSlices is the number of compute slices, informational.
	ComputeSlices int `yaml:"computeSlices,omitempty" json:"computeSlices,omitempty"`
	// Exclusive, when set, names a resource of which a GPU has one and
	// which an instance of the profile holds alone: at most one instance
	// of the profiles naming it runs on a GPU at a time, whatever slots
	// are free. NVIDIA's media-extension profiles ("1g.18gb+me", one
	// instance per GPU, which takes the GPU's one optical-flow
	// accelerator) name MediaExtensions. Each name takes one bit of
	// the slot mask above Slots, so Slots plus the distinct names of a
	// model are at most 16.
	Exclusive string `yaml:"exclusive,omitempty" json:"exclusive,omitempty"`
}

// MediaExtensions is the Exclusive resource of NVIDIA's media-extension
// MIG profiles ("1g.18gb+me"): a GPU has one set of media extensions (its
// optical-flow accelerator among them), so one such instance runs on a GPU
// at a time, as NVML's instance count of 1 says.
const MediaExtensions = "media-extensions"

// HostTemplate is the shape of one kind of host.
type HostTemplate struct {
	// Name is how host groups refer to the template.
	Name string `yaml:"name" json:"name"`
	// CPUMilli is the host's allocatable CPU in milli-cores.
	CPUMilli int64 `yaml:"cpuMilli" json:"cpuMilli"`
	// MemoryMiB is the host's allocatable memory in MiB.
	MemoryMiB int64 `yaml:"memoryMiB" json:"memoryMiB"`
	// Accelerator names an entry of Spec.Accelerators; empty when GPUs is 0.
	Accelerator string `yaml:"accelerator,omitempty" json:"accelerator,omitempty"`
	// GPUs is the number of accelerators, indexed 0..GPUs-1 below.
	GPUs int `yaml:"gpus" json:"gpus"`
	// NUMA describes the NUMA nodes and the PCIe tree under each. When
	// empty, the host has one implicit NUMA node with one host bridge and
	// every GPU directly beneath it (so two GPUs are PHB apart).
	NUMA []NUMASpec `yaml:"numa,omitempty" json:"numa,omitempty"`
	// Fabrics are accelerator fabric domains inside the host: an NVSwitch
	// island, NVLink bridge pairs, Ascend HCCS groups.
	Fabrics []HostFabricSpec `yaml:"fabrics,omitempty" json:"fabrics,omitempty"`
}

// NUMASpec is one NUMA node of a host template.
type NUMASpec struct {
	// ID is the NUMA node number as the OS reports it.
	ID int `yaml:"id" json:"id"`
	// CPUs is the CPU list of the node in Linux cpulist form ("0-55,112-167");
	// informational.
	CPUs string `yaml:"cpus,omitempty" json:"cpus,omitempty"`
	// PCIe lists the PCIe host bridges (root complexes) of the node.
	PCIe []PCIeSpec `yaml:"pcie,omitempty" json:"pcie,omitempty"`
}

// PCIeSpec is a node of a host's PCIe tree: a host bridge at the top level of
// NUMASpec.PCIe, a PCIe switch below it.
type PCIeSpec struct {
	// GPUs are the GPU indices attached directly to this bridge or switch.
	GPUs []int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// Switches are the PCIe switches below this one.
	Switches []PCIeSpec `yaml:"switches,omitempty" json:"switches,omitempty"`
}

// Fabric kinds known to the package. Others are allowed and treated alike.
const (
	FabricNVSwitch     = "nvswitch"      // NVSwitch island inside a DGX/HGX host
	FabricNVLinkBridge = "nvlink-bridge" // NVLink bridge pairs on PCIe boxes
	FabricNVLink       = "nvlink"        // direct GPU-GPU NVLink mesh
	FabricMNNVL        = "mnnvl"         // multi-node NVLink (e.g. GB200 NVL72)
	FabricHCCS         = "hccs"          // Huawei Ascend HCCS group
)

// HostFabricSpec is an accelerator fabric domain inside one host.
type HostFabricSpec struct {
	// Kind is one of the Fabric* constants or a vendor's own name.
	Kind string `yaml:"kind" json:"kind"`
	// GPUs are the member GPU indices (at least one).
	GPUs []int `yaml:"gpus" json:"gpus"`
	// BandwidthGBps is the indicative per-GPU bandwidth inside the domain.
	BandwidthGBps float64 `yaml:"bandwidthGBps,omitempty" json:"bandwidthGBps,omitempty"`
}

// SwitchGroup declares network switches at one level.
type SwitchGroup struct {
	// Name is a name or a range pattern such as "tor[001-391]".
	Name string `yaml:"name" json:"name"`
	// Level names an entry of Spec.Levels.
	Level string `yaml:"level" json:"level"`
	// Parent is a name or pattern of switches at the level directly above;
	// empty only at the outermost level.
	Parent string `yaml:"parent,omitempty" json:"parent,omitempty"`
	// PerParent is how many of these switches go under each parent, in
	// order. Zero means all under one parent, or an equal split.
	PerParent int `yaml:"perParent,omitempty" json:"perParent,omitempty"`
}

// HostGroup declares hosts that share a template.
type HostGroup struct {
	// Name is a host name or a range pattern such as "dgx[00001-12500]".
	Name string `yaml:"name" json:"name"`
	// Template names an entry of Spec.Templates.
	Template string `yaml:"template" json:"template"`
	// Parent is a name or pattern of switches at the innermost network
	// level; empty when the cluster has no network levels.
	Parent string `yaml:"parent,omitempty" json:"parent,omitempty"`
	// PerParent is how many hosts go under each parent, in order. Zero means
	// all under one parent, or an equal split.
	PerParent int `yaml:"perParent,omitempty" json:"perParent,omitempty"`
	// GPUs optionally identifies the GPUs of a single host (as discovery
	// writes them). Only allowed when Name names one host.
	GPUs []GPUIdentity `yaml:"gpuIDs,omitempty" json:"gpuIDs,omitempty"`
}

// GPUIdentity identifies one physical GPU of a host.
type GPUIdentity struct {
	// Index is the GPU's index in its host template.
	Index int `yaml:"index" json:"index"`
	// UUID is the driver's UUID, e.g. "GPU-8f6c…".
	UUID string `yaml:"uuid,omitempty" json:"uuid,omitempty"`
	// BusID is the PCI bus ID in sysfs form, e.g. "0000:18:00.0".
	BusID string `yaml:"busID,omitempty" json:"busID,omitempty"`
}

// FabricGroup declares accelerator fabric domains that span hosts.
type FabricGroup struct {
	// Name is a domain name or a range pattern ("nvl72-[001-139]").
	Name string `yaml:"name" json:"name"`
	// Kind is one of the Fabric* constants, usually FabricMNNVL.
	Kind string `yaml:"kind" json:"kind"`
	// Hosts is a host name or pattern; all GPUs of those hosts join.
	Hosts string `yaml:"hosts" json:"hosts"`
	// PerDomain is how many hosts go into each domain, in order. Zero means
	// all hosts in one domain, or an equal split.
	PerDomain int `yaml:"perDomain,omitempty" json:"perDomain,omitempty"`
	// BandwidthGBps is the indicative per-GPU bandwidth inside a domain.
	BandwidthGBps float64 `yaml:"bandwidthGBps,omitempty" json:"bandwidthGBps,omitempty"`
	// ClusterUUID and CliqueID identify the NVLink domain as NVML's
	// GetGpuFabricInfo reports it; informational.
	ClusterUUID string `yaml:"clusterUUID,omitempty" json:"clusterUUID,omitempty"`
	// CliqueID is the fabric clique within ClusterUUID.
	CliqueID uint32 `yaml:"cliqueID,omitempty" json:"cliqueID,omitempty"`
}

// Canonical returns a copy of t in canonical order: NUMA nodes by ID, PCIe
// bridges and switches by their lowest GPU index, GPU lists ascending,
// fabric domains by their lowest GPU. Two templates that describe the same
// machine are equal once canonical; presets are canonical, and NVML
// discovery writes canonical templates.
func (t HostTemplate) Canonical() HostTemplate {
	c := cloneSpec(Spec{Templates: []HostTemplate{t}}).Templates[0]
	slices.SortStableFunc(c.NUMA, func(a, b NUMASpec) int { return cmp.Compare(a.ID, b.ID) })
	for i := range c.NUMA {
		canonPCIe(c.NUMA[i].PCIe)
	}
	for i := range c.Fabrics {
		slices.Sort(c.Fabrics[i].GPUs)
	}
	slices.SortStableFunc(c.Fabrics, func(a, b HostFabricSpec) int { return cmp.Compare(minOf(a.GPUs), minOf(b.GPUs)) })
	return c
}

func canonPCIe(s []PCIeSpec) {
	for i := range s {
		slices.Sort(s[i].GPUs)
		canonPCIe(s[i].Switches)
	}
	slices.SortStableFunc(s, func(a, b PCIeSpec) int { return cmp.Compare(pcieMin(a), pcieMin(b)) })
}

func pcieMin(p PCIeSpec) int {
	m := minOf(p.GPUs)
	for _, s := range p.Switches {
		m = min(m, pcieMin(s))
	}
	return m
}

func minOf(s []int) int {
	m := math.MaxInt
	for _, v := range s {
		m = min(m, v)
	}
	return m
}
