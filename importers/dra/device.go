package dra

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/internal/devname"
	"github.com/gpusched/gpusched/internal/quantity"
	"github.com/gpusched/gpusched/topology"
)

// Attribute names, as NVIDIA's DRA driver for GPUs and Kubernetes'
// standard device attributes spell them. Names without a domain are in
// the driver's domain (gpu.nvidia.com); the importer accepts them with or
// without it.
const (
	AttrType          = "type"                            // "gpu" or "mig"
	AttrUUID          = "uuid"                            // "GPU-…", "MIG-…"
	AttrIndex         = "index"                           // the GPU's index on its node
	AttrMinor         = "minor"                           // the GPU's device minor
	AttrProductName   = "productName"                     // "NVIDIA H100 80GB HBM3"
	AttrArchitecture  = "architecture"                    // "Hopper"
	AttrCompute       = "cudaComputeCapability"           // version "9.0.0"
	AttrProfile       = "profile"                         // MIG profile, "1g.18gb+me"
	AttrParentUUID    = "parentUUID"                      // a MIG device's GPU
	AttrParentIndex   = "parentIndex"                     // a MIG device's GPU index
	AttrParentMinor   = "parentMinor"                     // a MIG device's GPU minor
	AttrCliqueID      = "cliqueId"                        // "<cluster UUID>.<clique id>", as the label below
	AttrPCIeRoot      = "resource.kubernetes.io/pcieRoot" // "pci0000:15"
	AttrPCIBusID      = "resource.kubernetes.io/pciBusID" // "0000:18:00.0"
	AttrNUMANode      = "resource.kubernetes.io/numaNode" // int
	CapacityMemory    = "memory"                          // bytes
	LabelClique       = "nvidia.com/gpu.clique"           // GPU Feature Discovery's "<cluster UUID>.<clique id>"
	memorySliceCtr    = "memory-slice-"                   // counter per MIG memory slice
	memorySliceCap    = "memorySlice"                     // capacity per MIG memory slice (static MIG devices)
	defaultDriverName = "gpu.nvidia.com"
)

// gpuDev is one GPU read from a slice.
type gpuDev struct {
	dev        *Device
	pool       string
	field      string // for errors
	file       string
	line       int
	index      int // -1 unknown
	minor      int // -1 unknown
	uuid       string
	product    string
	compute    string
	busID      string
	pcieRoot   string
	numa       int // -1 unknown
	clique     string
	memMiB     int64
	counterSet string // the set its own consumption names
	slots      int    // memory slices of its counter set, 0 unknown
	health     topology.Health
	taints     []DeviceTaint
	// static: a GPU in static MIG mode, made from its MIG devices (dev is
	// one of them; staticParents).
	static bool
}

// migDev is one MIG device read from a slice.
type migDev struct {
	dev         *Device
	pool        string
	field       string
	file        string
	line        int
	profile     string
	parentUUID  string
	parentIndex int // -1 unknown
	parentMinor int // -1 unknown
	counterSet  string
	start, size int // -1, 0 when unknown
	memMiB      int64
	uuid        string
	product     string // its GPU's productName
	pcieRoot    string
	health      topology.Health
	taints      []DeviceTaint
}

// attrs reads a device's attributes by name, with or without the
// driver's domain.
type attrs struct {
	m      map[string]DeviceAttribute
	driver string
	field  string // "slice …: spec.devices[i]"
}

func (a attrs) get(name string) (DeviceAttribute, bool) {
	if v, ok := a.m[name]; ok {
		return v, true
	}
	v, ok := a.m[a.driver+"/"+name]
	return v, ok
}

func (a attrs) str(name string) (string, error) {
	v, ok := a.get(name)
	if !ok {
		return "", nil
	}
	switch {
	case v.String != nil:
		return *v.String, nil
	case v.Version != nil:
		return *v.Version, nil
	}
	return "", fmt.Errorf("%s.attributes.%s: want a string", a.field, name)
}

func (a attrs) integer(name string) (int64, bool, error) {
	v, ok := a.get(name)
	if !ok {
		return 0, false, nil
	}
	if v.Int == nil {
		return 0, false, fmt.Errorf("%s.attributes.%s: want an int", a.field, name)
	}
	return *v.Int, true, nil
}

// smallInt reads an int attribute that must be in [0, 1<<20), -1 when
// absent.
func (a attrs) smallInt(name string) (int, error) {
	v, ok, err := a.integer(name)
	if err != nil || !ok {
		return -1, err
	}
	if v < 0 || v >= 1<<20 {
		return -1, fmt.Errorf("%s.attributes.%s: %d out of range", a.field, name, v)
	}
	return int(v), nil
}

// scaledQuantity parses a quantity and returns it × num / den, rounded
// down.
func scaledQuantity(s string, num, den int64) (int64, error) {
	r, err := quantity.Parse(s)
	if err != nil {
		return 0, err
	}
	v, _ := quantity.Scaled(r, num, den)
	if v >= 1<<40 {
		return 0, fmt.Errorf("quantity %q is too large", s)
	}
	return v, nil
}

// healthOf maps device taints to GPU health: NoExecute evicts (Failed),
// NoSchedule keeps running work (Draining); None and unknown effects are
// informational.
func healthOf(ts []DeviceTaint) topology.Health {
	h := topology.Healthy
	for _, t := range ts {
		switch t.Effect {
		case "NoExecute":
			h = topology.Failed
		case "NoSchedule":
			if h == topology.Healthy {
				h = topology.Draining
			}
		}
	}
	return h
}

