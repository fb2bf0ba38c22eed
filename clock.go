package gpusched

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeBackwards: an event's time is earlier than the latest time the
// Scheduler has seen (from an event or a Schedule). The event is refused
// and nothing changes; see Scheduler for the rule.
var ErrTimeBackwards = errors.New("gpusched: time went backwards")

// ErrClockSkew: an event's time is further ahead of the latest time the
// Scheduler has seen than Config.MaxClockSkew allows. The event is
// refused and nothing changes; see Scheduler for the rule.
var ErrClockSkew = errors.New("gpusched: event time too far ahead")

// DefaultMaxClockSkew is Config.MaxClockSkew's default: a day, so that a
// host that runs Schedule at least daily never sees it refuse a right
// time, while a timestamp from a wrong clock (a year ahead, a unit error)
// is refused.
const DefaultMaxClockSkew = 24 * time.Hour

// advance moves the Scheduler's clock to now, never back; it returns the
// time to use. Schedule and the restore calls clamp through it; the
// events go through eventAt, which refuses an earlier time instead.
func (s *Scheduler) advance(now time.Time) time.Time {
	if now.Before(s.now) {
		return s.now
	}
	s.now = now
	return now
}

// eventAt checks that event (on job id) at now is not earlier than the
// latest time seen, nor further ahead of it than Config.MaxClockSkew,
// and advances the clock to it. An earlier time is a *JobError wrapping
// ErrTimeBackwards, one too far ahead a *JobError wrapping ErrClockSkew;
// both name the event, the job and the times; the clock does not move.
func (s *Scheduler) eventAt(event, id string, now time.Time) (time.Time, error) {
	if now.Before(s.now) {
		return time.Time{}, jobErr(id, fmt.Errorf("%w: %s(%s) at %s is before %s, the latest time seen",
			ErrTimeBackwards, event, id, stamp(now), stamp(s.now)))
	}
	if lim := s.cfg.MaxClockSkew; lim > 0 && !s.now.IsZero() && now.Sub(s.now) > lim {
		return time.Time{}, jobErr(id, fmt.Errorf("%w: %s(%s) at %s is %v ahead of %s, the latest time seen, beyond Config.MaxClockSkew %v "+
			"(a wrong clock? if the time is right, run Schedule at it first)",
			ErrClockSkew, event, id, stamp(now), now.Sub(s.now), stamp(s.now), lim))
	}
	return s.advance(now), nil
}

// stamp writes a time for an error message: UTC, to the nanosecond where
// it has them.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Now returns the latest time the Scheduler has seen, from an event or a
// Schedule (the zero time before any). An event at an earlier time is
// refused with ErrTimeBackwards: a host that learns of a job late (a pod
// created before the last cycle) submits it at max(its time, Now()). An
// event further ahead than Config.MaxClockSkew is refused with
// ErrClockSkew; Schedule's time is the host's own clock and moves Now
// without a limit.
func (s *Scheduler) Now() time.Time { return s.now }
