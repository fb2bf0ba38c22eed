package topology

import "slices"

// cloneSpec returns a deep copy of s.
func cloneSpec(s Spec) Spec {
	out := s
	out.Levels = slices.Clone(s.Levels)
	out.Accelerators = slices.Clone(s.Accelerators)
	for i := range out.Accelerators {
		if m := out.Accelerators[i].MIG; m != nil {
			mc := *m
			mc.Profiles = slices.Clone(m.Profiles)
			for j := range mc.Profiles {
				mc.Profiles[j].Starts = slices.Clone(mc.Profiles[j].Starts)
			}
			out.Accelerators[i].MIG = &mc
		}
	}
	out.Templates = slices.Clone(s.Templates)
	for i := range out.Templates {
		t := &out.Templates[i]
		t.NUMA = slices.Clone(t.NUMA)
		for j := range t.NUMA {
			t.NUMA[j].PCIe = clonePCIe(t.NUMA[j].PCIe)
		}
		t.Fabrics = slices.Clone(t.Fabrics)
		for j := range t.Fabrics {
			t.Fabrics[j].GPUs = slices.Clone(t.Fabrics[j].GPUs)
		}
	}
	out.Switches = slices.Clone(s.Switches)
	out.Hosts = slices.Clone(s.Hosts)
	for i := range out.Hosts {
		out.Hosts[i].GPUs = slices.Clone(out.Hosts[i].GPUs)
	}
	out.Fabrics = slices.Clone(s.Fabrics)
	return out
}

func clonePCIe(in []PCIeSpec) []PCIeSpec {
	out := slices.Clone(in)
	for i := range out {
		out[i].GPUs = slices.Clone(out[i].GPUs)
		out[i].Switches = clonePCIe(out[i].Switches)
	}
	return out
}
