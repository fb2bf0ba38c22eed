package frag

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Measure is FGD's fragmentation measure for one workload distribution on
// one cluster (Weng et al., ATC'23, §4). For a host in state s and a task
// class c, the free GPU capacity c cannot use is
//
//	f_c(s) = F(s)                        if c needs no GPU, if the host's model is
//	                                     not one c accepts, if the host lacks the
//	                                     CPU or memory c needs, or if fewer than n_c
//	                                     of its GPUs have r_c milli free;
//	f_c(s) = Σ free_i over GPUs i with   otherwise, where c needs n_c GPUs with r_c
//	         free_i < r_c                milli free on each (r_c = 1000 for whole
//	                                     GPUs, the share for a fractional task);
//
// with F(s) the host's total free milli-GPU. The host's fragmentation is
// the expectation over the distribution, Σ_c w_c f_c(s) / Σ_c w_c, in
// milli-GPU; the cluster's is the sum over hosts. A GPU's free capacity
// counts when the GPU is allocatable (healthy, on a healthy host) and
// whole-free or shared; GPUs held whole or partitioned by MIG have none.
//
// A Measure is immutable after NewMeasure and safe for concurrent use.
type Measure struct {
	c       *topology.Cluster
	classes []mclass // by decreasing r, then input order
	wsum    int64    // Σ w over classes
	usesMem bool     // some class needs memory
	nModels int
}

// weightScale is the fixed-point scale of class weights: a class of
// normalised weight p weighs round(p × 2^30). Fragmentation is computed
// in integers of milli-GPU × weight, so equal quantities compare equal
// whatever the order of summation (FGD's ties are then real ties).
const weightScale = 1 << 30

// mclass is a compiled class.
type mclass struct {
	w       int64 // weight in units of 1/weightScale
	cpuOnly bool
	r       int16 // per-GPU milli needed
	n       int32 // GPUs needed
	cpu     int64
	mem     int64
	allow   []bool // by model+1 (index 0: hosts without accelerators); nil = any
}

// NewMeasure compiles d for cluster c. It returns an error if d is not
// valid (see Distribution.Validate).
func NewMeasure(c *topology.Cluster, d Distribution) (*Measure, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	m := &Measure{c: c, nModels: len(c.Models())}
	var sum float64
	for _, cl := range d.Classes {
		sum += cl.Weight
	}
	for _, cl := range d.Classes {
		t := cl.Task
		r, n := t.perGPU()
		w := int64(math.Round(cl.Weight / sum * weightScale))
		if w < 1 {
			w = 1
		}
		m.wsum += w
		mc := mclass{w: w, cpuOnly: t.CPUOnly(), r: int16(r), n: int32(n), cpu: t.CPUMilli, mem: t.MemoryMiB}
		if t.MemoryMiB > 0 {
			m.usesMem = true
		}
		if !mc.cpuOnly && t.Models != nil {
			mc.allow = make([]bool, m.nModels+1)
			for _, id := range t.Models {
				if int(id)+1 >= 0 && int(id)+1 < len(mc.allow) {
					mc.allow[int(id)+1] = true
				}
			}
		}
		m.classes = append(m.classes, mc)
	}
	slices.SortStableFunc(m.classes, func(a, b mclass) int { return cmp.Compare(b.r, a.r) })
	return m, nil
}

// Node returns the fragmentation of host h on l, in milli-GPU. O(classes
// + GPUs of h × log GPUs of h).
func (m *Measure) Node(l *topology.Ledger, h topology.HostID) float64 {
	m.check(l)
	var buf [16]int16
	free := hostFree(l, h, buf[:0])
	return float64(m.frag(l.Cluster().HostModel(h), l.CPUFree(h), l.MemoryFree(h), l.HostUsable(h), free)) / float64(m.wsum)
}

// Fragmentation is the fragmentation of a set of hosts in milli-GPU,
// together with their free milli-GPU.
type Fragmentation struct {
	// Frag is the expected free milli-GPU a task of the distribution
	// cannot use.
	Frag float64
	// Free is the free milli-GPU (on allocatable GPUs held by nothing
	// or by shares).
	Free float64
}

