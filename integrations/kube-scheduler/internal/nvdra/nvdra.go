// Package nvdra builds, for tests, the ResourceSlices NVIDIA's DRA driver
// for GPUs (k8s-dra-driver-gpu) publishes for a MIG-capable node with
// dynamic MIG (partitionable devices): per GPU a counter set
// gpu-N-counter-set (its capacities and one counter per memory slice), the
// full GPU gpu-N consuming all of it, and one device per MIG profile and
// legal placement, gpu-N-mig-PROFILE-ID-START, of type "mig", consuming
// its capacities and the memory slices of its placement. The profiles and
// placements come from an nvidia-smi capture (mig -lgip, mig -lgipp).
package nvdra

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Driver is the name of NVIDIA's DRA driver for GPUs.
const Driver = "gpu.nvidia.com"

// Profile is one GPU-instance profile of a capture.
type Profile struct {
	Name                       string // "1g.18gb+me"
	ID                         int    // the GI profile ID
	Starts                     []int  // legal start slots
	Size                       int    // memory slices
	MemoryMiB                  int64
	SM, CE, DEC, ENC, JPG, OFA int64
}

var (
	lgipRow  = regexp.MustCompile(`^\|\s+\d+\s+MIG\s+(\S+)\s+(\d+)\s+\d+/\d+\s+([\d.]+)\s+\w+\s+(\d+)\s+(\d+)\s+(\d+)\s+\|`)
	lgipRow2 = regexp.MustCompile(`^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+\|`)
	lgippRow = regexp.MustCompile(`Profile ID\s+(\d+) Placements?\s*:\s*\{([\d,]+)\}:(\d+)`)
)

