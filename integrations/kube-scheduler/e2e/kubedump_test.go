package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/importers/kube"
)

// TestKubeDumpWhatIf takes a dump (kubectl get nodes,pods -A -o yaml, as
// JSON) from this e2e's apiserver and runs it through what `gpusched
// explain --kube` and `gpusched sim run --kube` do (package
// importers/kube), with the Kueue configuration of docs/what-if.
func TestKubeDumpWhatIf(t *testing.T) {
	const config = "../../../docs/what-if/kueue"
	if _, err := os.Stat(config); err != nil {
		t.Skipf("docs/what-if: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := startControlPlane(t)
	c := cp.Client
	for i, rack := range []string{"rack-1", "rack-1", "rack-2", "rack-2"} {
		createNode(ctx, t, c, nodeSpec{Name: "h100-" + string(rune('1'+i)), GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", CPU: "96", Memory: "1Ti",
			Labels: map[string]string{"example.com/rack": rack}})
	}
	createNamespace(ctx, t, c, "team-a")
	createNamespace(ctx, t, c, "team-b")
	start := time.Now().UTC().Truncate(time.Second)
	pod := func(ns, name, job, node, runtime string) {
		t.Helper()
		q := *resource.NewQuantity(8, resource.DecimalSI)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
				Labels:      map[string]string{"kueue.x-k8s.io/queue-name": "main", "batch.kubernetes.io/job-name": job},
				Annotations: map[string]string{kube.RuntimeAnnotation: runtime}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), gpuResource: q}, Limits: v1.ResourceList{gpuResource: q}}}}},
		}
		created, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		if node == "" {
			return
		}
		created.Status.Phase = v1.PodRunning
		created.Status.StartTime = &metav1.Time{Time: start}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s status: %v", name, err)
		}
	}
	pod("team-a", "pretrain-0", "pretrain", "h100-1", "4h")
	pod("team-a", "pretrain-1", "pretrain", "h100-2", "4h")
	pod("team-b", "serve-0", "serve", "h100-3", "10h")
	pod("team-a", "finetune-0", "finetune", "", "2h")

	// The dump, as kubectl would write it (a v1 List; JSON is YAML).
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var items []any
	for i := range nodes.Items {
		n := nodes.Items[i]
		n.APIVersion, n.Kind = "v1", "Node"
		items = append(items, n)
	}
	for i := range pods.Items {
		p := pods.Items[i]
		p.APIVersion, p.Kind = "v1", "Pod"
		items = append(items, p)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(t.TempDir(), "dump.json")
	if err := os.WriteFile(dump, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// explain --kube: finetune waits over team-a's quota until pretrain
	// ends. The state's time is the latest the dump mentions.
	s, err := kube.Prepare(dump, config, kube.DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := s.State.Now
	var pretrainEnd time.Time
	for _, j := range s.State.Jobs {
		if j.ID == "team-a/pretrain" {
			pretrainEnd = j.Started.Add(4 * time.Hour)
		}
	}
	l, _, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	d := l.Scheduler.Schedule(now)
	if len(d.Pending) != 1 || d.Pending[0].Job != "team-a/finetune" || !strings.Contains(d.Pending[0].Reason.String(), "borrowing limit") {
		t.Fatalf("pending %v; want team-a/finetune over team-a's borrowing limit", d.Pending)
	}
	f, _, err := s.Forecast(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	kube.WriteForecast(&b, f)
	t.Logf("explain --kube forecast:\n%s", b.String())
	for _, j := range f.Jobs {
		if j.Job == "team-a/finetune" && (pretrainEnd.IsZero() || !j.Start.Equal(pretrainEnd)) {
			t.Errorf("finetune expected at %v, want pretrain's end %v", j.Start, pretrainEnd)
		}
	}

	// sim run --kube: with a borrowing limit of 8 it starts now.
	changed, err := kube.Prepare(dump, "../../../docs/what-if/kueue-borrow", kube.DumpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmp, _, err := kube.Compare(s, changed, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	cmp.Write(&b)
	t.Logf("sim run --kube:\n%s", b.String())
	for _, j := range cmp.Changed.Jobs {
		if j.Job == "team-a/finetune" && !j.Start.Equal(now) {
			t.Errorf("with a borrowing limit of 8 finetune starts at %v, want now (%v):\n%s", j.Start, now, b.String())
		}
	}

	// The same dump through the CLI as a user runs it, from the root
	// module: explain --kube and sim run --kube.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to run the CLI: %v", err)
	}
	cliCtx, cliCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cliCancel()
	for _, args := range [][]string{
		{"explain", "--kube", dump, "--config", "docs/what-if/kueue"},
		{"sim", "run", "--kube", dump, "--baseline", "docs/what-if/kueue", "--config", "docs/what-if/kueue-borrow", "--horizon", "24h"},
	} {
		cmd := exec.CommandContext(cliCtx, goBin, append([]string{"run", "./cmd/gpusched"}, args...)...)
		cmd.Dir = "../../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gpusched %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("gpusched %s:\n%s", strings.Join(args[:2], " "), out)
		if !strings.Contains(string(out), "team-a/finetune") {
			t.Errorf("gpusched %s does not mention team-a/finetune:\n%s", strings.Join(args, " "), out)
		}
	}
}
