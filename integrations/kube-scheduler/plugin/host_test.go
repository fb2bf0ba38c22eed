package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/gpusched/gpusched/queue"
)

// fakeIO is hostIO over in-memory nodes and pods.
type fakeIO struct {
	mu        sync.Mutex // annotate, setPending, evict and event run concurrently
	nodes     []*v1.Node
	pods      []*v1.Pod
	clock     time.Time
	activated []string
	events    []string // "POD REASON: MSG"
	pending   map[string]string
	causes    map[string]string // PodScheduled reason per pod name
	actions   []string          // "POD REASON ACTION" of events with an action
	patches   map[string]int    // setPending calls per pod name
	evicted   []string
	refuse    map[string]error // per pod name: the Eviction API refuses it
	attempts  map[string]int   // eviction attempts per pod name
	deleted   []string
	rejected  []string // UIDs rejected at Permit
	ops       []string // "annotate POD", "activate POD", in order
	annotErr  error    // annotate fails with it
}

func (f *fakeIO) annotate(_ context.Context, p *v1.Pod, annotations map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.annotErr != nil {
		return f.annotErr
	}
	f.ops = append(f.ops, "annotate "+p.Name)
	for i, q := range f.pods {
		if q.UID == p.UID {
			c := q.DeepCopy()
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			for k, v := range annotations {
				c.Annotations[k] = v
			}
			f.pods[i] = c
		}
	}
	return nil
}

func (f *fakeIO) synced() bool                   { return true }
func (f *fakeIO) listNodes() ([]*v1.Node, error) { return f.nodes, nil }
func (f *fakeIO) listPods() ([]*v1.Pod, error)   { return f.pods, nil }
func (f *fakeIO) now() time.Time                 { return f.clock }
func (f *fakeIO) rejectWaiting(uid types.UID, _ string) {
	f.rejected = append(f.rejected, string(uid))
}
func (f *fakeIO) activate(pods []*v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range pods {
		f.activated = append(f.activated, p.Name)
		f.ops = append(f.ops, "activate "+p.Name)
	}
}
func (f *fakeIO) event(p *v1.Pod, _, reason, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, p.Name+" "+reason+": "+msg)
}
func (f *fakeIO) setPending(_ context.Context, p *v1.Pod, reason, msg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[p.Name] = msg
	if f.causes == nil {
		f.causes = map[string]string{}
	}
	f.causes[p.Name] = reason
	if f.patches == nil {
		f.patches = map[string]int{}
	}
	f.patches[p.Name]++
	return nil
}
func (f *fakeIO) deletePod(_ context.Context, p *v1.Pod) error {
	f.deleted = append(f.deleted, p.Name)
	return nil
}
func (f *fakeIO) evict(_ context.Context, p *v1.Pod, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attempts == nil {
		f.attempts = map[string]int{}
	}
	f.attempts[p.Name]++
	if err := f.refuse[p.Name]; err != nil {
		return err
	}
	f.evicted = append(f.evicted, p.Name)
	return nil
}

func schedArgs() *Args {
	a := defaultArgs()
	a.Mode = ModeScheduler
	return a
}

func newTestHost(t *testing.T, nodes ...*v1.Node) (*host, *fakeIO) {
	_, ctx := ktesting.NewTestContext(t)
	io := &fakeIO{nodes: nodes, clock: time.Unix(2e9, 0), pending: map[string]string{}}
	h := newHost(schedArgs(), "gpusched", io, ktesting.NewLogger(t, ktesting.NewConfig()))
	h.queues, _, h.queuesErr = loadQueues(ctx, h.args, nil, h.log)
	return h, io
}

func schedPod(name string, gpus int, labels map[string]string) *v1.Pod {
	p := pod(name, "", gpus, 1000)
	p.Spec.SchedulerName = "gpusched"
	p.Labels = labels
	p.CreationTimestamp = metav1.Unix(1e9, 0)
	return p
}

// bindAll binds every pod with an assignment, as kube-scheduler would after
// the extension points let it through.
func bindAll(t *testing.T, h *host, io *fakeIO) {
	t.Helper()
	for i, p := range io.pods {
		a, ok := h.assignmentOf(p.UID)
		if !ok {
			continue
		}
		b := p.DeepCopy()
		b.Spec.NodeName = a.node
		b.Annotations = map[string]string{DefaultGPUIndicesAnnotation: formatIndices(a.gpus)}
		io.pods[i] = b
	}
}

