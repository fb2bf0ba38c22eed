package queue

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/fairshare"
)

// treeWriters are the exported methods of *Tree and *Leaf that change
// them, or hand out something that does; a reader has none of them.
var treeWriters = []string{
	"Admit", "Start", "Release", "Advance", "Next", "WhatIf", "RestoreUsage", "ReadOnly",
	"Add", "Remove", "SetPriority", "Count", "Begin", "Reconfigure",
}

// TestTreeReaderHasNoWriter: the reader types have no writer (compile-time
// interface checks below, reflection here), and every exported method of
// *Tree is either readable through TreeReader, a writer, or listed as
// left out on purpose (so a method added later must be classified).
func TestTreeReaderHasNoWriter(t *testing.T) {
	tr := build(t, seedConfig())
	r := tr.ReadOnly()
	lr, ok := r.Leaf("experiments")
	if !ok {
		t.Fatal("no leaf")
	}
	for _, v := range []any{r, lr} {
		vt := reflect.TypeOf(v)
		for _, name := range treeWriters {
			if _, ok := vt.MethodByName(name); ok {
				t.Errorf("%s has %s", vt, name)
			}
		}
		if reflect.ValueOf(v).Field(0).CanInterface() {
			t.Errorf("%s hands out what it reads through reflection", vt)
		}
	}
	if _, ok := any(r).(*Tree); ok {
		t.Error("the reader is a *Tree")
	}
	if _, ok := any(lr).(*Leaf); ok {
		t.Error("the leaf reader is a *Leaf")
	}
	// Read elsewhere: Check, Borrows and Ceiling take vectors the reader
	// would have to validate (a host reads quotas through View);
	// CheckPriority is the owner's submission check.
	// History and FinishTimeRho are the owner's (snapshots read usage through the tree's own
	// capture); it takes a NodeID the reader would have to validate.
	leftOut := []string{"Check", "Borrows", "Ceiling", "CheckPriority", "History", "FinishTimeRho"}
	rt := reflect.TypeFor[TreeReader]()
	tt := reflect.TypeFor[*Tree]()
	for i := 0; i < tt.NumMethod(); i++ {
		name := tt.Method(i).Name
		_, read := rt.MethodByName(name)
		if read == (slices.Contains(treeWriters, name) || slices.Contains(leftOut, name)) {
			t.Errorf("*Tree.%s: classify it as read (in TreeReader), written or left out", name)
		}
	}
}

var (
	_ TreeReader = treeReader{}
	_ LeafReader = leafReader{}
)

// TestTreeReaderCopies: what the reader returns is the caller's to change.
func TestTreeReaderCopies(t *testing.T) {
	tr := build(t, seedConfig())
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	exp := leaf(t, tr, "experiments")
	tr.Admit(exp, gpus(4), now)
	l := tr.LeafOf(exp)
	l.Add(&Entry{ID: "a", Priority: 3, Submitted: now, Seq: 1, Demand: gpus(2)})
	l.Add(&Entry{ID: "b", Priority: 1, Submitted: now, Seq: 2, Demand: gpus(1)})
	r := tr.ReadOnly()
	before := tr.View()

	scribble := func(v []int64) {
		for i := range v {
			v[i] = -7
		}
	}
	scribble(r.Capacity())
	used, res := r.Usage(exp)
	scribble(used)
	scribble(res)
	scribble(r.Nominal(exp))
	for _, s := range [][]NodeID{r.Leaves(), r.Children(0)} {
		for i := range s {
			s[i] = 99
		}
	}
	if d := r.Dimensions(); len(d.Models) > 0 {
		d.Models[0] = "X"
	}
	lr, _ := r.LeafOf(exp)
	var ids []string
	lr.Ascend(func(p PendingJob) bool {
		ids = append(ids, p.ID)
		scribble(p.Demand)
		return true
	})
	if h, ok := lr.Head(); !ok || h.ID != "a" || h.Priority != 3 || h.Demand[0] != 2000 {
		t.Errorf("head %+v", h)
	}
	if !slices.Equal(ids, []string{"a", "b"}) || lr.Len() != 2 || lr.Name() != "experiments" || lr.ID() != exp {
		t.Errorf("leaf reads %v", ids)
	}
	if !reflect.DeepEqual(tr.View(), before) || tr.Capacity()[0] != 64000 || tr.Leaves()[0] == 99 || tr.Children(0)[0] == 99 {
		t.Fatal("changing what the reader returned changed the tree")
	}
	if e, _ := l.Head(); e.Demand[0] != 2000 {
		t.Fatal("changing a pending job's copy changed its entry")
	}
	// The reader shows the tree as it is now.
	tr.Admit(exp, gpus(1), now)
	if u, _ := r.Usage(exp); u == nil || tr.Epoch() != r.Epoch() {
		t.Fatal("reader out of date")
	}
	if _, res := r.Usage(exp); res[0] != 5000 {
		t.Errorf("reserved %v, want 5 GPUs", res)
	}
}

