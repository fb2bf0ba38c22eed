package fairshare

import (
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestFairTreeSlurmExample reproduces the example of Slurm's Fair Tree
// documentation (https://slurm.schedmd.com/fair_tree.html, "Overview for
// End Users"):
//
//	root => Acct1 => Acct12 => UserA
//	root => Acct1 => Acct16 => UserB
//
// "Acct1 is the first common ancestor of UserA and UserB. Check the Level FS
// values of Acct12 and Acct16. If UserB has a higher FairShare value than
// UserA, Acct16 has a higher Level FS value than Acct12."
//
// With equal shares and UserA having used 300 to UserB's 100, Acct12 has
// S = 1/2, U = 300/400 → LF = 2/3, and Acct16 S = 1/2, U = 100/400 → LF = 2;
// so UserB ranks first (rank 2 of 2, FairShare 1.0) and UserA second (rank
// 1, FairShare 0.5). A sibling account Acct2 with no usage has LF = +Inf and
// its user outranks both.
func TestFairTreeSlurmExample(t *testing.T) {
	root := Account{Name: "root", Children: []Account{
		{Name: "Acct1", Shares: 1, Children: []Account{
			{Name: "Acct12", Shares: 1, Children: []Account{{Name: "UserA", Shares: 1, Usage: 300}}},
			{Name: "Acct16", Shares: 1, Children: []Account{{Name: "UserB", Shares: 1, Usage: 100}}},
		}},
		{Name: "Acct2", Shares: 1, Children: []Account{{Name: "UserC", Shares: 1}}},
	}}
	res, err := FairTree(root)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, u := range res.Users {
		got = append(got, u.Path)
	}
	want := []string{"Acct2/UserC", "Acct1/Acct16/UserB", "Acct1/Acct12/UserA"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", got, want)
	}
	wantRank := []int{3, 2, 1}
	for i, u := range res.Users {
		if u.Rank != wantRank[i] || math.Abs(u.FairShare-float64(wantRank[i])/3) > 1e-12 {
			t.Errorf("%s: rank %d fairshare %v, want %d", u.Path, u.Rank, u.FairShare, wantRank[i])
		}
	}
	lf := map[string]float64{}
	for _, n := range res.Nodes {
		lf[n.Path] = n.LevelFS
	}
	if math.Abs(lf["Acct1/Acct12"]-2.0/3) > 1e-12 || lf["Acct1/Acct16"] != 2 || !math.IsInf(lf["Acct2"], 1) || lf["Acct1"] != 0.5/1 {
		// Acct1: S = 1/2, U = 400/400 = 1 → LF = 0.5.
		t.Fatalf("level FS %v", lf)
	}
}

// TestFairTreeTies checks the three tie rules of the Fair Tree docs.
func TestFairTreeTies(t *testing.T) {
	// Under root: user u1 (S=1/4, U=100/400 → LF 1), account A (S=1/4,
	// U=100/400 → LF 1), account B (S=1/4, U=100/400 → LF 1), user u0
	// (S=1/4, U=100/400 → LF 1). All tie: sibling users share a rank (u0,
	// u1: rank 5 of 5 users), then the tied accounts A and B merge their
	// children: a1 (S=1/2, U=50/100 → 1), a2 (same) and b1 (S=1, U=1 → 1).
	// A user tied with a sibling account gets the rank of the account's
	// highest user, and the merged children tie among themselves: all five
	// users have rank 5.
	root := Account{Children: []Account{
		{Name: "u1", Shares: 1, Usage: 100},
		{Name: "A", Shares: 1, Children: []Account{{Name: "a1", Shares: 1, Usage: 50}, {Name: "a2", Shares: 1, Usage: 50}}},
		{Name: "B", Shares: 1, Children: []Account{{Name: "b1", Shares: 1, Usage: 100}}},
		{Name: "u0", Shares: 1, Usage: 100},
	}}
	res, err := FairTree(root)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, u := range res.Users {
		paths = append(paths, u.Path)
		if u.Rank != 5 {
			t.Errorf("%s rank %d, want 5 (all tied)", u.Path, u.Rank)
		}
	}
	if got := strings.Join(paths, " "); got != "u0 u1 A/a1 A/a2 B/b1" {
		t.Fatalf("order %s", got)
	}

	// A break after a tie: w and x have no usage (LF +Inf), y and z S = 1/4,
	// U = 1/2 → LF 1/2. Order: w, x tied at +Inf (rank 4), then y, z tied
	// (rank 2: the rank moves to the running count on a break).
	res, err = FairTree(Account{Children: []Account{
		{Name: "x", Shares: 1}, {Name: "y", Shares: 1, Usage: 5}, {Name: "z", Shares: 1, Usage: 5}, {Name: "w", Shares: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"w": 4, "x": 4, "y": 2, "z": 2}
	for _, u := range res.Users {
		if want[u.Path] != u.Rank {
			t.Errorf("%s rank %d, want %d", u.Path, u.Rank, want[u.Path])
		}
	}
	// Zero shares rank last even with no usage.
	res, _ = FairTree(Account{Children: []Account{{Name: "none", Usage: 0}, {Name: "some", Shares: 1, Usage: 10}}})
	if res.Users[0].Path != "some" || res.Users[1].LevelFS != 0 {
		t.Fatalf("zero shares: %+v", res.Users)
	}
}

func TestFairTreeErrors(t *testing.T) {
	_, err := FairTree(Account{Children: []Account{{Name: "a", Shares: -1}}})
	if ie, ok := err.(*InputError); !ok || ie.Field != "root.children[0].shares" {
		t.Fatalf("err %v", err)
	}
	_, err = FairTree(Account{Children: []Account{{Name: "a", Children: []Account{{Usage: math.Inf(1)}}}}})
	if ie, ok := err.(*InputError); !ok || ie.Field != "root.children[0].children[0].usage" {
		t.Fatalf("err %v", err)
	}
}

func genAccount(t *rapid.T, depth int, name string) Account {
	a := Account{Name: name, Shares: float64(rapid.IntRange(0, 3).Draw(t, "shares"))}
	if depth == 0 || rapid.IntRange(0, 2).Draw(t, "leaf") == 0 {
		a.Usage = float64(rapid.IntRange(0, 4).Draw(t, "usage"))
		return a
	}
	n := rapid.IntRange(1, 3).Draw(t, "kids")
	for i := 0; i < n; i++ {
		a.Children = append(a.Children, genAccount(t, depth-1, name+string(rune('a'+i))))
	}
	return a
}

// TestFairTreeProperty checks the defining property on random trees: if
// sibling accounts A and B have LF(A) > LF(B), every user under A has a
// higher rank than every user under B; and ranks never increase along the
// returned order.
func TestFairTreeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := genAccount(t, 3, "r")
		root.Children = append(root.Children, Account{Name: "extra", Shares: 1})
		res, err := FairTree(root)
		if err != nil {
			t.Fatal(err)
		}
		rank := map[string]int{}
		for i, u := range res.Users {
			rank[u.Path] = u.Rank
			if i > 0 && u.Rank > res.Users[i-1].Rank {
				t.Fatalf("ranks increase: %+v", res.Users)
			}
		}
		lf := map[string]float64{}
		for _, n := range res.Nodes {
			lf[n.Path] = n.LevelFS
		}
		var check func(a *Account, path string)
		check = func(a *Account, path string) {
			for i := range a.Children {
				for j := range a.Children {
					ci, cj := &a.Children[i], &a.Children[j]
					pi, pj := join(path, ci.Name), join(path, cj.Name)
					if len(ci.Children) == 0 || len(cj.Children) == 0 || !(lf[pi] > lf[pj]) {
						continue
					}
					for ui, ri := range rank {
						for uj, rj := range rank {
							if strings.HasPrefix(ui, pi+"/") && strings.HasPrefix(uj, pj+"/") && ri <= rj {
								t.Fatalf("%s (LF %v) user %s rank %d ≤ %s (LF %v) user %s rank %d", pi, lf[pi], ui, ri, pj, lf[pj], uj, rj)
							}
						}
					}
				}
				check(&a.Children[i], join(path, a.Children[i].Name))
			}
		}
		check(&root, "")
	})
}

func join(p, n string) string {
	if p == "" {
		return n
	}
	return p + "/" + n
}

func TestDecay(t *testing.T) {
	h := 24 * time.Hour
	if got := Decay(100, h, h); math.Abs(got-50) > 1e-9 {
		t.Fatalf("one half-life: %v", got)
	}
	if got := Decay(100, 3*h, h); math.Abs(got-12.5) > 1e-9 {
		t.Fatalf("three half-lives: %v", got)
	}
	if Decay(100, h, 0) != 100 || Decay(100, -h, h) != 100 {
		t.Fatal("no decay expected")
	}
}

func TestUsageAdvance(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	u := Usage{}.Advance(t0, 8, h) // starts the clock
	if u.Value != 0 || !u.At.Equal(t0) {
		t.Fatalf("start: %+v", u)
	}
	// Without decay: 8 GPUs for an hour = 28800 GPU-seconds.
	if got := u.Advance(t0.Add(h), 8, 0).Value; got != 8*3600 {
		t.Fatalf("no decay: %v", got)
	}
	// With decay: accrual over one half-life is r·h/ln2·(1 − 1/2).
	want := 8 * 3600 / math.Ln2 * 0.5
	if got := u.Advance(t0.Add(h), 8, h).Value; math.Abs(got-want) > 1e-6 {
		t.Fatalf("decay: %v want %v", got, want)
	}
	// Advancing in two steps equals one step.
	a := u.Advance(t0.Add(20*time.Minute), 8, h).Advance(t0.Add(h), 8, h)
	if math.Abs(a.Value-want) > 1e-6 {
		t.Fatalf("two steps %v, one step %v", a.Value, want)
	}
	// Going back in time changes nothing.
	if b := a.Advance(t0, 8, h); b != a {
		t.Fatalf("back in time: %+v", b)
	}
}

func TestBorrowedShare(t *testing.T) {
	// Nominal 10 GPUs, 4 CPU; uses 16 GPUs and 3 CPU; the cohort can lend
	// 24 GPUs and 8 CPU: borrowed 6/24 = 0.25 of GPU, none of CPU.
	s, d := BorrowedShare([]int64{16, 3}, []int64{10, 4}, []int64{24, 8}, 1)
	if s != 0.25 || d != 0 {
		t.Fatalf("got %v %d", s, d)
	}
	// Weight 2 halves it.
	if s, _ := BorrowedShare([]int64{16, 3}, []int64{10, 4}, []int64{24, 8}, 2); s != 0.125 {
		t.Fatalf("weight 2: %v", s)
	}
	// Within nominal: 0 whatever the weight.
	if s, d := BorrowedShare([]int64{5, 3}, []int64{10, 4}, []int64{24, 8}, 0); s != 0 || d != -1 {
		t.Fatalf("within nominal: %v %d", s, d)
	}
	// Borrowing with weight 0: +Inf.
	if s, _ := BorrowedShare([]int64{11, 3}, []int64{10, 4}, []int64{24, 8}, 0); !math.IsInf(s, 1) {
		t.Fatalf("weight 0: %v", s)
	}
}

func TestHDRF(t *testing.T) {
	// 12 GPUs; research (weight 1) has one team, product (weight 2) two
	// teams of weights 3 and 1; every task takes one GPU. The orgs split
	// 1:2 (research 4, product 8) and product's teams 3:1 (6 and 2). Traced
	// by hand: r a b r a a r a b r a a — research takes the first task on
	// the tie at zero, and each later tie goes to the earlier sibling.
	root := Node{Children: []Node{
		{Name: "research", Children: []Node{{Name: "llm", Task: []int64{1}}}},
		{Name: "product", Weight: 2, Children: []Node{
			{Name: "a", Weight: 3, Task: []int64{1}},
			{Name: "b", Weight: 1, Task: []int64{1}},
		}},
	}}
	got, err := HDRF([]int64{12}, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []LeafAllocation{{"research/llm", 4}, {"product/a", 6}, {"product/b", 2}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
	if _, err := HDRF([]int64{1}, Node{Children: []Node{{Name: "x", Task: []int64{-1}}}}); err == nil || err.(*InputError).Field != "root.children[0].task[0]" {
		t.Fatalf("bad task: %v", err)
	}
}

// TestHDRFPareto checks on random two-level trees that no leaf could take
// another task and capacity holds.
func TestHDRFPareto(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, users := genInstance(t)
		root := Node{}
		for i, u := range users {
			g := i % 2
			for len(root.Children) <= g {
				root.Children = append(root.Children, Node{Name: string(rune('A' + len(root.Children))), Weight: float64(rapid.IntRange(0, 2).Draw(t, "gw"))})
			}
			root.Children[g].Children = append(root.Children[g].Children, Node{Name: string(rune('a' + i)), Weight: u.Weight, Task: u.Task, MaxTasks: u.MaxTasks})
		}
		h, err := HDRF(capacity, root)
		if err != nil {
			t.Fatal(err)
		}
		used := make([]int64, len(capacity))
		tasks := map[string]int{}
		for _, l := range h {
			tasks[l.Path] = l.Tasks
		}
		for i, u := range users {
			n := tasks[string(rune('A'+i%2))+"/"+string(rune('a'+i))]
			for r := range used {
				used[r] += u.Task[r] * int64(n)
			}
		}
		for r := range used {
			if used[r] > capacity[r] {
				t.Fatalf("over capacity %v > %v", used, capacity)
			}
		}
		for i, u := range users {
			n := tasks[string(rune('A'+i%2))+"/"+string(rune('a'+i))]
			if (u.MaxTasks == 0 || n < u.MaxTasks) && fits(used, u.Task, capacity) {
				t.Fatalf("leaf %d could take another task: %+v used %v", i, h, used)
			}
		}
	})
}

// TestHDRFFlat checks that a one-level tree gives exactly DRF.
func TestHDRFFlat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, users := genInstance(t)
		root := Node{}
		for i, u := range users {
			root.Children = append(root.Children, Node{Name: string(rune('a' + i)), Weight: u.Weight, Task: u.Task, MaxTasks: u.MaxTasks})
		}
		h, err := HDRF(capacity, root)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := DRF(capacity, users)
		for i := range users {
			if h[i].Tasks != d.Tasks[i] {
				t.Fatalf("HDRF %+v, DRF %v", h, d.Tasks)
			}
		}
	})
}
