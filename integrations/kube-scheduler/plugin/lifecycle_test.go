package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusched/gpusched/queue"
)

// boundPod is a scheduler-mode pod bound to node on the given GPU indices.
func boundPod(name, node string, gpus int, indices string, labels map[string]string) *v1.Pod {
	p := schedPod(name, gpus, labels)
	p.Spec.NodeName = node
	p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: indices}
	return p
}

// terminating returns a copy of p being deleted (grace period running).
func terminating(p *v1.Pod, at time.Time) *v1.Pod {
	q := p.DeepCopy()
	ts := metav1.NewTime(at)
	q.DeletionTimestamp = &ts
	return q
}

// withPhase returns a copy of p in phase ph.
func withPhase(p *v1.Pod, ph v1.PodPhase) *v1.Pod {
	q := p.DeepCopy()
	q.Status.Phase = ph
	return q
}

func without(pods []*v1.Pod, names ...string) []*v1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p *v1.Pod) bool { return slices.Contains(names, p.Name) })
}

func replace(pods []*v1.Pod, q *v1.Pod) []*v1.Pod {
	out := slices.Clone(pods)
	for i, p := range out {
		if p.Name == q.Name {
			out[i] = q
		}
	}
	return out
}

// TestHostTerminatingPodHoldsGPUs (issue 26, defect 2): node n1 runs A
// (checkpointed a minute ago) and B (never checkpointed), 4 GPUs each; P
// (priority 100, 4 GPUs) arrives. gpusched evicts A; while A terminates
// its GPUs stay held (kube still counts A on n1: P placed there would
// fail NodeResourcesFit and kube's own preemption would pick B); once A's
// pod object is gone P gets A's GPUs, and B runs on untouched.
func TestHostTerminatingPodHoldsGPUs(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	a := boundPod("a", "n1", 4, "0,1,2,3", nil)
	b := boundPod("b", "n1", 4, "4,5,6,7", nil)
	io.pods = []*v1.Pod{a, b}
	h.cycle(ctx)
	io.clock = io.clock.Add(time.Hour)
	a = a.DeepCopy()
	a.Annotations[DefaultCheckpointKey] = io.clock.Add(-time.Minute).Format(time.RFC3339)
	io.pods = []*v1.Pod{a, b}
	h.cycle(ctx)
	p := schedPod("p", 4, nil)
	prio := int32(100)
	p.Spec.Priority = &prio
	io.pods = append(io.pods, p)
	for range 3 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if !slices.Equal(io.evicted, []string{"a"}) {
		t.Fatalf("evicted %v, want a (least work lost); p: %q activated %v events %v", io.evicted, io.pending["p"], io.activated, io.events)
	}
	io.pods = replace(io.pods, terminating(a, io.clock))
	for range 3 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
		if got, ok := h.assignmentOf(p.UID); ok {
			t.Fatalf("p placed on %s %v while a still terminates there", got.node, got.gpus)
		}
	}
	if st, ok := h.s.Job("default/a"); !ok || !st.State.Holding() {
		t.Fatalf("a terminating: job %+v %v, want still holding its GPUs", st, ok)
	}
	io.pods = without(io.pods, "a")
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if got, ok := h.assignmentOf(p.UID); !ok || got.node != "n1" || formatIndices(got.gpus) != "0,1,2,3" {
		t.Fatalf("p after a is gone: %+v %v, want n1 0,1,2,3", got, ok)
	}
	if st, ok := h.s.Job("default/b"); !ok || st.State != queue.Running {
		t.Errorf("b: %+v %v, want running", st, ok)
	}
	if len(io.evicted) != 1 {
		t.Errorf("evicted %v, want a only", io.evicted)
	}
}

