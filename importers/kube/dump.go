package kube

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/snapshot"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// RuntimeAnnotation on a Pod or a Workload gives the job's runtime
// estimate (a Go duration such as "2h30m"); without it the estimate is
// Workload spec.maximumExecutionTimeSeconds or Pod
// spec.activeDeadlineSeconds, else unknown.
const RuntimeAnnotation = "gpusched.io/runtime"

// Labels and annotations that name a pod's queue or gang.
const (
	kueueQueueLabel    = "kueue.x-k8s.io/queue-name"
	kueuePodGroupLabel = "kueue.x-k8s.io/pod-group-name"
	volcanoQueueAnno   = "scheduling.volcano.sh/queue-name"
	volcanoGroupAnno   = "scheduling.k8s.io/group-name"
	kaiQueueLabel      = "kai.scheduler/queue"
	runaiQueueLabel    = "runai/queue"
	kaiGroupAnno       = "pod-group-name"
	jobNameLabel       = "batch.kubernetes.io/job-name"
	oldJobNameLabel    = "job-name"
	gpuProductLabel    = "nvidia.com/gpu.product"
	gpuCountLabel      = "nvidia.com/gpu.count"
)

// DumpOptions configure ReadDump.
type DumpOptions struct {
	// Now is the time of the state; zero means the latest time the dump
	// mentions (a creation, start or condition time).
	Now time.Time
	// Name names the cluster; empty means "kube".
	Name string
}

type resourceList map[string]string

type container struct {
	Name      string `yaml:"name"`
	Resources struct {
		Requests resourceList `yaml:"requests"`
		Limits   resourceList `yaml:"limits"`
	} `yaml:"resources"`
}

type podSpec struct {
	NodeName              string      `yaml:"nodeName"`
	Priority              *int32      `yaml:"priority"`
	PriorityClassName     string      `yaml:"priorityClassName"`
	SchedulerName         string      `yaml:"schedulerName"`
	Containers            []container `yaml:"containers"`
	InitContainers        []container `yaml:"initContainers"`
	ActiveDeadlineSeconds *int64      `yaml:"activeDeadlineSeconds"`
}

type condition struct {
	Type               string `yaml:"type"`
	Status             string `yaml:"status"`
	Reason             string `yaml:"reason"`
	LastTransitionTime string `yaml:"lastTransitionTime"`
}

type podStatus struct {
	Phase      string      `yaml:"phase"`
	StartTime  string      `yaml:"startTime"`
	Conditions []condition `yaml:"conditions"`
}

type nodeSpecK struct {
	Unschedulable bool `yaml:"unschedulable"`
}

type nodeStatus struct {
	Allocatable resourceList `yaml:"allocatable"`
	Capacity    resourceList `yaml:"capacity"`
	Conditions  []condition  `yaml:"conditions"`
}

type workloadSpec struct {
	QueueName         string `yaml:"queueName"`
	Priority          *int32 `yaml:"priority"`
	PriorityClassName string `yaml:"priorityClassName"`
	PriorityClassRef  *struct {
		Name string `yaml:"name"`
	} `yaml:"priorityClassRef"`
	Active                      *bool  `yaml:"active"`
	MaximumExecutionTimeSeconds *int32 `yaml:"maximumExecutionTimeSeconds"`
	PodSets                     []struct {
		Name     string `yaml:"name"`
		Count    int32  `yaml:"count"`
		MinCount *int32 `yaml:"minCount"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"podSets"`
}

type workloadStatus struct {
	Conditions []condition `yaml:"conditions"`
	Admission  *struct {
		ClusterQueue      string `yaml:"clusterQueue"`
		PodSetAssignments []struct {
			Name    string            `yaml:"name"`
			Flavors map[string]string `yaml:"flavors"`
			Count   *int32            `yaml:"count"`
		} `yaml:"podSetAssignments"`
	} `yaml:"admission"`
}

// dumpPod is a pod as read.
type dumpPod struct {
	o       *object
	spec    podSpec
	status  podStatus
	req     workload.Resources // per pod
	gpus    int
	claimed bool // taken by a Workload
}

type dumpNode struct {
	o      *object
	name   string
	labels map[string]string
	model  string
	gpus   int
	cpu    int64 // milli
	memMiB int64
	unsch  bool
	ready  bool
	used   []bool // GPUs given to jobs
	held   int    // GPUs held by pods outside any queue
}

// ReadDump reads a dump of a live cluster — `kubectl get nodes,pods -A -o
// yaml`, plus Kueue Workloads where present — and turns it, with the
// imported configuration im, into a state for package snapshot: the
// cluster (one host per Node, its GPUs from GPU Feature Discovery labels or
// allocatable nvidia.com/gpu, its place in the network from im's topology
// levels or Volcano HyperNodes), the running jobs on their nodes, and the
// pending jobs. The notes say what was approximated.
func ReadDump(files []File, im *Import, opt DumpOptions) (*snapshot.State, []Note, error) {
	var objs []object
	for _, f := range files {
		o, err := parseObjects(f.Data, f.Name)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, o...)
	}
	d := &dumpReader{im: im, nodes: map[string]*dumpNode{}}
	if err := d.read(objs); err != nil {
		return nil, nil, err
	}
	st, err := d.state(opt)
	if err != nil {
		return nil, nil, err
	}
	return st, d.notes, nil
}

