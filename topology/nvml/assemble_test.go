package nvml

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/topology"
)

// hostSpec returns a one-host cluster file as discovery writes it, for a
// machine preset; clique, when non-zero, puts the host in a multi-node
// domain of that clique.
func hostSpec(t testing.TB, host, machine string, clique uint32) Input {
	t.Helper()
	tmpl, acc, err := topology.MachineTemplate(machine)
	if err != nil {
		t.Fatal(err)
	}
	r := &Result{Hostname: host, Template: tmpl, Accelerator: acc}
	for i := 0; i < tmpl.GPUs; i++ {
		r.GPUs = append(r.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", host, i), BusID: fmt.Sprintf("0000:%02x:00.0", i+1)})
	}
	if clique != 0 {
		r.Fabric = &FabricMembership{ClusterUUID: "c0ffee00-0000-4000-8000-000000000001", CliqueID: clique, BandwidthGBps: 900}
	}
	return Input{Name: host + ".yaml", Spec: r.Spec()}
}

func TestAssemble(t *testing.T) {
	var inputs []Input
	for i := 1; i <= 4; i++ {
		inputs = append(inputs, hostSpec(t, fmt.Sprintf("dgx%03d", i), "dgx-h100", 0))
	}
	// A host with a GPU whose NVLinks are down has another template of the
	// same name: it gets a suffix.
	odd := hostSpec(t, "dgx005", "dgx-h100", 0)
	odd.Spec.Templates[0].Fabrics[0].GPUs = []int{0, 1, 2, 4, 5, 6, 7}
	inputs = append(inputs, odd, hostSpec(t, "l40s-01", "pcie-8gpu", 0))
	net, err := ParseNetwork([]byte(`version: 1
levels: [spine, tor]
switches:
  - {name: spine1, level: spine}
  - {name: tor1, level: tor, parent: spine1, hosts: ["dgx[001-003]"]}
  - {name: tor2, level: tor, parent: spine1, hosts: [dgx004, dgx005, l40s-01]}
`), "net.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Assemble(inputs, AssembleOptions{Name: "lab", Network: net})
	if err != nil {
		t.Fatal(err)
	}
	var tmpls, hosts, parents []string
	for _, tm := range s.Templates {
		tmpls = append(tmpls, tm.Name)
	}
	for _, h := range s.Hosts {
		hosts = append(hosts, h.Name+":"+h.Template)
		parents = append(parents, h.Parent)
	}
	if want := []string{"dgx-h100", "dgx-h100-2", "pcie-8gpu"}; !slices.Equal(tmpls, want) {
		t.Errorf("templates %q, want %q", tmpls, want)
	}
	if want := []string{"dgx001:dgx-h100", "dgx002:dgx-h100", "dgx003:dgx-h100", "dgx004:dgx-h100", "dgx005:dgx-h100-2", "l40s-01:pcie-8gpu"}; !slices.Equal(hosts, want) {
		t.Errorf("hosts %q", hosts)
	}
	if want := []string{"tor1", "tor1", "tor1", "tor2", "tor2", "tor2"}; !slices.Equal(parents, want) {
		t.Errorf("parents %q", parents)
	}
	if len(s.Accelerators) != 2 || s.Name != "lab" || len(s.Levels) != 2 || len(s.Switches) != 3 {
		t.Errorf("spec %+v", s)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := c.HostByName("dgx002")
	first, _ := c.HostGPUs(h)
	if g := c.GPU(first + 3); g.UUID != "GPU-dgx002-3" || g.BusID != "0000:04:00.0" {
		t.Errorf("identity of dgx002 GPU 3: %+v", g)
	}
	tor, _ := c.LevelByName("tor")
	a, _ := c.HostByName("dgx001")
	b, _ := c.HostByName("dgx003")
	if c.HostAt(a, tor) != c.HostAt(b, tor) {
		t.Error("dgx001 and dgx003 are not under one ToR")
	}
}

func TestAssembleCliquesAndRule(t *testing.T) {
	var inputs []Input
	for r := 1; r <= 2; r++ {
		for n := 1; n <= 3; n++ {
			inputs = append(inputs, hostSpec(t, fmt.Sprintf("r%d-n%02d", r, n), "gb200-nvl72", uint32(r)))
		}
	}
	rule, err := ParseHostRule(`^(r\d+)-`, "tor-$1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Assemble(inputs, AssembleOptions{Rule: &rule})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Fabrics) != 2 {
		t.Fatalf("fabrics %+v", s.Fabrics)
	}
	for i, f := range s.Fabrics {
		wantHosts := fmt.Sprintf("r%d-n[01-03]", i+1)
		if f.Hosts != wantHosts || f.Kind != topology.FabricMNNVL || f.CliqueID != uint32(i+1) || f.BandwidthGBps != 900 {
			t.Errorf("fabric %d: %+v, want hosts %s", i, f, wantHosts)
		}
	}
	if len(s.Templates) != 1 || len(s.Switches) != 2 || s.Switches[1].Name != "tor-r2" {
		t.Errorf("templates %d, switches %+v", len(s.Templates), s.Switches)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.DomainsAt(topology.LevelFabric)); n != 2 {
		t.Errorf("%d fabric domains", n)
	}
	// Re-assembling the assembled file gives the same cliques.
	again, err := Assemble([]Input{{Name: "all.yaml", Spec: s}}, AssembleOptions{Rule: &rule})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again.Fabrics) != fmt.Sprint(s.Fabrics) {
		t.Errorf("re-assembled fabrics %+v", again.Fabrics)
	}
}

// TestAssembleCliqueWithoutPattern: hosts of one clique whose names share
// no pattern are listed by name and still form one NVLink domain.
func TestAssembleCliqueWithoutPattern(t *testing.T) {
	apart1 := hostSpec(t, "alpha", "gb200-nvl72", 5)
	apart2 := hostSpec(t, "beta", "gb200-nvl72", 5)
	s, err := Assemble([]Input{apart1, apart2}, AssembleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Fabrics) != 1 || s.Fabrics[0].Hosts != "alpha,beta" {
		t.Fatalf("fabrics = %+v, want one listing alpha,beta", s.Fabrics)
	}
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	ha, _ := c.HostByName("alpha")
	hb, _ := c.HostByName("beta")
	fa, _ := c.HostGPUs(ha)
	fb, _ := c.HostGPUs(hb)
	if d := c.GPUFabric(fa); d == topology.NoDomain || d != c.GPUFabric(fb) {
		t.Fatal("alpha and beta are not in one fabric domain")
	}
}

func TestAssembleErrors(t *testing.T) {
	h1 := hostSpec(t, "h1", "dgx-h100", 0)
	h2 := hostSpec(t, "h2", "dgx-h100", 0)
	netFor := func(y string) *Network {
		n, err := ParseNetwork([]byte(y), "net.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	changedAcc := hostSpec(t, "h3", "dgx-h100", 0)
	changedAcc.Spec.Accelerators[0].MemoryMiB = 1
	badSpec := hostSpec(t, "h4", "dgx-h100", 0)
	badSpec.Spec.Version = 7
	cliqueA := hostSpec(t, "x1", "gb200-nvl72", 1)
	cliqueB := hostSpec(t, "x2", "gb200-nvl72", 1)
	cliqueB.Spec.Fabrics[0].Kind = "nvlink"
	nameClash := hostSpec(t, "x3", "gb200-nvl72", 2)
	nameClash.Spec.Fabrics[0].Name = cliqueA.Spec.Fabrics[0].Name
	rule, _ := ParseHostRule(`^(h)`, "")
	for _, tc := range []struct {
		name   string
		inputs []Input
		opts   AssembleOptions
		err    string
	}{
		{"none", nil, AssembleOptions{}, "assemble: no host files"},
		{"both network and rule", []Input{h1}, AssembleOptions{Network: &Network{}, Rule: &rule}, "not both"},
		{"host twice", []Input{h1, h1}, AssembleOptions{}, `assemble: host "h1" is in both h1.yaml and h1.yaml`},
		{"invalid input", []Input{badSpec}, AssembleOptions{}, "assemble: h4.yaml: version: unsupported version 7"},
		{"accelerator differs", []Input{h1, changedAcc}, AssembleOptions{}, `assemble: h3.yaml: accelerator "H100-SXM5-80GB" differs from its description in h1.yaml`},
		{"unknown host in network", []Input{h1}, AssembleOptions{Network: netFor("version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, hosts: [h1, h9]}\n")},
			`assemble: the network puts host "h9" under t1, line 4, but no host file describes it`},
		{"host under no switch", []Input{h1, h2}, AssembleOptions{Network: netFor("version: 1\nlevels: [tor]\nswitches:\n  - {name: t1, level: tor, hosts: [h1]}\n")},
			`assemble: host "h2" (from h2.yaml) is under no tor switch of the network`},
		{"clique kinds conflict", []Input{cliqueA, cliqueB}, AssembleOptions{}, "assemble: conflicting cliques: x1.yaml describes domain mnnvl-c0ffee00-0000-4000-8000-000000000001-1 as mnnvl, x2.yaml as nvlink"},
		{"clique names conflict", []Input{cliqueA, nameClash}, AssembleOptions{}, "assemble: conflicting cliques: domain mnnvl-c0ffee00-0000-4000-8000-000000000001-1 is (cluster c0ffee00-0000-4000-8000-000000000001, clique 1) in x1.yaml but (cluster c0ffee00-0000-4000-8000-000000000001, clique 2) in x3.yaml"},
		{"rule misses a host", []Input{h1, hostSpec(t, "g1", "dgx-h100", 0)}, AssembleOptions{Rule: &rule}, `assemble: host rule: host "g1" does not match "^(h)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Assemble(tc.inputs, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v\nwant  %q", err, tc.err)
			}
		})
	}
}

func TestHostPattern(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
		ok    bool
	}{
		{[]string{"a"}, "a", true},
		{[]string{"n02", "n01", "n03"}, "n[01-03]", true},
		{[]string{"r1-n08", "r1-n09", "r1-n10", "r1-n12"}, "r1-n[08-10,12]", true},
		{[]string{"gpu9", "gpu10", "gpu11"}, "gpu[9-11]", true},
		{[]string{"gpu9", "gpu010"}, "gpu[9,010]", true},
		{[]string{"r1-n1", "r2-n2"}, "", false}, // two fields vary
		{[]string{"alpha", "beta"}, "", false},
		{[]string{"a1", "a1"}, "", false},
		{[]string{"a1b", "a1"}, "", false},
		{nil, "", false},
	} {
		got, ok := hostPattern(tc.names)
		if got != tc.want || ok != tc.ok {
			t.Errorf("hostPattern(%q) = %q, %v; want %q, %v", tc.names, got, ok, tc.want, tc.ok)
		}
	}
}

// Any set of names that differ in one number becomes a pattern that
// expands to exactly that set.
func TestHostPatternProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nums := rapid.SliceOfNDistinct(rapid.IntRange(0, 300), 1, 40, rapid.ID[int]).Draw(t, "nums")
		width := rapid.IntRange(0, 4).Draw(t, "width")
		prefix := rapid.SampledFrom([]string{"n", "rack7-node", "x-"}).Draw(t, "prefix")
		var names []string
		for _, n := range nums {
			names = append(names, fmt.Sprintf("%s%0*d%s", prefix, width, n, "-gb200"))
		}
		pat, ok := hostPattern(names)
		if !ok {
			t.Fatalf("no pattern for %q", names)
		}
		got, err := topology.ExpandNames(pat)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(names)
		if !slices.Equal(got, names) {
			t.Fatalf("%q expands to %q, want %q", pat, got, names)
		}
	})
}

// Hosts whose kernels reserve slightly different memory share a template
// once memory is rounded to whole GiB.
func TestAssembleMemoryQuantum(t *testing.T) {
	a := hostSpec(t, "n1", "dgx-h100", 0)
	b := hostSpec(t, "n2", "dgx-h100", 0)
	a.Spec.Templates[0].MemoryMiB = 2063984 // 2015.6 GiB
	b.Spec.Templates[0].MemoryMiB = 2064100
	s, err := Assemble([]Input{a, b}, AssembleOptions{})
	if err != nil || len(s.Templates) != 2 {
		t.Fatalf("exact: %d templates, %v", len(s.Templates), err)
	}
	s, err = Assemble([]Input{a, b}, AssembleOptions{MemoryQuantumMiB: 1024})
	if err != nil || len(s.Templates) != 1 || s.Templates[0].MemoryMiB != 2063360 {
		t.Fatalf("rounded: %+v, %v", s.Templates, err)
	}
	if _, err := Assemble([]Input{a}, AssembleOptions{MemoryQuantumMiB: -1}); err == nil {
		t.Error("negative quantum accepted")
	}
}
