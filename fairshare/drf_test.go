package fairshare

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestDRFPaperExample reproduces the example of Ghodsi et al., NSDI'11,
// section 4: a cluster of ⟨9 CPU, 18 GB⟩, user A runs tasks of ⟨1 CPU,
// 4 GB⟩ and user B tasks of ⟨3 CPU, 1 GB⟩. DRF gives A three tasks
// ⟨3 CPU, 12 GB⟩ and B two ⟨6 CPU, 2 GB⟩: both dominant shares are 2/3
// (A: 12/18 of memory, B: 6/9 of CPU), and neither gets another task.
func TestDRFPaperExample(t *testing.T) {
	capacity := []int64{9, 18}
	users := []User{
		{Name: "A", Task: []int64{1, 4}},
		{Name: "B", Task: []int64{3, 1}},
	}
	a, err := DRF(capacity, users)
	if err != nil {
		t.Fatal(err)
	}
	if a.Tasks[0] != 3 || a.Tasks[1] != 2 {
		t.Fatalf("tasks = %v, want [3 2]", a.Tasks)
	}
	if a.Used[0] != 9 || a.Used[1] != 14 { // 3+6 CPU, 12+2 GB
		t.Fatalf("used = %v, want [9 14]", a.Used)
	}
	for i, s := range a.Shares {
		if math.Abs(s-2.0/3) > 1e-12 {
			t.Errorf("share[%d] = %v, want 2/3", i, s)
		}
	}
}

func TestDRFTable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity []int64
		users    []User
		want     []int
	}{
		// Weighted DRF: B has weight 2, so B's dominant share may be twice
		// A's. Single resource of 12: A tasks of 1, B tasks of 1 → A 4, B 8.
		{"weighted", []int64{12}, []User{{Task: []int64{1}}, {Task: []int64{1}, Weight: 2}}, []int{4, 8}},
		// MaxTasks: A wants only 2 of 10; B takes the rest.
		{"bounded", []int64{10}, []User{{Task: []int64{1}, MaxTasks: 2}, {Task: []int64{1}}}, []int{2, 8}},
		// A blocked user does not stop the others: A's 3-unit tasks stop at
		// 2 (6 used, 1+3 for B), B's 1-unit tasks fill the rest: i:3 j:1,2,3
		// i:6 j:4 → 10.
		{"blocked", []int64{10}, []User{{Task: []int64{3}}, {Task: []int64{1}}}, []int{2, 4}},
		// GPU as the dominant resource: ⟨8 GPU, 64 CPU⟩; A ⟨1 GPU, 2 CPU⟩,
		// B ⟨0 GPU, 8 CPU⟩ (CPU-only). A: GPU share 1/8 per task; B: 1/8 CPU
		// per task. Equal shares → alternate: after six pairs 6 GPU and
		// 60 CPU are used; A7 (7 GPU, 62 CPU) fits; B7 would need 70 CPU,
		// so B is done at 6; A8 takes the last GPU and 64 CPU.
		{"gpu-dominant", []int64{8, 64}, []User{{Task: []int64{1, 2}}, {Task: []int64{0, 8}}}, []int{8, 6}},
		{"no users", []int64{4}, nil, []int{}},
		{"zero capacity", []int64{0, 5}, []User{{Task: []int64{1, 1}}}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DRF(tc.capacity, tc.users)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Tasks) != len(tc.want) {
				t.Fatalf("tasks = %v, want %v", a.Tasks, tc.want)
			}
			for i := range tc.want {
				if a.Tasks[i] != tc.want[i] {
					t.Fatalf("tasks = %v, want %v", a.Tasks, tc.want)
				}
			}
		})
	}
}

func TestDRFErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cap   []int64
		users []User
		field string
	}{
		{"dims", []int64{1, 2}, []User{{Task: []int64{1}}}, "users[0].task"},
		{"negative", []int64{1}, []User{{Task: []int64{-1}}}, "users[0].task[0]"},
		{"zero task", []int64{1}, []User{{Task: []int64{0}}}, "users[0].task"},
		{"weight", []int64{1}, []User{{Task: []int64{1}, Weight: math.NaN()}}, "users[0].weight"},
		{"capacity", []int64{-1}, nil, "capacity[0]"},
	} {
		_, err := DRF(tc.cap, tc.users)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want field %s", tc.name, err, tc.field)
		}
	}
}

