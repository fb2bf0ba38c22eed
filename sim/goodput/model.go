package goodput

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Placement is how far apart a job's GPUs are, as the throughput model
// sees it.
type Placement uint8

// Placements, from the closest.
const (
	// OneHost: every GPU in one host (a single GPU too); gradients are
	// all-reduced over the host's links.
	OneHost Placement = iota
	// OneSwitch: GPUs on several hosts under one switch (ToR), or on
	// several hosts of a cluster without network levels.
	OneSwitch
	// CrossSwitch: GPUs on hosts under different switches.
	CrossSwitch
)

// String returns "one-host", "one-switch" or "cross-switch".
func (p Placement) String() string {
	switch p {
	case OneHost:
		return "one-host"
	case OneSwitch:
		return "one-switch"
	}
	return "cross-switch"
}

// PlacementAt is the placement of GPUs whose innermost common topology
// level is l (-1: a single GPU): at most a host is OneHost, the innermost
// network level (or the cluster, when it has none) OneSwitch, anything
// further CrossSwitch.
func PlacementAt(l topology.Level) Placement {
	switch {
	case l <= topology.LevelHost:
		return OneHost
	case l == topology.LevelHost+1:
		return OneSwitch
	}
	return CrossSwitch
}

// Packed is the placement of k GPUs packed onto as few hosts of hostGPUs
// GPUs as possible, under one switch.
func Packed(k, hostGPUs int) Placement {
	if k <= hostGPUs {
		return OneHost
	}
	return OneSwitch
}

// Params are one job type's throughput parameters: Pollux's model of the
// time of one data-parallel iteration (Qiao et al., OSDI'21; its artifact's simulator/goodput.py), with
// a fixed global batch and no compute/communication overlap (Pollux's γ =
// 1). On k GPUs each takes Batch/k samples per iteration, in
// ⌈Batch/k / MaxLocal⌉ passes (gradient accumulation past what one GPU
// holds):
//
//	T(k, p) = passes·AlphaC + BetaC·Batch/k + sync(k, p)
//	sync(1, ·) = 0
//	sync(k, OneHost) = AlphaHost + BetaHost·(k−2)
//	sync(k, OneSwitch) = max(AlphaNet + BetaNet·(k−2), sync(k, OneHost))
//	sync(k, CrossSwitch) = Model.CrossSwitch × sync(k, OneSwitch)
//
// (k−2 is taken as at least 0; the max keeps an all-reduce across hosts
// at least as slow as within one where the fits, from 4-GPU hosts, cross
// when extrapolated.) Throughput is Batch / T samples a second. Times are
// seconds.
type Params struct {
	// Batch is the global batch size (samples per iteration), fixed
	// whatever the number of GPUs; MaxLocal the most samples one GPU
	// processes in one pass.
	Batch, MaxLocal float64
	// AlphaC and BetaC are one pass's compute time: AlphaC + BetaC × its
	// samples.
	AlphaC, BetaC float64
	// AlphaHost and BetaHost are the all-reduce time within one host.
	AlphaHost, BetaHost float64
	// AlphaNet and BetaNet are the all-reduce time across hosts.
	AlphaNet, BetaNet float64
}

// Model is a throughput model: Params per job type.
type Model struct {
	// Types are the job types' parameters, by name.
	Types map[string]Params
	// Default is the type of a job whose type Types does not name.
	Default string
	// CrossSwitch multiplies the across-host all-reduce time when the
	// hosts are under different switches (at least 1).
	CrossSwitch float64
}

// Validate checks the model: a Default that Types names, every
// parameter finite and non-negative, Batch, MaxLocal and AlphaC + BetaC
// positive, CrossSwitch at least 1.
func (m *Model) Validate() error {
	if m == nil || len(m.Types) == 0 {
		return errors.New("goodput: model without job types")
	}
	if _, ok := m.Types[m.Default]; !ok {
		return fmt.Errorf("goodput: default type %q is not one of %v", m.Default, m.Classes())
	}
	if !(m.CrossSwitch >= 1) || math.IsInf(m.CrossSwitch, 0) {
		return fmt.Errorf("goodput: CrossSwitch %g: want a finite factor ≥ 1", m.CrossSwitch)
	}
	for _, name := range m.Classes() {
		p := m.Types[name]
		for _, v := range []float64{p.Batch, p.MaxLocal, p.AlphaC, p.BetaC, p.AlphaHost, p.BetaHost, p.AlphaNet, p.BetaNet} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("goodput: type %q: parameter %g: want finite and ≥ 0", name, v)
			}
		}
		if p.Batch <= 0 || p.MaxLocal <= 0 || p.AlphaC+p.BetaC <= 0 {
			return fmt.Errorf("goodput: type %q: Batch, MaxLocal and AlphaC+BetaC must be positive", name)
		}
	}
	return nil
}

// Classes returns the model's job types, sorted.
func (m *Model) Classes() []string { return slices.Sorted(maps.Keys(m.Types)) }

// params returns typ's parameters, the Default's for a type the model
// does not name.
func (m *Model) params(typ string) Params {
	if p, ok := m.Types[typ]; ok {
		return p
	}
	return m.Types[m.Default]
}

// IterTime returns the seconds of one iteration of a typ job on k ≥ 1
// GPUs placed as p (see Params).
func (m *Model) IterTime(typ string, k int, p Placement) float64 {
	k = max(k, 1)
	q := m.params(typ)
	local := q.Batch / float64(k)
	passes := math.Ceil(local/q.MaxLocal - 1e-9)
	t := passes*q.AlphaC + q.BetaC*local
	if k == 1 {
		return t
	}
	extra := float64(max(k-2, 0))
	host := q.AlphaHost + q.BetaHost*extra
	if p == OneHost {
		return t + host
	}
	net := max(host, q.AlphaNet+q.BetaNet*extra)
	if p == OneSwitch {
		return t + net
	}
	return t + m.CrossSwitch*net
}

// Throughput returns a typ job's samples a second on k GPUs placed as p.
func (m *Model) Throughput(typ string, k int, p Placement) float64 {
	return m.params(typ).Batch / m.IterTime(typ, k, p)
}

// Speedup returns a typ job's throughput on k GPUs placed as p over its
// throughput on one GPU.
func (m *Model) Speedup(typ string, k int, p Placement) float64 {
	return m.IterTime(typ, 1, OneHost) / m.IterTime(typ, k, p)
}
