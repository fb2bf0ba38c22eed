package plugin

import (
	"cmp"
	"fmt"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// firstAvailable requests and allocation mode All (docs/dra.md).
//
// A request with firstAvailable subrequests of the GPU driver's classes
// gets the first subrequest gpusched can place when its pod is first
// looked at: whole GPUs that some node its selectors leave has that many
// free in gpusched's ledger (all of a node's GPUs for mode All), a MIG
// device or a share some node can hold (as for an exact request).
// Subrequests gpusched cannot allocate (admin access) are
// passed over. The pick is kept while the claim exists (the job gpusched
// queues asks for its GPUs; a pick that no longer fits waits, as a plain
// request does); while none fits, the pod waits and is looked at again
// each cycle. The allocation's results name the request
// "request/subrequest", as kube's allocator writes them, and a restarted
// scheduler reads the pick back from them.
//
// Allocation mode All asks for all the GPUs of a node that match: gpusched
// places such a request on the nodes all of whose GPUs match its
// selectors (dra_cel.go), as a request of the largest GPU count among them,
// so on the nodes of that many GPUs. Mode All of MIG devices or shares is
// not supported.

// firstAvailable returns request r of c (with firstAvailable subrequests)
// as the subrequest picked, its kind and what gpusched cannot allocate in
// it. Subrequests all of other drivers' classes: kindOther.
func (d *drat) firstAvailable(c *resourceapi.ResourceClaim, r resourceapi.DeviceRequest) (gpuRequest, reqKind, string) {
	type cand struct {
		rq   gpuRequest
		kind reqKind
		why  string
	}
	var cands []cand
	others := 0
	for _, s := range r.FirstAvailable {
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: s.DeviceClassName, Selectors: s.Selectors, AllocationMode: s.AllocationMode,
			Count: s.Count, Tolerations: s.Tolerations, Capacity: s.Capacity}
		rq, kind, why := d.exactRequest(r.Name+"/"+s.Name, e)
		if kind == kindOther {
			others++
			continue
		}
		cands = append(cands, cand{rq, kind, why})
	}
	switch {
	case len(cands) == 0:
		return gpuRequest{}, kindOther, ""
	case others > 0:
		return gpuRequest{name: r.Name, count: 1}, kindGPU, fmt.Sprintf("request %q: firstAvailable mixes subrequests of the GPU driver with other drivers' classes", r.Name)
	}
	// The subrequest the allocation names, else the one picked before.
	picked := d.picks[pickKey(c, r.Name)]
	if a := c.Status.Allocation; a != nil {
		for _, res := range a.Devices.Results {
			if strings.HasPrefix(res.Request, r.Name+"/") {
				picked = res.Request
				break
			}
		}
	}
	for _, x := range cands {
		if x.rq.name == picked {
			return x.rq, x.kind, x.why
		}
	}
	var whys []string
	for _, x := range cands {
		if x.why == "" && d.fits(x.rq) {
			d.picks[pickKey(c, r.Name)] = x.rq.name
			return x.rq, x.kind, ""
		}
		whys = append(whys, x.rq.name+": "+cmp.Or(x.why, "does not fit now"))
	}
	return gpuRequest{name: r.Name, count: 1, unpicked: true}, kindGPU,
		fmt.Sprintf("request %q: no firstAvailable subrequest can be placed now (%s)", r.Name, strings.Join(whys, "; "))
}

// pickKey identifies request name of c in drat.picks.
func pickKey(c *resourceapi.ResourceClaim, name string) string {
	return c.Namespace + "/" + c.Name + "/" + name
}

// prunePicks forgets the picks of claims that are gone.
func (d *drat) prunePicks(claims []*resourceapi.ResourceClaim) {
	if len(d.picks) == 0 {
		return
	}
	live := make(map[string]bool, len(claims))
	for _, c := range claims {
		live[c.Namespace+"/"+c.Name+"/"] = true
	}
	for k := range d.picks {
		i := strings.LastIndexByte(k, '/')
		if !live[k[:i+1]] {
			delete(d.picks, k)
		}
	}
}

// fits reports whether some node r's selectors leave can hold r now:
// that many free GPUs in gpusched's ledger (the node's GPUs before the
// ledger knows it) for whole GPUs, the MIG profile or the share for a part.
func (d *drat) fits(r gpuRequest) bool {
	if r.part != nil && r.part.mig {
		// (Its profile is found later, podPart: any MIG device its
		// selectors match.)
		key := selKey(r.sels)
		for _, name := range sortedKeys(d.nodes) {
			for _, m := range d.nodes[name].migs {
				if ok, err := d.matches(m.spec, r.sels, key); ok && err == nil {
					return true
				}
			}
			if d.freeStatics(d.nodes[name], r) >= r.count {
				return true // (dra_static.go)
			}
		}
		return false
	}
	nodes, err := d.requestNodes(r)
	if err != nil {
		return false
	}
	for _, name := range nodes {
		n := d.nodes[name]
		if r.part != nil {
			return true
		}
		if r.all && len(n.devices) != r.count {
			continue
		}
		free := len(n.devices)
		if d.free != nil {
			if f, ok := d.free(name); ok {
				free = f
			}
		}
		if free >= r.count {
			return true
		}
	}
	return false
}

// allOf makes rq (allocation mode All) a request of all the GPUs of the
// nodes it may use: the largest GPU count of the nodes all of whose GPUs
// match its selectors; why when it cannot be.
func (d *drat) allOf(rq *gpuRequest) string {
	if rq.part != nil {
		return fmt.Sprintf("request %q: allocationMode All is supported for whole GPUs only", rq.name)
	}
	nodes, err := d.requestNodes(*rq)
	if err != nil {
		return fmt.Sprintf("request %q: %v", rq.name, err)
	}
	most := 0
	for _, name := range nodes {
		most = max(most, len(d.nodes[name].devices))
	}
	if most == 0 {
		return fmt.Sprintf("request %q: no node's GPUs all match its selectors (allocationMode All)", rq.name)
	}
	rq.all, rq.count = true, most
	return ""
}
