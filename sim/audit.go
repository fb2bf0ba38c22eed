package sim

import (
	"fmt"

	"github.com/gpusched/gpusched/topology"
)

// audit recounts, naively, what the simulation keeps incrementally: the
// ledger's counters, the GPU milli held by running jobs, the failed GPUs,
// the pending list and the running count.
func (s *Simulation) audit() error {
	if err := s.led.Check(); err != nil {
		return fmt.Errorf("%w: ledger: %v", ErrInvariant, err)
	}
	var used int64
	running, pending := 0, 0
	for i := range s.jobs {
		j := &s.jobs[i]
		switch j.state {
		case StateRunning:
			running++
			used += claimMilli(s.c, j.claims)
		case StatePending:
			pending++
			if j.pendIdx < 0 || s.pending[j.pendIdx] != int32(i) {
				return fmt.Errorf("%w: pending job %s not in the pending list", ErrInvariant, j.spec.ID)
			}
		}
	}
	if used != s.m.usedMilli || running != s.running || pending != len(s.pending) {
		return fmt.Errorf("%w: recount: used %d running %d pending %d; kept %d %d %d", ErrInvariant, used, running, pending, s.m.usedMilli, s.running, len(s.pending))
	}
	// Used milli from the ledger's own per-GPU state must agree too. A
	// failed GPU holds work only of jobs hit by the failure that await
	// their recovery.
	waiting := map[topology.GPUID]bool{}
	for _, i := range s.crashed {
		if j := &s.jobs[i]; j.state == StateRunning && j.crashed {
			for _, c := range j.claims {
				for _, g := range c.GPUs {
					waiting[g.GPU] = true
				}
			}
		}
	}
	var ledUsed int64
	failed := 0
	for g := range s.c.NumGPUs() {
		gid := topology.GPUID(g)
		ledUsed += int64(s.led.GPU(gid).UsedMilli)
		if s.isFailed(gid) {
			failed++
			if s.led.GPU(gid).UsedMilli != 0 && !waiting[gid] {
				return fmt.Errorf("%w: failed GPU %s still runs work", ErrInvariant, s.c.GPUName(gid))
			}
		}
	}
	if ledUsed != used || failed != s.failedGPU {
		return fmt.Errorf("%w: ledger holds %d milli, jobs %d; failed GPUs %d, kept %d", ErrInvariant, ledUsed, used, failed, s.failedGPU)
	}
	return nil
}
