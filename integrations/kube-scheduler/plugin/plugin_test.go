package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// fakeHandle is the part of the scheduler's Handle the plugin uses: waiting
// pods. Other methods panic (nil embedded interface).
type fakeHandle struct {
	fwk.Handle
	waiting   map[types.UID]*fakeWaiting
	activated []string
}

func (h *fakeHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	h.activated = append(h.activated, sortedKeys(pods)...)
}

type fakeWaiting struct {
	pod      *v1.Pod
	allowed  bool
	rejected string
}

func (w *fakeWaiting) GetPod() *v1.Pod                                       { return w.pod }
func (w *fakeWaiting) GetPendingPlugins() []string                           { return []string{Name} }
func (w *fakeWaiting) Allow(string)                                          { w.allowed = true }
func (w *fakeWaiting) Reject(_, msg string) bool                             { w.rejected = msg; return true }
func (w *fakeWaiting) Preempt(_, msg string) bool                            { w.rejected = msg; return true }
func (h *fakeHandle) SharedInformerFactory() informers.SharedInformerFactory { return nil }
func (h *fakeHandle) EventRecorder() events.EventRecorderLogger              { return nil }
func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	if w, ok := h.waiting[uid]; ok {
		return w
	}
	return nil
}
func (h *fakeHandle) IterateOverWaitingPods(fn func(fwk.WaitingPod)) {
	for _, uid := range sortedKeys(h.waiting) {
		fn(h.waiting[uid])
	}
}

// harness drives one plugin through scheduling cycles as the scheduler would,
// with every node feasible for the scheduler's own filters.
type harness struct {
	t    *testing.T
	p    *Plugin
	h    *fakeHandle
	pods cache.Indexer
	// annotations written by PreBind, by pod name.
	annotations map[string]map[string]string
	nodes       []*v1.Node
	clock       time.Time
	states      map[types.UID]fwk.CycleState
}

func newHarness(t *testing.T, args *Args, nodes ...*v1.Node) *harness {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	h := &fakeHandle{waiting: map[types.UID]*fakeWaiting{}}
	pl, err := New(ctx, args, h)
	if err != nil {
		t.Fatal(err)
	}
	p := pl.(*Plugin)
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	p.pods = corelisters.NewPodLister(idx)
	hs := &harness{t: t, p: p, h: h, pods: idx, nodes: nodes, clock: time.Unix(1e9, 0), states: map[types.UID]fwk.CycleState{},
		annotations: map[string]map[string]string{}}
	p.now = func() time.Time { return hs.clock }
	p.annotate = func(_ context.Context, _, name string, patch []byte) error {
		var m struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(patch, &m); err != nil {
			return err
		}
		hs.annotations[name] = m.Metadata.Annotations
		return nil
	}
	for _, n := range nodes {
		p.onNode(n)
	}
	return hs
}

// add creates a pod (as the informer would report it).
func (hs *harness) add(p *v1.Pod) *v1.Pod {
	if err := hs.pods.Add(p); err != nil {
		hs.t.Fatal(err)
	}
	hs.p.onPod(p)
	return p
}

