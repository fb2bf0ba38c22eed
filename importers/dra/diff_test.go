package dra

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

func read(t *testing.T, file string) *Objects {
	t.Helper()
	objs, err := ReadFiles(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func build(t *testing.T, objs *Objects, opts Options) *Result {
	t.Helper()
	res, err := Build(objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Slices change: a taint moves, a node joins, another leaves. Compare
// gives the live change and the health changes, and Apply brings the
// cluster and ledger to what a fresh build gives.
func TestCompareAndApply(t *testing.T) {
	opts := Options{NetworkLabels: []string{"network.topology.kubernetes.io/rack"}}
	before := build(t, read(t, "dgx-h100.yaml"), opts)
	c, err := topology.Build(before.Spec)
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLedger(c)
	if err := before.ApplyHealth(c, l); err != nil {
		t.Fatal(err)
	}

	// The driver clears gpu-5's taint on dgx-h100-002 and taints gpu-2
	// of dgx-h100-001 NoSchedule.
	objs := read(t, "dgx-h100.yaml")
	objs.Slices[1].Spec.Devices[5].Taints = nil
	objs.Slices[0].Spec.Devices[2].Taints = []DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: "NoSchedule"}}
	next := build(t, objs, opts)
	d, err := Compare(before, next)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range d.Health {
		got = append(got, g.Host+"/"+g.Device+"="+g.Health.String())
	}
	if want := []string{"dgx-h100-001/gpu-2=draining", "dgx-h100-002/gpu-5=healthy"}; !reflect.DeepEqual(got, want) || !reflect.DeepEqual(d.Change, topology.Change{}) {
		t.Fatalf("diff %+v, health %q", d.Change, got)
	}
	if c, err = d.Apply(c, l); err != nil {
		t.Fatal(err)
	}
	if l.GPU(2).Health != topology.Draining || l.GPU(13).Health != topology.Healthy {
		t.Errorf("health after apply: %v %v", l.GPU(2).Health, l.GPU(13).Health)
	}

	// dgx-h100-003 joins (a copy of 001 under a new name and UUIDs) and
	// 002 leaves.
	before = next
	objs = read(t, "dgx-h100.yaml")
	objs.Slices[0].Spec.Devices[2].Taints = []DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "48", Effect: "NoSchedule"}}
	add := read(t, "dgx-h100.yaml").Slices[0]
	add.Name, add.Spec.NodeName, add.Spec.Pool.Name = "s3", "dgx-h100-003", "dgx-h100-003"
	for i := range add.Spec.Devices {
		u := strings.Replace(*add.Spec.Devices[i].Attributes[AttrUUID].String, "GPU-", "GPU-3", 1)
		add.Spec.Devices[i].Attributes[AttrUUID] = DeviceAttribute{String: &u}
	}
	objs.Slices = append(objs.Slices[:1], add)
	n3 := objs.Nodes[0]
	n3.Name = "dgx-h100-003"
	objs.Nodes = append(objs.Nodes, n3)
	next = build(t, objs, opts)
	if d, err = Compare(before, next); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Change.Remove, []string{"dgx-h100-002"}) || len(d.Change.Hosts) != 1 || d.Change.Hosts[0].Name != "dgx-h100-003" || len(d.Change.Templates) != 0 {
		t.Fatalf("change %+v", d.Change)
	}
	if c, err = d.Apply(c, l); err != nil {
		t.Fatal(err)
	}
	if c.NumHosts()-c.NumRemoved() != 2 {
		t.Errorf("%d hosts live", c.NumHosts()-c.NumRemoved())
	}
	h3, ok := c.HostByName("dgx-h100-003")
	if !ok {
		t.Fatal("dgx-h100-003 not added")
	}
	if g, n := c.HostGPUs(h3); n != 8 || c.Link(g, g+7).Kind != topology.LinkFabric {
		t.Errorf("new host: %d GPUs, link %v", n, c.Link(g, g+7).Kind)
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
	// Nothing changed: an empty diff.
	if d, err = Compare(next, next); err != nil || !d.Empty() {
		t.Errorf("self diff %+v %v", d, err)
	}
}

// A GB200 rack of trays with a clique of its own joins as a new
// multi-node NVLink domain; a tray joining an existing clique needs a
// rebuild.
func TestCompareCliques(t *testing.T) {
	objs := read(t, "gb200-nvl72.yaml")
	var r1 Objects
	for _, s := range objs.Slices {
		if strings.HasPrefix(s.Spec.NodeName, "gb200-r01-") {
			r1.Slices = append(r1.Slices, s)
		}
	}
	r1.Nodes = objs.Nodes
	before := build(t, &r1, Options{})
	after := build(t, objs, Options{})
	d, err := Compare(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Change.Hosts) != 18 || len(d.Change.Fabrics) != 1 || d.Change.Fabrics[0].CliqueID != 2 {
		t.Fatalf("change: %d hosts, fabrics %+v", len(d.Change.Hosts), d.Change.Fabrics)
	}
	c, err := topology.Build(before.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = d.Apply(c, topology.NewLedger(c)); err != nil {
		t.Fatal(err)
	}
	if n := len(c.DomainsAt(topology.LevelFabric)); n != 2 {
		t.Errorf("%d fabric domains", n)
	}
	// One tray short of rack 2, then the tray joins its clique.
	var short Objects
	short.Nodes = objs.Nodes
	for _, s := range objs.Slices {
		if s.Spec.NodeName != "gb200-r02-t18" {
			short.Slices = append(short.Slices, s)
		}
	}
	if _, err := Compare(build(t, &short, Options{}), after); err == nil || !strings.Contains(err.Error(), "rebuild") {
		t.Errorf("tray joining a clique: %v", err)
	}
}
