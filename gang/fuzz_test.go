package gang

import (
	"errors"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// FuzzNewRequest builds requests from arbitrary job values: NewRequest
// must never panic, must name the field of any error, and a request it
// accepts must place or explain (never panic) with every policy, leaving
// the ledger unchanged.
func FuzzNewRequest(f *testing.F) {
	f.Add("j", 2, 0, 8, 0, "", int64(0), int64(0), "", "tor", true, 0, 0, "host")
	f.Add("j", 4, 2, 0, 500, "", int64(1000), int64(4096), "H100-SXM5-80GB", "nvlink", false, 1, 1, "")
	f.Add("j", 3, 0, 0, 0, "1g.10gb", int64(0), int64(0), "", "spine", true, 2, 4, "cluster")
	f.Add("", 0, -1, -3, 1000, "x", int64(-1), int64(-5), "nope", "rack", true, -1, 300, "node")
	f.Add("j", 1<<20, 1, 1, 0, "", int64(0), int64(0), "", "", false, 1<<20, 0, "")
	c := fuzzCluster(f)
	l := topology.NewLedger(c)
	for g := topology.GPUID(0); int(g) < c.NumGPUs(); g += 3 {
		if err := l.AllocateGPU(g); err != nil {
			f.Fatal(err)
		}
	}
	placers := map[string]Placer{}
	for _, name := range PolicyNames() {
		placers[name] = newPolicy(f, name, c)
	}
	f.Fuzz(func(t *testing.T, id string, count, minCount, gpus, milli int, mig string, cpu, mem int64, model, level string, required bool, count2, gpus2 int, level2 string) {
		j := &workload.Job{ID: id, Groups: []workload.TaskGroup{{
			Name: "a", Count: count, MinCount: minCount, GPUs: gpus, GPUMilli: milli, MIGProfile: mig,
			CPUMilli: cpu, MemoryMiB: mem,
		}}}
		if model != "" {
			j.Groups[0].Models = []string{model}
		}
		if count2 != 0 {
			j.Groups = append(j.Groups, workload.TaskGroup{Name: "b", Count: count2, GPUs: gpus2})
		}
		if level != "" {
			j.Topology = append(j.Topology, workload.Constraint{Level: level, Required: required})
		}
		if level2 != "" {
			j.Topology = append(j.Topology, workload.Constraint{Level: level2, Required: !required})
		}
		r, err := NewRequest(c, j)
		if err != nil {
			var fe *workload.FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Msg == "" {
				t.Fatalf("error %v is not a field error", err)
			}
			return
		}
		if r.Tasks() < 1 || r.MinTasks() < 1 || r.MinTasks() > r.Tasks() {
			t.Fatalf("accepted request with %d tasks, min %d", r.Tasks(), r.MinTasks())
		}
		if r.Tasks() > 10000 {
			return // placing a huge gang is slow, not interesting
		}
		before := snap(l)
		for _, name := range PolicyNames() {
			var p Placement
			x := placers[name].Place(l, r, &p)
			if d := before.diff(snap(l)); d != "" {
				t.Fatalf("%s changed the ledger: %s", name, d)
			}
			if x == nil {
				checkPlacement(t, l, r, &p)
			} else if x.String() == "" {
				t.Fatalf("%s: empty explanation", name)
			}
		}
	})
}

// fuzzCluster is two spines of ToRs with DGX H100 and PCIe L40S hosts.
func fuzzCluster(t testing.TB) *topology.Cluster {
	t.Helper()
	ht, h, _ := topology.MachineTemplate("dgx-h100")
	lt, la, _ := topology.MachineTemplate("pcie-8gpu")
	c, err := topology.Build(topology.Spec{
		Version: topology.SpecVersion, Name: "fuzz",
		Levels:       []topology.LevelSpec{{Name: "spine"}, {Name: "tor"}},
		Accelerators: []topology.AcceleratorSpec{h, la},
		Templates:    []topology.HostTemplate{ht, lt, {Name: "cpu", CPUMilli: 64000, MemoryMiB: 262144}},
		Switches: []topology.SwitchGroup{
			{Name: "spine[1-2]", Level: "spine"},
			{Name: "tor[1-4]", Level: "tor", Parent: "spine[1-2]", PerParent: 2},
		},
		Hosts: []topology.HostGroup{
			{Name: "h[1-6]", Template: ht.Name, Parent: "tor[1-3]", PerParent: 2},
			{Name: "l[1-2]", Template: lt.Name, Parent: "tor4"},
			{Name: "c1", Template: "cpu", Parent: "tor4"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