// schedule runs one scheduling cycle for p up to Permit. It returns the node
// and the status of the first extension point that did not succeed (nil if
// the pod was permitted or is waiting; waiting reports whether it waits).
func (hs *harness) schedule(p *v1.Pod) (node string, st *fwk.Status, waiting bool) {
	ctx := context.Background()
	cs := framework.NewCycleState()
	hs.states[p.UID] = cs
	res, st := hs.p.PreFilter(ctx, cs, p, nil)
	if st.IsSkip() {
		return "", st, false
	}
	if !st.IsSuccess() {
		return "", st, false
	}
	var feasible []fwk.NodeInfo
	for _, n := range hs.nodes {
		if !res.AllNodes() && !res.NodeNames.Has(n.Name) {
			continue
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		if s := hs.p.Filter(ctx, cs, p, ni); s.IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		_, st := hs.p.PostFilter(ctx, cs, p, nil)
		return "", st, false
	}
	if st := hs.p.PreScore(ctx, cs, p, feasible); !st.IsSuccess() && !st.IsSkip() {
		return "", st, false
	}
	best, bestScore := "", int64(-1)
	for _, ni := range feasible {
		sc, st := hs.p.Score(ctx, cs, p, ni)
		if !st.IsSuccess() {
			return "", st, false
		}
		if sc > bestScore {
			best, bestScore = ni.Node().Name, sc
		}
	}
	if st := hs.p.Reserve(ctx, cs, p, best); !st.IsSuccess() {
		hs.p.Unreserve(ctx, cs, p, best)
		return "", st, false
	}
	st, _ = hs.p.Permit(ctx, cs, p, best)
	switch {
	case st.IsSuccess():
		return best, nil, false
	case st.Code() == fwk.Wait:
		hs.h.waiting[p.UID] = &fakeWaiting{pod: p}
		return best, nil, true
	default:
		hs.p.Unreserve(ctx, cs, p, best)
		return "", st, false
	}
}

// bind finishes a permitted pod: PreBind writes the annotation, and the
// informer reports it bound.
func (hs *harness) bind(p *v1.Pod, node string) *v1.Pod {
	hs.t.Helper()
	ctx := context.Background()
	if st := hs.p.PreBind(ctx, hs.states[p.UID], p, node); !st.IsSuccess() {
		hs.t.Fatalf("PreBind %s: %v", p.Name, st)
	}
	b := p.DeepCopy()
	b.Spec.NodeName = node
	for k, v := range hs.annotations[p.Name] {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[k] = v
	}
	if err := hs.pods.Update(b); err != nil {
		hs.t.Fatal(err)
	}
	hs.p.onPod(b)
	delete(hs.h.waiting, p.UID)
	return b
}

// check verifies the ledger against its oracle and that no GPU is held by two
// pods.
func (hs *harness) check() {
	hs.t.Helper()
	s := hs.p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ledger == nil {
		return
	}
	if err := s.ledger.Check(); err != nil {
		hs.t.Fatal(err)
	}
	held := map[string]string{}
	for _, uid := range sortedKeys(s.pods) {
		r := s.pods[uid]
		if !r.applied || r.mig != "" || r.milli > 0 {
			continue // (MIG devices and shares: the ledger's Check)
		}
		for _, g := range r.gpus {
			k := r.node + "/" + strconv.Itoa(g)
			if prev, ok := held[k]; ok {
				hs.t.Fatalf("GPU %s held by %s and %s", k, prev, r.key)
			}
			held[k] = r.key
		}
	}
}

func member(name, gangName string, size, gpus int, extra map[string]string) *v1.Pod {
	p := pod(name, "", gpus, 1000)
	p.Labels = map[string]string{DefaultGangLabel: gangName, DefaultGangSizeKey: strconv.Itoa(size)}
	for k, v := range extra {
		p.Labels[k] = v
	}
	return p
}

func torNodes() []*v1.Node {
	var nodes []*v1.Node
	for _, n := range []struct{ name, tor string }{{"a1", "tor-a"}, {"a2", "tor-a"}, {"b1", "tor-b"}, {"b2", "tor-b"}} {
		nodes = append(nodes, gpuNode(n.name, 8, h100, map[string]string{"net.example.com/tor": n.tor}))
	}
	return nodes
}

func TestSinglePodBestFit(t *testing.T) {
	hs := newHarness(t, &Args{Policy: "best-fit"}, torNodes()...)
	hs.add(pod("busy", "a1", 5, 0))  // a1 keeps 3 free
	hs.add(pod("busy2", "a2", 2, 0)) // the others 6
	hs.add(pod("busy3", "b1", 2, 0))
	hs.add(pod("busy4", "b2", 2, 0))
	p := hs.add(pod("p", "", 3, 1000))
	node, st, _ := hs.schedule(p)
	if st != nil || node != "a1" {
		t.Fatalf("3-GPU pod: node %q, status %v; want a1 (exactly 3 free)", node, st)
	}
	b := hs.bind(p, node)
	// busy took GPUs 0-4 (lowest free): p gets 5, 6, 7.
	if got := b.Annotations[DefaultGPUIndicesAnnotation]; got != "5,6,7" {
		t.Errorf("indices %q, want 5,6,7", got)
	}
	hs.check()
	// A 7-GPU pod fits nowhere although 18 GPUs are free: the status is
	// gpusched's explanation.
	big := hs.add(pod("big", "", 7, 0))
	_, st, _ = hs.schedule(big)
	if st == nil || st.Code() != fwk.Unschedulable || !strings.HasPrefix(st.Message(), "job default/big: needs 7 GPUs") ||
		!strings.Contains(st.Message(), "fragmentation") {
		t.Errorf("7-GPU pod: status %v, want gpusched's explanation blaming fragmentation", st)
	}
	// CPU-only pods are not the plugin's business.
	if _, st, _ := hs.schedule(hs.add(pod("cpu", "", 0, 500))); !st.IsSkip() {
		t.Errorf("CPU-only pod: status %v, want Skip", st)
	}
}

func TestGangAllOrNothing(t *testing.T) {
	args := &Args{TopologyLevels: []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}}
	hs := newHarness(t, args, torNodes()...)
	hs.add(pod("busy", "a1", 6, 0)) // tor-a: 2+8 free; tor-b: 16
	topo := map[string]string{DefaultGangTopologyKey: "tor"}
	var ms []*v1.Pod
	for i := range 3 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 4, 4, topo)))
	}
	// Three of four members: turned away, nothing held.
	if _, st, _ := hs.schedule(ms[0]); st == nil || !strings.Contains(st.Message(), "3 of 4 pods exist") {
		t.Fatalf("incomplete gang: %v", st)
	}
	ms = append(ms, hs.add(member("m3", "g", 4, 4, topo)))
	// The first member to see the whole gang plans it and waits; the
	// member turned away earlier is activated.
	node, st, waiting := hs.schedule(ms[3])
	if st != nil || !waiting {
		t.Fatalf("m3: node %q status %v waiting %v", node, st, waiting)
	}
	if want := []string{"default/m0", "default/m1", "default/m2"}; !slices.Equal(hs.h.activated, want) {
		t.Errorf("activated %v, want the other members %v", hs.h.activated, want)
	}
	nodes := map[string]string{ms[3].Name: node}
	for _, m := range ms[:2] {
		node, st, waiting := hs.schedule(m)
		if st != nil || !waiting {
			t.Fatalf("%s: node %q status %v waiting %v", m.Name, node, st, waiting)
		}
		nodes[m.Name] = node
	}
	hs.check()
	// The last member completes the gang: all are allowed at once.
	node, st, waiting = hs.schedule(ms[2])
	if st != nil || waiting {
		t.Fatalf("last member: status %v waiting %v", st, waiting)
	}
	nodes[ms[2].Name] = node
	for _, m := range ms {
		if w := hs.h.waiting[m.UID]; w != nil && !w.allowed {
			t.Errorf("%s still waiting", m.Name)
		}
		if n := nodes[m.Name]; n != "b1" && n != "b2" {
			t.Errorf("%s on %s, outside tor-b", m.Name, n)
		}
	}
	for _, m := range ms {
		hs.bind(m, nodes[m.Name])
	}
	hs.check()
	if free := hs.freeGPUs(); free != 10 {
		t.Errorf("%d free GPUs, want 10 (32 - 6 busy - 16 gang)", free)
	}
}

