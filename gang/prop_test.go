package gang

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
	"pgregory.net/rapid"
)

// TestPropertiesEveryPolicy places random request streams on random
// clusters with every policy and checks the invariants after each step:
// Place leaves the ledger (state and Generation) unchanged; a placement
// gives no GPU twice, places every group whole (elastic ones between Min
// and Count), honours the request's models, filters and required levels;
// Commit applies it and the ledger's counters and indexes stay consistent
// (Ledger.Check); Undo is idempotent and restores the state; explanations
// are coherent with the cluster's counters.
func TestPropertiesEveryPolicy(t *testing.T) {
	for _, name := range PolicyNames() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { propertyRun(rt, name) })
		})
	}
	// The same with index cursors merged, and shared GPUs found through
	// the ledger's index, even in small scopes (the paths large clusters
	// take).
	defer func(g, s int) { gatherMax, smallScope = g, s }(gatherMax, smallScope)
	gatherMax, smallScope = 0, 0
	for _, name := range []string{"best-fit", "worst-fit", "first-fit", "random", "topology", "buddy"} {
		t.Run(name+"/cursors", func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) { propertyRun(rt, name) })
		})
	}
}

type held struct {
	tx Txn
	p  *Placement
	r  *Request
}

func propertyRun(t *rapid.T, name string) {
	c := randomCluster(t)
	l := topology.NewLedger(c)
	randomFill(t, l)
	start := snap(l)
	pl := newPolicy(t, name, c)
	tracker := pl.(Tracker)
	kinds := []TaskKind{TaskWhole, TaskWhole, TaskWhole, TaskShare, TaskMIG, TaskCPU}
	var hold []held
	steps := rapid.IntRange(1, 10).Draw(t, "steps")
	for i := 0; i < steps; i++ {
		if len(hold) > 0 && rapid.IntRange(0, 3).Draw(t, "undo") == 0 {
			k := rapid.IntRange(0, len(hold)-1).Draw(t, "which")
			h := hold[k]
			if err := h.tx.Undo(); err != nil {
				t.Fatalf("undo: %v", err)
			}
			if err := h.tx.Undo(); err != nil || h.tx.Applied() {
				t.Fatalf("second undo: %v, applied %v", err, h.tx.Applied())
			}
			tracker.Undone(h.r, h.p)
			hold = append(hold[:k], hold[k+1:]...)
			if err := l.Check(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		j := randomJob(t, c, fmt.Sprintf("j%d", i), kinds)
		r, err := NewRequest(c, j)
		if err != nil {
			// Random jobs may pin a model without the MIG profile they ask
			// for; that must be a field error, nothing else.
			var fe *workload.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("NewRequest: %v", err)
			}
			continue
		}
		r.Seed = rapid.Uint64().Draw(t, "seed")
		if rapid.IntRange(0, 3).Draw(t, "filter") == 0 {
			banned := topology.HostID(rapid.IntRange(0, c.NumHosts()-1).Draw(t, "banned"))
			r.AllowHost = func(h topology.HostID) bool { return h != banned }
		}
		if rapid.IntRange(0, 5).Draw(t, "gpuFilter") == 0 && c.NumGPUs() > 0 {
			banned := topology.GPUID(rapid.IntRange(0, c.NumGPUs()-1).Draw(t, "bannedGPU"))
			r.AllowGPU = func(g topology.GPUID) bool { return g != banned }
		}
		drawGroupFilters(t, r)
		before := snap(l)
		p := &Placement{}
		x := pl.Place(l, r, p)
		if d := before.diff(snap(l)); d != "" {
			t.Fatalf("Place changed the ledger: %s", d)
		}
		if x != nil {
			checkExplanation(t, l, r, x, p)
			continue
		}
		checkPlacement(t, l, r, p)
		tx, err := Commit(l, p)
		if err != nil {
			t.Fatalf("commit of a fresh placement: %v", err)
		}
		if _, err := Commit(l, p); err != ErrCommitted {
			t.Fatalf("second commit: %v", err)
		}
		tracker.Committed(r, p)
		if err := l.Check(); err != nil {
			t.Fatal(err)
		}
		hold = append(hold, held{tx, p, r})
	}
	for i := len(hold) - 1; i >= 0; i-- {
		if err := hold[i].tx.Undo(); err != nil {
			t.Fatal(err)
		}
		tracker.Undone(hold[i].r, hold[i].p)
	}
	end := snap(l)
	end.gen = start.gen
	if d := start.diff(end); d != "" {
		t.Fatalf("undoing everything did not restore the ledger: %s", d)
	}
}

func checkExplanation(t *rapid.T, l *topology.Ledger, r *Request, x *Explanation, p *Placement) {
	c := l.Cluster()
	d := r.MinDemand()
	if p.Len() != 0 {
		t.Fatalf("failed Place left %d claims", p.Len())
	}
	if x.Job != r.ID || x.Tasks != d.Tasks || x.GPUs != d.GPUs || x.Level != r.Within() {
		t.Fatalf("explanation header %+v for demand %+v", x, d)
	}
	if x.FreeGPUs != l.FreeGPUs(c.Root()) || x.TotalGPUs != c.NumGPUs() {
		t.Fatalf("explanation counts %d/%d, ledger %d/%d", x.FreeGPUs, x.TotalGPUs, l.FreeGPUs(c.Root()), c.NumGPUs())
	}
	if x.Usable > x.FreeGPUs || x.Allowed > x.Usable {
		t.Fatalf("usable %d / allowed %d / free %d out of order", x.Usable, x.Allowed, x.FreeGPUs)
	}
	if x.Verdict == VerdictCapacity && x.Limit == ReasonGPU && d.GPUs > 0 && x.Usable >= d.GPUs && (x.ShapeTask == 0 || x.ShapeHas >= x.ShapeNeed) {
		t.Fatalf("capacity verdict with %d usable GPUs for %d (%d on hosts that can hold a task)", x.Usable, d.GPUs, x.ShapeHas)
	}
	if x.ShapeTask > 0 {
		// By shape: the hosts that can hold a task have too few free
		// GPUs, the rest is free elsewhere; and truly no host of the
		// models named has a task's GPUs when the reason says so.
		if x.Verdict != VerdictCapacity || x.ShapeHas >= x.ShapeNeed || x.ShapeNeed > d.GPUs || x.ShapeFree <= 0 || x.ShapeHas+x.ShapeFree != x.FreeGPUs || x.ShapeModels == "" {
			t.Fatalf("shape explanation %+v for demand %+v", x, d)
		}
	}
	switch {
	case x.Limit != ReasonGPU && x.Limit != ReasonCPU && x.Limit != ReasonMemory:
		t.Fatalf("limit %v", x.Limit)
	case x.Group < -1 || x.Group >= len(r.Groups):
		t.Fatalf("group %d of %d", x.Group, len(r.Groups))
	case x.Room >= 0 && (x.Verdict != VerdictCapacity || x.Limit == ReasonGPU || x.Room >= x.RoomNeeds):
		t.Fatalf("room %d of %d: %v, %v", x.Room, x.RoomNeeds, x.Verdict, x.Limit)
	case x.Room < 0 && x.Group >= 0 && (x.Verdict != VerdictTooLarge && x.Verdict != VerdictCapacity || x.TaskNeeds <= x.HostHas):
		t.Fatalf("group %d: %v, needs %d, has %d", x.Group, x.Verdict, x.TaskNeeds, x.HostHas)
	case x.Room < 0 && x.Limit != ReasonGPU && x.Group < 0:
		t.Fatalf("limit %v without a group", x.Limit)
	}
	if x.Verdict == VerdictFragmentation && d.GPUs > x.Allowed {
		t.Fatalf("fragmentation verdict with %d allowed GPUs for %d", x.Allowed, d.GPUs)
	}
	if x.TooSmall < 0 || x.TooSmall > x.Domains {
		t.Fatalf("%d of %d domains too small", x.TooSmall, x.Domains)
	}
	n := 0
	for _, k := range x.Excluded {
		n += k
	}
	if n > x.Hosts {
		t.Fatalf("%d hosts excluded of %d", n, x.Hosts)
	}
	if x.String() == "" {
		t.Fatal("empty explanation")
	}
}
