package topology

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// presetCluster builds a named preset or fails the test.
func presetCluster(t testing.TB, name string) *Cluster {
	t.Helper()
	c, err := LoadPreset(name)
	if err != nil {
		t.Fatalf("preset %s: %v", name, err)
	}
	return c
}

// linkMatrix renders the relation of the n GPUs from first on, one row per
// GPU, like nvidia-smi topo -m.
func linkMatrix(n int, first GPUID, kind func(a, b GPUID) LinkKind) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(kind(first+GPUID(i), first+GPUID(j)).String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// pcieKindOrSelf is the PCIe/NUMA relation regardless of fabrics.
func pcieKindOrSelf(c *Cluster) func(a, b GPUID) LinkKind {
	return func(a, b GPUID) LinkKind {
		if a == b {
			return LinkSelf
		}
		return c.pcieKind(a, b)
	}
}

func rows(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const allNV8 = "X NV NV NV NV NV NV NV\nNV X NV NV NV NV NV NV\nNV NV X NV NV NV NV NV\nNV NV NV X NV NV NV NV\n" +
	"NV NV NV NV X NV NV NV\nNV NV NV NV NV X NV NV\nNV NV NV NV NV NV X NV\nNV NV NV NV NV NV NV X\n"

// TestMachinePresets checks each single-host preset against the machine it
// describes: GPUs, NUMA placement, fabric domains, and the nvidia-smi
// topo -m matrix both as Link reports it (fabric first) and for the PCIe
// tree alone.
func TestMachinePresets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gpus    int
		numa    []string // NUMA node of each GPU
		fabrics [][]GPUID
		kind    string  // fabric kind
		bw      float64 // fabric bandwidth
		links   string  // Link kinds
		pcie    string  // PCIe kinds alone
	}{
		{
			// Two sockets, four GPUs each, each GPU behind its own PCIe
			// switch on its own root port; one NVSwitch domain of eight.
			name: "dgx-h100", gpus: 8,
			numa:    []string{"numa0", "numa0", "numa0", "numa0", "numa1", "numa1", "numa1", "numa1"},
			fabrics: [][]GPUID{{0, 1, 2, 3, 4, 5, 6, 7}}, kind: FabricNVSwitch, bw: 450,
			links: allNV8,
			pcie: rows(
				"X NODE NODE NODE SYS SYS SYS SYS",
				"NODE X NODE NODE SYS SYS SYS SYS",
				"NODE NODE X NODE SYS SYS SYS SYS",
				"NODE NODE NODE X SYS SYS SYS SYS",
				"SYS SYS SYS SYS X NODE NODE NODE",
				"SYS SYS SYS SYS NODE X NODE NODE",
				"SYS SYS SYS SYS NODE NODE X NODE",
				"SYS SYS SYS SYS NODE NODE NODE X"),
		},
		{name: "dgx-h200", gpus: 8,
			numa:    []string{"numa0", "numa0", "numa0", "numa0", "numa1", "numa1", "numa1", "numa1"},
			fabrics: [][]GPUID{{0, 1, 2, 3, 4, 5, 6, 7}}, kind: FabricNVSwitch, bw: 450, links: allNV8},
		{name: "dgx-b200", gpus: 8,
			numa:    []string{"numa0", "numa0", "numa0", "numa0", "numa1", "numa1", "numa1", "numa1"},
			fabrics: [][]GPUID{{0, 1, 2, 3, 4, 5, 6, 7}}, kind: FabricNVSwitch, bw: 900, links: allNV8},
		{
			// EPYC 7742 in NPS4: GPU pairs on NUMA nodes 3, 1, 7, 5, each
			// pair behind a two-level PCIe switch complex (PXB); six
			// NVSwitches join all eight.
			name: "dgx-a100", gpus: 8,
			numa:    []string{"numa3", "numa3", "numa1", "numa1", "numa7", "numa7", "numa5", "numa5"},
			fabrics: [][]GPUID{{0, 1, 2, 3, 4, 5, 6, 7}}, kind: FabricNVSwitch, bw: 300,
			links: allNV8,
			pcie: rows(
				"X PXB SYS SYS SYS SYS SYS SYS",
				"PXB X SYS SYS SYS SYS SYS SYS",
				"SYS SYS X PXB SYS SYS SYS SYS",
				"SYS SYS PXB X SYS SYS SYS SYS",
				"SYS SYS SYS SYS X PXB SYS SYS",
				"SYS SYS SYS SYS PXB X SYS SYS",
				"SYS SYS SYS SYS SYS SYS X PXB",
				"SYS SYS SYS SYS SYS SYS PXB X"),
		},
		{
			// Per socket one switch fanning out to two switches of two GPUs:
			// PIX within a leaf switch, PXB across leaves, SYS across
			// sockets; never NODE or PHB, and no NVLink.
			name: "pcie-8gpu", gpus: 8,
			numa: []string{"numa0", "numa0", "numa0", "numa0", "numa1", "numa1", "numa1", "numa1"},
			links: rows(
				"X PIX PXB PXB SYS SYS SYS SYS",
				"PIX X PXB PXB SYS SYS SYS SYS",
				"PXB PXB X PIX SYS SYS SYS SYS",
				"PXB PXB PIX X SYS SYS SYS SYS",
				"SYS SYS SYS SYS X PIX PXB PXB",
				"SYS SYS SYS SYS PIX X PXB PXB",
				"SYS SYS SYS SYS PXB PXB X PIX",
				"SYS SYS SYS SYS PXB PXB PIX X"),
		},
		{
			// Atlas 800: two NPUs per NUMA node on one root port; HCCS
			// full mesh inside 0-3 and 4-7, PCIe/SMP between the groups.
			name: "ascend-910", gpus: 8,
			numa:    []string{"numa0", "numa0", "numa1", "numa1", "numa2", "numa2", "numa3", "numa3"},
			fabrics: [][]GPUID{{0, 1, 2, 3}, {4, 5, 6, 7}}, kind: FabricHCCS, bw: 56,
			links: rows(
				"X NV NV NV SYS SYS SYS SYS",
				"NV X NV NV SYS SYS SYS SYS",
				"NV NV X NV SYS SYS SYS SYS",
				"NV NV NV X SYS SYS SYS SYS",
				"SYS SYS SYS SYS X NV NV NV",
				"SYS SYS SYS SYS NV X NV NV",
				"SYS SYS SYS SYS NV NV X NV",
				"SYS SYS SYS SYS NV NV NV X"),
			pcie: rows(
				"X PHB SYS SYS SYS SYS SYS SYS",
				"PHB X SYS SYS SYS SYS SYS SYS",
				"SYS SYS X PHB SYS SYS SYS SYS",
				"SYS SYS PHB X SYS SYS SYS SYS",
				"SYS SYS SYS SYS X PHB SYS SYS",
				"SYS SYS SYS SYS PHB X SYS SYS",
				"SYS SYS SYS SYS SYS SYS X PHB",
				"SYS SYS SYS SYS SYS SYS PHB X"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := presetCluster(t, tc.name)
			if c.NumHosts() != 1 || c.NumGPUs() != tc.gpus {
				t.Fatalf("%d hosts, %d GPUs; want 1, %d", c.NumHosts(), c.NumGPUs(), tc.gpus)
			}
			host := c.HostName(0)
			var numa []string
			for g := GPUID(0); int(g) < c.NumGPUs(); g++ {
				numa = append(numa, strings.TrimPrefix(c.DomainName(c.GPU(g).NUMA), host+"/"))
			}
			if !slices.Equal(numa, tc.numa) {
				t.Errorf("NUMA nodes %v, want %v", numa, tc.numa)
			}
			if nNUMA := len(slices.Compact(slices.Clone(tc.numa))); len(c.DomainChildren(c.HostDomain(0))) != nNUMA {
				t.Errorf("%d NUMA nodes, want %d", len(c.DomainChildren(c.HostDomain(0))), nNUMA)
			}
			var fabrics [][]GPUID
			for _, d := range c.DomainsAt(LevelFabric) {
				fabrics = append(fabrics, c.DomainGPUs(d))
				info := c.Domain(d)
				if info.FabricKind != tc.kind || info.BandwidthGBps != tc.bw || info.Host != 0 {
					t.Errorf("fabric %s: kind %s, %v GB/s, host %d; want %s, %v, 0", info.Name, info.FabricKind, info.BandwidthGBps, info.Host, tc.kind, tc.bw)
				}
			}
			if !reflect.DeepEqual(fabrics, tc.fabrics) {
				t.Errorf("fabric domains %v, want %v", fabrics, tc.fabrics)
			}
			if got := linkMatrix(tc.gpus, 0, func(a, b GPUID) LinkKind { return c.Link(a, b).Kind }); got != tc.links {
				t.Errorf("links\n%swant\n%s", got, tc.links)
			}
			if tc.pcie != "" {
				if got := linkMatrix(tc.gpus, 0, pcieKindOrSelf(c)); got != tc.pcie {
					t.Errorf("PCIe paths\n%swant\n%s", got, tc.pcie)
				}
			}
		})
	}
}

