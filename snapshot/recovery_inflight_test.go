package snapshot

import (
	"bytes"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// recoveryLab is a Scheduler on four 8-GPU hosts with MaxRestarts 1 and
// DrainKeep 2 h, running f (8 GPUs), d and k (4 GPUs each, k ending
// within DrainKeep) from t0; it returns the hosts of f and of d.
func recoveryLab(t *testing.T) (*gpusched.Scheduler, *topology.Cluster, string, string) {
	t.Helper()
	c := lab(t, 4)
	s, err := gpusched.New(gpusched.Config{Cluster: c, Queues: oneQueue(queue.BestEffortFIFO), MaxRestarts: 1, DrainKeep: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []workload.Job{
		{ID: "d", Queue: "a", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}},
		{ID: "k", Queue: "a", Runtime: 2 * time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 4}}},
		{ID: "f", Queue: "a", Runtime: 10 * time.Hour, Groups: []workload.TaskGroup{{Count: 1, GPUs: 8}}},
	} {
		if err := s.Submit(j, t0); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range s.Schedule(t0).Bindings {
		if err := s.Started(b.Job, t0); err != nil {
			t.Fatal(err)
		}
	}
	host := func(id string) string {
		js, ok := s.Job(id)
		if !ok || js.Placement == nil {
			t.Fatalf("%s not placed", id)
		}
		return c.HostName(js.Placement.Claims[0].Host)
	}
	if host("d") != host("k") || host("d") == host("f") {
		t.Fatalf("want d and k on one host, f on another: d %s, k %s, f %s", host("d"), host("k"), host("f"))
	}
	return s, c, host("f"), host("d")
}

// TestLoadedKeepsRecoveriesInFlight (issue 25): a state captured right
// after a cycle that issued Decision.Recoveries — f's host failed
// (ActionRequeue), d's and k's drains (ActionDrain for d, ActionKeep for
// k, which ends within DrainKeep) — loads into a Scheduler that decides
// as the captured one: it does not list those recoveries again, counts
// the restart f's Requeue carries out (Config.MaxRestarts), and ends f
// (ActionEnd) when its next host fails, as the original does. Before
// version 9 a state carried neither the recoveries in flight nor the
// faults not yet planned: the loaded Scheduler listed all three again,
// counted no restart and requeued f a second time.
func TestLoadedKeepsRecoveriesInFlight(t *testing.T) {
	a, c, fHost, dHost := recoveryLab(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.SetHostHealth(fHost, topology.Failed)
	must(err)
	_, err = a.SetHostHealth(dHost, topology.Draining)
	must(err)
	now := t0.Add(time.Hour)
	d := a.Schedule(now)
	got := map[string]preempt.Action{}
	for _, r := range d.Recoveries {
		got[r.Job] = r.Action
	}
	if len(got) != 3 || got["f"] != preempt.ActionRequeue || got["d"] != preempt.ActionDrain || got["k"] != preempt.ActionKeep {
		t.Fatalf("want f requeued, d drained, k kept:\n%s", d.Format(c))
	}
	l, file := reloaded(t, a, now, CaptureOptions{}, Options{NoPreemption: true})
	w := &twin{t: t, a: a, ca: c, b: l.Scheduler, cb: l.Cluster, state: file}

	// The loaded Scheduler does not issue them again.
	if d := w.Schedule(now.Add(30 * time.Second)); len(d.Recoveries) != 0 {
		t.Fatalf("recoveries issued again:\n%s", d.Format(c))
	}
	// The host carries them out: f stops at once, d after its grace.
	must(w.Requeue("f", now.Add(time.Minute)))
	must(w.Requeue("d", now.Add(3*time.Minute)))
	for _, id := range []string{"f", "d"} {
		ja, _ := w.a.Job(id)
		jb, _ := w.b.Job(id)
		if ja.Restarts != jb.Restarts {
			t.Fatalf("%s: the loaded Scheduler counts %d restarts, the original %d\nstate:\n%s", id, jb.Restarts, ja.Restarts, file)
		}
	}
	if js, _ := w.a.Job("f"); js.Restarts != 1 {
		t.Fatalf("f: %d restarts, want 1", js.Restarts)
	}
	// Both rebind f and d on the healthy hosts; f's new host fails: it
	// was stopped by failures once already, as many as allowed: it ends.
	d = w.Schedule(now.Add(4 * time.Minute))
	for _, b := range d.Bindings {
		must(w.Started(b.Job, now.Add(4*time.Minute)))
	}
	js, _ := w.a.Job("f")
	if js.Placement == nil {
		t.Fatalf("f not rebound:\n%s", d.Format(c))
	}
	_, err = w.SetHostHealth(c.HostName(js.Placement.Claims[0].Host), topology.Failed)
	must(err)
	d = w.Schedule(now.Add(5 * time.Minute))
	if len(d.Recoveries) != 1 || d.Recoveries[0].Job != "f" || d.Recoveries[0].Action != preempt.ActionEnd {
		t.Fatalf("want f ended:\n%s", d.Format(c))
	}
}

// TestLoadedKeepsFaultsNotYetPlanned: a state captured after a health
// change and before the cycle that plans its recoveries carries the
// fault: the loaded Scheduler's first cycle lists the same recoveries
// as the original's.
func TestLoadedKeepsFaultsNotYetPlanned(t *testing.T) {
	a, c, fHost, dHost := recoveryLab(t)
	if _, err := a.SetHostHealth(dHost, topology.Draining); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	if d := a.Schedule(now); len(d.Recoveries) != 2 {
		t.Fatalf("want d drained, k kept:\n%s", d.Format(c))
	}
	if _, err := a.SetHostHealth(fHost, topology.Failed); err != nil {
		t.Fatal(err)
	}
	l, file := reloaded(t, a, now, CaptureOptions{}, Options{NoPreemption: true})
	w := &twin{t: t, a: a, ca: c, b: l.Scheduler, cb: l.Cluster, state: file}
	if d := w.Schedule(now.Add(time.Minute)); len(d.Recoveries) != 1 || d.Recoveries[0].Job != "f" {
		t.Fatalf("want f's recovery only:\n%s", d.Format(c))
	}
}

// TestV8RecoveriesReplayed: a version 8 file carries no recoveries in
// flight and no faults: it loads as before, its first cycle listing
// recoveries for the jobs on every part that is not healthy.
func TestV8RecoveriesReplayed(t *testing.T) {
	a, c, fHost, _ := recoveryLab(t)
	if _, err := a.SetHostHealth(fHost, topology.Failed); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	if d := a.Schedule(now); len(d.Recoveries) != 1 {
		t.Fatalf("want f requeued:\n%s", d.Format(c))
	}
	st, err := Capture(a, now, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Recovering) != 1 {
		t.Fatalf("want f's recovery in flight: %+v", st.Recovering)
	}
	st.Version, st.Faults, st.Recovering = 8, nil, nil
	var buf bytes.Buffer
	if err := Encode(&buf, st, ""); err != nil {
		t.Fatal(err)
	}
	old := buf.String()
	l, err := Load([]byte(old), "old.yaml", Options{NoPreemption: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, old)
	}
	if d := l.Scheduler.Schedule(now.Add(time.Minute)); len(d.Recoveries) != 1 || d.Recoveries[0].Job != "f" || d.Recoveries[0].Action != preempt.ActionRequeue {
		t.Fatalf("want f's recovery listed again:\n%s", d.Format(l.Cluster))
	}
}

// recoveringFile is a state with recoveries in flight (f requeued, d
// drained) and a fault not yet planned (the ToR of the other hosts
// draining).
func recoveringFile(t *testing.T) string {
	a, c, fHost, dHost := recoveryLab(t)
	for _, h := range []struct {
		name string
		hh   topology.Health
	}{{fHost, topology.Failed}, {dHost, topology.Draining}} {
		if _, err := a.SetHostHealth(h.name, h.hh); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Hour)
	if d := a.Schedule(now); len(d.Recoveries) != 3 {
		t.Fatalf("want 3 recoveries:\n%s", d.Format(c))
	}
	if _, err := a.SetDomainHealth("tor2", topology.Draining); err != nil {
		t.Fatal(err)
	}
	st, err := Capture(a, now, CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Recovering) != 2 || len(st.Faults) != 1 || st.Faults[0].Domain != "tor2" {
		t.Fatalf("want 2 recoveries in flight and tor2's fault: %+v %+v", st.Recovering, st.Faults)
	}
	return encoded(t, st)
}
