package queue

import (
	"fmt"
	"math"

	"github.com/gpusched/gpusched/fairshare"
)

// RestoreUsage sets node id's decayed Fair Tree usage, as TreeReader's
// FairTreeUsage read it from another tree: how a restarted owner gets back
// the usage history its queue order depends on. Call it after the jobs
// that hold resources are charged again (their charges advance the usage
// to their times), so that the value set is the one that counts; from
// then on usage accrues from u.At at the rate of what the node holds.
// It fails for an ID that is not a node, and for a value that is
// negative or not finite.
func (t *Tree) RestoreUsage(id NodeID, u fairshare.Usage) error {
	if id < 0 || int(id) >= len(t.nodes) {
		return fmt.Errorf("queue: RestoreUsage: no node %d (the tree has %d)", id, len(t.nodes))
	}
	if u.Value < 0 || math.IsNaN(u.Value) || math.IsInf(u.Value, 0) {
		return fmt.Errorf("queue: RestoreUsage: queue %s: usage %g, want a finite value ≥ 0", t.nodes[id].name, u.Value)
	}
	t.nodes[id].usage = u
	t.epoch++
	t.invalidate(id)
	return nil
}