// used returns node/index → pod for every bound pod, failing on a GPU held
// twice.
func used(t *testing.T, pods []*v1.Pod) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || isTerminal(p) {
			continue
		}
		for _, i := range parseIndices(p.Annotations[DefaultGPUIndicesAnnotation], 8) {
			k := fmt.Sprintf("%s/%d", p.Spec.NodeName, i)
			if o, dup := m[k]; dup {
				t.Fatalf("GPU %s bound to %s and %s", k, o, p.Name)
			}
			m[k] = p.Name
		}
	}
	return m
}

func TestHostBindsGangWholeAndRestoresAfterRestart(t *testing.T) {
	n1, n2 := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n1, n2)
	ctx := context.Background()
	g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
	io.pods = []*v1.Pod{schedPod("g-0", 8, g)}
	h.cycle(ctx)
	if len(io.activated) != 0 || !strings.Contains(io.pending["g-0"], "1 of 2 exist") {
		t.Fatalf("an incomplete gang: activated %v, reason %q", io.activated, io.pending["g-0"])
	}
	io.pods = append(io.pods, schedPod("g-1", 8, g), schedPod("s", 4, nil))
	h.cycle(ctx)
	if strings.Join(io.activated, ",") != "g-0,g-1" {
		t.Fatalf("activated %v, want the whole gang g-0,g-1; events %v; pending %v", io.activated, io.events, io.pending)
	}
	if !strings.Contains(io.pending["s"], "capacity") {
		t.Errorf("s: reason %q, want capacity", io.pending["s"])
	}
	bindAll(t, h, io)
	h.cycle(ctx)
	if st, _ := h.s.Job("default/gang/g"); st.State.String() != "running" {
		t.Errorf("gang state %s after its pods bound, want running", st.State)
	}
	used(t, io.pods)

	// A new scheduler restores the bound gang from the pods: nothing else
	// fits, and s still waits.
	h2, io2 := newTestHost(t, n1, n2)
	io2.pods = io.pods
	h2.cycle(ctx)
	if len(io2.activated) != 0 {
		t.Fatalf("restarted scheduler let %v through on a full cluster", io2.activated)
	}
	if st, ok := h2.s.Job("default/gang/g"); !ok || st.State.String() != "running" {
		t.Fatalf("gang not restored as running: %+v", st)
	}
	// The gang finishes: s binds.
	for i, p := range io2.pods {
		if strings.HasPrefix(p.Name, "g-") {
			q := p.DeepCopy()
			q.Status.Phase = v1.PodSucceeded
			io2.pods[i] = q
		}
	}
	h2.cycle(ctx)
	if strings.Join(io2.activated, ",") != "s" {
		t.Errorf("activated %v after the gang finished, want s", io2.activated)
	}
	bindAll(t, h2, io2)
	used(t, io2.pods)
}

