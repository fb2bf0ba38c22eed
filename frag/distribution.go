package frag

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// Class is one kind of task of a workload distribution, with its weight
// (the probability that a task drawn from the workload is of this kind).
type Class struct {
	Task   Task
	Weight float64
}

// Distribution is a target workload: task classes and their weights. FGD
// measures fragmentation against it. Weights are positive; the measures
// normalise them, so they need not sum to one.
//
// A Distribution is plain data and safe to share between policies once
// built; policies copy what they need.
type Distribution struct {
	Classes []Class
}

// ErrBadDistribution is the sentinel of distribution validation errors.
var ErrBadDistribution = errors.New("frag: bad workload distribution")

// Validate checks that the distribution has at least one class, that
// every weight is positive and finite and that every class is a valid
// task.
func (d Distribution) Validate() error {
	if len(d.Classes) == 0 {
		return fmt.Errorf("%w: no classes", ErrBadDistribution)
	}
	for i, c := range d.Classes {
		if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
			return fmt.Errorf("%w: classes[%d].weight %v is not a positive finite number", ErrBadDistribution, i, c.Weight)
		}
		if err := c.Task.Validate(); err != nil {
			return fmt.Errorf("%w: classes[%d]: %v", ErrBadDistribution, i, err)
		}
	}
	return nil
}

// LearnOptions configure Learn. The zero value follows the FGD paper's
// simulator: CPU-only tasks are classes too, memory does not distinguish
// classes, and the most popular classes are kept until they cover 95% of
// the tasks.
type LearnOptions struct {
	// Coverage keeps the most frequent classes, most frequent first, until
	// they account for at least this share of the tasks (0 < Coverage ≤ 1);
	// the weights are renormalised over the kept classes. Zero means 0.95,
	// as in the paper's artifact ("typical pods", popularity threshold 95%).
	Coverage float64
	// ExcludeCPUOnly leaves tasks without GPUs out of the distribution.
	ExcludeCPUOnly bool
	// KeepMemory makes memory part of a class. By default classes are
	// told apart by GPU demand, CPU and acceptable models only, and a
	// class's MemoryMiB is zero (the paper's measure ignores memory).
	KeepMemory bool
	// Labels, when set, holds one label per task that tells GPU tasks'
	// classes apart instead of their set of acceptable models (CPU-only
	// tasks ignore it). The FGD artifact keys its "typical pods" by the
	// pod's GPU-model annotation as the trace wrote it (gpu_spec without
	// empty parts): "V100M16|V100M32" and "V100M16|V100M32|V100M32" are two
	// classes there, one model set here. A class's Task is its first
	// task's. len(Labels) must be len(tasks).
	Labels []string
	// ArtifactOrder orders classes of equal count as the FGD artifact does
	// (its TargetPodList sorted in reverse: decreasing CPU, then per-GPU
	// milli, GPU count and label) instead of by increasing demand, and
	// computes each kept class's weight with the artifact's float
	// arithmetic ((count/total) / (kept/total)). Which classes make the
	// coverage cut-off depends on it when counts tie there.
	ArtifactOrder bool
}

// Learn builds the distribution of a trace: tasks with equal demand (GPUs
// or GPU share, CPU, acceptable models, and memory if asked) form a class
// weighted by its count. Classes are ordered by decreasing count, ties by
// increasing demand; the least frequent are dropped as LearnOptions.Coverage
// says. O(n log n) for n tasks.
func Learn(tasks []Task, opt LearnOptions) (Distribution, error) {
	cov := opt.Coverage
	if cov == 0 {
		cov = 0.95
	}
	if !(cov > 0 && cov <= 1) {
		return Distribution{}, fmt.Errorf("%w: coverage %v outside (0, 1]", ErrBadDistribution, opt.Coverage)
	}
	if opt.Labels != nil && len(opt.Labels) != len(tasks) {
		return Distribution{}, fmt.Errorf("%w: %d labels for %d tasks", ErrBadDistribution, len(opt.Labels), len(tasks))
	}
	type entry struct {
		t     Task
		n     int
		label string
	}
	var entries []entry
	index := map[classKey]int{}
	total := 0
	for i, t := range tasks {
		if err := t.Validate(); err != nil {
			return Distribution{}, fmt.Errorf("frag: tasks[%d]: %w", i, err)
		}
		if t.CPUOnly() {
			if opt.ExcludeCPUOnly {
				continue
			}
			t.Models = nil
		}
		if !opt.KeepMemory {
			t.MemoryMiB = 0
		}
		t.Models = canonModels(t.Models)
		k := keyOf(t)
		label := ""
		if opt.Labels != nil && !t.CPUOnly() {
			label = opt.Labels[i]
			k.models, k.label = "", label
		}
		if e, ok := index[k]; ok {
			entries[e].n++
		} else {
			index[k] = len(entries)
			entries = append(entries, entry{t: t, n: 1, label: label})
		}
		total++
	}
	if total == 0 {
		return Distribution{}, fmt.Errorf("%w: no tasks to learn from", ErrBadDistribution)
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		if opt.ArtifactOrder {
			// Reverse of the artifact's PodResource.Less: CPU, per-GPU milli,
			// GPU count, label.
			ar, an := a.t.perGPU()
			br, bn := b.t.perGPU()
			return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(b.t.CPUMilli, a.t.CPUMilli), cmp.Compare(br, ar), cmp.Compare(bn, an), cmp.Compare(b.label, a.label))
		}
		return cmp.Or(cmp.Compare(b.n, a.n), compareTasks(a.t, b.t))
	})
	need := cov * float64(total)
	kept, sum := 0, 0
	for kept < len(entries) && float64(sum) < need {
		sum += entries[kept].n
		kept++
	}
	d := Distribution{Classes: make([]Class, kept)}
	for i := range kept {
		w := float64(entries[i].n) / float64(sum)
		if opt.ArtifactOrder && kept < len(entries) {
			w = float64(entries[i].n) / float64(total) / (float64(sum) / float64(total))
		} else if opt.ArtifactOrder {
			w = float64(entries[i].n) / float64(total)
		}
		d.Classes[i] = Class{Task: entries[i].t, Weight: w}
	}
	return d, nil
}

// classKey identifies a task's demand.
type classKey struct {
	gpus, milli int
	cpu, mem    int64
	models      string
	label       string // LearnOptions.Labels
}

func keyOf(t Task) classKey {
	k := classKey{gpus: t.GPUs, milli: t.GPUMilli, cpu: t.CPUMilli, mem: t.MemoryMiB}
	if len(t.Models) > 0 {
		b := make([]byte, 0, 2*len(t.Models))
		for _, m := range t.Models {
			b = append(b, byte(uint16(m)>>8), byte(m))
		}
		k.models = string(b)
	}
	return k
}

// canonModels returns the models sorted and without repeats; nil for none.
func canonModels(ms []topology.ModelID) []topology.ModelID {
	if len(ms) == 0 {
		return nil
	}
	out := slices.Clone(ms)
	slices.Sort(out)
	return slices.Compact(out)
}

// compareTasks orders tasks by GPU demand, then CPU, memory and models.
func compareTasks(a, b Task) int {
	return cmp.Or(
		cmp.Compare(a.milli(), b.milli()),
		cmp.Compare(a.GPUs, b.GPUs),
		cmp.Compare(a.CPUMilli, b.CPUMilli),
		cmp.Compare(a.MemoryMiB, b.MemoryMiB),
		slices.Compare(a.Models, b.Models),
	)
}