// naiveDRF is the oracle: progressive filling with a linear scan for the
// user of smallest weighted dominant share, recomputed from scratch.
func naiveDRF(capacity []int64, users []User) []int {
	tasks := make([]int, len(users))
	done := make([]bool, len(users))
	used := make([]int64, len(capacity))
	for {
		best := -1
		var bs float64
		for i, u := range users {
			if done[i] {
				continue
			}
			held := make([]int64, len(capacity))
			for r := range held {
				held[r] = u.Task[r] * int64(tasks[i])
			}
			s := WeightedDominantShare(held, capacity, weightOr1(u.Weight))
			if best < 0 || s < bs {
				best, bs = i, s
			}
		}
		if best < 0 {
			return tasks
		}
		u := users[best]
		ok := u.MaxTasks == 0 || tasks[best] < u.MaxTasks
		for r := range used {
			if used[r]+u.Task[r] > capacity[r] {
				ok = false
			}
		}
		if !ok || isZero(u.Task) && u.MaxTasks == 0 {
			done[best] = true
			continue
		}
		for r := range used {
			used[r] += u.Task[r]
		}
		tasks[best]++
	}
}

func genInstance(t *rapid.T) ([]int64, []User) {
	dims := rapid.IntRange(1, 4).Draw(t, "dims")
	capacity := make([]int64, dims)
	for r := range capacity {
		capacity[r] = rapid.Int64Range(0, 60).Draw(t, "cap")
	}
	n := rapid.IntRange(0, 6).Draw(t, "users")
	users := make([]User, n)
	for i := range users {
		task := make([]int64, dims)
		for r := range task {
			task[r] = rapid.Int64Range(0, 9).Draw(t, "d")
		}
		if isZero(task) {
			task[0] = 1
		}
		users[i] = User{Task: task, Weight: float64(rapid.IntRange(0, 3).Draw(t, "w")), MaxTasks: rapid.IntRange(0, 12).Draw(t, "max")}
	}
	return capacity, users
}

// TestDRFProperties checks DRF on random instances against the naive
// oracle, and checks the allocation's fairness properties directly:
// capacity respected; Pareto-efficient (every user is at its bound or its
// next task does not fit); envy-free within rounding: for any users i and
// j, j's weighted dominant share less one of its tasks is at most i's,
// unless i could not have taken a task when j took its last one (i's task
// does not fit in what is left plus j's last task) — indivisible tasks are
// the only source of envy.
func TestDRFProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity, users := genInstance(t)
		a, err := DRF(capacity, users)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveDRF(capacity, users)
		for i := range want {
			if a.Tasks[i] != want[i] {
				t.Fatalf("DRF %v, oracle %v", a.Tasks, want)
			}
		}
		used := make([]int64, len(capacity))
		for i, u := range users {
			for r := range used {
				used[r] += u.Task[r] * int64(a.Tasks[i])
			}
		}
		for r := range used {
			if used[r] != a.Used[r] || used[r] > capacity[r] {
				t.Fatalf("used %v (reported %v) capacity %v", used, a.Used, capacity)
			}
		}
		for i, u := range users {
			if u.MaxTasks > 0 && a.Tasks[i] >= u.MaxTasks {
				continue
			}
			if fits(used, u.Task, capacity) {
				t.Fatalf("not Pareto-efficient: user %d could take another task (tasks %v used %v cap %v)", i, a.Tasks, used, capacity)
			}
		}
		for i, ui := range users {
			if ui.MaxTasks > 0 && a.Tasks[i] >= ui.MaxTasks {
				continue // a satisfied user envies no one
			}
			for j, uj := range users {
				if i == j || a.Tasks[j] == 0 {
					continue
				}
				less := make([]int64, len(capacity))
				rem := make([]int64, len(capacity))
				for r := range capacity {
					less[r] = uj.Task[r] * int64(a.Tasks[j]-1)
					rem[r] = capacity[r] - used[r] + uj.Task[r]
				}
				sj := WeightedDominantShare(less, capacity, weightOr1(uj.Weight))
				if sj <= a.Shares[i]+1e-9 {
					continue
				}
				// j holds more than i even without its last task: only
				// allowed if i could not have taken a task then.
				if fits(make([]int64, len(capacity)), ui.Task, rem) {
					t.Fatalf("user %d envies user %d: %d's share less one task %v > %d's share %v, and %d could have run another task (tasks %v)", i, j, j, sj, i, a.Shares[i], i, a.Tasks)
				}
			}
		}
	})
}

func TestDominantShare(t *testing.T) {
	s, d := DominantShare([]int64{3, 12}, []int64{9, 18})
	if d != 1 || math.Abs(s-2.0/3) > 1e-12 {
		t.Fatalf("got %v, %d", s, d)
	}
	if s, d := DominantShare([]int64{1}, []int64{0}); s != 0 || d != -1 {
		t.Fatalf("zero capacity: %v %d", s, d)
	}
	if w := WeightedDominantShare([]int64{1}, []int64{2}, 0); !math.IsInf(w, 1) {
		t.Fatalf("weight 0: %v", w)
	}
	if w := WeightedDominantShare([]int64{1}, []int64{2}, 2); w != 0.25 {
		t.Fatalf("weight 2: %v", w)
	}
}