func TestHostBadInputNamesPodAndField(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	badRuntime := schedPod("rt", 1, nil)
	badRuntime.Annotations = map[string]string{DefaultRuntimeKey: "soon"}
	badCkpt := schedPod("ck", 1, nil)
	badCkpt.Annotations = map[string]string{DefaultCheckpointKey: "yesterday"}
	io.pods = []*v1.Pod{
		schedPod("q", 1, map[string]string{DefaultQueueLabel: "nowhere"}),
		badRuntime, badCkpt,
		schedPod("d-0", 1, map[string]string{DefaultGangLabel: "d", DefaultGangSizeKey: "2"}),
		schedPod("d-1", 1, map[string]string{DefaultGangLabel: "d", DefaultGangSizeKey: "2", DefaultGangTopologyKey: "host"}),
		schedPod("z", 1, map[string]string{DefaultGangLabel: "z", DefaultGangSizeKey: "0"}),
		schedPod("big", 9, nil),
	}
	h.cycle(ctx)
	want := map[string]string{
		"q":   `pod default/q: label gpusched.io/queue="nowhere"`,
		"rt":  `pod default/rt: annotation gpusched.io/runtime="soon"`,
		"ck":  `pod default/ck: annotation gpusched.io/checkpointed-at="yesterday"`,
		"d-0": `pod default/d-1: gang labels: gang members disagree`,
		"z":   `pod default/z: gang labels`,
		"big": `pod default/big: resources`,
	}
	for name, w := range want {
		found := false
		for _, e := range io.events {
			if strings.HasPrefix(e, name+" "+ReasonInvalid+": ") && strings.Contains(e, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s event on %s containing %q; events:\n%s", ReasonInvalid, name, w, strings.Join(io.events, "\n"))
		}
	}
	if len(io.activated) != 0 {
		t.Errorf("bad input let %v through", io.activated)
	}
	// Events are rate-limited: the same cycle again says nothing new.
	n := len(io.events)
	h.cycle(ctx)
	if len(io.events) != n {
		t.Errorf("a second cycle repeated %d events within the event interval", len(io.events)-n)
	}
}

func TestParseQueueConfigErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "cm: empty queue tree"},
		{"root: [", "cm: yaml"},
		{"root:\n  children:\n  - name: a\n    polcy: {}\n", "line 4: field polcy not found"},
	} {
		_, err := ParseQueueConfig([]byte(tc.in), "cm")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseQueueConfig(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	cfg, err := ParseQueueConfig([]byte("root:\n  children:\n  - name: a\n    policy: {ordering: priority-aging, agingInterval: 10m}\n"), "cm")
	if err != nil || cfg.Root.Children[0].Policy.AgingInterval != 10*time.Minute {
		t.Errorf("ParseQueueConfig: %+v, %v", cfg, err)
	}
}

func FuzzParseQueueConfig(f *testing.F) {
	f.Add([]byte(queueSeed))
	f.Add([]byte("root: {children: [{name: x, quotas: [{resource: gpu, nominal: 8}]}]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseQueueConfig(b, "fuzz")
	})
}

const queueSeed = "root:\n  children:\n  - name: research\n    policy: {ordering: strict-fifo, backfill: true}\n"

// FuzzJobsOf feeds arbitrary label and annotation values to the pod → job
// conversion: it must never panic, and a job without an error has a valid
// spec.
func FuzzJobsOf(f *testing.F) {
	f.Add("g", "2", "1", "host", "10m", "2026-01-01T00:00:00Z", "q")
	f.Add("", "x", "-1", "", "soon", "yesterday", "")
	f.Fuzz(func(t *testing.T, gangName, size, minimum, topo, runtime, ckpt, q string) {
		a := schedArgs()
		var pods []*v1.Pod
		for i := range 2 {
			p := schedPod(fmt.Sprintf("p%d", i), i+1, map[string]string{})
			if gangName != "" {
				p.Labels[DefaultGangLabel] = gangName
			}
			p.Labels[DefaultQueueLabel] = q
			p.Annotations = map[string]string{DefaultGangSizeKey: size, DefaultGangMinKey: minimum, DefaultGangTopologyKey: topo,
				DefaultRuntimeKey: runtime, DefaultCheckpointKey: ckpt}
			pods = append(pods, p)
		}
		for _, j := range jobsOf(pods, a, 0) {
			if j.err != nil {
				continue
			}
			if err := j.spec.Validate(); err != nil && j.spec.Queue != "" {
				// Validation errors are Submit's to report; the conversion
				// must only not panic.
				_ = err
			}
		}
	})
}

// TestHostGPUsLostAreRecovered: a node whose allocatable GPUs drop below its
// GPU count label, naming the lost ones, rebuilds the Scheduler; the pod on a lost GPU is restored
// (not dropped from the books) and gets a recovery event, and no new pod is
// placed on the lost GPUs.
func TestHostGPUsLostAreRecovered(t *testing.T) {
	n := gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil)
	h, io := newTestHost(t, n)
	ctx := context.Background()
	run := schedPod("run", 2, nil)
	run.Spec.NodeName = "n1"
	run.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "6,7"}
	io.pods = []*v1.Pod{run}
	h.cycle(ctx)
	lost := n.DeepCopy()
	lost.Status.Allocatable[DefaultGPUResource] = *resource.NewQuantity(6, resource.DecimalSI)
	lost.Annotations = map[string]string{UnhealthyGPUsAnnotation: "6,7"} // the node names them (gpuidentity.go)
	io.nodes = []*v1.Node{lost}
	io.pods = append(io.pods, schedPod("new", 6, nil))
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.s.Job("default/run"); !ok {
		t.Fatal("the pod on the lost GPUs was dropped from the books")
	}
	found := false
	for _, e := range io.events {
		found = found || strings.HasPrefix(e, "run "+ReasonRecovery)
	}
	if !found {
		t.Errorf("no %s event on run; events %v", ReasonRecovery, io.events)
	}
	if a, ok := h.assignmentOf(io.pods[1].UID); ok && slices.ContainsFunc(a.gpus, func(g int) bool { return g >= 6 }) {
		t.Errorf("new placed on lost GPUs %v", a.gpus)
	}
}

