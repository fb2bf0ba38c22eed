package frag

import "github.com/gpusched/gpusched/topology"

// view caches, per host, the usable free milli of its GPUs and summaries
// of them, keyed by Ledger.HostGeneration: a host is re-read only after it
// changed. Host generations are unique across the ledgers of a cluster
// (equal generations, equal states), so the cache serves any ledger of
// its cluster, before and after Clone or CopyFrom.
type view struct {
	c       *topology.Cluster
	hgen    []uint64 // per host: HostGeneration+1 of the cached entry; 0 = none
	free    []int16  // per GPU: usable free milli
	total   []int64  // per host: Σ free
	full    []int16  // per host: GPUs entirely free
	maxFree []int16  // per host: the largest free on one GPU
}

func (v *view) init(c *topology.Cluster) {
	nh := c.NumHosts()
	*v = view{
		c:       c,
		hgen:    make([]uint64, nh),
		free:    make([]int16, c.NumGPUs()),
		total:   make([]int64, nh),
		full:    make([]int16, nh),
		maxFree: make([]int16, nh),
	}
}

// refresh re-reads host h if its generation is not the cached one.
func (v *view) refresh(l *topology.Ledger, h topology.HostID, gen uint64) {
	if v.hgen[h] == gen+1 {
		return
	}
	first, n := v.c.HostGPUs(h)
	var total int64
	var full, mx int16
	for i := range n {
		f := usableFree(l, first+topology.GPUID(i))
		v.free[int(first)+i] = f
		total += int64(f)
		if f == topology.MilliPerGPU {
			full++
		}
		mx = max(mx, f)
	}
	v.total[h], v.full[h], v.maxFree[h] = total, full, mx
	v.hgen[h] = gen + 1
}

// state returns the state of a refreshed host.
func (v *view) state(l *topology.Ledger, h topology.HostID) hostState {
	first, n := v.c.HostGPUs(h)
	return hostState{
		h: h, model: v.c.HostModel(h), cpu: l.CPUFree(h), mem: l.MemoryFree(h),
		free: v.free[first : int(first)+n], total: v.total[h], full: int(v.full[h]),
	}
}

// hostState is what the scores look at: a host's free CPU, memory and
// per-GPU free milli, and which GPUs a task may use (mask; nil for all).
type hostState struct {
	h        topology.HostID
	model    topology.ModelID
	cpu, mem int64
	free     []int16
	total    int64 // Σ free over all the host's GPUs
	full     int   // GPUs of the host entirely free
	mask     []bool
}

// directState reads host h from the ledger.
func directState(l *topology.Ledger, h topology.HostID) hostState {
	c := l.Cluster()
	first, n := c.HostGPUs(h)
	hs := hostState{h: h, model: c.HostModel(h), cpu: l.CPUFree(h), mem: l.MemoryFree(h), free: make([]int16, n)}
	for i := range n {
		f := usableFree(l, first+topology.GPUID(i))
		hs.free[i] = f
		hs.total += int64(f)
		if f == topology.MilliPerGPU {
			hs.full++
		}
	}
	return hs
}

func (hs *hostState) allowed(i int) bool { return hs.mask == nil || hs.mask[i] }

// fits reports whether enough allowed GPUs have what t needs of each.
func (hs *hostState) fits(t *Task) bool {
	per, n := t.perGPU()
	if n == 0 {
		return true
	}
	k := 0
	for i, f := range hs.free {
		if int(f) >= per && hs.allowed(i) {
			k++
		}
	}
	return k >= n
}
