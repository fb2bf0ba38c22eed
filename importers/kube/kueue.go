package kube

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

// Kueue's schema, the fields read (kueue.x-k8s.io v1beta1 and v1beta2; the
// v1beta1 "cohort" field of a ClusterQueue is v1beta2's "cohortName").

type kueueResourceGroup struct {
	CoveredResources []string      `yaml:"coveredResources"`
	Flavors          []kueueFlavor `yaml:"flavors"`
}

type kueueFlavor struct {
	Name      string          `yaml:"name"`
	Resources []kueueResource `yaml:"resources"`
}

type kueueResource struct {
	Name           string  `yaml:"name"`
	NominalQuota   string  `yaml:"nominalQuota"`
	BorrowingLimit *string `yaml:"borrowingLimit"`
	LendingLimit   *string `yaml:"lendingLimit"`
}

type kueueFairSharing struct {
	Weight *string `yaml:"weight"`
}

type kueuePreemption struct {
	ReclaimWithinCohort string `yaml:"reclaimWithinCohort"`
	WithinClusterQueue  string `yaml:"withinClusterQueue"`
	BorrowWithinCohort  *struct {
		Policy               string `yaml:"policy"`
		MaxPriorityThreshold *int32 `yaml:"maxPriorityThreshold"`
	} `yaml:"borrowWithinCohort"`
}

type kueueCQSpec struct {
	ResourceGroups          []kueueResourceGroup `yaml:"resourceGroups"`
	Cohort                  string               `yaml:"cohort"`
	CohortName              string               `yaml:"cohortName"`
	QueueingStrategy        string               `yaml:"queueingStrategy"`
	NamespaceSelector       yaml.Node            `yaml:"namespaceSelector"`
	FlavorFungibility       yaml.Node            `yaml:"flavorFungibility"`
	Preemption              *kueuePreemption     `yaml:"preemption"`
	AdmissionChecks         yaml.Node            `yaml:"admissionChecks"`
	AdmissionChecksStrategy yaml.Node            `yaml:"admissionChecksStrategy"`
	StopPolicy              string               `yaml:"stopPolicy"`
	FairSharing             *kueueFairSharing    `yaml:"fairSharing"`
	AdmissionScope          yaml.Node            `yaml:"admissionScope"`
}

type kueueCohortSpec struct {
	Parent         string               `yaml:"parent"` // v1alpha1
	ParentName     string               `yaml:"parentName"`
	ResourceGroups []kueueResourceGroup `yaml:"resourceGroups"`
	FairSharing    *kueueFairSharing    `yaml:"fairSharing"`
}

type kueueFlavorSpec struct {
	NodeLabels   map[string]string `yaml:"nodeLabels"`
	NodeTaints   yaml.Node         `yaml:"nodeTaints"`
	Tolerations  yaml.Node         `yaml:"tolerations"`
	TopologyName string            `yaml:"topologyName"`
}

type topologySpec struct {
	Levels []struct {
		NodeLabel string `yaml:"nodeLabel"`
	} `yaml:"levels"`
}

type kueueLocalQueueSpec struct {
	ClusterQueue string    `yaml:"clusterQueue"`
	StopPolicy   string    `yaml:"stopPolicy"`
	FairSharing  yaml.Node `yaml:"fairSharing"`
}

// kueueNode is a ClusterQueue or a Cohort while the tree is built.
type kueueNode struct {
	o        *object
	name     string // as in Kueue
	cohort   bool
	parent   string
	groups   []kueueResourceGroup
	fair     *kueueFairSharing
	strategy string
	pre      *kueuePreemption
	children []*kueueNode
	nodeName string // in the gpusched tree
	implicit bool   // a cohort named but not defined
}

type kueueConfig struct {
	cqs, cohorts []*kueueNode
	flavors      map[string]*Flavor
	topologies   map[string][]Level
	topoObjs     map[string]*object
	fairSharing  bool
}