// ReadDumpDir reads a dump file or every .yaml/.yml/.json file of a
// directory with ReadDump.
func ReadDumpDir(path string, im *Import, opt DumpOptions) (*snapshot.State, []Note, error) {
	files, err := readFiles(path)
	if err != nil {
		return nil, nil, err
	}
	return ReadDump(files, im, opt)
}

type dumpReader struct {
	im        *Import
	nodes     map[string]*dumpNode
	nodeOrder []*dumpNode
	pods      []*dumpPod
	wls       []*dumpWorkload
	notes     []Note
	latest    time.Time
	kinds     map[string]bool
	// placeholders are the failed hosts that hold quota beyond capacity.
	placeholders []string
}

type dumpWorkload struct {
	o      *object
	spec   workloadSpec
	status workloadStatus
}

func (d *dumpReader) time(o *object, field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, o.errAt(o.fieldNode(field), field, fmt.Errorf("bad time %q", s))
	}
	if t.After(d.latest) {
		d.latest = t
	}
	return t, nil
}

func (d *dumpReader) read(objs []object) error {
	d.kinds = map[string]bool{}
	for i := range objs {
		o := &objs[i]
		switch {
		case o.kind == "Node" && o.group() == "":
			if err := d.node(o); err != nil {
				return err
			}
		case o.kind == "Pod" && o.group() == "":
			if err := d.pod(o); err != nil {
				return err
			}
		case o.kind == "Workload" && o.group() == "kueue.x-k8s.io":
			w := &dumpWorkload{o: o}
			if err := o.decodeQuiet("spec", &w.spec); err != nil {
				return err
			}
			if err := o.decodeQuiet("status", &w.status); err != nil {
				return err
			}
			d.wls = append(d.wls, w)
			if _, err := d.time(o, "metadata.creationTimestamp", o.meta.CreationTimestamp); err != nil {
				return err
			}
			for i, c := range w.status.Conditions {
				if _, err := d.time(o, fmt.Sprintf("status.conditions[%d].lastTransitionTime", i), c.LastTransitionTime); err != nil {
					return err
				}
			}
		default:
			if !d.kinds[o.kind] {
				d.kinds[o.kind] = true
				d.notes = append(d.notes, o.note(Ignored, o.node, "", "%s objects are not part of a dump's state; left out", o.kind))
			}
		}
	}
	d.notes = append(d.notes, Note{Kind: Ignored, Msg: "of Nodes only labels, spec.unschedulable and status (allocatable, capacity, Ready) are read; of Pods their node, priority, resource requests, phase, start and deadline; of Workloads their queue, priority, pod sets, admission and conditions"})
	sort.Slice(d.nodeOrder, func(i, j int) bool { return d.nodeOrder[i].name < d.nodeOrder[j].name })
	return nil
}

// decodeQuiet decodes key of o into out without reporting unread fields
// (runtime objects carry many that say nothing about scheduling).
func (o *object) decodeQuiet(key string, out any) error {
	n := mapValue(o.node, key)
	if n == nil || n.Tag == "!!null" {
		return nil
	}
	if err := n.Decode(out); err != nil {
		return o.errAt(n, key, yamlErr(err))
	}
	return nil
}

func (d *dumpReader) node(o *object) error {
	if o.meta.Name == "" {
		return o.errAt(o.node, "metadata.name", errors.New("missing"))
	}
	if _, dup := d.nodes[o.meta.Name]; dup {
		return o.errAt(o.fieldNode("metadata.name"), "metadata.name", fmt.Errorf("node %q listed twice", o.meta.Name))
	}
	var spec nodeSpecK
	var st nodeStatus
	if err := o.decodeQuiet("spec", &spec); err != nil {
		return err
	}
	if err := o.decodeQuiet("status", &st); err != nil {
		return err
	}
	n := &dumpNode{o: o, name: o.meta.Name, labels: o.meta.Labels, unsch: spec.Unschedulable, ready: true}
	alloc := st.Allocatable
	if alloc == nil {
		alloc = st.Capacity
	}
	r, gpus, err := resources(o, "status.allocatable", alloc)
	if err != nil {
		return err
	}
	n.cpu, n.memMiB, n.gpus = r.CPUMilli, r.MemoryMiB, gpus
	if n.gpus == 0 && n.labels[gpuCountLabel] != "" {
		c, err := strconv.Atoi(n.labels[gpuCountLabel])
		if err != nil || c < 0 || c > 1024 {
			return o.errAt(o.fieldNode("metadata.labels"), "metadata.labels."+gpuCountLabel, fmt.Errorf("bad GPU count %q", n.labels[gpuCountLabel]))
		}
		n.gpus = c
	}
	if n.gpus > 1024 {
		return o.errAt(o.fieldNode("status.allocatable"), "status.allocatable", fmt.Errorf("%d GPUs on one node", n.gpus))
	}
	n.model = modelOf(n.labels)
	if n.model == "" && n.gpus > 0 {
		n.model = "GPU"
		d.notes = append(d.notes, o.note(Approximated, nil, "metadata.labels", "no %s label; its %d GPUs are of model \"GPU\"", gpuProductLabel, n.gpus))
	}
	for _, c := range st.Conditions {
		if c.Type == "Ready" && c.Status != "True" {
			n.ready = false
		}
	}
	n.used = make([]bool, n.gpus)
	d.nodes[n.name] = n
	d.nodeOrder = append(d.nodeOrder, n)
	return nil
}