func TestGB200Rack(t *testing.T) {
	c := presetCluster(t, "gb200-nvl72")
	if c.NumHosts() != 18 || c.NumGPUs() != 72 {
		t.Fatalf("%d trays, %d GPUs; want 18, 72", c.NumHosts(), c.NumGPUs())
	}
	fab := c.DomainsAt(LevelFabric)
	if len(fab) != 1 {
		t.Fatalf("%d fabric domains, want one", len(fab))
	}
	info := c.Domain(fab[0])
	if info.FabricKind != FabricMNNVL || info.Host != NoHost || info.BandwidthGBps != 900 || len(c.DomainGPUs(fab[0])) != 72 {
		t.Fatalf("fabric %+v with %d GPUs", info, len(c.DomainGPUs(fab[0])))
	}
	for h := HostID(0); h < 18; h++ {
		first, n := c.HostGPUs(h)
		if n != 4 || len(c.DomainChildren(c.HostDomain(h))) != 2 {
			t.Fatalf("tray %s: %d GPUs, %d NUMA nodes; want 4, 2", c.HostName(h), n, len(c.DomainChildren(c.HostDomain(h))))
		}
		// Two GPUs per Grace CPU, each on its own C2C port.
		want := rows("X NODE SYS SYS", "NODE X SYS SYS", "SYS SYS X NODE", "SYS SYS NODE X")
		if got := linkMatrix(4, first, pcieKindOrSelf(c)); got != want {
			t.Fatalf("tray %s PCIe paths\n%swant\n%s", c.HostName(h), got, want)
		}
	}
	for a := GPUID(0); a < 72; a++ {
		for b := GPUID(0); b < 72; b++ {
			if l := c.Link(a, b); a != b && (l.Kind != LinkFabric || l.BandwidthGBps != 900) {
				t.Fatalf("Link(%d, %d) = %+v, want NV at 900 GB/s", a, b, l)
			}
		}
	}

	// Two racks under two ToRs: NVLink inside a rack, the network across.
	s, err := Generator{Machine: "gb200-nvl72", Hosts: 36, HostsPerToR: 18}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c2.DomainsAt(LevelFabric)); n != 2 {
		t.Fatalf("%d NVL72 domains, want 2", n)
	}
	if l := c2.Link(0, 71); l.Kind != LinkFabric {
		t.Errorf("same rack: %+v", l)
	}
	if l := c2.Link(0, 72); l.Kind != LinkNetwork || c2.LevelName(l.Level) != "cluster" {
		t.Errorf("across racks: %+v", l)
	}
}

