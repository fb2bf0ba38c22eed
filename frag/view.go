package frag

import "github.com/gpusched/gpusched/topology"

// view caches, per host, the usable free milli of its GPUs and summaries
// of them, keyed by Ledger.HostGeneration: a host is re-read only after it
// changed. Host generations are unique across the ledgers of a cluster
// (equal generations, equal states), so the cache serves any ledger of
// its cluster, before and after Clone or CopyFrom.
type view struct {
	c       *topology.Cluster
	model   []int16  // per host: its model + 1 (0: no accelerators)
	first   []int32  // per host: its first GPU
	ngpu    []int16  // per host: its GPUs
	hgen    []uint64 // per host: HostGeneration+1 of the cached entry; 0 = none
	free    []int16  // per GPU: usable free milli
	total   []int64  // per host: Σ free
	full    []int16  // per host: GPUs entirely free
	maxFree []int16  // per host: the largest free on one GPU
	shared  []bool   // per host: some GPU holds shares
	whole   []int16  // per host: GPUs held whole
}

func (v *view) init(c *topology.Cluster) {
	nh := c.NumHosts()
	*v = view{
		c:       c,
		model:   make([]int16, nh),
		first:   make([]int32, nh),
		ngpu:    make([]int16, nh),
		hgen:    make([]uint64, nh),
		free:    make([]int16, c.NumGPUs()),
		total:   make([]int64, nh),
		full:    make([]int16, nh),
		maxFree: make([]int16, nh),
		shared:  make([]bool, nh),
		whole:   make([]int16, nh),
	}
	for h := range topology.HostID(nh) {
		f, n := c.HostGPUs(h)
		v.model[h], v.first[h], v.ngpu[h] = int16(c.HostModel(h))+1, int32(f), int16(n)
	}
}

// refresh re-reads host h if its generation is not the cached one.
func (v *view) refresh(l *topology.Ledger, h topology.HostID, gen uint64) {
	if v.hgen[h] == gen+1 {
		return
	}
	first, n := topology.GPUID(v.first[h]), int(v.ngpu[h])
	var total int64
	var full, mx, whole int16
	shared := false
	for i := range n {
		g := first + topology.GPUID(i)
		f := usableFree(l, g)
		v.free[int(first)+i] = f
		total += int64(f)
		if f == topology.MilliPerGPU {
			full++
		}
		mx = max(mx, f)
		switch l.GPU(g).Mode {
		case topology.ModeShared:
			shared = true
		case topology.ModeWhole:
			whole++
		}
	}
	v.total[h], v.full[h], v.maxFree[h], v.shared[h], v.whole[h] = total, full, mx, shared, whole
	v.hgen[h] = gen + 1
}

// state returns the state of a refreshed host.
func (v *view) state(l *topology.Ledger, h topology.HostID) hostState {
	first, n := int(v.first[h]), int(v.ngpu[h])
	return hostState{
		h: h, model: topology.ModelID(v.model[h] - 1), cpu: l.CPUFree(h), mem: l.MemoryFree(h),
		free: v.free[first : first+n], total: v.total[h], full: int(v.full[h]),
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
