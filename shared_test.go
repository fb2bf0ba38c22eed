package gpusched

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
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

// serve is a service loop on x for n cycles: it submits, schedules,
// reports the starts, requeues the jobs recovered and finishes one job
// every third cycle (from Holding's fn, which may report events).
func serve(x *Synchronized, n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := range n {
		now := x.Now().Add(time.Second)
		_ = x.Submit(gpuJob(fmt.Sprintf("j%d", i), 1+i%4), now)
		d := x.Schedule(now)
		for _, b := range d.Bindings {
			_ = x.Started(b.Job, now)
		}
		for _, r := range d.Recoveries {
			_ = x.Requeue(r.Job, now)
		}
		if i%3 == 0 {
			x.Holding(func(id string, _ JobStatus) bool {
				_ = x.Finished(id, now) // events work from Synchronized.Holding's fn
				return false
			})
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
	go serve(x, n, &wg)
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

// TestRecycle: a Decision handed back with Recycle lends its Pending
// array to a later cycle, which lists the same rows as a fresh one; one
// not handed back is never written.
func TestRecycle(t *testing.T) {
	s := oneQueue(t, 1, queue.Policy{})
	for _, id := range []string{"a", "b", "c"} {
		if err := s.Submit(gpuJob(id, 6), t0); err != nil {
			t.Fatal(err)
		}
	}
	d1 := s.Schedule(t0)
	want := pendingText(d1)
	arr := &d1.Pending[:1][0]
	s.Recycle(d1)
	d2 := s.Schedule(t0.Add(time.Minute))
	if &d2.Pending[:1][0] != arr || pendingText(d2) != want {
		t.Fatalf("after Recycle: reused %v, rows\n%s\nwant\n%s", &d2.Pending[:1][0] == arr, pendingText(d2), want)
	}
	d3 := s.Schedule(t0.Add(2 * time.Minute))
	if &d3.Pending[:1][0] == &d2.Pending[:1][0] {
		t.Fatal("a Decision not handed back was reused")
	}
}

// TestSynchronizedLiveChanges (issue 25, Deliver 4): the live changes go
// through Synchronized too — an operator cordoning, draining and
// repairing hosts and a ToR, reconfiguring the queues and removing a
// host while the service loop schedules, handlers forget ended jobs and
// readers ask for the configuration and the state — clean under the race
// detector (go test -race -run Synchronized), and consistent at the end.
func TestSynchronizedLiveChanges(t *testing.T) {
	c := testCluster(t, 4, 2)
	tree := func(extra bool) queue.Config {
		cfg := queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}
		if extra {
			cfg.Root.Children = append(cfg.Root.Children, queue.Node{Name: "extra"})
		}
		return cfg
	}
	s, err := New(Config{Cluster: c, Queues: tree(false)})
	if err != nil {
		t.Fatal(err)
	}
	x := Synchronize(s)
	tor := ""
	for d := range c.NumDomains() {
		if id := topology.DomainID(d); c.DomainKindOf(id) == topology.KindNetwork && len(c.DomainHostList(id)) > 0 {
			tor = c.DomainName(id)
			break
		}
	}
	if tor == "" {
		t.Fatal("no network domain")
	}
	const n = 60
	var wg sync.WaitGroup
	wg.Add(1)
	go serve(x, n, &wg)
	wg.Add(1)
	go func() { // an operator
		defer wg.Done()
		h1, h2 := c.HostName(1), c.HostName(2)
		for i := range n {
			now := x.Now()
			_ = x.Cordon(h1)
			_, _ = x.SetHostHealth(h2, topology.Draining)
			_, _ = x.SetDomainHealth(tor, topology.Failed)
			_, _ = x.Reconfigure(tree(i%2 == 0), nil, now)
			_ = x.Uncordon(h1)
			_, _ = x.SetHostHealth(h2, topology.Healthy)
			_, _ = x.SetDomainHealth(tor, topology.Healthy)
			if i == n/2 {
				if _, err := x.RemoveHosts([]string{c.HostName(3)}, now); err != nil {
					t.Error(err)
				}
			}
		}
	}()
	for r := range 2 {
		wg.Add(1)
		go func() { // readers and handlers
			defer wg.Done()
			for i := range n {
				_, _ = x.ForgetEnded(fmt.Sprintf("j%d", (i+r)%n))
				if cfg := x.Config(); cfg.Cluster == nil || len(cfg.Queues.Root.Children) == 0 {
					t.Error("Config: no cluster or queues")
				}
				if st := x.State(); st.Config.Cluster == nil {
					t.Error("State: no cluster")
				}
			}
		}()
	}
	wg.Wait()
	_ = x.Write(func(s *Scheduler) error {
		checkInvariants(t, s, "after the goroutines")
		return nil
	})
	// Each wrapped change is the Scheduler's.
	if err := x.Cordon("nope"); err == nil {
		t.Error("Cordon of an unknown host: no error")
	}
	if _, err := x.Reconfigure(queue.Config{}, nil, x.Now()); err == nil {
		t.Error("Reconfigure to an empty tree: no error")
	}
	if err := x.Cordon(c.HostName(0)); err != nil {
		t.Fatal(err)
	}
	if st := x.State(); !slices.Contains(st.Cordoned, c.HostName(0)) {
		t.Fatalf("cordoned %v", st.Cordoned)
	}
}
