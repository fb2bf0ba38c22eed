package gang

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestOracleRegressMNNVLHostTier is the minimized case of rapid seed
// 16990940366952634039 (TestBestFitAndTopologyMatchOracle/topology): an
// idle cluster of a two-host NVLink domain (8 GPUs) and a lone 4-GPU host,
// no network levels. A first 1-GPU job (fabric required, not committed)
// is tried in mn1; then a 1-GPU job whose required level is the host must
// keep out of mn1, which is still wholly free. The host tier's domain walk
// read the attempt overlay's epoch left by the previous Place call, took
// g1-1 for a host the gang had touched, and did not defer it.
func TestOracleRegressMNNVLHostTier(t *testing.T) {
	_, h100, _ := topology.MachineTemplate("dgx-h100")
	spec := topology.Spec{Version: topology.SpecVersion, Name: "regress", Accelerators: []topology.AcceleratorSpec{h100},
		Templates: []topology.HostTemplate{
			{Name: "t0", CPUMilli: 4000, MemoryMiB: 16384, GPUs: 4, Accelerator: h100.Model,
				NUMA: []topology.NUMASpec{{ID: 0, PCIe: []topology.PCIeSpec{{GPUs: []int{0, 1, 2, 3}}}}}},
			{Name: "t1", CPUMilli: 4000, MemoryMiB: 16384},
		},
		Hosts: []topology.HostGroup{
			{Name: "g0-1", Template: "t1"},
			{Name: "g1-[1-2]", Template: "t0"},
			{Name: "g2-1", Template: "t0"},
		},
		Fabrics: []topology.FabricGroup{{Name: "mn1", Kind: topology.FabricMNNVL, Hosts: "g1-[1-2]"}},
	}
	c, err := topology.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func(old int) { gatherMax = old }(gatherMax)
	gatherMax = 0
	l := topology.NewLedger(c)
	pl := newPolicy(t, "topology", c)
	r0 := mustRequest(t, c, job("j0", 1, workload.TaskGroup{GPUs: 1}, req(c.LevelName(topology.LevelFabric)), pref(c.LevelName(topology.LevelHost))))
	var p0 Placement
	if x := pl.Place(l, r0, &p0); x != nil {
		t.Fatal(x)
	}

	r := mustRequest(t, c, job("j", 1, workload.TaskGroup{GPUs: 1}, pref(c.LevelName(topology.LevelFabric)), req(c.LevelName(topology.LevelHost))))
	var p Placement
	if x := pl.Place(l, r, &p); x != nil {
		t.Fatal(x)
	}
	if got := c.DomainName(p.Domain); p.Level != topology.LevelHost || got != "g2-1" {
		t.Fatalf("placer chose %s %s, want host g2-1 (g1-1 lies in the wholly free protected NVLink domain mn1)", c.LevelName(p.Level), got)
	}
	steps := oracle{topo: true}.steps(l, r)
	if len(steps) == 0 || !steps[len(steps)-1].ok || steps[len(steps)-1].dom != p.Domain {
		t.Fatalf("oracle disagrees: %+v", steps)
	}
}