// resources reads a resource list: cpu (milli), memory (MiB) and GPUs.
func resources(o *object, field string, rl resourceList) (workload.Resources, int, error) {
	var r workload.Resources
	gpus := 0
	keys := make([]string, 0, len(rl))
	for k := range rl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var q *big.Rat
		var err error
		switch {
		case k == "cpu", k == "memory", isGPUResource(k):
			q, err = parseQuantity(rl[k])
			if err != nil {
				return r, 0, o.errAt(o.fieldNode(field), field+"."+k, err)
			}
		default:
			continue
		}
		switch {
		case k == "cpu":
			v, _ := scaled(q, 1000, 1)
			r.CPUMilli += v
		case k == "memory":
			v, _ := scaled(q, 1, 1<<20)
			r.MemoryMiB += v
		default:
			v, exact := scaled(q, 1, 1)
			if !exact {
				return r, 0, o.errAt(o.fieldNode(field), field+"."+k, fmt.Errorf("fractional GPUs %q", rl[k]))
			}
			gpus += int(min(v, 1<<20))
		}
	}
	return r, gpus, nil
}

// podRequests is what one pod asks for: the sum of its containers'
// requests (limits for GPUs when no request), at least each init
// container's.
func podRequests(o *object, field string, s *podSpec) (workload.Resources, int, error) {
	var total workload.Resources
	gpus := 0
	one := func(c container, f string) (workload.Resources, int, error) {
		rl := resourceList{}
		for k, v := range c.Resources.Limits {
			if isGPUResource(k) {
				rl[k] = v
			}
		}
		for k, v := range c.Resources.Requests {
			rl[k] = v
		}
		return resources(o, f, rl)
	}
	for i, c := range s.Containers {
		r, g, err := one(c, fmt.Sprintf("%s.containers[%d].resources", field, i))
		if err != nil {
			return total, 0, err
		}
		total, gpus = total.Add(r), gpus+g
	}
	for i, c := range s.InitContainers {
		r, g, err := one(c, fmt.Sprintf("%s.initContainers[%d].resources", field, i))
		if err != nil {
			return total, 0, err
		}
		total.CPUMilli, total.MemoryMiB, gpus = max(total.CPUMilli, r.CPUMilli), max(total.MemoryMiB, r.MemoryMiB), max(gpus, g)
	}
	return total, gpus, nil
}

func (d *dumpReader) pod(o *object) error {
	p := &dumpPod{o: o}
	if o.meta.Name == "" {
		return o.errAt(o.node, "metadata.name", errors.New("missing"))
	}
	if err := o.decodeQuiet("spec", &p.spec); err != nil {
		return err
	}
	if err := o.decodeQuiet("status", &p.status); err != nil {
		return err
	}
	switch p.status.Phase {
	case "Succeeded", "Failed":
		return nil
	}
	var err error
	if p.req, p.gpus, err = podRequests(o, "spec", &p.spec); err != nil {
		return err
	}
	if _, err := d.time(o, "metadata.creationTimestamp", o.meta.CreationTimestamp); err != nil {
		return err
	}
	if _, err := d.time(o, "status.startTime", p.status.StartTime); err != nil {
		return err
	}
	d.pods = append(d.pods, p)
	return nil
}

func (p *dumpPod) ns() string {
	if p.o.meta.Namespace == "" {
		return "default"
	}
	return p.o.meta.Namespace
}

// leafOf returns the leaf queue a pod's labels and annotations name, or "".
func (d *dumpReader) leafOf(p *dumpPod) string {
	l, a := p.o.meta.Labels, p.o.meta.Annotations
	if q := l[kueueQueueLabel]; q != "" {
		if leaf := d.im.LeafFor(p.ns(), q); leaf != "" {
			return leaf
		}
		return ""
	}
	for _, q := range []string{a[volcanoQueueAnno], l[kaiQueueLabel], l[runaiQueueLabel]} {
		if q != "" && d.isLeaf(q) {
			return q
		}
	}
	return ""
}

