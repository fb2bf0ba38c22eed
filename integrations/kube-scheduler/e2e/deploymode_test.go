package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// deployMode is what deploy/scheduler-mode.yaml carries: the scheduler
// configuration and the queue tree, with the ConfigMaps' names.
type deployMode struct {
	config      string // scheduler-config.yaml of gpusched-scheduler-config
	queues      string // queues.yaml of gpusched-queues
	queuesNS    string
	queuesName  string
	schedulerNS string // where the manifests put the scheduler (kube-system)
}

// loadDeployMode reads deploy/scheduler-mode.yaml.
func loadDeployMode(t testing.TB) deployMode {
	t.Helper()
	const file = "../deploy/scheduler-mode.yaml"
	var d deployMode
	for _, u := range readManifests(t, file) {
		if u.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		if c, ok := data["scheduler-config.yaml"]; ok {
			d.config, d.schedulerNS = c, u.GetNamespace()
		}
		if q, ok := data[plugin.QueueConfigMapKey]; ok {
			d.queues, d.queuesNS, d.queuesName = q, u.GetNamespace(), u.GetName()
		}
	}
	if d.config == "" || d.queues == "" {
		t.Fatalf("%s: no scheduler configuration or no queue tree", file)
	}
	if !strings.Contains(d.config, "delayCacheUntilActive: true") || !strings.Contains(d.config, "leaderElect: true") {
		t.Fatalf("%s: the scheduler configuration no longer elects a leader with delayCacheUntilActive; the HA tests assume it", file)
	}
	return d
}

// readManifests returns the objects of a YAML file of manifests.
func readManifests(t testing.TB, file string) []unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// setup creates what the configuration needs on the apiserver: the
// namespaces and the queue tree's ConfigMap.
func (d deployMode) setup(ctx context.Context, t testing.TB, c kubernetesClient) {
	t.Helper()
	for _, ns := range []string{d.schedulerNS, d.queuesNS} {
		_, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: d.queuesName, Namespace: d.queuesNS},
		Data: map[string]string{plugin.QueueConfigMapKey: d.queues}}
	if _, err := c.CoreV1().ConfigMaps(d.queuesNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("queue ConfigMap: %v", err)
	}
}

// fillGuarantees adds the GPU nodes the deploy queue tree's guarantees
// need (the Scheduler refuses a tree that guarantees more GPUs than the
// cluster has: 96), each tainted so that no pod of the tests goes there
// (node constraints keep gpusched's plans off them).
func (d deployMode) fillGuarantees(ctx context.Context, t *testing.T, c kubernetesClient) {
	t.Helper()
	for i := range 11 {
		name := fmt.Sprintf("reserved-%02d", i)
		createNode(ctx, t, c, nodeSpec{Name: name, GPUs: 8, Product: h100})
		setNode(ctx, t, c, name, func(n *v1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "e2e.gpusched.io/reserved", Value: "yes", Effect: v1.TaintEffectNoSchedule})
		})
	}
}

// deployBinary returns the built scheduler binary, or skips under -short
// without one.
func deployBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() && os.Getenv("GPUSCHED_KUBE_SCHEDULER") == "" {
		t.Skip("-short: not building the kube-scheduler binary")
	}
	return schedulerBinary(t)
}

// TestDeployProfilePreemptsOneJob is issue 26's defect 2 sequence, with
// the binary and deploy/scheduler-mode.yaml's configuration as it is
// (leader election, delayCacheUntilActive, DefaultPreemption disabled,
// the queue tree). Node n1 runs a (priority 0, 4 GPUs, created first, so
// the older: the one kube's DefaultPreemption would spare) and b
// (priority 0, 4 GPUs, never checkpointed); a checkpoints, so it is the
// job whose eviction loses least. p (priority 100, 4 GPUs) arrives:
// exactly one job is stopped, a, by gpusched's eviction; b keeps running;
// p binds on n1 on a's GPUs. With DefaultPreemption in the profile, kube
// also deleted b (two jobs killed for one pod).
func TestDeployProfilePreemptsOneJob(t *testing.T) {
	bin := deployBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := loadDeployMode(t)
	cp := startControlPlane(t)
	c := cp.Client
	d.setup(ctx, t, c)
	createNode(ctx, t, c, nodeSpec{Name: "n1", GPUs: 8, Product: h100})
	d.fillGuarantees(ctx, t, c)
	createPriorityClass(ctx, t, c, "prio-100", 100)
	startSchedulerProcess(t, bin, cp, d.config)

	createPod(ctx, t, c, podSpec{Name: "a", SchedulerName: schedModeName, GPUs: 4})
	waitBound(ctx, t, c, "default", []string{"a"}, 60*time.Second)
	createPod(ctx, t, c, podSpec{Name: "b", SchedulerName: schedModeName, GPUs: 4})
	bound := waitBound(ctx, t, c, "default", []string{"b"}, 60*time.Second)
	markRunning(ctx, t, c, "a", "b")
	time.Sleep(2 * time.Second) // both have run; b never checkpoints
	checkpointNow(ctx, t, c, "a")
	time.Sleep(time.Second) // a cycle reads the checkpoint

	createPod(ctx, t, c, podSpec{Name: "p", SchedulerName: schedModeName, GPUs: 4, PriorityClassName: "prio-100"})
	got := waitBound(ctx, t, c, "default", []string{"p"}, 60*time.Second)
	if got["p"].Spec.NodeName != "n1" {
		t.Errorf("p bound on %q, want n1", got["p"].Spec.NodeName)
	}
	time.Sleep(2 * time.Second) // a late deletion of b would show now
	if !podGone(ctx, c, "a") {
		t.Error("a, the checkpointed job, was not evicted")
	}
	pb, err := c.CoreV1().Pods("default").Get(ctx, "b", metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("b is gone (%v): two jobs stopped for one pod\n%s", err, describeEvents(ctx, c, "default"))
	case pb.DeletionTimestamp != nil || pb.Spec.NodeName != bound["b"].Spec.NodeName:
		t.Errorf("b being deleted (%v) or moved (%q), want it running on %s", pb.DeletionTimestamp, pb.Spec.NodeName, bound["b"].Spec.NodeName)
	}
	if !hasEvent(ctx, t, c, "default", "a", plugin.ReasonPreempted, "preempted for default/p") {
		t.Errorf("no %s event on a naming p\n%s", plugin.ReasonPreempted, describeEvents(ctx, c, "default"))
	}
	// kube's DefaultPreemption reports its victims with "Preempted".
	for _, n := range []string{"a", "b"} {
		evs, err := podEvents(ctx, c, "default", n)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Reason == "Preempted" {
				t.Errorf("%s: kube-scheduler's preemption acted: %s", n, e.Message)
			}
		}
	}
	checkGPUsOnce(ctx, t, c)
}
