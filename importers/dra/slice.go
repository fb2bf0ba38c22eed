package dra

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// ResourceSlice is the part of a resource.k8s.io/v1 ResourceSlice the
// importer reads, with the API's field names: the devices one driver
// publishes for one pool (usually one node).
type ResourceSlice struct {
	// Name is metadata.name.
	Name string
	// Spec is the slice's spec.
	Spec ResourceSliceSpec `yaml:"spec"`
	// File and Line say where the slice was read, for errors.
	File string `yaml:"-"`
	Line int    `yaml:"-"`
}

// ResourceSliceSpec mirrors resource.k8s.io/v1 ResourceSliceSpec.
type ResourceSliceSpec struct {
	// Driver names the DRA driver, e.g. "gpu.nvidia.com".
	Driver string `yaml:"driver"`
	// Pool is the pool the slice belongs to.
	Pool ResourcePool `yaml:"pool"`
	// NodeName is the node whose devices these are.
	NodeName string `yaml:"nodeName"`
	// AllNodes says the devices are reachable from every node (network
	// devices); the importer skips such slices.
	AllNodes bool `yaml:"allNodes"`
	// Devices are the published devices.
	Devices []Device `yaml:"devices"`
	// SharedCounters are the counter sets partitionable devices consume
	// (KEP-4815): NVIDIA's driver publishes one per MIG-capable GPU with
	// one counter per memory slice ("memory-slice-0" …).
	SharedCounters []CounterSet `yaml:"sharedCounters"`
}

// ResourcePool mirrors resource.k8s.io/v1 ResourcePool.
type ResourcePool struct {
	Name               string `yaml:"name"`
	Generation         int64  `yaml:"generation"`
	ResourceSliceCount int64  `yaml:"resourceSliceCount"`
}

// Device mirrors resource.k8s.io/v1 Device.
type Device struct {
	// Name is the device's name in its pool ("gpu-0",
	// "gpu-0-mig-1g18gb-19-3").
	Name string `yaml:"name"`
	// Attributes are keyed by attribute name; names without a domain are
	// in the driver's.
	Attributes map[string]DeviceAttribute `yaml:"attributes"`
	// Capacity is keyed by capacity name ("memory", "memorySlice3").
	Capacity map[string]DeviceCapacity `yaml:"capacity"`
	// ConsumesCounters are what the device takes from shared counter
	// sets when allocated.
	ConsumesCounters []CounterConsumption `yaml:"consumesCounters"`
	// Taints are the driver's device taints.
	Taints []DeviceTaint `yaml:"taints"`
	// AllowMultipleAllocations marks devices with consumable capacity.
	AllowMultipleAllocations *bool `yaml:"allowMultipleAllocations"`
}

// DeviceAttribute mirrors resource.k8s.io/v1 DeviceAttribute: exactly one
// of its fields is set.
type DeviceAttribute struct {
	Int     *int64  `yaml:"int"`
	Bool    *bool   `yaml:"bool"`
	String  *string `yaml:"string"`
	Version *string `yaml:"version"`
}

// DeviceCapacity mirrors resource.k8s.io/v1 DeviceCapacity.
type DeviceCapacity struct {
	// Value is a Kubernetes quantity ("80Gi").
	Value string `yaml:"value"`
}

// CounterSet mirrors resource.k8s.io/v1 CounterSet.
type CounterSet struct {
	Name     string             `yaml:"name"`
	Counters map[string]Counter `yaml:"counters"`
}

// Counter mirrors resource.k8s.io/v1 Counter.
type Counter struct {
	// Value is a Kubernetes quantity.
	Value string `yaml:"value"`
}

// CounterConsumption mirrors resource.k8s.io/v1 DeviceCounterConsumption.
type CounterConsumption struct {
	CounterSet string             `yaml:"counterSet"`
	Counters   map[string]Counter `yaml:"counters"`
}

// DeviceTaint mirrors resource.k8s.io/v1 DeviceTaint.
type DeviceTaint struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value"`
	Effect string `yaml:"effect"`
}

// Node is the part of a core/v1 Node the importer reads: its labels (GPU
// Feature Discovery's nvidia.com/gpu.clique, network levels) and its
// allocatable CPU and memory.
type Node struct {
	// Name is metadata.name.
	Name string
	// Labels are metadata.labels.
	Labels map[string]string
	// CPUMilli and MemoryMiB are status.allocatable cpu and memory; 0 when
	// absent.
	CPUMilli, MemoryMiB int64
	// File and Line say where the node was read, for errors.
	File string
	Line int
}

// Objects are the ResourceSlices and Nodes read from files.
type Objects struct {
	Slices []ResourceSlice
	Nodes  []Node
}

// An Error says which file, line and field of the input is wrong.
type Error struct {
	File  string // file name
	Line  int    // 1-based, 0 when unknown
	Field string // e.g. `slice "n1-gpu": spec.devices[2].capacity.memory`
	Msg   string
}