func (d *dumpReader) isLeaf(name string) bool {
	var walk func(n *queue.Node) bool
	walk = func(n *queue.Node) bool {
		if len(n.Children) == 0 {
			return n.Name == name
		}
		for i := range n.Children {
			if walk(&n.Children[i]) {
				return true
			}
		}
		return false
	}
	return walk(&d.im.Queues.Root)
}

// gangOf names the gang a pod belongs to (namespace-qualified).
func gangOf(p *dumpPod) string {
	l, a := p.o.meta.Labels, p.o.meta.Annotations
	for _, g := range []string{a[volcanoGroupAnno], l[kueuePodGroupLabel], a[kaiGroupAnno], l[jobNameLabel], l[oldJobNameLabel]} {
		if g != "" {
			return p.ns() + "/" + g
		}
	}
	return p.ns() + "/" + p.o.meta.Name
}

// runtimeOf reads the runtime annotation.
func runtimeOf(o *object) (time.Duration, bool, error) {
	s := o.meta.Annotations[RuntimeAnnotation]
	if s == "" {
		return 0, false, nil
	}
	rt, err := time.ParseDuration(s)
	if err != nil || rt <= 0 {
		return 0, false, o.errAt(o.fieldNode("metadata.annotations"), "metadata.annotations."+RuntimeAnnotation, fmt.Errorf("bad runtime %q (want a positive Go duration such as 2h30m)", s))
	}
	return rt, true, nil
}

func (d *dumpReader) priorityOf(o *object, pri *int32, class string) int32 {
	if pri != nil {
		return *pri
	}
	for _, pc := range d.im.PriorityClasses {
		if pc.Name == class {
			return pc.Value
		}
	}
	if class != "" {
		d.notes = append(d.notes, o.note(Approximated, nil, "priorityClassName", "priority class %q not given; priority 0", class))
	}
	return 0
}

// job collects one job while the dump is read.
type dumpJob struct {
	id        string
	leaf      string
	priority  int32
	submitted time.Time
	runtime   time.Duration
	groups    []workload.TaskGroup
	running   []*dumpPod // pods on nodes, in group order
	started   time.Time
	models    []string
	o         *object
}

func (d *dumpReader) state(opt DumpOptions) (*snapshot.State, error) {
	var jobs []*dumpJob
	// Workloads first: they say what Kueue admitted.
	byOwner := map[string][]*dumpPod{}
	for _, p := range d.pods {
		for _, r := range p.o.meta.OwnerReferences {
			if r.UID != "" {
				byOwner[r.UID] = append(byOwner[r.UID], p)
			}
		}
	}
	for _, w := range d.wls {
		j, err := d.workloadJob(w, byOwner)
		if err != nil {
			return nil, err
		}
		if j != nil {
			jobs = append(jobs, j)
		}
	}
	// Then pods not taken by a Workload, grouped in gangs.
	gangs := map[string]*dumpJob{}
	var gangOrder []string
	for _, p := range d.pods {
		if p.claimed {
			continue
		}
		leaf := d.leafOf(p)
		onNode := p.spec.NodeName != "" && p.status.Phase != "Pending"
		if leaf == "" {
			if onNode && p.gpus > 0 {
				if n := d.nodes[p.spec.NodeName]; n != nil {
					n.held += p.gpus
				}
			}
			continue
		}
		id := gangOf(p)
		j := gangs[id]
		if j == nil {
			j = &dumpJob{id: id, leaf: leaf, o: p.o, models: d.im.LeafModels[leaf]}
			gangs[id] = j
			gangOrder = append(gangOrder, id)
		}
		created, _ := time.Parse(time.RFC3339, p.o.meta.CreationTimestamp)
		if j.submitted.IsZero() || created.Before(j.submitted) {
			j.submitted = created
		}
		pri := d.priorityOf(p.o, p.spec.Priority, p.spec.PriorityClassName)
		j.priority = max(j.priority, pri)
		if rt, ok, err := runtimeOf(p.o); err != nil {
			return nil, err
		} else if ok {
			j.runtime = rt
		} else if p.spec.ActiveDeadlineSeconds != nil && j.runtime == 0 {
			j.runtime = time.Duration(*p.spec.ActiveDeadlineSeconds) * time.Second
		}
		j.addPod(p, onNode)
	}
	for _, id := range gangOrder {
		j := gangs[id]
		if len(j.running) > 0 && len(j.running) < countTasks(j.groups) {
			d.notes = append(d.notes, j.o.note(Approximated, nil, "", "gang %s has %d of %d pods on nodes; its pending pods are left out (gpusched starts gangs whole)", id, len(j.running), countTasks(j.groups)))
			j.shrinkToRunning()
		}
		jobs = append(jobs, j)
	}
	for _, n := range d.nodeOrder {
		if n.held > 0 {
			d.notes = append(d.notes, n.o.note(Approximated, nil, "", "%d GPUs held by pods outside any queue are left out of the node's capacity", n.held))
		}
	}
	now := opt.Now
	if now.IsZero() {
		now = d.latest
	}
	if now.IsZero() {
		return nil, errors.New("dump: no times in it; give the state's time")
	}
	spec, err := d.cluster(opt.Name)
	if err != nil {
		return nil, err
	}
	st := &snapshot.State{Version: snapshot.Version, Now: now.UTC(), Cluster: snapshot.Cluster{Spec: spec}, Queues: d.im.Queues}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].submitted.Before(jobs[b].submitted) })
	for _, j := range jobs {
		sj, err := d.snapshotJob(j, now)
		if err != nil {
			return nil, err
		}
		st.Jobs = append(st.Jobs, sj)
	}
	for _, h := range d.placeholders {
		st.Health = append(st.Health, snapshot.Health{Host: h, State: "failed"})
	}
	for _, n := range d.nodeOrder {
		switch {
		case !n.ready:
			st.Health = append(st.Health, snapshot.Health{Host: n.name, State: "failed"})
		case n.unsch:
			st.Health = append(st.Health, snapshot.Health{Host: n.name, State: "draining"})
		}
	}
	return st, nil
}

