package plugin

import "github.com/gpusched/gpusched/topology"

// ledgerOwner is whoever keeps gpusched's ledger in a mode: scheduler
// mode's host, placement mode's state. readLedger calls f with the ledger
// under the owner's lock and reports whether there is one yet (false:
// f was not called).
type ledgerOwner interface {
	readLedger(f func(l topology.LedgerReader)) bool
}

// ledgerGPUs is what the DRA concern reads of a node's GPUs in the
// ledger of o, the one implementation of both modes (drat.free,
// drat.freeSet, drat.idle). Each method takes o's lock; ok is false
// before the ledger knows the node.
type ledgerGPUs struct{ o ledgerOwner }

// freeGPUs returns the number of free allocatable GPUs of node.
func (g ledgerGPUs) freeGPUs(node string) (n int, ok bool) {
	g.o.readLedger(func(l topology.LedgerReader) {
		var hid topology.HostID
		if hid, ok = l.Cluster().HostByName(node); ok {
			n = l.HostFreeGPUs(hid)
		}
	})
	return n, ok
}

// freeGPUSet returns, per GPU of node (by its index on the node), whether
// it is wholly free and allocatable.
func (g ledgerGPUs) freeGPUSet(node string) ([]bool, bool) {
	return g.gpuSet(node, func(l topology.LedgerReader, x topology.GPUID) bool {
		return l.GPU(x).Mode == topology.ModeFree && l.GPUFreeMilli(x) == topology.MilliPerGPU
	})
}

// idleGPUSet returns, per GPU of node, whether it has nothing allocated,
// whatever its health (dra_lend.go).
func (g ledgerGPUs) idleGPUSet(node string) ([]bool, bool) {
	return g.gpuSet(node, func(l topology.LedgerReader, x topology.GPUID) bool {
		return l.GPU(x).Mode == topology.ModeFree
	})
}

// gpuSet returns is of each GPU of node, by index.
func (g ledgerGPUs) gpuSet(node string, is func(topology.LedgerReader, topology.GPUID) bool) (out []bool, ok bool) {
	g.o.readLedger(func(l topology.LedgerReader) {
		c := l.Cluster()
		var hid topology.HostID
		if hid, ok = c.HostByName(node); !ok {
			return
		}
		first, n := c.HostGPUs(hid)
		out = make([]bool, n)
		for i := range out {
			out[i] = is(l, first+topology.GPUID(i))
		}
	})
	return out, ok
}

// readLedger calls f with the host's ledger (ledgerOwner). It takes mu.
func (h *host) readLedger(f func(l topology.LedgerReader)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s == nil || h.topo == nil {
		return false
	}
	f(h.s.Ledger())
	return true
}

// readLedger calls f with placement mode's ledger (ledgerOwner). It takes
// mu.
func (s *state) readLedger(f func(l topology.LedgerReader)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topo == nil || s.ledger == nil {
		return false
	}
	f(s.ledger)
	return true
}