// TestPresetsCanonical checks that every preset template is already in
// canonical form, as NVML discovery writes templates.
func TestPresetsCanonical(t *testing.T) {
	for _, name := range MachineNames() {
		tmpl, acc, err := MachineTemplate(name)
		if err != nil {
			t.Fatal(err)
		}
		if tmpl.Accelerator != acc.Model {
			t.Errorf("%s: template uses %q, accelerator is %q", name, tmpl.Accelerator, acc.Model)
		}
		if got := tmpl.Canonical(); !reflect.DeepEqual(got, tmpl) {
			t.Errorf("%s: not canonical:\n got %+v\nwant %+v", name, got, tmpl)
		}
	}
	for _, name := range PresetNames() {
		s, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, tmpl := range s.Templates {
			if got := tmpl.Canonical(); !reflect.DeepEqual(got, tmpl) {
				t.Errorf("%s: template %s not canonical", name, tmpl.Name)
			}
		}
	}
	if _, _, err := MachineTemplate("dgx-z9"); err == nil || !strings.Contains(err.Error(), "dgx-h100") {
		t.Errorf("unknown machine: %v", err)
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "openb-gpu") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestPresetNames(t *testing.T) {
	want := []string{"ascend-910", "dgx-a100", "dgx-b200", "dgx-h100", "dgx-h200", "gb200-nvl72",
		"h100-100k", "h100-10k", "h100-1k", "openb", "openb-gpu", "pcie-8gpu"}
	if got := PresetNames(); !slices.Equal(got, want) {
		t.Fatalf("PresetNames() = %v, want %v", got, want)
	}
}

// TestGeneratorFanOut checks the cluster presets built by Generator.
func TestGeneratorFanOut(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		hosts, tors, spines      int
		lastToRHosts, lastSpineT int
	}{
		// 125 hosts / 32 per ToR = 4 ToRs (the last with 125-96 = 29); no spines.
		{"h100-1k", 125, 4, 0, 29, 0},
		// 1,250 / 32 = 40 ToRs (last 1250-39×32 = 2); 40 / 16 = 3 spines (last 8).
		{"h100-10k", 1250, 40, 3, 2, 8},
		// 12,500 / 32 = 391 ToRs (last 12500-390×32 = 20); 391 / 16 = 25 spines (last 7).
		{"h100-100k", 12500, 391, 25, 20, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.hosts > 2000 {
				t.Skip("large preset")
			}
			c := presetCluster(t, tc.name)
			if c.NumHosts() != tc.hosts || c.NumGPUs() != 8*tc.hosts {
				t.Fatalf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
			}
			tor, ok := c.LevelByName("tor")
			if !ok || tor != LevelHost+1 {
				t.Fatalf("tor level %d %v", tor, ok)
			}
			tors := c.DomainsAt(tor)
			if len(tors) != tc.tors {
				t.Fatalf("%d ToRs, want %d", len(tors), tc.tors)
			}
			for i, d := range tors {
				lo, hi := c.DomainHosts(d)
				want := 32
				if i == len(tors)-1 {
					want = tc.lastToRHosts
				}
				if int(hi-lo) != want {
					t.Fatalf("ToR %s has %d hosts, want %d", c.DomainName(d), hi-lo, want)
				}
			}
			spine, ok := c.LevelByName("spine")
			if tc.spines == 0 {
				if ok || c.NumLevels() != 4 {
					t.Fatalf("spine level present, %d levels", c.NumLevels())
				}
				return
			}
			if !ok || spine != tor+1 || c.LevelCluster() != spine+1 {
				t.Fatalf("levels: tor %d spine %d cluster %d", tor, spine, c.LevelCluster())
			}
			spines := c.DomainsAt(spine)
			if len(spines) != tc.spines {
				t.Fatalf("%d spines, want %d", len(spines), tc.spines)
			}
			for i, d := range spines {
				want := 16
				if i == len(spines)-1 {
					want = tc.lastSpineT
				}
				if n := len(c.DomainChildren(d)); n != want {
					t.Fatalf("spine %s has %d ToRs, want %d", c.DomainName(d), n, want)
				}
			}
		})
	}
}

