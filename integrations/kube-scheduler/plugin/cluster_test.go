package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/gpusched/gpusched/topology"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

func TestBuildTopologyLevelsAndNames(t *testing.T) {
	a := defaultArgs("spine", "tor")
	lbl := func(spine, tor string) map[string]string {
		m := map[string]string{}
		if spine != "" {
			m["net.example.com/spine"] = spine
		}
		if tor != "" {
			m["net.example.com/tor"] = tor
		}
		return m
	}
	nodes := []*v1.Node{
		gpuNode("n4", 8, h100, lbl("s2", "r1")), // r1 again, under another spine
		gpuNode("n1", 8, h100, lbl("s1", "r1")),
		gpuNode("n2", 8, h100, lbl("s1", "r1")),
		gpuNode("n3", 8, h100, lbl("s1", "r2")),
		gpuNode("n5", 8, h100, lbl("s2", "")), // no tor label: a tor of its own
		gpuNode("n6", 4, "", nil),             // no labels at all
		node("cpu-only", -1, nil),             // no GPU resource: not a host
		node("zero-gpus", 0, nil),             // zero GPUs: not a host
	}
	topo, err := BuildTopology(nodes, a)
	if err != nil {
		t.Fatal(err)
	}
	c := topo.Cluster
	if got := c.NumHosts(); got != 6 {
		t.Fatalf("hosts = %d, want 6 (the GPU nodes)", got)
	}
	tor, ok := c.LevelByName("tor")
	if !ok {
		t.Fatal("no tor level")
	}
	spine, _ := c.LevelByName("spine")
	domain := func(host string, lv topology.Level) string {
		h, ok := c.HostByName(host)
		if !ok {
			t.Fatalf("no host %s", host)
		}
		return c.DomainName(c.HostAt(h, lv))
	}
	for _, tc := range []struct {
		host, spine, tor string
	}{
		// r1 exists under s1 and s2: both get qualified names.
		{"n1", "s1", "tor:s1:r1"},
		{"n2", "s1", "tor:s1:r1"},
		{"n3", "s1", "r2"},
		{"n4", "s2", "tor:s2:r1"},
		{"n5", "s2", "n5-tor"},
		{"n6", "n6-spine", "n6-tor"},
	} {
		if got := domain(tc.host, spine); got != tc.spine {
			t.Errorf("%s: spine %q, want %q", tc.host, got, tc.spine)
		}
		if got := domain(tc.host, tor); got != tc.tor {
			t.Errorf("%s: tor %q, want %q", tc.host, got, tc.tor)
		}
	}
	h6, _ := c.HostByName("n6")
	if m := c.Model(c.HostModel(h6)).Model; m != unknownModel {
		t.Errorf("n6 model %q, want %q", m, unknownModel)
	}
	if got := c.Host(h6).CPUMilli; got != 64000 {
		t.Errorf("n6 CPU %d milli, want 64000", got)
	}
	if got := c.Host(h6).MemoryMiB; got != 512<<10 {
		t.Errorf("n6 memory %d MiB, want %d", got, 512<<10)
	}
}

func TestBuildTopologyMachineTemplate(t *testing.T) {
	a := defaultArgs()
	topo, err := BuildTopology([]*v1.Node{
		gpuNode("dgx", 8, h100, nil),
		gpuNode("odd", 4, h100, nil), // the preset has 8 GPUs: a flat host
	}, a)
	if err != nil {
		t.Fatal(err)
	}
	c := topo.Cluster
	dgx, _ := c.HostByName("dgx")
	first, n := c.HostGPUs(dgx)
	if n != 8 {
		t.Fatalf("dgx has %d GPUs", n)
	}
	// dgx-h100: one NVSwitch island, so any two GPUs are NVLink peers.
	if c.GPUFabric(first) == topology.NoDomain || c.GPUFabric(first) != c.GPUFabric(first+7) {
		t.Errorf("dgx GPUs 0 and 7 not in one fabric domain")
	}
	if k := c.Link(first, first+7).Kind; k != topology.LinkFabric {
		t.Errorf("dgx link 0-7 = %v, want fabric", k)
	}
	odd, _ := c.HostByName("odd")
	f2, _ := c.HostGPUs(odd)
	if c.GPUFabric(f2) != topology.NoDomain {
		t.Errorf("odd (4 GPUs, no matching preset) has a fabric domain")
	}
}