// TestHostVanishedPodIsNotAFinish (issue 26, defect 2): a running pod
// deleted by someone else (kube's DefaultPreemption, an operator) without
// gpusched evicting it and without finishing is not booked as a clean
// finish; a pod that succeeded is, one that failed is booked failed.
func TestHostVanishedPodIsNotAFinish(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{
		boundPod("gone", "n1", 2, "0,1", nil),
		boundPod("ok", "n1", 2, "2,3", nil),
		boundPod("bad", "n1", 2, "4,5", nil),
		boundPod("okdel", "n1", 2, "6,7", nil),
	}
	h.cycle(ctx)
	io.clock = io.clock.Add(time.Second)
	io.pods = []*v1.Pod{withPhase(io.pods[1], v1.PodSucceeded), withPhase(io.pods[2], v1.PodFailed), io.pods[3]}
	// okdel succeeded and was deleted before a cycle saw it: the informer's
	// final state says so.
	h.forget(withPhase(boundPod("okdel", "n1", 2, "6,7", nil), v1.PodSucceeded))
	io.pods = io.pods[:2]
	h.cycle(ctx)
	want := map[string]queue.State{"default/gone": queue.Cancelled, "default/ok": queue.Succeeded, "default/bad": queue.Failed, "default/okdel": queue.Succeeded}
	for id, st := range want {
		if got := h.ends.last[id]; got != st {
			t.Errorf("job %s booked %v, want %v", id, got, st)
		}
	}
	if h.ends.count[queue.Succeeded] != 2 {
		t.Errorf("clean finishes %d, want 2 (%v)", h.ends.count[queue.Succeeded], h.ends.last)
	}
}

// TestPostFilterOrder (issue 26, defect 2): scheduler mode refuses a
// profile in which another PostFilter plugin (DefaultPreemption) runs
// before GPUSched, naming it; a refusing host plans nothing, evicts
// nothing, and says why on every pod.
func TestPostFilterOrder(t *testing.T) {
	if err := postFilterConflict("gpusched", []string{"DefaultPreemption", Name}); err == nil || !strings.Contains(err.Error(), "DefaultPreemption") || !strings.Contains(err.Error(), "gpusched") {
		t.Errorf("DefaultPreemption before GPUSched: %v, want an error naming it and the profile", err)
	}
	if err := postFilterConflict("gpusched", []string{"DynamicResources", "DefaultPreemption", Name}); err == nil || strings.Contains(err.Error(), "DynamicResources") {
		t.Errorf("DynamicResources and DefaultPreemption before GPUSched: %v, want an error naming DefaultPreemption only", err)
	}
	for _, ok := range [][]string{{Name}, {Name, "Other"}, {"DynamicResources", Name}, nil} {
		if err := postFilterConflict("gpusched", ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.check = func() error { return postFilterConflict("gpusched", []string{"DefaultPreemption", Name}) }
	io.pods = []*v1.Pod{schedPod("p", 1, nil)}
	h.lead.lead()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for h.waitingReason(io.pods[0].UID) == defaultWaiting && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if r := h.waitingReason(io.pods[0].UID); !strings.Contains(r, "DefaultPreemption") {
		t.Errorf("reason %q, want the profile error", r)
	}
	if len(io.activated) != 0 || len(io.evicted) != 0 {
		t.Errorf("a refusing host activated %v, evicted %v", io.activated, io.evicted)
	}
	if h.s != nil {
		t.Error("a refusing host built a Scheduler")
	}
}

// TestDeploySchedulerModeDisablesDefaultPreemption (issue 26, defect 2):
// the scheduler-mode profile of deploy/ disables DefaultPreemption and
// delays its caches until it leads.
func TestDeploySchedulerModeDisablesDefaultPreemption(t *testing.T) {
	cfg := deploySchedulerConfig(t, "scheduler-mode.yaml")
	if !cfg.DelayCacheUntilActive {
		t.Error("delayCacheUntilActive is not true")
	}
	for _, pr := range cfg.Profiles {
		if !slices.ContainsFunc(pr.Plugins.PostFilter.Disabled, func(p namedPlugin) bool { return p.Name == "DefaultPreemption" || p.Name == "*" }) {
			t.Errorf("profile %s: postFilter does not disable DefaultPreemption", pr.SchedulerName)
		}
	}
}

type namedPlugin struct {
	Name string `yaml:"name"`
}

// schedulerConfig is the part of a KubeSchedulerConfiguration the deploy
// tests read.
type schedulerConfig struct {
	DelayCacheUntilActive bool `yaml:"delayCacheUntilActive"`
	Profiles              []struct {
		SchedulerName string `yaml:"schedulerName"`
		Plugins       struct {
			PostFilter struct {
				Disabled []namedPlugin `yaml:"disabled"`
			} `yaml:"postFilter"`
		} `yaml:"plugins"`
	} `yaml:"profiles"`
}

// deploySchedulerConfig reads the scheduler configuration carried by the
// ConfigMap gpusched-scheduler-config of deploy/FILE.
func deploySchedulerConfig(t *testing.T, file string) schedulerConfig {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", file))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var obj struct {
			Kind     string                `yaml:"kind"`
			Metadata struct{ Name string } `yaml:"metadata"`
			Data     map[string]string     `yaml:"data"`
		}
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%s: no ConfigMap gpusched-scheduler-config: %v", file, err)
		}
		if obj.Kind != "ConfigMap" || obj.Metadata.Name != "gpusched-scheduler-config" {
			continue
		}
		var cfg schedulerConfig
		if err := yaml.Unmarshal([]byte(obj.Data["scheduler-config.yaml"]), &cfg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return cfg
	}
}

