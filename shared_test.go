package gpusched

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
)

// pendingText renders a Decision's waiting jobs with their reasons.
func pendingText(d Decision) string {
	var b strings.Builder
	for _, p := range d.Pending {
		fmt.Fprintf(&b, "%s %s %s: %s\n", p.Job, p.Queue, p.State, p.Reason)
	}
	return b.String()
}

// TestDecisionOwnedByCaller (issue 25, Deliver 4): a Decision is the
// caller's: held across later cycles — which list other waiting jobs
// with other reasons — it does not change, and what the host writes into
// it changes nothing in the Scheduler or in later Decisions.
func TestDecisionOwnedByCaller(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	c := s.Cluster()
	for _, id := range []string{"a", "b", "c", "d"} {
		if err := s.Submit(gpuJob(id, 6), t0); err != nil {
			t.Fatal(err)
		}
	}
	held := s.Schedule(t0)
	if len(held.Pending) != 3 {
		t.Fatalf("%d waiting, want 3", len(held.Pending))
	}
	text, pending := held.Format(c), pendingText(held)
	now := t0
	for i, id := range []string{"a", "b", "c"} {
		now = now.Add(time.Minute)
		if err := s.Finished(id, now); err != nil {
			t.Fatal(err)
		}
		if err := s.Submit(gpuJob(fmt.Sprintf("late%d", i), 2+i), now); err != nil {
			t.Fatal(err)
		}
		d := s.Schedule(now)
		if got := held.Format(c); got != text || pendingText(held) != pending {
			t.Fatalf("cycle %d changed a held Decision:\n%s\nwas\n%s", i+2, got+pendingText(held), text+pending)
		}
		// The host scribbles on the new Decision: nothing else changes.
		for k := range d.Pending {
			d.Pending[k].Job = "scribbled"
			d.Pending[k].Reason = nil
		}
		for k := range d.Bindings {
			d.Bindings[k].Job = "scribbled"
		}
	}
	if got := held.Format(c); got != text || pendingText(held) != pending {
		t.Fatalf("a held Decision changed:\n%s", got)
	}
	d := s.Schedule(now.Add(time.Minute))
	for _, p := range d.Pending {
		if p.Job == "scribbled" || p.Reason == nil {
			t.Fatalf("a host's change to an earlier Decision reached a later one: %+v", p)
		}
	}
}

// TestSynchronized (issue 25, Deliver 4): one Scheduler used from several
// goroutines through Synchronized — a service loop submitting, scheduling
// and reporting starts and ends, handlers cancelling, and readers asking
// for jobs, holdings, queues and the ledger — runs clean under the race
// detector (go test -race -run Synchronized), and ends consistent: the
// ledger agrees with itself and no quota is exceeded.
func TestSynchronized(t *testing.T) {
	x := Synchronize(oneQueue(t, 2, queue.Policy{}))
	const n = 60
	var wg sync.WaitGroup
	clock := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	wg.Add(1)
	go func() { // the service loop
		defer wg.Done()
		for i := range n {
			now := x.Now().Add(time.Second)
			_ = x.Submit(gpuJob(fmt.Sprintf("j%d", i), 1+i%4), now)
			d := x.Schedule(now)
			for _, b := range d.Bindings {
				_ = x.Started(b.Job, now)
			}
			if i%3 == 0 {
				x.Holding(func(id string, _ JobStatus) bool {
					_ = x.Finished(id, now) // events work from Synchronized.Holding's fn
					return false
				})
			}
		}
	}()
	wg.Add(1)
	go func() { // a handler cancelling
		defer wg.Done()
		for i := range n {
			_ = x.Cancel(fmt.Sprintf("j%d", i), x.Now())
			_ = x.SetPriority(fmt.Sprintf("j%d", i+1), 10)
		}
	}()
	for r := range 3 {
		wg.Add(1)
		go func() { // readers
			defer wg.Done()
			for i := range n {
				id := fmt.Sprintf("j%d", (i+r)%n)
				if st, ok := x.Job(id); ok {
					st.Spec.ID = "scribbled" // the caller's copy
				}
				x.Progress(id)
				_ = x.Len() + len(x.Queues()) + len(x.Tombstones())
				x.Holding(func(string, JobStatus) bool { return true })
				x.Read(func(s *Scheduler) {
					if err := s.Ledger().Check(); err != nil {
						t.Error(err)
					}
					if l, ok := s.Tree().Leaf("q"); ok {
						l.Ascend(func(queue.PendingJob) bool { return true })
					}
					if err := s.Cancel(id, clock(i)); !errors.Is(err, ErrReentrant) {
						t.Errorf("a change inside Read: %v", err)
					}
				})
			}
		}()
	}
	wg.Wait()
	_ = x.Write(func(s *Scheduler) error {
		checkInvariants(t, s, "after the goroutines")
		return nil
	})
}
