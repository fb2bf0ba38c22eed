package topology

import "strconv"

// LinkKind classifies the path between two GPUs, nearest first. Inside a
// host the PCIe kinds match nvidia-smi topo -m: PIX (at most one PCIe
// switch), PXB (several switches, no host bridge), PHB (through a host
// bridge), NODE (between host bridges of one NUMA node), SYS (across NUMA
// nodes). Between hosts the path is named by the innermost network level
// the two share.
type LinkKind uint8

// Link kinds, nearest first.
const (
	LinkSelf    LinkKind = iota // the same GPU
	LinkFabric                  // same accelerator fabric domain (NVLink/NVSwitch/HCCS, in or across hosts)
	LinkPIX                     // same host, at most one PCIe switch between
	LinkPXB                     // same host, several PCIe switches, no host bridge
	LinkPHB                     // same host, through a PCIe host bridge
	LinkNODE                    // same host and NUMA node, between host bridges
	LinkSYS                     // same host, across NUMA nodes
	LinkNetwork                 // different hosts; Link.Level says the innermost shared level
)

var linkNames = [...]string{"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "NET"}

// String returns the nvidia-smi style abbreviation.
func (k LinkKind) String() string {
	if int(k) < len(linkNames) {
		return linkNames[k]
	}
	return "LinkKind(" + strconv.Itoa(int(k)) + ")"
}

// Link is the relation between two GPUs.
type Link struct {
	Kind LinkKind
	// Level is the innermost placement level the two GPUs share:
	// LevelFabric for LinkFabric, LevelHost for the PCIe kinds, a network
	// level or the cluster level for LinkNetwork.
	Level Level
	// BandwidthGBps is an indicative per-GPU bandwidth of the path, from
	// the cluster spec where it says, else from the package defaults.
	BandwidthGBps float64
}

// Default indicative bandwidths in GB/s, one direction, per GPU. They only
// rank paths; real numbers depend on generation and configuration.
var (
	// DefaultFabricBandwidth is used for fabric domains whose spec gives
	// none, by fabric kind; unknown kinds get DefaultFabricBandwidth[""].
	DefaultFabricBandwidth = map[string]float64{
		FabricNVSwitch:     450,
		FabricMNNVL:        900,
		FabricNVLink:       150,
		FabricNVLinkBridge: 56,
		FabricHCCS:         56,
		"":                 100,
	}
	// DefaultPCIeBandwidth is indexed by LinkKind (PIX..SYS).
	DefaultPCIeBandwidth = [...]float64{LinkPIX: 26, LinkPXB: 24, LinkPHB: 20, LinkNODE: 16, LinkSYS: 10}
	// DefaultNetworkBandwidth is the bandwidth of the innermost network
	// level; each level further out gets half of the one inside it, and
	// paths that share only the cluster get half of the outermost. It is
	// below DefaultPCIeBandwidth[LinkSYS], so that the defaults rank paths
	// in LinkKind order; a spec gives real figures per level
	// (LevelSpec.BandwidthGBps).
	DefaultNetworkBandwidth = 8.0
)

// Link returns how GPUs a and b are connected. O(depth of the PCIe tree +
// number of network levels); it does not allocate.
func (c *Cluster) Link(a, b GPUID) Link {
	if a == b {
		return Link{Kind: LinkSelf, Level: LevelFabric, BandwidthGBps: 0}
	}
	ga, gb := &c.gpus[a], &c.gpus[b]
	if ga.fabric >= 0 && ga.fabric == gb.fabric {
		return Link{Kind: LinkFabric, Level: LevelFabric, BandwidthGBps: c.domains[ga.fabric].bandwidth}
	}
	if ga.host != gb.host {
		for l := LevelHost + 1; l <= c.LevelCluster(); l++ {
			if c.GPUAt(a, l) == c.GPUAt(b, l) {
				return Link{Kind: LinkNetwork, Level: l, BandwidthGBps: c.levelBandwidth(l)}
			}
		}
		// Unreachable: every GPU shares the root.
		return Link{Kind: LinkNetwork, Level: c.LevelCluster(), BandwidthGBps: c.levelBandwidth(c.LevelCluster())}
	}
	k := c.pcieKind(a, b)
	return Link{Kind: k, Level: LevelHost, BandwidthGBps: DefaultPCIeBandwidth[k]}
}

// pcieKind classifies two distinct GPUs of one host by their PCIe/NUMA path.
func (c *Cluster) pcieKind(a, b GPUID) LinkKind {
	ga, gb := &c.gpus[a], &c.gpus[b]
	if ga.numa != gb.numa {
		return LinkSYS
	}
	if ga.bridge != gb.bridge {
		return LinkNODE
	}
	// Same host bridge. The switches of each GPU are the ancestors before
	// the bridge, innermost first.
	sa := c.switchesOf(a)
	sb := c.switchesOf(b)
	if len(sa) == 0 || len(sb) == 0 {
		return LinkPHB
	}
	if sa[0] == sb[0] {
		return LinkPIX
	}
	for _, x := range sa {
		for _, y := range sb {
			if x == y {
				return LinkPXB
			}
		}
	}
	return LinkPHB
}

func (c *Cluster) switchesOf(g GPUID) []DomainID {
	anc := c.Ancestors(g)
	n := 0
	for n < len(anc) && c.domains[anc[n]].kind == KindPCIeSwitch {
		n++
	}
	return anc[:n]
}

// levelBandwidth returns the indicative bandwidth for GPUs whose innermost
// shared level is the network or cluster level l.
func (c *Cluster) levelBandwidth(l Level) float64 {
	if l > LevelHost && l < c.LevelCluster() {
		if bw := c.netLvls[c.netIndex(l)].BandwidthGBps; bw > 0 {
			return bw
		}
	}
	bw := DefaultNetworkBandwidth
	for x := LevelHost + 1; x < l; x++ {
		if x < c.LevelCluster() {
			if s := c.netLvls[c.netIndex(x)].BandwidthGBps; s > 0 {
				bw = s
			}
		}
		bw /= 2
	}
	return bw
}
