package plugin

import (
	"fmt"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// DeviceClasses (docs/dra.md).
//
// A request's DeviceClass is read from the API (the scheduler's
// DeviceClass informer, the one kube's DynamicResources reads) and its
// selectors are ANDed with the request's, as kube's allocator does: the
// class restricts the devices, hence the nodes (dra_cel.go), and names
// the MIG profile (dra_mig.go). What a request asks for is decided by its
// class: the classes named in Args (Args.DRADeviceClass,
// Args.DRAMIGDeviceClass) ask for whole GPUs and MIG devices; any other
// class whose selectors select a whole GPU of the driver's slices asks
// for whole GPUs, else one that selects a MIG device asks for MIG
// devices, else it is another driver's (kube allocates it); a class
// without CEL selectors is judged by the request's own. A request naming
// a class that does not exist makes its pod wait, saying so.

// reqKind is what a request asks for.
type reqKind uint8

const (
	kindOther reqKind = iota // another driver's devices: kube's
	kindGPU                  // whole GPUs (or a share of one)
	kindMIG                  // MIG devices
)

// classKinds remembers the kind of each set of selectors (selKey) for the
// slices the nodes were last built from (drat.sliceKey): finding it scans
// the driver's devices until one matches. Owned by drat, cycle goroutine.
type classKinds struct {
	key   string
	kinds map[string]reqKind
}

// classOf returns the DeviceClass name; why says it does not exist or
// cannot be read.
func (d *drat) classOf(request, name string) (*resourceapi.DeviceClass, string) {
	dc, err := d.io.class(name)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("request %q: DeviceClass %q: %v", request, name, err)
	case dc == nil:
		return nil, fmt.Sprintf("request %q: DeviceClass %q does not exist", request, name)
	}
	return dc, ""
}

// requestSelectors returns the selectors of a request of class dc with
// its own sels: the class's first, then the request's (all must match).
func requestSelectors(dc *resourceapi.DeviceClass, sels []resourceapi.DeviceSelector) []resourceapi.DeviceSelector {
	if dc == nil || len(dc.Spec.Selectors) == 0 {
		return sels
	}
	return append(slices.Clip(dc.Spec.Selectors), sels...)
}

// kindOf returns what a request of class dc (named class) asks for: what
// the class's selectors select, or, for a class without CEL selectors,
// what the request's own sels do. (A class's kind does not change with
// the request's selectors: a request of a GPU class that no GPU meets is
// still gpusched's, and waits.)
func (d *drat) kindOf(class string, dc *resourceapi.DeviceClass, own []resourceapi.DeviceSelector) reqKind {
	switch class {
	case d.class:
		return kindGPU
	case d.migClass:
		return kindMIG
	}
	if d.kinds.kinds == nil || d.kinds.key != d.sliceKey {
		d.kinds = classKinds{key: d.sliceKey, kinds: map[string]reqKind{}}
	}
	sels := own
	if dc != nil && hasCEL(dc.Spec.Selectors) {
		sels = dc.Spec.Selectors
	}
	key := selKey(sels)
	k, ok := d.kinds.kinds[key]
	if !ok {
		k = d.scanKind(sels, key)
		d.kinds.kinds[key] = k
	}
	return k
}

// scanKind finds what sels select: a whole GPU of the driver's slices, else
// a MIG device, else neither. A selector that fails on a device (an
// attribute it lacks) does not select it.
func (d *drat) scanKind(sels []resourceapi.DeviceSelector, key string) reqKind {
	names := sortedKeys(d.nodes)
	for _, name := range names {
		for _, dev := range d.nodes[name].specs {
			if ok, err := d.matches(dev, sels, key); ok && err == nil {
				return kindGPU
			}
		}
	}
	for _, name := range names {
		for _, m := range append(d.nodes[name].migsOf(""), d.nodes[name].staticSpecs()...) {
			if ok, err := d.matches(m, sels, key); ok && err == nil {
				return kindMIG
			}
		}
	}
	return kindOther
}

// classKey identifies the DeviceClasses c's requests name, as they are
// now (their resourceVersions): a pod's view is cached while they stay.
func (d *drat) classKey(c *resourceapi.ResourceClaim) string {
	var kb strings.Builder
	for _, r := range c.Spec.Devices.Requests {
		names := []string{}
		if r.Exactly != nil {
			names = append(names, r.Exactly.DeviceClassName)
		}
		for _, s := range r.FirstAvailable {
			names = append(names, s.DeviceClassName)
		}
		for _, n := range names {
			kb.WriteString(n + "@")
			if dc, _ := d.io.class(n); dc != nil {
				kb.WriteString(dc.ResourceVersion)
			}
			kb.WriteString(";")
		}
	}
	return kb.String()
}
