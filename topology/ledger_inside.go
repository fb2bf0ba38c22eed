package topology

// inside is what the Ledger's per-domain counters hold for a domain inside
// a host (a NUMA node, a PCIe switch): no count is kept there. Nothing in
// the placers reads those domains' figures, and keeping them cost three of
// every four counter updates of a GPU of a DGX host (its switch, root
// port and NUMA node, beside its fabric); FreeGPUs, FreeMilli and
// HealthyGPUs sum them from the domain's GPUs instead (at most a host's).
const inside = -1

// markInside sets inside in the counters of the domains inside hosts,
// from domain from on (NewLedger: all; a live join: the new ones). The
// healthy counters must be l's own (not shared with a clone).
func (l *Ledger) markInside(from DomainID) {
	c := l.c
	for d := from; int(d) < len(c.domains); d++ {
		if c.domains[d].level < 0 {
			l.freeWhole[d], l.freeMilli[d], l.healthy[d] = inside, inside, inside
		}
	}
}

// insideCounts sums the counters of a domain inside a host from its GPUs:
// free allocatable GPUs, their free milli-GPU, allocatable GPUs.
func (l *Ledger) insideCounts(d DomainID) (free int32, milli int64, ok int32) {
	for _, g := range l.c.DomainGPUs(d) {
		f, m, o := l.contrib(g)
		free += f
		milli += m
		ok += o
	}
	return free, milli, ok
}

// insideFree, insideMilli and insideHealthy are FreeGPUs, FreeMilli and
// HealthyGPUs of a domain inside a host (out of line, so that those stay
// inlined for the domains with counters).
func (l *Ledger) insideFree(d DomainID) int {
	free, _, _ := l.insideCounts(d)
	return int(free)
}

func (l *Ledger) insideMilli(d DomainID) int64 {
	_, milli, _ := l.insideCounts(d)
	return milli
}

func (l *Ledger) insideHealthy(d DomainID) int {
	_, _, ok := l.insideCounts(d)
	return int(ok)
}
