package preempt

import (
	"cmp"
	"slices"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// A lower bound on a domain's cost by task slots, for defragmentation.
//
// The search's bounds count GPUs: a domain with as many free GPUs as the
// gang needs, scattered over too few hosts that hold a whole task, gets a
// bound of zero, and on a large cluster where many domains look like that
// (the situation defragmentation is for) every one of them is searched.
// For a gang whose every task takes k ≥ 2 whole GPUs, a domain short of
// s task slots (hosts' ⌊free/k⌋ summed, against the gang's tasks) needs
// units that add s slots; freeing f GPUs on a host adds at most ⌈f/k⌉
// slots there, so a unit adds at most Σ over its claims in the domain of
// ⌈GPUs/k⌉. The fractional knapsack of lost work per slot over the
// domain's own units is then a lower bound on any set that lets the gang
// place there (units outside the domain add no slots in it). Cost
// O(units in the domain × claims + their sort).

// slotBound returns the slot bound of domain x (0 when the gang is not
// made of k-GPU tasks or x is not short of slots).
func (r *run) slotBound(x *dom) GPUTime {
	k, tasks := r.need.MaxGPUs, 0
	if k < 2 {
		return 0
	}
	for i := range r.req.Groups {
		g := &r.req.Groups[i]
		if g.Kind != gang.TaskWhole || g.GPUs != k {
			return 0
		}
		tasks += g.Min
	}
	short := tasks - r.slotsIn(x, k)
	if short <= 0 {
		return 0
	}
	gains := r.gains[:0]
	for _, ui := range r.domUnits[x.ufrom:x.uto] {
		u := &r.units[ui]
		n := 0
		for _, cl := range r.claims(u) {
			g := 0
			if r.lv == topology.LevelFabric {
				for _, gc := range cl.GPUs {
					if r.lx.gpuDom[gc.GPU] == x.i {
						g++
					}
				}
			} else if r.lx.hostDom[cl.Host] == x.i {
				g = len(cl.GPUs)
			}
			n += (g + k - 1) / k
		}
		if n > 0 {
			gains = append(gains, slotGain{lost: u.lost, slots: n})
		}
	}
	r.gains = gains
	// Cheapest lost work per slot first: a/b < c/d ⇔ a·d < c·b.
	slices.SortFunc(gains, func(a, b slotGain) int {
		return cmp.Compare(float64(a.lost)*float64(b.slots), float64(b.lost)*float64(a.slots))
	})
	var lb GPUTime
	for _, g := range gains {
		if g.slots >= short {
			// The fraction of the last unit, rounded down.
			lb += GPUTime(float64(g.lost) * float64(short) / float64(g.slots))
			return lb
		}
		lb += g.lost
		short -= g.slots
	}
	return maxGPUTime // the domain's units cannot add the slots
}

// slotsIn counts the tasks of k GPUs the usable hosts of domain x hold
// now: at LevelFabric the free GPUs of each host inside the fabric domain.
func (r *run) slotsIn(x *dom, k int) int {
	if r.lv != topology.LevelFabric {
		n := 0
		r.l.AscendHosts(x.id, topology.NoModel, k, func(h topology.HostID, free int) bool {
			if r.hostUsable(h) {
				n += free / k
			}
			return true
		})
		return n
	}
	// Host by host: a host's GPUs are consecutive IDs, so the domain's
	// (ascending) list holds each host's GPUs in it as one run; a host
	// wholly in the domain counts its free GPUs off the ledger's counter.
	gpus := r.c.DomainGPUs(x.id)
	n := 0
	for i := 0; i < len(gpus); {
		h := r.c.GPUHost(gpus[i])
		first, ng := r.c.HostGPUs(h)
		free := 0
		if last := i + ng - 1; gpus[i] == first && last < len(gpus) && gpus[last] == first+topology.GPUID(ng-1) {
			free = r.l.HostFreeGPUs(h)
			i += ng
		} else {
			for ; i < len(gpus) && r.c.GPUHost(gpus[i]) == h; i++ {
				if r.l.GPUIsFree(gpus[i]) {
					free++
				}
			}
		}
		if free >= k && r.hostUsable(h) {
			n += free / k
		}
	}
	return n
}

// slotGain is a unit's lost work and the most slots it adds in a domain.
type slotGain struct {
	lost  GPUTime
	slots int
}