// TestHostQueueEditsApplyLive: a queue tree edit applies to the running
// Scheduler (a raised quota lets a waiting job bind); an edit that cannot
// apply changes nothing; a removed queue's pending jobs are dropped (their
// pods then wait as of an unknown queue), one with running jobs is refused
// unless removedQueueTarget names where they go.
func TestHostQueueEditsApplyLive(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	tree := func(researchMax int, scratch bool) queue.Config {
		t.Helper()
		y := fmt.Sprintf("root:\n  children:\n  - name: research\n    quotas: [{resource: gpu, nominal: 0, max: %d}]\n  - name: batch\n", researchMax)
		if scratch {
			y += "  - name: scratch\n"
		}
		cfg, err := ParseQueueConfig([]byte(y), "test")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if err := h.reconfigure(tree(4, true), io.clock); err != nil { // before the first cycle: no Scheduler yet
		t.Fatal(err)
	}
	r0 := schedPod("r0", 4, map[string]string{DefaultQueueLabel: "research"})
	r := schedPod("r", 4, map[string]string{DefaultQueueLabel: "research"})
	x := schedPod("x", 8, map[string]string{DefaultQueueLabel: "scratch"})
	io.pods = []*v1.Pod{r0}
	h.cycle(ctx)
	bindAll(t, h, io)
	io.pods = append(io.pods, r)
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.assignmentOf(r.UID); ok {
		t.Fatalf("r bound over its queue's max of 4 GPUs")
	}
	if why := h.waitingReason(r.UID); !strings.Contains(why, "quota") {
		t.Errorf("r waits with %q, want its quota", why)
	}
	bad := tree(8, true)
	bad.Root.Children[0].Quotas[0].Resource = "tpu"
	if err := h.reconfigure(bad, io.clock); err == nil || !strings.Contains(err.Error(), "quotas[0].resource") {
		t.Fatalf("an invalid tree: err %v, want one naming quotas[0].resource", err)
	}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.assignmentOf(r.UID); ok {
		t.Fatalf("r bound after an edit that was refused")
	}
	if err := h.reconfigure(tree(8, true), io.clock); err != nil {
		t.Fatal(err)
	}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.assignmentOf(r.UID); !ok {
		t.Fatalf("r not bound after its queue's max was raised to 8; reason %q", h.waitingReason(r.UID))
	}
	bindAll(t, h, io)
	io.pods = append(io.pods, x) // waits: r0 and r hold the node
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if _, ok := h.jobs["default/x"]; !ok {
		t.Fatalf("x not submitted: events %v", io.events)
	}

	// scratch goes, with x pending in it: x is dropped and waits as of an
	// unknown queue. research goes too, with r running: refused.
	if err := h.reconfigure(queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "batch"}}}}, io.clock); err == nil || !strings.Contains(err.Error(), `"research"`) {
		t.Fatalf("removing research, which runs r, without removedQueueTarget: err %v", err)
	}
	if err := h.reconfigure(tree(8, false), io.clock); err != nil {
		t.Fatal(err)
	}
	io.clock = io.clock.Add(time.Second)
	io.events = nil
	h.cycle(ctx)
	if !slices.ContainsFunc(io.events, func(e string) bool {
		return strings.HasPrefix(e, "x "+ReasonInvalid) && strings.Contains(e, "scratch")
	}) {
		t.Errorf("x, of the removed queue scratch: events %v, want an unknown-queue Warning", io.events)
	}
	if _, ok := h.jobs["default/x"]; ok {
		t.Errorf("x still a job of gpusched after its queue was removed")
	}

	// With removedQueueTarget, research's running job moves to batch.
	h.args.RemovedQueueTarget = "batch"
	if err := h.reconfigure(queue.Config{Root: queue.Node{Children: []queue.Node{{Name: "batch"}}}}, io.clock); err != nil {
		t.Fatal(err)
	}
	if h.moved["research"] != "batch" {
		t.Errorf("moved %v, want research → batch", h.moved)
	}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	// A rebuild (a node change) restores r into batch, not as of an
	// unknown queue.
	h.shape = ""
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if st, ok := h.s.Job("default/r"); !ok || !st.State.Holding() || len(h.jobs) != 2 {
		t.Errorf("r after research was removed and a rebuild: %+v %v, want running; events %v", st, ok, io.events)
	}
}