// TestHostGangMemberFailureKeepsSurvivorsGPUs (issue 26, defect 3): a
// 2-pod gang runs on n1 and n2; one member fails. The gang is not ended:
// the survivor keeps running and its node is given to no one, and the
// survivor is never marked pending. Once the survivor ends too the job is
// booked Failed and its GPUs go to the waiting pod.
func TestHostGangMemberFailureKeepsSurvivorsGPUs(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g)}
	h.cycle(ctx)
	bindAll(t, h, io)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if st, _ := h.s.Job("default/gang/g"); st.State != queue.Running {
		t.Fatalf("gang %v, want running", st.State)
	}
	io.pods = append(replace(io.pods, withPhase(io.pods[1], v1.PodFailed)), schedPod("s", 8, nil))
	clear(io.pending)
	for range 3 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if a, ok := h.assignmentOf("uid-s"); ok {
		t.Fatalf("s placed on %s while the gang's survivor runs", a.node)
	}
	if st, ok := h.s.Job("default/gang/g"); !ok || st.State != queue.Running {
		t.Fatalf("gang after a member failed: %+v %v, want running", st, ok)
	}
	if m, ok := io.pending["g-0"]; ok {
		t.Errorf("the running survivor g-0 was marked pending: %q", m)
	}
	io.pods = replace(io.pods, withPhase(io.pods[0], v1.PodSucceeded))
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if got := h.ends.last["default/gang/g"]; got != queue.Failed {
		t.Errorf("gang booked %v, want failed", got)
	}
	if _, ok := h.assignmentOf("uid-s"); !ok {
		t.Errorf("s not placed once the gang ended")
	}
}

// TestHostDevicePluginRestartIsNotNodeLoss (issue 26, defect 5): kubelet
// reports allocatable GPUs 0 on n1 (capacity 8) while the device plugin
// registers again. With deleteOnRecovery the pod running there is not
// deleted nor recovered, keeps its GPUs, and no new pod goes to n1; when
// the GPUs come back a waiting pod binds there. A node still without GPUs
// after the grace leaves (its pods are recovered).
func TestHostDevicePluginRestartIsNotNodeLoss(t *testing.T) {
	n1 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n1)
	h.args.DeleteOnRecovery = true
	ctx := context.Background()
	io.pods = []*v1.Pod{boundPod("run", "n1", 4, "0,1,2,3", nil)}
	h.cycle(ctx)
	restarting := n1.DeepCopy()
	restarting.Status.Allocatable[DefaultGPUResource] = resource.MustParse("0")
	io.nodes = []*v1.Node{restarting}
	io.pods = append(io.pods, schedPod("new", 2, nil))
	for range 30 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if len(io.deleted) != 0 || slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, ReasonRecovery) }) {
		t.Fatalf("device plugin restart: deleted %v, events %v", io.deleted, io.events)
	}
	if a, ok := h.assignmentOf("uid-new"); ok {
		t.Fatalf("new placed on %s while its GPUs are unavailable", a.node)
	}
	if st, ok := h.s.Job("default/run"); !ok || st.State != queue.Running {
		t.Fatalf("run: %+v %v, want running", st, ok)
	}
	io.nodes = []*v1.Node{n1}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if a, ok := h.assignmentOf("uid-new"); !ok || a.node != "n1" || slices.ContainsFunc(a.gpus, func(g int) bool { return g < 4 }) {
		t.Fatalf("new after the GPUs came back: %+v %v", a, ok)
	}
	// Gone for longer than the grace: the node leaves, its pods are
	// recovered (deleted, with deleteOnRecovery).
	bindAll(t, h, io)
	io.nodes = []*v1.Node{restarting}
	for range int(h.args.GPUUnavailableGraceSeconds) + 5 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if !slices.Contains(io.deleted, "run") {
		t.Errorf("after the grace: deleted %v, want run recovered", io.deleted)
	}
}

