package goodput_test

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/sim/goodput"
)

// TestAllocateProperties: whatever the jobs, the allocation gives each
// job 0 or a size within its bounds, never more GPUs than exist, is the
// same on a second call, and leaves no GPU idle while a job below its
// maximum would gain from it (every type of the model gains from a
// second GPU on one host).
func TestAllocateProperties(t *testing.T) {
	m := goodput.Pollux()
	types := append(m.Classes(), "unknown")
	rapid.Check(t, func(t *rapid.T) {
		gpus := rapid.IntRange(0, 64).Draw(t, "gpus")
		host := rapid.SampledFrom([]int{1, 4, 8}).Draw(t, "hostGPUs")
		n := rapid.IntRange(0, 20).Draw(t, "jobs")
		ds := make([]goodput.Demand, n)
		for i := range ds {
			lo := rapid.IntRange(1, 8).Draw(t, "min")
			hi := rapid.IntRange(lo, 32).Draw(t, "max")
			cur := 0
			if rapid.Bool().Draw(t, "running") {
				cur = rapid.IntRange(lo, hi).Draw(t, "current")
			}
			ds[i] = goodput.Demand{Type: rapid.SampledFrom(types).Draw(t, "type"), Min: lo, Max: hi, Current: cur,
				Age: time.Duration(rapid.IntRange(0, 7200).Draw(t, "age")) * time.Second, Resizes: rapid.IntRange(0, 10).Draw(t, "resizes")}
		}
		a := goodput.Allocator{Model: m, HostGPUs: host, RestartDelay: goodput.DefaultRestartDelay}
		out := a.Allocate(ds, gpus)
		if len(out) != n {
			t.Fatalf("%d sizes for %d jobs", len(out), n)
		}
		sum := 0
		for i, k := range out {
			if k != 0 && (k < ds[i].Min || k > ds[i].Max) {
				t.Fatalf("job %d: size %d outside [%d, %d]", i, k, ds[i].Min, ds[i].Max)
			}
			sum += k
		}
		if sum > gpus {
			t.Fatalf("%d GPUs allocated of %d", sum, gpus)
		}
		for i, k := range out {
			if k == 0 && ds[i].Min <= gpus-sum {
				t.Fatalf("job %d waits (min %d) with %d GPUs idle", i, ds[i].Min, gpus-sum)
			}
		}
		if again := a.Allocate(ds, gpus); !slices.Equal(out, again) {
			t.Fatalf("second call %v, first %v", again, out)
		}
	})
}

// TestAllocateFavoursScaling: of two jobs sharing 8 GPUs of one host, the
// one that scales better (imagenet) gets more than the one that barely
// scales (ncf); alone, ncf stays small while imagenet takes what it may.
func TestAllocateFavoursScaling(t *testing.T) {
	a := goodput.Allocator{Model: goodput.Pollux(), HostGPUs: 8}
	out := a.Allocate([]goodput.Demand{{Type: "ncf", Min: 1, Max: 8}, {Type: "imagenet", Min: 1, Max: 8}}, 8)
	if !(out[1] > out[0]) {
		t.Errorf("ncf %d GPUs, imagenet %d: want imagenet more", out[0], out[1])
	}
	if out := a.Allocate([]goodput.Demand{{Type: "imagenet", Min: 1, Max: 8}}, 8); out[0] != 8 {
		t.Errorf("imagenet alone: %d of 8 GPUs", out[0])
	}
}

// TestAllocateResizeDiscount: a young running job keeps its size rather
// than give a GPU to a newcomer; an old one shares.
func TestAllocateResizeDiscount(t *testing.T) {
	a := goodput.Allocator{Model: goodput.Pollux(), HostGPUs: 4, RestartDelay: goodput.DefaultRestartDelay}
	young := []goodput.Demand{{Type: "imagenet", Min: 2, Max: 4, Current: 4, Age: 10 * time.Second, Resizes: 1}, {Type: "imagenet", Min: 1, Max: 4}}
	if out := a.Allocate(young, 4); out[0] != 4 {
		t.Errorf("young running job: %v; want it kept at 4", out)
	}
	old := []goodput.Demand{{Type: "imagenet", Min: 1, Max: 4, Current: 4, Age: 10 * time.Hour}, {Type: "imagenet", Min: 1, Max: 4}}
	if out := a.Allocate(old, 4); out[0] == 4 || out[1] == 0 {
		t.Errorf("old running job: %v; want the GPUs shared", out)
	}
}
