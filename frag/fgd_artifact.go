package frag

import (
	"math"

	"github.com/gpusched/gpusched/topology"
)

// artClass is a class of FGD's distribution compiled for the artifact's
// float arithmetic (ScoreArtifact), in the distribution's order.
type artClass struct {
	w       float64 // the class's weight as given (Learn: its share)
	cpuOnly bool
	r       int16 // per-GPU milli needed
	n       int   // GPUs needed
	cpu     int64
	allow   []bool // by model+1; nil = any
}

// The artifact's fragment kinds (pkg/utils/frag.go), by their index in
// its FragAmount.Data.
const (
	artQ1LackBoth = iota
	artQ2LackGPU
	artQ3Satisfied
	artQ4LackCPU
	artXLSatisfied
	artXRLackCPU
	artNoAccess
	artKinds
)

// compileArtifact builds p.art from p.dist for cluster c.
func (p *policy) compileArtifact(c *topology.Cluster) {
	nModels := len(c.Models())
	p.art = p.art[:0]
	for _, cl := range p.dist.Classes {
		t := cl.Task
		r, n := t.perGPU()
		ac := artClass{w: cl.Weight, cpuOnly: t.CPUOnly(), r: int16(r), n: n, cpu: t.CPUMilli}
		if !ac.cpuOnly && t.Models != nil {
			ac.allow = make([]bool, nModels+1)
			for _, id := range t.Models {
				if int(id)+1 >= 0 && int(id)+1 < len(ac.allow) {
					ac.allow[int(id)+1] = true
				}
			}
		}
		p.art = append(p.art, ac)
	}
}

// artFrag is a host's fragmentation as the FGD artifact computes it
// (NodeGpuShareFragAmountScore): in float64, each class's weight times
// milli-GPU added to its fragment kind in the distribution's order, then
// the kinds but "satisfied" summed in index order. It equals Measure's
// value up to rounding; the rounding is the artifact's, so a growth of
// zero can come out a hair above or below it, which decides a score of 49
// or 50 there.
func (p *policy) artFrag(model topology.ModelID, cpu int64, free []int16) float64 {
	var total int64
	for _, f := range free {
		total += int64(f)
	}
	var data [artKinds]float64
	mi := int(model) + 1
	for i := range p.art {
		c := &p.art[i]
		switch {
		case c.cpuOnly:
			k := artXLSatisfied
			if cpu < c.cpu {
				k = artXRLackCPU
			}
			data[k] += c.w * float64(total)
			continue
		case c.allow != nil && !(mi >= 0 && mi < len(c.allow) && c.allow[mi]):
			data[artNoAccess] += c.w * float64(total)
			continue
		}
		fits := 0
		var fragMilli int64
		for _, f := range free {
			if f >= c.r {
				fits++
			} else {
				fragMilli += int64(f)
			}
		}
		switch {
		case fits >= c.n && cpu >= c.cpu:
			data[artQ2LackGPU] += c.w * float64(fragMilli)
			data[artQ3Satisfied] += c.w * float64(total-fragMilli)
		case fits >= c.n:
			data[artQ4LackCPU] += c.w * float64(total)
		case cpu >= c.cpu:
			data[artQ2LackGPU] += c.w * float64(total)
		default:
			data[artQ1LackBoth] += c.w * float64(total)
		}
	}
	var out float64
	for k, v := range data {
		if k != artQ3Satisfied {
			out += v
		}
	}
	return out
}

// artCost is the cost (lower is better) of going from fragmentation f0
// to f1 as the artifact scores it: minus int64(sigmoid((f0−f1)/1000) ×
// 100), with its sigmoid 1/(1+e^−x).
func artCost(f0, f1 float64) float64 {
	s := 1.0 / (1.0 + math.Exp(-((f0 - f1) / 1000)))
	return -float64(int64(s * 100))
}