func (k *kueueConfig) hasQueues() bool { return len(k.cqs) > 0 }

func (k *kueueConfig) add(o *object, im *Import) error {
	if o.meta.Name == "" && o.kind != "Workload" {
		return o.errAt(o.node, "metadata.name", errors.New("missing"))
	}
	switch o.kind {
	case "ClusterQueue":
		var s kueueCQSpec
		if err := o.decode("spec", &s, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		n := &kueueNode{o: o, name: o.meta.Name, parent: s.CohortName, groups: s.ResourceGroups, fair: s.FairSharing, strategy: s.QueueingStrategy, pre: s.Preemption}
		if n.parent == "" {
			n.parent = s.Cohort
		}
		switch s.QueueingStrategy {
		case "", "BestEffortFIFO", "StrictFIFO":
		default:
			return o.errAt(o.fieldNode("spec.queueingStrategy"), "spec.queueingStrategy", fmt.Errorf("unknown strategy %q (want BestEffortFIFO or StrictFIFO)", s.QueueingStrategy))
		}
		for _, f := range []struct {
			field string
			n     *yaml.Node
			msg   string
		}{
			{"spec.namespaceSelector", &s.NamespaceSelector, "every namespace may submit: gpusched queues have no namespace selector"},
			{"spec.flavorFungibility", &s.FlavorFungibility, "gpusched places a job on any model its queue has quota for (Kueue's default whenCanBorrow: MayStopSearch, whenCanPreempt: TryNextFlavor is close)"},
			{"spec.admissionChecks", &s.AdmissionChecks, "admission checks are not modelled: admission is immediate"},
			{"spec.admissionChecksStrategy", &s.AdmissionChecksStrategy, "admission checks are not modelled: admission is immediate"},
			{"spec.admissionScope", &s.AdmissionScope, "admission fair sharing is not modelled"},
		} {
			if !f.n.IsZero() {
				im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(f.field), f.field, "%s", f.msg))
			}
		}
		if s.StopPolicy != "" && s.StopPolicy != "None" {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.stopPolicy"), "spec.stopPolicy", "stopPolicy %s not modelled: the queue stays open", s.StopPolicy))
		}
		if s.Preemption != nil && s.Preemption.BorrowWithinCohort != nil && s.Preemption.BorrowWithinCohort.Policy != "" && s.Preemption.BorrowWithinCohort.Policy != "Never" {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.preemption.borrowWithinCohort"), "spec.preemption.borrowWithinCohort",
				"preempting other queues' jobs while borrowing is not modelled (policy %s); a borrowing job only reclaims nothing", s.Preemption.BorrowWithinCohort.Policy))
		}
		k.cqs = append(k.cqs, n)
	case "Cohort":
		var s kueueCohortSpec
		if err := o.decode("spec", &s, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		n := &kueueNode{o: o, name: o.meta.Name, cohort: true, parent: s.ParentName, groups: s.ResourceGroups, fair: s.FairSharing}
		if n.parent == "" {
			n.parent = s.Parent
		}
		k.cohorts = append(k.cohorts, n)
	case "ResourceFlavor":
		var s kueueFlavorSpec
		if err := o.decode("spec", &s, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		f := &Flavor{Name: o.meta.Name, Topology: s.TopologyName}
		for key, v := range s.NodeLabels {
			f.NodeLabels = append(f.NodeLabels, key+"="+v)
		}
		sort.Strings(f.NodeLabels)
		f.Model = modelOf(s.NodeLabels)
		if !s.NodeTaints.IsZero() || !s.Tolerations.IsZero() {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec"), "spec.nodeTaints", "taints and tolerations are not modelled: the flavor's nodes take any job of its queues"))
		}
		if k.flavors == nil {
			k.flavors = map[string]*Flavor{}
		}
		if _, dup := k.flavors[f.Name]; dup {
			return o.errAt(o.fieldNode("metadata.name"), "metadata.name", fmt.Errorf("a ResourceFlavor named %q is defined twice", f.Name))
		}
		k.flavors[f.Name] = f
		im.Flavors = append(im.Flavors, *f)
	case "Topology":
		levels, err := readTopology(o, im)
		if err != nil {
			return err
		}
		if k.topologies == nil {
			k.topologies, k.topoObjs = map[string][]Level{}, map[string]*object{}
		}
		k.topologies[o.meta.Name] = levels
		k.topoObjs[o.meta.Name] = o
	case "LocalQueue":
		var s kueueLocalQueueSpec
		if err := o.decode("spec", &s, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		if s.ClusterQueue == "" {
			return o.errAt(o.fieldNode("spec"), "spec.clusterQueue", errors.New("missing"))
		}
		ns := o.meta.Namespace
		if ns == "" {
			ns = "default"
		}
		im.LocalQueues = append(im.LocalQueues, LocalQueue{Namespace: ns, Name: o.meta.Name, Leaf: s.ClusterQueue})
		if !s.FairSharing.IsZero() {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.fairSharing"), "spec.fairSharing", "admission fair sharing between LocalQueues is not modelled"))
		}
	case "WorkloadPriorityClass":
		v := mapValue(o.node, "value")
		if v == nil {
			return o.errAt(o.node, "value", errors.New("missing"))
		}
		val, err := strconv.ParseInt(v.Value, 10, 32)
		if err != nil {
			return o.errAt(v, "value", fmt.Errorf("not an int32: %q", v.Value))
		}
		o.topKeys(&im.Notes, "value", "description")
		im.PriorityClasses = append(im.PriorityClasses, queue.PriorityClass{Name: o.meta.Name, Value: int32(val)})
	default:
		im.Notes = append(im.Notes, o.note(Ignored, o.node, "", "Kueue %s objects are not read (admission checks, MultiKueue and provisioning are not modelled; Workloads belong in a dump)", o.kind))
	}
	return nil
}

// addConfiguration reads a Kueue manager Configuration: only whether fair
// sharing is on.
func (k *kueueConfig) addConfiguration(o *object, im *Import) error {
	if o.kind != "Configuration" {
		im.Notes = append(im.Notes, o.note(Ignored, o.node, "", "%s objects are not read", o.kind))
		return nil
	}
	for i := 0; i+1 < len(o.node.Content); i += 2 {
		key := o.node.Content[i]
		switch key.Value {
		case "apiVersion", "kind", "metadata":
		case "fairSharing":
			v := o.node.Content[i+1]
			if v.Tag == "!!null" {
				continue
			}
			// v1beta1 had fairSharing.enable; v1beta2 turns it on by
			// its presence.
			if en := mapValue(v, "enable"); en != nil && en.Value != "true" {
				continue
			}
			k.fairSharing = true
		default:
			im.Notes = append(im.Notes, o.note(Ignored, key, key.Value, "manager setting not modelled"))
		}
	}
	return nil
}

// modelOf returns the GPU model node labels name.
func modelOf(labels map[string]string) string {
	for _, l := range []string{"nvidia.com/gpu.product", "cloud.google.com/gke-accelerator", "amd.com/gpu.product-name"} {
		if v := labels[l]; v != "" {
			return v
		}
	}
	return ""
}

// isGPUResource reports whether a Kubernetes resource name counts GPUs.
func isGPUResource(name string) bool {
	return name == "nvidia.com/gpu" || name == "amd.com/gpu" || strings.HasSuffix(name, "/gpu")
}

// quotaSum adds up the quotas of one gpusched resource at one node.
type quotaSum struct {
	resource string
	nominal  *big.Rat
	borrow   *big.Rat // nil: no limit
	lend     *big.Rat // nil: all of nominal
	noBorrow bool     // some part has no borrowing limit
	hasLend  bool     // some part has a lending limit
	parts    int
	field    string // first field, for notes
}

// nodeQuotas gathers a node's quotas per gpusched resource.
type nodeQuotas struct {
	sums []*quotaSum
}

func (q *nodeQuotas) get(res, field string) *quotaSum {
	for _, s := range q.sums {
		if s.resource == res {
			return s
		}
	}
	s := &quotaSum{resource: res, nominal: new(big.Rat), borrow: new(big.Rat), lend: new(big.Rat), field: field}
	q.sums = append(q.sums, s)
	return s
}

// add charges one (flavor, resource) quota.
func (s *quotaSum) add(nominal, borrow, lend *big.Rat) {
	s.parts++
	s.nominal.Add(s.nominal, nominal)
	if borrow == nil {
		s.noBorrow = true
	} else {
		s.borrow.Add(s.borrow, borrow)
	}
	if lend == nil {
		s.lend.Add(s.lend, nominal)
	} else {
		s.hasLend = true
		s.lend.Add(s.lend, lend)
	}
}

// kueueQuotas reads a node's resource groups.
func (k *kueueConfig) kueueQuotas(n *kueueNode, im *Import) (*nodeQuotas, []string, error) {
	o := n.o
	q := &nodeQuotas{}
	var models []string
	for gi, g := range n.groups {
		for fi, fl := range g.Flavors {
			ff := fmt.Sprintf("spec.resourceGroups[%d].flavors[%d]", gi, fi)
			f := k.flavors[fl.Name]
			if f == nil {
				im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(ff+".name"), ff+".name", "ResourceFlavor %q not given; taken as a flavor of any node without a GPU model", fl.Name))
				f = &Flavor{Name: fl.Name}
			}
			for ri, r := range fl.Resources {
				rf := fmt.Sprintf("%s.resources[%d]", ff, ri)
				if g.CoveredResources != nil && !slices.Contains(g.CoveredResources, r.Name) {
					return nil, nil, o.errAt(o.fieldNode(rf+".name"), rf+".name", fmt.Errorf("resource %q is not in the group's coveredResources", r.Name))
				}
				parse := func(field string, s *string) (*big.Rat, error) {
					if s == nil {
						return nil, nil
					}
					v, err := parseQuantity(*s)
					if err != nil {
						return nil, o.errAt(o.fieldNode(rf+"."+field), rf+"."+field, err)
					}
					return v, nil
				}
				nomStr := r.NominalQuota
				if nomStr == "" {
					nomStr = "0"
				}
				nom, err := parse("nominalQuota", &nomStr)
				if err != nil {
					return nil, nil, err
				}
				bl, err := parse("borrowingLimit", r.BorrowingLimit)
				if err != nil {
					return nil, nil, err
				}
				ll, err := parse("lendingLimit", r.LendingLimit)
				if err != nil {
					return nil, nil, err
				}
				if ll != nil && ll.Cmp(nom) > 0 {
					return nil, nil, o.errAt(o.fieldNode(rf+".lendingLimit"), rf+".lendingLimit", fmt.Errorf("lending limit %s above nominal quota %s", *r.LendingLimit, nomStr))
				}
				var res string
				switch {
				case isGPUResource(r.Name):
					res = queue.ResourceGPU
					if f.Model != "" {
						res = queue.ResourceGPUModelPrefix + f.Model
						if !slices.Contains(models, f.Model) {
							models = append(models, f.Model)
						}
					}
				case r.Name == "cpu":
					res = queue.ResourceCPU
				case r.Name == "memory":
					res = queue.ResourceMemory
				default:
					im.Notes = append(im.Notes, o.note(Ignored, o.fieldNode(rf+".name"), rf+".name", "resource %q is not modelled (gpusched knows GPUs, cpu and memory)", r.Name))
					continue
				}
				q.get(res, rf).add(nom, bl, ll)
			}
		}
	}
	for _, s := range q.sums {
		if s.parts > 1 {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(s.field), s.field,
				"%d flavors' quotas of %s added up into one (gpusched has per-model GPU quotas but one cpu and one memory quota per queue)", s.parts, s.resource))
		}
	}
	return q, models, nil
}

