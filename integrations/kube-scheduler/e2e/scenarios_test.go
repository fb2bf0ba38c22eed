package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/gpusched/gpusched/integrations/kube-scheduler/plugin"
)

const (
	spineLabel   = "network.gpusched.io/spine"
	torLabel     = "network.gpusched.io/tor"
	poolLabel    = "e2e.gpusched.io/pool"
	h100         = "NVIDIA-H100-80GB-HBM3"
	indicesKey   = plugin.DefaultGPUIndicesAnnotation
	gangLabelKey = plugin.DefaultGangLabel
)

// schedulerConfig has three profiles in one scheduler: the stock
// default-scheduler as the control, and gpusched with the topology-tiered and
// the FGD policies. gpusched binds its pods itself (its GPU indices in the
// Binding); gpusched-fgd leaves binding to DefaultBinder and writes the
// indices in PreBind, so both ways are tested.
//
// Two GPUSched profiles in one process are safe here because they never
// share nodes. Each profile keeps its own ledger and learns of the other's
// pods only once they are bound, so two of them placing pods on the same
// nodes at once could both count the same GPUs free (see README, Limits). In
// these scenarios no two GPUSched profiles ever have pods at the same time:
// every scenario starts a fresh control plane and gives its GPU pods to one
// of them, and FGDStrandsFewerGPUsThanDefault also pins gpusched-fgd's pods
// to pool b by node selector (the default-scheduler control uses pool a).
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: gpusched
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      enabled:
      - name: GPUSched
        weight: 100
    bind:
      enabled:
      - name: GPUSched
  pluginConfig:
  - name: GPUSched
    args:
      policy: topology
      gangTimeoutSeconds: 20
      topologyLevels:
      - name: spine
        nodeLabel: network.gpusched.io/spine
      - name: tor
        nodeLabel: network.gpusched.io/tor
- schedulerName: gpusched-fgd
  percentageOfNodesToScore: 100
  plugins:
    multiPoint:
      enabled:
      - name: GPUSched
        weight: 100
  pluginConfig:
  - name: GPUSched
    args:
      policy: fgd
      workload:
      - {gpus: 1, weight: 1}
      - {gpus: 8, weight: 1}
