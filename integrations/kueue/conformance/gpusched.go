package conformance

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/importers/kube"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Import reads a scenario's configuration with package importers/kube.
func Import(s *Scenario) (*kube.Import, error) {
	return kube.Read([]kube.File{{Name: s.Name + ".yaml", Data: []byte(s.Config + s.LocalQueues())}})
}

// cluster builds a cluster that holds every quota of the tree: 8-GPU
// hosts of each model the quotas name ("GPU" for the plain gpu resource),
// as many as the root's nominal quota needs. Kueue without
// topology-aware scheduling admits by quota alone; with one-GPU pods and
// capacity equal to the quotas, placement never decides here either.
func cluster(im *kube.Import) (*topology.Cluster, error) {
	spec := &topology.Spec{Version: topology.SpecVersion, Name: "conformance"}
	for _, qt := range im.Queues.Root.Quotas {
		model := "GPU"
		if strings.HasPrefix(qt.Resource, queue.ResourceGPUModelPrefix) {
			model = strings.TrimPrefix(qt.Resource, queue.ResourceGPUModelPrefix)
		} else if qt.Resource != queue.ResourceGPU {
			continue
		}
		hosts := max(1, int((qt.Nominal+7)/8))
		t := fmt.Sprintf("t%d", len(spec.Templates))
		spec.Accelerators = append(spec.Accelerators, topology.AcceleratorSpec{Model: model})
		spec.Templates = append(spec.Templates, topology.HostTemplate{Name: t, CPUMilli: 64000, MemoryMiB: 512 << 10, Accelerator: model, GPUs: 8})
		spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: fmt.Sprintf("%s-[1-%d]", t, hosts), Template: t})
		if hosts == 1 {
			spec.Hosts[len(spec.Hosts)-1].Name = t + "-1"
		}
	}
	return topology.Build(*spec)
}

// RunGpusched plays a scenario on a gpusched Scheduler built from the
// imported configuration, and returns its observation after every step.
// Each step's submissions arrive a second apart, in order; then cycles run
// (victims stopping at once) until nothing changes.
func RunGpusched(s *Scenario) ([]Observation, error) {
	im, err := Import(s)
	if err != nil {
		return nil, err
	}
	c, err := cluster(im)
	if err != nil {
		return nil, err
	}
	pre, err := gpusched.NewPlanPreemptor(im.Preemption, 0)
	if err != nil {
		return nil, err
	}
	sched, err := gpusched.New(gpusched.Config{Cluster: c, Queues: im.Queues, Preemptor: pre})
	if err != nil {
		return nil, err
	}
	modelFlavor := map[string]string{}
	for _, f := range im.Flavors {
		modelFlavor[f.Model] = f.Name
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	running := map[string]bool{}
	flavors := map[string]string{}
	var preempted, never []string
	var out []Observation
	for _, st := range s.Steps {
		for _, w := range st.Submit {
			now = now.Add(time.Second)
			leaf := im.LeafFor(Namespace, w.Queue)
			job := workload.Job{ID: w.Name, Queue: leaf, Priority: w.Priority,
				Groups: []workload.TaskGroup{{Count: w.Pods, GPUs: w.GPUs, Models: im.LeafModels[leaf]}}}
			if err := sched.Submit(job, now); err != nil {
				if errors.Is(err, gpusched.ErrNeverFits) {
					never = append(never, w.Name)
					continue
				}
				return nil, err
			}
			if err := settle(sched, &now, c, running, flavors, modelFlavor, &preempted); err != nil {
				return nil, err
			}
		}
		for _, name := range st.Finish {
			now = now.Add(time.Second)
			if err := sched.Finished(name, now); err != nil {
				return nil, err
			}
			delete(running, name)
			delete(flavors, name)
		}
		if err := settle(sched, &now, c, running, flavors, modelFlavor, &preempted); err != nil {
			return nil, err
		}
		obs := Observation{Flavors: map[string]string{}, Borrowed: map[string]int64{}, Preempted: slices.Clone(preempted), Never: slices.Clone(never)}
		for id := range running {
			obs.Admitted = append(obs.Admitted, id)
			obs.Flavors[id] = flavors[id]
		}
		sort.Strings(obs.Admitted)
		for _, v := range sched.Queues() {
			if !slices.Contains(s.Queues, v.Queue) {
				continue
			}
			var b float64
			for _, r := range v.Resources {
				if r.Resource == queue.ResourceGPU || strings.HasPrefix(r.Resource, queue.ResourceGPUModelPrefix) {
					b += r.Borrowed
				}
			}
			if b != 0 {
				obs.Borrowed[v.Queue] = int64(b)
			}
		}
		out = append(out, obs)
	}
	return out, nil
}

// settle runs cycles until nothing starts or stops.
func settle(s *gpusched.Scheduler, now *time.Time, c *topology.Cluster, running map[string]bool, flavors, modelFlavor map[string]string, preempted *[]string) error {
	for range 50 {
		d := s.Schedule(*now)
		if len(d.Bindings) == 0 && len(d.Preemptions) == 0 {
			return nil
		}
		for _, b := range d.Bindings {
			if err := s.Started(b.Job, *now); err != nil {
				return err
			}
			running[b.Job] = true
			flavors[b.Job] = ""
			if b.Placement != nil {
				for _, cl := range b.Placement.Claims {
					for _, g := range cl.GPUs {
						m := c.Model(c.GPU(g.GPU).Model).Model
						f, ok := modelFlavor[m]
						if !ok {
							f = modelFlavor[""]
						}
						flavors[b.Job] = f
					}
				}
			}
		}
		for _, p := range d.Preemptions {
			if err := s.Preempted(p.Job, *now); err != nil {
				return err
			}
			delete(running, p.Job)
			delete(flavors, p.Job)
			*preempted = append(*preempted, p.Job)
		}
		*now = now.Add(time.Second)
	}
	return errors.New("gpusched did not settle in 50 cycles")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
