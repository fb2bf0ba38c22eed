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

	"github.com/gpusched/gpusched/queue"
)

// Probe tests of issue 26: natural variations of the sequences on
// the plugin's test host, written independently of the tests that came
// with each fix.

// step advances the fake clock by d and runs one cycle.
func step(h *host, io *fakeIO, d time.Duration) {
	io.clock = io.clock.Add(d)
	h.cycle(context.Background())
}

// ProbeDeletedElsewhereLingersThenVanishes (defect 2): a running pod
// deleted by someone else (not evicted by gpusched) terminates for
// several cycles, then its object goes without a terminal phase: while it
// terminates its GPUs stay held, and its job is not booked as a clean
// finish.
func TestProbeDeletedElsewhereLingersThenVanishes(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	b := boundPod("b", "n1", 8, "0,1,2,3,4,5,6,7", nil)
	io.pods = []*v1.Pod{b}
	step(h, io, 0)
	io.pods = []*v1.Pod{terminating(b, io.clock), schedPod("w", 8, nil)}
	for range 6 {
		step(h, io, 10*time.Second)
		if a, ok := h.assignmentOf("uid-w"); ok {
			t.Fatalf("w placed on %s %v while b terminates there", a.node, a.gpus)
		}
	}
	h.forget(terminating(b, io.clock)) // the informer's delete event
	io.pods = without(io.pods, "b")
	step(h, io, time.Second)
	if got := h.ends.last["default/b"]; got == queue.Succeeded {
		t.Errorf("b vanished after a deletion gpusched did not make: booked %v", got)
	}
	if _, ok := h.assignmentOf("uid-w"); !ok {
		t.Errorf("w not placed once b is gone: %q", io.pending["w"])
	}
}

// ProbeDisruptedPodIsNotAFinish (defect 2): a pod deleted by kube's own
// preemption (or any disruption: the DisruptionTarget condition) whose
// process exits 0 on SIGTERM ends in phase Succeeded: that is not a clean
// finish of its job.
func TestProbeDisruptedPodIsNotAFinish(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	b := boundPod("b", "n1", 4, "0,1,2,3", nil)
	c := boundPod("c", "n1", 4, "4,5,6,7", nil)
	io.pods = []*v1.Pod{b, c}
	step(h, io, 0)
	d := withPhase(terminating(b, io.clock), v1.PodSucceeded)
	d.Status.Conditions = append(d.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "PreemptionByScheduler"})
	io.pods = []*v1.Pod{d, c}
	step(h, io, time.Second)
	// c's final state comes through the informer (deleted before a cycle
	// saw it), the same way.
	e := withPhase(terminating(c, io.clock), v1.PodSucceeded)
	e.Status.Conditions = append(e.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager"})
	h.forget(e)
	io.pods = nil
	step(h, io, time.Second)
	for _, id := range []string{"default/b", "default/c"} {
		if got := h.ends.last[id]; got == queue.Succeeded {
			t.Errorf("%s disrupted (DisruptionTarget) then Succeeded: booked %v, want not a clean finish", id, got)
		}
	}
}

// ProbeVictimStuckTerminating (defect 2): the victim gpusched evicted
// stays terminating for a long time (a finalizer): the pod it was evicted
// for waits, and no second job on the node is evicted for it.
func TestProbeVictimStuckTerminating(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	a := boundPod("a", "n1", 4, "0,1,2,3", nil)
	b := boundPod("b", "n1", 2, "4,5", nil)
	c := boundPod("c", "n1", 2, "6,7", nil)
	io.pods = []*v1.Pod{a, b, c}
	step(h, io, 0)
	io.clock = io.clock.Add(time.Hour)
	a = a.DeepCopy()
	a.Annotations[DefaultCheckpointKey] = io.clock.Add(-time.Minute).Format(time.RFC3339)
	io.pods = []*v1.Pod{a, b, c}
	step(h, io, time.Second)
	p := schedPod("p", 4, nil)
	prio := int32(100)
	p.Spec.Priority = &prio
	io.pods = append(io.pods, p)
	for range 3 {
		step(h, io, time.Second)
	}
	if len(io.evicted) == 0 {
		t.Fatalf("nothing evicted for p: %q", io.pending["p"])
	}
	victims := slices.Clone(io.evicted)
	for _, v := range victims {
		for _, q := range io.pods {
			if q.Name == v {
				io.pods = replace(io.pods, terminating(q, io.clock))
			}
		}
	}
	for range 120 {
		step(h, io, 30*time.Second)
		if a, ok := h.assignmentOf(p.UID); ok {
			t.Fatalf("p placed on %s %v while its victims %v still terminate", a.node, a.gpus, victims)
		}
	}
	if !slices.Equal(io.evicted, victims) {
		t.Errorf("evicted %v in an hour of a victim terminating, want only %v", io.evicted, victims)
	}
}

