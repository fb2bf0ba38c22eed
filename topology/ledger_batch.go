package topology

// claimBatch gathers the counter changes of one claim's GPUs for the
// domains they share — their host, its network domains and the root — so
// that a claim of n GPUs updates those once instead of n times (Allocate
// and Release of a 512-GPU gang touch 64 hosts, not 512 GPUs' worth of
// ancestors); and those of their fabric domain, once per run of GPUs in
// the same fabric domain (all of a host's, on every preset). The domains
// inside a host keep no counters (ledger_inside.go).
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
	// fab is the fabric domain of the GPUs counted last (NoDomain: none),
	// fabFree, fabMilli and fabOK their summed deltas, fabTouched that
	// its index entry needs marking; flushFabric applies them.
	fab        DomainID
	fabFree    int32
	fabMilli   int64
	fabOK      int32
	fabTouched bool
}

// beginClaim starts batching the counter changes of GPUs that all lie on
// one host. A slim ledger keeps no counters, so it never batches.
func (l *Ledger) beginClaim() {
	if l.slim {
		return
	}
	l.batch = claimBatch{on: true, gpu: NoGPU, fab: NoDomain}
}

// batchFabric adds one GPU's deltas for its fabric domain fab (not
// NoDomain) to the batch, applying those of the run before when fab
// differs.
func (l *Ledger) batchFabric(fab DomainID, dFree int32, dMilli int64, dOK int32) {
	b := &l.batch
	if b.fab != fab {
		l.flushFabric()
		b.fab = fab
	}
	b.fabFree += dFree
	b.fabMilli += dMilli
	b.fabOK += dOK
}

// flushFabric applies the batched deltas of the fabric domain b.fab and
// marks its index entry, and empties them.
func (l *Ledger) flushFabric() {
	b := &l.batch
	d := b.fab
	if d == NoDomain {
		return
	}
	l.freeWhole[d] += b.fabFree
	l.freeMilli[d] += b.fabMilli
	if b.fabOK != 0 {
		l.ownHealthy()
		l.healthy[d] += b.fabOK
	}
	if b.fabTouched {
		l.idx.touchDomain(d, LevelFabric)
	}
	b.fab, b.fabFree, b.fabMilli, b.fabOK, b.fabTouched = NoDomain, 0, 0, 0, false
}

// sharedAnc returns how many of a GPU's ancestors (the last ones) are
// shared by every GPU of its host: the host, the network domains and the
// root.
func (l *Ledger) sharedAnc() int32 { return int32(l.c.LevelCluster()) }

// endClaim applies the batched changes to the shared domains and marks
// their index entries; a no-op when not batching.
func (l *Ledger) endClaim() {
	if !l.batch.on {
		return
	}
	l.flushFabric()
	// Read in place (a copy of the batch just written stalls on its
	// stores); beginClaim sets every field again.
	b := &l.batch
	b.on = false
	if b.gpu == NoGPU {
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
