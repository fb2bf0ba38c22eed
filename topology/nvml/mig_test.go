package nvml

import (
	"reflect"
	"testing"

	"github.com/gpusched/gpusched/topology"
)

// The names of every preset accelerator's profiles follow from NVML's raw
// numbers (slice count, instance memory, GPU memory).
func TestMIGProfileNamePresets(t *testing.T) {
	kindOf := func(p topology.MIGProfileSpec) int {
		switch {
		case p.Exclusive == topology.MediaExtensions:
			return profile1SliceRev1
		case p.ComputeSlices == 1 && p.Size == 2:
			return profile1SliceRev2
		case p.ComputeSlices == 1:
			return profile1Slice
		case p.ComputeSlices == 2:
			return profile2Slice
		case p.ComputeSlices == 3:
			return profile3Slice
		case p.ComputeSlices == 4:
			return profile4Slice
		}
		return profile7Slice
	}
	for _, name := range topology.MachineNames() {
		_, acc, _ := topology.MachineTemplate(name)
		if acc.MIG == nil {
			continue
		}
		for _, p := range acc.MIG.Profiles {
			if got := MIGProfileName(kindOf(p), p.ComputeSlices, p.MemoryMiB, acc.MemoryMiB); got != p.Name {
				t.Errorf("%s %s: named %s", acc.Model, p.Name, got)
			}
		}
	}
}

func TestMIGProfileName(t *testing.T) {
	for _, tc := range []struct {
		kind, slices int
		mem, total   int64
		want         string
	}{
		{profile1Slice, 1, 4864, 40536, "1g.5gb"},   // A100 40GB: 4.75 GiB of 39.6 → 1/8 of 40
		{profile3Slice, 3, 19968, 40536, "3g.20gb"}, // 4/8 of 40
		{profile1SliceRev1, 1, 9856, 81559, "1g.10gb+me"},
		{profile1SliceNoME, 1, 9856, 81559, "1g.10gb-me"},
		{profile1SliceAllME, 1, 9856, 81559, "1g.10gb+me.all"},
		{profile1SliceGfx, 1, 23040, 183359, "1g.23gb+gfx"},
		{profile1Slice, 1, 5888, 24062, "1g.6gb"}, // A30: 1/4 of 24 GiB
		{profile2Slice, 2, 11776, 24062, "2g.12gb"},
		{profile1Slice, 1, 100, 0, "1g.0gb"}, // memory unknown
	} {
		if got := MIGProfileName(tc.kind, tc.slices, tc.mem, tc.total); got != tc.want {
			t.Errorf("MIGProfileName(%d, %d, %d, %d) = %s, want %s", tc.kind, tc.slices, tc.mem, tc.total, got, tc.want)
		}
	}
}

func TestBuildMIG(t *testing.T) {
	pl := func(size int, starts ...int) []MIGPlacement {
		var out []MIGPlacement
		for _, s := range starts {
			out = append(out, MIGPlacement{Start: s, Size: size})
		}
		return out
	}
	facts := []MIGProfileFacts{
		{Kind: profile7Slice, Slices: 7, MemoryMiB: 80384, Placements: pl(8, 0)},
		{Kind: profile1SliceRev1, Slices: 1, MemoryMiB: 9856, Placements: pl(1, 0, 1, 2, 3, 4, 5, 6)},
		{Kind: profile1Slice, Slices: 1, MemoryMiB: 9856, Placements: pl(1, 6, 5, 4, 3, 2, 1, 0, 0)},
		{Kind: profile3Slice, Slices: 3, MemoryMiB: 40192, Placements: pl(4, 4, 0)},
		{Kind: profile2Slice, Slices: 2, MemoryMiB: 19968},                                             // no placements
		{Kind: profile4Slice, Slices: 4, MemoryMiB: 40192, Placements: []MIGPlacement{{0, 4}, {4, 3}}}, // mixed sizes
		{Kind: profile8Slice, Slices: 8, MemoryMiB: 9856, Placements: pl(1, 0)},                        // named like 1g? no: 8g.10gb
		{Kind: profile1SliceRev2, Slices: 1, MemoryMiB: 9856, Placements: pl(1, 0)},                    // a second "1g.10gb"
		{Kind: profile1SliceAllME, Slices: 1, MemoryMiB: 9856, Placements: pl(1, 0)},                   // skipped
		{Kind: profile1SliceGfx, Slices: 1, MemoryMiB: 9856, Placements: pl(1, 0)},
	}
	mig, skipped, ws := BuildMIG(81559, facts)
	want := &topology.MIGSpec{Slots: 8, Profiles: []topology.MIGProfileSpec{
		{Name: "1g.10gb", Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: 9856, ComputeSlices: 1},
		{Name: "8g.10gb", Size: 1, Starts: []int{0}, MemoryMiB: 9856, ComputeSlices: 8},
		{Name: "3g.40gb", Size: 4, Starts: []int{0, 4}, MemoryMiB: 40192, ComputeSlices: 3},
		{Name: "4g.40gb", Size: 4, Starts: []int{0, 4}, MemoryMiB: 40192, ComputeSlices: 4},
		{Name: "7g.80gb", Size: 8, Starts: []int{0}, MemoryMiB: 80384, ComputeSlices: 7},
		{Name: "1g.10gb+me", Size: 1, Starts: []int{0, 1, 2, 3, 4, 5, 6}, MemoryMiB: 9856, ComputeSlices: 1, Exclusive: topology.MediaExtensions},
	}}
	if !reflect.DeepEqual(mig, want) {
		t.Errorf("got  %+v\nwant %+v", mig, want)
	}
	if !reflect.DeepEqual(skipped, []string{"1g.10gb+me.all", "1g.10gb+gfx"}) {
		t.Errorf("skipped %q", skipped)
	}
	var msgs []string
	for _, w := range ws {
		msgs = append(msgs, w.String())
	}
	wantWs := []string{
		"mig: profile 2g.20gb has no legal placement; left out",
		"mig: profile 4g.40gb has placements of sizes 4 and 3; using the larger",
		"mig: two profiles are both named 1g.10gb; keeping the first",
	}
	if !reflect.DeepEqual(msgs, wantWs) {
		t.Errorf("warnings %q\nwant %q", msgs, wantWs)
	}
	if mig, _, _ := BuildMIG(81559, nil); mig != nil {
		t.Errorf("no profiles: %+v", mig)
	}
	if mig, _, ws := BuildMIG(81559, []MIGProfileFacts{{Kind: profile1Slice, Slices: 1, MemoryMiB: 1, Placements: pl(1, 20)}}); mig != nil || len(ws) != 1 {
		t.Errorf("21 slots: %+v %v", mig, ws)
	}
}
