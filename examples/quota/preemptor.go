package main

import (
	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
)

// preemptor returns the Scheduler's preemption planner: package preempt's
// victim search with its default rules (lower priority within a queue;
// reclaim of borrowed quota by a queue within its guarantee, from any job
// of a borrowing queue), or nil when on is false.
func preemptor(on bool) (gpusched.Preemptor, error) {
	if !on {
		return nil, nil
	}
	return gpusched.NewPlanPreemptor(preempt.Config{}, 0)
}