// ReadCapture reads the profiles of GPU 0 from dir's mig-lgip.txt and
// mig-lgipp.txt (nvidia-smi mig -lgip, -lgipp), in mig-lgip order.
func ReadCapture(dir string) ([]Profile, error) {
	var out []Profile
	byID := map[int]int{}
	err := eachLine(filepath.Join(dir, "mig-lgip.txt"), func(line string) error {
		if m := lgipRow.FindStringSubmatch(line); m != nil {
			id, _ := strconv.Atoi(m[2])
			gib, _ := strconv.ParseFloat(m[3], 64)
			p := Profile{Name: m[1], ID: id, MemoryMiB: int64(gib * 1024)}
			p.SM, _ = strconv.ParseInt(m[4], 10, 64)
			p.DEC, _ = strconv.ParseInt(m[5], 10, 64)
			p.ENC, _ = strconv.ParseInt(m[6], 10, 64)
			byID[id] = len(out)
			out = append(out, p)
			return nil
		}
		if m := lgipRow2.FindStringSubmatch(line); m != nil && len(out) > 0 {
			p := &out[len(out)-1]
			p.CE, _ = strconv.ParseInt(m[1], 10, 64)
			p.JPG, _ = strconv.ParseInt(m[2], 10, 64)
			p.OFA, _ = strconv.ParseInt(m[3], 10, 64)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "mig-lgipp.txt"), func(line string) error {
		m := lgippRow.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(strings.TrimSpace(line), "GPU  0 ") {
			return nil
		}
		id, _ := strconv.Atoi(m[1])
		k, ok := byID[id]
		if !ok {
			return fmt.Errorf("mig-lgipp.txt: profile ID %d not in mig-lgip.txt", id)
		}
		for _, s := range strings.Split(m[2], ",") {
			st, _ := strconv.Atoi(s)
			out[k].Starts = append(out[k].Starts, st)
		}
		out[k].Size, _ = strconv.Atoi(m[3])
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		if p.Size == 0 {
			return nil, fmt.Errorf("%s: profile %s has no placements in mig-lgipp.txt", dir, p.Name)
		}
	}
	return out, nil
}

func eachLine(path string, f func(string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		if err := f(sc.Text()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// MIGDeviceName is the driver's name of the MIG device of profile p at
// start on GPU gpu: gpu-0-mig-1g18gb-me-20-3.
func MIGDeviceName(gpu int, p Profile, start int) string {
	name := strings.ToLower(strings.ReplaceAll(p.Name, ".", ""))
	name = strings.Trim(regexp.MustCompile(`[^a-z0-9-]`).ReplaceAllString(name, "-"), "-")
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", gpu, name, p.ID, start)
}

// CounterSet is the name of GPU gpu's counter set.
func CounterSet(gpu int) string { return fmt.Sprintf("gpu-%d-counter-set", gpu) }

// MemorySlice is the name of the counter of memory slice k.
func MemorySlice(k int) string { return fmt.Sprintf("memory-slice-%d", k) }

func qty(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }

// capacities of a profile: the driver's capacity names and counter names.
func (p Profile) capacities() (map[resourceapi.QualifiedName]resourceapi.DeviceCapacity, map[string]resourceapi.Counter) {
	caps := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
	counters := map[string]resourceapi.Counter{}
	for _, c := range []struct {
		capName, counter string
		v                int64
	}{{"multiprocessors", "multiprocessors", p.SM}, {"copyEngines", "copy-engines", p.CE}, {"decoders", "decoders", p.DEC},
		{"encoders", "encoders", p.ENC}, {"jpegEngines", "jpeg-engines", p.JPG}, {"ofaEngines", "ofa-engines", p.OFA},
		{"memory", "memory", p.MemoryMiB << 20}} {
		caps[resourceapi.QualifiedName(c.capName)] = resourceapi.DeviceCapacity{Value: qty(c.v)}
		counters[c.counter] = resourceapi.Counter{Value: qty(c.v)}
	}
	return caps, counters
}

// Node is what MIGSlices publishes for one node.
type Node struct {
	Name     string
	GPUs     int
	Product  string // "NVIDIA H200"
	Profiles []Profile
	// Slots is the number of memory slices of a GPU.
	Slots int
}

// Slices returns n's slices: one with the counter sets, one per GPU with
// the GPU and its MIG devices, all of pool n.Name.
func (n Node) Slices() []*resourceapi.ResourceSlice {
	count := int64(n.GPUs + 1)
	pool := resourceapi.ResourcePool{Name: n.Name, ResourceSliceCount: count}
	name := n.Name
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	// The GPU's counters: the largest of each capacity over the profiles,
	// and its memory slices.
	full := Profile{}
	for _, p := range n.Profiles {
		full.SM, full.CE, full.DEC = max(full.SM, p.SM), max(full.CE, p.CE), max(full.DEC, p.DEC)
		full.ENC, full.JPG, full.OFA = max(full.ENC, p.ENC), max(full.JPG, p.JPG), max(full.OFA, p.OFA)
		full.MemoryMiB = max(full.MemoryMiB, p.MemoryMiB)
	}
	fullCaps, fullCounters := full.capacities()
	withSlices := func(c map[string]resourceapi.Counter, start, size int) map[string]resourceapi.Counter {
		out := make(map[string]resourceapi.Counter, len(c)+size)
		for k, v := range c {
			out[k] = v
		}
		for k := start; k < start+size; k++ {
			out[MemorySlice(k)] = resourceapi.Counter{Value: qty(1)}
		}
		return out
	}
	counters := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: Driver, NodeName: &name, Pool: pool}}
	counters.Name = n.Name + "-gpu.nvidia.com-counters"
	out := []*resourceapi.ResourceSlice{counters}
	for g := 0; g < n.GPUs; g++ {
		counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{Name: CounterSet(g), Counters: withSlices(fullCounters, 0, n.Slots)})
		uuid := fmt.Sprintf("GPU-%s-%d", n.Name, g)
		idx := int64(g)
		s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: Driver, NodeName: &name, Pool: pool}}
		s.Name = fmt.Sprintf("%s-gpu.nvidia.com-gpu-%d", n.Name, g)
		common := func(typ string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
			return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str(typ), "productName": str(n.Product),
				"architecture": str("Hopper"), "brand": str("Nvidia")}
		}
		gpu := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), Attributes: common("gpu"), Capacity: fullCaps,
			ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: CounterSet(g), Counters: withSlices(fullCounters, 0, n.Slots)}}}
		gpu.Attributes["uuid"], gpu.Attributes["index"], gpu.Attributes["minor"] = str(uuid), resourceapi.DeviceAttribute{IntValue: &idx}, resourceapi.DeviceAttribute{IntValue: &idx}
		s.Spec.Devices = append(s.Spec.Devices, gpu)
		for _, p := range n.Profiles {
			caps, pc := p.capacities()
			for _, st := range p.Starts {
				d := resourceapi.Device{Name: MIGDeviceName(g, p, st), Attributes: common("mig"), Capacity: caps,
					ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: CounterSet(g), Counters: withSlices(pc, st, p.Size)}}}
				d.Attributes["parentUUID"], d.Attributes["profile"] = str(uuid), str(p.Name)
				s.Spec.Devices = append(s.Spec.Devices, d)
			}
		}
		out = append(out, s)
	}
	return out
}

