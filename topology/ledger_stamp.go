package topology

import "sync/atomic"

// Host generations are stamps unique across all the ledgers of a process,
// not per-ledger counters: a stamp is a ledger's identity (drawn from
// ledgerIDs) and a count of its changes. So equal HostGeneration values
// mean equal host states even after CopyFrom rolls a ledger back to an
// older state or brings in another ledger's history, and across a ledger
// and its clones: Clone and CopyFrom copy stamps together with the state
// they describe, and every change afterwards takes a stamp never used
// before. Caches keyed by HostGeneration stay sound whatever a caller
// does with Clone and CopyFrom.

// ledgerIDs hands out ledger identities; 0 is never used, so that stamp 0
// means "never changed" (the empty state every new ledger starts in).
var ledgerIDs atomic.Uint64

// stampBits is the width of the change count in a stamp.
const stampBits = 32

// newStampID gives l a fresh identity for its stamps.
func (l *Ledger) newStampID() {
	l.stampID = ledgerIDs.Add(1)
	l.stampN = 0
}

// bumpHost records a change on host h with a fresh stamp. O(1), and
// atomic only once per 2^32 changes of a ledger.
func (l *Ledger) bumpHost(h HostID) {
	if l.slim { // an Occupancy: no stamps kept, none read
		return
	}
	l.stampN++
	if l.stampN == 1<<stampBits {
		l.newStampID()
		l.stampN = 1
	}
	l.hostGen[h] = l.stampID<<stampBits | l.stampN
}
