package queue

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genTree draws a queue tree over capacity64: 1–3 groups of 1–3 leaves
// named by their tag, GPU quotas that fit, weights and policies.
func genTree(t *rapid.T, tag string) Config {
	var root Node
	left := int64(64)
	for g := range rapid.IntRange(1, 3).Draw(t, "groups") {
		grp := Node{Name: fmt.Sprintf("g%d", g), Weight: float64(rapid.IntRange(1, 3).Draw(t, "group weight"))}
		gq := rapid.Int64Range(0, left).Draw(t, "group nominal")
		left -= gq
		grp.Quotas = []Quota{{Resource: "gpu", Nominal: gq}}
		gl := gq
		for l := range rapid.IntRange(1, 3).Draw(t, "leaves") {
			lf := Node{Name: fmt.Sprintf("%s%d-%d", tag, g, l), Weight: float64(rapid.IntRange(1, 3).Draw(t, "leaf weight"))}
			q := Quota{Resource: "gpu", Nominal: rapid.Int64Range(0, gl).Draw(t, "leaf nominal")}
			gl -= q.Nominal
			if rapid.Bool().Draw(t, "borrow limit?") {
				q.BorrowingLimit = Limit(rapid.Int64Range(0, 16).Draw(t, "borrow limit"))
			}
			if rapid.Bool().Draw(t, "max?") {
				q.Max = Limit(q.Nominal + rapid.Int64Range(0, 16).Draw(t, "max"))
			}
			lf.Quotas = []Quota{q}
			lf.Policy.Ordering = rapid.SampledFrom([]Ordering{BestEffortFIFO, StrictFIFO, PriorityAging}).Draw(t, "ordering")
			if lf.Policy.Ordering == PriorityAging {
				lf.Policy.AgingInterval = time.Hour
			}
			grp.Children = append(grp.Children, lf)
		}
		root.Children = append(root.Children, grp)
	}
	return Config{Root: root, Fairness: Fairness{Policy: rapid.SampledFrom([]FairPolicy{DRF, Borrowed, FairTree}).Draw(t, "fairness")}}
}

// leafNames lists the leaves of a config.
func leafNames(c Config) []string {
	var out []string
	var walk func(n *Node)
	walk = func(n *Node) {
		if len(n.Children) == 0 {
			out = append(out, n.Name)
		}
		for i := range n.Children {
			walk(&n.Children[i])
		}
	}
	walk(&c.Root)
	return out
}

type testJob struct {
	e     *Entry
	leaf  string
	state State // Pending, Admitted or Running
	v     Vector
}

