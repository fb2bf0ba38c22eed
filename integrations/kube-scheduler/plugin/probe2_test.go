package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/gpusched/gpusched/queue"
)

// Second round of judge-style probes of issue 26: the sequences
// followed literally, with small variations (GPU counts, event order, a
// gang instead of a pod).

func prio(p *v1.Pod, v int32) *v1.Pod { p.Spec.Priority = &v; return p }

// volumeConflict is kube's verdict that node fails VolumeBinding.
func volumeConflict(node string) fwk.NodeToStatusReader {
	st := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had volume node affinity conflict").WithPlugin("VolumeBinding")
	return schedfw.NewNodeToStatus(map[string]*fwk.Status{node: st}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
}

// TestProbe2PreemptionOneVictimUneven (defect 2): n1 runs A (prio 0, 2
// GPUs, checkpointed a minute ago) and B (prio 0, 6 GPUs, never
// checkpointed); P (prio 100, 2 GPUs) arrives. Only A is evicted; A's
// GPUs are not given to P while A's object exists (terminating); B is
// untouched and never booked; P gets A's GPUs once A is gone.
func TestProbe2PreemptionOneVictimUneven(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	a := boundPod("a", "n1", 2, "0,1", nil)
	b := boundPod("b", "n1", 6, "2,3,4,5,6,7", nil)
	io.pods = []*v1.Pod{a, b}
	step(h, io, 0)
	io.clock = io.clock.Add(2 * time.Hour)
	a = a.DeepCopy()
	a.Annotations[DefaultCheckpointKey] = io.clock.Add(-time.Minute).Format(time.RFC3339)
	io.pods = []*v1.Pod{a, b}
	step(h, io, time.Second)
	p := prio(schedPod("p", 2, nil), 100)
	io.pods = append(io.pods, p)
	for range 4 {
		step(h, io, time.Second)
	}
	if !slices.Equal(io.evicted, []string{"a"}) {
		t.Fatalf("evicted %v, want [a]; p %q", io.evicted, io.pending["p"])
	}
	// A's object stays for a while (grace period), phase still Running.
	io.pods = replace(io.pods, terminating(withPhase(a, v1.PodRunning), io.clock))
	for range 10 {
		step(h, io, 5*time.Second)
		if got, ok := h.assignmentOf(p.UID); ok {
			t.Fatalf("p given %s %v while a's pod object terminates", got.node, got.gpus)
		}
	}
	// A ends Failed (SIGTERM exit code) and then goes.
	io.pods = replace(io.pods, withPhase(terminating(a, io.clock), v1.PodFailed))
	step(h, io, time.Second)
	if got, ok := h.assignmentOf(p.UID); ok && got.node == "n1" && slices.ContainsFunc(got.gpus, func(i int) bool { return i >= 2 }) {
		t.Fatalf("p given B's GPUs %v", got.gpus)
	}
	io.pods = without(io.pods, "a")
	step(h, io, time.Second)
	if got, ok := h.assignmentOf(p.UID); !ok || formatIndices(got.gpus) != "0,1" {
		t.Errorf("p after a is gone: %+v %v, want n1 0,1", got, ok)
	}
	if st, ok := h.s.Job("default/b"); !ok || st.State != queue.Running {
		t.Errorf("b: %+v %v, want running", st, ok)
	}
	if got, ok := h.ends.last["default/b"]; ok {
		t.Errorf("b booked %v though it runs", got)
	}
	if got := h.ends.last["default/a"]; got == queue.Succeeded {
		t.Errorf("evicted a booked %v", got)
	}
	if len(io.evicted) != 1 || len(io.deleted) != 0 {
		t.Errorf("evicted %v deleted %v, want a only", io.evicted, io.deleted)
	}
}

// TestProbe2VanishedGangMemberNotAFinish (defect 2, a gang): a 2-pod gang
// runs; one member's object disappears (a plain DELETE by someone else,
// seen only as the informer's delete with phase Running), then the other
// succeeds: the gang is not a clean finish.
func TestProbe2VanishedGangMemberNotAFinish(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{boundPod("g-0", "n1", 4, "0,1,2,3", g), boundPod("g-1", "n1", 4, "4,5,6,7", g)}
	step(h, io, 0)
	h.forget(withPhase(io.pods[0], v1.PodRunning))
	io.pods = without(io.pods, "g-0")
	step(h, io, time.Second)
	io.pods = []*v1.Pod{withPhase(io.pods[0], v1.PodSucceeded)}
	step(h, io, time.Second)
	if got := h.ends.last["default/gang/g"]; got == queue.Succeeded {
		t.Errorf("gang with a member deleted by someone else booked %v", got)
	}
}

// TestProbe2FailedGangMemberSurvivorsKeep (defect 3): a 3-pod gang of 4
// GPUs each on two 8-GPU nodes plus one node; one member fails. The
// survivors keep their GPUs (a new 8-GPU pod waits; no GPU held twice) and
// are not patched PodScheduled=False; once they end, the pod runs.
func TestProbe2FailedGangMemberSurvivorsKeep(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 4, h100, nil), gpuNode("n2", 4, h100, nil), gpuNode("n3", 4, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	io.pods = []*v1.Pod{boundPod("g-0", "n1", 4, "0,1,2,3", g), boundPod("g-1", "n2", 4, "0,1,2,3", g), boundPod("g-2", "n3", 4, "0,1,2,3", g)}
	step(h, io, 0)
	io.pods = replace(io.pods, withPhase(io.pods[1], v1.PodFailed))
	io.pods = append(io.pods, schedPod("w", 4, nil))
	clear(io.pending)
	clear(io.patches)
	for range 5 {
		step(h, io, time.Second)
		if a, ok := h.assignmentOf("uid-w"); ok {
			t.Fatalf("w given %s while the gang's survivors run", a.node)
		}
	}
	for _, s := range []string{"g-0", "g-2"} {
		if n := io.patches[s]; n != 0 {
			t.Errorf("running survivor %s patched %d times (%q %q)", s, n, io.causes[s], io.pending[s])
		}
	}
	if got, ok := h.ends.last["default/gang/g"]; ok {
		t.Errorf("gang booked %v while survivors run", got)
	}
	// g-1 is deleted (its controller), survivors keep running.
	io.pods = without(io.pods, "g-1")
	for range 3 {
		step(h, io, time.Second)
	}
	if a, ok := h.assignmentOf("uid-w"); ok {
		t.Fatalf("w given %s after the failed member's object went", a.node)
	}
	io.pods = replace(replace(io.pods, withPhase(io.pods[0], v1.PodFailed)), withPhase(io.pods[1], v1.PodFailed))
	step(h, io, time.Second)
	if _, ok := h.assignmentOf("uid-w"); !ok {
		t.Errorf("w not placed once the gang ended: %q", io.pending["w"])
	}
}

// TestProbe2NodeConstraintsNeverN1 (defect 4): pods restricted to n2 by a
// nodeSelector, by required node affinity on the hostname, and by a
// NoSchedule taint on n1 they do not tolerate are never planned on n1,
// though n1 is emptier.
func TestProbe2NodeConstraintsNeverN1(t *testing.T) {
	n1 := gpuNode("n1", 8, h100, map[string]string{"zone": "a"})
	n1.Spec.Taints = []v1.Taint{{Key: "maint", Effect: v1.TaintEffectNoSchedule}}
	n2 := gpuNode("n2", 8, h100, map[string]string{"zone": "b"})
	h, io := newTestHost(t, n1, n2)
	// Exception: the NoSchedule taint would also block sel and aff; give
	// them a toleration so only their own constraint restricts them.
	tol := []v1.Toleration{{Key: "maint", Operator: v1.TolerationOpExists}}
	sel := schedPod("sel", 2, nil)
	sel.Spec.NodeSelector = map[string]string{"zone": "b"}
	sel.Spec.Tolerations = tol
	aff := schedPod("aff", 2, nil)
	aff.Spec.Tolerations = tol
	aff.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
		{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n2"}}}},
	}}}}
	untol := schedPod("untol", 2, nil)
	io.pods = []*v1.Pod{boundPod("busy", "n2", 2, "0,1", nil), sel, aff, untol}
	for range 3 {
		step(h, io, time.Second)
	}
	for _, p := range []*v1.Pod{sel, aff, untol} {
		if a, ok := h.assignmentOf(p.UID); !ok || a.node != "n2" {
			t.Errorf("%s: %+v %v, want n2; reason %q", p.Name, a, ok, io.pending[p.Name])
		}
	}
	bindAll(t, h, io)
	used(t, io.pods)
	// A 4-pod gang of 2 GPUs, nodeSelector zone b: 2 fit on n2 (2 free),
	// so it waits rather than use n1.
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	for _, name := range []string{"g-0", "g-1"} {
		m := schedPod(name, 2, g)
		m.Spec.NodeSelector = map[string]string{"zone": "b"}
		m.Spec.Tolerations = tol
		io.pods = append(io.pods, m)
	}
	step(h, io, time.Second)
	for _, name := range []string{"g-0", "g-1"} {
		if a, ok := h.assignmentOf(types.UID("uid-" + name)); ok && a.node == "n1" {
			t.Errorf("%s planned on n1, outside its nodeSelector", name)
		}
	}
}