func countTasks(gs []workload.TaskGroup) int {
	n := 0
	for _, g := range gs {
		n += g.Count
	}
	return n
}

// addPod adds a pod to a gang: a group per distinct request.
func (j *dumpJob) addPod(p *dumpPod, onNode bool) {
	gi := -1
	for i, g := range j.groups {
		if g.GPUs == p.gpus && g.CPUMilli == p.req.CPUMilli && g.MemoryMiB == p.req.MemoryMiB {
			gi = i
		}
	}
	if gi < 0 {
		j.groups = append(j.groups, workload.TaskGroup{Name: "g" + strconv.Itoa(len(j.groups)), GPUs: p.gpus, CPUMilli: p.req.CPUMilli, MemoryMiB: p.req.MemoryMiB, Models: j.models})
		gi = len(j.groups) - 1
	}
	j.groups[gi].Count++
	if onNode {
		j.running = append(j.running, p)
		if st, err := time.Parse(time.RFC3339, p.status.StartTime); err == nil && (j.started.IsZero() || st.Before(j.started)) {
			j.started = st
		}
	}
}

// shrinkToRunning keeps only the pods on nodes.
func (j *dumpJob) shrinkToRunning() {
	for i := range j.groups {
		j.groups[i].Count = 0
	}
	for _, p := range j.running {
		for i := range j.groups {
			g := &j.groups[i]
			if g.GPUs == p.gpus && g.CPUMilli == p.req.CPUMilli && g.MemoryMiB == p.req.MemoryMiB {
				g.Count++
				break
			}
		}
	}
	j.groups = slices.DeleteFunc(j.groups, func(g workload.TaskGroup) bool { return g.Count == 0 })
}

