package e2e

import (
	"context"
	"fmt"
	"k8s.io/client-go/util/retry"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

// schedModeConfig runs one profile, gpusched-queue, in scheduler mode: the
// queue tree comes from the ConfigMap gpusched-system/gpusched-queues.
const schedModeConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: gpusched-queue
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      enabled:
      - name: GPUSched
        weight: 100
    bind:
      enabled:
      - name: GPUSched
    postFilter:
      disabled:
      - name: DefaultPreemption
  pluginConfig:
  - name: GPUSched
    args:
      mode: scheduler
      queueConfigMap: gpusched-system/gpusched-queues
      cycleIntervalMilliseconds: 100
      eventIntervalSeconds: 5
      gangTimeoutSeconds: 20
`

// queuesYAML: one strict FIFO queue with EASY backfill, one plain queue.
const queuesYAML = `root:
  children:
  - name: research
    policy: {ordering: strict-fifo, backfill: true}
  - name: batch
`

const (
	queueLabel     = plugin.DefaultQueueLabel
	runtimeKey     = plugin.DefaultRuntimeKey
	schedModeName  = "gpusched-queue"
	systemNS       = "gpusched-system"
	queueConfigMap = "gpusched-queues"
)

var schedModeScenarios = []scenario{
	{"JobsBoundByCycles", testJobsBoundByCycles},
	{"BackfillDoesNotStarveGang", testBackfillGang},
	{"QueueEditsApplyLive", testQueueEditsApplyLive},
	{"StaleNominationAfterRestart", testStaleNomination},
	{"GangOnePodPerNode", testGangOnePodPerNode},
	{"GangOnePodPerZone", testGangOnePodPerZone},
}

// TestSchedulerMode runs the scheduler-mode scenarios against a fresh etcd
// and kube-apiserver, with the scheduler in this process and as the binary.
func TestSchedulerMode(t *testing.T) {
	runScenarios(t, schedModeScenarios, schedModeConfig, func(ctx context.Context, t *testing.T, cp *controlPlane) {
		createNamespace(ctx, t, cp.Client, systemNS)
		createQueueConfigMap(ctx, t, cp.Client, queuesYAML)
	})
}

func createQueueConfigMap(ctx context.Context, t *testing.T, c kubernetesClient, data string) {
	t.Helper()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: queueConfigMap, Namespace: systemNS},
		Data: map[string]string{plugin.QueueConfigMapKey: data}}
	if _, err := c.CoreV1().ConfigMaps(systemNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podCondition returns the message of the pod's PodScheduled condition.
func podCondition(ctx context.Context, c kubernetesClient, ns, name string) string {
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, cd := range p.Status.Conditions {
		if cd.Type == v1.PodScheduled {
			return cd.Message
		}
	}
	return ""
}

// waitCondition waits until the pod's PodScheduled message contains substr.
func waitCondition(ctx context.Context, t *testing.T, c kubernetesClient, ns, name, substr string) {
	t.Helper()
	err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return strings.Contains(podCondition(ctx, c, ns, name), substr), nil
	})
	if err != nil {
		t.Fatalf("%s: PodScheduled message %q, want it to contain %q\n%s", name, podCondition(ctx, c, ns, name), substr, describeEvents(ctx, c, ns))
	}
}

// finish marks pods Succeeded, as their kubelet would when they exit.
func finish(ctx context.Context, t *testing.T, c kubernetesClient, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := updatePodStatus(ctx, c, ns, n, func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }); err != nil {
			t.Fatalf("finish %s: %v", n, err)
		}
	}
}

// updatePodStatus changes pod ns/name's status with change, as a
// controller or kubelet does: on the pod as it is now, again when a write
// of the scheduler's (a condition, an annotation) landed in between.
func updatePodStatus(ctx context.Context, c kubernetesClient, ns, name string, change func(*v1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(p)
		_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// testJobsBoundByCycles: pods become jobs of their queues; a gang is bound
// whole on distinct GPUs; a pod that does not fit waits with gpusched's
// reason in its PodScheduled condition and an event; bad input (an unknown
// queue, a malformed annotation, gang members that disagree) gives a
// Warning naming the pod and the field, and nothing of it binds.
func testJobsBoundByCycles(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	start()
	gang := func(i int, extra map[string]string) podSpec {
		l := map[string]string{gangLabelKey: "train", plugin.DefaultGangSizeKey: "2", queueLabel: "batch"}
		for k, v := range extra {
			l[k] = v
		}
		return podSpec{Name: fmt.Sprintf("train-%d", i), SchedulerName: schedModeName, GPUs: 8, Labels: l}
	}
	createPod(ctx, t, c, gang(0, nil))
	waitCondition(ctx, t, c, "default", "train-0", "1 of 2 exist")
	createPod(ctx, t, c, gang(1, nil))
	got := waitBound(ctx, t, c, "default", []string{"train-0", "train-1"}, 60*time.Second)
	if got["train-0"].Spec.NodeName == got["train-1"].Spec.NodeName {
		t.Errorf("two 8-GPU pods bound to one 8-GPU node %s", got["train-0"].Spec.NodeName)
	}
	for _, p := range got {
		if len(indices(t, p)) != 8 {
			t.Errorf("%s: %s=%q, want 8 indices", p.Name, indicesKey, p.Annotations[indicesKey])
		}
	}
	// The cluster is full: a 1-GPU pod waits, and says why.
	createPod(ctx, t, c, podSpec{Name: "small", SchedulerName: schedModeName, GPUs: 1, Labels: map[string]string{queueLabel: "batch"}})
	waitCondition(ctx, t, c, "default", "small", "capacity")
	if msg := waitEvent(ctx, t, c, "default", "small", plugin.ReasonPending); !strings.Contains(msg, "capacity") {
		t.Errorf("%s event %q: want the capacity reason", plugin.ReasonPending, msg)
	}
	// Bad input.
	createPod(ctx, t, c, podSpec{Name: "lost", SchedulerName: schedModeName, GPUs: 1, Labels: map[string]string{queueLabel: "nowhere"}})
	createPod(ctx, t, c, podSpec{Name: "odd-runtime", SchedulerName: schedModeName, GPUs: 1, Annotations: map[string]string{runtimeKey: "soon"}})
	createPod(ctx, t, c, podSpec{Name: "split-0", SchedulerName: schedModeName, GPUs: 1,
		Labels: map[string]string{gangLabelKey: "split", plugin.DefaultGangSizeKey: "2"}})
	createPod(ctx, t, c, podSpec{Name: "split-1", SchedulerName: schedModeName, GPUs: 1,
		Labels: map[string]string{gangLabelKey: "split", plugin.DefaultGangSizeKey: "3"}})
	for _, w := range []struct{ pod, want string }{
		{"lost", `pod default/lost: label gpusched.io/queue="nowhere"`},
		{"odd-runtime", `pod default/odd-runtime: annotation gpusched.io/runtime="soon"`},
		{"split-0", "gang members disagree"},
	} {
		if msg := waitEvent(ctx, t, c, "default", w.pod, plugin.ReasonInvalid); !strings.Contains(msg, w.want) {
			t.Errorf("%s: %s event %q, want it to contain %q", w.pod, plugin.ReasonInvalid, msg, w.want)
		}
	}
	// Room comes free: the gang finishes, the waiting pod binds; the bad
	// ones never do.
	finish(ctx, t, c, "default", "train-0", "train-1")
	waitBound(ctx, t, c, "default", []string{"small"}, 30*time.Second)
	for _, n := range []string{"lost", "odd-runtime", "split-0", "split-1"} {
		if p, err := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
			t.Errorf("%s bound to %q (err %v): bad input must not bind", n, p.Spec.NodeName, err)
		}
	}
}

// testBackfillGang: EASY backfill with a reservation. Eight nodes of 8 GPUs
// run eight 1-GPU pods estimated at 2 h; a 64-GPU gang (8 × 8 GPUs) at the
// head of the strict FIFO queue gets a reservation for when they end. A
// stream of 1-GPU pods estimated at 30 m backfill into the gap (they end
// before the reservation), while 1-GPU pods estimated at 5 h wait: they
// would delay the gang. When the running pods finish the gang binds whole.
func testBackfillGang(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for i := range 8 {
		createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("n%d", i), GPUs: 8, Product: h100})
	}
	start()
	one := func(name, runtime string) podSpec {
		return podSpec{Name: name, SchedulerName: schedModeName, GPUs: 1,
			Labels: map[string]string{queueLabel: "research"}, Annotations: map[string]string{runtimeKey: runtime}}
	}
	var running []string
	for i := range 8 {
		running = append(running, createPod(ctx, t, c, one(fmt.Sprintf("long-%d", i), "2h")).Name)
	}
	waitBound(ctx, t, c, "default", running, 60*time.Second)
	var big []string
	for i := range 8 {
		p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("big-%d", i), SchedulerName: schedModeName, GPUs: 8,
			Labels:      map[string]string{queueLabel: "research", gangLabelKey: "big", plugin.DefaultGangSizeKey: "8"},
			Annotations: map[string]string{runtimeKey: "10h"}})
		big = append(big, p.Name)
	}
	waitCondition(ctx, t, c, "default", "big-0", "reserved to start at")
	var short, late []string
	for i := range 6 {
		short = append(short, createPod(ctx, t, c, one(fmt.Sprintf("short-%d", i), "30m")).Name)
		late = append(late, createPod(ctx, t, c, one(fmt.Sprintf("late-%d", i), "5h")).Name)
	}
	waitBound(ctx, t, c, "default", short, 60*time.Second)
	for _, n := range late {
		waitCondition(ctx, t, c, "default", n, "would delay default/gang/big")
	}
	for _, n := range append(late, big...) {
		if p, _ := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{}); p != nil && p.Spec.NodeName != "" {
			t.Fatalf("%s bound to %s while the 64-GPU gang waits for its reservation", n, p.Spec.NodeName)
		}
	}
	finish(ctx, t, c, "default", append(running, short...)...)
	waitBound(ctx, t, c, "default", big, 60*time.Second)
	for _, n := range late {
		if p, _ := c.CoreV1().Pods("default").Get(ctx, n, metav1.GetOptions{}); p != nil && p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s: the gang holds every GPU", n, p.Spec.NodeName)
		}
	}
}

// testQueueEditsApplyLive: the queue ConfigMap is edited while the
// scheduler runs. A tree that does not parse gets a Warning event on the
// ConfigMap naming it and the line, and changes nothing (the scheduler
// runs on); raising a queue's quota (max 4 → 8 GPUs) lets its waiting pod
// bind, without a restart.
func testQueueEditsApplyLive(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "n1", GPUs: 8, Product: h100})
	tree := func(batchMax int) string {
		return fmt.Sprintf("root:\n  children:\n  - name: research\n  - name: batch\n    quotas: [{resource: gpu, nominal: 0, max: %d}]\n", batchMax)
	}
	putQueues := func(data string) {
		t.Helper()
		cm, err := c.CoreV1().ConfigMaps(systemNS).Get(ctx, queueConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{plugin.QueueConfigMapKey: data}
		if _, err := c.CoreV1().ConfigMaps(systemNS).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	putQueues(tree(4))
	start()
	batch := map[string]string{queueLabel: "batch"}
	createPod(ctx, t, c, podSpec{Name: "a", SchedulerName: schedModeName, GPUs: 4, Labels: batch})
	waitBound(ctx, t, c, "default", []string{"a"}, 30*time.Second)
	createPod(ctx, t, c, podSpec{Name: "q", SchedulerName: schedModeName, GPUs: 4, Labels: batch})
	waitCondition(ctx, t, c, "default", "q", "quota")

	putQueues("root:\n  children:\n  - name: batch\n    quotas: [{resource: gpu, nominal: 0, max: eight}]\n")
	var warning string
	err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		el, err := c.CoreV1().Events(systemNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range el.Items {
			if e.Type == v1.EventTypeWarning && e.Reason == plugin.ReasonInvalid && e.InvolvedObject.Name == queueConfigMap {
				warning = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Warning event on the ConfigMap after an unparsable edit\n%s", describeEvents(ctx, c, systemNS))
	}
	for _, want := range []string{"ConfigMap " + systemNS + "/" + queueConfigMap, "key " + plugin.QueueConfigMapKey, "line 4", "the queue tree in force stays"} {
		if !strings.Contains(warning, want) {
			t.Errorf("warning %q, want it to name %q", warning, want)
		}
	}
	time.Sleep(500 * time.Millisecond) // a few cycles under the tree in force
	if m := podCondition(ctx, c, "default", "q"); !strings.Contains(m, "quota") {
		t.Errorf("q after the unparsable edit: %q, want it still waiting on its quota", m)
	}

	putQueues(tree(8))
	waitBound(ctx, t, c, "default", []string{"q"}, 30*time.Second)
}

// testGangOnePodPerNode (issue 26, defect 4): a gang whose members require
// pod anti-affinity against each other on the hostname (one per node),
// each wanting half a node's GPUs, binds one member per node the first
// time: kube's InterPodAffinity filter never rejects a member.
func testGangOnePodPerNode(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, n := range []string{"n1", "n2"} {
		createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100})
	}
	start()
	names := createAntiAffineGang(ctx, t, c, "ring", 2, "kubernetes.io/hostname")
	got := waitBound(ctx, t, c, "default", names, 60*time.Second)
	if got["ring-0"].Spec.NodeName == got["ring-1"].Spec.NodeName {
		t.Errorf("both members bound to %s", got["ring-0"].Spec.NodeName)
	}
	if ev := describeEvents(ctx, c, "default"); strings.Contains(ev, "anti-affinity") {
		t.Errorf("kube's InterPodAffinity filter rejected a member:\n%s", ev)
	}
}

// testGangOnePodPerZone (issue 26, defect 4): a gang of four members, each
// wanting half a node's GPUs and anti-affine to the others on the zone
// label, over four zones of two nodes each, binds one member per zone:
// kube's InterPodAffinity filter never rejects a member.
func testGangOnePodPerZone(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	const zone = "topology.kubernetes.io/zone"
	zoneOf := map[string]string{}
	for _, z := range []string{"a", "b", "c", "d"} {
		for i := range 2 {
			n := fmt.Sprintf("z%s-%d", z, i)
			zoneOf[n] = z
			createNode(ctx, t, c, nodeSpec{Name: n, GPUs: 8, Product: h100, Labels: map[string]string{zone: z}})
		}
	}
	start()
	names := createAntiAffineGang(ctx, t, c, "zring", 4, zone)
	got := waitBound(ctx, t, c, "default", names, 60*time.Second)
	seen := map[string]string{}
	for _, n := range names {
		z := zoneOf[got[n].Spec.NodeName]
		if o, dup := seen[z]; dup {
			t.Errorf("%s and %s bound in zone %s", o, n, z)
		}
		seen[z] = n
	}
	if ev := describeEvents(ctx, c, "default"); strings.Contains(ev, "anti-affinity") {
		t.Errorf("kube's InterPodAffinity filter rejected a member:\n%s", ev)
	}
}

// createAntiAffineGang creates the n pods NAME-i of gang name (queue
// batch), each wanting 4 GPUs, labelled app=name and anti-affine to the
// others on key, and returns their names.
func createAntiAffineGang(ctx context.Context, t *testing.T, c kubernetesClient, name string, n int, key string) []string {
	t.Helper()
	anti := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, TopologyKey: key}}}}
	var names []string
	for i := range n {
		pod := fmt.Sprintf("%s-%d", name, i)
		names = append(names, pod)
		createPod(ctx, t, c, podSpec{Name: pod, SchedulerName: schedModeName, GPUs: 4, Affinity: anti,
			Labels: map[string]string{gangLabelKey: name, plugin.DefaultGangSizeKey: fmt.Sprint(n), queueLabel: "batch", "app": name}})
	}
	return names
}