// TestProbe2RejectedNodeExcludedBounded (defect 4): kube rejects the
// planned node (a filter gpusched does not know, e.g. a volume's zone):
// PostFilter withdraws, the next plan is elsewhere, the reason names the
// rejected node, and a minute of cycles re-activates the pod a bounded
// number of times.
func TestProbe2RejectedNodeExcludedBounded(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	io.pods = []*v1.Pod{schedPod("p", 4, nil)}
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	step(h, io, 0)
	a0, ok := h.assignmentOf("uid-p")
	if !ok {
		t.Fatal("p not planned")
	}
	pl.PostFilter(ctx, nil, io.pods[0], volumeConflict(a0.node))
	step(h, io, time.Second)
	a1, ok := h.assignmentOf("uid-p")
	if ok && a1.node == a0.node {
		t.Fatalf("p planned again on rejected %s", a0.node)
	}
	// The other node is rejected too: the pod waits with the reason, and
	// is not re-activated every cycle.
	if ok {
		pl.PostFilter(ctx, nil, io.pods[0], volumeConflict(a1.node))
	}
	step(h, io, time.Second)
	if r := io.pending["p"]; !strings.Contains(r, a0.node) {
		t.Errorf("pending reason %q does not name the rejected node %s (plan %+v)", r, a0.node, a1)
	}
	io.activated = nil
	for range 300 {
		step(h, io, 200*time.Millisecond)
		if a, ok := h.assignmentOf("uid-p"); ok {
			pl.PostFilter(ctx, nil, io.pods[0], volumeConflict(a.node))
		}
	}
	if n := len(io.activated); n > 10 {
		t.Errorf("activated %d times in a minute of rejections", n)
	}
}

