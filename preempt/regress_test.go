package preempt

import (
	"slices"
	"testing"
	"time"

	"github.com/gpusched/gpusched/topology"
)

// TestReprieveAcrossDomains is the minimised counterexample of
// TestPropertyGreedy ("plan not minimal: works without j6"): a victim that
// holds GPUs in two domains lets the gang place in the other one.
//
// The gang needs 4 GPUs on one host. Host 3 has 1 free GPU, j6 (not
// started: loses nothing) holds 2 and j7 holds 2 more; j7 also holds 2 GPUs
// of host 1, which has 2 free. Host 3 has the lower bound, so it is
// searched first: the greedy search takes j6 and j7 there, and the gang
// places — on host 1, where j7 alone makes room. The reprieve pass counted
// GPUs in host 3 only, so it kept j6; it must count in every domain the
// victims free GPUs in.
func TestReprieveAcrossDomains(t *testing.T) {
	for _, maxExact := range []int{1, 0} {
		f := newFixture(t, cluster(t, "dgx-h100", 3, 0), nil)
		for _, js := range []jobSpec{
			{id: "j0", queue: "a", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(90 * time.Minute)},
			{id: "j7", queue: "a", tasks: []task{{"dgx-h100-1", 4, 2}, {"dgx-h100-3", 6, 2}}, started: ago(time.Hour)},
			{id: "full", queue: "a", nonPre: true, tasks: []task{{"dgx-h100-2", 0, 8}}, started: ago(time.Hour)},
			{id: "pinned", queue: "a", nonPre: true, tasks: []task{{"dgx-h100-3", 0, 3}}, started: ago(time.Hour)},
			{id: "j6", queue: "a", tasks: []task{{"dgx-h100-3", 4, 2}}},
		} {
			f.run(t, js)
		}
		pend := f.pending(t, "pending", "a", 1, 1, 4, "host")
		s := newSearch(t, Config{MaxExact: maxExact})
		p, np := s.Plan(f.st, pend, now)
		if p == nil {
			t.Fatalf("MaxExact %d: no plan: %s", maxExact, np)
		}
		if got := victimIDs(p); !slices.Equal(got, []string{"j7"}) {
			t.Errorf("MaxExact %d: %s; want j7 alone", maxExact, p)
		}
		if h1, _ := f.c.HostByName("dgx-h100-1"); p.Domain != f.c.HostDomain(h1) {
			t.Errorf("MaxExact %d: plan clears %s, want dgx-h100-1", maxExact, f.c.DomainName(p.Domain))
		}
		checkApplies(t, f, p, pend)
	}
}

// TestReprieveAcrossDomainsFailedGPU is the same counterexample as
// rapid found it: one GPU of host 1 failed, shared GPUs on host 3.
func TestReprieveAcrossDomainsFailedGPU(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 3, 0), nil)
	for _, js := range []jobSpec{
		{id: "j0", queue: "a", tasks: []task{{"dgx-h100-1", 0, 4}}, started: ago(121 * time.Minute)},
		{id: "j1", queue: "a", nonPre: true, tasks: []task{{"dgx-h100-2", 0, 8}}},
		{id: "j5", queue: "a", nonPre: true, tasks: []task{{"dgx-h100-3", 0, 3}}},
		{id: "j6", queue: "a", tasks: []task{{"dgx-h100-3", 4, 2}}},
		{id: "j7", queue: "a", tasks: []task{{"dgx-h100-3", 6, 2}, {"dgx-h100-1", 4, 2}}, started: ago(2 * time.Hour)},
	} {
		f.run(t, js)
	}
	if err := f.l.SetGPUHealth(0, topology.Failed); err != nil {
		t.Fatal(err)
	}
	pend := f.pending(t, "pending", "a", 1, 1, 4, "host")
	s := newSearch(t, Config{MaxExact: 1})
	p, np := s.Plan(f.st, pend, now)
	if p == nil {
		t.Fatalf("no plan: %s", np)
	}
	if got := victimIDs(p); !slices.Equal(got, []string{"j7"}) {
		t.Errorf("%s; want j7 alone", p)
	}
	checkApplies(t, f, p, pend)
}

// TestCheckpointInterval: a job that checkpoints every 30 minutes and
// started 100 minutes ago loses the 10 minutes since its last whole
// interval, or less when it reported a later checkpoint.
func TestCheckpointInterval(t *testing.T) {
	f := newFixture(t, cluster(t, "dgx-h100", 1, 0), nil)
	j := f.run(t, jobSpec{id: "j", queue: "q", tasks: []task{{"dgx-h100-1", 0, 8}}, started: ago(100 * time.Minute)})
	j.CheckpointInterval = 30 * time.Minute
	s := newSearch(t, Config{})
	pend := f.pending(t, "p", "q", 1, 1, 8, "")
	p, np := s.Plan(f.st, pend, now)
	if p == nil || p.Cost.Lost != 8*600*1000 {
		t.Fatalf("%v %v; want 8 GPUs × 10 min lost", p, np)
	}
	j.Checkpoint = now.Add(-4 * time.Minute)
	if p, _ = s.Plan(f.st, pend, now); p == nil || p.Cost.Lost != 8*240*1000 {
		t.Fatalf("%v; want 8 GPUs × 4 min lost", p)
	}
	plan, err := Recover(f.st, []Fault{HostFault(0, topology.Failed, "down")}, now, RecoveryConfig{})
	if err != nil || len(plan.Actions) != 1 || !plan.Actions[0].RestartFrom.Equal(j.Checkpoint) {
		t.Fatalf("%+v %v", plan, err)
	}
}
