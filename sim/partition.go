package sim

import (
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Partition is a cluster cut into hard virtual clusters, as Philly and the
// Helios simulator run them: each VC owns whole hosts, and its jobs run
// only there. Build one with HardPartition; Restrict confines a job to
// its VC.
//
// The partition is expressed with GPU models, which every placer and the
// Scheduler's failure cache already honour: each VC's hosts get their own
// copy of their accelerator model, named MODEL@VC, and a VC's jobs accept
// only those models.
type Partition struct {
	// Spec is the partitioned cluster: one host group per host, in the
	// original order and under the original switches.
	Spec topology.Spec
	// Models lists, per VC name, the models of its hosts.
	Models map[string][]string
}

// HardPartition gives each VC of vcs, in order, the next vc.Nodes hosts
// of sp (in the order of its host groups). Hosts left over stay shared:
// jobs of no VC may run anywhere. It is an error for the VCs to need
// more hosts than sp has, or for a VC to be named twice. Hosts without
// GPUs are not partitioned.
func HardPartition(sp topology.Spec, vcs []trace.VC) (*Partition, error) {
	type host struct{ name, template, parent string }
	var hosts []host
	for gi, g := range sp.Hosts {
		names, err := topology.ExpandNames(g.Name)
		if err != nil {
			return nil, fmt.Errorf("sim: partition: hosts[%d].name: %w", gi, err)
		}
		var parents []string
		if g.Parent != "" {
			if parents, err = topology.ExpandNames(g.Parent); err != nil {
				return nil, fmt.Errorf("sim: partition: hosts[%d].parent: %w", gi, err)
			}
		}
		if len(g.GPUs) > 0 {
			return nil, fmt.Errorf("sim: partition: hosts[%d] (%s) lists GPU identities; partition a cluster without them", gi, g.Name)
		}
		per := g.PerParent
		if per == 0 && len(parents) > 0 {
			per = (len(names) + len(parents) - 1) / len(parents)
		}
		for i, n := range names {
			h := host{name: n, template: g.Template}
			if len(parents) > 0 {
				h.parent = parents[min(i/per, len(parents)-1)]
			}
			hosts = append(hosts, h)
		}
	}
	templates := map[string]topology.HostTemplate{}
	for _, t := range sp.Templates {
		templates[t.Name] = t
	}
	accels := map[string]topology.AcceleratorSpec{}
	for _, a := range sp.Accelerators {
		accels[a.Model] = a
	}
	out := topology.Spec{Version: sp.Version, Name: sp.Name + "-vcs", Levels: sp.Levels, Switches: sp.Switches,
		Accelerators: slices.Clone(sp.Accelerators), Templates: slices.Clone(sp.Templates), Fabrics: sp.Fabrics}
	p := &Partition{Models: map[string][]string{}}
	next := 0
	for vi, vc := range vcs {
		if _, dup := p.Models[vc.Name]; dup {
			return nil, fmt.Errorf("sim: partition: VC %q named twice", vc.Name)
		}
		p.Models[vc.Name] = nil
		if next+vc.Nodes > len(hosts) {
			return nil, fmt.Errorf("sim: partition: VCs need %d hosts by VC %q (#%d); the cluster has %d", next+vc.Nodes, vc.Name, vi+1, len(hosts))
		}
		for k := next; k < next+vc.Nodes; k++ {
			h := &hosts[k]
			t, ok := templates[h.template]
			if !ok || t.Accelerator == "" {
				continue
			}
			model := t.Accelerator + "@" + vc.Name
			name := t.Name + "@" + vc.Name
			if _, done := templates[name]; !done {
				a := accels[t.Accelerator]
				a.Model = model
				out.Accelerators = append(out.Accelerators, a)
				vt := t
				vt.Name, vt.Accelerator = name, model
				out.Templates = append(out.Templates, vt)
				templates[name] = vt
				p.Models[vc.Name] = append(p.Models[vc.Name], model)
			}
			h.template = name
		}
		next += vc.Nodes
	}
	for _, h := range hosts {
		out.Hosts = append(out.Hosts, topology.HostGroup{Name: h.name, Template: h.template, Parent: h.parent})
	}
	p.Spec = out
	return p, nil
}

// Restrict confines job to the hosts of VC vc by setting the models of
// its GPU groups (a group that already names models keeps those of them
// the VC has, by their base name). It reports false, changing nothing,
// when vc is not a VC of the partition. The job's groups are copied
// first, so a job shared with other runs is not changed.
func (p *Partition) Restrict(job *workload.Job, vc string) bool {
	models, ok := p.Models[vc]
	if !ok {
		return false
	}
	c := job.Clone()
	for i := range c.Groups {
		g := &c.Groups[i]
		if g.GPUs == 0 && g.GPUMilli == 0 && g.MIGProfile == "" {
			continue
		}
		if len(g.Models) == 0 {
			g.Models = slices.Clone(models)
			continue
		}
		var keep []string
		for _, m := range models {
			base := m[:len(m)-len(vc)-1]
			if slices.Contains(g.Models, base) {
				keep = append(keep, m)
			}
		}
		if keep == nil {
			keep = []string{"none@" + vc} // it accepts none of the VC's models: it cannot run
		}
		g.Models = keep
	}
	*job = c
	return true
}
