package fairshare

import (
	"container/heap"
	"errors"
	"fmt"
	"math"

	"github.com/gpusched/gpusched/workload"
)

// ErrInvalid is the sentinel every *InputError unwraps to.
var ErrInvalid = errors.New("fairshare: invalid input")

// InputError names the argument that is wrong and why.
type InputError struct {
	Field string // e.g. "users[2].task[1]"
	Msg   string // what is wrong
}

// Error returns "fairshare: FIELD: MSG".
func (e *InputError) Error() string { return "fairshare: " + e.Field + ": " + e.Msg }

// Unwrap returns ErrInvalid.
func (e *InputError) Unwrap() error { return ErrInvalid }

func bad(field, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// DominantShare returns the largest per-dimension share used[r]/capacity[r]
// and the dimension r where it is reached (the lowest such r on ties).
// Dimensions with zero capacity are skipped; if none remain the share is 0
// and the dimension -1. It panics if the lengths differ. O(len(used)).
func DominantShare(used, capacity []int64) (share float64, dim int) {
	if len(used) != len(capacity) {
		panic("fairshare: DominantShare: vectors of different length")
	}
	dim = -1
	for r, c := range capacity {
		if c <= 0 {
			continue
		}
		s := float64(used[r]) / float64(c)
		if dim < 0 || s > share {
			share, dim = s, r
		}
	}
	return share, dim
}

// WeightedDominantShare is DominantShare divided by weight, the measure of
// weighted DRF: a tenant of weight 2 is entitled to twice the dominant share
// of a tenant of weight 1. A weight ≤ 0 makes any positive share +Inf (the
// tenant is entitled to nothing) and a zero share 0.
func WeightedDominantShare(used, capacity []int64, weight float64) float64 {
	s, _ := DominantShare(used, capacity)
	return weigh(s, weight)
}

func weigh(s, w float64) float64 {
	if w <= 0 {
		if s > 0 {
			return math.Inf(1)
		}
		return 0
	}
	return s / w
}

// Dimensions names the dimensions of resource vectors built from workload
// values: GPU (milli-GPU), CPU (milli-cores), memory (MiB), then one GPU
// dimension (milli-GPU) per model in Models, in that order. The per-model
// dimensions make a GPU model a resource of its own, as DRF needs where
// quotas or capacity differ per model.
type Dimensions struct {
	Models []string // GPU models with a dimension of their own, in order
}

// Dimension indexes of a vector built by Dimensions.
const (
	DimGPU    = 0
	DimCPU    = 1
	DimMemory = 2
	// DimModel is the first per-model dimension.
	DimModel = 3
)

// Len returns the number of dimensions.
func (d Dimensions) Len() int { return DimModel + len(d.Models) }

// Name returns a short name for dimension i: "gpu", "cpu", "memory" or
// "gpu/MODEL".
func (d Dimensions) Name(i int) string {
	switch i {
	case DimGPU:
		return "gpu"
	case DimCPU:
		return "cpu"
	case DimMemory:
		return "memory"
	}
	return "gpu/" + d.Models[i-DimModel]
}

// Vector returns r as a vector. perModelGPUMilli, if not nil, gives the GPU
// milli of each model in d.Models (same order); the model dimensions are
// zero otherwise.
func (d Dimensions) Vector(r workload.Resources, perModelGPUMilli []int64) []int64 {
	v := make([]int64, d.Len())
	v[DimGPU], v[DimCPU], v[DimMemory] = r.GPUMilli, r.CPUMilli, r.MemoryMiB
	copy(v[DimModel:], perModelGPUMilli)
	return v
}

// User is a tenant as DRF sees it: a stream of identical tasks.
type User struct {
	// Name identifies the user in errors; ties go to the earlier user.
	Name string
	// Weight scales the user's entitlement (weighted DRF); 0 means 1.
	Weight float64
	// Task is the demand of one task per dimension (≥ 0, not all zero).
	Task []int64
	// MaxTasks bounds how many tasks the user wants; 0 means no bound
	// beyond capacity.
	MaxTasks int
}

// Allocation is the outcome of DRF.
type Allocation struct {
	// Tasks is the number of tasks given to each user, in input order.
	Tasks []int
	// Used is what all tasks take per dimension.
	Used []int64
	// Shares is each user's weighted dominant share at the end.
	Shares []float64
}

// DRF allocates whole tasks by progressive filling (Ghodsi et al., NSDI'11,
// Algorithm 1, weighted): repeatedly take the user with the smallest
// weighted dominant share (ties to the earlier user) and give it one task;
// a user whose next task does not fit in what is left, or who reached
// MaxTasks, is done, and filling continues with the others until all are
// done. The result is Pareto-efficient (no user can get another task
// without taking from another) and envy-free up to one task.
//
// It returns an *InputError for mismatched dimensions, negative values, or
// a user whose task is all zero without a MaxTasks bound (it would take
// infinitely many). Cost O(T log U) for T tasks given to U users.
func DRF(capacity []int64, users []User) (Allocation, error) {
	if err := checkUsers(capacity, users); err != nil {
		return Allocation{}, err
	}
	a := Allocation{
		Tasks:  make([]int, len(users)),
		Used:   make([]int64, len(capacity)),
		Shares: make([]float64, len(users)),
	}
	held := make([][]int64, len(users))
	h := &drfHeap{}
	for i := range users {
		held[i] = make([]int64, len(capacity))
		if users[i].MaxTasks != 0 || !isZero(users[i].Task) {
			h.items = append(h.items, drfItem{user: i})
		}
	}
	heap.Init(h)
	for h.Len() > 0 {
		it := h.items[0]
		u := &users[it.user]
		if (u.MaxTasks > 0 && a.Tasks[it.user] >= u.MaxTasks) || !fits(a.Used, u.Task, capacity) {
			heap.Pop(h)
			continue
		}
		for r, d := range u.Task {
			a.Used[r] += d
			held[it.user][r] += d
		}
		a.Tasks[it.user]++
		h.items[0].share = WeightedDominantShare(held[it.user], capacity, weightOr1(u.Weight))
		heap.Fix(h, 0)
	}
	for i := range users {
		a.Shares[i] = WeightedDominantShare(held[i], capacity, weightOr1(users[i].Weight))
	}
	return a, nil
}

func weightOr1(w float64) float64 {
	if w == 0 {
		return 1
	}
	return w
}

func checkUsers(capacity []int64, users []User) error {
	for r, c := range capacity {
		if c < 0 {
			return bad(fmt.Sprintf("capacity[%d]", r), "negative capacity %d", c)
		}
	}
	for i, u := range users {
		p := fmt.Sprintf("users[%d]", i)
		if len(u.Task) != len(capacity) {
			return bad(p+".task", "%d dimensions, capacity has %d", len(u.Task), len(capacity))
		}
		for r, d := range u.Task {
			if d < 0 {
				return bad(fmt.Sprintf("%s.task[%d]", p, r), "negative demand %d", d)
			}
		}
		if u.Weight < 0 || math.IsNaN(u.Weight) || math.IsInf(u.Weight, 0) {
			return bad(p+".weight", "weight %v; want a finite value ≥ 0", u.Weight)
		}
		if u.MaxTasks < 0 {
			return bad(p+".maxTasks", "negative bound %d", u.MaxTasks)
		}
		if u.MaxTasks == 0 && isZero(u.Task) {
			return bad(p+".task", "an all-zero task needs a MaxTasks bound")
		}
	}
	return nil
}

func isZero(v []int64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// fits reports whether used+task ≤ capacity in every dimension.
func fits(used, task, capacity []int64) bool {
	for r, d := range task {
		if used[r]+d > capacity[r] {
			return false
		}
	}
	return true
}

type drfItem struct {
	user  int
	share float64
}

type drfHeap struct{ items []drfItem }

func (h *drfHeap) Len() int { return len(h.items) }
func (h *drfHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.share != b.share {
		return a.share < b.share
	}
	return a.user < b.user
}
func (h *drfHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *drfHeap) Push(x any)    { h.items = append(h.items, x.(drfItem)) }
func (h *drfHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
