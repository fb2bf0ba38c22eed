package nvml

import (
	"testing"

	"github.com/gpusched/gpusched/topology"
)

func TestMatchPreset(t *testing.T) {
	for _, name := range topology.MachineNames() {
		tmpl, _, _ := topology.MachineTemplate(name)
		tmpl.Name, tmpl.CPUMilli, tmpl.MemoryMiB = "x", 1, 1
		if got := MatchPreset(tmpl); got != name {
			t.Errorf("MatchPreset(%s) = %q", name, got)
		}
	}
	tmpl, _, _ := topology.MachineTemplate("dgx-h100")
	tmpl.NUMA[1].CPUs = "56-111"
	if got := MatchPreset(tmpl); got != "" {
		t.Errorf("other CPUs match %q", got)
	}
	tmpl, _, _ = topology.MachineTemplate("dgx-h100")
	tmpl.Fabrics[0].BandwidthGBps = 300
	if got := MatchPreset(tmpl); got != "" {
		t.Errorf("other bandwidth matches %q", got)
	}
	// Order does not matter: the comparison is on canonical templates.
	tmpl, _, _ = topology.MachineTemplate("dgx-a100")
	tmpl.NUMA[0], tmpl.NUMA[3] = tmpl.NUMA[3], tmpl.NUMA[0]
	if got := MatchPreset(tmpl); got != "dgx-a100" {
		t.Errorf("reordered dgx-a100 matches %q", got)
	}
}

func TestResultSpec(t *testing.T) {
	r := &Result{Hostname: "cpu1", Template: topology.HostTemplate{Name: "cpu-only", CPUMilli: 64000, MemoryMiB: 1 << 18}}
	s := r.Spec()
	if len(s.Accelerators) != 0 || s.Hosts[0].GPUs != nil || s.Name != DefaultClusterName {
		t.Errorf("spec %+v", s)
	}
	if _, err := topology.Build(s); err != nil {
		t.Fatal(err)
	}
	m := FabricMembership{ClusterUUID: "u", CliqueID: 4}
	if m.DomainName() != "mnnvl-u-4" {
		t.Error(m.DomainName())
	}
}

func TestStrings(t *testing.T) {
	for got, want := range map[string]string{
		Warning{GPU: 3, Feature: FeatureNVLink, Msg: "m"}.String(): "GPU 3: nvlink: m",
		Warning{GPU: -1, Feature: FeaturePCIe, Msg: "m"}.String():  "pcie: m",
		RemoteSwitch.String():     "switch",
		RemoteKind(9).String():    "RemoteKind(9)",
		FabricInProgress.String(): "in progress",
		FabricState(7).String():   "FabricState(7)",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	var f *GPUFabric
	if f.MultiNode() {
		t.Error("nil fabric is multi-node")
	}
}