func (d *dumpReader) workloadJob(w *dumpWorkload, byOwner map[string][]*dumpPod) (*dumpJob, error) {
	o := w.o
	cond := map[string]bool{}
	for _, c := range w.status.Conditions {
		cond[c.Type] = c.Status == "True"
	}
	// Pods of the workload: those of its owner (a Job, a JobSet …).
	var pods []*dumpPod
	for _, r := range o.meta.OwnerReferences {
		pods = append(pods, byOwner[r.UID]...)
	}
	for _, p := range pods {
		p.claimed = true
	}
	if cond["Finished"] || (w.spec.Active != nil && !*w.spec.Active) {
		return nil, nil
	}
	ns := o.meta.Namespace
	if ns == "" {
		ns = "default"
	}
	leaf := d.im.LeafFor(ns, w.spec.QueueName)
	if w.status.Admission != nil && w.status.Admission.ClusterQueue != "" {
		leaf = w.status.Admission.ClusterQueue
	}
	if leaf == "" {
		d.notes = append(d.notes, o.note(Approximated, o.fieldNode("spec.queueName"), "spec.queueName", "LocalQueue %s/%s not in the configuration; workload left out", ns, w.spec.QueueName))
		return nil, nil
	}
	created, _ := time.Parse(time.RFC3339, o.meta.CreationTimestamp)
	class := w.spec.PriorityClassName
	if w.spec.PriorityClassRef != nil {
		class = w.spec.PriorityClassRef.Name
	}
	j := &dumpJob{id: ns + "/" + o.meta.Name, leaf: leaf, o: o, submitted: created, priority: d.priorityOf(o, w.spec.Priority, class), models: d.im.LeafModels[leaf]}
	if rt, ok, err := runtimeOf(o); err != nil {
		return nil, err
	} else if ok {
		j.runtime = rt
	} else if w.spec.MaximumExecutionTimeSeconds != nil {
		j.runtime = time.Duration(*w.spec.MaximumExecutionTimeSeconds) * time.Second
	}
	if len(w.spec.PodSets) == 0 {
		return nil, o.errAt(o.fieldNode("spec"), "spec.podSets", errors.New("missing"))
	}
	for i, ps := range w.spec.PodSets {
		f := fmt.Sprintf("spec.podSets[%d]", i)
		if ps.Count < 1 || ps.Count > 1<<16 {
			return nil, o.errAt(o.fieldNode(f+".count"), f+".count", fmt.Errorf("count %d out of 1..65536", ps.Count))
		}
		r, g, err := podRequests(o, f+".template.spec", &ps.Template.Spec)
		if err != nil {
			return nil, err
		}
		models := j.models
		if w.status.Admission != nil {
			for _, a := range w.status.Admission.PodSetAssignments {
				if a.Name != ps.Name {
					continue
				}
				for res, fl := range a.Flavors {
					if !isGPUResource(res) {
						continue
					}
					for _, f := range d.im.Flavors {
						if f.Name == fl && f.Model != "" {
							models = []string{f.Model}
						}
					}
				}
			}
		}
		tg := workload.TaskGroup{Name: ps.Name, Count: int(ps.Count), GPUs: g, CPUMilli: r.CPUMilli, MemoryMiB: r.MemoryMiB, Models: models}
		if ps.MinCount != nil && *ps.MinCount > 0 && *ps.MinCount < ps.Count {
			tg.MinCount = int(*ps.MinCount)
		}
		j.groups = append(j.groups, tg)
	}
	admitted := cond["Admitted"] || cond["QuotaReserved"]
	if cond["Evicted"] {
		admitted = false
	}
	var running []*dumpPod
	for _, p := range pods {
		if p.spec.NodeName != "" && p.status.Phase != "Pending" {
			running = append(running, p)
		}
	}
	if admitted && len(running) > 0 {
		j.running = running
		for _, p := range running {
			if st, err := time.Parse(time.RFC3339, p.status.StartTime); err == nil && (j.started.IsZero() || st.Before(j.started)) {
				j.started = st
			}
		}
		if len(running) != countTasks(j.groups) {
			d.notes = append(d.notes, o.note(Approximated, nil, "", "admitted with %d of %d pods on nodes; taken as running with those", len(running), countTasks(j.groups)))
			j.groupsFromPods(running)
		}
	} else if admitted {
		d.notes = append(d.notes, o.note(Approximated, nil, "", "admitted but no pod on a node yet; taken as pending (gpusched admits and places together)"))
	}
	return j, nil
}

// groupsFromPods rebuilds the groups from the pods that run.
func (j *dumpJob) groupsFromPods(pods []*dumpPod) {
	models := j.models
	if len(j.groups) > 0 {
		models = j.groups[0].Models
	}
	j.groups, j.running, j.models = nil, nil, models
	for _, p := range pods {
		j.addPod(p, true)
	}
}

func (d *dumpReader) snapshotJob(j *dumpJob, now time.Time) (snapshot.Job, error) {
	sj := snapshot.Job{Job: workload.Job{ID: j.id, Queue: j.leaf, Priority: j.priority, Groups: j.groups, Runtime: j.runtime}, Submitted: j.submitted}
	if sj.Submitted.IsZero() || sj.Submitted.After(now) {
		sj.Submitted = now
	}
	if len(j.running) == 0 {
		return sj, nil
	}
	sj.State = "running"
	sj.Started = j.started
	if sj.Started.IsZero() || sj.Started.After(now) {
		sj.Started = now
	}
	if sj.Started.Before(sj.Submitted) {
		sj.Started = sj.Submitted
	}
	// Placement: groups in order, each pod on its node; Kubernetes does
	// not record which GPUs a pod holds, so they are given in order.
	byGroup := make([][]*dumpPod, len(j.groups))
	for _, p := range j.running {
		for gi, g := range j.groups {
			if g.GPUs == p.gpus && g.CPUMilli == p.req.CPUMilli && g.MemoryMiB == p.req.MemoryMiB {
				byGroup[gi] = append(byGroup[gi], p)
				break
			}
		}
	}
	for gi, ps := range byGroup {
		for _, p := range ps {
			n := d.nodes[p.spec.NodeName]
			if n == nil {
				return sj, p.o.errAt(p.o.fieldNode("spec.nodeName"), "spec.nodeName", fmt.Errorf("node %q is not in the dump", p.spec.NodeName))
			}
			t := snapshot.Task{Group: j.groups[gi].Name, Host: n.name}
			for g := 0; g < len(n.used) && len(t.GPUs) < p.gpus; g++ {
				if !n.used[g] {
					n.used[g] = true
					t.GPUs = append(t.GPUs, g)
				}
			}
			if len(t.GPUs) < p.gpus {
				return sj, p.o.errAt(p.o.fieldNode("spec"), "spec.containers", fmt.Errorf("node %s has %d GPUs; its pods ask for more", n.name, n.gpus))
			}
			sj.Placement = append(sj.Placement, t)
		}
	}
	return sj, nil
}