// TestReconfigure builds a tree, puts random pending, admitted and
// running jobs in it, reconfigures it to a random new config (some leaves
// kept, some added, some removed with their jobs moved or rejected) and
// checks it against a tree built fresh from the new config with the same
// jobs admitted, started and queued where the moves say: the same usage
// per node, quota answers, views and queue orders, every job in exactly
// one place, and the Fair Tree history carried by name.
func TestReconfigure(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		a := genTree(t, "a")
		tr, err := Build(a, capacity64)
		if err != nil {
			t.Fatalf("valid config rejected: %v", err)
		}
		names := leafNames(a)
		var jobs []*testJob
		for i := range rapid.IntRange(0, 20).Draw(t, "jobs") {
			j := &testJob{leaf: rapid.SampledFrom(names).Draw(t, "job leaf"), v: gpus(rapid.Int64Range(1, 8).Draw(t, "job gpus")),
				state: rapid.SampledFrom([]State{Pending, Admitted, Running}).Draw(t, "job state")}
			j.e = &Entry{ID: fmt.Sprintf("j%d", i), Priority: int32(rapid.IntRange(0, 2).Draw(t, "priority")),
				Submitted: t0.Add(time.Duration(rapid.IntRange(0, 100).Draw(t, "submitted")) * time.Minute), Seq: uint64(i),
				Class: fmt.Sprintf("c%d", j.v[0]), Demand: j.v}
			now := t0.Add(time.Duration(i) * time.Minute)
			lf, _ := tr.Leaf(j.leaf)
			switch j.state {
			case Pending:
				lf.Add(j.e)
			case Admitted:
				tr.Admit(lf.ID(), j.v, now)
				lf.Count(1, 0)
			case Running:
				tr.Admit(lf.ID(), j.v, now)
				tr.Start(lf.ID(), j.v, now)
				lf.Count(0, 1)
			}
			jobs = append(jobs, j)
		}
		// The new config: a fresh draw whose leaves are named "b…", plus
		// some of the old leaves kept under its first group.
		b := genTree(t, "b")
		var kept []string
		for _, n := range names {
			if rapid.Bool().Draw(t, "keep "+n) {
				b.Root.Children[0].Children = append(b.Root.Children[0].Children, Node{Name: n, Weight: 1})
				kept = append(kept, n)
			}
		}
		bNames := leafNames(b)
		target := map[string]string{} // old leaf → new leaf ("" rejected)
		var moves []Move
		for _, n := range names {
			if slices.Contains(kept, n) {
				target[n] = n
				continue
			}
			holds := false
			for _, j := range jobs {
				holds = holds || j.leaf == n && j.state != Pending
			}
			to := rapid.SampledFrom(bNames).Draw(t, "move to")
			if !holds && rapid.Bool().Draw(t, "reject?") {
				to = ""
			}
			target[n] = to
			moves = append(moves, Move{From: n, To: to})
		}
		t1 := t0.Add(3 * time.Hour)
		old := make(map[string]float64)
		for i := range tr.NumNodes() {
			id := NodeID(i)
			old[tr.Name(id)] = tr.History(id).Advance(t1, tr.nodes[id].rate, tr.Fairness().HalfLife).Value
		}
		oldLeaves := map[string]*Leaf{}
		for _, n := range names {
			oldLeaves[n], _ = tr.Leaf(n)
		}
		nt, rc, err := tr.Reconfigure(b, capacity64, moves, t1)
		if err != nil {
			t.Fatalf("valid reconfiguration rejected: %v", err)
		}
		// The oracle: a fresh tree with the same jobs.
		fresh, err := Build(b, capacity64)
		if err != nil {
			t.Fatal(err)
		}
		var rejected []string
		for _, j := range jobs {
			to := target[j.leaf]
			if to == "" {
				if j.state == Pending {
					rejected = append(rejected, j.e.ID)
				}
				continue
			}
			lf, _ := fresh.Leaf(to)
			switch j.state {
			case Pending:
				e := *j.e
				e.leaf, e.class = nil, nil
				lf.Add(&e)
			case Admitted:
				fresh.Admit(lf.ID(), j.v, t1)
				lf.Count(1, 0)
			case Running:
				fresh.Admit(lf.ID(), j.v, t1)
				fresh.Start(lf.ID(), j.v, t1)
				lf.Count(0, 1)
			}
		}
		var gotRejected []string
		for _, e := range rc.Rejected {
			gotRejected = append(gotRejected, e.ID)
		}
		slices.Sort(rejected)
		slices.Sort(gotRejected)
		if !slices.Equal(rejected, gotRejected) {
			t.Fatalf("rejected %v, want %v", gotRejected, rejected)
		}
		for i := range nt.NumNodes() {
			id := NodeID(i)
			ua, ra := nt.Usage(id)
			ub, rb := fresh.Usage(id)
			if !slices.Equal(ua, ub) || !slices.Equal(ra, rb) {
				t.Fatalf("queue %s: usage %v/%v, fresh %v/%v", nt.Name(id), ua, ra, ub, rb)
			}
			if h, ok := old[nt.Name(id)]; ok && nt.History(id).Value != h {
				t.Fatalf("queue %s: history %v, want %v", nt.Name(id), nt.History(id).Value, h)
			}
			if nt.Fairness().Policy != FairTree && (nt.Key(id) != fresh.Key(id) || nt.TieKey(id) != fresh.TieKey(id)) {
				t.Fatalf("queue %s: key %v, fresh %v", nt.Name(id), nt.Key(id), fresh.Key(id))
			}
			if lf := nt.LeafOf(id); lf != nil {
				fl := fresh.LeafOf(id)
				var ga, gb []string
				lf.Ascend(func(e *Entry) bool { ga = append(ga, e.ID); return true })
				fl.Ascend(func(e *Entry) bool { gb = append(gb, e.ID); return true })
				if !slices.Equal(ga, gb) {
					t.Fatalf("queue %s: pending %v, fresh %v", nt.Name(id), ga, gb)
				}
				for _, n := range []int64{1, 8, 40} {
					ba, bb := nt.Check(id, gpus(n)), fresh.Check(id, gpus(n))
					if (ba == nil) != (bb == nil) || ba != nil && ba.String() != bb.String() {
						t.Fatalf("queue %s: Check(%d GPUs) %v, fresh %v", nt.Name(id), n, ba, bb)
					}
				}
			}
		}
		va, vb := nt.View(), fresh.View()
		if nt.Fairness().Policy == FairTree {
			for i := range va {
				va[i].Share, vb[i].Share = 0, 0
			}
		}
		if !reflect.DeepEqual(va, vb) {
			t.Fatalf("views differ:\n%+v\n%+v", va, vb)
		}
		// Each old leaf maps to its target.
		for _, n := range names {
			id, _ := tr.Lookup(n)
			want := NodeID(-1)
			if to := target[n]; to != "" {
				want, _ = nt.Lookup(to)
			}
			if rc.Leaf[id] != want {
				t.Fatalf("leaf %s maps to %d, want %d", n, rc.Leaf[id], want)
			}
			if nl := rc.NewLeaf(oldLeaves[n]); want >= 0 && nl != nt.LeafOf(want) || want < 0 && nl != nil {
				t.Fatalf("leaf %s: NewLeaf is not the new tree's leaf %d", n, want)
			}
		}
		if rc.Kept() != (len(kept) == len(names) && len(rc.Moved) == 0 && func() bool {
			for _, n := range names {
				if nt.LeafOf(rc.Leaf[mustLookup(tr, n)]) != oldLeaves[n] {
					return false
				}
			}
			return true
		}()) {
			t.Fatalf("Kept %v", rc.Kept())
		}
		if nt.Epoch() == tr.Epoch() {
			t.Fatal("the epoch did not change")
		}
	})
}