// TestProbe2DevicePluginRestartLive (defect 5): a running node's device
// plugin restarts: allocatable nvidia.com/gpu 0, capacity 8 for 20 s,
// then capacity also 0 with only the GFD count label for 20 s more. With
// deleteOnRecovery nothing is deleted or recovered, no pod is placed on
// the node meanwhile, and the running job keeps its GPUs after.
func TestProbe2DevicePluginRestartLive(t *testing.T) {
	n1 := gpuNode("n1", 8, h100, nil)
	h, io := newTestHost(t, n1)
	h.args.DeleteOnRecovery = true
	run := boundPod("run", "n1", 6, "0,1,2,3,4,5", nil)
	io.pods = []*v1.Pod{run}
	step(h, io, 0)
	zero := n1.DeepCopy()
	zero.Status.Allocatable[DefaultGPUResource] = resource.MustParse("0")
	io.nodes = []*v1.Node{zero}
	io.pods = append(io.pods, schedPod("new", 2, nil))
	for range 10 {
		step(h, io, 2*time.Second)
	}
	label := zero.DeepCopy()
	label.Status.Capacity = label.Status.Capacity.DeepCopy()
	delete(label.Status.Allocatable, DefaultGPUResource)
	delete(label.Status.Capacity, DefaultGPUResource)
	io.nodes = []*v1.Node{label}
	for range 10 {
		step(h, io, 2*time.Second)
	}
	if len(io.deleted) != 0 || len(io.evicted) != 0 {
		t.Fatalf("deleted %v evicted %v during a device plugin restart; events %v", io.deleted, io.evicted, io.events)
	}
	if slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, ReasonRecovery) }) {
		t.Errorf("recovery during a device plugin restart: %v", io.events)
	}
	if a, ok := h.assignmentOf("uid-new"); ok {
		t.Errorf("new placed on %s %v while its GPUs are unavailable", a.node, a.gpus)
	}
	if st, ok := h.s.Job("default/run"); !ok || st.State != queue.Running {
		t.Errorf("run: %+v %v, want running", st, ok)
	}
	io.nodes = []*v1.Node{n1}
	step(h, io, time.Second)
	if a, ok := h.assignmentOf("uid-new"); !ok || formatIndices(a.gpus) != "6,7" {
		t.Errorf("new once GPUs are back: %+v %v, want 6,7", a, ok)
	}
}

