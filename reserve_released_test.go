package gpusched

import (
	"testing"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// TestReservationsReleased: a job that stops holding drops the kept
// shadows that may model it (its estimate runs past the reserved time or
// is unknown, or the reservation is forever) and keeps the others, which
// released it at their time already.
func TestReservationsReleased(t *testing.T) {
	c := holdCluster(t, 1, 0)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := base.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		end     time.Duration // 0: unknown
		forever bool
		dropped bool
	}{
		{name: "ends-before", end: 30 * time.Minute},
		{name: "ends-at", end: time.Hour},
		{name: "ends-after", end: 2 * time.Hour, dropped: true},
		{name: "unknown", dropped: true},
		{name: "forever", end: 30 * time.Minute, forever: true, dropped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReservations(c, nil, 0, 1)
			sh := topology.NewLedger(c)
			r := &reservation{at: at, forever: tc.forever, shadow: sh}
			rs.kept = append(rs.kept, r)
			j := &job{endKnown: tc.end > 0}
			if j.endKnown {
				j.end = base.Add(tc.end)
			}
			rs.released(j)
			if got := r.shadow == nil; got != tc.dropped {
				t.Fatalf("shadow dropped = %v, want %v", got, tc.dropped)
			}
			if tc.dropped && (len(rs.shadowPool) != 1 || rs.shadowPool[0] != sh) {
				t.Fatalf("dropped shadow not pooled: %d pooled", len(rs.shadowPool))
			}
		})
	}
}

// TestReservationsEndMoved: a job reported Started after it was admitted
// ends later; a kept shadow that released it at the reserved time but
// that it now runs past is dropped, the others are kept.
func TestReservationsEndMoved(t *testing.T) {
	c := holdCluster(t, 1, 0)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := base.Add(time.Hour)
	for _, tc := range []struct {
		name     string
		old, new time.Duration // 0: unknown
		forever  bool
		dropped  bool
	}{
		{name: "still-before", old: 30 * time.Minute, new: 50 * time.Minute},
		{name: "to-at", old: 30 * time.Minute, new: time.Hour},
		{name: "across", old: 30 * time.Minute, new: 70 * time.Minute, dropped: true},
		{name: "was-after", old: 2 * time.Hour, new: 3 * time.Hour},
		{name: "forever", old: 30 * time.Minute, new: 70 * time.Minute, forever: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newReservations(c, nil, 0, 1)
			sh := topology.NewLedger(c)
			r := &reservation{at: at, forever: tc.forever, shadow: sh}
			rs.kept = append(rs.kept, r)
			j := &job{endKnown: true, end: base.Add(tc.new)}
			rs.endMoved(j, base.Add(tc.old), true)
			if got := r.shadow == nil; got != tc.dropped {
				t.Fatalf("shadow dropped = %v, want %v", got, tc.dropped)
			}
		})
	}
}
