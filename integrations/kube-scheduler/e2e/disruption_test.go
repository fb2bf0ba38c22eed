package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// disruptionConfig is schedModeConfig with a short eviction retry (so a
// refused victim is asked again within the test) and deleteOnRecovery.
var disruptionConfig = schedModeConfig + "      evictionRetrySeconds: 8\n      deleteOnRecovery: true\n"

var disruptionScenarios = []scenario{
	{"PDBRefusalPlansAnotherVictim", testPDBAnotherVictim},
	{"PDBEveryVictimProtected", testPDBEveryVictim},
	{"RecoveriesDeletePods", testRecoveriesDelete},
	{"NodesJoinAndLeave", testNodesJoinAndLeave},
}

// TestSchedulerModeDisruptions runs scheduler mode's disruption scenarios
// (PodDisruptionBudgets refusing evictions, node faults) against a fresh
// etcd and kube-apiserver, in process and as the binary.
func TestSchedulerModeDisruptions(t *testing.T) {
	runScenarios(t, disruptionScenarios, disruptionConfig, func(ctx context.Context, t *testing.T, cp *controlPlane) {
		createNamespace(ctx, t, cp.Client, systemNS)
		createQueueConfigMap(ctx, t, cp.Client, queuesYAML)
	})
}

// TestSchedulerModeRecoveriesLeft: with deleteOnRecovery unset (the
// default) a pod on a failed node is left where it is, with a Warning.
func TestSchedulerModeRecoveriesLeft(t *testing.T) {
	runScenarios(t, []scenario{{"RecoveriesLeavePods", testRecoveriesLeave}}, schedModeConfig, func(ctx context.Context, t *testing.T, cp *controlPlane) {
		createNamespace(ctx, t, cp.Client, systemNS)
		createQueueConfigMap(ctx, t, cp.Client, queuesYAML)
	})
}

// createBlockingPDB creates a PodDisruptionBudget over the pods labelled
// app=NAME that allows no disruption, with the status the disruption
// controller (not running here) would give it: the Eviction API then
// refuses with 429.
func createBlockingPDB(ctx context.Context, t *testing.T, c kubernetesClient, name string) {
	t.Helper()
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	created, err := c.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PodDisruptionBudget %s: %v", name, err)
	}
	created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := c.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PodDisruptionBudget %s status: %v", name, err)
	}
}

// refusedEvictions is the number of evictions the apiserver refused with
// 429 (a PodDisruptionBudget) so far, from its own metrics
// (apiserver_request_total; the registry is the process's, so callers
// take differences).
func refusedEvictions(ctx context.Context, t *testing.T, c kubernetesClient) int {
	t.Helper()
	return evictions(ctx, t, c, "429")
}

// evictions is the number of evictions the apiserver answered with code
// (any code if "") so far (see refusedEvictions).
func evictions(ctx context.Context, t *testing.T, c kubernetesClient, code string) int {
	t.Helper()
	b, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("apiserver metrics: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "apiserver_request_total{") || !strings.Contains(l, `subresource="eviction"`) || (code != "" && !strings.Contains(l, `code="`+code+`"`)) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("apiserver metrics: %q: %v", l, err)
		}
		n += int(v)
	}
	return n
}

// markRunning sets bound pods Running and Ready, as their kubelet would:
// the Eviction API ignores the budgets of pods still Pending.
func markRunning(ctx context.Context, t *testing.T, c kubernetesClient, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := updatePodStatus(ctx, c, "default", n, func(p *v1.Pod) {
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
		}); err != nil {
			t.Fatalf("mark %s running: %v", n, err)
		}
	}
}

// stillWaiting checks that none of the pods is bound after d.
func stillWaiting(ctx context.Context, t *testing.T, c kubernetesClient, d time.Duration, names ...string) {
	t.Helper()
	time.Sleep(d)
	for _, n := range names {
		p, err := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s, want it waiting\n%s", n, p.Spec.NodeName, describeEvents(ctx, c, "default"))
		}
	}
}

