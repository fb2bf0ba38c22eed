package preempt

import (
	"fmt"
	"time"
)

// DefragIssued is one migration a DefragLog holds: when it was issued and
// the GPU time it lost.
type DefragIssued struct {
	At   time.Time
	Lost GPUTime
}

// Issued returns the migrations that count against a budget at now (those
// issued in the hour before it), oldest first, as a copy: what a saved
// state keeps of the log. It only reads.
func (g *DefragLog) Issued(now time.Time) []DefragIssued {
	var out []DefragIssued
	for _, e := range g.recent {
		if e.at.After(now.Add(-time.Hour)) {
			out = append(out, DefragIssued{At: e.at, Lost: e.lost})
		}
	}
	return out
}

// Add records one migration issued at at that lost lost, as Record does
// for a plan's: for a log restored from a saved state. at must not be
// before the newest entry, and lost not negative.
func (g *DefragLog) Add(at time.Time, lost GPUTime) error {
	if n := len(g.recent); n > 0 && at.Before(g.recent[n-1].at) {
		return fmt.Errorf("preempt: DefragLog.Add: %s is before the newest entry %s", at.UTC().Format(time.RFC3339), g.recent[n-1].at.UTC().Format(time.RFC3339))
	}
	if lost < 0 {
		return fmt.Errorf("preempt: DefragLog.Add: negative lost %d", lost)
	}
	g.window(at)
	g.recent = append(g.recent, logEntry{at: at, lost: lost})
	g.lost += lost
	return nil
}