// TestProbe2GatedPodTwoHours (defect 6): a gated 8-GPU pod created first
// and a later 4-GPU pod: the gated one is neither planned nor holding GPUs
// over two simulated hours; the later pod runs.
func TestProbe2GatedPodTwoHours(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	gated := prio(schedPod("gated", 8, nil), 50)
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	io.pods = []*v1.Pod{gated}
	step(h, io, 0)
	later := schedPod("later", 4, nil)
	io.pods = append(io.pods, later)
	for range 120 {
		step(h, io, time.Minute)
		if _, ok := h.assignmentOf(gated.UID); ok {
			t.Fatal("gated pod planned")
		}
	}
	if _, ok := h.assignmentOf(later.UID); !ok {
		t.Errorf("later waited two hours behind a gated pod: %q", io.pending["later"])
	}
	if st, ok := h.s.Job("default/gated"); ok && st.State.Holding() {
		t.Errorf("gated holds GPUs: %+v", st)
	}
}

// TestProbe2GangAdmitTimeout (defect 6, a gang): a 2-pod gang is planned;
// only one member reaches Permit and binds, the other never does. After
// admitTimeoutSeconds the gang is released (Decision.Expired): its
// waiting pod is rejected and the GPUs go to another pod.
func TestProbe2GangAdmitTimeout(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	h.args.AdmitTimeoutSeconds = 30
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g)}
	step(h, io, 0)
	if _, ok := h.assignmentOf("uid-g-0"); !ok {
		t.Fatal("gang not planned")
	}
	for range 40 {
		step(h, io, time.Second)
	}
	if !slices.Contains(io.rejected, "uid-g-0") && !slices.Contains(io.rejected, "uid-g-1") {
		t.Errorf("after the admit timeout: rejected %v, events %v", io.rejected, io.events)
	}
	if !slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, "AdmitTimeout") }) {
		t.Errorf("no AdmitTimeout event: %v", io.events)
	}
}