// readGPU reads a GPU device.
func readGPU(d *Device, a attrs) (*gpuDev, error) {
	g := &gpuDev{dev: d, field: a.field, numa: -1}
	var err error
	if g.index, err = a.smallInt(AttrIndex); err != nil {
		return nil, err
	}
	if g.minor, err = a.smallInt(AttrMinor); err != nil {
		return nil, err
	}
	if g.minor < 0 {
		// NVIDIA names whole GPUs "gpu-<minor>".
		if n, err := strconv.Atoi(strings.TrimPrefix(d.Name, "gpu-")); err == nil && strings.HasPrefix(d.Name, "gpu-") && n >= 0 && n < 1<<20 {
			g.minor = n
		}
	}
	if g.numa, err = a.smallInt(AttrNUMANode); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{AttrUUID, &g.uuid}, {AttrProductName, &g.product}, {AttrCompute, &g.compute}, {AttrPCIBusID, &g.busID},
		{AttrPCIeRoot, &g.pcieRoot}, {AttrCliqueID, &g.clique}} {
		if *f.to, err = a.str(f.name); err != nil {
			return nil, err
		}
	}
	if g.product == "" {
		return nil, fmt.Errorf("%s.attributes.%s: missing", a.field, AttrProductName)
	}
	if c, ok := d.Capacity[CapacityMemory]; ok {
		if g.memMiB, err = scaledQuantity(c.Value, 1, 1<<20); err != nil {
			return nil, fmt.Errorf("%s.capacity.%s: %v", a.field, CapacityMemory, err)
		}
	}
	if len(d.ConsumesCounters) > 0 {
		g.counterSet = d.ConsumesCounters[0].CounterSet
		for name := range d.ConsumesCounters[0].Counters {
			if strings.HasPrefix(name, memorySliceCtr) {
				g.slots++
			}
		}
	}
	g.taints = d.Taints
	g.health = healthOf(d.Taints)
	return g, nil
}

// readMIG reads a MIG device.
func readMIG(d *Device, a attrs) (*migDev, error) {
	m := &migDev{dev: d, field: a.field, start: -1}
	var err error
	if m.profile, err = a.str(AttrProfile); err != nil {
		return nil, err
	}
	if m.profile == "" {
		return nil, fmt.Errorf("%s.attributes.%s: missing", a.field, AttrProfile)
	}
	if _, err := profileSlices(m.profile); err != nil {
		return nil, fmt.Errorf("%s.attributes.%s: %v", a.field, AttrProfile, err)
	}
	if m.parentUUID, err = a.str(AttrParentUUID); err != nil {
		return nil, err
	}
	if m.uuid, err = a.str(AttrUUID); err != nil {
		return nil, err
	}
	if m.product, err = a.str(AttrProductName); err != nil {
		return nil, err
	}
	if m.pcieRoot, err = a.str(AttrPCIeRoot); err != nil {
		return nil, err
	}
	if m.parentIndex, err = a.smallInt(AttrParentIndex); err != nil {
		return nil, err
	}
	if m.parentMinor, err = a.smallInt(AttrParentMinor); err != nil {
		return nil, err
	}
	if c, ok := d.Capacity[CapacityMemory]; ok {
		if m.memMiB, err = scaledQuantity(c.Value, 1, 1<<20); err != nil {
			return nil, fmt.Errorf("%s.capacity.%s: %v", a.field, CapacityMemory, err)
		}
	}
	// The memory slices it takes: counters of the partitionable model, or
	// capacities of a MIG device that exists already.
	var sl []int
	add := func(name, prefix, field string) error {
		k, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
		if err != nil || k < 0 || k >= topology.MaxMIGSlots {
			return fmt.Errorf("%s.%s: memory slice %q out of range [0, %d)", a.field, field, name, topology.MaxMIGSlots)
		}
		sl = append(sl, k)
		return nil
	}
	if len(d.ConsumesCounters) > 0 {
		m.counterSet = d.ConsumesCounters[0].CounterSet
		for _, name := range slices.Sorted(maps.Keys(d.ConsumesCounters[0].Counters)) {
			if strings.HasPrefix(name, memorySliceCtr) {
				if err := add(name, memorySliceCtr, "consumesCounters[0].counters"); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(sl) == 0 {
		for _, name := range slices.Sorted(maps.Keys(d.Capacity)) {
			if strings.HasPrefix(name, memorySliceCap) {
				if err := add(name, memorySliceCap, "capacity"); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(sl) > 0 {
		slices.Sort(sl)
		for i := 1; i < len(sl); i++ {
			if sl[i] != sl[i-1]+1 {
				return nil, fmt.Errorf("%s: memory slices %v are not consecutive", a.field, sl)
			}
		}
		m.start, m.size = sl[0], len(sl)
	}
	m.taints = d.Taints
	m.health = healthOf(d.Taints)
	return m, nil
}

// profileSlices returns the compute slices of a profile name ("3g.71gb"
// → 3).
func profileSlices(p string) (int, error) {
	i := strings.IndexByte(p, 'g')
	if i <= 0 {
		return 0, fmt.Errorf("%q is not a MIG profile name (<n>g.<mem>gb)", p)
	}
	n, err := strconv.Atoi(p[:i])
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("%q is not a MIG profile name (<n>g.<mem>gb)", p)
	}
	return n, nil
}

// sortGPUs orders a node's GPUs by index, else minor, else name in
// natural order (devname.Compare), and
// assigns indices 0..n-1 where none are given.
func sortGPUs(gs []*gpuDev) error {
	slices.SortFunc(gs, func(a, b *gpuDev) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.minor, b.minor), devname.Compare(a.dev.Name, b.dev.Name))
	})
	for i, g := range gs {
		if g.index >= 0 && g.index != i {
			return fmt.Errorf("%s.attributes.%s: index %d, but the node's GPUs are numbered 0..%d", g.field, AttrIndex, g.index, len(gs)-1)
		}
		g.index = i
	}
	return nil
}
