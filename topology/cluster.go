package topology

import (
	"fmt"
	"strconv"
)

// HostID, GPUID and DomainID are dense indices into one Cluster: 0..n-1.
// They are only meaningful together with the Cluster that issued them.
type (
	// HostID identifies a host of a Cluster.
	HostID int32
	// GPUID identifies an accelerator of a Cluster.
	GPUID int32
	// DomainID identifies a domain (tree node or fabric domain) of a Cluster.
	DomainID int32
	// ModelID identifies an accelerator model of a Cluster; NoModel for
	// hosts without accelerators.
	ModelID int16
)

// None values for the ID types.
const (
	NoHost   HostID   = -1
	NoGPU    GPUID    = -1
	NoDomain DomainID = -1
	NoModel  ModelID  = -1
)

// DomainKind says what a domain is.
type DomainKind uint8

// Domain kinds, outermost first. The PCIe tree, NUMA nodes, hosts, the
// network levels and the cluster root form one tree; fabric domains lie
// across it.
const (
	KindCluster    DomainKind = iota // the root; one per cluster
	KindNetwork                      // a switch at a network level (spine, ToR…)
	KindHost                         // a host
	KindNUMA                         // a NUMA node of a host
	KindHostBridge                   // a PCIe host bridge (root complex)
	KindPCIeSwitch                   // a PCIe switch
	KindFabric                       // an accelerator fabric domain (NVSwitch island, NVL72 rack, HCCS group…)
)

var kindNames = [...]string{"cluster", "network", "host", "numa", "hostbridge", "pcieswitch", "fabric"}

// String returns the lower-case name of the kind.
func (k DomainKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "DomainKind(" + strconv.Itoa(int(k)) + ")"
}

// Level is a placement level of a Cluster, innermost first: LevelFabric,
// LevelHost, then the network levels from the innermost (e.g. ToR) out, then
// the cluster root (Cluster.LevelCluster). Constraints such as "all tasks in
// one ToR" name a Level; resolve names with Cluster.LevelByName.
type Level int8

// The fixed levels. Network levels and the cluster level follow and depend
// on the Cluster.
const (
	LevelFabric Level = 0 // one accelerator fabric domain (NVLink/NVSwitch/HCCS)
	LevelHost   Level = 1 // one host
)

// Accelerator describes one accelerator model of a Cluster.
type Accelerator struct {
	Model             string
	Vendor            string
	MemoryMiB         int64
	ComputeCapability string
	// MIGSlots is the number of MIG placement slots per GPU; 0 means the
	// model has no MIG support.
	MIGSlots int
	// MIGProfiles are the profiles, in file order; MIGProfileID indexes it.
	MIGProfiles []MIGProfile
}

// MIGProfileID indexes Accelerator.MIGProfiles.
type MIGProfileID int8

// MIGProfile is a GPU-instance profile and its legal placements.
type MIGProfile struct {
	Name          string
	Size          int
	Starts        []int
	MemoryMiB     int64
	ComputeSlices int
	// Milli is the share of the GPU the profile takes, Size*1000/slots,
	// used when MIG instances are counted against GPU capacity.
	Milli int32
	// Exclusive names the one-per-GPU resource the profile's instances
	// hold alone (MIGProfileSpec.Exclusive), "" for none.
	Exclusive string
	// exclusive is Exclusive's bit in a GPU's slot mask (above the
	// model's slots), 0 for none.
	exclusive uint16
}

// Mask returns the bits of a GPU's MIG slot mask (GPUStatus.MIGSlots) an
// instance of p at start holds: its Size slots from start, and the bit of
// its Exclusive resource above the model's slots, if it names one. Two
// instances can run on one GPU together exactly when their masks are
// disjoint.
func (p *MIGProfile) Mask(start int) uint16 {
	return uint16((1<<p.Size-1)<<start) | p.exclusive
}

// MIGProfileByName returns the profile with the given name.
func (a *Accelerator) MIGProfileByName(name string) (MIGProfileID, bool) {
	for i := range a.MIGProfiles {
		if a.MIGProfiles[i].Name == name {
			return MIGProfileID(i), true
		}
	}
	return -1, false
}

