package kube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

// Import is a configuration read from Kueue, Volcano or KAI-Scheduler
// objects, as gpusched models it.
type Import struct {
	// System is "kueue", "volcano" or "kai": whose queues were read (one
	// system per configuration).
	System string
	// Queues is the queue tree. Its root is "cluster"; its leaves are the
	// queues jobs are submitted to (Kueue ClusterQueues, Volcano and KAI
	// leaf queues).
	Queues queue.Config
	// Preemption is the preemption configuration the system's settings
	// map to (gpusched has one for the whole tree; see the notes when
	// queues disagree).
	Preemption preempt.Config
	// Levels are the topology levels, outermost first, from a Kueue or
	// KAI Topology (node labels) or Volcano HyperNode tiers.
	Levels []Level
	// HyperNodes are Volcano's HyperNodes (the network tree), if any.
	HyperNodes []HyperNode
	// Flavors are Kueue's ResourceFlavors, by name.
	Flavors []Flavor
	// LocalQueues map Kueue LocalQueues (namespace/name) to leaves.
	LocalQueues []LocalQueue
	// PriorityClasses are Kueue's WorkloadPriorityClasses. They name the
	// priorities of workloads in a dump; they are not put in
	// Queues.PriorityClasses, which would refuse jobs whose priority comes
	// from a Kubernetes PriorityClass instead.
	PriorityClasses []queue.PriorityClass
	// LeafModels lists, per leaf, the GPU models of the flavors it has GPU
	// quota on, in the order Kueue tries them; a job of the leaf may use
	// only those.
	LeafModels map[string][]string
	// Notes is the mapping report: every field not read and every
	// approximation, in input order.
	Notes []Note
}

// Level is one topology level: its name in the gpusched cluster and the
// node label whose value names a node's domain at that level.
type Level struct {
	Name      string
	NodeLabel string
}

// Flavor is a Kueue ResourceFlavor.
type Flavor struct {
	Name string
	// NodeLabels select the flavor's nodes (sorted "key=value").
	NodeLabels []string
	// Model is the GPU model the labels name (nvidia.com/gpu.product or
	// cloud.google.com/gke-accelerator), or "".
	Model string
	// Topology names the Kueue Topology of the flavor, or "".
	Topology string
}

// Matches reports whether a node with these labels is one of the
// flavor's nodes.
func (f *Flavor) Matches(labels map[string]string) bool {
	for _, kv := range f.NodeLabels {
		k, v, _ := strings.Cut(kv, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

// LocalQueue is a Kueue LocalQueue and the leaf (ClusterQueue) it feeds.
type LocalQueue struct {
	Namespace, Name, Leaf string
}

// LeafFor returns the leaf a Kueue LocalQueue feeds, or "".
func (im *Import) LeafFor(namespace, name string) string {
	for _, lq := range im.LocalQueues {
		if lq.Namespace == namespace && lq.Name == name {
			return lq.Leaf
		}
	}
	return ""
}

// Report writes the mapping report, one note a line.
func (im *Import) Report() string {
	var b strings.Builder
	for _, n := range im.Notes {
		b.WriteString(n.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// File is one input file: its name (for errors) and its data.
type File struct {
	Name string
	Data []byte
}

// ReadDir reads every *.yaml, *.yml and *.json file of dir (not its
// subdirectories), in name order, with Read. dir may also be one file.
func ReadDir(dir string) (*Import, error) {
	files, err := readFiles(dir)
	if err != nil {
		return nil, err
	}
	return Read(files)
}

func readFiles(path string) ([]File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var names []string
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				names = append(names, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(names)
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no .yaml, .yml or .json files", path)
		}
	} else {
		names = []string{path}
	}
	var files []File
	for _, n := range names {
		data, err := readLimited(n)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Name: n, Data: data})
	}
	return files, nil
}

func readLimited(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxBytes {
		return nil, &Error{File: name, Err: fmt.Errorf("larger than %d bytes", MaxBytes)}
	}
	return os.ReadFile(name)
}

// Read reads the objects of files (multi-document YAML or JSON; `kubectl
// get -o yaml` Lists are expanded) and maps the queue configuration they
// hold. Objects of kinds it does not read (Pods, Nodes, Workloads and
// others) are listed in the notes. Bad input is an *Error naming the
// file, document, object, line and field.
func Read(files []File) (*Import, error) {
	var objs []object
	for _, f := range files {
		o, err := parseObjects(f.Data, f.Name)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return readObjects(objs)
}

func readObjects(objs []object) (*Import, error) {
	im := &Import{LeafModels: map[string][]string{}}
	k := &kueueConfig{}
	v := &volcanoConfig{}
	kai := &kaiConfig{}
	for i := range objs {
		o := &objs[i]
		var err error
		switch o.group() {
		case "kueue.x-k8s.io":
			err = k.add(o, im)
		case "config.kueue.x-k8s.io":
			err = k.addConfiguration(o, im)
		case "scheduling.volcano.sh", "topology.volcano.sh":
			err = v.add(o, im)
		case "scheduling.run.ai", "kai.scheduler":
			err = kai.add(o, im)
		default:
			im.Notes = append(im.Notes, o.note(Ignored, o.node, "", "%s objects are not configuration; not read here", o.kind))
		}
		if err != nil {
			return nil, err
		}
	}
	var systems []string
	if k.hasQueues() {
		systems = append(systems, "kueue")
	}
	if v.hasQueues() {
		systems = append(systems, "volcano")
	}
	if kai.hasQueues() {
		systems = append(systems, "kai")
	}
	switch len(systems) {
	case 0:
		return nil, errors.New("no queues: want Kueue ClusterQueues, Volcano Queues or KAI-Scheduler Queues")
	case 1:
	default:
		return nil, fmt.Errorf("queues of %s in one configuration; give one system's", strings.Join(systems, " and "))
	}
	im.System = systems[0]
	var err error
	switch im.System {
	case "kueue":
		err = k.build(im)
	case "volcano":
		err = v.build(im)
	case "kai":
		err = kai.build(im)
	}
	if err != nil {
		return nil, err
	}
	if len(im.Levels) == 0 {
		switch {
		case len(v.hyperNodes) > 0:
			v.levels(im)
		case len(kai.topologies) > 0:
			kai.levels(im)
		}
	}
	return im, nil
}

// levelName turns a node label into a topology level name: the part
// after the last "/", made safe ("hostname" and gpusched's built-in level
// names get a "k8s-" prefix).
func levelName(label string, taken []Level) string {
	name := label
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, name)
	switch name {
	case "", "nvlink", "fabric", "host", "node", "cluster", "hostname", "numa", "pcie", "gpu":
		name = "k8s-" + name
	}
	for slices.ContainsFunc(taken, func(l Level) bool { return l.Name == name }) {
		name += "-"
	}
	return name
}

// hostLabel is the label that names a node itself; a topology level on it
// is the host level.
const hostLabel = "kubernetes.io/hostname"

// topologyLevels maps Kueue/KAI topology levels (outermost first) to
// Levels, leaving out the host level.
func topologyLevels(o *object, labels []string, im *Import, field string) []Level {
	var out []Level
	for i, l := range labels {
		if l == hostLabel {
			if i != len(labels)-1 {
				im.Notes = append(im.Notes, o.note(Approximated, o.fieldNode(fmt.Sprintf("%s[%d]", field, i)), fmt.Sprintf("%s[%d]", field, i),
					"the hostname level is not the last; levels below it are dropped"))
				return out
			}
			continue
		}
		out = append(out, Level{Name: levelName(l, out), NodeLabel: l})
	}
	return out
}