// toQuota converts a sum to gpusched units (GPUs, cores, GiB), with a
// note when it rounds.
func toQuota(s *quotaSum, o *object, im *Import) queue.Quota {
	num, den := int64(1), int64(1)
	unit := ""
	if s.resource == queue.ResourceMemory {
		den, unit = 1<<30, "GiB"
	}
	conv := func(r *big.Rat, what string) int64 {
		v, exact := scaled(r, num, den)
		if !exact {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(s.field), s.field, "%s of %s %s rounded down to %d%s", what, s.resource, r.FloatString(3), v, unit))
		}
		return v
	}
	q := queue.Quota{Resource: s.resource, Nominal: conv(s.nominal, "nominal quota")}
	if !s.noBorrow {
		q.BorrowingLimit = queue.Limit(conv(s.borrow, "borrowing limit"))
	}
	if s.hasLend {
		l := conv(s.lend, "lending limit")
		q.LendingLimit = queue.Limit(min(l, q.Nominal))
	}
	return q
}

func (k *kueueConfig) build(im *Import) error {
	nodes := map[string]*kueueNode{}
	var order []*kueueNode
	for _, n := range k.cqs {
		if _, dup := nodes[n.name]; dup {
			return n.o.errAt(n.o.fieldNode("metadata.name"), "metadata.name", fmt.Errorf("a ClusterQueue named %q is defined twice", n.name))
		}
		n.nodeName = n.name
		nodes[n.name] = n
		order = append(order, n)
	}
	cohorts := map[string]*kueueNode{}
	for _, c := range k.cohorts {
		if _, dup := cohorts[c.name]; dup {
			return c.o.errAt(c.o.fieldNode("metadata.name"), "metadata.name", fmt.Errorf("a Cohort named %q is defined twice", c.name))
		}
		cohorts[c.name] = c
	}
	// Cohorts named but not defined exist implicitly, without quota.
	ensure := func(name string, by *kueueNode) *kueueNode {
		if c := cohorts[name]; c != nil {
			return c
		}
		c := &kueueNode{o: by.o, name: name, cohort: true, implicit: true}
		cohorts[name] = c
		return c
	}
	for _, n := range k.cqs {
		if n.parent != "" {
			c := ensure(n.parent, n)
			c.children = append(c.children, n)
		}
	}
	var names []string
	for name := range cohorts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cohorts[name]
		if c.parent != "" {
			p := ensure(c.parent, c)
			p.children = append(p.children, c)
		}
	}
	// Sorted again: ensure may have added parents.
	names = names[:0]
	for name := range cohorts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cohorts[name]
		c.nodeName = name
		if _, clash := nodes[name]; clash {
			c.nodeName = "cohort-" + name
			im.Notes = append(im.Notes, c.o.note(Approximated, nil, "", "cohort %q has the name of a ClusterQueue; it is queue %q in gpusched", name, c.nodeName))
		}
		// Cycles: walk up from every cohort.
		seen := map[string]bool{}
		for p := c; p != nil && p.parent != ""; p = cohorts[p.parent] {
			if seen[p.name] {
				return c.o.errAt(c.o.fieldNode("spec.parentName"), "spec.parentName", fmt.Errorf("cohort %q is its own ancestor", name))
			}
			seen[p.name] = true
		}
	}
	var top []*kueueNode
	for _, n := range order {
		if n.parent == "" {
			top = append(top, n)
		}
	}
	for _, name := range names {
		if c := cohorts[name]; c.parent == "" {
			top = append(top, c)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].nodeName < top[j].nodeName })

	// Quotas per node, the governed resources, and preemption settings.
	quotas := map[*kueueNode]*nodeQuotas{}
	var resources []string
	all := slices.Clone(order)
	for _, name := range names {
		all = append(all, cohorts[name])
	}
	for _, n := range all {
		if n.implicit {
			quotas[n] = &nodeQuotas{}
			continue
		}
		q, models, err := k.kueueQuotas(n, im)
		if err != nil {
			return err
		}
		quotas[n] = q
		for _, s := range q.sums {
			if !slices.Contains(resources, s.resource) {
				resources = append(resources, s.resource)
			}
		}
		if !n.cohort && len(models) > 0 {
			im.LeafModels[n.nodeName] = models
		}
	}
	sort.Strings(resources)

	var subtree func(n *kueueNode) map[string]*big.Rat
	nominal := map[*kueueNode]map[string]*big.Rat{}
	subtree = func(n *kueueNode) map[string]*big.Rat {
		m := map[string]*big.Rat{}
		for _, r := range resources {
			m[r] = new(big.Rat)
		}
		for _, s := range quotas[n].sums {
			m[s.resource].Add(m[s.resource], s.nominal)
		}
		for _, c := range n.children {
			for r, v := range subtree(c) {
				m[r].Add(m[r], v)
			}
		}
		nominal[n] = m
		return m
	}
	rootSum := map[string]*big.Rat{}
	for _, r := range resources {
		rootSum[r] = new(big.Rat)
	}
	for _, t := range top {
		for r, v := range subtree(t) {
			rootSum[r].Add(rootSum[r], v)
		}
	}
	isolate := len(top) > 1
	var emit func(n *kueueNode, topLevel bool) queue.Node
	emit = func(n *kueueNode, topLevel bool) queue.Node {
		qn := queue.Node{Name: n.nodeName}
		if n.fair != nil && n.fair.Weight != nil {
			w, err := parseQuantity(*n.fair.Weight)
			if err == nil {
				f, _ := w.Float64()
				if f == 0 {
					f = 1e-6
					im.Notes = append(im.Notes, n.o.note(Approximated, n.o.fieldNode("spec.fairSharing.weight"), "spec.fairSharing.weight",
						"weight 0 (Kueue: always last) becomes 1e-6"))
				}
				qn.Weight = f
			}
		}
		for _, r := range resources {
			var s *quotaSum
			for _, x := range quotas[n].sums {
				if x.resource == r {
					s = x
				}
			}
			var q queue.Quota
			if s != nil {
				q = toQuota(s, n.o, im)
			} else {
				q = queue.Quota{Resource: r}
			}
			if n.cohort {
				// A cohort's own quota adds to what its members bring.
				q.Nominal, _ = scaledFor(r, nominal[n][r])
				if q.LendingLimit != nil {
					*q.LendingLimit = min(*q.LendingLimit, q.Nominal)
				}
			} else if s == nil {
				// Kueue admits nothing of a resource a ClusterQueue has no
				// flavor for.
				q.BorrowingLimit = queue.Limit(0)
			}
			if topLevel && isolate {
				// Separate cohort trees (and ClusterQueues in none) share
				// nothing.
				q.BorrowingLimit, q.LendingLimit = queue.Limit(0), queue.Limit(0)
			}
			if !n.cohort && n.parent == "" && !isolate {
				q.BorrowingLimit = queue.Limit(0)
			}
			qn.Quotas = append(qn.Quotas, q)
		}
		if !n.cohort {
			if n.strategy == "StrictFIFO" {
				qn.Policy.Ordering = queue.StrictFIFO
			} else {
				qn.Policy.Ordering = queue.BestEffortFIFO
			}
			return qn
		}
		kids := slices.Clone(n.children)
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].nodeName < kids[j].nodeName })
		for _, c := range kids {
			qn.Children = append(qn.Children, emit(c, false))
		}
		if len(qn.Children) == 0 {
			// A cohort without members holds quota nobody can use; a
			// gpusched inner node needs children.
			qn.Children = nil
			qn.Name = ""
		}
		return qn
	}
	root := queue.Node{Name: "cluster"}
	for _, t := range top {
		qn := emit(t, true)
		if qn.Name == "" {
			im.Notes = append(im.Notes, t.o.note(Approximated, nil, "", "cohort %q has no ClusterQueue below it; left out", t.name))
			continue
		}
		root.Children = append(root.Children, qn)
	}
	for _, r := range resources {
		v, _ := scaledFor(r, rootSum[r])
		root.Quotas = append(root.Quotas, queue.Quota{Resource: r, Nominal: v})
	}
	im.Queues.Root = root
	if k.fairSharing {
		im.Queues.Fairness.Policy = queue.Borrowed
	} else {
		im.Queues.Fairness.Policy = queue.NoFairness
	}
	im.Preemption = k.preemption(im)
	// Topology levels: the first Topology a flavor names, else the only one.
	var topo string
	for _, f := range im.Flavors {
		if f.Topology != "" {
			topo = f.Topology
			break
		}
	}
	if topo == "" && len(k.topologies) == 1 {
		for name := range k.topologies {
			topo = name
		}
	}
	if topo != "" {
		levels, ok := k.topologies[topo]
		if !ok {
			im.Notes = append(im.Notes, Note{Kind: Approximated, Msg: fmt.Sprintf("Topology %q named by a ResourceFlavor is not given; no topology levels", topo)})
		}
		im.Levels = levels
		for name, o := range k.topoObjs {
			if name != topo {
				im.Notes = append(im.Notes, o.note(Approximated, nil, "", "only one Topology is modelled (%q); this one is left out", topo))
			}
		}
	}
	return nil
}