// Cluster is the immutable topology of a GPU cluster: its hosts, GPUs, the
// tree of domains from the cluster root down through network levels, hosts,
// NUMA nodes and PCIe bridges and switches to GPUs, and the accelerator
// fabric domains across that tree.
//
// Hosts are numbered in the depth-first order of the network tree (children
// in declaration order), and GPUs host by host, so the hosts and GPUs under
// any network domain or host are contiguous ID ranges.
//
// A Cluster is safe for concurrent use by many goroutines: nothing in it
// changes after Build. Slices it returns are shared and must not be modified.
type Cluster struct {
	name    string
	spec    Spec
	netLvls []LevelSpec // outermost first

	models    []Accelerator
	templates []compiledTemplate

	domains  []domain
	children []DomainID // backing store of domain.children
	members  []GPUID    // backing store of domain.gpus (identity range first)

	hosts []host
	gpus  []gpu
	anc   []DomainID // backing store of GPU ancestors, innermost first

	// levelDomains[l] lists the domains at Level l, in ID order.
	levelDomains [][]DomainID

	hostByName   map[string]HostID
	domainByName map[string]DomainID

	// Live changes (live.go). net holds the lists of the cluster, network
	// and multi-host fabric domains, which hosts joining or leaving change:
	// each version has its own net slice, whose lists it never modifies.
	// removed marks hosts taken out by a live change (nil when none); names
	// layers the names added and removed live over the two maps above; arena
	// says which version may append in place to the shared backing arrays.
	net      []netDom
	removed  []bool
	nRemoved int
	seq      []HostID // 0, 1, 2, …: the backing store of host domains' host lists
	names    *nameLayer
	arena    *arena
	ver      uint64 // this version's number in its arena; 0 for Build's
	prevVer  uint64 // the version Apply made this one from
}

type domain struct {
	kind   DomainKind
	level  Level // placement level for cluster/network/host/fabric; -1 inside hosts
	depth  int8  // PCIe switch depth below its host bridge (1 = directly under it)
	name   string
	parent DomainID
	host   HostID // the host for host and intra-host domains, else NoHost

	childLo, childHi int32 // into Cluster.children
	gpuLo, gpuHi     int32 // into Cluster.members
	hostLo, hostHi   HostID
	leafLo, leafHi   int32 // cluster/network: positions in the innermost network level's domain list
	net              int32 // cluster, network and multi-host fabric domains: index into Cluster.net; else -1

	// fabric only
	fabricKind  string
	bandwidth   float64
	clusterUUID string
	cliqueID    uint32
}

type host struct {
	name     string
	domain   DomainID
	parent   DomainID // innermost network domain, or the root
	gpuLo    GPUID
	nGPU     int32
	cpuMilli int64
	memMiB   int64
	model    ModelID
	template int32
}

type gpu struct {
	host   HostID
	index  int32
	ancLo  int32 // into Cluster.anc; ancestors innermost first, ending at the root
	ancN   int32
	numa   DomainID
	bridge DomainID
	fabric DomainID
	uuid   string
	busID  string
}

// Name returns the cluster name.
func (c *Cluster) Name() string { return c.name }

// NumHosts returns the number of hosts.
func (c *Cluster) NumHosts() int { return len(c.hosts) }

// NumGPUs returns the number of accelerators.
func (c *Cluster) NumGPUs() int { return len(c.gpus) }

// NumDomains returns the number of domains of every kind.
func (c *Cluster) NumDomains() int { return len(c.domains) }

// Root returns the cluster root domain (always 0).
func (c *Cluster) Root() DomainID { return 0 }

// Models returns the accelerator models, indexed by ModelID.
func (c *Cluster) Models() []Accelerator { return c.models }

// Model returns the accelerator model m. It panics if m is out of range.
func (c *Cluster) Model(m ModelID) *Accelerator { return &c.models[m] }

// ModelByName returns the model with the given name.
func (c *Cluster) ModelByName(name string) (ModelID, bool) {
	for i := range c.models {
		if c.models[i].Model == name {
			return ModelID(i), true
		}
	}
	return NoModel, false
}