// ProbeGangLosesTwoMembersThenSurvivorFinishes (defect 3): a 3-pod gang
// on three nodes; one member fails, then a second is deleted; the
// survivor keeps the gang's GPUs (nobody is placed on any of its nodes,
// and it is never marked pending) until it finishes; then the gang is
// booked Failed and the waiting pods run.
func TestProbeGangLosesTwoMembersThenSurvivorFinishes(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil), gpuNode("n3", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "3"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g), schedPod("g-2", 8, g)}
	step(h, io, 0)
	bindAll(t, h, io)
	step(h, io, time.Second)
	if st, _ := h.s.Job("default/gang/g"); st.State != queue.Running {
		t.Fatalf("gang %v, want running", st.State)
	}
	io.pods = append(replace(io.pods, withPhase(io.pods[0], v1.PodFailed)), schedPod("w1", 8, nil), schedPod("w2", 8, nil))
	clear(io.pending)
	for range 3 {
		step(h, io, time.Second)
	}
	io.pods = without(io.pods, "g-0", "g-1") // g-1 deleted, no phase
	for range 3 {
		step(h, io, time.Second)
	}
	for _, w := range []string{"w1", "w2"} {
		if a, ok := h.assignmentOf(types.UID("uid-" + w)); ok {
			t.Fatalf("%s placed on %s while the gang's survivor runs", w, a.node)
		}
	}
	if st, ok := h.s.Job("default/gang/g"); !ok || st.State != queue.Running {
		t.Fatalf("gang after two members went: %+v %v, want running", st, ok)
	}
	if m, ok := io.pending["g-2"]; ok {
		t.Errorf("the running survivor g-2 was marked pending: %q", m)
	}
	io.pods = replace(io.pods, withPhase(io.pods[slices.IndexFunc(io.pods, func(p *v1.Pod) bool { return p.Name == "g-2" })], v1.PodSucceeded))
	step(h, io, time.Second)
	if got := h.ends.last["default/gang/g"]; got != queue.Failed {
		t.Errorf("gang booked %v, want failed", got)
	}
	for _, w := range []string{"w1", "w2"} {
		if _, ok := h.assignmentOf(types.UID("uid-" + w)); !ok {
			t.Errorf("%s not placed once the gang ended: %q", w, io.pending[w])
		}
	}
}

// ProbeToleratedNoExecuteTaint (defect 4): a node tainted NoExecute that
// the pods tolerate (a dedicated GPU pool) is a node like another for
// them: a tolerating pod is planned there, and the pod running there is
// not recovered (nor deleted, with deleteOnRecovery). A pod that does not
// tolerate it is not planned there.
func TestProbeToleratedNoExecuteTaint(t *testing.T) {
	n1 := gpuNode("n1", 8, h100, nil)
	n1.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "ml", Effect: v1.TaintEffectNoExecute}}
	h, io := newTestHost(t, n1)
	h.args.DeleteOnRecovery = true
	tol := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "ml", Effect: v1.TaintEffectNoExecute}}
	run := boundPod("run", "n1", 4, "0,1,2,3", nil)
	run.Spec.Tolerations = tol
	untol := schedPod("untol", 2, nil)
	io.pods = []*v1.Pod{run, untol}
	for range 60 {
		step(h, io, time.Second)
	}
	if len(io.deleted) != 0 || slices.ContainsFunc(io.events, func(e string) bool { return strings.Contains(e, ReasonRecovery) }) {
		t.Errorf("a pod tolerating its node's NoExecute taint: deleted %v, events %v", io.deleted, io.events)
	}
	if a, ok := h.assignmentOf(untol.UID); ok {
		t.Errorf("untol planned on %s, whose NoExecute taint it does not tolerate", a.node)
	}
	newTol := schedPod("tol", 4, nil)
	newTol.Spec.Tolerations = tol
	io.pods = append(io.pods, newTol)
	step(h, io, time.Second)
	if a, ok := h.assignmentOf(newTol.UID); !ok || a.node != "n1" {
		t.Errorf("tol (tolerates n1's NoExecute taint): %+v %v, want n1; reason %q", a, ok, io.pending["tol"])
	}
}

