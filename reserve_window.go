package gpusched

import (
	"time"

	"github.com/gpusched/gpusched/topology"
)

// Slurm's estimate of a reserved start (Config.ReserveEndWindow). Slurm's
// backfill asks the select plugin when a pending job could start; the
// plugin (cons_tres' will-run test) takes the running jobs away in order
// of their estimated ends, but in batches, trying the job only after each
// batch: the first batch ends W after the first estimated end rounded up
// to the next multiple of W of wall-clock time, and each later batch's
// span is double the last one's. The start it reports is the estimated end
// of the last job of the first batch after which the job fits — later
// than the end that made room, by up to the batch's span. Jobs on nodes
// the job cannot use (planned for other pending jobs) are not counted.
// gpusched finds the exact end (reservations.reserve, deepReserver.plan);
// with the option on it then moves the reservation's time to the end of
// that end's batch, so that, as in Slurm, jobs ending before that later
// time may backfill onto the reserved hosts.

// batchEnd returns the estimated end of the last running job in the batch
// that holds at (the first batch whose last end is not before at), or at
// when no such batch exists or the option is off. Running jobs without an
// estimate, and those whose every host skip reports true, are not
// counted; an estimated end already past is taken as now + 1 s (Slurm's
// guess for a job past its limit).
func (rs *reservations) batchEnd(at, now time.Time, jobs *jobTable, skip func(topology.HostID) bool) time.Time {
	w := rs.endWindow
	if w <= 0 || !at.After(now) {
		return at
	}
	var (
		bound time.Time // the current batch's last allowed end
		span  = w
		first time.Time // the first counted end rounded up to w, plus … (Slurm's barrier)
		last  time.Time // the last end taken into the current batch
		open  bool
		res   = at
	)
	jobs.ends.Ascend(func(h *job) bool {
		if !h.endKnown {
			return false
		}
		if skip != nil && h.placement != nil {
			all := true
			for _, cl := range h.placement.Claims {
				all = all && skip(cl.Host)
			}
			if all && len(h.placement.Claims) > 0 {
				return true
			}
		}
		e := h.end
		if !e.After(now) {
			e = now.Add(time.Second)
		}
		if !open {
			// The barrier: the first end rounded up to the next multiple
			// of w (a whole w later when it is one already).
			sec := e.Unix()
			first = time.Unix(sec-sec%int64(w/time.Second)+int64(w/time.Second), 0)
			bound, open, last = first.Add(span), true, e
			return true
		}
		if e.After(bound) {
			// The batch closes at last; the job is tried after it.
			if !last.Before(at) {
				res = last
				return false
			}
			for e.After(first.Add(span)) {
				span *= 2
			}
			bound = first.Add(span)
		}
		last = e
		return true
	})
	if res.Equal(at) && open && !last.Before(at) {
		res = last
	}
	return res
}