// podGone reports whether the pod no longer exists.
func podGone(ctx context.Context, c kubernetesClient, name string) bool {
	_, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	return err != nil
}

// checkpointNow sets a running pod's checkpointed-at annotation to now.
func checkpointNow(ctx context.Context, t *testing.T, c kubernetesClient, name string) {
	t.Helper()
	p, err := c.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[plugin.DefaultCheckpointKey] = time.Now().UTC().Format(time.RFC3339)
	if _, err := c.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// testPDBAnotherVictim: two low-priority pods fill two nodes; guarded
// checkpointed just now, so it is the cheaper victim, but a
// PodDisruptionBudget protects it. The Eviction API refuses it once; the
// planner then evicts the other pod, and the high-priority pod binds on
// its node. guarded keeps running.
func testPDBAnotherVictim(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	createPriorityClass(ctx, t, c, "gpu-low", 100)
	createPriorityClass(ctx, t, c, "gpu-high", 1000)
	createBlockingPDB(ctx, t, c, "guarded")
	start()
	for _, name := range []string{"guarded", "other"} {
		createPod(ctx, t, c, podSpec{Name: name, SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "gpu-low",
			Labels: map[string]string{queueLabel: "batch", "app": name}})
	}
	bound := waitBound(ctx, t, c, "default", []string{"guarded", "other"}, 60*time.Second)
	markRunning(ctx, t, c, "guarded", "other")
	time.Sleep(2 * time.Second) // other has run 2 s without a checkpoint
	checkpointNow(ctx, t, c, "guarded")
	time.Sleep(time.Second) // a cycle reads the checkpoint
	before := refusedEvictions(ctx, t, c)
	createPod(ctx, t, c, podSpec{Name: "high", SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "gpu-high",
		Labels: map[string]string{queueLabel: "batch"}})
	got := waitBound(ctx, t, c, "default", []string{"high"}, 60*time.Second)
	if got["high"].Spec.NodeName != bound["other"].Spec.NodeName {
		t.Errorf("high bound on %s, want %s (other's node)", got["high"].Spec.NodeName, bound["other"].Spec.NodeName)
	}
	if !podGone(ctx, c, "other") {
		t.Error("other was not evicted")
	}
	if podGone(ctx, c, "guarded") {
		t.Error("guarded, protected by its PodDisruptionBudget, is gone")
	}
	if !hasEvent(ctx, t, c, "default", "guarded", plugin.ReasonPreempted, "eviction refused") {
		t.Errorf("no eviction of guarded was refused (the planner did not pick it first?)\n%s", describeEvents(ctx, c, "default"))
	}
	if n := refusedEvictions(ctx, t, c) - before; n != 1 {
		t.Errorf("the apiserver refused %d evictions, want 1 (guarded's)", n)
	}
	checkGPUsOnce(ctx, t, c)
}

// testPDBEveryVictimProtected: the only possible victim is protected; the
// high-priority pod waits with the refusal in its PodScheduled message,
// and the victim is asked again at most once per evictionRetrySeconds (8).
func testPDBEveryVictim(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "n1", GPUs: 8, Product: h100})
	createPriorityClass(ctx, t, c, "gpu-low", 100)
	createPriorityClass(ctx, t, c, "gpu-high", 1000)
	createBlockingPDB(ctx, t, c, "guarded")
	start()
	createPod(ctx, t, c, podSpec{Name: "guarded", SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "gpu-low",
		Labels: map[string]string{queueLabel: "batch", "app": "guarded"}})
	waitBound(ctx, t, c, "default", []string{"guarded"}, 60*time.Second)
	markRunning(ctx, t, c, "guarded")
	before := refusedEvictions(ctx, t, c)
	createPod(ctx, t, c, podSpec{Name: "high", SchedulerName: schedModeName, GPUs: 8, PriorityClassName: "gpu-high",
		Labels: map[string]string{queueLabel: "batch"}})
	began := time.Now()
	waitCondition(ctx, t, c, "default", "high", "eviction of default/guarded refused")
	msg := podCondition(ctx, c, "default", "high")
	if !strings.Contains(msg, "disruption budget") {
		t.Errorf("high: PodScheduled message %q does not name the disruption budget", msg)
	}
	time.Sleep(15 * time.Second) // a retry comes 8 s after the refusal, at the next cycle (one every 5 s at least)
	elapsed := time.Since(began)
	n := refusedEvictions(ctx, t, c) - before
	bound := 1 + int(elapsed/(8*time.Second))
	t.Logf("%d refused evictions of guarded in %v (retry 8 s; bound %d); high: %q", n, elapsed.Round(100*time.Millisecond), bound, msg)
	if n < 2 || n > bound {
		t.Errorf("%d refused evictions of guarded in %v with an 8 s retry: want at least 2 (retried) and at most %d (no loop)", n, elapsed, bound)
	}
	if podGone(ctx, c, "guarded") {
		t.Error("guarded is gone")
	}
	if p, err := c.CoreV1().Pods("default").Get(ctx, "high", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("high bound to %q (%v), want waiting", p.Spec.NodeName, err)
	}
}