// TestHostGatedPodsHoldNothing (issue 26, defect 6): a pod with
// spec.schedulingGates is not planned and holds no GPUs: a later pod
// gets the node; once its gates are removed it is planned.
func TestHostGatedPodsHoldNothing(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	gated := schedPod("gated", 8, nil)
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
	io.pods = []*v1.Pod{gated}
	h.cycle(ctx)
	if _, ok := h.assignmentOf(gated.UID); ok || h.s.Len() != 0 {
		t.Fatalf("a gated pod was planned (%d jobs)", h.s.Len())
	}
	later := schedPod("later", 8, nil)
	later.CreationTimestamp = metav1.Unix(1e9+1, 0)
	io.pods = append(io.pods, later)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.assignmentOf(later.UID); !ok {
		t.Fatal("later waits behind a gated pod")
	}
	bindAll(t, h, io)
	ungated := gated.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	io.pods = replace(io.pods, ungated)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if st, ok := h.s.Job("default/gated"); !ok || st.State.Holding() {
		t.Errorf("ungated pod: %+v %v, want a waiting job", st, ok)
	}
}

// TestHostAdmitTimeout (issue 26, defect 6): a job bound by a cycle whose
// pod is not bound within admitTimeoutSeconds is released: its pod is
// rejected at Permit and told why.
func TestHostAdmitTimeout(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.args.AdmitTimeoutSeconds = 60
	ctx := context.Background()
	io.pods = []*v1.Pod{schedPod("stuck", 8, nil)}
	h.cycle(ctx)
	if _, ok := h.assignmentOf("uid-stuck"); !ok {
		t.Fatal("stuck not planned")
	}
	for range 62 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if !slices.Contains(io.rejected, "uid-stuck") || !slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, "AdmitTimeout") }) {
		t.Errorf("after the admit timeout: rejected %v, events %v", io.rejected, io.events)
	}
}

// runFor runs the host's loop for d.
func runFor(h *host, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	h.run(ctx)
}

// TestHostStandbyWritesNothing (issue 26, defect 1): a scheduler whose
// informers synced but that does not lead (a standby replica) runs no
// cycle: no eviction, deletion, activation, event or status patch, though
// a preemption and pending reasons are due. Once a
// scheduling cycle shows it leads (PreFilter of the probe pod PreEnqueue
// let through), it acts.
func TestHostStandbyWritesNothing(t *testing.T) {
	bad := gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	bad.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), bad)
	h.args.DeleteOnRecovery = true
	h.args.CycleIntervalMilliseconds = 10
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	io.pods = []*v1.Pod{boundPod("low", "n1", 8, "0,1,2,3,4,5,6,7", nil), boundPod("lost", "n2", 8, "0,1,2,3,4,5,6,7", nil), high, schedPod("wait", 8, nil)}
	p := &SchedulerPlugin{h: h, args: h.args}
	ctx := context.Background()
	if s := p.PreEnqueue(ctx, high); !s.IsSuccess() {
		t.Fatalf("the probe pod: %v, want let through", s)
	}
	if s := p.PreEnqueue(ctx, io.pods[3]); s.IsSuccess() {
		t.Fatal("a second pod let through while not leading")
	}
	runFor(h, 300*time.Millisecond)
	if len(io.evicted)+len(io.deleted)+len(io.activated)+len(io.events)+len(io.pending) > 0 || h.s != nil {
		t.Fatalf("a standby acted: evicted %v deleted %v activated %v events %v pending %v", io.evicted, io.deleted, io.activated, io.events, io.pending)
	}
	if _, s := p.PreFilter(ctx, nil, high, nil); s.IsSuccess() {
		t.Error("PreFilter let an unplanned pod through")
	}
	if s := p.PreEnqueue(ctx, io.pods[3]); s.IsSuccess() {
		t.Error("a pod without a plan let through once leading")
	}
	runFor(h, 300*time.Millisecond)
	if len(io.evicted) == 0 || len(io.pending) == 0 {
		t.Errorf("the leader did not act: evicted %v deleted %v pending %v", io.evicted, io.deleted, io.pending)
	}
}

