package nvml

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/topology"
)

// LinkBandwidth returns the indicative bandwidth of one NVLink in GB/s, one
// direction, for a GPU of the given compute capability major version
// (Pascal 6: NVLink 1, 20 GB/s; Volta 7, Ampere 8 and Hopper 9: NVLink 2-4,
// 25 GB/s; Blackwell 10: NVLink 5, 50 GB/s). When the architecture is
// unknown the NVLink version NVML reports is used the same way; 0 means
// unknown, and the spec then falls back to its default per fabric kind.
//
// The architecture comes first because drivers disagree on what
// nvmlDeviceGetNvLinkVersion returns: the generation (4 on Hopper) or the
// newer NVML_NVLINK_VERSION_* enumeration (6 on Hopper).
func LinkBandwidth(ccMajor, version int) float64 {
	switch ccMajor {
	case 6:
		return 20
	case 7, 8, 9:
		return 25
	case 10:
		return 50
	}
	switch version {
	case 1:
		return 20
	case 2, 3, 4:
		return 25
	case 5:
		return 50
	}
	return 0
}

// ccMajor parses the major version of a compute capability ("9.0" → 9),
// 0 when unknown.
func ccMajor(cc string) int {
	major, _, _ := strings.Cut(cc, ".")
	n := 0
	for _, c := range major {
		if c < '0' || c > '9' || n > 1000 {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

type cliqueKey struct {
	uuid   string
	clique uint32
}

// BuildFabrics derives a host's NVLink domains from its GPUs' links and
// fabric information:
//
//   - A GPU whose fabric registration is reported but not completed
//     successfully cannot use NVLink yet; it joins no domain.
//   - A GPU with NVLinks that are all down joins no domain.
//   - When every GPU is a registered member of one multi-node NVLink
//     domain (same cluster UUID and clique), the host belongs to it
//     (membership); its GPUs get no host-local domain.
//   - Otherwise the GPUs whose active links reach NVSwitches form one
//     NVSwitch domain per clique (or one for GPUs not in a clique).
//   - The remaining GPUs joined by direct GPU-GPU links form one domain
//     per connected group: nvlink-bridge for a pair, nvlink for more.
//
// Bandwidths are per GPU, one direction: the largest over the members of
// active links × LinkBandwidth. Degraded GPUs (fewer active links than
// their peers) stay in their domain and get a warning.
func BuildFabrics(gpus []GPU) ([]topology.HostFabricSpec, *FabricMembership, []Warning) {
	n := len(gpus)
	var ws []Warning
	warn := func(g int, ft Feature, format string, args ...any) {
		ws = append(ws, Warning{GPU: g, Feature: ft, Msg: fmt.Sprintf(format, args...)})
	}
	perGPU := func(g int, remote RemoteKind) float64 {
		k, version := 0, 0
		for _, l := range gpus[g].NVLinks {
			if l.Active && l.Remote == remote {
				k++
				version = max(version, l.Version)
			}
		}
		return float64(k) * LinkBandwidth(ccMajor(gpus[g].ComputeCapability), version)
	}
	usable := make([]bool, n)
	maxActive := 0
	for g := range gpus {
		maxActive = max(maxActive, gpus[g].ActiveLinks())
	}
	for g := range gpus {
		usable[g] = true
		if f := gpus[g].Fabric; f != nil && f.State != FabricNotSupported {
			switch {
			case f.State != FabricCompleted:
				warn(g, FeatureFabric, "fabric registration %v; its NVLinks carry no traffic until the fabric manager finishes, so it joins no NVLink domain", f.State)
				usable[g] = false
			case !f.OK:
				warn(g, FeatureFabric, "fabric registration completed with an error status; it joins no NVLink domain")
				usable[g] = false
			}
		}
		present, active := len(gpus[g].NVLinks), gpus[g].ActiveLinks()
		switch {
		case present == 1 && active == 0:
			warn(g, FeatureNVLink, "its only NVLink is down; left out of the NVLink domain")
		case present > 0 && active == 0:
			warn(g, FeatureNVLink, "all %d NVLinks are down; left out of the NVLink domain", present)
			usable[g] = false
		case active > 0 && active < maxActive:
			warn(g, FeatureNVLink, "only %d of its NVLinks are active (peers have %d); kept in its domain at reduced bandwidth", active, maxActive)
		}
		for _, l := range gpus[g].NVLinks {
			if l.Active && l.Remote == RemoteGPU && l.RemoteGPU < 0 {
				warn(g, FeatureNVLink, "link %d reaches a GPU at %q that is not among this host's GPUs; ignored", l.Link, l.RemoteBusID)
			}
		}
	}
	key := func(g int) cliqueKey {
		if f := gpus[g].Fabric; f.MultiNode() {
			return cliqueKey{f.ClusterUUID, f.CliqueID}
		}
		return cliqueKey{}
	}

	// Multi-node membership: every GPU registered in one clique.
	if n > 0 {
		k0 := key(0)
		all := k0 != cliqueKey{}
		for g := 0; g < n && all; g++ {
			all = usable[g] && key(g) == k0
		}
		if all {
			m := &FabricMembership{ClusterUUID: k0.uuid, CliqueID: k0.clique}
			for g := range gpus {
				m.BandwidthGBps = max(m.BandwidthGBps, perGPU(g, RemoteSwitch))
			}
			return nil, m, ws
		}
		var members []string
		for g := range gpus {
			if k := key(g); k != (cliqueKey{}) {
				members = append(members, fmt.Sprintf("GPU %d in (%s, %d)", g, k.uuid, k.clique))
			}
		}
		if len(members) > 0 {
			warn(-1, FeatureFabric, "the host's GPUs are not all registered in one multi-node NVLink domain (%s); the host joins none, and GPUs of one clique form a host-local NVSwitch domain", strings.Join(members, ", "))
		}
	}

	var out []topology.HostFabricSpec
	inDomain := make([]bool, n)
	// NVSwitch domains, one per clique key, in order of their lowest GPU.
	var keys []cliqueKey
	groups := map[cliqueKey][]int{}
	for g := range gpus {
		if !usable[g] || !hasActive(gpus[g], RemoteSwitch) {
			continue
		}
		k := key(g)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], g)
	}
	for _, k := range keys {
		members := groups[k]
		if len(members) < 2 {
			warn(members[0], FeatureNVLink, "it is the only GPU whose NVLinks reach an NVSwitch; no NVSwitch domain")
			continue
		}
		f := topology.HostFabricSpec{Kind: topology.FabricNVSwitch, GPUs: members}
		for _, g := range members {
			f.BandwidthGBps = max(f.BandwidthGBps, perGPU(g, RemoteSwitch))
			inDomain[g] = true
		}
		out = append(out, f)
	}

	// Direct GPU-GPU links among the rest.
	eligible := func(g int) bool { return usable[g] && !inDomain[g] }
	linked := func(a, b int) bool {
		for _, l := range gpus[a].NVLinks {
			if l.Active && l.Remote == RemoteGPU && l.RemoteGPU == b {
				return true
			}
		}
		return false
	}
	var rest []int
	for g := range gpus {
		if eligible(g) {
			rest = append(rest, g)
		}
	}
	for _, c := range components(rest, func(a, b int) bool { return linked(a, b) || linked(b, a) }) {
		if len(c) < 2 {
			continue
		}
		kind := topology.FabricNVLink
		if len(c) == 2 {
			kind = topology.FabricNVLinkBridge
		}
		f := topology.HostFabricSpec{Kind: kind, GPUs: c}
		for _, g := range c {
			f.BandwidthGBps = max(f.BandwidthGBps, perGPU(g, RemoteGPU))
		}
		if len(c) > 2 {
		mesh:
			for i, a := range c {
				for _, b := range c[i+1:] {
					if !linked(a, b) && !linked(b, a) {
						warn(-1, FeatureNVLink, "GPUs %s form an NVLink group that is not fully connected (GPUs %d and %d have no direct link); modelled as one domain", intList(c), a, b)
						break mesh
					}
				}
			}
		}
		out = append(out, f)
	}
	slices.SortStableFunc(out, func(a, b topology.HostFabricSpec) int { return cmp.Compare(a.GPUs[0], b.GPUs[0]) })
	return out, nil, ws
}

func hasActive(g GPU, remote RemoteKind) bool {
	for _, l := range g.NVLinks {
		if l.Active && l.Remote == remote {
			return true
		}
	}
	return false
}

func intList(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}
