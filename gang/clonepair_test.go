package gang

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusched/gpusched/topology"
)

// TestClonePairEqualsClone: each copy of ClonePair equals Clone (nil and
// empty slices included), the two share no memory with p or each other,
// and appending to one never shows in the other.
func TestClonePairEqualsClone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := &Placement{Job: rapid.StringN(0, 4, -1).Draw(t, "job"),
			Level: topology.Level(rapid.IntRange(0, 4).Draw(t, "level")), Domain: topology.DomainID(rapid.IntRange(0, 9).Draw(t, "dom"))}
		p.Placed = make([]int, rapid.IntRange(1, 2).Draw(t, "groups"))
		nc := rapid.IntRange(0, 6).Draw(t, "claims")
		for i := 0; i < nc; i++ {
			var gs []topology.GPUClaim
			for k := rapid.IntRange(0, pairGPUs+1).Draw(t, "gpus"); k > 0; k-- {
				gs = append(gs, topology.GPUClaim{GPU: topology.GPUID(rapid.IntRange(0, 99).Draw(t, "gpu")), Kind: topology.ClaimKind(rapid.IntRange(0, 2).Draw(t, "kind")), Milli: int32(rapid.IntRange(0, 1000).Draw(t, "milli"))})
			}
			p.addClaim(TaskRef{Group: int32(i % len(p.Placed)), Index: int32(i)}, topology.HostID(rapid.IntRange(0, 9).Draw(t, "host")), int64(i), int64(2*i), gs...)
		}
		if rapid.Bool().Draw(t, "nilPlaced") {
			p.Placed = nil
		}
		if rapid.Bool().Draw(t, "relaxed") {
			p.Relaxed = []topology.Level{}
			for k := rapid.IntRange(0, 2).Draw(t, "nrel"); k > 0; k-- {
				p.Relaxed = append(p.Relaxed, topology.Level(k))
			}
		}
		want := p.Clone()
		a, b := p.ClonePair()
		for _, q := range []*Placement{a, b} {
			if !reflect.DeepEqual(q, want) {
				t.Fatalf("ClonePair gave %+v, Clone %+v", q, want)
			}
		}
		// Independence: scribble on a; b and p stay as they were.
		for i := range a.Claims {
			for k := range a.Claims[i].GPUs {
				a.Claims[i].GPUs[k].GPU = -1
			}
			a.Claims[i].Host = -1
		}
		for i := range a.Tasks {
			a.Tasks[i].Index = -1
		}
		for i := range a.Placed {
			a.Placed[i] = -1
		}
		a.Tasks = append(a.Tasks, TaskRef{Index: -2})
		a.Placed = append(a.Placed, -2)
		a.Relaxed = append(a.Relaxed, -2)
		a.gpus = append(a.gpus, topology.GPUClaim{GPU: -3})
		a.Claims = append(a.Claims, topology.Claim{Host: -3, GPUs: a.gpus[len(a.gpus)-1:]})
		if !reflect.DeepEqual(b, want) || !reflect.DeepEqual(p.Clone(), want) {
			t.Fatalf("writing one copy changed the other or the original")
		}
	})
}