`

type scenario struct {
	name string
	run  func(ctx context.Context, t *testing.T, cp *controlPlane, start func())
}

var scenarios = []scenario{
	{"GangInOneToR", testGangInOneToR},
	{"FGDStrandsFewerGPUsThanDefault", testFGDStrandsFewer},
	{"UnfitPodGetsExplanation", testUnfitPodExplained},
	{"PriorityOnFullCluster", testPriorityOnFullCluster},
}

// TestEndToEnd runs every scenario against a fresh etcd and kube-apiserver,
// with the scheduler in this process and as the built binary.
func TestEndToEnd(t *testing.T) {
	runScenarios(t, scenarios, schedulerConfig, nil)
}

// runScenarios runs each scenario against a fresh control plane (prepared
// by setup, if given) with the scheduler of config in this process and as
// the built binary.
func runScenarios(t *testing.T, list []scenario, config string, setup func(ctx context.Context, t *testing.T, cp *controlPlane)) {
	type runner struct {
		name string
		run  func(t *testing.T) schedulerRunner
	}
	runners := []runner{
		{"in-process", func(*testing.T) schedulerRunner {
			return runInProcess(app.WithPlugin(plugin.Name, plugin.New))
		}},
		{"binary", func(t *testing.T) schedulerRunner {
			if testing.Short() && os.Getenv("GPUSCHED_KUBE_SCHEDULER") == "" {
				t.Skip("-short: not building the kube-scheduler binary")
			}
			return runBinary(schedulerBinary(t))
		}},
	}
	for _, r := range runners {
		t.Run(r.name, func(t *testing.T) {
			for _, sc := range list {
				t.Run(sc.name, func(t *testing.T) {
					run := r.run(t)
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					defer cancel()
					cp := startControlPlane(t)
					t.Cleanup(func() { configz.Delete("componentconfig") })
					if setup != nil {
						setup(ctx, t, cp)
					}
					sc.run(ctx, t, cp, func() { run(t, cp, config) })
					if testing.Verbose() {
						t.Log(describeEvents(ctx, cp.Client, ""))
					}
				})
			}
		})
	}
}

// testGangInOneToR: a 4-pod gang that requires one ToR lands inside the one
// ToR that can hold it, and no member binds before all of them can.
func testGangInOneToR(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	// spine s1: tor-a {a1, a2}, tor-b {b1, b2}; spine s2: tor-c {c1}.
	for _, n := range []struct{ name, spine, tor string }{
		{"a1", "s1", "tor-a"}, {"a2", "s1", "tor-a"}, {"b1", "s1", "tor-b"}, {"b2", "s1", "tor-b"}, {"c1", "s2", "tor-c"},
	} {
		createNode(ctx, t, c, nodeSpec{Name: n.name, GPUs: 8, Product: h100, Labels: map[string]string{spineLabel: n.spine, torLabel: n.tor}})
	}
	// Busy GPUs, bound directly: tor-a keeps 2+4 free, tor-c 4.
	for _, f := range []struct {
		node string
		gpus int
	}{{"a1", 6}, {"a2", 4}, {"c1", 4}} {
		createBoundPod(ctx, t, c, "busy-"+f.node, f.node, f.gpus)
	}
	start()

	member := func(i int) podSpec {
		return podSpec{
			Name: fmt.Sprintf("train-%d", i), SchedulerName: "gpusched", GPUs: 4, CPU: "8",
			Labels: map[string]string{gangLabelKey: "train", plugin.DefaultGangSizeKey: "4", plugin.DefaultGangTopologyKey: "tor"},
		}
	}
	for i := range 3 {
		createPod(ctx, t, c, member(i))
	}
	// Three of four members exist: none may bind.
	assertNoneBound(ctx, t, c, "default", []string{"train-0", "train-1", "train-2"}, time.Second)
	createPod(ctx, t, c, member(3))
	names := []string{"train-0", "train-1", "train-2", "train-3"}
	got := waitBound(ctx, t, c, "default", names, 60*time.Second)
	used := map[string][]int{}
	for _, n := range names {
		p := got[n]
		if node := p.Spec.NodeName; node != "b1" && node != "b2" {
			t.Errorf("%s bound to %s, outside tor-b (the only ToR with 16 free GPUs)", n, node)
		}
		idx := indices(t, p)
		if len(idx) != 4 {
			t.Errorf("%s: %s=%q, want 4 GPU indices", n, indicesKey, p.Annotations[indicesKey])
		}
		for _, i := range idx {
			if slices.Contains(used[p.Spec.NodeName], i) {
				t.Errorf("%s: GPU %d of %s given twice", n, i, p.Spec.NodeName)
			}
			used[p.Spec.NodeName] = append(used[p.Spec.NodeName], i)
		}
	}
	if !hasEvent(ctx, t, c, "default", "train-0", plugin.ReasonGangPlaced, "in tor tor-b") {
		t.Errorf("no %s event naming tor-b on train-0\n%s", plugin.ReasonGangPlaced, describeEvents(ctx, c, "default"))
	}

	// A second gang of 4×4 GPUs in one ToR fits nowhere now (tor-a has 6
	// free, tor-b none, tor-c 4): it must never bind, not even partly,
	// although 10 GPUs are free in the cluster.
	var big []string
	for i := range 4 {
		p := member(i)
		p.Name = fmt.Sprintf("big-%d", i)
		p.Labels = map[string]string{gangLabelKey: "big", plugin.DefaultGangSizeKey: "4", plugin.DefaultGangTopologyKey: "tor"}
		createPod(ctx, t, c, p)
		big = append(big, p.Name)
	}
	assertNoneBound(ctx, t, c, "default", big, 2*time.Second)
	msg := waitEvent(ctx, t, c, "default", "big-0", plugin.ReasonUnschedulable)
	if !strings.HasPrefix(msg, "job default/big: needs 16 GPUs") || !strings.Contains(msg, "in one tor") {
		t.Errorf("explanation %q: want gpusched's explanation of a 16-GPU gang in one tor", msg)
	}
}

// testFGDStrandsFewer places the same pod sequence with the stock scheduler
// (pool a) and with gpusched's FGD policy (pool b) and compares the GPUs left
// stranded for 8-GPU pods.
func testFGDStrandsFewer(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	for _, pool := range []string{"a", "b"} {
		for i := range 4 {
			createNode(ctx, t, c, nodeSpec{Name: fmt.Sprintf("%s%d", pool, i), GPUs: 8, Product: h100, CPU: "64",
				Labels: map[string]string{poolLabel: pool}})
		}
	}
	start()
	type result struct {
		stranded, placed8 int
		annotated         int
		// scheduledBy counts the Scheduled events by reporting profile.
		scheduledBy map[string]int
	}
	runPool := func(pool, scheduler string) result {
		ns := "pool-" + pool
		createNamespace(ctx, t, c, ns)
		sel := map[string]string{poolLabel: pool}
		// 12 one-GPU pods, one after another.
		for i := range 12 {
			p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("small-%02d", i), Namespace: ns, SchedulerName: scheduler,
				GPUs: 1, CPU: "4", NodeSelector: sel})
			waitBound(ctx, t, c, ns, []string{p.Name}, 30*time.Second)
		}
		// Then three 8-GPU pods, each placed or turned away.
		var large []string
		for i := range 3 {
			p := createPod(ctx, t, c, podSpec{Name: fmt.Sprintf("large-%d", i), Namespace: ns, SchedulerName: scheduler,
				GPUs: 8, CPU: "16", NodeSelector: sel})
			large = append(large, p.Name)
		}
		waitSettled(ctx, t, c, ns, large)
		r := result{scheduledBy: map[string]int{}}
		used := map[string]int{}
		for _, p := range listPods(ctx, t, c, ns) {
			if p.Spec.NodeName == "" {
				continue
			}
			evs, err := podEvents(ctx, c, ns, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Reason == "Scheduled" {
					r.scheduledBy[e.ReportingController]++
				}
			}
			used[p.Spec.NodeName] += gpuRequest(&p)
			if strings.HasPrefix(p.Name, "large-") {
				r.placed8++
			}
			if p.Annotations[indicesKey] != "" {
				r.annotated++
			}
		}
		for i := range 4 {
			if free := 8 - used[fmt.Sprintf("%s%d", pool, i)]; free < 8 {
				r.stranded += free // free GPUs an 8-GPU pod cannot use
			}
		}
		t.Logf("%s (%s): %d of 3 eight-GPU pods placed, %d GPUs stranded, per node %v", scheduler, pool, r.placed8, r.stranded, used)
		return r
	}
	def := runPool("a", "default-scheduler")
	fgd := runPool("b", "gpusched-fgd")
	if fgd.stranded >= def.stranded {
		t.Errorf("FGD stranded %d GPUs, default-scheduler %d: want fewer", fgd.stranded, def.stranded)
	}
	if fgd.placed8 <= def.placed8 {
		t.Errorf("FGD placed %d eight-GPU pods, default-scheduler %d: want more", fgd.placed8, def.placed8)
	}
	// The pods gpusched bound carry the GPU indices; the control's do not.
	if def.annotated != 0 {
		t.Errorf("%d pods bound by default-scheduler carry %s", def.annotated, indicesKey)
	}
	if want := 12 + fgd.placed8; fgd.annotated != want {
		t.Errorf("%d pods bound by gpusched carry %s, want %d", fgd.annotated, indicesKey, want)
	}
	// And the scheduler reports each binding under the profile that made it.
	if want := map[string]int{"default-scheduler": 12 + def.placed8}; !maps.Equal(def.scheduledBy, want) {
		t.Errorf("control pods' Scheduled events by profile: %v, want %v", def.scheduledBy, want)
	}
	if want := map[string]int{"gpusched-fgd": 12 + fgd.placed8}; !maps.Equal(fgd.scheduledBy, want) {
		t.Errorf("gpusched pods' Scheduled events by profile: %v, want %v", fgd.scheduledBy, want)
	}
}

// testUnfitPodExplained: a pod that fits nowhere gets an event whose message is
// gpusched's explanation, and the scheduler's FailedScheduling event carries it.
func testUnfitPodExplained(ctx context.Context, t *testing.T, cp *controlPlane, start func()) {
	c := cp.Client
	createNode(ctx, t, c, nodeSpec{Name: "n1", GPUs: 8, Product: h100, Labels: map[string]string{torLabel: "t1"}})
	createNode(ctx, t, c, nodeSpec{Name: "n2", GPUs: 8, Product: h100, Labels: map[string]string{torLabel: "t1"}})
	createBoundPod(ctx, t, c, "busy-1", "n1", 4)
	createBoundPod(ctx, t, c, "busy-2", "n2", 3)
	start()
	createPod(ctx, t, c, podSpec{Name: "wide", SchedulerName: "gpusched", GPUs: 6})
	assertNoneBound(ctx, t, c, "default", []string{"wide"}, time.Second)
	msg := waitEvent(ctx, t, c, "default", "wide", plugin.ReasonUnschedulable)
	// 9 GPUs are free, but at most 5 on one host.
	if !strings.HasPrefix(msg, "job default/wide: needs 6 GPUs") || !strings.Contains(msg, "fragmentation") {
		t.Errorf("explanation %q: want gpusched's explanation of 6 GPUs on one host, blamed on fragmentation", msg)
	}
	failed := waitEvent(ctx, t, c, "default", "wide", "FailedScheduling")
	if !strings.Contains(failed, msg) {
		t.Errorf("FailedScheduling %q does not carry the explanation %q", failed, msg)
	}
	// A pod that fits is placed on the host with the fewest free GPUs that
	// holds it (n2 has 5 free, n1 4): it is gpusched's placement.
	createPod(ctx, t, c, podSpec{Name: "fits", SchedulerName: "gpusched", GPUs: 4})
	got := waitBound(ctx, t, c, "default", []string{"fits"}, 30*time.Second)
	if n := got["fits"].Spec.NodeName; n != "n1" {
		t.Errorf("4-GPU pod bound to %s, want n1 (best fit: exactly 4 free)", n)
	}
	if idx := indices(t, got["fits"]); len(idx) != 4 {
		t.Errorf("fits: %s=%q, want 4 indices", indicesKey, got["fits"].Annotations[indicesKey])
	}
}

// createBoundPod creates a pod already bound to node (no scheduler involved).
func createBoundPod(ctx context.Context, t *testing.T, c kubernetesClient, name, node string, gpus int) {
	t.Helper()
	q := *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName: node,
			Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{gpuResource: q}, Limits: v1.ResourceList{gpuResource: q}}}},
		},
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create bound pod %s: %v", name, err)
	}
}

func gpuRequest(p *v1.Pod) int {
	n := 0
	for _, ct := range p.Spec.Containers {
		if q, ok := ct.Resources.Requests[gpuResource]; ok {
			n += int(q.Value())
		}
	}
	return n
}

func indices(t *testing.T, p *v1.Pod) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(p.Annotations[indicesKey], ",") {
		if f == "" {
			continue
		}
		i, err := strconv.Atoi(f)
		if err != nil {
			t.Errorf("%s: bad %s %q", p.Name, indicesKey, p.Annotations[indicesKey])
			return nil
		}
		out = append(out, i)
	}
	return out
}

// assertNoneBound waits until the scheduler has turned every named pod away
// (a FailedScheduling event each), then watches them for d more: none may
// get a node.
func assertNoneBound(ctx context.Context, t *testing.T, c kubernetesClient, ns string, names []string, d time.Duration) {
	t.Helper()
	waitSettled(ctx, t, c, ns, names)
	deadline := time.Now().Add(d)
	for {
		for _, n := range names {
			p, err := c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				t.Fatalf("%s bound to %s: want no member bound\n%s", n, p.Spec.NodeName, describeEvents(ctx, c, ns))
			}
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitSettled waits until each named pod is bound or the scheduler reported
// it unschedulable.
func waitSettled(ctx context.Context, t *testing.T, c kubernetesClient, ns string, names []string) {
	t.Helper()
	err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			p, err := c.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName != "" {
				continue
			}
			evs, err := podEvents(ctx, c, ns, n)
			if err != nil {
				return false, err
			}
			if !slices.ContainsFunc(evs, func(e v1.Event) bool { return e.Reason == "FailedScheduling" }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods %v neither bound nor reported unschedulable: %v\n%s", names, err, describeEvents(ctx, c, ns))
	}
}

// waitEvent waits for an event with reason about pod and returns its message.
func waitEvent(ctx context.Context, t *testing.T, c kubernetesClient, ns, pod, reason string) string {
	t.Helper()
	var msg string
	err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := podEvents(ctx, c, ns, pod)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Reason == reason {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event for %s: %v\n%s", reason, pod, err, describeEvents(ctx, c, ns))
	}
	return msg
}

func hasEvent(ctx context.Context, t *testing.T, c kubernetesClient, ns, pod, reason, substr string) bool {
	t.Helper()
	err := waitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := podEvents(ctx, c, ns, pod)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Reason == reason && strings.Contains(e.Message, substr) {
				return true, nil
			}
		}
		return false, nil
	})
	return err == nil
}
