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
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// countingDRA is a fakeDRA that counts the claim requests by kind ("get",
// "update", "status"), records the most in flight at once, can hold a
// claim's status write until its channel is closed and can fail a claim's
// next status write.
type countingDRA struct {
	*fakeDRA
	mu        sync.Mutex
	reqs      map[string]int
	now, most int
	hold      map[string]chan struct{}
	fail      map[string]error
	// informer is the informer's copy of a claim where it lags the
	// apiserver's, until the claim's next status write (or, with lag,
	// until the test drops it).
	informer map[string]*resourceapi.ResourceClaim
	lag      bool
}

func (c *countingDRA) claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	c.mu.Lock()
	x := c.informer[ns+"/"+name]
	c.mu.Unlock()
	if x != nil {
		return x, nil
	}
	return c.fakeDRA.claim(ns, name)
}

func (c *countingDRA) shown(ns, name string) (*resourceapi.ResourceClaim, error) {
	return c.claim(ns, name)
}

func newCountingDRA(f *fakeDRA) *countingDRA {
	return &countingDRA{fakeDRA: f, reqs: map[string]int{}, hold: map[string]chan struct{}{}, fail: map[string]error{},
		informer: map[string]*resourceapi.ResourceClaim{}}
}

// begin counts a request of kind and returns its end; each request takes
// a short round trip, so requests made at once overlap.
func (c *countingDRA) begin(kind string) func() {
	c.mu.Lock()
	c.reqs[kind]++
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	time.Sleep(2 * time.Millisecond)
	return func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}
}

func (c *countingDRA) fetch(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	defer c.begin("get")()
	return c.fakeDRA.fetch(ctx, ns, name)
}

func (c *countingDRA) update(ctx context.Context, cl *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	defer c.begin("update")()
	return c.fakeDRA.update(ctx, cl)
}

func (c *countingDRA) updateStatus(ctx context.Context, cl *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	defer c.begin("status")()
	c.mu.Lock()
	hold, err := c.hold[cl.Name], c.fail[cl.Name]
	delete(c.fail, cl.Name)
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if err != nil {
		return nil, err
	}
	out, err := c.fakeDRA.updateStatus(ctx, cl)
	if err == nil {
		c.mu.Lock()
		if !c.lag {
			delete(c.informer, cl.Namespace+"/"+cl.Name)
		}
		c.mu.Unlock()
	}
	return out, err
}

// countingHost is a scheduler-mode host on nodes DGX H100s (dgx-1...)
// with one 1-GPU claim per pod (c-NAME) and a pod per name.
func countingHost(t *testing.T, nodes int, pods ...string) (*host, *fakeIO, *countingDRA) {
	f := newFakeDRA()
	var ns []*v1.Node
	for i := 1; i <= nodes; i++ {
		n := fmt.Sprintf("dgx-%d", i)
		f.slices = append(f.slices, dgxSlice(n))
		ns = append(ns, node(n, -1, nil))
	}
	c := newCountingDRA(f)
	h, io := newTestHost(t, ns...)
	h.dra = newSchedDRA(h.args, c, h, ktesting.NewLogger(t, ktesting.NewConfig()))
	h.dra.settle, h.dra.grace = 0, 0
	for _, p := range pods {
		f.put(claimFor("c-"+p, DefaultDRADeviceClass, 1))
		io.pods = append(io.pods, draPodOf(p, "c-"+p))
	}
	return h, io, c
}

func (f *fakeIO) activatedNow() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.activated)
}

// TestDRAClaimWritesConcurrentTwoRequestsEach: a cycle that binds 32
// 1-GPU pods writes their claims concurrently (more than one request in
// flight, at most claimWriters), with two requests per claim (the
// finalizer, then the allocation and reservation) and no read: the
// informer's copy is the base, and a conflict would read the apiserver's.
func TestDRAClaimWritesConcurrentTwoRequestsEach(t *testing.T) {
	var names []string
	for i := range 32 {
		names = append(names, fmt.Sprintf("p%02d", i))
	}
	h, io, c := countingHost(t, 4, names...)
	h.cycle(context.Background())
	if got := io.activatedNow(); len(got) != len(names) {
		t.Fatalf("activated %d of %d pods: %v; pending %v", len(got), len(names), got, io.pending)
	}
	for _, p := range io.pods {
		a, _ := h.assignmentOf(p.UID)
		claimed(t, c.fakeDRA, "c-"+p.Name, p.UID)
		if why := h.dra.notReady(p, a); why != "" {
			t.Errorf("%s: %s", p.Name, why)
		}
	}
	if c.reqs["get"] != 0 || c.reqs["update"] != 32 || c.reqs["status"] != 32 {
		t.Errorf("requests %v, want no get, 32 updates (finalizer) and 32 status updates", c.reqs)
	}
	if c.most < 2 || c.most > claimWriters {
		t.Errorf("at most %d claim requests in flight at once, want 2 to %d", c.most, claimWriters)
	}
}

