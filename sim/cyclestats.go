package sim

import (
	"time"

	"github.com/gpusched/gpusched"
)

// CycleStats is one cycle's library statistics (gpusched.CycleStats: the
// figures an embedder exports from Decision.Stats — pending jobs by queue
// and reason token, queue GPUs nominal/used/reserved/borrowed, this
// cycle's admissions, preemptions and refusals, stranded free GPUs per
// topology level) at the simulated time of the cycle.
type CycleStats struct {
	At    time.Duration
	Stats gpusched.CycleStats
}

// cycleStatsLog is the concern of the cycles' library statistics
// (Result.CycleStats). Its methods are the only writers of its fields.
type cycleStatsLog struct {
	cycles []CycleStats
}

// record keeps the statistics a Decision carries (nil: none, nothing is
// recorded).
func (l *cycleStatsLog) record(now time.Duration, st *gpusched.CycleStats) {
	if st != nil {
		l.cycles = append(l.cycles, CycleStats{At: now, Stats: *st})
	}
}