func TestBuildTopologyCliques(t *testing.T) {
	a := defaultArgs("tor")
	clique := func(v string) map[string]string {
		return map[string]string{DefaultGPUCliqueLabel: v, "net.example.com/tor": "rack1"}
	}
	nodes := []*v1.Node{
		gpuNode("gb-r1-t01", 4, "NVIDIA-GB200", clique("5c9f1d2e-uuid.7")),
		gpuNode("gb-r1-t02", 4, "NVIDIA-GB200", clique("5c9f1d2e-uuid.7")),
		gpuNode("gb-r1-t10", 4, "NVIDIA-GB200", clique("5c9f1d2e-uuid.7")),
		gpuNode("alpha", 4, "NVIDIA-GB200", clique("other.1")),
		gpuNode("beta", 4, "NVIDIA-GB200", clique("other.1")),
	}
	topo, err := BuildTopology(nodes, a)
	if err != nil {
		t.Fatal(err)
	}
	c := topo.Cluster
	h, _ := c.HostByName("gb-r1-t02")
	first, _ := c.HostGPUs(h)
	d := c.GPUFabric(first)
	if d == topology.NoDomain {
		t.Fatal("gb-r1-t02 is in no fabric domain")
	}
	if got := len(c.DomainGPUs(d)); got != 12 {
		t.Errorf("clique has %d GPUs, want 12 (3 trays × 4)", got)
	}
	info := c.Domain(d)
	if info.Name != "5c9f1d2e-uuid.7" {
		t.Errorf("clique domain name %q", info.Name)
	}
	if fl, ok := c.LevelByName("nvlink"); !ok || fl != topology.LevelFabric {
		t.Errorf("nvlink level = %v, %v", fl, ok)
	}
	// "alpha" and "beta" share no name pattern: they form their clique's
	// domain as a listed pair, with no warning.
	ha, _ := c.HostByName("alpha")
	fa, _ := c.HostGPUs(ha)
	hb, _ := c.HostByName("beta")
	fb, _ := c.HostGPUs(hb)
	if da := c.GPUFabric(fa); da == topology.NoDomain || da != c.GPUFabric(fb) || len(c.DomainGPUs(da)) != 8 {
		t.Errorf("alpha and beta are not one 8-GPU fabric domain")
	}
	if len(topo.Warnings) != 0 {
		t.Errorf("warnings %q, want none", topo.Warnings)
	}
}

func TestBuildTopologyUnavailableGPUs(t *testing.T) {
	a := defaultArgs()
	n := gpuNode("n1", 7, h100, nil)
	n.Labels[DefaultGPUCountLabel] = "8" // one GPU the device plugin does not offer
	topo, err := BuildTopology([]*v1.Node{n}, a)
	if err != nil {
		t.Fatal(err)
	}
	l := topo.NewLedger()
	h, _ := topo.Cluster.HostByName("n1")
	if got := l.HostFreeGPUs(h); got != 7 {
		t.Errorf("free GPUs %d, want 7", got)
	}
	first, _ := topo.Cluster.HostGPUs(h)
	if l.GPUIsFree(first + 7) {
		t.Errorf("GPU 7 is free; the device plugin does not offer it")
	}
	if err := l.Check(); err != nil {
		t.Error(err)
	}
}

func TestBuildTopologyEmpty(t *testing.T) {
	if _, err := BuildTopology([]*v1.Node{node("cpu", -1, nil)}, defaultArgs("tor")); !errors.Is(err, ErrNoGPUNodes) {
		t.Errorf("error %v, want ErrNoGPUNodes", err)
	}
}

