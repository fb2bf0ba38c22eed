package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// TestSweepIndexedJobDryRun creates the objects of the repository's
// deploy/kubernetes/sweep-indexed-job.yaml (a PersistentVolumeClaim, the
// sweep as an Indexed Job, the merge Job) with a server-side dry run against
// a real kube-apiserver: the apiserver validates and defaults them as it
// would for kubectl apply --dry-run=server. It also checks that the Indexed
// Job's completions and parallelism match the n of its --shard i/n and that
// the merge reads every shard.
func TestSweepIndexedJobDryRun(t *testing.T) {
	data, err := os.ReadFile("../../../deploy/kubernetes/sweep-indexed-job.yaml")
	if err != nil {
		t.Skipf("deploy/kubernetes/sweep-indexed-job.yaml not found beside this module: %v", err)
	}
	cp := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "sweep"
	createNamespace(ctx, t, cp.Client, ns)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var jobs []*batchv1.Job
	claims := 0
	for {
		var b json.RawMessage
		if err := dec.Decode(&b); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		var raw struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		switch raw.Kind {
		case "PersistentVolumeClaim":
			var pvc v1.PersistentVolumeClaim
			if err := strictJSON(b, &pvc); err != nil {
				t.Fatal(err)
			}
			if _, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &pvc, dry); err != nil {
				t.Fatalf("dry-run create claim %s: %v", pvc.Name, err)
			}
			claims++
		case "Job":
			var j batchv1.Job
			if err := strictJSON(b, &j); err != nil {
				t.Fatal(err)
			}
			got, err := cp.Client.BatchV1().Jobs(ns).Create(ctx, &j, dry)
			if err != nil {
				t.Fatalf("dry-run create job %s: %v", j.Name, err)
			}
			jobs = append(jobs, got)
		default:
			t.Fatalf("unexpected kind %q in sweep-indexed-job.yaml", raw.Kind)
		}
	}
	if claims != 1 || len(jobs) != 2 {
		t.Fatalf("%d claims and %d jobs, want 1 and 2", claims, len(jobs))
	}
	sweep, merge := jobs[0], jobs[1]
	if sweep.Spec.CompletionMode == nil || *sweep.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("sweep job completion mode %v, want Indexed", sweep.Spec.CompletionMode)
	}
	args := strings.Join(sweep.Spec.Template.Spec.Containers[0].Args, " ")
	if *sweep.Spec.Completions != 4 || *sweep.Spec.Parallelism != 4 || !strings.Contains(args, "--shard $(JOB_COMPLETION_INDEX)/4") {
		t.Errorf("sweep job: completions %d, parallelism %d, args %q: want 4, 4 and --shard $(JOB_COMPLETION_INDEX)/4",
			*sweep.Spec.Completions, *sweep.Spec.Parallelism, args)
	}
	margs := strings.Join(merge.Spec.Template.Spec.Containers[0].Args, " ")
	for i := range 4 {
		if !strings.Contains(margs, "/out/sweep-"+string(rune('0'+i))+"-of-4.csv") {
			t.Errorf("merge job does not read shard %d: %q", i, margs)
		}
	}
}

// strictJSON decodes b into v, rejecting fields v does not have (a typo in
// the manifest that the apiserver would drop).
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}
