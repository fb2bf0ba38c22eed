package frag

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// ErrBadTask is the sentinel of Task.Validate errors.
var ErrBadTask = errors.New("frag: bad task")

// Validate checks the task for values no host could honour: negative
// amounts, more than topology.MaxGPUsPerHost GPUs, a share outside 1..999,
// or both whole GPUs and a share. Policies treat an invalid task as one
// that fits nowhere.
func (t Task) Validate() error {
	switch {
	case t.GPUs < 0 || t.GPUs > topology.MaxGPUsPerHost:
		return fmt.Errorf("%w: %d GPUs outside 0..%d", ErrBadTask, t.GPUs, topology.MaxGPUsPerHost)
	case t.GPUMilli < 0 || t.GPUMilli >= topology.MilliPerGPU:
		return fmt.Errorf("%w: share of %d milli outside 1..999", ErrBadTask, t.GPUMilli)
	case t.GPUs > 0 && t.GPUMilli > 0:
		return fmt.Errorf("%w: both %d whole GPUs and a %d milli share", ErrBadTask, t.GPUs, t.GPUMilli)
	case t.CPUMilli < 0:
		return fmt.Errorf("%w: negative CPU %d", ErrBadTask, t.CPUMilli)
	case t.MemoryMiB < 0:
		return fmt.Errorf("%w: negative memory %d", ErrBadTask, t.MemoryMiB)
	}
	return nil
}

// CPUOnly reports whether the task needs no GPU.
func (t Task) CPUOnly() bool { return t.GPUs == 0 && t.GPUMilli == 0 }

// GPUMilliTotal returns the task's GPU demand in milli-GPU: 1000 per whole
// GPU, or the share.
func (t Task) GPUMilliTotal() int64 { return t.milli() }

func (t Task) milli() int64 {
	return int64(t.GPUs)*topology.MilliPerGPU + int64(t.GPUMilli)
}

// perGPU is what the task needs of each GPU it uses, and count how many.
func (t Task) perGPU() (milli int, count int) {
	switch {
	case t.GPUs > 0:
		return topology.MilliPerGPU, t.GPUs
	case t.GPUMilli > 0:
		return t.GPUMilli, 1
	}
	return 0, 0
}

// accepts reports whether the task may run on a host of model m.
func (t Task) accepts(m topology.ModelID) bool {
	if t.CPUOnly() || t.Models == nil {
		return true
	}
	return slices.Contains(t.Models, m)
}

// TaskFor converts a workload task group (one of its tasks) into a Task
// on cluster c, resolving model names to IDs. Model names the cluster does
// not have are dropped; a GPU task none of whose models exist gets Models
// {topology.NoModel}, which no GPU host matches, so it fits nowhere. MIG
// profiles are not node-level demand this package places: they are an
// error, and so is a group that fails workload validation.
func TaskFor(c *topology.Cluster, g *workload.TaskGroup) (Task, error) {
	if g.MIGProfile != "" {
		return Task{}, fmt.Errorf("%w: MIG profile %q: frag places whole GPUs and shares only", ErrBadTask, g.MIGProfile)
	}
	t := Task{GPUs: g.GPUs, GPUMilli: g.GPUMilli, CPUMilli: g.CPUMilli, MemoryMiB: g.MemoryMiB}
	if err := t.Validate(); err != nil {
		return Task{}, err
	}
	if len(g.Models) > 0 && !t.CPUOnly() {
		for _, name := range g.Models {
			if m, ok := c.ModelByName(name); ok && !slices.Contains(t.Models, m) {
				t.Models = append(t.Models, m)
			}
		}
		if len(t.Models) == 0 {
			t.Models = []topology.ModelID{topology.NoModel}
		}
	}
	return t, nil
}
