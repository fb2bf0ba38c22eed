package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/preempt"
	"github.com/gpusched/gpusched/queue"
)

const sampleState = "testdata/state.yaml"

func readSample(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(sampleState)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLoadSample loads the sample state and checks what it restored.
func TestLoadSample(t *testing.T) {
	l, err := Load(readSample(t), sampleState, Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	s := l.Scheduler
	if s.Len() != 9 || l.Cluster.NumGPUs() != 64 {
		t.Fatalf("%d jobs, %d GPUs", s.Len(), l.Cluster.NumGPUs())
	}
	js, ok := s.Job("exp-1")
	if !ok || js.State != queue.Running || !js.Started.Equal(time.Date(2025, 1, 1, 9, 5, 0, 0, time.UTC)) || js.Placement.Len() != 4 {
		t.Errorf("exp-1: %+v", js)
	}
	if l.States["pre-2"] != queue.Pending || l.States["pre-1"] != queue.Running {
		t.Errorf("states %v", l.States)
	}
	d := s.Schedule(l.State.Now)
	if len(d.Bindings) != 2 || len(d.Pending) != 4 {
		t.Errorf("decision:\n%s", d.Format(l.Cluster))
	}
}

// TestBadStates: every kind of bad state is an *Error naming the line
// and the field, and nothing panics.
func TestBadStates(t *testing.T) {
	base := string(readSample(t))
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"yaml", "now: 2025", "now: [2025", "s.yaml: yaml:"},
		{"unknown field", "defaultRuntime: 2h", "defaultRuntme: 2h", "field defaultRuntme not found"},
		{"no now", "now: 2025-01-01T10:00:00Z\n", "", "s.yaml:3: now: missing"},
		{"version", "version: 1", "version: 99", "s.yaml:3: version: version 99"},
		{"two clusters", "  machine: dgx-h100\n", "  machine: dgx-h100\n  preset: h100-1k\n", "cluster: give exactly one of preset, file, machine and spec"},
		{"hosts without machine", "  machine: dgx-h100\n", "  preset: dgx-h100\n", "cluster: hosts, hostsPerToR and torsPerSpine go with machine"},
		{"too many hosts", "hosts: 8", "hosts: 100001", "s.yaml:7: cluster.hosts: 100001 hosts: want 1 to 100000"},
		{"cluster file", "  machine: dgx-h100\n  hosts: 8\n  hostsPerToR: 4\n", "  file: c.yaml\n", "cluster.file: cluster files are not allowed here"},
		{"placer", "defaultRuntime: 2h", "defaultRuntime: 2h\nplacer: tetris", "s.yaml:10: placer:"},
		{"fgd without workload", "defaultRuntime: 2h", "defaultRuntime: 2h\nplacer: fgd", "workload: placer fgd needs its target workload"},
		{"fgd model", "defaultRuntime: 2h", "defaultRuntime: 2h\nplacer: fgd\nworkload: [{gpus: 1, models: [V100], weight: 1}]", `s.yaml:11: workload[0].models[0]: cluster dgx-h100 has no GPU model "V100"`},
		{"fgd weight", "defaultRuntime: 2h", "defaultRuntime: 2h\nplacer: fgd\nworkload: [{gpus: 1, weight: 0}]", "workload[0].weight: weight 0: want a positive number"},
		{"workload without fgd", "defaultRuntime: 2h", "defaultRuntime: 2h\nworkload: [{gpus: 1, weight: 1}]", "workload: only placer fgd takes a workload"},
		{"queue", "nominal: 16, max: 16", "nominal: 16, max: 8", "s.yaml:22: queues.root.children[1].quotas[0].max: max 8 below nominal quota 16"},
		{"host", "{host: dgx-h100-5, gpus", "{host: dgx-h100-50, gpus", `s.yaml:45: jobs[1].placement[0].host: unknown host "dgx-h100-50"`},
		{"gpu index", "{host: dgx-h100-6, gpu: 1, milli: 500}\n  - {host: dgx-h100-6, gpu: 1,", "{host: dgx-h100-6, gpu: 9, milli: 500}\n  - {host: dgx-h100-6, gpu: 1,", "jobs[2].placement[2].gpu: GPU 9 outside 0..7"},
		{"overlap", "{host: dgx-h100-5, gpus", "{host: dgx-h100-1, gpus", "s.yaml:37: jobs[1]: job eval-1: claims do not fit the ledger"},
		{"state", "state: running\n  started: 2025-01-01T09:30:00Z", "state: sleeping\n  started: 2025-01-01T09:30:00Z", `s.yaml:42: jobs[1].state: unknown state "sleeping"`},
		{"health", "state: draining}", "state: tired}", `s.yaml:24: health[0].state: unknown health "tired"`},
		{"health part", "{host: dgx-h100-8, state: draining}", "{host: dgx-h100-8, gpu: dgx-h100-8/gpu1, state: draining}", "s.yaml:24: health[0]: give exactly one of host and gpu"},
		{"health gpu", "{host: dgx-h100-8, state: draining}", "{gpu: dgx-h100-8/gpu8, state: draining}", `s.yaml:24: health[0].gpu: unknown GPU "dgx-h100-8/gpu8"`},
		{"pending placement", "- id: exp-3\n  queue: experiments\n", "- id: exp-3\n  queue: experiments\n  placement: [{host: dgx-h100-1}]\n", "s.yaml:80: jobs[7].placement: a pending job has no placement"},
		{"requeued placement", "- id: exp-3\n  queue: experiments\n", "- id: exp-3\n  state: requeued\n  queue: experiments\n  placement: [{host: dgx-h100-1}]\n", "jobs[7].placement: a requeued job has no placement"},
		{"no submission", "  submitted: 2025-01-01T09:41:00Z\n", "", "jobs[7].submitted: missing submission time"},
		// A job cannot have started, or been submitted, after the time of
		// the state, nor started before it was submitted.
		{"started after now", "  started: 2025-01-01T07:00:00Z", "  started: 2025-01-01T10:00:01Z", "s.yaml:33: jobs[0].started: 2025-01-01T10:00:01Z is after now (2025-01-01T10:00:00Z): the job has not started yet"},
		{"submitted after now", "  submitted: 2025-01-01T09:10:00Z", "  submitted: 2025-01-01T10:30:00Z", "s.yaml:63: jobs[3].submitted: 2025-01-01T10:30:00Z is after now (2025-01-01T10:00:00Z): the job was not submitted yet"},
		{"running submitted after now", "  submitted: 2025-01-01T09:30:00Z", "  submitted: 2025-01-02T09:30:00Z", "s.yaml:41: jobs[1].submitted: 2025-01-02T09:30:00Z is after now"},
		{"started before submitted", "  started: 2025-01-01T09:05:00Z", "  started: 2025-01-01T08:55:00Z", "s.yaml:52: jobs[2].started: 2025-01-01T08:55:00Z is before the job was submitted (2025-01-01T09:00:00Z)"},
		{"running without start", "  started: 2025-01-01T09:05:00Z\n", "", "s.yaml:46: jobs[2].started: a running job needs its start time"},
		{"pending with start", "  submitted: 2025-01-01T09:10:00Z\n", "  submitted: 2025-01-01T09:10:00Z\n  started: 2025-01-01T09:11:00Z\n", "s.yaml:64: jobs[3].started: a pending job has no start time"},
		// Recoveries in flight and faults not yet planned (version 9).
		{"recovering action", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nrecovering: [{job: exp-1, action: keep}]\n", `s.yaml:5: recovering[0].action: unknown action "keep" (want requeue, drain or end)`},
		{"recovering job", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nrecovering: [{job: nope, action: drain}]\n", `s.yaml:5: recovering[0].job: no job "nope" in the state`},
		{"recovering waiting", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nrecovering: [{job: pre-2, action: requeue}]\n", "s.yaml:5: recovering[0]: job pre-2: gpusched: event does not apply in the job's state: RestoreRecovery: a pending job holds nothing to recover"},
		{"recovering twice", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nrecovering: [{job: exp-1, action: end}, {job: exp-1, action: end}]\n", "recovering[1]: job exp-1: gpusched: event does not apply in the job's state: RestoreRecovery: recovered twice"},
		{"fault part", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nfaults: [{host: dgx-h100-1, domain: tor1, state: failed}]\n", "s.yaml:5: faults[0]: give exactly one of host, gpu and domain"},
		{"fault domain", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nfaults: [{domain: tor9, state: failed}]\n", `s.yaml:5: faults[0].domain: unknown domain "tor9"`},
		{"fault state", "now: 2025-01-01T10:00:00Z\n", "now: 2025-01-01T10:00:00Z\nfaults: [{gpu: dgx-h100-1/gpu0, state: tired}]\n", `s.yaml:5: faults[0].state: unknown health "tired"`},
		{"negative progress", "  submitted: 2025-01-01T09:10:00Z\n", "  submitted: 2025-01-01T09:10:00Z\n  progress: -1h\n", "s.yaml:64: jobs[3].progress: negative progress -1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Replace(base, tc.old, tc.new, 1)
			if in == base {
				t.Fatalf("edit %q not applied", tc.old)
			}
			_, err := Load([]byte(in), "s.yaml", Options{NoPreemption: true})
			var se *Error
			if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error with %q", err, tc.want)
			}
		})
	}
}

// TestInlineCluster: a cluster held inline loads like the file it is,
// and its errors name the field inside it with its line.
func TestInlineCluster(t *testing.T) {
	l, err := Load(readSample(t), sampleState, Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	st := *l.State
	spec := l.Cluster.Spec()
	st.Cluster = Cluster{Spec: &spec}
	var buf bytes.Buffer
	if err := Encode(&buf, &st, ""); err != nil {
		t.Fatal(err)
	}
	l2, err := Load(buf.Bytes(), "inline.yaml", Options{NoPreemption: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if l2.Cluster.NumGPUs() != 64 || l2.Cluster.HostName(7) != "dgx-h100-8" {
		t.Fatalf("cluster %s", l2.Cluster.Name())
	}
	d1, d2 := l.Scheduler.Schedule(st.Now), l2.Scheduler.Schedule(st.Now)
	if a, b := d1.Format(l.Cluster), d2.Format(l2.Cluster); a != b {
		t.Errorf("decisions differ:\n%s\n%s", a, b)
	}
	// A template the hosts name but the spec lacks.
	bad := reseal(t, strings.Replace(buf.String(), "template: dgx-h100\n", "template: dgx-h200\n", 1))
	_, err = Load([]byte(bad), "inline.yaml", Options{NoPreemption: true})
	if err == nil || !strings.Contains(err.Error(), "cluster.spec.hosts[0].template") || !strings.HasPrefix(err.Error(), "inline.yaml:") {
		t.Errorf("bad template: %v", err)
	}
	if _, err := Load(buf.Bytes(), "inline.yaml", Options{NoPreemption: true, MaxHosts: 4}); err == nil || !strings.Contains(err.Error(), "8 hosts: want at most 4") {
		t.Errorf("MaxHosts: %v", err)
	}
}

// TestClusterFile: a cluster file is read relative to Options.Dir.
func TestClusterFile(t *testing.T) {
	l, err := Load(readSample(t), sampleState, Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), mustMarshal(t, l), 0o644); err != nil {
		t.Fatal(err)
	}
	st := *l.State
	st.Cluster = Cluster{File: "c.yaml"}
	var buf bytes.Buffer
	if err := Encode(&buf, &st, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(buf.Bytes(), "s.yaml", Options{NoPreemption: true, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(buf.Bytes(), "s.yaml", Options{NoPreemption: true, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "cluster.file") {
		t.Errorf("missing file: %v", err)
	}
}

func mustMarshal(t *testing.T, l *Loaded) []byte {
	t.Helper()
	var buf bytes.Buffer
	spec := l.Cluster.Spec()
	st := State{Cluster: Cluster{Spec: &spec}}
	if err := Encode(&buf, &st, ""); err != nil {
		t.Fatal(err)
	}
	// The inline spec, re-indented as a file of its own.
	var out []string
	in := false
	for _, line := range strings.Split(buf.String(), "\n") {
		switch {
		case line == "  spec:":
			in = true
		case in && strings.HasPrefix(line, "    "):
			out = append(out, line[4:])
		case in:
			in = false
		}
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// TestCaptureErrors: Capture refuses what it cannot save faithfully.
func TestCaptureErrors(t *testing.T) {
	l, err := Load(readSample(t), sampleState, Options{NoPreemption: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  time.Time
		opt  CaptureOptions
		want string
	}{
		{time.Time{}, CaptureOptions{}, "zero now"},
		{l.State.Now, CaptureOptions{Placer: "tetris"}, `unknown placer "tetris"`},
		{l.State.Now, CaptureOptions{Placer: "fgd"}, "placer fgd needs its Workload"},
		{l.State.Now.Add(-time.Hour), CaptureOptions{}, "after it"},
	} {
		if _, err := Capture(l.Scheduler, tc.now, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opt, err, tc.want)
		}
	}
	pre, err := gpusched.NewPlanPreemptor(preemptConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := Load(readSample(t), sampleState, Options{Preemptor: pre})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Capture(lp.Scheduler, l.State.Now, CaptureOptions{Placer: "random"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Notes) != 2 || !strings.Contains(st.Notes[0], "preempts") || !strings.Contains(st.Notes[1], "random") {
		t.Errorf("notes %q", st.Notes)
	}
}

func preemptConfig() preempt.Config {
	return preempt.Config{LowerPriority: preempt.WithinQueue}
}
