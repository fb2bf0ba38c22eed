package gpusched

import (
	"fmt"
	"time"

	"github.com/google/btree"
	"github.com/gpusched/gpusched/queue"
)

// admitClock is Config.AdmitTimeout's concern: the jobs admitted and not
// yet reported started, by admission time, so that a cycle releases
// those whose Started event was lost. Its methods are the only writers of
// its fields.
type admitClock struct {
	timeout time.Duration // Config.AdmitTimeout; 0: never
	// waiting holds exactly the jobs in state Admitted, ordered by
	// (admitted, sequence), while timeout > 0.
	waiting *btree.BTreeG[*job]
}

func newAdmitClock(timeout time.Duration) admitClock {
	a := admitClock{timeout: timeout}
	if timeout > 0 {
		a.waiting = btree.NewG(16, func(x, y *job) bool {
			if !x.admitted.Equal(y.admitted) {
				return x.admitted.Before(y.admitted)
			}
			return x.entry.Seq < y.entry.Seq
		})
	}
	return a
}

// admitted files j, which has just been admitted (take).
func (a *admitClock) admitted(j *job) {
	if a.waiting != nil {
		a.waiting.ReplaceOrInsert(j)
	}
}

// done forgets j, which started or released what it held; j.admitted is
// still its admission time.
func (a *admitClock) done(j *job) {
	if a.waiting != nil {
		a.waiting.Delete(j)
	}
}

// overdue returns the jobs admitted at or before now − timeout, in order
// of admission.
func (a *admitClock) overdue(now time.Time) []*job {
	if a.waiting == nil {
		return nil
	}
	var out []*job
	limit := now.Add(-a.timeout)
	a.waiting.Ascend(func(j *job) bool {
		if j.admitted.After(limit) {
			return false
		}
		out = append(out, j)
		return true
	})
	return out
}

// Expiry is an admitted job the host never reported Started within
// Config.AdmitTimeout (its bind was lost, or its Started event): the
// Scheduler released its GPUs, CPU, memory and quota, and it waits again
// (as Requeued). The host should make sure it is not running; if it is,
// report Started after it is bound again, or Cancel it.
type Expiry struct {
	Job      string
	Admitted time.Time // when it was bound
	Reason   string
}

// expireAdmissions releases the jobs admitted more than AdmitTimeout ago
// that were never reported started, at the start of a cycle, so that the
// cycle can give their room to others (or to them again).
func (s *Scheduler) expireAdmissions(d *Decision, now time.Time) {
	for _, j := range s.admits.overdue(now) {
		at := j.admitted
		if err := s.back(j.spec.ID, now, queue.Requeued, "admission timeout"); err != nil {
			continue // not holding: cannot happen, the clock files admitted jobs only
		}
		d.Expired = append(d.Expired, Expiry{Job: j.spec.ID, Admitted: at,
			Reason: fmt.Sprintf("admitted at %s and not reported started within %v (Config.AdmitTimeout): released, it waits again", at.UTC().Format(time.RFC3339), s.admits.timeout)})
	}
}