func TestGeneratorErrors(t *testing.T) {
	for _, g := range []Generator{
		{Machine: "dgx-z9", Hosts: 1},
		{Machine: "dgx-h100", Hosts: 0},
		{Machine: "dgx-h100", Hosts: 10, HostsPerToR: -1},
		{Machine: "dgx-h100", Hosts: 10, ToRsPerSpine: 2},
		{Machine: "gb200-nvl72", Hosts: 20},
	} {
		if _, err := g.Spec(); err == nil {
			t.Errorf("%+v: no error", g)
		}
	}
	s, err := Generator{Machine: "dgx-h100", Hosts: 3}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "dgx-h100-x3" || s.Hosts[0].Name != "dgx-h100-[1-3]" || len(s.Levels) != 0 {
		t.Fatalf("flat generator spec %+v", s)
	}
}

// TestLinkAcrossHosts checks Link between hosts of h100-10k: the innermost
// shared level names the path, and bandwidth falls level by level.
func TestLinkAcrossHosts(t *testing.T) {
	c := presetCluster(t, "h100-10k")
	tor, _ := c.LevelByName("tor")
	spine, _ := c.LevelByName("spine")
	gpu := func(h HostID, i int) GPUID { first, _ := c.HostGPUs(h); return first + GPUID(i) }
	for _, tc := range []struct {
		a, b  GPUID
		kind  LinkKind
		level Level
	}{
		{gpu(0, 0), gpu(0, 7), LinkFabric, LevelFabric},
		{gpu(0, 3), gpu(1, 3), LinkNetwork, tor},                  // hosts 0 and 1: ToR 1
		{gpu(0, 0), gpu(31, 0), LinkNetwork, tor},                 // last host of ToR 1
		{gpu(0, 0), gpu(32, 0), LinkNetwork, spine},               // ToR 2, spine 1
		{gpu(0, 0), gpu(16*32-1, 0), LinkNetwork, spine},          // ToR 16, spine 1
		{gpu(0, 0), gpu(16*32, 0), LinkNetwork, c.LevelCluster()}, // ToR 17, spine 2
		{gpu(1249, 0), gpu(0, 0), LinkNetwork, c.LevelCluster()},
	} {
		l := c.Link(tc.a, tc.b)
		if l.Kind != tc.kind || l.Level != tc.level {
			t.Errorf("Link(%s, %s) = %v at %s, want %v at %s", c.GPUName(tc.a), c.GPUName(tc.b),
				l.Kind, c.LevelName(l.Level), tc.kind, c.LevelName(tc.level))
		}
		if r := c.Link(tc.b, tc.a); r != l {
			t.Errorf("Link not symmetric: %+v vs %+v", l, r)
		}
	}
	bwTor := c.Link(gpu(0, 0), gpu(1, 0)).BandwidthGBps
	bwSpine := c.Link(gpu(0, 0), gpu(32, 0)).BandwidthGBps
	bwCluster := c.Link(gpu(0, 0), gpu(600, 0)).BandwidthGBps
	if !(bwTor > bwSpine && bwSpine > bwCluster && bwCluster > 0) {
		t.Errorf("network bandwidths tor %v, spine %v, cluster %v: not falling outward", bwTor, bwSpine, bwCluster)
	}
	if bwTor != DefaultNetworkBandwidth || bwSpine != DefaultNetworkBandwidth/2 || bwCluster != DefaultNetworkBandwidth/4 {
		t.Errorf("network bandwidths %v %v %v, want the default halving per level", bwTor, bwSpine, bwCluster)
	}
}

