package topology

import "slices"

// cloneSpec returns a deep copy of s. Empty slices become nil, so a spec
// has one form whether a field was omitted or given as an empty list (and a
// cluster file round-trips to an equal Spec).
func cloneSpec(s Spec) Spec {
	out := s
	out.Levels = cloneSlice(s.Levels)
	out.Accelerators = cloneSlice(s.Accelerators)
	for i := range out.Accelerators {
		if m := out.Accelerators[i].MIG; m != nil {
			mc := *m
			mc.Profiles = cloneSlice(m.Profiles)
			for j := range mc.Profiles {
				mc.Profiles[j].Starts = cloneSlice(mc.Profiles[j].Starts)
			}
			out.Accelerators[i].MIG = &mc
		}
	}
	out.Templates = cloneSlice(s.Templates)
	for i := range out.Templates {
		t := &out.Templates[i]
		t.NUMA = cloneSlice(t.NUMA)
		for j := range t.NUMA {
			t.NUMA[j].PCIe = clonePCIe(t.NUMA[j].PCIe)
		}
		t.Fabrics = cloneSlice(t.Fabrics)
		for j := range t.Fabrics {
			t.Fabrics[j].GPUs = cloneSlice(t.Fabrics[j].GPUs)
		}
	}
	out.Switches = cloneSlice(s.Switches)
	out.Hosts = cloneSlice(s.Hosts)
	for i := range out.Hosts {
		out.Hosts[i].GPUs = cloneSlice(out.Hosts[i].GPUs)
	}
	out.Fabrics = cloneSlice(s.Fabrics)
	out.Live = cloneSlice(s.Live)
	for i := range out.Live {
		out.Live[i] = cloneChange(out.Live[i])
	}
	return out
}

// cloneChange returns a deep copy of ch (empty slices become nil).
func cloneChange(ch Change) Change {
	s := cloneSpec(Spec{Templates: ch.Templates, Switches: ch.Switches, Hosts: ch.Hosts, Fabrics: ch.Fabrics})
	return Change{Remove: cloneSlice(ch.Remove), Templates: s.Templates, Switches: s.Switches, Hosts: s.Hosts, Fabrics: s.Fabrics}
}

// cloneSlice is slices.Clone, except that it returns nil for an empty slice.
func cloneSlice[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func clonePCIe(in []PCIeSpec) []PCIeSpec {
	out := cloneSlice(in)
	for i := range out {
		out[i].GPUs = cloneSlice(out[i].GPUs)
		out[i].Switches = clonePCIe(out[i].Switches)
	}
	return out
}