// TestTreeReaderBadIDs: IDs that are no node answer with zero values.
func TestTreeReaderBadIDs(t *testing.T) {
	r := build(t, seedConfig()).ReadOnly()
	for _, id := range []NodeID{-1, -100, NodeID(r.NumNodes()), 1 << 30} {
		if r.Name(id) != "" || r.Path(id) != "" || r.Parent(id) != -1 || r.Children(id) != nil || r.Nominal(id) != nil ||
			r.Key(id) != 0 || r.TieKey(id) != 0 || r.FairTreeUsage(id) != (fairshare.Usage{}) {
			t.Errorf("node %d answers", id)
		}
		if u, res := r.Usage(id); u != nil || res != nil {
			t.Errorf("node %d has usage", id)
		}
		if _, ok := r.LeafOf(id); ok {
			t.Errorf("node %d is a leaf", id)
		}
	}
	if _, ok := r.LeafOf(0); ok {
		t.Error("the root is a leaf")
	}
	if _, ok := r.Leaf("research"); ok {
		t.Error("an inner node is a leaf")
	}
	if r.Governed(-1) || r.Governed(99) {
		t.Error("a dimension that does not exist is governed")
	}
}

// TestRestoreUsage: a tree whose Fair Tree usage is restored from another
// orders its queues exactly as the other does, now and as time goes on.
func TestRestoreUsage(t *testing.T) {
	cfg := seedConfig()
	cfg.Fairness = Fairness{Policy: FairTree, HalfLife: 24 * time.Hour}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	a := build(t, cfg)
	exp, pre, eval := leaf(t, a, "experiments"), leaf(t, a, "pretraining"), leaf(t, a, "evaluation")
	// History: pretraining ran 16 GPUs for a day, evaluation 8 for 3 hours.
	a.Admit(pre, gpus(16), t0)
	a.Start(pre, gpus(16), t0)
	a.Admit(eval, gpus(8), t0.Add(time.Hour))
	a.Start(eval, gpus(8), t0.Add(time.Hour))
	a.Release(eval, gpus(8), true, t0.Add(4*time.Hour))
	a.Admit(exp, gpus(2), t0.Add(20*time.Hour))
	a.Release(pre, gpus(16), true, t0.Add(24*time.Hour))
	now := t0.Add(30 * time.Hour)
	a.Advance(now)

	// A fresh tree holding what a holds now: only experiments' 2 GPUs.
	b := build(t, cfg)
	b.Admit(exp, gpus(2), now)
	ra := a.ReadOnly()
	for id := NodeID(0); int(id) < ra.NumNodes(); id++ {
		if err := b.RestoreUsage(id, ra.FairTreeUsage(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, at := range []time.Duration{0, time.Hour, 50 * time.Hour} {
		a.Advance(now.Add(at))
		b.Advance(now.Add(at))
		for id := NodeID(0); int(id) < ra.NumNodes(); id++ {
			if ka, kb := a.Key(id), b.Key(id); ka != kb || a.TieKey(id) != b.TieKey(id) {
				t.Fatalf("+%v: %s: key %v, restored %v", at, a.Name(id), ka, kb)
			}
		}
	}
	if a.Key(pre) == 0 || a.Key(pre) == a.Key(exp) {
		t.Fatalf("the history left no trace: %v %v", a.Key(pre), a.Key(exp))
	}
	for _, u := range []fairshare.Usage{{Value: -1}, {Value: math.Inf(1)}, {Value: math.NaN()}} {
		if err := b.RestoreUsage(exp, u); err == nil {
			t.Errorf("usage %v restored", u.Value)
		}
	}
	if err := b.RestoreUsage(-1, fairshare.Usage{}); err == nil {
		t.Error("node -1 restored")
	}
}
