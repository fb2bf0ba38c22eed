package gang

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestRequestBlockSameRequest: a job of one group gets, in its one
// allocation, the request it gets in separate ones (every field, nil
// slices included), and appending to any of the request's slices changes
// none of the others.
func TestRequestBlockSameRequest(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	rapid.Check(t, func(t *rapid.T) {
		j := randomJob(t, c, "j", []TaskKind{TaskWhole, TaskShare, TaskMIG, TaskCPU})
		j.Groups = j.Groups[:1]
		j.Topology = nil
		if k := rapid.IntRange(0, 2).Draw(t, "constraint"); k > 0 {
			j.Topology = []workload.Constraint{{Level: c.LevelName(topology.LevelHost), Required: k == 1}}
		}
		if err := j.Validate(); err != nil {
			t.Skip(err)
		}
		want, err := newRequest(c, j, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := newRequest(c, j, true)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("in one block:\n%+v\nseparately:\n%+v", got, want)
		}
		before := *got
		before.Groups, before.order = append([]Group(nil), got.Groups...), append([]int(nil), got.order...)
		before.Required, before.Preferred = append([]topology.Level(nil), got.Required...), append([]topology.Level(nil), got.Preferred...)
		grown := *got
		grown.Groups = append(grown.Groups, Group{Name: "x", Count: 9})
		grown.order = append(grown.order, 7)
		grown.Required = append(grown.Required, 5)
		grown.Preferred = append(grown.Preferred, 6)
		after := *got
		after.Groups, after.order = got.Groups[:len(before.Groups)], got.order[:len(before.order)]
		after.Required, after.Preferred = got.Required[:len(before.Required)], got.Preferred[:len(before.Preferred)]
		if !reflect.DeepEqual(after.Groups, before.Groups) || !reflect.DeepEqual(after.order, before.order) ||
			!levelsEqual(after.Required, before.Required) || !levelsEqual(after.Preferred, before.Preferred) {
			t.Fatalf("appending to the request's slices changed it: %+v, was %+v", after, before)
		}
	})
}

// levelsEqual compares levels, nil and empty alike.
func levelsEqual(a, b []topology.Level) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// TestRequestBlockOneAllocation: a job of one whole-GPU group and one
// constraint costs NewRequest one allocation besides the job's
// validation.
func TestRequestBlockOneAllocation(t *testing.T) {
	c := mustPreset(t, "dgx-h100")
	j := job("j", 2, workload.TaskGroup{GPUs: 4, CPUMilli: 1000, MemoryMiB: 1024}, req(c.LevelName(topology.LevelHost)))
	validate := testing.AllocsPerRun(100, func() { _ = j.Validate() })
	if n := testing.AllocsPerRun(100, func() {
		if _, err := NewRequest(c, j); err != nil {
			t.Fatal(err)
		}
	}); n != validate+1 {
		t.Fatalf("NewRequest: %v allocations, want %v (validating the job) + 1", n, validate)
	}
}