// Ratio returns Frag/Free, or 0 when nothing is free.
func (f Fragmentation) Ratio() float64 {
	if f.Free == 0 {
		return 0
	}
	return f.Frag / f.Free
}

// Cluster returns the fragmentation of every host of l, summed. O(hosts ×
// (classes + GPUs per host)).
func (m *Measure) Cluster(l *topology.Ledger) Fragmentation {
	m.check(l)
	var frag, free int64
	var buf [16]int16
	c := l.Cluster()
	for h := range topology.HostID(c.NumHosts()) {
		fs := hostFree(l, h, buf[:0])
		for _, f := range fs {
			free += int64(f)
		}
		frag += m.frag(c.HostModel(h), l.CPUFree(h), l.MemoryFree(h), l.HostUsable(h), fs)
	}
	return Fragmentation{Frag: float64(frag) / float64(m.wsum), Free: float64(free)}
}

func (m *Measure) check(l *topology.Ledger) {
	if l.Cluster() != m.c {
		panic(fmt.Sprintf("frag: Measure compiled for cluster %q used with a ledger of %q", m.c.Name(), l.Cluster().Name()))
	}
}

// hostFree appends the usable free milli of each GPU of h to buf.
func hostFree(l *topology.Ledger, h topology.HostID, buf []int16) []int16 {
	first, n := l.Cluster().HostGPUs(h)
	for i := range n {
		buf = append(buf, usableFree(l, first+topology.GPUID(i)))
	}
	return buf
}

// usableFree is the milli-GPU of g a whole-GPU or share task could take.
func usableFree(l *topology.Ledger, g topology.GPUID) int16 {
	f := l.GPUFreeMilli(g)
	if f == 0 || l.GPU(g).Mode == topology.ModeMIG {
		return 0
	}
	return int16(f)
}

// frag is the fragmentation of a host of the given model, free CPU and
// memory and per-GPU free milli (in any order). A host that is not
// healthy has nothing free, hence no fragmentation.
// The result is in milli-GPU × weight units (divide by m.wsum).
func (m *Measure) frag(model topology.ModelID, cpu, mem int64, healthy bool, free []int16) int64 {
	if !healthy {
		return 0
	}
	var sbuf [16]int16
	var sorted []int16
	if len(free) <= len(sbuf) {
		sorted = sbuf[:len(free)]
	} else {
		sorted = make([]int16, len(free))
	}
	copy(sorted, free)
	sortDesc(sorted)
	return m.fragSorted(model, cpu, mem, sorted)
}

// fragSorted is frag for per-GPU free milli sorted in decreasing order.
// Classes come by decreasing r, so one sweep over the GPUs finds, for each
// class, how many GPUs have at least r free and how much they hold.
func (m *Measure) fragSorted(model topology.ModelID, cpu, mem int64, sorted []int16) int64 {
	var total int64
	for _, f := range sorted {
		total += int64(f)
	}
	if total == 0 {
		return 0
	}
	mi := int(model) + 1
	var out int64
	var idx int
	var usable int64 // Σ free over GPUs with free ≥ current r
	for i := range m.classes {
		c := &m.classes[i]
		if c.cpuOnly {
			out += c.w * total
			continue
		}
		for idx < len(sorted) && sorted[idx] >= c.r {
			usable += int64(sorted[idx])
			idx++
		}
		fits := int32(idx) >= c.n && cpu >= c.cpu && mem >= c.mem &&
			(c.allow == nil || (mi >= 0 && mi < len(c.allow) && c.allow[mi]))
		if fits {
			out += c.w * (total - usable)
		} else {
			out += c.w * total
		}
	}
	return out
}

// sortDesc sorts a short slice in decreasing order (insertion sort: hosts
// have a handful of GPUs).
func sortDesc(s []int16) {
	if len(s) > 32 {
		slices.SortFunc(s, func(a, b int16) int { return cmp.Compare(b, a) })
		return
	}
	for i := 1; i < len(s); i++ {
		v := s[i]
		j := i
		for j > 0 && s[j-1] < v {
			s[j] = s[j-1]
			j--
		}
		s[j] = v
	}
}