// cluster builds the cluster spec: one host per node, templates by shape,
// switches from the topology levels.
func (d *dumpReader) cluster(name string) (*topology.Spec, error) {
	if len(d.nodeOrder) == 0 {
		return nil, errors.New("dump: no Nodes")
	}
	if name == "" {
		name = "kube"
	}
	spec := &topology.Spec{Version: topology.SpecVersion, Name: name}
	type shape struct {
		model    string
		gpus     int
		cpu, mem int64
	}
	templates := map[shape]string{}
	models := map[string]bool{}
	parents, err := d.parents(spec)
	if err != nil {
		return nil, err
	}
	for _, n := range d.nodeOrder {
		gpus := n.gpus
		// GPUs held by pods outside any queue are not ours to give; the
		// pods we place take the lowest indexes, so the top ones go.
		if n.held > 0 {
			gpus = max(0, gpus-n.held)
		}
		sh := shape{n.model, gpus, n.cpu, n.memMiB}
		if gpus == 0 {
			sh.model = ""
		}
		t, ok := templates[sh]
		if !ok {
			t = fmt.Sprintf("t%d", len(templates)+1)
			templates[sh] = t
			spec.Templates = append(spec.Templates, topology.HostTemplate{Name: t, CPUMilli: sh.cpu, MemoryMiB: sh.mem, Accelerator: sh.model, GPUs: sh.gpus})
			if sh.model != "" && !models[sh.model] {
				models[sh.model] = true
				spec.Accelerators = append(spec.Accelerators, topology.AcceleratorSpec{Model: sh.model, Vendor: "nvidia"})
			}
		}
		spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: n.name, Template: t, Parent: parents[n.name]})
		if gpus < len(n.used) {
			n.used = n.used[:gpus]
		}
	}
	d.placeholder(spec)
	return spec, nil
}

// placeholder adds, when the queues guarantee more of a resource than the
// nodes have (Kueue quotas are not tied to capacity; gpusched's are), a
// failed host holding the difference, so the quotas stay as written and
// no job is placed on it.
func (d *dumpReader) placeholder(spec *topology.Spec) {
	capGPU := map[string]int64{}
	var capCPU, capMem, allGPU int64
	for _, h := range spec.Hosts {
		for _, t := range spec.Templates {
			if t.Name == h.Template {
				capGPU[t.Accelerator] += int64(t.GPUs)
				allGPU += int64(t.GPUs)
				capCPU += t.CPUMilli / 1000
				capMem += t.MemoryMiB / 1024
			}
		}
	}
	need := map[string]int64{}
	root := &d.im.Queues.Root
	for _, q := range root.Quotas {
		need[q.Resource] = q.Nominal
	}
	sums := map[string]int64{}
	for _, c := range root.Children {
		for _, q := range c.Quotas {
			sums[q.Resource] += q.Nominal
		}
	}
	for r, v := range sums {
		need[r] = max(need[r], v)
	}
	var keys []string
	for r := range need {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	var extraCPU, extraMem int64
	for _, r := range keys {
		v := need[r]
		switch {
		case r == queue.ResourceCPU:
			extraCPU = max(0, v-capCPU)
		case r == queue.ResourceMemory:
			extraMem = max(0, v-capMem)
		case r == queue.ResourceGPU:
			if v > allGPU {
				d.addPlaceholder(spec, "GPU", v-allGPU)
			}
		default:
			model := r[len(queue.ResourceGPUModelPrefix):]
			if v > capGPU[model] {
				d.addPlaceholder(spec, model, v-capGPU[model])
			}
		}
	}
	if extraCPU > 0 || extraMem > 0 {
		d.addPlaceholder(spec, "", 0)
		t := &spec.Templates[len(spec.Templates)-1]
		t.CPUMilli, t.MemoryMiB = extraCPU*1000, extraMem*1024
	}
}

func (d *dumpReader) addPlaceholder(spec *topology.Spec, model string, gpus int64) {
	name := fmt.Sprintf("quota-only-%d", len(d.placeholders)+1)
	d.placeholders = append(d.placeholders, name)
	t := topology.HostTemplate{Name: name, GPUs: int(gpus), CPUMilli: 1000, MemoryMiB: 1024}
	if gpus > 0 {
		t.Accelerator = model
		if !slices.ContainsFunc(spec.Accelerators, func(a topology.AcceleratorSpec) bool { return a.Model == model }) {
			spec.Accelerators = append(spec.Accelerators, topology.AcceleratorSpec{Model: model})
		}
		d.notes = append(d.notes, Note{Kind: Approximated, Object: "Host/" + name,
			Msg: fmt.Sprintf("the queues guarantee %d more %s GPUs than the nodes have; a failed host %s holds them so the quotas stay as written", gpus, model, name)})
	} else {
		d.notes = append(d.notes, Note{Kind: Approximated, Object: "Host/" + name,
			Msg: fmt.Sprintf("the queues guarantee more cpu or memory than the nodes have; a failed host %s holds the difference", name)})
	}
	spec.Templates = append(spec.Templates, t)
	parent := ""
	if len(spec.Switches) > 0 {
		// The innermost level's first switch.
		inner := spec.Levels[len(spec.Levels)-1].Name
		for _, s := range spec.Switches {
			if s.Level == inner {
				parent = s.Name
				break
			}
		}
	}
	spec.Hosts = append(spec.Hosts, topology.HostGroup{Name: name, Template: name, Parent: parent})
}

// parents places nodes under switches, from label levels or HyperNodes,
// and fills spec.Levels and spec.Switches. It returns each node's switch.
func (d *dumpReader) parents(spec *topology.Spec) (map[string]string, error) {
	out := map[string]string{}
	levels := d.im.Levels
	if len(levels) == 0 {
		return out, nil
	}
	if len(d.im.HyperNodes) > 0 {
		return d.hyperParents(spec)
	}
	for _, l := range levels {
		spec.Levels = append(spec.Levels, topology.LevelSpec{Name: l.Name})
	}
	used := map[string]bool{}
	for _, n := range d.nodeOrder {
		used[n.name] = true
	}
	// Per level, the switch of each node: its label value, qualified by
	// its parent's name when the same value is under another parent.
	type sw struct{ name, parent string }
	known := map[string]sw{}
	for _, n := range d.nodeOrder {
		parent := ""
		for li, l := range levels {
			v := n.labels[l.NodeLabel]
			if v == "" {
				v = "no-" + l.Name
			}
			swName := v
			if s, ok := known[swName]; ok && (s.parent != parent) || used[swName] && !ok {
				swName = parent + "." + v
				if parent == "" {
					swName = l.Name + "." + v
				}
			}
			if _, ok := known[swName]; !ok {
				known[swName] = sw{swName, parent}
				used[swName] = true
				spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: swName, Level: levels[li].Name, Parent: parent})
			}
			parent = swName
		}
		out[n.name] = parent
	}
	return out, nil
}

