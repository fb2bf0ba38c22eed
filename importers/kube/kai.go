package kube

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

// KAI-Scheduler's schema (scheduling.run.ai/v2 Queue, kai.scheduler
// v1alpha1 Topology), the fields read.

type kaiResource struct {
	Quota           *float64 `yaml:"quota"`
	Limit           *float64 `yaml:"limit"`
	OverQuotaWeight *float64 `yaml:"overQuotaWeight"`
}

type kaiQueueSpec struct {
	DisplayName       string `yaml:"displayName"`
	ParentQueue       string `yaml:"parentQueue"`
	Priority          *int32 `yaml:"priority"`
	PreemptMinRuntime string `yaml:"preemptMinRuntime"`
	ReclaimMinRuntime string `yaml:"reclaimMinRuntime"`
	Resources         struct {
		GPU    *kaiResource `yaml:"gpu"`
		CPU    *kaiResource `yaml:"cpu"`
		Memory *kaiResource `yaml:"memory"`
	} `yaml:"resources"`
}

type kaiQueue struct {
	o    *object
	name string
	spec kaiQueueSpec
}

type kaiConfig struct {
	queues     []*kaiQueue
	topologies []Level
	topoObjs   []*object
}

func (k *kaiConfig) hasQueues() bool { return len(k.queues) > 0 }

func (k *kaiConfig) add(o *object, im *Import) error {
	if o.meta.Name == "" {
		return o.errAt(o.node, "metadata.name", errors.New("missing"))
	}
	switch o.kind {
	case "Queue":
		q := &kaiQueue{o: o, name: o.meta.Name}
		if err := o.decode("spec", &q.spec, &im.Notes); err != nil {
			return err
		}
		o.topKeys(&im.Notes, "spec", "status")
		if q.spec.Priority != nil {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec.priority"), "spec.priority", "queue priority is not modelled; over-quota resources go by weight"))
		}
		if q.spec.PreemptMinRuntime != "" || q.spec.ReclaimMinRuntime != "" {
			im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode("spec"), "spec.preemptMinRuntime", "minimum runtimes before preemption are per job in gpusched (workload.Job.MinRunTime), not per queue"))
		}
		k.queues = append(k.queues, q)
	case "Topology":
		levels, err := readTopology(o, im)
		if err != nil {
			return err
		}
		if len(k.topoObjs) > 0 {
			im.Notes = append(im.Notes, o.note(Approximated, nil, "", "only the first Topology is modelled"))
		} else {
			k.topologies = levels
		}
		k.topoObjs = append(k.topoObjs, o)
	default:
		im.Notes = append(im.Notes, o.note(Ignored, o.node, "", "KAI %s objects are not read", o.kind))
	}
	return nil
}

func (k *kaiConfig) levels(im *Import) { im.Levels = k.topologies }

func (k *kaiConfig) build(im *Import) error {
	qs := make([]namedQueue, len(k.queues))
	for i, q := range k.queues {
		qs[i] = namedQueue{o: q.o, name: q.name, parent: q.spec.ParentQueue, parentField: "spec.parentQueue"}
	}
	node := func(i int) (queue.Node, error) {
		q := k.queues[i]
		n := queue.Node{Name: q.name}
		for _, r := range []struct {
			name string
			res  *kaiResource
			mul  float64 // to gpusched units: GPUs, cores (KAI: millicores), GiB (KAI: MB)
		}{{queue.ResourceGPU, q.spec.Resources.GPU, 1}, {queue.ResourceCPU, q.spec.Resources.CPU, 1e-3}, {queue.ResourceMemory, q.spec.Resources.Memory, 1e6 / (1 << 30)}} {
			if r.res == nil {
				continue
			}
			f := "spec.resources." + map[string]string{queue.ResourceGPU: "gpu", queue.ResourceCPU: "cpu", queue.ResourceMemory: "memory"}[r.name]
			conv := func(field string, v float64) (int64, error) {
				x := v * r.mul
				if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1<<40 {
					return 0, q.o.errAt(q.o.fieldNode(f+"."+field), f+"."+field, fmt.Errorf("%v out of range", v))
				}
				iv := int64(math.Floor(x + 1e-9))
				if math.Abs(x-float64(iv)) > 1e-9 {
					im.Notes = append(im.Notes, q.o.note(Approximated, q.o.fieldNode(f+"."+field), f+"."+field, "%s rounded down to %d", strconv.FormatFloat(x, 'f', -1, 64), iv))
				}
				return iv, nil
			}
			qq := queue.Quota{Resource: r.name}
			has := false
			if r.res.Quota != nil && *r.res.Quota >= 0 {
				v, err := conv("quota", *r.res.Quota)
				if err != nil {
					return n, err
				}
				qq.Nominal, has = v, true
			} else if r.res.Quota != nil {
				im.Notes = append(im.Notes, q.o.note(Approximated, q.o.fieldNode(f+".quota"), f+".quota", "quota -1 (unlimited) means no guarantee here"))
			}
			if r.res.Limit != nil && *r.res.Limit >= 0 {
				v, err := conv("limit", *r.res.Limit)
				if err != nil {
					return n, err
				}
				qq.Max, has = queue.Limit(max(v, qq.Nominal)), true
			}
			if r.name == queue.ResourceGPU && r.res.OverQuotaWeight != nil {
				if *r.res.OverQuotaWeight < 0 || math.IsNaN(*r.res.OverQuotaWeight) || math.IsInf(*r.res.OverQuotaWeight, 0) {
					return n, q.o.errAt(q.o.fieldNode(f+".overQuotaWeight"), f+".overQuotaWeight", fmt.Errorf("%v; want a finite value ≥ 0", *r.res.OverQuotaWeight))
				}
				n.Weight = *r.res.OverQuotaWeight
			}
			if has {
				n.Quotas = append(n.Quotas, qq)
			}
		}
		if q.spec.Resources.CPU != nil && q.spec.Resources.CPU.OverQuotaWeight != nil || q.spec.Resources.Memory != nil && q.spec.Resources.Memory.OverQuotaWeight != nil {
			im.Notes = append(im.Notes, q.o.note(Approximated, q.o.fieldNode("spec.resources"), "spec.resources", "one weight per queue: the gpu overQuotaWeight"))
		}
		return n, nil
	}
	tops, err := queueForest(qs, "", node)
	if err != nil {
		return err
	}
	root := queue.Node{Name: "cluster", Children: tops}
	// KAI's department queues are usually the only top-level queue;
	// jobs go to leaves.
	im.Queues.Root = root
	im.Queues.Fairness.Policy = queue.DRF
	im.Notes = append(im.Notes, Note{Kind: Approximated, Msg: "KAI's fair-share division (quota first, then over-quota by weight) is modelled as hierarchical DRF with weights; reclaim takes back borrowed resources"})
	im.Preemption = preempt.Config{LowerPriority: preempt.WithinQueue, Reclaim: preempt.ReclaimAny}
	return nil
}
