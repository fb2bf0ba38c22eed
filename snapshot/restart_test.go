package snapshot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/workload"
)

// TestRestartAfterReconfigure (issue 25, defect 1): a Scheduler whose
// queue a's quota Reconfigure raised, and which then bound work up to the
// new quota, captures and loads: the state carries the configuration as
// last reconfigured (Scheduler.Config), not the one it was built with,
// so the load neither fails on the old quota nor silently restores it.
func TestRestartAfterReconfigure(t *testing.T) {
	c := lab(t, 4) // 32 GPUs
	quota := func(max int64) queue.Config {
		return queue.Config{Root: queue.Node{Children: []queue.Node{
			{Name: "a", Quotas: []queue.Quota{{Resource: "gpu", Nominal: max, Max: queue.Limit(max)}}},
			{Name: "b"},
		}}}
	}
	cfg := gpusched.Config{Cluster: c, Queues: quota(8)}
	s, err := gpusched.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	submit := func(id string) {
		t.Helper()
		if err := s.Submit(workload.Job{ID: id, Queue: "a", Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}}, now); err != nil {
			t.Fatal(err)
		}
	}
	run := func() {
		t.Helper()
		for _, b := range s.Schedule(now).Bindings {
			if err := s.Started(b.Job, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	submit("first")
	run()
	now = now.Add(time.Minute)
	if _, err := s.Reconfigure(quota(16), nil, now); err != nil {
		t.Fatal(err)
	}
	submit("second")
	run()
	if js, _ := s.Job("second"); js.State != queue.Running {
		t.Fatalf("second is %s after the quota was raised", js.State)
	}
	l, _ := reloaded(t, s, now, CaptureOptions{}, Options{NoPreemption: true})
	if got := l.Scheduler.Config().Queues.Root.Children[0].Quotas[0].Nominal; got != 16 {
		t.Fatalf("loaded queue a's quota %d, want 16 (as reconfigured)", got)
	}
	for _, id := range []string{"first", "second"} {
		if js, ok := l.Scheduler.Job(id); !ok || js.State != queue.Running {
			t.Fatalf("loaded %s: %v %s", id, ok, js.State)
		}
	}
}

// TestPreemptionChoice (issue 25): a state does not carry the Preemptor,
// so Load needs the host to say what the loaded Scheduler preempts with:
// a Preemptor, or NoPreemption. Neither (the zero Options, which used to
// turn preemption off silently) or both is ErrPreemptorChoice.
func TestPreemptionChoice(t *testing.T) {
	data := []byte(tinyV5)
	pre, err := gpusched.NewPlanPreemptor(preemptConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  Options
		ok   bool
	}{
		{"neither", Options{}, false},
		{"both", Options{Preemptor: pre, NoPreemption: true}, false},
		{"a preemptor", Options{Preemptor: pre}, true},
		{"none", Options{NoPreemption: true}, true},
	} {
		l, err := Load(data, "s.yaml", tc.opt)
		if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, ErrPreemptorChoice) || !strings.Contains(err.Error(), "s.yaml")) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.ok && (l.Scheduler.Config().Preemptor != nil) != (tc.opt.Preemptor != nil) {
			t.Errorf("%s: the loaded Scheduler's Preemptor is %v", tc.name, l.Scheduler.Config().Preemptor)
		}
	}
}