func TestReconfigureRejects(t *testing.T) {
	tr := build(t, seedConfig())
	exp, _ := tr.Leaf("experiments")
	tr.Admit(exp.ID(), gpus(2), time.Time{})
	exp.Count(1, 0)
	pre, _ := tr.Leaf("pretraining")
	pre.Add(&Entry{ID: "p1", Seq: 1, Demand: gpus(1)})
	without := func(name string) Config {
		c := seedConfig()
		r := &c.Root.Children[0]
		r.Children = slices.DeleteFunc(r.Children, func(n Node) bool { return n.Name == name })
		r.Quotas[0].Nominal = 40
		return c
	}
	models := seedConfig()
	models.Root.Children[1].Quotas = append(models.Root.Children[1].Quotas, Quota{Resource: "gpu/H100", Nominal: 4})
	for _, tc := range []struct {
		name  string
		cfg   Config
		moves []Move
		field string
	}{
		{"bad config", func() Config { c := seedConfig(); c.Root.Children[0].Weight = -1; return c }(), nil, "root.children[0].weight"},
		{"models", models, nil, "root.quotas"},
		{"removed with jobs", without("experiments"), nil, "root"},
		{"removed pending", without("pretraining"), nil, "root"},
		{"rejecting running", without("experiments"), []Move{{From: "experiments"}}, "root"},
		{"unknown from", seedConfig(), []Move{{From: "nope", To: "evaluation"}}, "moves[0].from"},
		{"from stays", seedConfig(), []Move{{From: "evaluation", To: "pretraining"}}, "moves[0].from"},
		{"unknown to", without("experiments"), []Move{{From: "experiments", To: "nope"}}, "moves[0].to"},
		{"to inner", without("experiments"), []Move{{From: "experiments", To: "research"}}, "moves[0].to"},
		{"twice", without("experiments"), []Move{{From: "experiments", To: "evaluation"}, {From: "experiments", To: "evaluation"}}, "moves[1].from"},
	} {
		_, _, err := tr.Reconfigure(tc.cfg, capacity64, tc.moves, time.Time{})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: got %v, want an error at %s", tc.name, err, tc.field)
		}
	}
	// Nothing moved: the old tree still holds its jobs.
	if pre.Len() != 1 || exp.admitted != 1 {
		t.Fatal("a rejected reconfiguration changed the tree")
	}
	nt, rc, err := tr.Reconfigure(without("pretraining"), capacity64, []Move{{From: "pretraining"}}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Rejected) != 1 || rc.Rejected[0].ID != "p1" || rc.Rejected[0].ClassOf() != nil {
		t.Fatalf("rejected %v", rc.Rejected)
	}
	if _, ok := nt.Leaf("pretraining"); ok {
		t.Fatal("removed queue still there")
	}
}

func mustLookup(t *Tree, name string) NodeID {
	id, _ := t.Lookup(name)
	return id
}
