package gpusched

import "github.com/gpusched/gpusched/topology"

// hostLog is a bounded log of the hosts where something changed, each
// entry under a key that never decreases (a ledger generation, or a
// sequence number the log hands out). A cache entry valid at key k asks
// since(k) for the hosts changed after k. When the log is full the older
// half is dropped; a question about a key before what was dropped answers
// "incomplete", and the caller must assume anything changed.
//
// The failure cache logs capacity gains under ledger generations; the
// victim index logs jobs that became possible victims under its own
// sequence.
type hostLog struct {
	entries []hostChange // keys non-decreasing; len ≤ maxHostLog
	// dropped is the key of the newest entry dropped (0: none yet):
	// every entry after a key ≥ dropped is still held.
	dropped uint64
	last    uint64 // the newest key logged (next() hands out last+1)
}

// hostChange is one entry of a hostLog.
type hostChange struct {
	key  uint64
	host topology.HostID
}

// maxHostLog bounds a hostLog.
const maxHostLog = 1 << 14

// add logs a change on host h under key (≥ every key logged before).
func (l *hostLog) add(key uint64, h topology.HostID) {
	if len(l.entries) >= maxHostLog {
		half := len(l.entries) / 2
		l.dropped = l.entries[half-1].key
		l.entries = append(l.entries[:0], l.entries[half:]...)
	}
	l.entries = append(l.entries, hostChange{key: key, host: h})
	l.last = key
}

// next returns a key for add after every key logged so far (for a log
// keyed by its own sequence).
func (l *hostLog) next() uint64 { return l.last + 1 }

// latest is the newest key logged (0 when none).
func (l *hostLog) latest() uint64 { return l.last }

// anySince reports whether some host logged after key after satisfies
// matters, newest first; it reports true, without asking, when entries
// after that key were dropped. O(entries after key).
func (l *hostLog) anySince(after uint64, matters func(topology.HostID) bool) bool {
	if after < l.dropped {
		return true
	}
	for i := len(l.entries) - 1; i >= 0 && l.entries[i].key > after; i-- {
		if matters(l.entries[i].host) {
			return true
		}
	}
	return false
}

// hostsSince appends to out the hosts logged after key, newest first
// (a host may repeat); complete is false when entries after that key
// were dropped. O(entries after key).
func (l *hostLog) hostsSince(after uint64, out []topology.HostID) (_ []topology.HostID, complete bool) {
	if after < l.dropped {
		return out, false
	}
	for i := len(l.entries) - 1; i >= 0 && l.entries[i].key > after; i-- {
		out = append(out, l.entries[i].host)
	}
	return out, true
}