// hyperParents builds the network from Volcano HyperNodes: a node's switch
// is the lowest-tier HyperNode that selects it; a HyperNode's parent the
// one of the next tier that selects it.
func (d *dumpReader) hyperParents(spec *topology.Spec) (map[string]string, error) {
	hs := slices.Clone(d.im.HyperNodes)
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].Tier != hs[j].Tier {
			return hs[i].Tier > hs[j].Tier
		}
		return hs[i].Name < hs[j].Name
	})
	levelOf := func(tier int) string { return "tier" + strconv.Itoa(tier) }
	var tiers []int
	for _, h := range hs {
		if !slices.Contains(tiers, h.Tier) {
			tiers = append(tiers, h.Tier)
		}
	}
	for _, t := range tiers {
		spec.Levels = append(spec.Levels, topology.LevelSpec{Name: levelOf(t)})
	}
	parentOf := map[string]string{}
	for _, h := range hs {
		for _, m := range h.Members {
			if m.Type != "HyperNode" {
				continue
			}
			for _, c := range hs {
				if c.Tier < h.Tier && m.Matches(c.Name, nil) && parentOf[c.Name] == "" {
					parentOf[c.Name] = h.Name
				}
			}
		}
	}
	// Every tier must have a switch above each lower switch: a HyperNode
	// without a parent one tier up gets a placeholder chain.
	var add func(h HyperNode) string
	added := map[string]bool{}
	add = func(h HyperNode) string {
		if added[h.Name] {
			return h.Name
		}
		added[h.Name] = true
		idx := slices.Index(tiers, h.Tier)
		parent := ""
		if idx > 0 {
			p := parentOf[h.Name]
			if p == "" {
				p = "no-" + levelOf(tiers[idx-1])
				if !added[p] {
					add(HyperNode{Name: p, Tier: tiers[idx-1]})
				}
			} else {
				for _, x := range hs {
					if x.Name == p {
						add(x)
					}
				}
			}
			parent = p
		}
		spec.Switches = append(spec.Switches, topology.SwitchGroup{Name: h.Name, Level: levelOf(h.Tier), Parent: parent})
		return h.Name
	}
	lowest := tiers[len(tiers)-1]
	out := map[string]string{}
	for _, n := range d.nodeOrder {
		for _, h := range hs {
			if h.Tier != lowest {
				continue
			}
			for _, m := range h.Members {
				if m.Type == "Node" && m.Matches(n.name, n.labels) && out[n.name] == "" {
					out[n.name] = add(h)
				}
			}
		}
		if out[n.name] == "" {
			out[n.name] = add(HyperNode{Name: "no-" + levelOf(lowest), Tier: lowest})
		}
	}
	return out, nil
}