// TestHostGangPlanWrittenBeforeActivation (issue 26, defect 7): every
// member of a gang carries its node and GPU indices before any member is
// let through; a scheduler restarted when only one member was bound
// completes the gang from the plan on the pods. A plan that cannot be
// written activates nobody.
func TestHostGangPlanWrittenBeforeActivation(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n1, n2)
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	io.pods = []*v1.Pod{schedPod("g-0", 4, g), schedPod("g-1", 4, g), schedPod("g-2", 4, g)}
	h.cycle(ctx)
	want := []string{"annotate g-0", "annotate g-1", "annotate g-2", "activate g-0", "activate g-1", "activate g-2"}
	if len(io.ops) == len(want) {
		slices.Sort(io.ops[:3]) // the members' plans are written concurrently
	}
	if !slices.Equal(io.ops, want) {
		t.Fatalf("ops %v, want %v", io.ops, want)
	}
	for _, p := range io.pods {
		a, _ := h.assignmentOf(p.UID)
		if p.Annotations[PlannedNodeAnnotation] != a.node || p.Annotations[DefaultGPUIndicesAnnotation] != formatIndices(a.gpus) {
			t.Fatalf("%s: annotations %v, assignment %+v", p.Name, p.Annotations, a)
		}
	}
	// The scheduler dies after g-0 was bound; a new one completes the gang.
	b := io.pods[0].DeepCopy()
	b.Spec.NodeName = b.Annotations[PlannedNodeAnnotation]
	crashed := []*v1.Pod{b, io.pods[1], io.pods[2]}
	h2, io2 := newTestHost(t, n1, n2)
	io2.pods = crashed
	h2.cycle(ctx)
	if !slices.Equal(io2.activated, []string{"g-1", "g-2"}) {
		t.Fatalf("restarted: activated %v, want g-1 g-2 on their plan; pending %v", io2.activated, io2.pending)
	}
	for _, p := range crashed[1:] {
		if a, ok := h2.assignmentOf(p.UID); !ok || a.node != p.Annotations[PlannedNodeAnnotation] {
			t.Errorf("%s: %+v %v, want its planned node", p.Name, a, ok)
		}
	}
	// A plan that cannot be written: nobody is activated.
	h3, io3 := newTestHost(t, n1, n2)
	io3.annotErr = fmt.Errorf("the apiserver is away")
	io3.pods = []*v1.Pod{schedPod("g-0", 4, g), schedPod("g-1", 4, g), schedPod("g-2", 4, g)}
	h3.cycle(ctx)
	if len(io3.activated) != 0 {
		t.Errorf("activated %v without their plan", io3.activated)
	}
}

// TestSchedulerBindRefusesWithdrawnPlan (issue 26, defect 8): a pod whose
// job's binding was withdrawn between PreBind and Bind is not left to
// DefaultBinder (which would bind it without its GPU indices).
func TestSchedulerBindRefusesWithdrawnPlan(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io.pods = []*v1.Pod{schedPod("p", 2, nil)}
	h.cycle(context.Background())
	p := &SchedulerPlugin{h: h, args: h.args}
	a, ok := h.assignmentOf("uid-p")
	if !ok {
		t.Fatal("p not planned")
	}
	if st := p.Bind(context.Background(), nil, io.pods[0], a.node); !st.IsSkip() {
		t.Fatalf("planned pod without GPUSched binding first: %v, want Skip", st)
	}
	h.unreserve("uid-p")
	if st := p.Bind(context.Background(), nil, io.pods[0], a.node); st.IsSkip() || st.IsSuccess() {
		t.Errorf("withdrawn plan: Bind %v, want a refusal (not Skip to DefaultBinder)", st)
	}
}

