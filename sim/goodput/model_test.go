package goodput_test

import (
	"testing"

	"github.com/gpusched/gpusched/sim/goodput"
	"github.com/gpusched/gpusched/sim/internal/simtest"
	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// TestPolluxModelValid: the built-in model passes its own checks.
func TestPolluxModelValid(t *testing.T) {
	if err := goodput.Pollux().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestModelMonotone: for every type, the compute part of an iteration
// never grows with GPUs, so one iteration on k GPUs is at most the
// one-GPU time plus the all-reduce; the speedup is sublinear (at most k)
// and, on one host, at least 1 for a compute-bound type up to the
// host's GPUs; throughput never rises from a closer placement to a
// farther one.
func TestModelMonotone(t *testing.T) {
	m := goodput.Pollux()
	for _, typ := range m.Classes() {
		for k := 1; k <= 64; k++ {
			s := m.Speedup(typ, k, goodput.OneHost)
			if s > float64(k)+1e-9 {
				t.Errorf("%s: speedup %g on %d GPUs: superlinear", typ, s, k)
			}
			for _, p := range []goodput.Placement{goodput.OneHost, goodput.OneSwitch} {
				if a, b := m.Throughput(typ, k, p), m.Throughput(typ, k, p+1); b > a {
					t.Errorf("%s on %d GPUs: %v %g < %v %g", typ, k, p, a, p+1, b)
				}
			}
		}
	}
	for _, typ := range []string{"imagenet", "bert", "deepspeech2", "cifar10", "yolov3"} {
		prev := 0.0
		for k := 1; k <= 4; k++ {
			if s := m.Speedup(typ, k, goodput.OneHost); s <= prev && typ != "yolov3" || s < 1 {
				t.Errorf("%s: speedup %g on %d GPUs of one host, %g on %d", typ, s, k, prev, k-1)
			} else {
				prev = s
			}
		}
	}
}

// TestModelNonLinear: scaling is non-linear in the documented ways — a
// compute-bound type (imagenet) still gains from 8 to 16 GPUs but less
// than 2×; cifar10's efficiency falls sharply across hosts; ncf, whose
// compute is mostly a fixed cost per pass, gains little from a second GPU.
func TestModelNonLinear(t *testing.T) {
	m := goodput.Pollux()
	s8, s16 := m.Speedup("imagenet", 8, goodput.OneHost), m.Speedup("imagenet", 16, goodput.OneSwitch)
	if !(s16 > s8 && s16 < 2*s8) {
		t.Errorf("imagenet: speedup %g on 8 GPUs, %g on 16: want more, but less than double", s8, s16)
	}
	if e := m.Speedup("cifar10", 16, goodput.OneSwitch) / 16; e > 0.6 {
		t.Errorf("cifar10 on 16 GPUs over two hosts: efficiency %g; want well below linear", e)
	}
	if s := m.Speedup("ncf", 2, goodput.OneHost); s >= 1.3 {
		t.Errorf("ncf on 2 GPUs: speedup %g; want < 1.3", s)
	}
}

// TestPlacementPenalty: the same GPUs spread further run slower, by the
// all-reduce terms (a yolov3 job of 4 GPUs over two hosts is more than
// a third slower than on one host; bert's a tenth) and CrossSwitch.
func TestPlacementPenalty(t *testing.T) {
	m := goodput.Pollux()
	for typ, least := range map[string]float64{"yolov3": 1.33, "bert": 1.1, "imagenet": 1} {
		host, sw, cross := m.IterTime(typ, 4, goodput.OneHost), m.IterTime(typ, 4, goodput.OneSwitch), m.IterTime(typ, 4, goodput.CrossSwitch)
		if !(host < sw && sw < cross) {
			t.Fatalf("%s on 4 GPUs: iteration %g s on one host, %g on one switch, %g across: want increasing", typ, host, sw, cross)
		}
		if sw/host < least {
			t.Errorf("%s on 4 GPUs: two hosts only %g× slower than one; want ≥ %g", typ, sw/host, least)
		}
	}
	for l, want := range map[topology.Level]goodput.Placement{-1: goodput.OneHost, topology.LevelFabric: goodput.OneHost,
		topology.LevelHost: goodput.OneHost, topology.LevelHost + 1: goodput.OneSwitch, topology.LevelHost + 2: goodput.CrossSwitch} {
		if got := goodput.PlacementAt(l); got != want {
			t.Errorf("PlacementAt(%d) = %v, want %v", l, got, want)
		}
	}
	if goodput.Packed(4, 4) != goodput.OneHost || goodput.Packed(5, 4) != goodput.OneSwitch {
		t.Error("Packed")
	}
}

// TestModelValidate: a bad model is refused with the field named.
func TestModelValidate(t *testing.T) {
	bad := []*goodput.Model{
		nil,
		{Types: map[string]goodput.Params{"a": {Batch: 1, MaxLocal: 1, AlphaC: 1}}, Default: "b", CrossSwitch: 1},
		{Types: map[string]goodput.Params{"a": {Batch: 1, MaxLocal: 1, AlphaC: 1}}, Default: "a", CrossSwitch: 0.5},
		{Types: map[string]goodput.Params{"a": {Batch: 0, MaxLocal: 1, AlphaC: 1}}, Default: "a", CrossSwitch: 1},
		{Types: map[string]goodput.Params{"a": {Batch: 1, MaxLocal: 1, AlphaC: -1}}, Default: "a", CrossSwitch: 1},
	}
	for i, m := range bad {
		if err := m.Validate(); err == nil {
			t.Errorf("model %d: no error", i)
		}
	}
}

// TestScalingFactor: as the simulator's throughput model, a job at the
// size it asks for, packed, runs at 1; spread over hosts slower; at
// twice its size on two hosts faster (imagenet) — and a job asking for
// more than a host is measured at its packed multi-host placement.
func TestScalingFactor(t *testing.T) {
	c := simtest.Cluster(t, topology.Generator{Machine: "pcie-8gpu", Hosts: 4, HostsPerToR: 2})
	js := []trace.Job{
		{Spec: workload.Job{ID: "a", Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}}, Type: "imagenet"},
		{Spec: workload.Job{ID: "b", Groups: []workload.TaskGroup{{Count: 2, GPUs: 8}}}, Type: "yolov3"},
	}
	s := goodput.NewScaling(goodput.Pollux(), c, js)
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if f := s.Factor("a", 4, topology.LevelHost); !near(f, 1) {
		t.Errorf("a at its size on one host: %g", f)
	}
	if f := s.Factor("a", 4, topology.LevelHost+2); f >= 1 {
		t.Errorf("a across switches: %g; want < 1", f)
	}
	if f := s.Factor("a", 8, topology.LevelHost); f <= 1 {
		t.Errorf("a on 8 GPUs of one host: %g; want > 1", f)
	}
	if f := s.Factor("b", 16, topology.LevelHost+1); !near(f, 1) {
		t.Errorf("b at its size on two hosts of a switch: %g", f)
	}
	if f := s.Factor("unknown", 3, topology.LevelHost); f != 1 {
		t.Errorf("a job it was not built with: %g", f)
	}
}