// ProbeRequiredNodeAffinityExpressions (defect 4): required node affinity
// by match expressions (In, NotIn, Exists over two terms) is honoured;
// preferred affinity constrains nothing.
func TestProbeRequiredNodeAffinityExpressions(t *testing.T) {
	n1 := gpuNode("n1", 8, h100, map[string]string{"pool": "a"})
	n2 := gpuNode("n2", 8, h100, map[string]string{"pool": "b", "spot": "true"})
	n3 := gpuNode("n3", 8, h100, map[string]string{"pool": "c"})
	h, io := newTestHost(t, n1, n2, n3)
	p := schedPod("p", 8, nil)
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"b", "c"}}, {Key: "spot", Operator: v1.NodeSelectorOpDoesNotExist}}},
		}},
		PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 10, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}}}}},
	}}
	io.pods = []*v1.Pod{p}
	step(h, io, 0)
	if a, ok := h.assignmentOf(p.UID); !ok || a.node != "n3" {
		t.Fatalf("p (pool in b,c, not spot): %+v %v, want n3", a, ok)
	}
	// A gang shares its first pod's affinity: 2 members, 8 GPUs each,
	// pool in a,b, fit only on n1 and n2.
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	var ms []*v1.Pod
	for _, name := range []string{"g-0", "g-1"} {
		m := schedPod(name, 8, g)
		m.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpNotIn, Values: []string{"c"}}}},
		}}}}
		ms = append(ms, m)
	}
	bindAll(t, h, io)
	io.pods = append(io.pods, ms...)
	step(h, io, time.Second)
	for _, m := range ms {
		if a, ok := h.assignmentOf(m.UID); !ok || a.node == "n3" {
			t.Errorf("%s (pool not c): %+v %v", m.Name, a, ok)
		}
	}
}

// ProbeGangMemberBindFailsAfterOthersBound (defects 7, 8): a gang passed
// Permit whole; g-0 is bound, then g-1's Bind fails (Unreserve). The
// gang's bound member keeps its GPUs in gpusched's books: no other pod
// (here one of higher priority) is given them, and g-1 goes to its plan
// again.
func TestProbeGangMemberBindFailsAfterOthersBound(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g), schedPod("g-1", 8, g)}
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	step(h, io, 0)
	a0, ok0 := h.assignmentOf(io.pods[0].UID)
	a1, ok1 := h.assignmentOf(io.pods[1].UID)
	if !ok0 || !ok1 {
		t.Fatal("gang not planned")
	}
	pl.Reserve(ctx, nil, io.pods[0], a0.node)
	pl.Permit(ctx, nil, io.pods[0], a0.node)
	pl.Reserve(ctx, nil, io.pods[1], a1.node)
	pl.Permit(ctx, nil, io.pods[1], a1.node)
	// g-0 binds; g-1's Bind fails.
	b0 := io.pods[0].DeepCopy()
	b0.Spec.NodeName = a0.node
	io.pods[0] = b0
	pl.Unreserve(ctx, nil, io.pods[1], a1.node)
	hi := schedPod("s", 8, nil)
	prio := int32(100)
	hi.Spec.Priority = &prio
	io.pods = append(io.pods, hi)
	for range 3 {
		step(h, io, time.Second)
	}
	if a, ok := h.assignmentOf("uid-s"); ok && a.node == a0.node {
		t.Fatalf("s placed on %s, where the gang's bound member g-0 runs", a.node)
	}
	if a, ok := h.assignmentOf(io.pods[1].UID); !ok || a.node != a1.node {
		t.Errorf("g-1 after its Bind failed: %+v %v, want its plan on %s; reason %q", a, ok, a1.node, io.pending["g-1"])
	}
	if st, ok := h.s.Job("default/gang/g"); !ok || !st.State.Holding() {
		t.Errorf("gang with a bound member: %+v %v, want holding its GPUs", st, ok)
	}
}

// ProbeStartDuringDevicePluginRestart (defect 5): the scheduler starts
// (or rebuilds) while a node's device plugin registers again
// (allocatable 0, capacity 8): the pod bound there is restored on its
// GPUs, not recovered nor deleted (deleteOnRecovery), and no new pod is
// placed there until the GPUs are back.
func TestProbeStartDuringDevicePluginRestart(t *testing.T) {
	n1 := gpuNode("n1", 8, h100, nil)
	restarting := n1.DeepCopy()
	restarting.Status.Allocatable[DefaultGPUResource] = resource.MustParse("0")
	h, io := newTestHost(t, restarting, gpuNode("n2", 8, h100, nil))
	h.args.DeleteOnRecovery = true
	run := boundPod("run", "n1", 4, "0,1,2,3", nil)
	io.pods = []*v1.Pod{run, schedPod("new", 8, nil), schedPod("new2", 4, nil)}
	for range 10 {
		step(h, io, time.Second)
	}
	if len(io.deleted) != 0 {
		t.Fatalf("deleted %v during a device plugin restart at start", io.deleted)
	}
	if st, ok := h.s.Job("default/run"); !ok || st.State != queue.Running {
		t.Fatalf("run: %v %v, want running; events %v", st.State, ok, io.events)
	}
	for _, n := range []string{"new", "new2"} {
		if a, ok := h.assignmentOf(types.UID("uid-" + n)); ok && a.node == "n1" {
			t.Fatalf("%s placed on n1 while its GPUs are unavailable", n)
		}
	}
	bindAll(t, h, io)
	io.nodes = []*v1.Node{n1, gpuNode("n2", 8, h100, nil)}
	step(h, io, time.Second)
	if a, ok := h.assignmentOf("uid-new2"); !ok || a.node != "n1" || formatIndices(a.gpus) == "0,1,2,3" {
		t.Errorf("new2 once n1's GPUs are back: %+v %v, want n1 beside run; %v", a, ok, io.pending)
	}
	bindAll(t, h, io)
	used(t, io.pods)
}

