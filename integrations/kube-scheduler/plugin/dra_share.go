package plugin

import (
	"fmt"
	"maps"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpusched/gpusched/workload"
)

// Shares of a GPU through consumable capacity (docs/dra.md).
//
// A GPU device published with allowMultipleAllocations: true and capacity
// (memory, compute, …) can be allocated to several claims at once, each
// consuming what its request's capacity.requests ask (rounded up by the
// capacity's requestPolicy; a capacity it does not request consumes the
// policy's default, or all of it without a policy). A whole-GPU-class
// request with capacity.requests is a share: gpusched sees it as a task
// of that many milli-GPU (the largest fraction of any capacity it
// consumes, rounded up; on nodes whose GPUs differ, the largest over the
// nodes that can take it), and the library keeps shares on a GPU at most
// 1000 milli, so the capacity a GPU's shares consume never exceeds what
// it has. The claim's result names the GPU, a shareID and the consumed
// capacity, as kube's allocator writes them. A GPU shared this way is
// never given whole, and a whole GPU never shared.

// consumed returns what a request of req consumes of dev's capacities,
// or why it cannot be allocated on dev.
func consumed(dev *resourceapi.Device, req map[resourceapi.QualifiedName]resource.Quantity) (map[resourceapi.QualifiedName]resource.Quantity, error) {
	out := make(map[resourceapi.QualifiedName]resource.Quantity, len(dev.Capacity))
	for name := range req {
		if _, ok := dev.Capacity[name]; !ok {
			return nil, fmt.Errorf("device %s has no capacity %s", dev.Name, name)
		}
	}
	for name, c := range dev.Capacity {
		q, asked := req[name]
		pol := c.RequestPolicy
		switch {
		case !asked && pol != nil && pol.Default != nil:
			q = *pol.Default
		case !asked:
			q = c.Value
		case pol != nil && len(pol.ValidValues) > 0:
			k := -1
			for i, v := range pol.ValidValues {
				if v.Cmp(q) >= 0 {
					k = i
					break
				}
			}
			if k < 0 {
				return nil, fmt.Errorf("%s %s is above the valid values of device %s", name, q.String(), dev.Name)
			}
			q = pol.ValidValues[k]
		case pol != nil && pol.ValidRange != nil:
			r := pol.ValidRange
			lo := resource.Quantity{}
			if r.Min != nil {
				lo = *r.Min
			}
			if q.Cmp(lo) < 0 {
				q = lo
			}
			if r.Step != nil && r.Step.MilliValue() > 0 {
				over := q.MilliValue() - lo.MilliValue()
				steps := (over + r.Step.MilliValue() - 1) / r.Step.MilliValue()
				q = *resource.NewMilliQuantity(lo.MilliValue()+steps*r.Step.MilliValue(), q.Format)
			}
			if r.Max != nil && q.Cmp(*r.Max) > 0 {
				return nil, fmt.Errorf("%s %s is above the valid range of device %s", name, q.String(), dev.Name)
			}
		}
		if q.Cmp(c.Value) > 0 {
			return nil, fmt.Errorf("%s %s is more than device %s has (%s)", name, q.String(), dev.Name, c.Value.String())
		}
		out[name] = q
	}
	return out, nil
}

// milliOf is the share of dev that using use takes: the largest fraction
// of any capacity, in milli-GPU rounded up.
func milliOf(dev *resourceapi.Device, use map[resourceapi.QualifiedName]resource.Quantity) int {
	m := int64(0)
	for name, q := range use {
		c := dev.Capacity[name].Value
		total := c.MilliValue()
		if total <= 0 {
			continue
		}
		m = max(m, (q.MilliValue()*workload.MilliPerGPU+total-1)/total)
	}
	return int(m)
}

// shareMilliOn returns the milli-GPU share part takes of each GPU of n;
// 0 when n's GPUs do not all allow multiple allocations or cannot take
// it as a share (under a whole GPU).
func (d *drat) shareMilliOn(n *draNode, part *partRequest) int {
	m := 0
	for _, dev := range n.specs {
		if dev.AllowMultipleAllocations == nil || !*dev.AllowMultipleAllocations {
			return 0
		}
		use, err := consumed(dev, part.capacity)
		if err != nil {
			return 0
		}
		m = max(m, milliOf(dev, use))
	}
	if m >= workload.MilliPerGPU {
		return 0
	}
	return max(m, 1)
}

// shareMilli is the share part takes in gpusched: the largest over the
// nodes that can take it (0: none can).
func (d *drat) shareMilli(part *partRequest) int {
	m := 0
	for _, n := range d.nodes {
		m = max(m, d.shareMilliOn(n, part))
	}
	return m
}

// shareResult completes res, result i of claim c, giving its request r
// the GPU dev: for a device allowing multiple allocations, its shareID
// (shareID, dra_shares.go) and the capacity it consumes (a whole-GPU
// request: all of it).
func (d *drat) shareResult(res *resourceapi.DeviceRequestAllocationResult, dev *resourceapi.Device, r gpuRequest, c gpuClaim, i int) error {
	if dev.AllowMultipleAllocations == nil || !*dev.AllowMultipleAllocations {
		if r.part != nil {
			return fmt.Errorf("device %s does not allow multiple allocations", dev.Name)
		}
		return nil
	}
	use := map[resourceapi.QualifiedName]resource.Quantity{}
	if r.part != nil {
		var err error
		if use, err = consumed(dev, r.part.capacity); err != nil {
			return err
		}
	} else {
		for name, cp := range dev.Capacity {
			use[name] = cp.Value
		}
	}
	id := shareID(c, i)
	res.ShareID, res.ConsumedCapacity = &id, maps.Clone(use)
	return nil
}
