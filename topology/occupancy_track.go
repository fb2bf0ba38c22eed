package topology

// maxTrackers bounds the Occupancies tracking one ledger: a Track beyond
// it settles the oldest (copies what it does not hold yet and stops
// tracking), so that a caller that drops tracked Occupancies without
// Forget costs the ledger a bounded amount of work per change.
const maxTrackers = 16

// tracking is a tracking Occupancy's own state: the hosts it holds, each
// copied from its ledger when it or the ledger first changed the host,
// in arrays that grow with those hosts only. A reservation's shadow holds
// the few dozen hosts its what-if and the later changes touched, where a
// per-GPU array of the whole cluster (0.9 MB at 100k GPUs, zeroed for
// every new Occupancy) held them before.
type tracking struct {
	// marks[h] says whether the Occupancy holds host h (epoch) and where
	// (slot, into hosts).
	marks []hostMark
	epoch uint32
	hosts []heldHost
	gpus  []gpuState // the held hosts' GPUs, each host's in a run (heldHost.gpu)
	// call numbers apply's calls; swapped and spare are its scratch: the
	// tracked ledger's state of the hosts it swapped o's in for.
	call    uint32
	swapped []swap
	spare   []gpuState
}

// swap is a tracked ledger's state of one host, saved while apply runs.
type swap struct {
	h    HostID
	host heldHost
}

// hostMark is tracking's entry for one host of the cluster.
type hostMark struct {
	epoch uint32
	slot  int32
}

// heldHost is the state of one host a tracking Occupancy holds.
type heldHost struct {
	cpuFree, memFree int64
	gpu              int32  // its first GPU's state in tracking.gpus
	call             uint32 // the last apply that swapped it in
	health           Health
	cordoned         bool
}

// Track makes o hold l's current occupancy, as CopyFrom does, but copies
// nothing now: o reads each host from l until o or l changes it, and l
// gives o the host's state before changing it (Ledger.preserve), which o
// keeps in arrays of its own that grow with the hosts it holds. A
// reservation's shadow that checks the claims of a few hosts then costs
// O(hosts it touches) instead of a copy of every GPU. Allocate and
// Release run on l's own arrays with o's state of the claims' hosts
// swapped in for the while (apply), and accept and refuse exactly what
// they would after a CopyFrom (property-tested against a Clone taken at
// the same time). O(1) but for the per-host marks' first growth; l keeps o until
// Forget, CopyFrom, another Track, a change of l's whole state (CopyFrom
// into l, Follow: o copies what it does not hold first), or maxTrackers
// later Tracks. As apply swaps state in l's arrays, use l and the
// Occupancies tracking it from one goroutine at a time.
func (o *Occupancy) Track(l *Ledger) {
	o.Forget()
	d := &o.l
	d.c, d.slim = l.c, true
	t := &o.t
	t.marks = resized(t.marks, len(l.hostHealth))
	if t.epoch++; t.epoch == 0 { // wrapped: no stale marks may match
		clear(t.marks)
		t.epoch = 1
	}
	t.hosts, t.gpus = t.hosts[:0], t.gpus[:0]
	o.base = l
	if len(l.trackers) >= maxTrackers {
		l.trackers[0].settle()
	}
	l.trackers = append(l.trackers, o)
}

// resized returns a of length n, reusing its array when large enough
// (contents unspecified).
func resized[T any](a []T, n int) []T {
	if cap(a) < n {
		return make([]T, n)
	}
	return a[:n]
}

// Forget stops o tracking its ledger (Track) without copying what it does
// not hold: o holds nothing until the next CopyFrom or Track (for reuse,
// as a pool's). O(Occupancies tracking the ledger).
func (o *Occupancy) Forget() {
	if o.base == nil {
		return
	}
	o.base.untrack(o)
	o.base = nil
}

// settle makes o hold the whole state itself in its ledger's arrays, as
// after CopyFrom: every host from its ledger, then the hosts it holds
// over them; it stops tracking.
func (o *Occupancy) settle() {
	b := o.base
	if b == nil {
		return
	}
	o.CopyFrom(b) // (forgets b first)
	t, d := &o.t, &o.l
	for h := range t.marks {
		if m := t.marks[h]; m.epoch == t.epoch {
			x := &t.hosts[m.slot]
			d.hostHealth[h], d.cordoned[h], d.cpuFree[h], d.memFree[h] = x.health, x.cordoned, x.cpuFree, x.memFree
			lo, n := d.c.hosts[h].gpuLo, GPUID(d.c.hosts[h].nGPU)
			copy(d.gpu[lo:lo+n], t.gpus[x.gpu:])
		}
	}
}

