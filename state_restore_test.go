package gpusched

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

func stateTestScheduler(t *testing.T, cfg Config) (*Scheduler, *topology.Cluster) {
	t.Helper()
	sp, err := topology.Generator{Name: "c", Machine: "dgx-h100", Hosts: 2, HostsPerToR: 1}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.Build(sp)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster, cfg.Queues = c, queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "q"}}}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestRestoreJobDomain: a holding job's placement domain is restored
// (JobStatus.Placement has it), a domain that does not hold its GPUs is an
// error naming the field, and a GPU out of range is an error, not a panic.
func TestRestoreJobDomain(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s, c := stateTestScheduler(t, Config{})
	h0 := c.HostName(0)
	first, _ := c.HostGPUs(0)
	task := [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: first}}}}}
	r := RestoredJob{Spec: workload.Job{ID: "a", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, State: queue.Running,
		Tasks: task, Submitted: t0, Started: t0, Now: t0, Domain: h0}
	for _, tc := range []struct{ domain, want string }{
		{c.HostName(1), "domain: GPU " + h0 + "/gpu0 is not in " + c.HostName(1)},
		{"nowhere", `domain: "nowhere" is not a placement domain`},
	} {
		bad := r
		bad.Domain = tc.domain
		if err := s.RestoreJob(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("domain %s: got %v, want %q", tc.domain, err, tc.want)
		}
	}
	bad := r
	bad.Tasks = [][]topology.Claim{{{Host: 0, GPUs: []topology.GPUClaim{{GPU: -3}}}}}
	if err := s.RestoreJob(bad); err == nil {
		t.Error("a GPU out of range restored")
	}
	if err := s.RestoreJob(r); err != nil {
		t.Fatal(err)
	}
	if js, _ := s.Job("a"); c.DomainName(js.Placement.Domain) != h0 || js.Placement.Level != topology.LevelHost {
		t.Errorf("placement within %s at level %d, want %s", c.DomainName(js.Placement.Domain), js.Placement.Level, h0)
	}
}

// TestRestoreConsolidateAndRefusalErrors: what RestoreConsolidate and
// RestoreRefusal refuse, each naming the field or the job.
func TestRestoreConsolidateAndRefusalErrors(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	off, _ := stateTestScheduler(t, Config{})
	if err := off.RestoreConsolidate(ConsolidateState{NothingFound: true}); !errors.Is(err, ErrConsolidateOff) {
		t.Errorf("consolidation off: %v", err)
	}
	if err := off.RestoreConsolidate(ConsolidateState{}); err != nil {
		t.Errorf("empty state with consolidation off: %v", err)
	}
	s, _ := stateTestScheduler(t, Config{Defrag: &DefragConfig{Consolidate: &ConsolidateConfig{}}})
	for _, tc := range []struct {
		st   ConsolidateState
		want string
	}{
		{ConsolidateState{Issued: []preempt.DefragIssued{{At: t0}}}, "issued[0]"},
		{ConsolidateState{Busy: t0.Add(time.Hour), Now: t0}, "busy"},
		{ConsolidateState{FoundMoves: -1}, "foundMoves: negative"},
		{ConsolidateState{FoundLost: -1}, "foundLost: negative"},
	} {
		if err := s.RestoreConsolidate(tc.st); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.st, err, tc.want)
		}
	}
	if err := s.Submit(workload.Job{ID: "p", Queue: "q", Groups: []workload.TaskGroup{{Count: 1, GPUs: 1}}}, t0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    Refusal
		want string
	}{
		{Refusal{Victim: "x", Run: t0, Until: t0}, "x"},
		{Refusal{Victim: "p", Run: t0}, "until: missing"},
		{Refusal{Victim: "p", Until: t0}, "run: missing"},
	} {
		if err := s.RestoreRefusal(tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.r, err, tc.want)
		}
	}
	if err := s.RestoreStopping("p"); !errors.Is(err, ErrState) {
		t.Errorf("RestoreStopping of a pending job: %v", err)
	}
}