// TestHostNodeConstraints (issue 26, defect 4): a pod restricted to n2
// (node selector), and one that does not tolerate n1's taint, are planned
// on n2 though n1 comes first; a node kube-scheduler rejected for a pod
// (PostFilter) is excluded for its job, with the reason in its pending
// message, until a backoff ends, and the job is planned elsewhere.
func TestHostNodeConstraints(t *testing.T) {
	n1 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	n1.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infer", Effect: v1.TaintEffectNoSchedule}}
	n2 := gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", map[string]string{"zone": "b"})
	h, io := newTestHost(t, n1, n2)
	ctx := context.Background()
	sel := schedPod("sel", 4, nil)
	sel.Spec.NodeSelector = map[string]string{"zone": "b"}
	sel.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	io.pods = []*v1.Pod{sel}
	h.cycle(ctx)
	if a, ok := h.assignmentOf(sel.UID); !ok || a.node != "n2" {
		t.Fatalf("sel (nodeSelector zone=b): %+v %v, want n2", a, ok)
	}
	bindAll(t, h, io)
	untol := schedPod("untol", 4, nil)
	io.pods = append(io.pods, untol)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if a, ok := h.assignmentOf(untol.UID); !ok || a.node != "n2" {
		t.Fatalf("untol (no toleration of n1's taint): %+v %v, want n2", a, ok)
	}
	bindAll(t, h, io)

	// kube rejects n1 for tol (which tolerates the taint); the job is
	// planned elsewhere or waits saying why, and is not let through to
	// n1 again before the backoff ends.
	h2, io2 := newTestHost(t, n1, gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	tol := schedPod("tol", 8, nil)
	tol.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	io2.pods = []*v1.Pod{tol}
	h2.cycle(ctx)
	a, ok := h2.assignmentOf(tol.UID)
	if !ok {
		t.Fatal("tol not planned")
	}
	first := a.node
	h2.exclude(tol.UID, first, "NodeResourcesFit: Insufficient cpu", io2.clock)
	h2.unreserve(tol.UID)
	io2.clock = io2.clock.Add(time.Second)
	h2.cycle(ctx)
	if a, ok := h2.assignmentOf(tol.UID); !ok || a.node == first {
		t.Fatalf("after kube rejected %s: %+v %v, want the other node", first, a, ok)
	}
	// Both nodes rejected: it waits with the reasons, and is not let
	// through again within the backoff.
	a, _ = h2.assignmentOf(tol.UID)
	h2.exclude(tol.UID, a.node, "NodeResourcesFit: Insufficient memory", io2.clock)
	h2.unreserve(tol.UID)
	n := len(io2.activated)
	for range 20 {
		io2.clock = io2.clock.Add(time.Second)
		h2.cycle(ctx)
	}
	if len(io2.activated) != n {
		t.Errorf("re-activated within the backoff: %v", io2.activated[n:])
	}
	if r := h2.waitingReason(tol.UID); !strings.Contains(r, "rejected by kube-scheduler") || !strings.Contains(r, "Insufficient cpu") {
		t.Errorf("reason %q, want the rejections", r)
	}
	for range 60 {
		io2.clock = io2.clock.Add(time.Second)
		h2.cycle(ctx)
	}
	if len(io2.activated) == n {
		t.Error("never planned again after the backoff")
	}
}

// TestExtensionPointsDoNotWaitForADecision (issue 26, defect 8): while a
// cycle decides (it holds the host's lock, here for 2 s), PreEnqueue,
// PreFilter, Filter and Reserve of the profile's pods answer at once
// instead of stalling kube-scheduler's queue behind the decision.
func TestExtensionPointsDoNotWaitForADecision(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	io.pods = []*v1.Pod{schedPod("planned", 2, nil), schedPod("other", 8, nil)}
	h.cycle(context.Background())
	h.lead.lead()
	p := &SchedulerPlugin{h: h, args: h.args}
	ctx := context.Background()
	took, ok := duringDecision(2*time.Second, h, func() {
		p.PreEnqueue(ctx, io.pods[0])
		p.PreEnqueue(ctx, io.pods[1])
		p.PreFilter(ctx, nil, io.pods[0], nil)
		p.Filter(ctx, nil, io.pods[0], nil)
		p.Reserve(ctx, nil, io.pods[0], "n1")
	})
	if !ok {
		t.Fatal("the extension points waited for the decision (2 s and more)")
	}
	t.Logf("five extension-point calls during a decision: %v", took)
}
