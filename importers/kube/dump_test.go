package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/snapshot"
)

func loadOptions() snapshot.Options { return snapshot.Options{NoPreemption: true, MaxHosts: 1000} }

func TestDumpState(t *testing.T) {
	s, err := Prepare("testdata/dump", "testdata/kueue/gpu-cohorts", DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := s.State
	// The latest time in the dump: the Workload's condition.
	if want := time.Date(2025, 3, 1, 9, 30, 1, 0, time.UTC); !st.Now.Equal(want) {
		t.Errorf("now %v, want %v", st.Now, want)
	}
	spec := st.Cluster.Spec
	if len(spec.Levels) != 2 || spec.Levels[0].Name != "topology-block" {
		t.Errorf("levels %v", spec.Levels)
	}
	// 6 nodes + a placeholder for the 2 H100 quota GPUs the notebook holds.
	if len(spec.Hosts) != 7 {
		t.Errorf("%d hosts, want 7", len(spec.Hosts))
	}
	var parents []string
	for _, h := range spec.Hosts[:6] {
		parents = append(parents, h.Name+"→"+h.Parent)
	}
	if got := strings.Join(parents, " "); got != "a100-1→rack-3 a100-2→rack-3 h100-1→rack-1 h100-2→rack-1 h100-3→rack-2 h100-4→rack-2" {
		t.Errorf("parents %s", got)
	}
	if len(st.Jobs) != 3 {
		t.Fatalf("%d jobs, want 3", len(st.Jobs))
	}
	pre := st.Jobs[0]
	if pre.ID != "team-a/pretrain" || pre.State != "running" || len(pre.Placement) != 2 || pre.Runtime != 6*time.Hour || pre.Priority != 100 {
		t.Errorf("pretrain %+v", pre)
	}
	if ev := st.Jobs[2]; ev.ID != "team-b/job-eval-3f2a1" || ev.Queue != "team-b" || ev.Groups[0].GPUs != 4 || ev.Runtime != time.Hour {
		t.Errorf("eval %+v", ev)
	}
	if len(st.Health) != 2 || st.Health[1].Host != "a100-2" || st.Health[1].State != "draining" {
		t.Errorf("health %v", st.Health)
	}
	report := ""
	for _, n := range s.Notes {
		report += n.String() + "\n"
	}
	for _, want := range []string{"2 GPUs held by pods outside any queue", "a failed host quota-only-1 holds them"} {
		if !strings.Contains(report, want) {
			t.Errorf("notes lack %q:\n%s", want, report)
		}
	}
}

func TestForecast(t *testing.T) {
	s, err := Prepare("testdata/dump", "testdata/kueue/gpu-cohorts", DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := s.Forecast(48 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]JobForecast{}
	for _, j := range f.Jobs {
		byID[j.Job] = j
	}
	// pretrain (6h from 08:01) ends at 14:01; finetune, over team-a's
	// H100 quota until then, starts at its end.
	if got := byID["team-a/finetune"].Start; !got.Equal(time.Date(2025, 3, 1, 14, 1, 0, 0, time.UTC)) {
		t.Errorf("finetune starts %v, want 14:01", got)
	}
	if !strings.HasPrefix(byID["team-a/finetune"].Reason, "quota") {
		t.Errorf("finetune reason %q", byID["team-a/finetune"].Reason)
	}
	if got := byID["team-b/job-eval-3f2a1"].Start; !got.Equal(f.Now) {
		t.Errorf("eval starts %v, want now", got)
	}
	var b strings.Builder
	WriteForecast(&b, f)
	if !strings.Contains(b.String(), "team-a/finetune") || !strings.Contains(b.String(), "5h1m") {
		t.Errorf("forecast text:\n%s", b.String())
	}
	// Without estimates the start is unknown.
	s.State.Jobs[0].Runtime = 0
	f, _, err = s.Forecast(48 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range f.Jobs {
		if j.Job == "team-a/finetune" && !j.Start.IsZero() {
			t.Errorf("finetune starts %v behind a job without an estimate; want unknown", j.Start)
		}
	}
}

func TestDumpBadInput(t *testing.T) {
	im, err := ReadDir("testdata/kueue/gpu-cohorts")
	if err != nil {
		t.Fatal(err)
	}
	node := "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {cpu: \"8\", memory: 64Gi, nvidia.com/gpu: \"2\"}\n---\n"
	for _, c := range []struct{ name, data, want string }{
		{"bad gpu count", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus:\n  allocatable: {nvidia.com/gpu: two}\n", "dump.yaml:5: document 1 (Node/n1): status.allocatable.nvidia.com/gpu: bad quantity"},
		{"pod on unknown node", node + "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, creationTimestamp: \"2025-01-01T00:00:00Z\", labels: {kueue.x-k8s.io/queue-name: main}}\nspec:\n  nodeName: nope\n  containers: [{name: c}]\nstatus: {phase: Running}\n",
			"(Pod/team-a/p): spec.nodeName: node \"nope\" is not in the dump"},
		{"too many gpus", node + "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, creationTimestamp: \"2025-01-01T00:00:00Z\", labels: {kueue.x-k8s.io/queue-name: main}}\nspec:\n  nodeName: n1\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"4\"}}}]\nstatus: {phase: Running}\n",
			"node n1 has 2 GPUs; its pods ask for more"},
		{"bad time", node + "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: yesterday}\nspec: {containers: [{name: c}]}\n", "metadata.creationTimestamp: bad time \"yesterday\""},
		{"bad runtime", node + "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, creationTimestamp: \"2025-01-01T00:00:00Z\", labels: {kueue.x-k8s.io/queue-name: main}, annotations: {gpusched.io/runtime: soon}}\nspec: {containers: [{name: c}]}\n",
			"metadata.annotations.gpusched.io/runtime: bad runtime \"soon\""},
		{"workload without pod sets", node + "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w, namespace: team-a, creationTimestamp: \"2025-01-01T00:00:00Z\"}\nspec: {queueName: main}\n",
			"(Workload/team-a/w): spec.podSets: missing"},
		{"no nodes", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: \"2025-01-01T00:00:00Z\"}\nspec: {containers: [{name: c}]}\n", "no Nodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadDump([]File{{Name: "dump.yaml", Data: []byte(c.data)}}, im, DumpOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v; want one containing %q", err, c.want)
			}
		})
	}
}

func TestHyperNodeCluster(t *testing.T) {
	im, err := ReadDir("testdata/volcano/hierarchy")
	if err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for i := range 5 {
		dump.WriteString("---\napiVersion: v1\nkind: Node\nmetadata: {name: node-" + string(rune('0'+i)) + "}\nstatus:\n  allocatable: {cpu: \"32\", memory: 256Gi, nvidia.com/gpu: \"8\"}\n")
	}
	dump.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x, creationTimestamp: \"2025-01-01T00:00:00Z\", annotations: {scheduling.volcano.sh/queue-name: vision}}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: \"8\"}}}]}\n")
	st, _, err := ReadDump([]File{{Name: "d.yaml", Data: []byte(dump.String())}}, im, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range st.Cluster.Spec.Hosts {
		got = append(got, h.Name+"→"+h.Parent)
	}
	if s := strings.Join(got, " "); !strings.HasPrefix(s, "node-0→s0 node-1→s0 node-2→s1 node-3→s1 node-4→no-tier1") {
		t.Errorf("hosts %s", s)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Queue != "vision" {
		t.Errorf("jobs %+v", st.Jobs)
	}
	if _, _, err := Load(st, loadOptions()); err != nil {
		t.Fatal(err)
	}
}

// TestDumpAdmittedWorkload: a Workload Kueue admitted on the a100 flavor
// whose Job's pods run takes its pods' nodes; an evicted one waits; a
// finished one is gone.
func TestDumpAdmittedWorkload(t *testing.T) {
	im, err := ReadDir("testdata/kueue/gpu-cohorts")
	if err != nil {
		t.Fatal(err)
	}
	data := `
apiVersion: v1
kind: Node
metadata: {name: a1, labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}}
status: {allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
---
apiVersion: v1
kind: Pod
metadata:
  name: train-abc
  namespace: team-a
  creationTimestamp: "2025-03-01T08:00:00Z"
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: job-uid-1, controller: true}]
spec:
  nodeName: a1
  containers: [{name: c, resources: {requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "4"}}}]
status: {phase: Running, startTime: "2025-03-01T08:00:10Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-train-1
  namespace: team-a
  creationTimestamp: "2025-03-01T07:59:59Z"
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: job-uid-1, controller: true}]
spec:
  queueName: main
  priorityClassRef: {name: high}
  maximumExecutionTimeSeconds: 7200
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "4"}}}]}}
status:
  admission:
    clusterQueue: team-a
    podSetAssignments: [{name: main, flavors: {nvidia.com/gpu: a100, cpu: a100}, count: 1}]
  conditions:
  - {type: QuotaReserved, status: "True", reason: QuotaReserved, lastTransitionTime: "2025-03-01T08:00:00Z"}
  - {type: Admitted, status: "True", reason: Admitted, lastTransitionTime: "2025-03-01T08:00:00Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: job-evicted-1, namespace: team-a, creationTimestamp: "2025-03-01T08:30:00Z"}
spec:
  queueName: main
  podSets: [{name: main, count: 2, template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: "1"}}}]}}}]
status:
  conditions:
  - {type: QuotaReserved, status: "False", reason: Pending, lastTransitionTime: "2025-03-01T09:00:00Z"}
  - {type: Evicted, status: "True", reason: Preempted, lastTransitionTime: "2025-03-01T09:00:00Z"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: job-done-1, namespace: team-a, creationTimestamp: "2025-03-01T06:00:00Z"}
spec:
  queueName: main
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
status:
  conditions: [{type: Finished, status: "True", reason: Succeeded, lastTransitionTime: "2025-03-01T07:00:00Z"}]
`
	st, _, err := ReadDump([]File{{Name: "d.yaml", Data: []byte(data)}}, im, DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 2 {
		t.Fatalf("%d jobs, want 2 (the finished workload left out): %+v", len(st.Jobs), st.Jobs)
	}
	tr := st.Jobs[0]
	if tr.ID != "team-a/job-train-1" || tr.State != "running" || tr.Priority != 1000 || tr.Runtime != 2*time.Hour ||
		len(tr.Placement) != 1 || tr.Placement[0].Host != "a1" || tr.Groups[0].Models[0] != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("admitted workload %+v", tr)
	}
	if ev := st.Jobs[1]; ev.ID != "team-a/job-evicted-1" || ev.State != "" || ev.Groups[0].Count != 2 {
		t.Errorf("evicted workload %+v", ev)
	}
	if _, _, err := Load(st, loadOptions()); err != nil {
		t.Fatal(err)
	}
}