// TestBuildTopologyRandom builds clusters from random labelings and checks that
// every GPU node becomes a host with its GPUs under the domains its labels
// name.
func TestBuildTopologyRandom(t *testing.T) {
	a := defaultArgs("spine", "tor")
	for seed := range 200 {
		r := newRand(uint64(seed))
		var nodes []*v1.Node
		for i := range 1 + r.IntN(30) {
			labels := map[string]string{}
			if r.IntN(5) > 0 {
				labels["net.example.com/spine"] = fmt.Sprintf("s%d", r.IntN(3))
			}
			if r.IntN(5) > 0 {
				labels["net.example.com/tor"] = fmt.Sprintf("t%d", r.IntN(4))
			}
			if r.IntN(4) == 0 {
				labels[DefaultGPUCliqueLabel] = fmt.Sprintf("c.%d", r.IntN(2))
			}
			nodes = append(nodes, gpuNode(fmt.Sprintf("node-%02d", i), 1+r.IntN(8), []string{h100, "NVIDIA-L4", ""}[r.IntN(3)], labels))
		}
		topo, err := BuildTopology(nodes, a)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		c := topo.Cluster
		tor, _ := c.LevelByName("tor")
		for _, n := range nodes {
			h, ok := c.HostByName(n.Name)
			if !ok {
				t.Fatalf("seed %d: no host %s", seed, n.Name)
			}
			want, _ := n.Status.Allocatable.Name(DefaultGPUResource, "").AsInt64()
			if _, got := c.HostGPUs(h); int64(got) != want {
				t.Errorf("seed %d: %s has %d GPUs, want %d", seed, n.Name, got, want)
			}
			// Two nodes with the same (spine, tor) labels share a tor.
			for _, m := range nodes {
				hm, _ := c.HostByName(m.Name)
				sameLabels := n.Labels["net.example.com/tor"] != "" && n.Labels["net.example.com/spine"] != "" &&
					n.Labels["net.example.com/tor"] == m.Labels["net.example.com/tor"] &&
					n.Labels["net.example.com/spine"] == m.Labels["net.example.com/spine"]
				sameTor := c.HostAt(h, tor) == c.HostAt(hm, tor)
				if sameLabels != sameTor && n.Name != m.Name {
					t.Errorf("seed %d: %s and %s: same labels %v, same tor %v", seed, n.Name, m.Name, sameLabels, sameTor)
				}
			}
		}
		if err := topo.NewLedger().Check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func TestNamePattern(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string // "" = not expressible
	}{
		{[]string{"a"}, "a"},
		{[]string{"gb-r1-t01", "gb-r1-t02", "gb-r1-t10"}, "gb-r1-t[01,02,10]"},
		{[]string{"r1-n5", "r2-n5"}, "r[1,2]-n5"},
		{[]string{"node10", "node9"}, "node[10,9]"},
		{[]string{"alpha", "beta"}, ""},
		{[]string{"r1-n1", "r2-n2"}, ""}, // two runs vary
		{[]string{"x1", "x1"}, ""},       // duplicates
		{[]string{"a[1]"}, ""},
	} {
		got, ok := namePattern(tc.names)
		if (tc.want != "") != ok || got != tc.want {
			t.Errorf("namePattern(%q) = %q, %v; want %q", tc.names, got, ok, tc.want)
		}
	}
}

// FuzzNamePattern checks that a pattern, when one is returned, expands to
// exactly the names.
func FuzzNamePattern(f *testing.F) {
	f.Add("gb-r1-t01\ngb-r1-t02\ngb-r1-t10")
	f.Add("a\nb")
	f.Add("n0\nn00\nn000")
	f.Add("x9\nx10")
	f.Fuzz(func(t *testing.T, s string) {
		names := strings.Split(s, "\n")
		slices.Sort(names)
		names = slices.Compact(names)
		p, ok := namePattern(names)
		if !ok {
			return
		}
		got, err := topology.ExpandNames(p)
		if err != nil || !slices.Equal(got, names) {
			t.Fatalf("pattern %q of %q expands to %q, %v", p, names, got, err)
		}
	})
}

// TestCliqueWithUnrelatedNames: nodes of one NVLink clique whose names share
// no pattern still form one fabric domain, listed name by name.
func TestCliqueWithUnrelatedNames(t *testing.T) {
	spec := topology.Spec{Version: 1, Name: "c",
		Accelerators: []topology.AcceleratorSpec{{Model: "GB200"}},
		Templates:    []topology.HostTemplate{{Name: "t", Accelerator: "GB200", GPUs: 4}},
		Hosts:        []topology.HostGroup{{Name: "alpha", Template: "t"}, {Name: "gb-r7-x03", Template: "t"}, {Name: "zeta9", Template: "t"}},
		Fabrics:      []topology.FabricGroup{{Name: "clique", Kind: topology.FabricMNNVL, Hosts: strings.Join([]string{"alpha", "gb-r7-x03", "zeta9"}, ",")}},
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := c.DomainByName("clique")
	if !ok || len(c.DomainGPUs(d)) != 12 {
		t.Fatalf("clique domain %v has %d GPUs, want 12", ok, len(c.DomainGPUs(d)))
	}
}