// Error returns "FILE:LINE: FIELD: MSG", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Field)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ReadFiles reads ResourceSlices and Nodes from YAML or JSON files (see
// Parse).
func ReadFiles(paths ...string) (*Objects, error) {
	all := &Objects{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		o, err := Parse(filepath.Base(p), data)
		if err != nil {
			return nil, err
		}
		all.Slices = append(all.Slices, o.Slices...)
		all.Nodes = append(all.Nodes, o.Nodes...)
	}
	return all, nil
}

// Parse reads ResourceSlices and Nodes from data: multi-document YAML or
// JSON, as `kubectl get resourceslices,nodes -o yaml` writes it (Lists are
// expanded). Objects of other kinds are skipped; a ResourceSlice of an API
// version other than resource.k8s.io/v1 or v1beta2 is an error, as is a
// field of the wrong type, naming the file, line and field.
func Parse(file string, data []byte) (*Objects, error) {
	out := &Objects{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, &Error{File: file, Msg: err.Error()}
		}
		if len(doc.Content) == 0 {
			continue
		}
		if err := parseObject(file, doc.Content[0], out, 0); err != nil {
			return nil, err
		}
	}
}

// parseObject reads one object (or List) node.
func parseObject(file string, n *yaml.Node, out *Objects, depth int) error {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &Error{File: file, Line: n.Line, Msg: "want a Kubernetes object (a mapping)"}
	}
	var head struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	if err := n.Decode(&head); err != nil {
		return &Error{File: file, Line: n.Line, Field: "apiVersion/kind/metadata", Msg: yamlMsg(err)}
	}
	switch {
	case strings.HasSuffix(head.Kind, "List"):
		if depth > 0 {
			return &Error{File: file, Line: n.Line, Field: "kind", Msg: "a List inside a List"}
		}
		items := mapValue(n, "items")
		if items == nil {
			return nil
		}
		if items.Kind != yaml.SequenceNode {
			return &Error{File: file, Line: items.Line, Field: "items", Msg: "want a list"}
		}
		for _, it := range items.Content {
			if err := parseObject(file, it, out, depth+1); err != nil {
				return err
			}
		}
		return nil
	case head.Kind == "ResourceSlice":
		if head.APIVersion != "resource.k8s.io/v1" && head.APIVersion != "resource.k8s.io/v1beta2" {
			return &Error{File: file, Line: n.Line, Field: "apiVersion", Msg: fmt.Sprintf("ResourceSlice of %q; want resource.k8s.io/v1 (or v1beta2, the same schema)", head.APIVersion)}
		}
		s := ResourceSlice{Name: head.Metadata.Name, File: file, Line: n.Line}
		spec := mapValue(n, "spec")
		if spec == nil {
			return &Error{File: file, Line: n.Line, Field: sliceField(s.Name, "spec"), Msg: "missing"}
		}
		if err := spec.Decode(&s.Spec); err != nil {
			return &Error{File: file, Line: errLine(err, spec.Line), Field: sliceField(s.Name, "spec"), Msg: yamlMsg(err)}
		}
		out.Slices = append(out.Slices, s)
	case head.Kind == "Node" && (head.APIVersion == "v1" || head.APIVersion == ""):
		var node struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Status struct {
				Allocatable map[string]string `yaml:"allocatable"`
			} `yaml:"status"`
		}
		if err := n.Decode(&node); err != nil {
			return &Error{File: file, Line: errLine(err, n.Line), Field: fmt.Sprintf("node %q", head.Metadata.Name), Msg: yamlMsg(err)}
		}
		nd := Node{Name: head.Metadata.Name, Labels: node.Metadata.Labels, File: file, Line: n.Line}
		for key, to := range map[string]*int64{"cpu": &nd.CPUMilli, "memory": &nd.MemoryMiB} {
			v, ok := node.Status.Allocatable[key]
			if !ok {
				continue
			}
			num, den := int64(1000), int64(1)
			if key == "memory" {
				num, den = 1, 1<<20
			}
			x, err := scaledQuantity(v, num, den)
			if err != nil {
				return &Error{File: file, Line: n.Line, Field: fmt.Sprintf("node %q: status.allocatable.%s", nd.Name, key), Msg: err.Error()}
			}
			*to = x
		}
		out.Nodes = append(out.Nodes, nd)
	}
	return nil
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func sliceField(name, field string) string {
	return fmt.Sprintf("slice %q: %s", name, field)
}

var lineRef = regexp.MustCompile(`line \d+: `)

// yamlMsg strips yaml.v3's "yaml: " prefixes and line numbers, which the
// Error carries itself.
func yamlMsg(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return lineRef.ReplaceAllString(msg, "")
}

// errLine returns the line of yaml.v3's first "line N:" in err, else def.
func errLine(err error, def int) int {
	msg := err.Error()
	i := strings.Index(msg, "line ")
	if i < 0 {
		return def
	}
	n := 0
	for _, c := range msg[i+5:] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
		if n > 1<<30 {
			return def
		}
	}
	if n == 0 {
		return def
	}
	return n
}
