package dra

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Diff is what changed between two builds from a cluster's slices: the
// live change of the cluster (topology.Cluster.Apply) and the GPUs whose
// health changed.
type Diff struct {
	// Change removes the hosts whose slices are gone and adds the new
	// ones; a host whose shape or GPUs changed is removed and added again.
	Change topology.Change
	// Health lists the GPUs of hosts kept whose health changed, with
	// their new health.
	Health []GPU
}

// Empty reports whether the diff changes nothing.
func (d Diff) Empty() bool {
	return reflect.DeepEqual(d.Change, topology.Change{}) && len(d.Health) == 0
}

// Compare returns how the cluster built from old becomes the one built
// from next. It fails for what a live change cannot express: a new GPU
// model, a template whose name now describes another shape, network
// levels that differ, or a new host joining a multi-node NVLink domain of
// hosts kept (rebuild the cluster then).
func Compare(old, next *Result) (Diff, error) {
	var d Diff
	o, n := &old.Spec, &next.Spec
	if !reflect.DeepEqual(o.Levels, n.Levels) {
		return d, fmt.Errorf("dra: the network levels changed (%v to %v); rebuild the cluster", o.Levels, n.Levels)
	}
	for _, a := range n.Accelerators {
		i := slices.IndexFunc(o.Accelerators, func(x topology.AcceleratorSpec) bool { return x.Model == a.Model })
		if i < 0 || !reflect.DeepEqual(o.Accelerators[i], a) {
			return d, fmt.Errorf("dra: GPU model %s is new or described anew; rebuild the cluster", a.Model)
		}
	}
	tmpl := func(s *topology.Spec, name string) *topology.HostTemplate {
		for i := range s.Templates {
			if s.Templates[i].Name == name {
				return &s.Templates[i]
			}
		}
		return nil
	}
	oldHosts := map[string]topology.HostGroup{}
	for _, h := range o.Hosts {
		oldHosts[h.Name] = h
	}
	newHosts := map[string]bool{}
	added := map[string]bool{}
	for _, h := range n.Hosts {
		newHosts[h.Name] = true
		oh, ok := oldHosts[h.Name]
		if ok && oh.Parent == h.Parent && reflect.DeepEqual(oh.GPUs, h.GPUs) &&
			reflect.DeepEqual(tmpl(o, oh.Template).Canonical(), tmpl(n, h.Template).Canonical()) {
			continue
		}
		if ok {
			d.Change.Remove = append(d.Change.Remove, h.Name)
		}
		added[h.Name] = true
		d.Change.Hosts = append(d.Change.Hosts, h)
		t := tmpl(n, h.Template)
		switch ot := tmpl(o, h.Template); {
		case ot == nil:
			if !slices.ContainsFunc(d.Change.Templates, func(x topology.HostTemplate) bool { return x.Name == t.Name }) {
				d.Change.Templates = append(d.Change.Templates, *t)
			}
		case !reflect.DeepEqual(*ot, *t):
			return d, fmt.Errorf("dra: template %s of host %s describes another shape than before; rebuild the cluster", t.Name, h.Name)
		}
	}
	for _, h := range o.Hosts {
		if !newHosts[h.Name] {
			d.Change.Remove = append(d.Change.Remove, h.Name)
		}
	}
	slices.Sort(d.Change.Remove)
	for _, sw := range n.Switches {
		if !slices.ContainsFunc(o.Switches, func(x topology.SwitchGroup) bool { return x.Name == sw.Name }) {
			d.Change.Switches = append(d.Change.Switches, sw)
		}
	}
	for _, f := range n.Fabrics {
		hosts, err := topology.ExpandNames(f.Hosts)
		if err != nil {
			return d, fmt.Errorf("dra: fabric %s: %v", f.Name, err)
		}
		nAdded := 0
		for _, h := range hosts {
			if added[h] {
				nAdded++
			}
		}
		switch {
		case nAdded == 0:
		case nAdded == len(hosts) && !slices.ContainsFunc(o.Fabrics, func(x topology.FabricGroup) bool { return x.Name == f.Name }):
			d.Change.Fabrics = append(d.Change.Fabrics, f)
		default:
			return d, fmt.Errorf("dra: hosts join multi-node NVLink domain %s, which has hosts already; rebuild the cluster", f.Name)
		}
	}
	before := map[string]topology.Health{}
	for _, g := range old.GPUs {
		before[fmt.Sprintf("%s/%d", g.Host, g.Index)] = g.Health
	}
	for _, g := range next.GPUs {
		if added[g.Host] {
			if g.Health != topology.Healthy {
				d.Health = append(d.Health, g)
			}
			continue
		}
		if h, ok := before[fmt.Sprintf("%s/%d", g.Host, g.Index)]; ok && h != g.Health {
			d.Health = append(d.Health, g)
		}
	}
	return d, nil
}

// Apply applies the diff to a cluster and its ledger: the live change
// (when there is one; the ledger follows the new cluster) and the health
// of the GPUs listed. It returns the cluster now in force.
func (d Diff) Apply(c *topology.Cluster, l *topology.Ledger) (*topology.Cluster, error) {
	if !reflect.DeepEqual(d.Change, topology.Change{}) {
		next, err := c.Apply(d.Change)
		if err != nil {
			return c, err
		}
		if err := l.Follow(next); err != nil {
			return c, err
		}
		c = next
	}
	return c, setHealth(c, l, d.Health, true)
}