func TestGangTimeoutReleasesEverything(t *testing.T) {
	args := &Args{TopologyLevels: []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}, GangTimeoutSeconds: 10}
	hs := newHarness(t, args, torNodes()...)
	var ms []*v1.Pod
	for i := range 3 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 3, 8, map[string]string{DefaultGangTopologyKey: "tor"})))
	}
	// 3 × 8 GPUs in one tor of 16: never placed; nothing held.
	_, st, _ := hs.schedule(ms[0])
	if st == nil || !strings.HasPrefix(st.Message(), "job default/g: needs 24 GPUs") {
		t.Fatalf("status %v, want gpusched's explanation", st)
	}
	hs.check()
	s := hs.p.st
	if n := len(s.plans); n != 0 {
		t.Fatalf("%d plans held for an unplaceable gang", n)
	}

	// A gang that fits, but one member never comes: its reserved member
	// waits, then the plan expires and the GPUs go back.
	var g2 []*v1.Pod
	for i := range 2 {
		g2 = append(g2, hs.add(member(fmt.Sprintf("h%d", i), "h", 2, 8, nil)))
	}
	if _, st, waiting := hs.schedule(g2[0]); st != nil || !waiting {
		t.Fatalf("h0: %v %v", st, waiting)
	}
	if free := hs.freeGPUs(); free != 16 {
		t.Errorf("while the gang is planned: %d free GPUs, want 16 (32 - 2×8 held)", free)
	}
	hs.clock = hs.clock.Add(11 * time.Second)
	// The next scheduling cycle expires the plan and rejects the waiting member.
	hs.schedule(hs.add(pod("other", "", 1, 0)))
	if w := hs.h.waiting[g2[0].UID]; w == nil || w.rejected == "" {
		t.Errorf("h0 not rejected after the plan expired")
	}
	// The scheduler then calls Unreserve for the rejected pod.
	hs.p.Unreserve(context.Background(), hs.states[g2[0].UID], g2[0], "")
	hs.check()
	if free := hs.freeGPUs(); free != 31 {
		t.Errorf("after expiry: %d free GPUs, want 31 (only the 1-GPU pod holds one)", free)
	}
}