// TestProbe2GangPartlyBoundRestart (defect 7): a 3-pod gang of 4 GPUs;
// every member has its node and indices written before any is
// activated; the scheduler crashes after one member bound; a new one
// completes the gang from the members' annotations (same node and GPUs),
// and a later pod does not take the unbound members' GPUs.
func TestProbe2GangPartlyBoundRestart(t *testing.T) {
	nodes := []*v1.Node{gpuNode("n1", 4, h100, nil), gpuNode("n2", 4, h100, nil), gpuNode("n3", 4, h100, nil)}
	h, io := newTestHost(t, nodes...)
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	io.pods = []*v1.Pod{schedPod("g-0", 4, g), schedPod("g-1", 4, g), schedPod("g-2", 4, g)}
	step(h, io, 0)
	firstAct := slices.IndexFunc(io.ops, func(s string) bool { return strings.HasPrefix(s, "activate") })
	if firstAct < 0 {
		t.Fatalf("gang not activated: ops %v pending %v", io.ops, io.pending)
	}
	for _, name := range []string{"g-0", "g-1", "g-2"} {
		if i := slices.Index(io.ops, "annotate "+name); i < 0 || i > firstAct {
			t.Errorf("%s annotated at %d, first activation at %d: %v", name, i, firstAct, io.ops)
		}
	}
	plan := map[string]assignment{}
	for _, p := range io.pods {
		a, _ := h.assignmentOf(p.UID)
		plan[p.Name] = a
		if p.Annotations[PlannedNodeAnnotation] != a.node || p.Annotations[DefaultGPUIndicesAnnotation] != formatIndices(a.gpus) {
			t.Errorf("%s annotations %v, plan %s %v", p.Name, p.Annotations, a.node, a.gpus)
		}
	}
	// g-1 binds, then the scheduler crashes.
	b := io.pods[1].DeepCopy()
	b.Spec.NodeName = plan["g-1"].node
	io.pods[1] = b
	h2, io2 := newTestHost(t, nodes...)
	io2.pods = append(slices.Clone(io.pods), schedPod("hi", 4, nil))
	step(h2, io2, time.Second)
	for _, name := range []string{"g-0", "g-2"} {
		a, ok := h2.assignmentOf(types.UID("uid-" + name))
		if !ok || a.node != plan[name].node || formatIndices(a.gpus) != formatIndices(plan[name].gpus) {
			t.Errorf("%s after restart: %+v %v, want %s %v", name, a, ok, plan[name].node, plan[name].gpus)
		}
	}
	if a, ok := h2.assignmentOf("uid-hi"); ok {
		t.Errorf("hi given %s %v, a member's planned GPUs", a.node, a.gpus)
	}
	if len(io2.evicted) != 0 || len(io2.deleted) != 0 {
		t.Errorf("restart evicted %v deleted %v", io2.evicted, io2.deleted)
	}
}

// TestProbe2GangWithdrawnBeforeBind (defect 8): a gang member passed
// PreBind; its gang's plan is withdrawn (another member rejected) before
// Bind: Bind does not pass it on to DefaultBinder (Skip) nor succeed.
func TestProbe2GangWithdrawnBeforeBind(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g)}
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	step(h, io, 0)
	a0, ok := h.assignmentOf("uid-g-0")
	if !ok {
		t.Fatal("gang not planned")
	}
	if s := pl.PreBind(ctx, nil, io.pods[0], a0.node); !s.IsSuccess() {
		t.Fatalf("PreBind: %v", s)
	}
	// g-1's pod is deleted (its Job was scaled down) before g-0 binds:
	// the gang can no longer run whole and its plan is withdrawn.
	io.pods = without(io.pods, "g-1")
	step(h, io, time.Second)
	if a, ok := h.assignmentOf("uid-g-0"); ok && a.node == a0.node {
		t.Fatalf("plan of a gang that lost a member kept: %+v", a)
	}
	s := pl.Bind(ctx, nil, io.pods[0], a0.node)
	if s.IsSuccess() || s.IsSkip() {
		t.Errorf("Bind of a withdrawn member: %v, want a failure", s)
	}
}

// TestProbe2PreEnqueueNotBlocked (defect 8): PreEnqueue, Filter and
// Reserve of another pod do not wait for a slow decision.
func TestProbe2PreEnqueueNotBlocked(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	io.pods = []*v1.Pod{schedPod("a", 2, nil), schedPod("b", 2, nil)}
	step(h, io, 0)
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	c := schedPod("c", 1, nil)
	took, ok := duringDecision(2*time.Second, h, func() {
		for range 100 {
			pl.PreEnqueue(ctx, c)
			pl.PreEnqueue(ctx, io.pods[0])
		}
	})
	if !ok {
		t.Fatal("PreEnqueue waited for the decision")
	}
	t.Logf("200 PreEnqueue calls during a decision: %v", took)
}

