package nvml

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// gpuWith returns a GPU with the given links: each entry is the peer GPU
// index, -1 for an NVSwitch, -2 for a link that is down.
func gpuWith(idx int, cc string, version int, peers ...int) GPU {
	g := GPU{Index: idx, ComputeCapability: cc, NUMANode: -1, PCIeSwitches: -1}
	for l, p := range peers {
		link := NVLink{Link: l, RemoteGPU: -1}
		switch {
		case p == -2:
		case p == -1:
			link.Active, link.Version, link.Remote = true, version, RemoteSwitch
		default:
			link.Active, link.Version, link.Remote, link.RemoteGPU = true, version, RemoteGPU, p
		}
		g.NVLinks = append(g.NVLinks, link)
	}
	return g
}

func msgs(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func TestBuildFabrics(t *testing.T) {
	for _, tc := range []struct {
		name string
		gpus []GPU
		want []topology.HostFabricSpec
		warn []string
	}{{
		// Two NVLink-bridged pairs on a PCIe box (A100 PCIe: 4 links per
		// bridge... here 3 links of NVLink 3 each way).
		name: "bridge pairs",
		gpus: []GPU{
			gpuWith(0, "8.0", 3, 1, 1, 1), gpuWith(1, "8.0", 3, 0, 0, 0),
			gpuWith(2, "8.0", 3, 3, 3, 3), gpuWith(3, "8.0", 3, 2, 2, 2),
			gpuWith(4, "8.0", 3),
		},
		want: []topology.HostFabricSpec{
			{Kind: topology.FabricNVLinkBridge, GPUs: []int{0, 1}, BandwidthGBps: 75},
			{Kind: topology.FabricNVLinkBridge, GPUs: []int{2, 3}, BandwidthGBps: 75},
		},
	}, {
		name: "full mesh of four (HGX A100 4-GPU)",
		gpus: []GPU{
			gpuWith(0, "8.0", 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
			gpuWith(1, "8.0", 3, 0, 0, 0, 0, 2, 2, 2, 2, 3, 3, 3, 3),
			gpuWith(2, "8.0", 3, 0, 0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3),
			gpuWith(3, "8.0", 3, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2),
		},
		want: []topology.HostFabricSpec{{Kind: topology.FabricNVLink, GPUs: []int{0, 1, 2, 3}, BandwidthGBps: 300}},
	}, {
		name: "ring is not a full mesh",
		gpus: []GPU{gpuWith(0, "7.0", 2, 1, 3), gpuWith(1, "7.0", 2, 0, 2), gpuWith(2, "7.0", 2, 1, 3), gpuWith(3, "7.0", 2, 2, 0)},
		want: []topology.HostFabricSpec{{Kind: topology.FabricNVLink, GPUs: []int{0, 1, 2, 3}, BandwidthGBps: 50}},
		warn: []string{"nvlink: GPUs 0,1,2,3 form an NVLink group that is not fully connected (GPUs 0 and 2 have no direct link); modelled as one domain"},
	}, {
		name: "degraded GPU stays, down GPU leaves",
		gpus: []GPU{
			gpuWith(0, "9.0", 4, -1, -1, -1, -1), gpuWith(1, "9.0", 4, -1, -1, -1, -2),
			gpuWith(2, "9.0", 4, -2, -2, -2, -2), gpuWith(3, "9.0", 4, -1, -1, -1, -1),
		},
		want: []topology.HostFabricSpec{{Kind: topology.FabricNVSwitch, GPUs: []int{0, 1, 3}, BandwidthGBps: 100}},
		warn: []string{
			"GPU 1: nvlink: only 3 of its NVLinks are active (peers have 4); kept in its domain at reduced bandwidth",
			"GPU 2: nvlink: all 4 NVLinks are down; left out of the NVLink domain",
		},
	}, {
		name: "one GPU on a switch is no domain",
		gpus: []GPU{gpuWith(0, "9.0", 4, -1), gpuWith(1, "9.0", 4, -2)},
		warn: []string{
			"GPU 1: nvlink: its only NVLink is down; left out of the NVLink domain",
			"GPU 0: nvlink: it is the only GPU whose NVLinks reach an NVSwitch; no NVSwitch domain",
		},
	}, {
		name: "peer outside the host",
		gpus: []GPU{{Index: 0, NVLinks: []NVLink{{Link: 0, Active: true, Remote: RemoteGPU, RemoteGPU: -1, RemoteBusID: "0000:99:00.0"}}}},
		warn: []string{`GPU 0: nvlink: link 0 reaches a GPU at "0000:99:00.0" that is not among this host's GPUs; ignored`},
	}, {
		name: "no NVLink at all",
		gpus: []GPU{gpuWith(0, "8.9", 0), gpuWith(1, "8.9", 0)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, member, ws := BuildFabrics(tc.gpus)
			if member != nil {
				t.Errorf("membership %+v", member)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if m := msgs(ws); !reflect.DeepEqual(m, tc.warn) {
				t.Errorf("warnings %q\nwant %q", m, tc.warn)
			}
		})
	}
}

func TestLinkBandwidth(t *testing.T) {
	for _, tc := range []struct {
		cc, version int
		want        float64
	}{
		{6, 0, 20}, {7, 2, 25}, {8, 3, 25}, {9, 4, 25}, {9, 6, 25}, {10, 5, 50}, {10, 7, 50},
		{0, 1, 20}, {0, 4, 25}, {0, 5, 50}, {0, 9, 0}, {12, 0, 0},
	} {
		if got := LinkBandwidth(tc.cc, tc.version); got != tc.want {
			t.Errorf("LinkBandwidth(%d, %d) = %v, want %v", tc.cc, tc.version, got, tc.want)
		}
	}
	for cc, want := range map[string]int{"9.0": 9, "10.0": 10, "": 0, "x.1": 0, "8": 8} {
		if got := ccMajor(cc); got != want {
			t.Errorf("ccMajor(%q) = %d, want %d", cc, got, want)
		}
	}
}