func TestGangUnreserveDropsPlan(t *testing.T) {
	hs := newHarness(t, &Args{}, torNodes()...)
	var ms []*v1.Pod
	for i := range 3 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 3, 4, nil)))
	}
	if _, st, waiting := hs.schedule(ms[0]); st != nil || !waiting {
		t.Fatal(st)
	}
	if _, st, waiting := hs.schedule(ms[1]); st != nil || !waiting {
		t.Fatal(st)
	}
	// The scheduler gives up on m1 (say its bind failed before Permit
	// resolved): the whole plan goes, m0 is rejected.
	hs.p.Unreserve(context.Background(), hs.states[ms[1].UID], ms[1], "")
	if w := hs.h.waiting[ms[0].UID]; w == nil || w.rejected == "" {
		t.Error("m0 not rejected when m1 was unreserved")
	}
	hs.p.Unreserve(context.Background(), hs.states[ms[0].UID], ms[0], "")
	hs.check()
	if free := hs.freeGPUs(); free != 32 {
		t.Errorf("%d free GPUs after the plan was dropped, want 32", free)
	}
}

func TestElasticGang(t *testing.T) {
	hs := newHarness(t, &Args{}, torNodes()[:2]...) // 16 GPUs
	var ms []*v1.Pod
	for i := range 4 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 4, 8, map[string]string{DefaultGangMinKey: "2"})))
	}
	// Only two 8-GPU members fit: the gang is placed at its minimum, the
	// other members wait for capacity.
	node, st, waiting := hs.schedule(ms[0])
	if st != nil || !waiting {
		t.Fatalf("m0: %q %v %v", node, st, waiting)
	}
	placed := 1
	for _, m := range ms[1:] {
		_, st, _ := hs.schedule(m)
		switch {
		case st == nil:
			placed++
		case !strings.Contains(st.Message(), "placed without this pod") && !strings.Contains(st.Message(), "capacity"):
			t.Errorf("%s: %v", m.Name, st)
		}
	}
	if placed != 2 {
		t.Errorf("%d members placed, want 2 (the minimum; 16 GPUs)", placed)
	}
	hs.check()
}

func TestRebuildKeepsClaims(t *testing.T) {
	nodes := torNodes()
	hs := newHarness(t, &Args{TopologyLevels: []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}}, nodes...)
	p := hs.add(pod("p", "", 8, 0))
	node, st, _ := hs.schedule(p)
	if st != nil {
		t.Fatal(st)
	}
	hs.bind(p, node)
	annotated := hs.add(func() *v1.Pod {
		q := pod("q", "b2", 2, 0)
		q.Annotations = map[string]string{DefaultGPUIndicesAnnotation: "6,7"}
		return q
	}())
	_ = annotated
	before := hs.freeGPUs()
	// Relabel a node: the cluster is rebuilt on the next cycle.
	n := nodes[0].DeepCopy()
	n.Labels["net.example.com/tor"] = "tor-z"
	hs.p.onNode(n)
	hs.schedule(hs.add(pod("x", "", 0, 0)))
	hs.schedule(hs.add(pod("trigger", "", 1, 0)))
	s := hs.p.st
	if s.builds < 2 {
		t.Fatalf("no rebuild after a label change (builds %d)", s.builds)
	}
	if got := hs.freeGPUs(); got != before-1 {
		t.Errorf("free GPUs %d after rebuild, want %d", got, before-1)
	}
	s.mu.Lock()
	r := s.pods[types.UID("uid-q")]
	s.mu.Unlock()
	if !slices.Equal(r.gpus, []int{6, 7}) {
		t.Errorf("q holds %v, want its annotated 6,7", r.gpus)
	}
	hs.check()
	// Deleting a bound pod gives its GPUs back.
	hs.p.onPodDelete(r2pod(hs, "q"))
	if got := hs.freeGPUs(); got != before+1 {
		t.Errorf("free GPUs %d after deleting q, want %d", got, before+1)
	}
	hs.check()
}

