package goodput

import (
	"math"

	"github.com/gpusched/gpusched/sim/trace"
	"github.com/gpusched/gpusched/workload"
)

// Elastic rewrites jobs for a Scheduler: each job that asks only for
// whole GPUs becomes one group of 1-GPU tasks (the CPU and memory it asks
// for shared among them, rounded down) that runs on 1 up to
// ⌈maxScale × its GPUs⌉ GPUs, at most capGPUs (and never fewer than it
// asks for). Pollux caps a job at twice the most GPUs it has been
// profiled on; maxScale 2 is the same bound from the size it asks for.
// Jobs with GPU shares, MIG instances or no GPU are left as they are (a
// Scheduler refuses them). It returns how many jobs it rewrote.
func Elastic(jobs []trace.Job, maxScale float64, capGPUs int) int {
	n := 0
	for i := range jobs {
		sp := &jobs[i].Spec
		d := sp.Demand()
		if d.GPUMilli <= 0 || d.GPUMilli%workload.MilliPerGPU != 0 || !wholeGPUs(sp) {
			continue
		}
		g := int(d.GPUMilli / workload.MilliPerGPU)
		most := max(g, min(capGPUs, int(math.Ceil(maxScale*float64(g)-1e-9))))
		var models []string
		for _, tg := range sp.Groups {
			models = append(models, tg.Models...)
		}
		sp.Groups = []workload.TaskGroup{{Count: most, MinCount: 1, GPUs: 1,
			CPUMilli: d.CPUMilli / int64(g), MemoryMiB: d.MemoryMiB / int64(g), Models: models}}
		n++
	}
	return n
}

// wholeGPUs reports whether every group of sp asks for whole GPUs.
func wholeGPUs(sp *workload.Job) bool {
	for _, g := range sp.Groups {
		if g.GPUMilli != 0 || g.MIGProfile != "" || g.GPUs == 0 {
			return false
		}
	}
	return true
}