// TestProbe2GPUFailureByIdentity (defect 8): GPU 6 of n1 fails and the
// node names it; A on 0,1, B on 2-5, C on 6,7: with deleteOnRecovery only
// C is deleted, never B (nor the pod on the highest indices by guess when
// the node names another): here GPU 0 failing deletes only A.
func TestProbe2GPUFailureByIdentity(t *testing.T) {
	for _, c := range []struct{ failed, want string }{{"6", "c"}, {"0", "a"}, {"3", "b"}} {
		n := gpuNode("n1", 8, h100, nil)
		h, io := newTestHost(t, n)
		h.args.DeleteOnRecovery = true
		io.pods = []*v1.Pod{boundPod("a", "n1", 2, "0,1", nil), boundPod("b", "n1", 4, "2,3,4,5", nil), boundPod("c", "n1", 2, "6,7", nil)}
		step(h, io, 0)
		io.nodes = []*v1.Node{withLostGPUs(n, 7, c.failed)}
		step(h, io, time.Second)
		step(h, io, time.Second)
		if !slices.Equal(io.deleted, []string{c.want}) {
			t.Errorf("GPU %s failed: deleted %v, want [%s]; events %v", c.failed, io.deleted, c.want, io.events)
		}
	}
	// Unknown identity with 2 lost of 8: no deletion by guess.
	n := gpuNode("n1", 8, h100, nil)
	h, io := newTestHost(t, n)
	h.args.DeleteOnRecovery = true
	io.pods = []*v1.Pod{boundPod("a", "n1", 2, "0,1", nil), boundPod("b", "n1", 4, "2,3,4,5", nil), boundPod("c", "n1", 2, "6,7", nil)}
	step(h, io, 0)
	io.nodes = []*v1.Node{withLostGPUs(n, 6, "")}
	step(h, io, time.Second)
	step(h, io, time.Second)
	if len(io.deleted) != 0 {
		t.Errorf("unknown failed GPUs: deleted %v by guess", io.deleted)
	}
}

// TestProbe2PodAntiAffinity (defect 4): a pod with required pod
// anti-affinity (hostname) against app=db, which runs on n1, and one with
// required pod affinity to app=db, are planned on n2 and n1 respectively.
func TestProbe2PodAntiAffinity(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	db := boundPod("db", "n1", 1, "0", nil)
	db.Labels = map[string]string{"app": "db"}
	term := v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: "kubernetes.io/hostname"}
	anti := schedPod("anti", 4, nil)
	anti.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}}
	near := schedPod("near", 4, nil)
	near.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}}
	io.pods = []*v1.Pod{db, anti, near}
	for range 3 {
		step(h, io, time.Second)
	}
	if a, ok := h.assignmentOf(anti.UID); !ok || a.node != "n2" {
		t.Errorf("anti: %+v %v, want n2; %q", a, ok, io.pending["anti"])
	}
	if a, ok := h.assignmentOf(near.UID); !ok || a.node != "n1" {
		t.Errorf("near: %+v %v, want n1; %q", a, ok, io.pending["near"])
	}
}