func r2pod(hs *harness, name string) *v1.Pod {
	o, ok, err := hs.pods.GetByKey("default/" + name)
	if err != nil || !ok {
		hs.t.Fatalf("no pod %s", name)
	}
	return o.(*v1.Pod)
}

// TestRandomOperations drives the plugin with random pods, gangs, bindings,
// deletions and node changes, checking after every step that the ledger agrees
// with its oracle and that no GPU is held twice.
func TestRandomOperations(t *testing.T) {
	for seed := range 30 {
		r := newRand(uint64(seed))
		nodes := torNodes()
		hs := newHarness(t, &Args{Policy: []string{"topology", "best-fit", "fgd", "first-fit"}[seed%4],
			TopologyLevels: []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}}, nodes...)
		var live []*v1.Pod
		bound := map[types.UID]string{}
		for step := range 60 {
			switch op := r.IntN(10); {
			case op < 4: // a single pod
				p := hs.add(pod(fmt.Sprintf("p%d-%d", seed, step), "", 1+r.IntN(8), 0))
				if node, st, _ := hs.schedule(p); st == nil {
					bound[p.UID] = node
					hs.bind(p, node)
				}
				live = append(live, p)
			case op < 6: // a gang
				size := 2 + r.IntN(3)
				var ms []*v1.Pod
				for i := range size {
					ms = append(ms, hs.add(member(fmt.Sprintf("g%d-%d-%d", seed, step, i), fmt.Sprintf("g%d", step), size, 1+r.IntN(4),
						map[string]string{DefaultGangTopologyKey: []string{"", "tor", "host"}[r.IntN(3)]})))
				}
				// All members share the first member's topology.
				for _, m := range ms[1:] {
					m.Labels[DefaultGangTopologyKey] = ms[0].Labels[DefaultGangTopologyKey]
				}
				var got []string
				for _, m := range ms {
					if node, st, _ := hs.schedule(m); st == nil {
						got = append(got, node)
					}
				}
				if len(got) != 0 && len(got) != size {
					t.Fatalf("seed %d step %d: %d of %d gang members passed Permit", seed, step, len(got), size)
				}
				if len(got) == size {
					for i, m := range ms {
						bound[m.UID] = got[i]
						hs.bind(m, got[i])
					}
				} else {
					for _, m := range ms {
						if w := hs.h.waiting[m.UID]; w != nil {
							hs.p.Unreserve(context.Background(), hs.states[m.UID], m, "")
							delete(hs.h.waiting, m.UID)
						}
					}
				}
				live = append(live, ms...)
			case op < 9 && len(live) > 0: // delete a pod
				i := r.IntN(len(live))
				p := r2pod(hs, live[i].Name)
				_ = hs.pods.Delete(p)
				hs.p.onPodDelete(p)
				live = slices.Delete(live, i, i+1)
			default: // relabel a node
				n := nodes[r.IntN(len(nodes))].DeepCopy()
				n.Labels["net.example.com/tor"] = []string{"tor-a", "tor-b", "tor-c"}[r.IntN(3)]
				hs.p.onNode(n)
			}
			hs.check()
		}
	}
}

func (hs *harness) freeGPUs() int {
	s := hs.p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	root, _ := s.topo.Cluster.DomainByName(clusterName)
	return s.ledger.FreeGPUs(root)
}