// TestBandwidthOrdering checks that the default bandwidths rank paths in
// LinkKind order: any fabric > PIX > PXB > PHB > NODE > SYS > the
// innermost network level > … > the cluster level.
func TestBandwidthOrdering(t *testing.T) {
	minFabric := DefaultFabricBandwidth[""]
	for _, kind := range []string{FabricNVSwitch, FabricMNNVL, FabricNVLink, FabricNVLinkBridge, FabricHCCS} {
		minFabric = min(minFabric, DefaultFabricBandwidth[kind])
	}
	chain := []float64{minFabric}
	for k := LinkPIX; k <= LinkSYS; k++ {
		chain = append(chain, DefaultPCIeBandwidth[k])
	}
	c := presetCluster(t, "h100-10k")
	for l := LevelHost + 1; l <= c.LevelCluster(); l++ {
		chain = append(chain, c.levelBandwidth(l))
	}
	for i := 1; i < len(chain); i++ {
		if !(chain[i-1] > chain[i]) {
			t.Fatalf("bandwidths %v do not fall strictly along fabric, PIX, PXB, PHB, NODE, SYS, tor, spine, cluster", chain)
		}
	}
	// Bandwidths the spec gives replace the defaults; outer levels halve
	// from the nearest level inside them that has one.
	s, err := Preset("h100-10k")
	if err != nil {
		t.Fatal(err)
	}
	s.Levels[1].BandwidthGBps = 40 // tor
	c2, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := []float64{c2.levelBandwidth(tor(c2)), c2.levelBandwidth(tor(c2) + 1), c2.levelBandwidth(tor(c2) + 2)}; !slices.Equal(got, []float64{40, 20, 10}) {
		t.Errorf("with tor at 40 GB/s: %v, want [40 20 10]", got)
	}
}

func tor(c *Cluster) Level { l, _ := c.LevelByName("tor"); return l }

// TestPCIe8GPUShape pins the layout MachineTemplate documents for
// pcie-8gpu: per socket one host bridge, one upper switch under it, and two
// leaf switches of two GPUs under that (hence PIX, PXB and SYS, never NODE).
func TestPCIe8GPUShape(t *testing.T) {
	c := presetCluster(t, "pcie-8gpu")
	for sock := range 2 {
		var bridges, uppers, leaves []DomainID
		for g := GPUID(4 * sock); g < GPUID(4*sock+4); g++ {
			sw := c.switchesOf(g)
			if len(sw) != 2 {
				t.Fatalf("%s: %d PCIe switches above it, want 2 (leaf, upper)", c.GPUName(g), len(sw))
			}
			leaves = append(leaves, sw[0])
			uppers = append(uppers, sw[1])
			bridges = append(bridges, c.gpus[g].bridge)
			if c.DomainParent(sw[1]) != c.gpus[g].bridge {
				t.Errorf("%s: upper switch %s is not under its host bridge", c.GPUName(g), c.DomainName(sw[1]))
			}
		}
		if len(slices.Compact(bridges)) != 1 || len(slices.Compact(uppers)) != 1 {
			t.Errorf("socket %d: host bridges %v and upper switches %v, want one of each", sock, bridges, uppers)
		}
		if l := slices.Compact(leaves); len(l) != 2 {
			t.Errorf("socket %d: leaf switches %v, want two of two GPUs", sock, leaves)
		}
	}
}