// NumLevels returns the number of placement levels (fabric, host, the
// network levels, cluster).
func (c *Cluster) NumLevels() int { return len(c.netLvls) + 3 }

// LevelCluster returns the outermost level, the whole cluster.
func (c *Cluster) LevelCluster() Level { return Level(len(c.netLvls) + 2) }

// LevelName returns the canonical name of a level: "nvlink", "host", the
// network level's own name, or "cluster".
func (c *Cluster) LevelName(l Level) string {
	switch {
	case l == LevelFabric:
		return "nvlink"
	case l == LevelHost:
		return "host"
	case l == c.LevelCluster():
		return "cluster"
	case l > LevelHost && l < c.LevelCluster():
		return c.netLvls[c.netIndex(l)].Name
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// LevelByName resolves a level name. Besides the network levels' own names
// it accepts "nvlink" and "fabric" (LevelFabric), "host" and "node"
// (LevelHost), and "cluster".
func (c *Cluster) LevelByName(name string) (Level, bool) {
	switch name {
	case "nvlink", "fabric":
		return LevelFabric, true
	case "host", "node":
		return LevelHost, true
	case "cluster":
		return c.LevelCluster(), true
	}
	for i := range c.netLvls {
		if c.netLvls[i].Name == name {
			return c.netLevel(i), true
		}
	}
	return -1, false
}

// netLevel maps a network level index (outermost 0) to a Level.
func (c *Cluster) netLevel(i int) Level { return Level(2 + len(c.netLvls) - 1 - i) }

// netIndex maps a network Level to its index in netLvls (outermost 0).
func (c *Cluster) netIndex(l Level) int { return len(c.netLvls) - 1 - int(l-2) }

// DomainsAt returns the domains at level l in ID order. For LevelFabric
// these are the fabric domains; for LevelHost the host domains.
func (c *Cluster) DomainsAt(l Level) []DomainID {
	if l < 0 || int(l) >= len(c.levelDomains) {
		return nil
	}
	return c.levelDomains[l]
}

// HostInfo is a read-only summary of one host.
type HostInfo struct {
	ID        HostID
	Name      string
	Domain    DomainID // the host's own domain
	Parent    DomainID // its innermost network domain, or the root
	FirstGPU  GPUID    // the host's GPUs are FirstGPU .. FirstGPU+NumGPUs-1
	NumGPUs   int
	CPUMilli  int64
	MemoryMiB int64
	Model     ModelID // NoModel for hosts without accelerators
	Template  string
	// Removed is set for a host taken out by a live change (Apply).
	Removed bool
}

// Host returns a summary of host h. It panics if h is out of range.
func (c *Cluster) Host(h HostID) HostInfo {
	x := &c.hosts[h]
	return HostInfo{
		ID: h, Name: x.name, Domain: x.domain, Parent: x.parent,
		FirstGPU: x.gpuLo, NumGPUs: int(x.nGPU), CPUMilli: x.cpuMilli,
		MemoryMiB: x.memMiB, Model: x.model, Template: c.templates[x.template].name,
		Removed: c.Removed(h),
	}
}

// HostName returns the name of host h.
func (c *Cluster) HostName(h HostID) string { return c.hosts[h].name }

// HostGPUs returns the first GPU of host h and how many it has.
func (c *Cluster) HostGPUs(h HostID) (first GPUID, n int) {
	return c.hosts[h].gpuLo, int(c.hosts[h].nGPU)
}

// HostModel returns the accelerator model of host h (NoModel if none).
func (c *Cluster) HostModel(h HostID) ModelID { return c.hosts[h].model }

// HostDomain returns the domain of host h.
func (c *Cluster) HostDomain(h HostID) DomainID { return c.hosts[h].domain }

// HostByName finds a host by name.
func (c *Cluster) HostByName(name string) (HostID, bool) {
	return c.lookupHost(name)
}

// HostAt returns the domain that contains host h at level l (l ≥ LevelHost);
// NoDomain for LevelFabric or an unknown level. O(1).
func (c *Cluster) HostAt(h HostID, l Level) DomainID {
	if l < LevelHost || l > c.LevelCluster() {
		return NoDomain
	}
	x := &c.hosts[h]
	if x.nGPU > 0 {
		return c.GPUAt(x.gpuLo, l)
	}
	// A host without GPUs: walk up.
	d := x.domain
	for lv := LevelHost; lv < l; lv++ {
		d = c.domains[d].parent
	}
	return d
}

// GPUInfo is a read-only summary of one GPU.
type GPUInfo struct {
	ID     GPUID
	Host   HostID
	Index  int      // index within its host
	NUMA   DomainID // its NUMA node
	Fabric DomainID // its fabric domain, or NoDomain
	Model  ModelID
	UUID   string // may be empty
	BusID  string // may be empty
}

// GPU returns a summary of GPU g. It panics if g is out of range.
func (c *Cluster) GPU(g GPUID) GPUInfo {
	x := &c.gpus[g]
	return GPUInfo{
		ID: g, Host: x.host, Index: int(x.index), NUMA: x.numa,
		Fabric: x.fabric, Model: c.hosts[x.host].model, UUID: x.uuid, BusID: x.busID,
	}
}

// GPUHost returns the host of GPU g.
func (c *Cluster) GPUHost(g GPUID) HostID { return c.gpus[g].host }

// GPUFabric returns the fabric domain of g, or NoDomain.
func (c *Cluster) GPUFabric(g GPUID) DomainID { return c.gpus[g].fabric }

// GPUName returns "HOST/gpuN".
func (c *Cluster) GPUName(g GPUID) string {
	x := &c.gpus[g]
	return c.hosts[x.host].name + "/gpu" + strconv.Itoa(int(x.index))
}

// Ancestors returns the tree domains above GPU g, innermost first: its PCIe
// switches, host bridge, NUMA node, host, network domains and the root.
// Fabric domains are not included (see GPUFabric). The slice is shared.
func (c *Cluster) Ancestors(g GPUID) []DomainID {
	x := &c.gpus[g]
	return c.anc[x.ancLo : x.ancLo+x.ancN]
}

// GPUAt returns the domain containing GPU g at level l, or NoDomain (a GPU
// outside any fabric domain at LevelFabric, or an unknown level). O(1).
func (c *Cluster) GPUAt(g GPUID, l Level) DomainID {
	x := &c.gpus[g]
	switch {
	case l == LevelFabric:
		return x.fabric
	case l < 0 || l > c.LevelCluster():
		return NoDomain
	}
	// The last len(netLvls)+2 ancestors are host, networks (innermost
	// first) and root: exactly the levels LevelHost..LevelCluster.
	top := x.ancLo + x.ancN
	return c.anc[top-int32(c.LevelCluster())-1+int32(l)]
}

// DomainInfo is a read-only summary of one domain.
type DomainInfo struct {
	ID     DomainID
	Kind   DomainKind
	Name   string
	Level  Level    // placement level; -1 for NUMA, host bridge and PCIe switch domains
	Parent DomainID // NoDomain for the root and fabric domains
	Host   HostID   // the host of host and intra-host domains, else NoHost
	// FirstHost and EndHost bound the hosts of cluster, network and host
	// domains: FirstHost <= h < EndHost. Both zero for other kinds.
	FirstHost, EndHost HostID
	// Fabric only.
	FabricKind    string
	BandwidthGBps float64
	ClusterUUID   string
	CliqueID      uint32
}

// Domain returns a summary of domain d. It panics if d is out of range.
func (c *Cluster) Domain(d DomainID) DomainInfo {
	x := &c.domains[d]
	info := DomainInfo{
		ID: d, Kind: x.kind, Name: x.name, Level: x.level, Parent: x.parent,
		Host: x.host, FabricKind: x.fabricKind, BandwidthGBps: x.bandwidth,
		ClusterUUID: x.clusterUUID, CliqueID: x.cliqueID,
	}
	if x.kind == KindCluster || x.kind == KindNetwork || x.kind == KindHost {
		info.FirstHost, info.EndHost = c.DomainHosts(d)
	}
	return info
}

// DomainKindOf returns the kind of domain d.
func (c *Cluster) DomainKindOf(d DomainID) DomainKind { return c.domains[d].kind }

// DomainName returns the name of domain d. Intra-host domains are named
// "HOST/numa0", "HOST/numa0/pci1", "HOST/numa0/pci1/sw0" and so on.
func (c *Cluster) DomainName(d DomainID) string { return c.domains[d].name }

// DomainParent returns the parent of d, or NoDomain for the root and fabric
// domains.
func (c *Cluster) DomainParent(d DomainID) DomainID { return c.domains[d].parent }

// DomainByName finds a domain (of any kind, fabric included) by name.
func (c *Cluster) DomainByName(name string) (DomainID, bool) {
	return c.lookupDomain(name)
}

// DomainGPUs returns the GPUs of domain d in ascending ID order. The slice
// is shared.
func (c *Cluster) DomainGPUs(d DomainID) []GPUID {
	x := &c.domains[d]
	if x.net >= 0 {
		return c.net[x.net].gpus
	}
	return c.members[x.gpuLo:x.gpuHi]
}

// DomainChildren returns the child domains of d in the tree (for a host:
// its NUMA nodes; for a NUMA node: its host bridges; for a bridge or switch:
// its switches). Fabric domains have none. The slice is shared.
func (c *Cluster) DomainChildren(d DomainID) []DomainID {
	x := &c.domains[d]
	if x.net >= 0 {
		return c.net[x.net].children
	}
	return c.children[x.childLo:x.childHi]
}

// DomainHosts returns the host range of a cluster, network or host domain:
// hosts first <= h < end. For other kinds it returns (0, 0).
//
// Built from a Spec without live changes, every domain's hosts are exactly
// that range. Hosts added by Apply take the next free IDs, so the range of
// a domain they join also spans hosts of other domains (and removed hosts
// leave holes): it only bounds the domain's hosts then. Visit the hosts of
// a domain with DomainHostList, which is exact in every case.
func (c *Cluster) DomainHosts(d DomainID) (first, end HostID) {
	x := &c.domains[d]
	if x.net >= 0 {
		return c.net[x.net].hostLo, c.net[x.net].hostHi
	}
	return x.hostLo, x.hostHi
}

// DomainHostList returns the hosts of a cluster, network or host domain in
// ascending ID order, without removed hosts; nil for other kinds. The slice
// is shared. O(1).
func (c *Cluster) DomainHostList(d DomainID) []HostID {
	x := &c.domains[d]
	switch {
	case x.net >= 0:
		return c.net[x.net].hosts
	case x.kind == KindHost && !c.Removed(x.host):
		return c.seq[x.host : x.host+1]
	}
	return nil
}

// DomainLeaves returns the domains of the innermost network level under a
// cluster or network domain (d itself when it is one), in ascending ID
// order; nil for other kinds and for clusters without network levels. The
// slice is shared. O(1).
func (c *Cluster) DomainLeaves(d DomainID) []DomainID {
	if x := &c.domains[d]; x.net >= 0 && x.kind != KindFabric {
		return c.net[x.net].leaves
	}
	return nil
}

// Spec returns a copy of the normalised spec the cluster was built from,
// with the live changes applied since in Spec.Live. Building it again
// yields an identical cluster, IDs included.
func (c *Cluster) Spec() Spec { return cloneSpec(c.spec) }

// Templates returns the names of the host templates, in spec order.
func (c *Cluster) Templates() []string {
	out := make([]string, len(c.templates))
	for i := range c.templates {
		out[i] = c.templates[i].name
	}
	return out
}

// CPUMilli returns the CPU capacity of host h in milli-cores.
func (c *Cluster) CPUMilli(h HostID) int64 { return c.hosts[h].cpuMilli }

// MemoryMiB returns the memory capacity of host h in MiB.
func (c *Cluster) MemoryMiB(h HostID) int64 { return c.hosts[h].memMiB }

// String returns a one-line summary.
func (c *Cluster) String() string {
	if c.nRemoved > 0 {
		return fmt.Sprintf("cluster %s: %d hosts (%d removed), %d GPUs, %d domains", c.name, len(c.hosts), c.nRemoved, len(c.gpus), len(c.domains))
	}
	return fmt.Sprintf("cluster %s: %d hosts, %d GPUs, %d domains", c.name, len(c.hosts), len(c.gpus), len(c.domains))
}
