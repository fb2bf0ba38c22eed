package topology

// maxTrackers bounds the Occupancies tracking one ledger: a Track beyond
// it settles the oldest (copies what it does not hold yet and stops
// tracking), so that a caller that drops tracked Occupancies without
// Forget costs the ledger a bounded amount of work per change.
const maxTrackers = 16

// Track makes o hold l's current occupancy, as CopyFrom does, but copies
// nothing now: o reads each host from l until o or l changes it, and l
// gives o the host's state before changing it (Ledger.preserve). A
// reservation's shadow that checks the claims of a few hosts then costs
// O(hosts it touches) instead of a copy of every GPU. Allocate and
// Release accept and refuse exactly what they would after a CopyFrom
// (property-tested against a Clone taken at the same time). O(1) but for
// the arrays' first growth; l keeps o until Forget, CopyFrom, another
// Track, a change of l's whole state (CopyFrom into l, Follow: o copies
// what it does not hold first), or maxTrackers later Tracks.
func (o *Occupancy) Track(l *Ledger) {
	o.Forget()
	d := &o.l
	d.c, d.slim = l.c, true
	// The arrays are sized to l's; their contents are read only for the
	// hosts held, each copied from l first (hold).
	d.gpu = resized(d.gpu, len(l.gpu))
	d.hostHealth = resized(d.hostHealth, len(l.hostHealth))
	d.cordoned = resized(d.cordoned, len(l.cordoned))
	d.cpuFree = resized(d.cpuFree, len(l.cpuFree))
	d.memFree = resized(d.memFree, len(l.memFree))
	o.held = resized(o.held, len(l.hostHealth))
	if o.epoch++; o.epoch == 0 { // wrapped: no stale marks may match
		clear(o.held)
		o.epoch = 1
	}
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

// settle copies every host o does not hold yet from its ledger and stops
// tracking it: o then holds the whole state itself, as after CopyFrom.
func (o *Occupancy) settle() {
	if o.base == nil {
		return
	}
	for h := range o.held {
		o.hold(HostID(h))
	}
	o.Forget()
}

// hold makes o hold host h's state, copying it from the ledger it tracks
// if it does not yet.
func (o *Occupancy) hold(h HostID) {
	if o.held[h] == o.epoch {
		return
	}
	o.held[h] = o.epoch
	b, d := o.base, &o.l
	d.hostHealth[h], d.cordoned[h] = b.hostHealth[h], b.cordoned[h]
	d.cpuFree[h], d.memFree[h] = b.cpuFree[h], b.memFree[h]
	x := &b.c.hosts[h]
	copy(d.gpu[x.gpuLo:x.gpuLo+GPUID(x.nGPU)], b.gpu[x.gpuLo:])
}

// holdClaims makes o hold the hosts of claims (those in range: the others
// fail before any state is read).
func (o *Occupancy) holdClaims(claims []Claim) {
	if o.base == nil {
		return
	}
	for i := range claims {
		if h := claims[i].Host; h >= 0 && int(h) < len(o.held) {
			o.hold(h)
		}
	}
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
