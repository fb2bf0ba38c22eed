package kube

import (
	"errors"
	"fmt"

	"regexp"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

// Volcano's schema (scheduling.volcano.sh/v1beta1 Queue,
// topology.volcano.sh/v1alpha1 HyperNode), the fields read.

type volcanoQueueSpec struct {
	Weight     *int32            `yaml:"weight"`
	Capability map[string]string `yaml:"capability"`
	Deserved   map[string]string `yaml:"deserved"`
	Guarantee  *struct {
		Resource map[string]string `yaml:"resource"`
	} `yaml:"guarantee"`
	Reclaimable     *bool     `yaml:"reclaimable"`
	Parent          string    `yaml:"parent"`
	Priority        *int32    `yaml:"priority"`
	ExtendClusters  yaml.Node `yaml:"extendClusters"`
	Affinity        yaml.Node `yaml:"affinity"`
	Type            string    `yaml:"type"`
	DequeueStrategy string    `yaml:"dequeueStrategy"`
}

type hyperNodeSpec struct {
	Tier     int    `yaml:"tier"`
	TierName string `yaml:"tierName"`
	Members  []struct {
		Type     string `yaml:"type"`
		Selector struct {
			ExactMatch *struct {
				Name string `yaml:"name"`
			} `yaml:"exactMatch"`
			RegexMatch *struct {
				Pattern string `yaml:"pattern"`
			} `yaml:"regexMatch"`
			LabelMatch *struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"labelMatch"`
		} `yaml:"selector"`
	} `yaml:"members"`
}

// HyperNode is a Volcano HyperNode: a network domain at a tier (1 is the
// innermost, e.g. a ToR) whose members are nodes or HyperNodes of lower
// tiers.
type HyperNode struct {
	Name string
	Tier int
	// Members select nodes (Type "Node") or HyperNodes (Type "HyperNode").
	Members []Member
}

// Member selects the members of a HyperNode: by exact name, by a regular
// expression on the name, or (nodes only) by labels.
type Member struct {
	Type   string
	Name   string
	Regexp *regexp.Regexp
	Labels map[string]string
}

// Matches reports whether the member selects an object of this name and
// labels.
func (m *Member) Matches(name string, labels map[string]string) bool {
	switch {
	case m.Name != "":
		return m.Name == name
	case m.Regexp != nil:
		return m.Regexp.MatchString(name)
	case m.Labels != nil:
		for k, v := range m.Labels {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

type volcanoQueue struct {
	o    *object
	name string
	spec volcanoQueueSpec
}

type volcanoConfig struct {
	queues     []*volcanoQueue
	hyperNodes []HyperNode
}

func (v *volcanoConfig) hasQueues() bool { return len(v.queues) > 0 }

func (v *volcanoConfig) add(o *object, im *Import) error {
	if o.meta.Name == "" {
		return o.errAt(o.node, "metadata.name", errors.New("missing"))
	}
	switch o.kind {
	case "Queue":
		q := &volcanoQueue{o: o, name: o.meta.Name}
		if err := o.decode("spec", &q.spec, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		if !q.spec.ExtendClusters.IsZero() || !q.spec.Affinity.IsZero() {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec"), "spec", "extendClusters and affinity are not modelled"))
		}
		if q.spec.Reclaimable != nil && !*q.spec.Reclaimable {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.reclaimable"), "spec.reclaimable", "reclaimable: false is not modelled per queue (gpusched reclaims from every borrowing queue)"))
		}
		if q.spec.Priority != nil {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.priority"), "spec.priority", "queue priority is not modelled; queues are ordered by weighted dominant share"))
		}
		v.queues = append(v.queues, q)
	case "HyperNode":
		var s hyperNodeSpec
		if err := o.decode("spec", &s, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		if s.Tier < 1 {
			return o.errAt(o.fieldNode("spec.tier"), "spec.tier", fmt.Errorf("tier %d; want ≥ 1", s.Tier))
		}
		h := HyperNode{Name: o.meta.Name, Tier: s.Tier}
		for i, m := range s.Members {
			f := fmt.Sprintf("spec.members[%d]", i)
			mm := Member{Type: m.Type}
			if m.Type != "Node" && m.Type != "HyperNode" {
				return o.errAt(o.fieldNode(f+".type"), f+".type", fmt.Errorf("unknown member type %q (want Node or HyperNode)", m.Type))
			}
			switch sel := m.Selector; {
			case sel.ExactMatch != nil:
				mm.Name = sel.ExactMatch.Name
			case sel.RegexMatch != nil:
				re, err := regexp.Compile(sel.RegexMatch.Pattern)
				if err != nil {
					return o.errAt(o.fieldNode(f+".selector.regexMatch.pattern"), f+".selector.regexMatch.pattern", err)
				}
				mm.Regexp = re
			case sel.LabelMatch != nil && m.Type == "Node":
				mm.Labels = sel.LabelMatch.MatchLabels
				if mm.Labels == nil {
					mm.Labels = map[string]string{}
				}
			default:
				return o.errAt(o.fieldNode(f+".selector"), f+".selector", errors.New("want exactMatch, regexMatch or (for nodes) labelMatch"))
			}
			h.Members = append(h.Members, mm)
		}
		v.hyperNodes = append(v.hyperNodes, h)
		im.HyperNodes = append(im.HyperNodes, h)
	default:
		im.Notes = append(im.Notes, o.note(Ignored, o.node, "", "Volcano %s objects are not read", o.kind))
	}
	return nil
}

// levels names one level per HyperNode tier, outermost first.
func (v *volcanoConfig) levels(im *Import) {
	tiers := map[int]bool{}
	for _, h := range v.hyperNodes {
		tiers[h.Tier] = true
	}
	var ts []int
	for t := range tiers {
		ts = append(ts, t)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ts)))
	for _, t := range ts {
		im.Levels = append(im.Levels, Level{Name: "tier" + strconv.Itoa(t)})
	}
}

// volcanoResources reads a Volcano ResourceList into gpusched units.
func volcanoResources(o *object, field string, rl map[string]string, im *Import) (map[string]int64, error) {
	out := map[string]int64{}
	var keys []string
	for k := range rl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := field + "." + k
		r, err := parseQuantity(rl[k])
		if err != nil {
			return nil, o.errAt(o.fieldNode(field), f, err)
		}
		var res string
		den := int64(1)
		switch {
		case isGPUResource(k):
			res = queue.ResourceGPU
		case k == "cpu":
			res = queue.ResourceCPU
		case k == "memory":
			res, den = queue.ResourceMemory, 1<<30
		default:
			im.Notes = append(im.Notes, o.note(Ignored, o.fieldNode(field), f, "resource %q is not modelled", k))
			continue
		}
		n, exact := scaled(r, 1, den)
		if !exact {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(field), f, "%s rounded down to %d", rl[k], n))
		}
		out[res] += n
	}
	return out, nil
}

func (v *volcanoConfig) build(im *Import) error {
	var qs []namedQueue
	var vqs []*volcanoQueue
	for _, q := range v.queues {
		if q.name == "root" {
			im.Notes = append(im.Notes, q.o.note(Approximated, nil, "", "the root queue is gpusched's root (\"cluster\"); its own quotas are left out"))
			continue
		}
		qs = append(qs, namedQueue{o: q.o, name: q.name, parent: q.spec.Parent, parentField: "spec.parent"})
		vqs = append(vqs, q)
	}
	node := func(i int) (queue.Node, error) {
		q := vqs[i]
		n := queue.Node{Name: q.name}
		if q.spec.Weight != nil {
			n.Weight = float64(*q.spec.Weight)
		}
		cap, err := volcanoResources(q.o, "spec.capability", q.spec.Capability, im)
		if err != nil {
			return n, err
		}
		des, err := volcanoResources(q.o, "spec.deserved", q.spec.Deserved, im)
		if err != nil {
			return n, err
		}
		gua := map[string]int64{}
		if q.spec.Guarantee != nil {
			if gua, err = volcanoResources(q.o, "spec.guarantee.resource", q.spec.Guarantee.Resource, im); err != nil {
				return n, err
			}
		}
		for _, r := range []string{queue.ResourceGPU, queue.ResourceCPU, queue.ResourceMemory} {
			c, hasC := cap[r]
			d, hasD := des[r]
			g, hasG := gua[r]
			if !hasC && !hasD && !hasG {
				continue
			}
			qq := queue.Quota{Resource: r}
			switch {
			case hasD:
				qq.Nominal = d
			case hasG:
				qq.Nominal = g
			}
			if hasG && g < qq.Nominal {
				// The guarantee is never lent; the rest of deserved is.
				qq.LendingLimit = queue.Limit(qq.Nominal - g)
			}
			if hasG && g > qq.Nominal {
				qq.Nominal = g
			}
			if hasC {
				qq.Max = queue.Limit(max(c, qq.Nominal))
			}
			n.Quotas = append(n.Quotas, qq)
		}
		return n, nil
	}
	tops, err := queueForest(qs, "root", node)
	if err != nil {
		return err
	}
	root := queue.Node{Name: "cluster", Children: tops}
	// Parents must hold their children's nominal quotas: a parent with
	// less gets the sum, noted.
	var fix func(n *queue.Node)
	fix = func(n *queue.Node) {
		for i := range n.Children {
			fix(&n.Children[i])
		}
		for qi := range n.Quotas {
			q := &n.Quotas[qi]
			var sum int64
			for _, c := range n.Children {
				for _, cq := range c.Quotas {
					if cq.Resource == q.Resource {
						sum += cq.Nominal
					}
				}
			}
			if sum > q.Nominal && len(n.Children) > 0 {
				im.Notes = append(im.Notes, Note{Kind: Approximated, Object: "Queue/" + n.Name, Field: "spec.deserved." + q.Resource,
					Msg: fmt.Sprintf("children deserve %d, more than the queue's %d; the queue gets %d", sum, q.Nominal, sum)})
				q.Nominal = sum
				if q.Max != nil && *q.Max < sum {
					*q.Max = sum
				}
			}
		}
	}
	fix(&root)
	if len(root.Children) == 0 {
		return errors.New("volcano: no queue below root")
	}
	im.Queues.Root = root
	im.Queues.Fairness.Policy = queue.DRF
	im.Notes = append(im.Notes, Note{Kind: Approximated, Msg: "Volcano's proportion/capacity plugins are modelled as hierarchical DRF over deserved quotas with reclaim of borrowed resources (any priority); capability is each queue's hard max"})
	im.Preemption = preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}
	return nil
}