// TestDRAPodLetThroughWhenItsClaimsAreWritten: a pod is let through as
// soon as its own claims are written, not after the cycle's slowest.
func TestDRAPodLetThroughWhenItsClaimsAreWritten(t *testing.T) {
	h, io, c := countingHost(t, 1, "a", "b", "slow", "d")
	release := make(chan struct{})
	c.hold["c-slow"] = release
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.cycle(context.Background())
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := io.activatedNow()
		if len(got) == 3 {
			if slices.Contains(got, "slow") {
				t.Errorf("slow let through before its claim was written: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			close(release)
			<-done
			t.Fatalf("the other pods waited for slow's claim: activated %v while it was held", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	<-done
	if got := io.activatedNow(); len(got) != 4 || got[3] != "slow" {
		t.Fatalf("activated %v, want slow last", got)
	}
	claimed(t, c.fakeDRA, "c-slow", "uid-slow")
}

// TestDRAFailedClaimWriteWithdrawsOnlyItsPod: a claim write that fails
// withdraws its pod's binding alone: the others are let through, its GPU
// goes back to the ledger, and the next cycle places it again on a device
// no other claim names.
func TestDRAFailedClaimWriteWithdrawsOnlyItsPod(t *testing.T) {
	h, io, c := countingHost(t, 1, "a", "bad", "c")
	c.fail["c-bad"] = apierrors.NewInternalError(fmt.Errorf("etcd timeout"))
	ctx := context.Background()
	h.cycle(ctx)
	if got := io.activatedNow(); len(got) != 2 || slices.Contains(got, "bad") {
		t.Fatalf("activated %v, want a and c", got)
	}
	if _, ok := h.assignmentOf("uid-bad"); ok {
		t.Errorf("bad keeps its binding after its claim write failed")
	}
	for _, p := range []string{"a", "c"} {
		if _, ok := h.assignmentOf(types.UID("uid-" + p)); !ok {
			t.Errorf("%s lost its binding with bad's", p)
		}
	}
	bindDRA(h, io)
	h.cycle(ctx)
	if got := io.activatedNow(); !slices.Contains(got, "bad") {
		t.Fatalf("bad not placed again: activated %v, pending %v", got, io.pending)
	}
	owner := map[string]string{}
	for _, p := range []string{"a", "bad", "c"} {
		devs, _ := claimed(t, c.fakeDRA, "c-"+p, types.UID("uid-"+p))
		if o, dup := owner[devs]; dup {
			t.Errorf("device %s in the claims of %s and %s", devs, o, p)
		}
		owner[devs] = p
	}
	if free, _ := (ledgerGPUs{h}).freeGPUs("dgx-1"); free != 5 {
		t.Errorf("%d GPUs free on dgx-1, want 5 (bad's first GPU went back)", free)
	}
}

// TestDRAStaleInformerCopyReadsOnce: when the informer's copy is stale (a
// write it does not show yet), the write's conflict reads the apiserver's
// copy and the claim is written on it.
func TestDRAStaleInformerCopyReadsOnce(t *testing.T) {
	h, io, c := countingHost(t, 1, "a")
	stale := c.claims["default/c-a"]
	x := stale.DeepCopy()
	x.Annotations = map[string]string{"touched": "yes"}
	c.put(x) // the apiserver's copy moved on
	c.informer["default/c-a"] = stale
	h.cycle(context.Background())
	if got := io.activatedNow(); strings.Join(got, ",") != "a" {
		t.Fatalf("activated %v, want a", got)
	}
	if c.reqs["get"] != 1 {
		t.Errorf("requests %v, want one get after the conflict", c.reqs)
	}
	claimed(t, c.fakeDRA, "c-a", "uid-a")
}

// TestDRAClaimWritesStoppedWithdraw: a cycle whose context ends before
// its claims are written lets none of their pods through and withdraws
// their bindings (they are placed again).
func TestDRAClaimWritesStoppedWithdraw(t *testing.T) {
	h, io, c := countingHost(t, 1, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.cycle(ctx)
	if got := io.activatedNow(); len(got) != 0 || c.reqs["status"] != 0 {
		t.Fatalf("activated %v, requests %v", got, c.reqs)
	}
	for _, p := range []string{"a", "b"} {
		if _, ok := h.assignmentOf(types.UID("uid-" + p)); ok {
			t.Errorf("%s keeps a binding its claims were not written for", p)
		}
	}
	h.cycle(context.Background())
	if got := io.activatedNow(); len(got) != 2 {
		t.Fatalf("activated %v after the next cycle, want a and b", got)
	}
}

// TestDRAPodTurnedBackLetThroughAgain: a pod let through before the
// informer showed its claims (the wait for it gave up) is turned back at
// PreEnqueue; a later cycle lets it through again once the informer shows
// them, and writes nothing more.
func TestDRAPodTurnedBackLetThroughAgain(t *testing.T) {
	h, io, c := countingHost(t, 1, "a")
	c.informer["default/c-a"], c.lag = c.claims["default/c-a"], true
	ctx := context.Background()
	h.cycle(ctx)
	a, ok := h.assignmentOf("uid-a")
	if got := io.activatedNow(); !ok || strings.Join(got, ",") != "a" || h.dra.notReady(io.pods[0], a) == "" {
		t.Fatalf("activated %v, want a let through while the informer lags", got)
	}
	io.mu.Lock()
	io.activated = nil // PreEnqueue turned it back
	io.mu.Unlock()
	h.cycle(ctx)
	if got := io.activatedNow(); len(got) != 0 {
		t.Fatalf("let through again while its claim does not show: %v", got)
	}
	c.mu.Lock()
	delete(c.informer, "default/c-a")
	c.mu.Unlock()
	writes := len(c.writes)
	h.cycle(ctx)
	if got := io.activatedNow(); strings.Join(got, ",") != "a" {
		t.Fatalf("activated %v once the informer shows its claim, want a", got)
	}
	if len(c.writes) != writes {
		t.Errorf("wrote %v again", c.writes[writes:])
	}
	claimed(t, c.fakeDRA, "c-a", "uid-a")
}

// TestDRAClaimMovedStaysReserved: a claim allocated and reserved for its
// pod by an earlier binding that was withdrawn (kube's DynamicResources
// refused it at PreBind: "allocated elsewhere in the meantime") is
// written for the pod's new binding on other devices: allocated there
// and still reserved for the pod, which is let through. The stale
// reservation once kept the moved claim reserved for nobody, and the pod
// waited at PreEnqueue for ever (BenchmarkDRAScale, 16 of 600 pods).
func TestDRAClaimMovedStaysReserved(t *testing.T) {
	f := oneDGX(map[string]int{"c": 1})
	c := f.claims["default/c"].DeepCopy()
	c.Finalizers = []string{resourceapi.Finalizer}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "r0", Driver: DefaultDRADriver, Pool: "dgx-1", Device: "gpu-7"}}}}
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "uid-p"}}
	f.put(c)
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("p", "c")}
	h.cycle(context.Background())
	devs, _ := claimed(t, f, "c", "uid-p")
	if devs == "gpu-7" {
		t.Fatalf("placed on the claim's old device %s: the test wants another", devs)
	}
	a, ok := h.assignmentOf("uid-p")
	if !ok || !slices.Contains(io.activated, "p") || why(h, io.pods[0], a) != "" {
		t.Fatalf("p not let through (activated %v): %q", io.activated, why(h, io.pods[0], a))
	}
}

// TestDRAPodLetThroughAfterItsCondition: a pod whose claims a cycle
// writes is let through only once the condition being written for it
// (from when it waited) is written: none may land after its binding.
func TestDRAPodLetThroughAfterItsCondition(t *testing.T) {
	h, io, _ := countingHost(t, 1, "a")
	writing, release := make(chan struct{}), make(chan struct{})
	h.conds = newCondWriter(func(context.Context, podEvent) {
		close(writing)
		<-release
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	h.conds.run(ctx, 1)
	defer h.conds.wait()
	defer cancel()
	h.conds.put([]podEvent{{pod: io.pods[0], why: "x", what: "waiting"}})
	<-writing
	done := make(chan struct{})
	go func() {
		h.cycle(ctx)
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	if got := io.activatedNow(); len(got) != 0 {
		t.Errorf("let through %v while its condition was being written", got)
	}
	close(release)
	<-done
	if got := io.activatedNow(); strings.Join(got, ",") != "a" {
		t.Fatalf("activated %v, want a", got)
	}
}
