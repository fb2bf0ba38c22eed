package gpusched

import (
	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
)

// failureCache remembers, per class and model filter (shape + key of the
// filter), that the placer found no room, and what has been freed since:
// a failure holds until a host where a task of the class could now fit
// gains capacity. The cycle's evaluate is its only reader; evaluate,
// the release and health transitions and the nominations' drop its
// writers, each through one method below.
type failureCache struct {
	// byKey holds the failures. Invariant: a failure's gen is a ledger
	// generation at which the placer failed, or to which nothing logged
	// in gains since could change that (stillFails fast-forwards it).
	byKey map[string]*failure
	// gains logs capacity increases (releases, returns to health) by
	// ledger generation after the change.
	gains hostLog
}

// failure is a cached placement failure of one shape.
type failure struct {
	gen    uint64 // ledger generation it was true at (or fast-forwarded to)
	reason *Reason
	req    *gang.Request
}

// maxCached bounds the shape caches: in a long replay with many distinct
// shapes, failures of shapes that no longer wait would pile up. They are
// caches; dropping them only costs a placement attempt.
const maxCached = 1 << 16

func newFailureCache() failureCache { return failureCache{byKey: map[string]*failure{}} }

// bound drops every failure when there are too many.
func (fc *failureCache) bound() {
	if len(fc.byKey) > maxCached {
		clear(fc.byKey)
	}
}

// invalidateAll forgets every failure (capacity came back that the gains
// do not show, e.g. a nomination's hold).
func (fc *failureCache) invalidateAll() { clear(fc.byKey) }

// gained logs that host h gained capacity at ledger generation gen.
func (fc *failureCache) gained(gen uint64, h topology.HostID) { fc.gains.add(gen, h) }

// lookup returns the reason of the failure cached under key if it still
// holds for a request with host filter allow (see stillFails), or nil.
func (fc *failureCache) lookup(key string, allow func(topology.HostID) bool, l *topology.Ledger, c *topology.Cluster) *Reason {
	if f := fc.byKey[key]; f != nil && fc.stillFails(f, allow, l, c) {
		return f.reason
	}
	return nil
}

// record caches that req failed under key at ledger generation gen.
func (fc *failureCache) record(key string, gen uint64, r *Reason, req *gang.Request) {
	fc.byKey[key] = &failure{gen: gen, reason: r, req: req}
}

// forget drops the failure under key (the class placed).
func (fc *failureCache) forget(key string) { delete(fc.byKey, key) }

// stillFails reports whether a cached failure still holds: nothing was
// freed since it was recorded on a host that could take a task of the
// request. Placement is monotone in free capacity for the placers we
// know, so losses alone never make a failed shape fit; a gain can only
// matter on a host where a task now fits. When it still holds the record
// is fast-forwarded to the current generation. O(gains since).
func (fc *failureCache) stillFails(f *failure, allow func(topology.HostID) bool, l *topology.Ledger, c *topology.Cluster) bool {
	gen := l.Generation()
	if f.gen == gen {
		return true
	}
	if fc.gains.anySince(f.gen, func(h topology.HostID) bool { return hostCouldTake(l, c, h, f.req, allow) }) {
		return false
	}
	f.gen = gen
	return true
}

// hostCouldTake reports whether host h could take at least one task of
// some group of r now (an optimistic test: shares and MIG instances count
// as fitting when the host has any free GPU capacity).
func hostCouldTake(l *topology.Ledger, c *topology.Cluster, h topology.HostID, r *gang.Request, allow func(topology.HostID) bool) bool {
	if !l.HostUsable(h) { // healthy and not cordoned (Uncordon logs a gain)
		return false
	}
	if allow != nil && !allow(h) {
		return false
	}
	m := c.HostModel(h)
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Kind != gang.TaskCPU && !g.Accepts(m) {
			continue
		}
		if l.CPUFree(h) < g.CPUMilli || l.MemoryFree(h) < g.MemoryMiB {
			continue
		}
		switch g.Kind {
		case gang.TaskCPU:
			return true
		case gang.TaskWhole:
			if l.HostFreeGPUs(h) >= g.GPUs {
				return true
			}
		default:
			first, n := c.HostGPUs(h)
			for k := 0; k < n; k++ {
				if l.GPUFreeMilli(first+topology.GPUID(k)) > 0 {
					return true
				}
			}
		}
	}
	return false
}
