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

// holdReserved holds in l what a reservation's claims need while another
// job is planned around it, piece by piece, so that what is taken already
// stays taken: with whole (Config.ReserveWholeHosts) whatever is free on
// each host of claims (every free GPU whole, then the free cores and
// memory; a host named twice is held once), otherwise what is free of
// each claim (its GPUs one by one, then its cores and memory; what a
// running job holds now is not free anyway). It records what it took in
// held, so the caller can give it back, and reports whether it took
// anything.
func holdReserved(l *topology.Ledger, claims []topology.Claim, whole bool, held *pieces) bool {
	took := false
	take := func(p topology.Claim) {
		took = held.take(l, p) || took
	}
	c := l.Cluster()
	for _, cl := range claims {
		h := cl.Host
		if !whole {
			for _, g := range cl.GPUs {
				take(topology.Claim{Host: h, GPUs: []topology.GPUClaim{g}})
			}
			if cl.CPUMilli > 0 || cl.MemoryMiB > 0 {
				take(topology.Claim{Host: h, CPUMilli: cl.CPUMilli, MemoryMiB: cl.MemoryMiB})
			}
			continue
		}
		first, n := c.HostGPUs(h)
		for g := first; g < first+topology.GPUID(n); g++ {
			if l.GPUIsFree(g) {
				take(topology.Claim{Host: h, GPUs: []topology.GPUClaim{{GPU: g}}})
			}
		}
		if cpu, mem := l.CPUFree(h), l.MemoryFree(h); cpu > 0 || mem > 0 {
			take(topology.Claim{Host: h, CPUMilli: max(cpu, 0), MemoryMiB: max(mem, 0)})
		}
	}
	return took
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
