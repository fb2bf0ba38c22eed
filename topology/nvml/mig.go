package nvml

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/gpusched/gpusched/topology"
)

// GPU-instance profile kinds, with the values of NVML's
// NVML_GPU_INSTANCE_PROFILE_* enumeration (the index passed to
// nvmlDeviceGetGpuInstanceProfileInfo, not the driver's profile id).
const (
	profile1Slice      = 0
	profile2Slice      = 1
	profile3Slice      = 2
	profile4Slice      = 3
	profile7Slice      = 4
	profile8Slice      = 5
	profile6Slice      = 6
	profile1SliceRev1  = 7
	profile2SliceRev1  = 8
	profile1SliceRev2  = 9
	profile1SliceGfx   = 10
	profile2SliceGfx   = 11
	profile4SliceGfx   = 12
	profile1SliceNoME  = 13
	profile2SliceNoME  = 14
	profile1SliceAllME = 15
	profile2SliceAllME = 16
	profile3SliceGfx   = 17
	profileCount       = 18
)

// profileSuffix returns the attribute suffix nvidia-smi appends to a
// variant profile's name ("+me" for media extensions, "-me" for none,
// "+me.all", "+gfx"), or "" for a base profile.
func profileSuffix(kind int) string {
	switch kind {
	case profile1SliceRev1, profile2SliceRev1:
		return "+me"
	case profile1SliceNoME, profile2SliceNoME:
		return "-me"
	case profile1SliceAllME, profile2SliceAllME:
		return "+me.all"
	case profile1SliceGfx, profile2SliceGfx, profile4SliceGfx, profile3SliceGfx:
		return "+gfx"
	}
	return ""
}

// MIGProfileFacts is one GPU-instance profile as NVML reports it.
type MIGProfileFacts struct {
	// Kind is the NVML_GPU_INSTANCE_PROFILE_* value the profile was
	// queried with.
	Kind int
	// Slices is the profile's compute slice count (SliceCount).
	Slices int
	// MemoryMiB is the instance memory (NVML's MemorySizeMB, in MiB).
	MemoryMiB int64
	// Placements are the legal (start, size) placements in memory slots,
	// from nvmlDeviceGetGpuInstancePossiblePlacements.
	Placements []MIGPlacement
}

// MIGPlacement is one legal placement of a GPU-instance profile.
type MIGPlacement struct{ Start, Size int }

// MIGProfileName names a profile as nvidia-smi and NVIDIA's device plugins
// do: "<slices>g.<GB>gb" plus the variant's suffix. GB is the instance's
// share of the GPU's memory rounded up to eighths (with a tolerance of 5% of an eighth, so
// that an instance a hair above an eighth is not named for two), times the
// GPU's memory in whole GiB rounded up, rounded to the nearest integer:
// 9856 MiB of an 81559 MiB H100 is 1/8 of 80 GiB, "1g.10gb".
func MIGProfileName(kind, slices int, memMiB, totalMiB int64) string {
	gb := int64(0)
	if totalMiB > 0 {
		frac := math.Ceil(8*float64(memMiB)/float64(totalMiB)-0.05) / 8
		total := float64((totalMiB + 1023) / 1024)
		gb = int64(math.Round(frac * total))
	}
	return strconv.Itoa(slices) + "g." + strconv.FormatInt(gb, 10) + "gb" + profileSuffix(kind)
}

// BuildMIG turns a GPU's profiles into the model's MIG geometry. The
// media-extension variants ("+me") occupy their base profile's slots and
// hold the GPU's media extensions (Exclusive topology.MediaExtensions). The other
// variants ("-me", "+me.all", "+gfx") share engines in ways the model
// cannot express; they are returned by name in skipped instead. The slot
// count is the end of the furthest placement. Profiles are ordered by
// size, compute slices, memory and name, the base profiles before the
// variants. It returns nil when no profile has a placement.
func BuildMIG(totalMiB int64, facts []MIGProfileFacts) (mig *topology.MIGSpec, skipped []string, ws []Warning) {
	warn := func(format string, args ...any) {
		ws = append(ws, Warning{GPU: -1, Feature: FeatureMIG, Msg: fmt.Sprintf(format, args...)})
	}
	slots := 0
	for _, f := range facts {
		for _, p := range f.Placements {
			slots = max(slots, p.Start+p.Size)
		}
	}
	seen := map[string]bool{}
	var profiles []topology.MIGProfileSpec
	for _, f := range facts {
		name := MIGProfileName(f.Kind, f.Slices, f.MemoryMiB, totalMiB)
		exclusive := ""
		switch profileSuffix(f.Kind) {
		case "":
		case "+me":
			exclusive = topology.MediaExtensions
		default:
			skipped = append(skipped, name)
			continue
		}
		if len(f.Placements) == 0 {
			warn("profile %s has no legal placement; left out", name)
			continue
		}
		if seen[name] {
			warn("two profiles are both named %s; keeping the first", name)
			continue
		}
		size := 0
		var starts []int
		for _, p := range f.Placements {
			if size != 0 && p.Size != size {
				warn("profile %s has placements of sizes %d and %d; using the larger", name, size, p.Size)
			}
			size = max(size, p.Size)
			starts = append(starts, p.Start)
		}
		if size < 1 || slices.Min(starts) < 0 {
			warn("profile %s has an empty or negative placement; left out", name)
			continue
		}
		slices.Sort(starts)
		starts = slices.Compact(starts)
		for len(starts) > 0 && starts[len(starts)-1]+size > slots {
			starts = starts[:len(starts)-1]
		}
		seen[name] = true
		profiles = append(profiles, topology.MIGProfileSpec{
			Name: name, Size: size, Starts: starts, MemoryMiB: f.MemoryMiB, ComputeSlices: f.Slices, Exclusive: exclusive,
		})
	}
	if len(profiles) == 0 {
		return nil, skipped, ws
	}
	if slots > topology.MaxMIGSlots {
		warn("%d MIG slots exceed the model's %d; MIG geometry left out", slots, topology.MaxMIGSlots)
		return nil, skipped, ws
	}
	slices.SortStableFunc(profiles, func(a, b topology.MIGProfileSpec) int {
		return cmp.Or(cmp.Compare(a.Exclusive, b.Exclusive), cmp.Compare(a.Size, b.Size), cmp.Compare(a.ComputeSlices, b.ComputeSlices),
			cmp.Compare(a.MemoryMiB, b.MemoryMiB), cmp.Compare(a.Name, b.Name))
	})
	return &topology.MIGSpec{Slots: slots, Profiles: profiles}, skipped, ws
}
