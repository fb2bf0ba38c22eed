package gpusched

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
)

// ErrReentrant: a method that changes the Scheduler was called from
// inside one of its callbacks — Holding's fn, the Ascend callbacks of the
// readers Tree and Ledger return, or a Preemptor or Placer while
// Schedule (or another change: Submit asks the Placer whether a job could
// ever fit) runs. It is refused (a *JobError for a job's event) and
// nothing changes: collect what to do in the callback, and call the
// method after the callback returned. Read methods (Job, Holding, Now,
// Ledger, Tree, …) work inside callbacks.
var ErrReentrant = errors.New("gpusched: called from inside a callback")

// callbackGuard counts the callbacks of the Scheduler running now, and
// the calls that change it (Holding and the readers' Ascend may nest; a
// change — Schedule, an event — counts as one for the Preemptor and
// Placer it calls). Its methods are the only writers of
// depth; it is atomic so that concurrent readers (Synchronized) may enter
// and leave at once. Invariant: depth ≥ 0, and 0 between calls.
type callbackGuard struct{ depth atomic.Int32 }

func (g *callbackGuard) enter() { g.depth.Add(1) }
func (g *callbackGuard) leave() { g.depth.Add(-1) }

// mutating starts call (on job id, if not empty), a method that changes
// the Scheduler: while a callback runs it returns ErrReentrant; otherwise
// it counts the call as running (a callback it makes — a Placer asked
// whether a job could ever fit — may read, not change) and the caller
// defers s.cb.leave(). Every method that changes the Scheduler calls it
// first, before it checks anything else.
func (s *Scheduler) mutating(call, id string) error {
	if s.cb.depth.Load() != 0 {
		const msg = "while a callback of the Scheduler runs (Holding, a reader's Ascend, a Preemptor or Placer); call it after the callback returns"
		if id == "" {
			return fmt.Errorf("%w: %s %s", ErrReentrant, call, msg)
		}
		return jobErr(id, fmt.Errorf("%w: %s(%s) %s", ErrReentrant, call, id, msg))
	}
	s.cb.enter()
	return nil
}

// guardedTree is the queue reader Tree returns: the leaves it hands out
// count their Ascend callbacks with the Scheduler's guard.
type guardedTree struct {
	queue.TreeReader
	g *callbackGuard
}

func (t guardedTree) Leaf(name string) (queue.LeafReader, bool) {
	l, ok := t.TreeReader.Leaf(name)
	if !ok {
		return nil, false
	}
	return guardedLeaf{l, t.g}, true
}

func (t guardedTree) LeafOf(id queue.NodeID) (queue.LeafReader, bool) {
	l, ok := t.TreeReader.LeafOf(id)
	if !ok {
		return nil, false
	}
	return guardedLeaf{l, t.g}, true
}

type guardedLeaf struct {
	queue.LeafReader
	g *callbackGuard
}

func (l guardedLeaf) Ascend(fn func(queue.PendingJob) bool) {
	l.g.enter()
	defer l.g.leave()
	l.LeafReader.Ascend(fn)
}

// guardedLedger is the ledger reader Ledger returns: its Ascend callbacks
// count with the Scheduler's guard.
type guardedLedger struct {
	topology.LedgerReader
	g *callbackGuard
}

func (l guardedLedger) AscendHosts(d topology.DomainID, m topology.ModelID, minFree int, fn func(h topology.HostID, free int) bool) {
	l.g.enter()
	defer l.g.leave()
	l.LedgerReader.AscendHosts(d, m, minFree, fn)
}

func (l guardedLedger) AscendDomains(lv topology.Level, minFree int, fn func(d topology.DomainID, free int) bool) {
	l.g.enter()
	defer l.g.leave()
	l.LedgerReader.AscendDomains(lv, minFree, fn)
}

func (l guardedLedger) AscendSharedGPUs(m topology.ModelID, minFreeMilli int, fn func(g topology.GPUID, freeMilli int) bool) {
	l.g.enter()
	defer l.g.leave()
	l.LedgerReader.AscendSharedGPUs(m, minFreeMilli, fn)
}