// TestHostEvictionRefusedPlansAnotherVictim: the Eviction API refuses the
// cheapest victim (its PodDisruptionBudget); the Scheduler is told
// (EvictionRefused), plans again without it and the other candidate is
// evicted; the refused one is asked once, and again only after
// evictionRetrySeconds.
func TestHostEvictionRefusedPlansAnotherVictim(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil), gpuNode("n2", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	var pods []*v1.Pod
	for i, name := range []string{"guarded", "free"} {
		p := schedPod(name, 8, nil)
		p.Spec.NodeName = fmt.Sprintf("n%d", i+1)
		p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "0,1,2,3,4,5,6,7"}
		pods = append(pods, p)
	}
	// guarded lost less work (checkpointed just now): the planner picks it first.
	pods[0].Annotations[DefaultCheckpointKey] = io.clock.Format(time.RFC3339)
	io.pods = pods
	h.cycle(ctx)
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	io.pods = append(io.pods, high)
	io.refuse = map[string]error{"guarded": fmt.Errorf("Cannot evict pod as it would violate the pod's disruption budget")}
	for range 4 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if io.attempts["guarded"] != 1 || !slices.Equal(io.evicted, []string{"free"}) {
		t.Fatalf("attempts %v, evicted %v; want guarded refused once, then free evicted", io.attempts, io.evicted)
	}
	// free's pod goes; high binds on n2.
	io.pods = []*v1.Pod{pods[0], high}
	io.clock = io.clock.Add(time.Second)
	h.cycle(ctx)
	if a, ok := h.assignmentOf(high.UID); !ok || a.node != "n2" {
		t.Fatalf("high: assignment %+v %v, want n2", a, ok)
	}
}

// TestHostEvictionRefusedEveryVictim: every candidate refuses; the job
// waits with the refusal in its reason, and the victim is asked again
// only once per evictionRetrySeconds.
func TestHostEvictionRefusedEveryVictim(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	h.args.EvictionRetrySeconds = 60 // (read when the first cycle builds the Scheduler)
	ctx := context.Background()
	low := schedPod("low", 8, nil)
	low.Spec.NodeName = "n1"
	low.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "0,1,2,3,4,5,6,7"}
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	io.pods = []*v1.Pod{low, high}
	io.refuse = map[string]error{"low": fmt.Errorf("Cannot evict pod as it would violate the pod's disruption budget")}
	for range 150 { // 150 s: two retry periods and a half
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if io.attempts["low"] != 3 {
		t.Errorf("%d eviction attempts of low in 150 s with a 60 s retry, want 3", io.attempts["low"])
	}
	if r := h.waitingReason(high.UID); !strings.Contains(r, "eviction of default/low refused") || !strings.Contains(r, "disruption budget") {
		t.Errorf("high: reason %q, want the refusal", r)
	}
}

// TestHostEvictionRefusedMidGang: a victim gang whose budget refuses its
// second pod after the first was evicted is not reported refused (it is
// partly gone): it stays being preempted, is not evicted again, and the
// preempting job waits with the refusal in its reason.
func TestHostEvictionRefusedMidGang(t *testing.T) {
	h, io := newTestHost(t, gpuNode("n1", 8, "NVIDIA-H100-80GB-HBM3", nil))
	ctx := context.Background()
	var pods []*v1.Pod
	for i := range 2 {
		p := schedPod(fmt.Sprintf("v-%d", i), 4, map[string]string{DefaultGangLabel: "v", DefaultGangSizeKey: "2"})
		p.Spec.NodeName = "n1"
		p.Annotations = map[string]string{DefaultGPUIndicesAnnotation: fmt.Sprintf("%d,%d,%d,%d", 4*i, 4*i+1, 4*i+2, 4*i+3)}
		pods = append(pods, p)
	}
	high := schedPod("high", 8, nil)
	prio := int32(1000)
	high.Spec.Priority = &prio
	io.pods = append(pods, high)
	io.refuse = map[string]error{"v-1": fmt.Errorf("Cannot evict pod as it would violate the pod's disruption budget")}
	for range 5 {
		io.clock = io.clock.Add(time.Second)
		h.cycle(ctx)
	}
	if io.attempts["v-0"] != 1 || io.attempts["v-1"] != 1 {
		t.Errorf("eviction attempts %v, want one each", io.attempts)
	}
	if r := h.waitingReason(high.UID); !strings.Contains(r, "eviction of pod default/v-1") || !strings.Contains(r, "not retried") {
		t.Errorf("high: reason %q, want the refusal", r)
	}
}