// held returns the state o holds for host h, copying it from the ledger
// it tracks if it does not hold it yet (o tracks a ledger).
func (o *Occupancy) held(h HostID) *heldHost {
	t := &o.t
	if m := t.marks[h]; m.epoch == t.epoch {
		return &t.hosts[m.slot]
	}
	b := o.base
	t.marks[h] = hostMark{epoch: t.epoch, slot: int32(len(t.hosts))}
	lo, n := b.c.hosts[h].gpuLo, GPUID(b.c.hosts[h].nGPU)
	t.hosts = append(t.hosts, heldHost{cpuFree: b.cpuFree[h], memFree: b.memFree[h], gpu: int32(len(t.gpus)),
		health: b.hostHealth[h], cordoned: b.cordoned[h]})
	t.gpus = append(t.gpus, b.gpu[lo:lo+n]...)
	return &t.hosts[len(t.hosts)-1]
}

// hold makes o hold host h's state (o tracks a ledger).
func (o *Occupancy) hold(h HostID) { o.held(h) }

// apply runs op (Allocate or Release on a slim ledger) for claims on a
// slim view of the arrays of the ledger o tracks, with o's state swapped
// in for the claims' hosts (those in range: the others fail before any
// state is read) and the ledger's swapped back after, so that no array
// of the cluster's size is needed: op reads and writes only the state of
// its claims' hosts (applyClaim, releaseClaim), all or nothing, and
// touches neither counters, indexes, stamps nor trackers on a slim
// ledger. o keeps the hosts' state after a successful op.
func (o *Occupancy) apply(claims []Claim, op func(w *Ledger, claims []Claim) error) error {
	b, t := o.base, &o.t
	if t.call++; t.call == 0 { // wrapped: no stale call may match
		for i := range t.hosts {
			t.hosts[i].call = 0
		}
		t.call = 1
	}
	for i := range claims {
		h := claims[i].Host
		if h < 0 || int(h) >= len(t.marks) {
			continue
		}
		x := o.held(h)
		if x.call == t.call {
			continue // swapped in for an earlier claim
		}
		x.call = t.call
		lo, n := b.c.hosts[h].gpuLo, GPUID(b.c.hosts[h].nGPU)
		t.swapped = append(t.swapped, swap{h: h, host: heldHost{cpuFree: b.cpuFree[h], memFree: b.memFree[h], gpu: int32(len(t.spare)),
			health: b.hostHealth[h], cordoned: b.cordoned[h]}})
		t.spare = append(t.spare, b.gpu[lo:lo+n]...)
		b.hostHealth[h], b.cordoned[h], b.cpuFree[h], b.memFree[h] = x.health, x.cordoned, x.cpuFree, x.memFree
		copy(b.gpu[lo:lo+n], t.gpus[x.gpu:])
	}
	defer o.swapBack()
	w := Ledger{c: b.c, gpu: b.gpu, hostHealth: b.hostHealth, cordoned: b.cordoned, cpuFree: b.cpuFree, memFree: b.memFree, slim: true}
	err := op(&w, claims)
	if err == nil { // (a failed op left every host as swapped in)
		for _, sw := range t.swapped {
			h := sw.h
			x := &t.hosts[t.marks[h].slot]
			x.health, x.cordoned, x.cpuFree, x.memFree = b.hostHealth[h], b.cordoned[h], b.cpuFree[h], b.memFree[h]
			lo, n := b.c.hosts[h].gpuLo, GPUID(b.c.hosts[h].nGPU)
			copy(t.gpus[x.gpu:x.gpu+int32(n)], b.gpu[lo:lo+n])
		}
	}
	return err
}

// swapBack puts back the tracked ledger's state of the hosts apply
// swapped o's state in for.
func (o *Occupancy) swapBack() {
	b, t := o.base, &o.t
	for _, sw := range t.swapped {
		h, x := sw.h, &sw.host
		b.hostHealth[h], b.cordoned[h], b.cpuFree[h], b.memFree[h] = x.health, x.cordoned, x.cpuFree, x.memFree
		lo, n := b.c.hosts[h].gpuLo, GPUID(b.c.hosts[h].nGPU)
		copy(b.gpu[lo:lo+n], t.spare[x.gpu:])
	}
	clear(t.swapped)
	t.swapped, t.spare = t.swapped[:0], t.spare[:0]
}

// preserve gives every Occupancy tracking l host h's state before l
// changes it. O(1) when none tracks l.
func (l *Ledger) preserve(h HostID) {
	for _, o := range l.trackers {
		o.hold(h)
	}
}

// settleTrackers has every Occupancy tracking l copy what it does not hold
// and stop tracking: l's whole state is about to change.
func (l *Ledger) settleTrackers() {
	for len(l.trackers) > 0 {
		l.trackers[len(l.trackers)-1].settle()
	}
}

// untrack drops o from l's trackers.
func (l *Ledger) untrack(o *Occupancy) {
	for i, x := range l.trackers {
		if x == o {
			l.trackers = append(l.trackers[:i], l.trackers[i+1:]...)
			l.trackers[len(l.trackers):cap(l.trackers)][0] = nil
			return
		}
	}
}
