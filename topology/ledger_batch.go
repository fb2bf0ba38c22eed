package topology

// claimBatch gathers the counter changes of one claim's GPUs for the
// domains they share — their host, its network domains and the root — so
// that a claim of n GPUs updates those once instead of n times (Allocate
// and Release of a 512-GPU gang touch 64 hosts, not 512 GPUs' worth of
// ancestors). Each GPU's own domains below the host (NUMA node, PCIe
// switches) and its fabric domain are still updated GPU by GPU.
//
// Owned by the Ledger; only beginClaim, count, touchGPU and endClaim use
// it. The counters of the shared domains are stale between beginClaim and
// endClaim: nothing reads them there (a claim's GPUs are checked against
// their own state and their host's health, never against counters).
type claimBatch struct {
	on bool
	// gpu is a GPU of the claim counted so far (NoGPU: none): its
	// ancestors from the host up are the shared domains.
	gpu GPUID
	// free, milli and ok are the summed deltas for the shared domains;
	// touched says that a free-GPU count changed (the host's and network
	// domains' index entries need marking).
	free    int32
	milli   int64
	ok      int32
	touched bool
}

// beginClaim starts batching the counter changes of GPUs that all lie on
// one host. A slim ledger keeps no counters, so it never batches.
func (l *Ledger) beginClaim() {
	if l.slim {
		return
	}
	l.batch = claimBatch{on: true, gpu: NoGPU}
}

// sharedAnc returns how many of a GPU's ancestors (the last ones) are
// shared by every GPU of its host: the host, the network domains and the
// root.
func (l *Ledger) sharedAnc() int32 { return int32(l.c.LevelCluster()) }

// endClaim applies the batched changes to the shared domains and marks
// their index entries; a no-op when not batching.
func (l *Ledger) endClaim() {
	b := l.batch
	l.batch = claimBatch{}
	if !b.on || b.gpu == NoGPU {
		return
	}
	c := l.c
	x := &c.gpus[b.gpu]
	top := x.ancLo + x.ancN
	shared := c.anc[top-l.sharedAnc() : top]
	if b.free != 0 || b.milli != 0 {
		for _, d := range shared {
			l.freeWhole[d] += b.free
			l.freeMilli[d] += b.milli
		}
	}
	if b.ok != 0 {
		l.ownHealthy()
		for _, d := range shared {
			l.healthy[d] += b.ok
		}
	}
	if b.touched {
		l.idx.touchHost(x.host, c.hosts[x.host].parent)
		l.touchNetworks(top)
	}
}