// TestProbe2GangRestartBeforeAnyBound (defect 7): a 2-pod gang of 6 GPUs
// planned and annotated; the scheduler restarts before any member binds
// (one member already passed Permit): the new scheduler plans the gang
// on the same nodes and GPUs, and a 4-GPU pod that arrived meanwhile
// gets the GPUs left over, not the gang's.
func TestProbe2GangRestartBeforeAnyBound(t *testing.T) {
	nodes := []*v1.Node{gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil)}
	h, io := newTestHost(t, nodes...)
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 6, g), schedPod("g-1", 6, g)}
	step(h, io, 0)
	plan := map[string]assignment{}
	for _, p := range io.pods {
		a, ok := h.assignmentOf(p.UID)
		if !ok {
			t.Fatalf("%s not planned", p.Name)
		}
		plan[p.Name] = a
	}
	h2, io2 := newTestHost(t, nodes...)
	// s is older than the gang: a fresh plan would serve it first.
	s := schedPod("s", 2, nil)
	s.CreationTimestamp = metav1.Unix(1e9-60, 0)
	io2.pods = append([]*v1.Pod{s}, io.pods...)
	step(h2, io2, time.Second)
	for _, name := range []string{"g-0", "g-1"} {
		a, ok := h2.assignmentOf(types.UID("uid-" + name))
		if !ok || a.node != plan[name].node || formatIndices(a.gpus) != formatIndices(plan[name].gpus) {
			t.Errorf("%s after restart: %+v %v, want %s %v", name, a, ok, plan[name].node, plan[name].gpus)
		}
	}
	if a, ok := h2.assignmentOf(s.UID); ok {
		t.Logf("s given %s %v", a.node, a.gpus)
	}
	bindAll(t, h2, io2)
	used(t, io2.pods)
}

// TestProbe2GangPreemptorWaitsForVictims (defect 2, a gang preemptor):
// n1 and n2 each run a checkpointed 4-GPU pod and a never-checkpointed
// 4-GPU pod, all prio 0; a 2-pod gang (prio 100, 4 GPUs each) arrives.
// Only the checkpointed pods are evicted; no member is planned while
// either victim's object exists; the never-checkpointed pods run on.
func TestProbe2GangPreemptorWaitsForVictims(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	a1, b1 := boundPod("a1", "n1", 4, "0,1,2,3", nil), boundPod("b1", "n1", 4, "4,5,6,7", nil)
	a2, b2 := boundPod("a2", "n2", 4, "4,5,6,7", nil), boundPod("b2", "n2", 4, "0,1,2,3", nil)
	io.pods = []*v1.Pod{a1, b1, a2, b2}
	step(h, io, 0)
	io.clock = io.clock.Add(time.Hour)
	for _, p := range []*v1.Pod{a1, a2} {
		c := p.DeepCopy()
		c.Annotations[DefaultCheckpointKey] = io.clock.Add(-time.Minute).Format(time.RFC3339)
		io.pods = replace(io.pods, c)
	}
	step(h, io, time.Second)
	g := map[string]string{DefaultGangLabel: "p", DefaultGangSizeKey: "2"}
	io.pods = append(io.pods, prio(schedPod("p-0", 4, g), 100), prio(schedPod("p-1", 4, g), 100))
	for range 4 {
		step(h, io, time.Second)
	}
	ev := slices.Sorted(slices.Values(io.evicted))
	if !slices.Equal(ev, []string{"a1", "a2"}) {
		t.Fatalf("evicted %v, want a1 a2", io.evicted)
	}
	for _, p := range io.pods {
		if p.Name == "a1" || p.Name == "a2" {
			io.pods = replace(io.pods, terminating(p, io.clock))
		}
	}
	for range 5 {
		step(h, io, 3*time.Second)
		for _, m := range []string{"p-0", "p-1"} {
			if a, ok := h.assignmentOf(types.UID("uid-" + m)); ok {
				t.Fatalf("%s given %s %v while victims terminate", m, a.node, a.gpus)
			}
		}
	}
	io.pods = without(io.pods, "a1")
	step(h, io, time.Second)
	if a, ok := h.assignmentOf("uid-p-0"); ok {
		t.Fatalf("gang planned (%s %v) while a2 still terminates", a.node, a.gpus)
	}
	io.pods = without(io.pods, "a2")
	step(h, io, time.Second)
	for _, m := range []string{"p-0", "p-1"} {
		if _, ok := h.assignmentOf(types.UID("uid-" + m)); !ok {
			t.Errorf("%s not planned once the victims are gone: %q", m, io.pending[m])
		}
	}
	for _, b := range []string{"default/b1", "default/b2"} {
		if st, ok := h.s.Job(b); !ok || st.State != queue.Running {
			t.Errorf("%s: %+v %v, want running", b, st, ok)
		}
	}
	bindAll(t, h, io)
	used(t, io.pods)
}
