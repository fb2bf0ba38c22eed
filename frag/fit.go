package frag

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/topology"
)

// The demands a *FitError names.
const (
	FitModels = "models" // no host has a GPU of an accepted model
	FitGPUs   = "gpus"   // no such host has enough GPUs
	FitCPU    = "cpu"    // no host with the GPUs has enough CPU
	FitMemory = "memory" // no host with the GPUs and CPU has enough memory
)

// ErrFitsNowhere is the sentinel every *FitError unwraps to.
var ErrFitsNowhere = errors.New("frag: task fits no host")

// FitError says why a task fits no host of a cluster even when the
// cluster is empty and healthy: it can never be placed, whatever the
// policy. Hosts are filtered in turn by accepted GPU model, GPUs, CPU and
// memory; Field (FitModels, FitGPUs, FitCPU or FitMemory) names the
// demand that leaves none.
type FitError struct {
	Field string
	// Need is the task's demand of Field and Most the largest amount any
	// host that passed the earlier filters offers: GPUs (a share of a GPU
	// needs 1), milli-CPU or MiB; zero for FitModels.
	Need, Most int64
}

// Error describes the demand no host meets.
func (e *FitError) Error() string {
	switch e.Field {
	case FitModels:
		return "frag: task fits no host: no host has a GPU of an accepted model"
	case FitGPUs:
		return fmt.Sprintf("frag: task fits no host: it needs %d GPUs on one host, the most any host of an accepted model has is %d", e.Need, e.Most)
	case FitCPU:
		return fmt.Sprintf("frag: task fits no host: it needs %d milli-CPU, the most any host with the GPUs has is %d", e.Need, e.Most)
	}
	return fmt.Sprintf("frag: task fits no host: it needs %d MiB of memory, the most any host with the GPUs and CPU has is %d", e.Need, e.Most)
}

// Unwrap returns ErrFitsNowhere.
func (e *FitError) Unwrap() error { return ErrFitsNowhere }

// FitChecker tells whether a task could ever be placed on a cluster:
// whether some host, empty and healthy, accepts its GPU model and has the
// GPUs, CPU and memory it asks for, as the policies of this package filter
// hosts. It keeps the cluster's distinct host shapes (model, GPUs, CPU,
// memory), usually a handful, so a check does not visit every host. A
// FitChecker is immutable and safe for concurrent use.
type FitChecker struct {
	shapes []hostShape
}

// hostShape is what an empty, healthy host offers.
type hostShape struct {
	model    topology.ModelID
	full     int   // GPUs usable whole
	maxFree  int   // the largest usable free milli of one GPU
	cpu, mem int64 // free CPU (milli) and memory (MiB)
}

// NewFitChecker reads the host shapes of c.
func NewFitChecker(c *topology.Cluster) *FitChecker {
	l := topology.NewLedger(c)
	shapes := make([]hostShape, 0, c.NumHosts())
	for h := range topology.HostID(c.NumHosts()) {
		hs := directState(l, h)
		s := hostShape{model: hs.model, full: hs.full, cpu: hs.cpu, mem: hs.mem}
		for _, f := range hs.free {
			s.maxFree = max(s.maxFree, int(f))
		}
		shapes = append(shapes, s)
	}
	slices.SortFunc(shapes, func(a, b hostShape) int {
		return cmp.Or(cmp.Compare(a.model, b.model), cmp.Compare(a.full, b.full), cmp.Compare(a.maxFree, b.maxFree),
			cmp.Compare(a.cpu, b.cpu), cmp.Compare(a.mem, b.mem))
	})
	return &FitChecker{shapes: slices.Compact(shapes)}
}

// Check returns nil when some host of the cluster, empty, could take t; a
// *FitError naming the demand no host meets when none could; or
// t.Validate's error for a task no host could ever honour.
func (f *FitChecker) Check(t Task) error {
	if err := t.Validate(); err != nil {
		return err
	}
	per, n := t.perGPU()
	cands := make([]hostShape, 0, len(f.shapes))
	for _, s := range f.shapes {
		// A GPU task with models needs a GPU host of one of them (Models
		// may hold NoModel, the mark of names the cluster lacks, which
		// GPU-less hosts carry).
		if n > 0 && t.Models != nil && (s.model == topology.NoModel || !slices.Contains(t.Models, s.model)) {
			continue
		}
		cands = append(cands, s)
	}
	if len(cands) == 0 {
		return &FitError{Field: FitModels}
	}
	filter := func(field string, need int64, offer func(hostShape) int64) error {
		var most int64
		kept := cands[:0]
		for _, s := range cands {
			o := offer(s)
			most = max(most, o)
			if o >= need {
				kept = append(kept, s)
			}
		}
		cands = kept
		if len(cands) == 0 {
			return &FitError{Field: field, Need: need, Most: most}
		}
		return nil
	}
	if n > 0 {
		// Whole GPUs need that many usable whole; a share needs one GPU
		// with that much free, which on an empty host is any usable GPU.
		need, offer := int64(n), func(s hostShape) int64 { return int64(s.full) }
		if per < topology.MilliPerGPU {
			need = 1
			offer = func(s hostShape) int64 {
				if s.maxFree >= per {
					return int64(max(s.full, 1))
				}
				return 0
			}
		}
		if err := filter(FitGPUs, need, offer); err != nil {
			return err
		}
	}
	if err := filter(FitCPU, t.CPUMilli, func(s hostShape) int64 { return s.cpu }); err != nil {
		return err
	}
	return filter(FitMemory, t.MemoryMiB, func(s hostShape) int64 { return s.mem })
}