// scaledFor converts a sum of resource r to gpusched units, rounding
// down.
func scaledFor(r string, v *big.Rat) (int64, bool) {
	if r == queue.ResourceMemory {
		return scaled(v, 1, 1<<30)
	}
	return scaled(v, 1, 1)
}

// preemption maps the ClusterQueues' preemption settings; gpusched has one
// for the whole tree, so disagreeing queues get the most common setting
// and a note.
func (k *kueueConfig) preemption(im *Import) preempt.Config {
	within := map[string]int{}
	reclaim := map[string]int{}
	for _, n := range k.cqs {
		w, r := "Never", "Never"
		if n.pre != nil {
			if n.pre.WithinClusterQueue != "" {
				w = n.pre.WithinClusterQueue
			}
			if n.pre.ReclaimWithinCohort != "" {
				r = n.pre.ReclaimWithinCohort
			}
		}
		within[w]++
		reclaim[r]++
	}
	pick := func(m map[string]int, what string) string {
		var keys []string
		for key := range m {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		best := keys[0]
		for _, key := range keys {
			if m[key] > m[best] {
				best = key
			}
		}
		if len(keys) > 1 {
			im.Notes = append(im.Notes, Note{Kind: Approximated, Field: what,
				Msg: fmt.Sprintf("ClusterQueues disagree (%s); gpusched has one setting for all queues and takes %s", counts(m, keys), best)})
		}
		return best
	}
	var cfg preempt.Config
	switch pick(within, "spec.preemption.withinClusterQueue") {
	case "LowerPriority", "LowerOrNewerEqualPriority":
		cfg.LowerPriority = preempt.WithinQueue
	default:
		cfg.LowerPriority = preempt.NeverByPriority
	}
	if within["LowerOrNewerEqualPriority"] > 0 {
		im.Notes = append(im.Notes, Note{Kind: Approximated, Field: "spec.preemption.withinClusterQueue", Msg: "LowerOrNewerEqualPriority is taken as LowerPriority"})
	}
	switch pick(reclaim, "spec.preemption.reclaimWithinCohort") {
	case "Any":
		cfg.Reclaim = preempt.ReclaimAny
	case "LowerPriority", "LowerOrNewerEqualPriority":
		cfg.Reclaim = preempt.ReclaimLowerPriority
	default:
		cfg.Reclaim = preempt.ReclaimNever
	}
	cfg.FairSharing = k.fairSharing
	return cfg
}

func counts(m map[string]int, keys []string) string {
	var parts []string
	for _, key := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", key, m[key]))
	}
	return strings.Join(parts, ", ")
}
