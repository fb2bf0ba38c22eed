package frag

import (
	"math"

	"github.com/gpusched/gpusched/topology"
)

// Cost caches. The fragmentation of a host depends only on the host's
// state, and the cost of a task on a host (FGD's growth of fragmentation,
// and the scores of best-fit, worst-fit, dot-product and gpu-packing) only
// on the host's state and the task's shape (per-GPU milli, GPU count, CPU,
// and memory when FGD's distribution has classes that need memory; the
// accepted models and the memory otherwise only decide feasibility, which
// is checked afresh on every Pick). Both are cached per host and keyed by
// HostGeneration, so after a placement only the host that changed is
// evaluated again. Shapes live in slots, reused least-recently-used first.

// shapeKey is what the growth of fragmentation depends on besides the host.
type shapeKey struct {
	gpus, milli int32
	cpu, mem    int64
}

// fgdSlot holds, per host, the cost of one task shape.
type fgdSlot struct {
	key   shapeKey
	used  uint64    // tick of the last Pick that used it
	gen   []uint64  // per host: HostGeneration+1 of the entry; 0 = none
	delta []float64 // the cost (FGD: see fgdCost); +Inf if the host cannot take the task
	gpu   []int16   // FGD: the share's GPU offset; else -1
}

type fgdCache struct {
	nh      int
	usesMem bool
	fgen    []uint64 // per host: HostGeneration+1 of fval; 0 = none
	fval    []int64  // per host: its fragmentation (Measure units)
	slots   map[shapeKey]*fgdSlot
	tick    uint64
	max     int
}

// fgdCacheEntries bounds the per-host entries kept over all slots.
const fgdCacheEntries = 1 << 20

func (f *fgdCache) init(nh int, usesMem bool, slots int) {
	if slots <= 0 {
		slots = min(max(fgdCacheEntries/max(nh, 1), 4), 256)
	}
	*f = fgdCache{
		nh: nh, usesMem: usesMem,
		fgen: make([]uint64, nh), fval: make([]int64, nh),
		slots: map[shapeKey]*fgdSlot{},
		max:   slots,
	}
}

// slot returns the slot of t's shape, making one if needed.
func (f *fgdCache) slot(t Task) *fgdSlot {
	f.tick++
	k := shapeKey{gpus: int32(t.GPUs), milli: int32(t.GPUMilli), cpu: t.CPUMilli}
	if f.usesMem {
		k.mem = t.MemoryMiB
	}
	if s, ok := f.slots[k]; ok {
		s.used = f.tick
		return s
	}
	var s *fgdSlot
	if len(f.slots) >= f.max {
		// Reuse the least recently used slot. Map order does not matter:
		// ticks are unique, so the minimum is.
		for _, c := range f.slots {
			if s == nil || c.used < s.used {
				s = c
			}
		}
		delete(f.slots, s.key)
		clear(s.gen)
	} else {
		s = &fgdSlot{gen: make([]uint64, f.nh), delta: make([]float64, f.nh), gpu: make([]int16, f.nh)}
	}
	s.key, s.used = k, f.tick
	f.slots[k] = s
	return s
}

// fgdBase returns the fragmentation of refreshed host h at generation gen.
func (p *policy) fgdBase(l *topology.Ledger, h topology.HostID, gen uint64, hs *hostState) int64 {
	if p.fgd.fgen[h] != gen+1 {
		p.fgd.fval[h] = p.meas.frag(hs.model, hs.cpu, hs.mem, l.HostUsable(h), hs.free)
		p.fgd.fgen[h] = gen + 1
	}
	return p.fgd.fval[h]
}

// fgdDelta returns the cost (see fgdCost) of placing t on the (healthy)
// host hs whose fragmentation is f0, and for a share the GPU offset of
// least cost (ties to the lowest offset). Whole GPUs are the lowest-numbered
// free ones: which free GPUs a whole-GPU task takes does not change the
// measure. The growth is in Measure units, exact. +Inf when the host
// cannot take t.
func (p *policy) fgdDelta(hs *hostState, t *Task, f0 int64) (float64, int16) {
	m := p.meas
	per, n := t.perGPU()
	cpu, mem := hs.cpu-t.CPUMilli, hs.mem-t.MemoryMiB
	if cap(p.scratch) < len(hs.free) {
		p.scratch = make([]int16, len(hs.free))
	}
	buf := p.scratch[:len(hs.free)]
	copy(buf, hs.free)
	cost := func() float64 { return p.fgdCost(m.frag(hs.model, cpu, mem, true, buf) - f0) }
	if p.scoring == ScoreArtifact {
		a0 := p.artFrag(hs.model, hs.cpu, hs.free)
		cost = func() float64 { return artCost(a0, p.artFrag(hs.model, cpu, buf)) }
	}
	switch {
	case n == 0:
		return cost(), -1
	case per == topology.MilliPerGPU:
		k := 0
		for i := range buf {
			if k == n {
				break
			}
			if buf[i] == topology.MilliPerGPU && hs.allowed(i) {
				buf[i] = 0
				k++
			}
		}
		if k < n {
			return math.Inf(1), -1
		}
		return cost(), -1
	}
	best, bg := math.Inf(1), -1
	var triedBuf [16]int16
	tried := triedBuf[:0]
outer:
	for i, f := range hs.free {
		if int(f) < per || !hs.allowed(i) {
			continue
		}
		for _, v := range tried {
			if v == f {
				continue outer // the same free value gives the same state
			}
		}
		tried = append(tried, f)
		buf[i] = f - int16(per)
		if c := cost(); c < best {
			best, bg = c, i
		}
		buf[i] = f
	}
	if bg < 0 {
		return math.Inf(1), -1
	}
	return best, int16(bg)
}

// fgdCost turns a growth of fragmentation (Measure units) into a cost,
// lower is better: the growth itself (ScoreExact), or minus the artifact's
// score ⌊100·σ(−ΔF/1000)⌋ with ΔF in milli-GPU (ScorePaper).
func (p *policy) fgdCost(d int64) float64 {
	if p.scoring == ScoreExact {
		return float64(d)
	}
	x := -float64(d) / float64(p.meas.wsum) / 1000
	return -math.Trunc(100 / (1 + math.Exp(-x)))
}
