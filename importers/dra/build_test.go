package dra

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

func load(t *testing.T, opts Options, files ...string) (*Result, *topology.Cluster) {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join("testdata", f))
	}
	objs, err := ReadFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return built(t, objs, opts)
}

// built builds objs and their cluster.
func built(t *testing.T, objs *Objects, opts Options) (*Result, *topology.Cluster) {
	t.Helper()
	res, err := Build(objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(res.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return res, c
}

// Two DGX H100 nodes: 8 GPUs each in one NVSwitch domain, 4 per NUMA node,
// each on its own PCIe root (NODE apart within a NUMA node, SYS across),
// under the block and rack of their node labels; the NoExecute taint of
// dgx-h100-002's gpu-5 fails that GPU.
func TestDGXH100(t *testing.T) {
	res, c := load(t, Options{NetworkLabels: []string{"network.topology.kubernetes.io/block", "network.topology.kubernetes.io/rack"}}, "dgx-h100.yaml")
	if c.NumHosts() != 2 || c.NumGPUs() != 16 {
		t.Fatalf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
	h, ok := c.HostByName("dgx-h100-002")
	if !ok {
		t.Fatal("no dgx-h100-002")
	}
	first, _ := c.HostGPUs(h)
	for _, tc := range []struct {
		a, b int
		want topology.LinkKind
	}{{0, 1, topology.LinkFabric}, {0, 7, topology.LinkFabric}} {
		if got := c.Link(first+topology.GPUID(tc.a), first+topology.GPUID(tc.b)).Kind; got != tc.want {
			t.Errorf("GPUs %d-%d: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	for g := 0; g < 8; g++ {
		want := "numa0"
		if g >= 4 {
			want = "numa1"
		}
		if name := c.DomainName(c.GPU(first + topology.GPUID(g)).NUMA); !strings.HasSuffix(name, "/"+want) {
			t.Errorf("GPU %d in %s, want %s", g, name, want)
		}
	}
	// The PCIe view equals the preset's at the level nvidia-smi reports.
	tmpl := res.Spec.Templates[0]
	preset, acc, _ := topology.MachineTemplate("dgx-h100")
	if !reflect.DeepEqual(res.Spec.Accelerators[0], acc) {
		t.Errorf("accelerator %+v\nwant %+v", res.Spec.Accelerators[0], acc)
	}
	if !reflect.DeepEqual(tmpl.Fabrics, preset.Fabrics) || tmpl.CPUMilli != 224000 || tmpl.MemoryMiB != 2097152 {
		t.Errorf("template %+v", tmpl)
	}
	if len(res.Spec.Levels) != 2 || res.Spec.Levels[0].Name != "block" || res.Spec.Levels[1].Name != "rack" {
		t.Errorf("levels %+v", res.Spec.Levels)
	}
	if id := res.Spec.Hosts[1].GPUs[3]; id.BusID != "0000:5d:00.0" || !strings.HasPrefix(id.UUID, "GPU-") {
		t.Errorf("identity %+v", id)
	}
	// Health.
	var failed []string
	for _, g := range res.GPUs {
		if g.Health != topology.Healthy {
			failed = append(failed, g.Host+"/"+g.Device+"/"+g.Health.String())
		}
	}
	if !reflect.DeepEqual(failed, []string{"dgx-h100-002/gpu-5/failed"}) {
		t.Errorf("unhealthy %q", failed)
	}
	l := topology.NewLedger(c)
	if err := res.ApplyHealth(c, l); err != nil {
		t.Fatal(err)
	}
	if got := l.GPU(first + 5).Health; got != topology.Failed {
		t.Errorf("ledger health %v", got)
	}
}

// The H200 of the real capture: the MIG geometry read from its
// partitionable devices is the driver's (the preset's, which
// topology/nvml's golden test checks against the capture), 1g.18gb+me
// included, and the ledger places one 1g.18gb+me per GPU.
func TestH200MIG(t *testing.T) {
	res, c := load(t, Options{}, "h200-mig.yaml")
	_, want, _ := topology.MachineTemplate("dgx-h200")
	got := res.Spec.Accelerators[0]
	if !reflect.DeepEqual(got, want) {
		t.Errorf("accelerator %+v\nwant %+v", got, want)
	}
	if len(res.MIG) != 25 || res.MIG[0].Host != "h200-sxm-1" {
		t.Errorf("%d MIG devices: %+v", len(res.MIG), res.MIG)
	}
	acc := c.Model(c.HostModel(0))
	me, ok := acc.MIGProfileByName("1g.18gb+me")
	if !ok {
		t.Fatal("no 1g.18gb+me")
	}
	l := topology.NewLedger(c)
	placed := 0
	for _, st := range acc.MIGProfiles[me].Starts {
		if l.Allocate(topology.Claim{GPUs: []topology.GPUClaim{{GPU: 0, Kind: topology.ClaimMIG, Profile: me, Start: int8(st)}}}) == nil {
			placed++
		}
	}
	if placed != 1 {
		t.Errorf("%d instances of 1g.18gb+me placed, want 1", placed)
	}
	if id := res.Spec.Hosts[0].GPUs[0]; id.UUID != "GPU-81189afa-fda9-4b0a-1d57-a0ab7d83ab4d" || id.BusID != "0000:00:06.0" {
		t.Errorf("identity %+v", id)
	}
}

// GB200 NVL72: two racks of 18 trays, each rack one multi-node NVLink
// domain of 72 GPUs, whether the clique comes from the node label (rack 1)
// or the GPUs' attribute (rack 2).
func TestGB200Cliques(t *testing.T) {
	res, c := load(t, Options{NetworkLabels: []string{"network.topology.kubernetes.io/block", "network.topology.kubernetes.io/rack"}}, "gb200-nvl72.yaml")
	if c.NumHosts() != 36 || c.NumGPUs() != 144 {
		t.Fatalf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
	fabrics := c.DomainsAt(topology.LevelFabric)
	if len(fabrics) != 2 {
		t.Fatalf("%d fabric domains", len(fabrics))
	}
	for _, d := range fabrics {
		if n := len(c.DomainGPUs(d)); n != 72 {
			t.Errorf("domain %s: %d GPUs", c.DomainName(d), n)
		}
	}
	a, _ := c.HostByName("gb200-r01-t01")
	b, _ := c.HostByName("gb200-r01-t18")
	x, _ := c.HostByName("gb200-r02-t01")
	ga, _ := c.HostGPUs(a)
	gb, _ := c.HostGPUs(b)
	gx, _ := c.HostGPUs(x)
	if c.Link(ga, gb).Kind != topology.LinkFabric || c.Link(ga, gx).Kind == topology.LinkFabric {
		t.Errorf("links: same rack %v, across racks %v", c.Link(ga, gb).Kind, c.Link(ga, gx).Kind)
	}
	if len(res.Spec.Fabrics) != 2 || res.Spec.Fabrics[1].CliqueID != 2 {
		t.Errorf("fabrics %+v", res.Spec.Fabrics)
	}
}

// Bad input: an error naming the file, line and field; never a panic.
func TestBadInput(t *testing.T) {
	const head = "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s1}\nspec:\n  driver: gpu.nvidia.com\n  pool: {name: n1, generation: 1}\n"
	gpu := func(attrs string) string {
		return head + "  nodeName: n1\n  devices:\n    - name: gpu-0\n      attributes: {" + attrs + "}\n      capacity: {memory: {value: 80Gi}}\n"
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"version", "apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceSlice\nmetadata: {name: s1}\nspec: {}\n", "bad.yaml:1: apiVersion: ResourceSlice of \"resource.k8s.io/v1alpha3\""},
		{"no node", head + "  devices: []\n", `bad.yaml:1: slice "s1": spec.nodeName: missing`},
		{"no product", gpu("uuid: {string: GPU-1}"), `slice "s1": spec.devices[0].attributes.productName: missing`},
		{"int as string", gpu("productName: {string: NVIDIA H100 80GB HBM3}, index: {string: one}"), `slice "s1": spec.devices[0].attributes.index: want an int`},
		{"bad quantity", strings.Replace(gpu("productName: {string: NVIDIA H100 80GB HBM3}"), "80Gi", "eighty", 1), `spec.devices[0].capacity.memory: bad quantity "eighty"`},
		{"wrong type", head + "  nodeName: n1\n  devices: {a: 1}\n", `bad.yaml:8: slice "s1": spec: cannot unmarshal !!map into []dra.Device`},
		{"bad clique", gpu("productName: {string: NVIDIA H100 80GB HBM3}, cliqueId: {string: nodot}"), `node n1 clique: "nodot" is not <cluster UUID>.<clique id>`},
		{"bad yaml", "kind: [", "bad.yaml: "},
		{"orphan mig", head + "  nodeName: n1\n  devices:\n    - name: m\n      attributes: {type: {string: mig}, profile: {string: 1g.10gb}}\n", "MIG devices but no GPU device"},
		{"two models", gpu("productName: {string: NVIDIA H100 80GB HBM3}") + "    - name: gpu-1\n      attributes: {productName: {string: NVIDIA L40S}}\n", `spec.devices[1].attributes.productName: "NVIDIA L40S" on a node of H100-SXM5-80GB GPUs`},
		{"index gap", gpu("productName: {string: NVIDIA H100 80GB HBM3}, index: {int: 1}"), `spec.devices[0].attributes.index: index 1, but the node's GPUs are numbered 0..0`},
		{"bad profile", gpu("productName: {string: NVIDIA H100 80GB HBM3}") + "    - name: m\n      attributes: {type: {string: mig}, profile: {string: big}}\n", `spec.devices[1].attributes.profile: "big" is not a MIG profile name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Parse("bad.yaml", []byte(tc.in))
			if err == nil {
				_, err = Build(objs, Options{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// A DGX A100 whose GPUs 5-7 are in static MIG mode (NVIDIA's driver
// without DynamicMIG publishes only their MIG devices, with memorySlice
// capacities), and a node whose one GPU is: each GPU in MIG mode is a GPU
// of its host (in minor order, so a100-1 is the dgx-a100 shape with its
// NVSwitch domain), marked StaticMIG, and its MIG devices are listed on
// it at their starts (by device name).
func TestStaticMIG(t *testing.T) {
	res, c := load(t, Options{}, "dgx-a100-static.yaml")
	if c.NumHosts() != 2 || c.NumGPUs() != 9 {
		t.Fatalf("%d hosts, %d GPUs", c.NumHosts(), c.NumGPUs())
	}
	h, _ := c.HostByName("a100-1")
	first, _ := c.HostGPUs(h)
	if got := c.Link(first, first+7).Kind; got != topology.LinkFabric {
		t.Errorf("GPUs 0-7 of a100-1: %v, want the NVSwitch domain", got)
	}
	var static []string
	for _, g := range res.GPUs {
		if g.StaticMIG {
			static = append(static, fmt.Sprintf("%s/%d", g.Host, g.Index))
		}
	}
	if want := "a100-1/5 a100-1/6 a100-1/7 a100-mig-only/0"; strings.Join(static, " ") != want {
		t.Errorf("static MIG GPUs %v, want %s", static, want)
	}
	// In device-name order, numbers compared as numbers (gpu-5-mig-9-… before
	// gpu-5-mig-14-…, internal/devname).
	var migs []string
	for _, m := range res.MIG {
		migs = append(migs, fmt.Sprintf("%s/%d:%s@%d", m.Host, m.GPU, m.Profile, m.Start))
	}
	if want := "a100-1/5:3g.40gb@4 a100-1/5:2g.20gb@2 a100-1/5:1g.10gb@0 a100-1/6:1g.10gb@0 a100-1/6:1g.10gb@1 a100-1/7:7g.80gb@0 a100-mig-only/0:3g.40gb@0 a100-mig-only/0:3g.40gb@4"; strings.Join(migs, " ") != want {
		t.Errorf("MIG devices\n%s\nwant\n%s", strings.Join(migs, " "), want)
	}
	if id := res.Spec.Hosts[0].GPUs[5]; id.UUID != "GPU-a1000005-0000-0000-0000-000000000000" {
		t.Errorf("GPU 5 identity %+v", id)
	}
}