// setNode applies fn to a node's spec and status (no kubelet: the test
// plays the node controller and the device plugin).
func setNode(ctx context.Context, t *testing.T, c kubernetesClient, name string, fn func(n *v1.Node)) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fn(n)
	n2, err := c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
	n2.Status = n.Status
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n2, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node %s status: %v", name, err)
	}
}

func notReady(n *v1.Node) {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			n.Status.Conditions[i].Status = v1.ConditionFalse
			n.Status.Conditions[i].Reason = "KubeletStopped"
		}
	}
}

func noExecute(n *v1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "example.com/maintenance", Value: "now", Effect: v1.TaintEffectNoExecute})
}

// gpusLost drops allocatable nvidia.com/gpu to 6 of 8 (the device plugin
// reports two unhealthy); the gpu.count label stays 8.
func gpusLost(n *v1.Node) {
	q := *resource.NewQuantity(6, resource.DecimalSI)
	n.Status.Allocatable[gpuResource] = q
	n.Status.Capacity[gpuResource] = q
}

// testRecoveriesDelete: one 8-GPU pod on each of three nodes; n1 goes
// NotReady, n2 gets a NoExecute taint, n3's allocatable GPUs drop to 6.
// With deleteOnRecovery, each pod gets a GPUSchedRecovery Warning and is
// deleted for its controller to recreate; a pod on a fourth, healthy node
// is left alone, and a new 8-GPU pod binds only there once it is free.
func testRecoveriesDelete(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	nodes := []string{"n1", "n2", "n3", "n4"}
	for _, n := range nodes {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	start()
	var names []string
	for i := range nodes {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("run-%d", i+1), SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
		names = append(names, p.Name)
	}
	bound := waitBound(ctx, t, c, "default", names, 60*time.Second)
	on := map[string]string{} // node → pod
	for n, p := range bound {
		on[p.Spec.NodeName] = n
	}
	setNode(ctx, t, c, "n1", notReady)
	setNode(ctx, t, c, "n2", noExecute)
	setNode(ctx, t, c, "n3", gpusLost)
	for _, n := range []string{"n1", "n2", "n3"} {
		pod := on[n]
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) { return podGone(ctx, c, pod), nil }); err != nil {
			t.Fatalf("%s on faulty %s not deleted: %v\n%s", pod, n, err, describeEvents(ctx, c, "default"))
		}
		if !hasEvent(ctx, t, c, "default", pod, plugin.ReasonRecovery, "") {
			t.Errorf("%s on %s: no %s Warning\n%s", pod, n, plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
		}
	}
	if podGone(ctx, c, on["n4"]) {
		t.Errorf("%s on healthy n4 was deleted", on["n4"])
	}
	// A new pod waits (no healthy node has 8 free GPUs), then binds on n4
	// once its pod finishes; never on the faulty nodes.
	createPod(ctx, t, c, podSpec{Name: "next", SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	stillWaiting(ctx, t, c, 2*time.Second, "next")
	finish(ctx, t, c, "default", on["n4"])
	got := waitBound(ctx, t, c, "default", []string{"next"}, 30*time.Second)
	if got["next"].Spec.NodeName != "n4" {
		t.Errorf("next bound on %s, want n4 (the only healthy node)", got["next"].Spec.NodeName)
	}
	checkGPUsOnce(ctx, t, c)
}

// testRecoveriesLeave: without deleteOnRecovery, the pod on a NotReady
// node gets a GPUSchedRecovery Warning and is left; its GPUs are not given
// to a new pod.
func testRecoveriesLeave(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "n1", GPUs: 8, Product: h100})
	start()
	createPod(ctx, t, c, podSpec{Name: "run", SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	waitBound(ctx, t, c, "default", []string{"run"}, 60*time.Second)
	setNode(ctx, t, c, "n1", notReady)
	if !hasEvent(ctx, t, c, "default", "run", plugin.ReasonRecovery, "") {
		t.Fatalf("no %s event for run\n%s", plugin.ReasonRecovery, describeEvents(ctx, c, "default"))
	}
	createPod(ctx, t, c, podSpec{Name: "next", SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	stillWaiting(ctx, t, c, 3*time.Second, "next")
	if podGone(ctx, c, "run") {
		t.Error("run was deleted, want it left (deleteOnRecovery is false)")
	}
}

// testNodesJoinAndLeave: while pods run, a node joins and a node running a
// pod is deleted (the running Scheduler follows by live changes). A new
// pod binds on the new node; the deleted node's pod is recovered (deleted,
// deleteOnRecovery) and nothing binds there; the other pod keeps running;
// no GPU is bound twice.
func testNodesJoinAndLeave(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	start()
	for _, n := range []string{"a", "b"} {
		createPod(ctx, t, c, podSpec{Name: n, SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	}
	bound := waitBound(ctx, t, c, "default", []string{"a", "b"}, 60*time.Second)
	onN2 := "a"
	if bound["b"].Spec.NodeName == "n2" {
		onN2 = "b"
	}
	createNode(ctx, t, c, nodeSpec{Name: "n3", GPUs: 8, Product: h100})
	if err := c.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(ctx, t, c, podSpec{Name: "c", SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	got := waitBound(ctx, t, c, "default", []string{"c"}, 30*time.Second)
	if got["c"].Spec.NodeName != "n3" {
		t.Errorf("c bound on %s, want the new node n3", got["c"].Spec.NodeName)
	}
	other := "a"
	if onN2 == "a" {
		other = "b"
	}
	// The deleted node's pod is recovered as from a drained host: with
	// deleteOnRecovery it is deleted for its controller to recreate (pod
	// GC would delete it anyway), with a Warning. The other keeps running.
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) { return podGone(ctx, c, onN2), nil }); err != nil {
		t.Fatalf("%s on the deleted node n2 not recovered: %v\n%s", onN2, err, describeEvents(ctx, c, "default"))
	}
	if !hasEvent(ctx, t, c, "default", onN2, plugin.ReasonRecovery, "") {
		t.Errorf("%s: no %s event", onN2, plugin.ReasonRecovery)
	}
	if podGone(ctx, c, other) {
		t.Errorf("%s on n1 is gone", other)
	}
	checkGPUsOnce(ctx, t, c)
	// d has no node but n1, where the other pod runs: it waits, and binds
	// there once that pod finishes.
	createPod(ctx, t, c, podSpec{Name: "d", SchedulerName: schedModeName, GPUs: 8, Labels: map[string]string{queueLabel: "batch"}})
	stillWaiting(ctx, t, c, 2*time.Second, "d")
	finish(ctx, t, c, "default", other)
	if got := waitBound(ctx, t, c, "default", []string{"d"}, 30*time.Second); got["d"].Spec.NodeName != "n1" {
		t.Errorf("d bound on %s, want n1", got["d"].Spec.NodeName)
	}
	checkGPUsOnce(ctx, t, c)
}