// TestGangEarlyMembersActivated: members turned away while the gang was
// incomplete go back to the active queue when a member sees the whole gang,
// whether or not it fits, so each gets the gang's real verdict.
func TestGangEarlyMembersActivated(t *testing.T) {
	hs := newHarness(t, &Args{TopologyLevels: []TopologyLevel{{Name: "tor", NodeLabel: "net.example.com/tor"}}}, torNodes()...)
	topo := map[string]string{DefaultGangTopologyKey: "tor"}
	m0 := hs.add(member("m0", "g", 3, 8, topo))
	if _, st, _ := hs.schedule(m0); st == nil || !strings.Contains(st.Message(), "1 of 3 pods exist") {
		t.Fatalf("m0: %v", st)
	}
	m1 := hs.add(member("m1", "g", 3, 8, topo))
	if _, st, _ := hs.schedule(m1); st == nil || !strings.Contains(st.Message(), "2 of 3 pods exist") {
		t.Fatalf("m1: %v", st)
	}
	m2 := hs.add(member("m2", "g", 3, 8, topo))
	// 24 GPUs in one tor of 16: does not fit.
	if _, st, _ := hs.schedule(m2); st == nil || !strings.HasPrefix(st.Message(), "job default/g: needs 24 GPUs") {
		t.Fatalf("m2: %v", st)
	}
	if want := []string{"default/m0", "default/m1"}; !slices.Equal(hs.h.activated, want) {
		t.Errorf("activated %v, want %v", hs.h.activated, want)
	}
	// Retried, m0 gets the verdict, and nobody is activated again.
	if _, st, _ := hs.schedule(m0); st == nil || !strings.HasPrefix(st.Message(), "job default/g: needs 24 GPUs") {
		t.Fatalf("m0 again: %v", st)
	}
	if len(hs.h.activated) != 2 {
		t.Errorf("activated %v after the retry, want no more", hs.h.activated)
	}
}

// TestGangMemberDeletedDropsPlan: a planned member deleted before it reserved
// its slot ends the plan at once; the waiting members are rejected and the
// GPUs go back.
func TestGangMemberDeletedDropsPlan(t *testing.T) {
	hs := newHarness(t, &Args{}, torNodes()...)
	var ms []*v1.Pod
	for i := range 3 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 3, 8, nil)))
	}
	if _, st, waiting := hs.schedule(ms[0]); st != nil || !waiting {
		t.Fatal(st)
	}
	if free := hs.freeGPUs(); free != 8 {
		t.Fatalf("%d free GPUs with the gang planned, want 8", free)
	}
	_ = hs.pods.Delete(ms[2])
	hs.p.onPodDelete(ms[2])
	if w := hs.h.waiting[ms[0].UID]; w == nil || w.rejected == "" {
		t.Error("m0 not rejected when m2 was deleted")
	}
	hs.p.Unreserve(context.Background(), hs.states[ms[0].UID], ms[0], "")
	hs.check()
	if free := hs.freeGPUs(); free != 32 {
		t.Errorf("%d free GPUs after the plan was dropped, want 32", free)
	}
}

// TestGangInOneClique: a gang that requires nvlink lands inside one
// multi-node NVLink clique (GB200 trays labelled by GPU feature discovery).
func TestGangInOneClique(t *testing.T) {
	var nodes []*v1.Node
	for _, n := range []struct{ name, clique string }{
		{"gb-r1-t1", "uuid-1.1"}, {"gb-r1-t2", "uuid-1.1"}, {"gb-r2-t1", "uuid-2.1"}, {"gb-r2-t2", "uuid-2.1"},
	} {
		nodes = append(nodes, gpuNode(n.name, 4, "NVIDIA-GB200", map[string]string{DefaultGPUCliqueLabel: n.clique}))
	}
	hs := newHarness(t, &Args{}, nodes...)
	hs.add(pod("busy", "gb-r1-t1", 1, 0)) // clique uuid-1.1 keeps 7 free, uuid-2.1 8
	var ms []*v1.Pod
	for i := range 2 {
		ms = append(ms, hs.add(member(fmt.Sprintf("m%d", i), "g", 2, 4, map[string]string{DefaultGangTopologyKey: "nvlink"})))
	}
	got := map[string]bool{}
	for _, m := range ms {
		node, st, _ := hs.schedule(m)
		if st != nil {
			t.Fatalf("%s: %v", m.Name, st)
		}
		got[node] = true
	}
	if !got["gb-r2-t1"] || !got["gb-r2-t2"] {
		t.Errorf("gang on %v, want both trays of clique uuid-2.1 (the only one with 8 free GPUs)", got)
	}
	hs.check()
}