// ProbeGangWithAGatedMember (defect 6): a gang one of whose members is
// still gated is not planned, holds nothing (a later pod takes the
// node), and is planned whole once the gate goes.
func TestProbeGangWithAGatedMember(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	g0, g1 := schedPod("g-0", 8, g), schedPod("g-1", 8, g)
	g1.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
	io.pods = []*v1.Pod{g0, g1}
	for range 3 {
		step(h, io, time.Second)
	}
	if _, ok := h.assignmentOf(g0.UID); ok {
		t.Fatal("a gang with a gated member was planned")
	}
	later := schedPod("later", 8, nil)
	later.CreationTimestamp = metav1.Unix(1e9+1, 0)
	io.pods = append(io.pods, later)
	step(h, io, time.Second)
	if _, ok := h.assignmentOf(later.UID); !ok {
		t.Fatalf("later waits behind a gang with a gated member: %q", io.pending["later"])
	}
	bindAll(t, h, io)
	ungated := g1.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	io.pods = replace(io.pods, ungated)
	step(h, io, time.Second)
	if st, ok := h.s.Job("default/gang/g"); !ok {
		t.Errorf("gang not submitted once ungated: %+v %v; reason %q", st, ok, io.pending["g-0"])
	}
}

// ProbeBindFailureLoopIsBounded (defect 4): a pod whose binding fails
// every time after Reserve (a PreBind or Bind error: Unreserve) is not
// re-activated on the same node every cycle: a minute of failures
// re-activates it a bounded number of times, and its reason says why.
func TestProbeBindFailureLoopIsBounded(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil))
	io.pods = []*v1.Pod{schedPod("p", 2, nil)}
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	step(h, io, 0)
	for range 300 { // a minute of cycles, 200 ms apart
		if a, ok := h.assignmentOf("uid-p"); ok {
			pl.Reserve(ctx, nil, io.pods[0], a.node)
			pl.Unreserve(ctx, nil, io.pods[0], a.node) // PreBind failed
		}
		step(h, io, 200*time.Millisecond)
	}
	if n := len(io.activated); n > 10 {
		t.Errorf("activated %d times in a minute of bind failures, want a bounded backoff", n)
	}
	if r := h.waitingReason("uid-p"); !strings.Contains(r, "binding failed") {
		t.Errorf("reason %q, want the binding failures", r)
	}
}

// ProbePostFilterAndUnreserveDoNotWaitForADecision (defect 8): PostFilter
// and Unreserve run in kube-scheduler's scheduling cycle, shared by every
// profile: they must not wait for a slow gpusched decision either.
func TestProbePostFilterAndUnreserveDoNotWaitForADecision(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, h100, nil), gpuNode("n2", 8, h100, nil))
	io.pods = []*v1.Pod{schedPod("a", 2, nil), schedPod("b", 2, nil)}
	step(h, io, 0)
	pl := &SchedulerPlugin{h: h, args: h.args, handle: &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}}
	ctx := context.Background()
	a0, _ := h.assignmentOf(io.pods[0].UID)
	if _, ok := duringDecision(time.Second, h, func() {
		pl.PostFilter(ctx, nil, io.pods[0], nil)
		pl.Unreserve(ctx, nil, io.pods[1], "n1")
	}); !ok {
		t.Fatal("PostFilter/Unreserve waited for the decision (1 s and more)")
	}
	// What they asked for is done by the next cycle: a is not planned on
	// its rejected node, b is planned again.
	step(h, io, time.Second)
	if a, ok := h.assignmentOf(io.pods[0].UID); !ok || a.node == a0.node {
		t.Errorf("a after kube rejected %s: %+v %v, want the other node", a0.node, a, ok)
	}
	if _, ok := h.assignmentOf(io.pods[1].UID); !ok {
		t.Errorf("b not planned again after Unreserve")
	}
}

// duringDecision runs calls while a decision holds h's lock for up to
// limit, and reports how long they took, or false if they waited for the
// lock.
func duringDecision(limit time.Duration, h *host, calls func()) (time.Duration, bool) {
	h.mu.Lock() // a slow decision
	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		calls()
		done <- time.Since(start)
	}()
	var took time.Duration
	select {
	case took = <-done:
	case <-time.After(limit):
	}
	h.mu.Unlock()
	if took == 0 {
		<-done
		return 0, false
	}
	return took, true
}
