package topology

// Occupancy is a what-if copy of a Ledger's occupancy: what each GPU
// holds, the CPU and memory each host has left, and the health and
// cordons of hosts and GPUs, without the per-domain counters and the
// indexes. Allocate and Release accept and refuse exactly the claims a
// Clone of the Ledger would, with the same errors (property-tested), at a
// fraction of a Clone's cost: at 100k GPUs a Clone copies about 5.7 MB
// (a quarter of a million per-domain counters), an Occupancy about 0.8 MB.
// Planners that keep the state of a future time only to check claims
// against it (reservation shadows) use it instead of a Clone. It answers
// no queries. Not safe for concurrent use.
//
// Track takes the copy lazily (occupancy_track.go): then o reads a host
// from the ledger it tracks until either changes the host.
type Occupancy struct {
	// l is slim: no counters, indexes or stamps (see Ledger.slim). Its
	// arrays hold o's state while o tracks no ledger.
	l Ledger
	// base is the ledger o tracks (nil: o holds every host itself, in
	// l); t the hosts o holds meanwhile.
	base *Ledger
	t    tracking
}

// Occupancy returns a new Occupancy holding l's current occupancy.
// O(GPUs + hosts).
func (l *Ledger) Occupancy() *Occupancy {
	o := &Occupancy{}
	o.CopyFrom(l)
	return o
}

// CopyFrom makes o hold src's current occupancy, reusing o's memory when
// it has the room (any cluster). O(GPUs + hosts), no allocations when it
// has.
func (o *Occupancy) CopyFrom(src *Ledger) {
	o.Forget()
	d := &o.l
	d.c, d.slim = src.c, true
	d.gpu = append(d.gpu[:0], src.gpu...)
	d.hostHealth = append(d.hostHealth[:0], src.hostHealth...)
	d.cordoned = append(d.cordoned[:0], src.cordoned...)
	d.cpuFree = append(d.cpuFree[:0], src.cpuFree...)
	d.memFree = append(d.memFree[:0], src.memFree...)
	// No stamps: bumpHost skips a slim ledger, and nothing reads them.
}

// Cluster returns the cluster of the ledger o was copied from.
func (o *Occupancy) Cluster() *Cluster { return o.l.c }

// Allocate applies claims all or nothing, as Ledger.Allocate does.
func (o *Occupancy) Allocate(claims ...Claim) error {
	if o.base != nil {
		return o.apply(claims, allocateOn)
	}
	return o.l.Allocate(claims...)
}

// Release returns what claims took, all or nothing, as Ledger.Release
// does.
func (o *Occupancy) Release(claims ...Claim) error {
	if o.base != nil {
		return o.apply(claims, releaseOn)
	}
	return o.l.Release(claims...)
}

func allocateOn(l *Ledger, claims []Claim) error { return l.Allocate(claims...) }
func releaseOn(l *Ledger, claims []Claim) error  { return l.Release(claims...) }

// GPU returns the occupancy of GPU g.
func (o *Occupancy) GPU(g GPUID) GPUStatus {
	if o.base != nil {
		h := o.l.c.gpus[g].host
		x := o.held(h)
		return statusOf(o.t.gpus[x.gpu+int32(g-o.l.c.hosts[h].gpuLo)])
	}
	return o.l.GPU(g)
}

// CPUFree returns the unallocated CPU of host h in milli-cores.
func (o *Occupancy) CPUFree(h HostID) int64 {
	if o.base != nil {
		return o.held(h).cpuFree
	}
	return o.l.cpuFree[h]
}

// MemoryFree returns the unallocated memory of host h in MiB.
func (o *Occupancy) MemoryFree(h HostID) int64 {
	if o.base != nil {
		return o.held(h).memFree
	}
	return o.l.memFree[h]
}
