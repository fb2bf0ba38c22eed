package gpusched

import "github.com/gpusched/gpusched/topology"

// Whole-host reservations (Config.ReserveWholeHosts), as Slurm's backfill
// keeps its plan: its node-space map records, for every pending job it
// plans, the nodes the job will use from its planned start to its planned
// end, and a later job may not use such a node in that window at all —
// not even GPUs, cores or memory the planned job leaves free there
// (sched/backfill's node_space table is a node bitmap per time slice). So
// with the option on, a backfill candidate conflicts with a reservation
// it would still be running at as soon as it touches one of the
// reservation's hosts, and a reservation planned around earlier ones, or
// a candidate placed around them (BackfillAround), sees their hosts taken
// whole. Off (the default) reservations hold only what they claim.

// holdHosts allocates in l, piece by piece, whatever is free on each host
// of claims (every free GPU whole, then the free cores and memory), and
// appends to pieces what it took, so the caller can release it. A host
// named twice is held once (the second time nothing is free).
func holdHosts(l *topology.Ledger, claims []topology.Claim, pieces *[]topology.Claim) bool {
	held := false
	c := l.Cluster()
	for _, cl := range claims {
		h := cl.Host
		first, n := c.HostGPUs(h)
		for g := first; g < first+topology.GPUID(n); g++ {
			if !l.GPUIsFree(g) {
				continue
			}
			p := topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: g}}}
			if l.Allocate(p) == nil {
				*pieces = append(*pieces, p)
				held = true
			}
		}
		if cpu, mem := l.CPUFree(h), l.MemoryFree(h); cpu > 0 || mem > 0 {
			p := topology.Claim{Host: h, CPUMilli: max(cpu, 0), MemoryMiB: max(mem, 0)}
			if l.Allocate(p) == nil {
				*pieces = append(*pieces, p)
				held = true
			}
		}
	}
	return held
}

// sharesHost reports whether claims a and b name a common host.
func sharesHost(a, b []topology.Claim) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Host == y.Host {
				return true
			}
		}
	}
	return false
}
