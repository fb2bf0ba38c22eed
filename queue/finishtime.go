package queue

import "github.com/gpusched/gpusched/fairshare"

// FinishTimeRho is the finish-time fairness ρ that the FinishTime policy
// orders siblings by (higher goes first): Themis' ratio of a job's
// completion time in the shared cluster to its completion time with only
// its fair share (Mahajan et al., NSDI'20, §3), estimated for e, the next
// job of node id, if it started now:
//
//	ρ = T_sh / T_id
//	T_sh = (now − e.Submitted) + R          its JCT if it started now
//	T_id = R × max(1, (A + g) / F)          its JCT alone with its fair share
//
// where now is the time of the last Advance, R e's runtime estimate
// (Fairness.Runtime when it has none), g the GPUs e asks for, A the GPUs
// node id already holds (used and reserved), and F node id's fair share of
// the cluster's GPUs: the cluster's GPUs split by weight among the node's
// siblings, level by level from the root. With its fair share alone, the
// queue's running jobs and e would share F GPUs, so e runs (A + g) / F
// times slower when they need more. A queue that holds more than its
// share ranks below one that holds less; waiting raises a queue's ρ, so
// none is starved. Without GPUs in the cluster or in the job, T_id = R.
// Cost: O(depth).
func (t *Tree) FinishTimeRho(id NodeID, e *Entry) float64 {
	r := e.Runtime
	if r <= 0 {
		r = t.fair.Runtime
	}
	wait := max(t.now.Sub(e.Submitted), 0)
	sh := (wait + r).Seconds()
	id0 := r.Seconds()
	if f := t.fairGPUs(id); f > 0 {
		nd := &t.nodes[id]
		a := float64(nd.used[fairshare.DimGPU] + nd.reserved[fairshare.DimGPU])
		var g float64
		if len(e.Demand) > fairshare.DimGPU {
			g = float64(e.Demand[fairshare.DimGPU])
		}
		if g > 0 {
			id0 *= max(1, (a+g)/f)
		}
	}
	return sh / id0
}

// fairGPUs is node id's weighted share of the cluster's GPUs, in
// milli-GPU: the capacity split by weight among siblings at every level.
func (t *Tree) fairGPUs(id NodeID) float64 {
	f := float64(t.capacity[fairshare.DimGPU])
	for ; id >= 0 && t.nodes[id].parent >= 0; id = t.nodes[id].parent {
		var sum float64
		for _, c := range t.nodes[t.nodes[id].parent].children {
			sum += t.nodes[c].weight
		}
		f *= t.nodes[id].weight / sum
	}
	return f
}