// StaticSlice returns the slice NVIDIA's driver publishes, without its
// DynamicMIG feature gate (its default), for a node with whole GPUs
// gpu-0 … gpu-(whole-1) and, after them, one GPU in MIG mode per layout:
// not the GPU itself, only the MIG devices mig-parted made on it,
// gpu-M-mig-ID-START-SIZE, of type "mig" with their uuid, parentUUID,
// profile and productName, their capacities and one capacity
// memorySlice<K> per memory slice of their placement (no counters). A
// layout lists "PROFILE@START" of profiles.
func StaticSlice(node, product string, whole int, profiles []Profile, layouts ...[]string) (*resourceapi.ResourceSlice, error) {
	name := node
	str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
	s := &resourceapi.ResourceSlice{Spec: resourceapi.ResourceSliceSpec{Driver: Driver, NodeName: &name,
		Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	s.Name = node + "-gpu.nvidia.com-static"
	common := func(typ, uuid string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
		return map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"type": str(typ), "productName": str(product),
			"architecture": str("Hopper"), "brand": str("Nvidia"), "uuid": str(uuid)}
	}
	var memMiB int64
	for _, p := range profiles {
		memMiB = max(memMiB, p.MemoryMiB)
	}
	for g := 0; g < whole; g++ {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", g), Attributes: common("gpu", fmt.Sprintf("GPU-%s-%d", node, g)),
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: qty(memMiB << 20)}}})
	}
	for k, layout := range layouts {
		g := whole + k
		parent := fmt.Sprintf("GPU-%s-%d", node, g)
		for _, l := range layout {
			prof, st, ok := strings.Cut(l, "@")
			start, err := strconv.Atoi(st)
			i := slices.IndexFunc(profiles, func(p Profile) bool { return p.Name == prof })
			if !ok || err != nil || i < 0 || !slices.Contains(profiles[i].Starts, start) {
				return nil, fmt.Errorf("nvdra: layout %d: %q is no placement of the profiles", k, l)
			}
			p := profiles[i]
			caps, _ := p.capacities()
			for m := start; m < start+p.Size; m++ {
				caps[resourceapi.QualifiedName(fmt.Sprintf("memorySlice%d", m))] = resourceapi.DeviceCapacity{Value: qty(1)}
			}
			d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d-mig-%d-%d-%d", g, p.ID, start, p.Size),
				Attributes: common("mig", fmt.Sprintf("MIG-%s-%d-%d-%d", node, g, p.ID, start)), Capacity: caps}
			d.Attributes["parentUUID"], d.Attributes["profile"] = str(parent), str(p.Name)
			s.Spec.Devices = append(s.Spec.Devices, d)
		}
	}
	return s, nil
}
