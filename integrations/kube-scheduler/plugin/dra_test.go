package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
)

// fakeDRA is draIO over in-memory slices and claims. Like the apiserver,
// it refuses to change an allocation (only to set or clear it) and a
// write of a stale resourceVersion.
type fakeDRA struct {
	slices  []*resourceapi.ResourceSlice
	claims  map[string]*resourceapi.ResourceClaim
	classes map[string]*resourceapi.DeviceClass
	rules   []*resourceapi.DeviceTaintRule
	rv      int
	writes  []string // "status CLAIM", "update CLAIM"
	// mu guards claims, rv and writes in the draIO methods: scheduler
	// mode writes a cycle's claims concurrently.
	mu sync.Mutex
}

// newFakeDRA has no slices or claims, and the DeviceClasses of NVIDIA's
// driver (whole GPUs, MIG devices, IMEX channels) and of a NIC driver.
func newFakeDRA() *fakeDRA {
	f := &fakeDRA{claims: map[string]*resourceapi.ResourceClaim{}, classes: map[string]*resourceapi.DeviceClass{}}
	for name, expr := range map[string]string{
		DefaultDRADeviceClass:    `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`,
		DefaultDRAMIGDeviceClass: `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`,
		DefaultDRAChannelClass:   `device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == 'channel'`,
		"nic.example.com":        `device.driver == 'nic.example.com'`,
	} {
		f.putClass(name, expr)
	}
	return f
}

// putClass adds (or replaces) a DeviceClass with one CEL selector per
// expression.
func (f *fakeDRA) putClass(name string, exprs ...string) {
	f.rv++
	dc := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: strconv.Itoa(f.rv)}}
	for _, e := range exprs {
		dc.Spec.Selectors = append(dc.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	f.classes[name] = dc
}
func (f *fakeDRA) class(name string) (*resourceapi.DeviceClass, error) { return f.classes[name], nil }

func (f *fakeDRA) synced() bool { return true }
func (f *fakeDRA) listSlices() ([]*resourceapi.ResourceSlice, error) {
	return f.slices, nil
}
func (f *fakeDRA) listTaintRules() ([]*resourceapi.DeviceTaintRule, error) {
	return f.rules, nil
}
func (f *fakeDRA) listClaims() ([]*resourceapi.ResourceClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*resourceapi.ResourceClaim
	for _, k := range sortedKeys(f.claims) {
		out = append(out, f.claims[k])
	}
	return out, nil
}
func (f *fakeDRA) claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claims[ns+"/"+name], nil
}
func (f *fakeDRA) shown(ns, name string) (*resourceapi.ResourceClaim, error) {
	return f.claim(ns, name)
}
func (f *fakeDRA) fetch(_ context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.claims[ns+"/"+name]
	if c == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, name)
	}
	return c, nil
}
func (f *fakeDRA) put(c *resourceapi.ResourceClaim) {
	f.rv++
	c = c.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.claims[c.Namespace+"/"+c.Name] = c
}
func (f *fakeDRA) check(c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	cur := f.claims[c.Namespace+"/"+c.Name]
	if cur == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "resourceclaims"}, c.Name)
	}
	if cur.ResourceVersion != c.ResourceVersion {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "resourceclaims"}, c.Name, fmt.Errorf("stale"))
	}
	return cur, nil
}
func (f *fakeDRA) update(_ context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.check(c)
	if err != nil {
		return nil, err
	}
	x := cur.DeepCopy()
	x.Finalizers = c.Finalizers
	f.put(x)
	f.writes = append(f.writes, "update "+c.Name)
	return f.claims[c.Namespace+"/"+c.Name], nil
}
func (f *fakeDRA) updateStatus(_ context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.check(c)
	if err != nil {
		return nil, err
	}
	if cur.Status.Allocation != nil && c.Status.Allocation != nil && !sameDevices(cur.Status.Allocation, c.Status.Allocation) {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ResourceClaim"}, c.Name, nil)
	}
	x := cur.DeepCopy()
	x.Status = *c.Status.DeepCopy()
	f.put(x)
	f.writes = append(f.writes, "status "+c.Name)
	return f.claims[c.Namespace+"/"+c.Name], nil
}

// dgxSlice publishes the 8 GPUs of a DGX H100 as NVIDIA's DRA driver
// does: gpu-0..gpu-7 with their index, productName, uuid and PCIe root
// (two per root, four roots per NUMA node). The devices are listed in
// reverse order: the index attribute orders them.
func dgxSlice(node string) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpu.nvidia.com", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRADriver, NodeName: &node,
			Pool: resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1}}}
	for i := 7; i >= 0; i-- {
		idx := int64(i)
		str := func(v string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &v} }
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type": str("gpu"), "index": {IntValue: &idx}, "productName": str("NVIDIA H100 80GB HBM3"),
			"uuid": str(fmt.Sprintf("GPU-%s-%d", node, i)), "resource.kubernetes.io/pcieRoot": str(fmt.Sprintf("pci0000:%02x", 0x10*(i/2+1))),
		}})
	}
	return s
}

// claimFor is a ResourceClaim of count devices of class per request.
func claimFor(name, class string, counts ...int) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("claim-" + name)}}
	for i, n := range counts {
		c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i),
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(n)}})
	}
	return c
}

// draPodOf is a scheduler-mode pod using the named claims.
func draPodOf(name string, claims ...string) *v1.Pod {
	p := schedPod(name, 0, nil)
	for _, c := range claims {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: &c})
	}
	return p
}

// oneDGX is a fakeDRA with one DGX H100, dgx-1, and a GPU claim per
// name with that many GPUs (one request).
func oneDGX(gpuClaims map[string]int) *fakeDRA {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("dgx-1")}
	for _, name := range sortedKeys(gpuClaims) {
		f.put(claimFor(name, DefaultDRADeviceClass, gpuClaims[name]))
	}
	return f
}

// oneRunning is a DRA host on one DGX (claims as oneDGX) whose pod name
// runs, bound on its claim; devs are the devices the claim names.
func oneRunning(t *testing.T, claims map[string]int, name, claim string) (h *host, io *fakeIO, f *fakeDRA, devs string) {
	f = oneDGX(claims)
	h, io = newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf(name, claim)}
	h.cycle(context.Background())
	bindDRA(h, io)
	h.cycle(context.Background())
	devs, _ = claimed(t, f, claim, types.UID("uid-"+name))
	return h, io, f, devs
}

func newDRAHost(t *testing.T, f *fakeDRA, nodes ...*v1.Node) (*host, *fakeIO) {
	h, io := newTestHost(t, nodes...)
	h.dra = newSchedDRA(h.args, f, h, ktesting.NewLogger(t, ktesting.NewConfig()))
	h.dra.settle, h.dra.grace = 0, 0
	return h, io
}

// claimed returns the devices a claim's allocation names ("gpu-4,gpu-5")
// and its node, failing unless it is reserved for its pod only.
func claimed(t *testing.T, f *fakeDRA, name string, pod types.UID) (string, string) {
	t.Helper()
	c := f.claims["default/"+name]
	if c.Status.Allocation == nil {
		t.Fatalf("claim %s not allocated", name)
	}
	if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != pod || c.Status.ReservedFor[0].Resource != "pods" {
		t.Errorf("claim %s reserved for %+v, want its pod %s", name, c.Status.ReservedFor, pod)
	}
	if !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
		t.Errorf("claim %s has no %s finalizer", name, resourceapi.Finalizer)
	}
	var devs []string
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != DefaultDRADriver {
			t.Errorf("claim %s: device %s of driver %s", name, r.Device, r.Driver)
		}
		devs = append(devs, r.Device)
	}
	ns := c.Status.Allocation.NodeSelector
	node := ""
	if ns != nil && len(ns.NodeSelectorTerms) == 1 && len(ns.NodeSelectorTerms[0].MatchFields) == 1 {
		node = ns.NodeSelectorTerms[0].MatchFields[0].Values[0]
	}
	return strings.Join(devs, ","), node
}

// bindDRA binds every pod with an assignment, without the indices
// annotation: the claims are the record.
func bindDRA(h *host, io *fakeIO) {
	for i, p := range io.pods {
		if a, ok := h.assignmentOf(p.UID); ok {
			b := p.DeepCopy()
			b.Spec.NodeName = a.node
			io.pods[i] = b
		}
	}
}

// numaOf is the NUMA node of a DGX H100 GPU device ("gpu-5" → 1).
func numaOf(dev string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(dev, "gpu-"))
	return i / 4
}

// TestDRAAllocatesChosenGPUs: gpusched writes the GPUs it chose into the
// pods' claims before letting them through; a 2-GPU pod on a half-used
// DGX gets a pair on one NUMA node; no device is in two claims; a claim
// of another driver's class is left to kube.
func TestDRAAllocatesChosenGPUs(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("dgx-1")}
	f.put(claimFor("four", DefaultDRADeviceClass, 4))
	f.put(claimFor("two", DefaultDRADeviceClass, 1, 1))
	f.put(claimFor("nic", "nic.example.com", 1))
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("a", "four")}
	h.cycle(ctx)
	if strings.Join(io.activated, ",") != "a" {
		t.Fatalf("activated %v, want a; pending %v", io.activated, io.pending)
	}
	devs, node := claimed(t, f, "four", "uid-a")
	a, _ := h.assignmentOf("uid-a")
	if node != "dgx-1" || len(a.gpus) != 4 {
		t.Fatalf("claim four on %q (%s), assignment %+v", node, devs, a)
	}
	var want []string
	for _, i := range a.gpus {
		want = append(want, fmt.Sprintf("gpu-%d", i))
	}
	if devs != strings.Join(want, ",") {
		t.Errorf("claim four names %s; gpusched chose %s", devs, strings.Join(want, ","))
	}
	if n0 := numaOf(want[0]); slices.ContainsFunc(want, func(d string) bool { return numaOf(d) != n0 }) {
		t.Errorf("4 GPUs %v span NUMA nodes", want)
	}
	if why := h.dra.notReady(io.pods[0], a); why != "" {
		t.Errorf("a is not let through after its claim was written: %s", why)
	}
	other := a
	other.gpus = []int{9}
	if why := h.dra.notReady(io.pods[0], other); !strings.Contains(why, "waiting for its ResourceClaim") {
		t.Errorf("a let through on a binding its claims were not written for: %q", why)
	}
	bindDRA(h, io)

	// The second pod: two requests of one GPU, and a NIC claim kube
	// allocates.
	io.pods = append(io.pods, draPodOf("b", "two", "nic"))
	h.cycle(ctx)
	if !slices.Contains(io.activated, "b") {
		t.Fatalf("activated %v, want b too; pending %v", io.activated, io.pending)
	}
	devs2, _ := claimed(t, f, "two", "uid-b")
	pair := strings.Split(devs2, ",")
	if len(pair) != 2 || numaOf(pair[0]) != numaOf(pair[1]) {
		t.Errorf("2-GPU pod on the half-used DGX got %v, want a pair on one NUMA node", pair)
	}
	for _, d := range pair {
		if strings.Contains(","+devs+",", ","+d+",") {
			t.Errorf("device %s in claims four (%s) and two (%s)", d, devs, devs2)
		}
	}
	if c := f.claims["default/nic"]; c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0 {
		t.Errorf("gpusched wrote the NIC claim: %+v", c.Status)
	}
	if r := f.claims["default/two"].Status.Allocation.Devices.Results; r[0].Request != "r0" || r[1].Request != "r1" {
		t.Errorf("requests of claim two: %+v", r)
	}
}

// TestDRAUnsupportedClaimWaits: a GPU claim mixing an admin access
// request (kube's) with one gpusched allocates, or a NIC request, is not
// placed; the pod waits saying why, and gpusched writes nothing.
func TestDRAUnsupportedClaimWaits(t *testing.T) {
	f := newFakeDRA()
	f.slices = []*resourceapi.ResourceSlice{dgxSlice("dgx-1")}
	c := claimFor("sel", DefaultDRADeviceClass, 1, 1)
	yes := true
	c.Spec.Devices.Requests[0].Exactly.AdminAccess = &yes
	f.put(c)
	mixed := claimFor("mixed", DefaultDRADeviceClass, 1)
	mixed.Spec.Devices.Requests = append(mixed.Spec.Devices.Requests, claimFor("x", "nic.example.com", 1).Spec.Devices.Requests[0])
	mixed.Spec.Devices.Requests[1].Name = "nic"
	f.put(mixed)
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	io.pods = []*v1.Pod{draPodOf("s", "sel"), draPodOf("m", "mixed"), draPodOf("gone", "nothere")}
	h.cycle(context.Background())
	if len(io.activated) != 0 || len(f.writes) != 0 {
		t.Fatalf("activated %v, writes %v", io.activated, f.writes)
	}
	for pod, want := range map[string]string{"s": `request "r0" asks for adminAccess, which kube's allocator gives`, "m": "mixes the GPU class", "gone": "does not exist yet"} {
		if !strings.Contains(io.pending[pod], want) {
			t.Errorf("%s: reason %q, want %q", pod, io.pending[pod], want)
		}
	}
}

// TestDRARestartReadsClaims: a restarted scheduler restores bound DRA pods
// on the GPUs their claims' allocations name, with no indices
// annotation, and places a new pod around them.
func TestDRARestartReadsClaims(t *testing.T) {
	_, io, f, six := oneRunning(t, map[string]int{"c6": 6, "c2": 2, "c4": 4}, "six", "c6")
	ctx := context.Background()
	for _, p := range io.pods {
		if p.Annotations[DefaultGPUIndicesAnnotation] != "" {
			t.Fatalf("test pod carries the indices annotation")
		}
	}

	// A new scheduler: the running pod's claim is the record.
	h2, io2 := newDRAHost(t, f, node("dgx-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), draPodOf("four", "c4"), draPodOf("two", "c2"))
	h2.cycle(ctx)
	if st, ok := h2.s.Job("default/six"); !ok || st.State.String() != "running" {
		t.Fatalf("six not restored as running: %+v", st)
	}
	if slices.Contains(io2.activated, "four") {
		t.Errorf("four let through with 2 GPUs free")
	}
	if !slices.Contains(io2.activated, "two") {
		t.Fatalf("activated %v, want two; pending %v", io2.activated, io2.pending)
	}
	two, _ := claimed(t, f, "c2", "uid-two")
	for _, d := range strings.Split(two, ",") {
		if strings.Contains(","+six+",", ","+d+",") {
			t.Errorf("device %s given to two (%s) is six's (%s)", d, two, six)
		}
	}
	if !strings.Contains(io2.pending["four"], "capacity") && !strings.Contains(io2.pending["four"], "free") {
		t.Errorf("four: reason %q", io2.pending["four"])
	}
}

// TestDRAStaleAllocationReleased: a claim allocated for a pod that is not
// bound and that gpusched did not bind (a scheduler stopped between its
// write and the binding) is not held: the restarted scheduler releases it
// and allocates the pod afresh; a claim of an ended pod is released.
func TestDRAStaleAllocationReleased(t *testing.T) {
	f := oneDGX(map[string]int{"c": 8, "done": 1})
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("p", "c")}
	h.cycle(ctx)
	claimed(t, f, "c", "uid-p")
	ended := draPodOf("ended", "done")
	ended.Spec.NodeName, ended.Status.Phase = "dgx-1", v1.PodSucceeded
	d := f.claims["default/done"].DeepCopy()
	d.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "r0", Driver: DefaultDRADriver, Pool: "dgx-1", Device: "gpu-0"}}}}
	d.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "ended", UID: ended.UID}}
	f.put(d)

	h2, io2 := newDRAHost(t, f, node("dgx-1", -1, nil))
	io2.pods = append(slices.Clone(io.pods), ended)
	h2.cycle(ctx)
	if c := f.claims["default/done"]; c.Status.Allocation != nil {
		t.Errorf("claim of an ended pod still allocated: %+v", c.Status)
	}
	if !slices.Contains(io2.activated, "p") {
		t.Fatalf("p not placed again: activated %v, pending %v", io2.activated, io2.pending)
	}
	claimed(t, f, "c", "uid-p")
	if !slices.Contains(f.writes, "status c") {
		t.Errorf("writes %v", f.writes)
	}
}

// TestDRAGangPartlyBoundAtRestart: a gang whose claims were written and
// one of whose members was bound when the scheduler stopped completes on
// the GPUs its claims name; one stopped before any member had its plan
// written is released and placed again. No device is in two claims.
func TestDRAGangPartlyBoundAtRestart(t *testing.T) {
	for _, planned := range []bool{true, false} {
		t.Run(fmt.Sprintf("planned=%t", planned), func(t *testing.T) {
			f := oneDGX(map[string]int{"g0": 4, "g1": 4})
			f.slices = append(f.slices, dgxSlice("dgx-2"))
			nodes := []*v1.Node{node("dgx-1", -1, nil), node("dgx-2", -1, nil)}
			h, io := newDRAHost(t, f, nodes...)
			ctx := context.Background()
			g := map[string]string{DefaultGangLabel: "g", DefaultGangSizeKey: "2"}
			for _, name := range []string{"g0", "g1"} {
				p := draPodOf("m-"+name, name)
				p.Labels = g
				io.pods = append(io.pods, p)
			}
			h.cycle(ctx)
			if strings.Join(io.activated, ",") != "m-g0,m-g1" {
				t.Fatalf("activated %v, want the gang", io.activated)
			}
			before := map[string]string{}
			for _, c := range []string{"g0", "g1"} {
				devs, node := claimed(t, f, c, types.UID("uid-m-"+c))
				before[c] = node + ":" + devs
			}
			// The scheduler stops with m-g0 bound.
			a, _ := h.assignmentOf("uid-m-g0")
			b := io.pods[0].DeepCopy()
			b.Spec.NodeName = a.node
			io.pods[0] = b
			for i, p := range io.pods {
				// The claims are the record of the GPUs, not the annotation.
				q := p.DeepCopy()
				delete(q.Annotations, DefaultGPUIndicesAnnotation)
				if !planned {
					delete(q.Annotations, PlannedNodeAnnotation)
				}
				io.pods[i] = q
			}
			if !planned {
				// (then m-g0 could not have been bound: unbind it)
				io.pods[0].Spec.NodeName = ""
			}
			h2, io2 := newDRAHost(t, f, nodes...)
			io2.pods = slices.Clone(io.pods)
			h2.cycle(ctx)
			h2.cycle(ctx)
			if planned {
				if !slices.Contains(io2.activated, "m-g1") {
					t.Fatalf("gang not completed: activated %v, pending %v", io2.activated, io2.pending)
				}
				a1, _ := h2.assignmentOf("uid-m-g1")
				devs, node := claimed(t, f, "g1", "uid-m-g1")
				if node+":"+devs != before["g1"] || why(h2, io2.pods[1], a1) != "" {
					t.Errorf("m-g1 completed on %s:%s (ready: %q); its claim named %s", node, devs, why(h2, io2.pods[1], a1), before["g1"])
				}
			} else if strings.Join(io2.activated, ",") != "m-g0,m-g1" {
				t.Fatalf("gang not placed again: activated %v, pending %v", io2.activated, io2.pending)
			}
			owner := map[string]string{}
			for _, c := range []string{"g0", "g1"} {
				devs, node := claimed(t, f, c, types.UID("uid-m-"+c))
				for _, d := range strings.Split(devs, ",") {
					if o, dup := owner[node+"/"+d]; dup {
						t.Errorf("%s/%s in claims %s and %s", node, d, o, c)
					}
					owner[node+"/"+d] = c
				}
			}
		})
	}
}

func why(h *host, p *v1.Pod, a assignment) string { return h.dra.notReady(p, a) }

// TestDRATemplateClaims: a claim made from a ResourceClaimTemplate is
// found through the pod's status.resourceClaimStatuses; before kube's
// resourceclaim controller has made it, the pod waits saying so.
func TestDRATemplateClaims(t *testing.T) {
	f := oneDGX(map[string]int{"t-gpus-x7k": 2})
	h, io := newDRAHost(t, f, node("dgx-1", -1, nil))
	tmpl := "two-gpus"
	p := schedPod("t", 0, nil)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl}}
	io.pods = []*v1.Pod{p}
	h.cycle(context.Background())
	if len(io.activated) != 0 || !strings.Contains(io.pending["t"], `ResourceClaim "gpus" (from a template) is not made yet`) {
		t.Fatalf("activated %v, reason %q", io.activated, io.pending["t"])
	}
	q := p.DeepCopy()
	made := "t-gpus-x7k"
	q.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpus", ResourceClaimName: &made}}
	io.pods = []*v1.Pod{q}
	h.cycle(context.Background())
	if strings.Join(io.activated, ",") != "t" {
		t.Fatalf("activated %v, reason %q", io.activated, io.pending["t"])
	}
	if devs, _ := claimed(t, f, made, "uid-t"); len(strings.Split(devs, ",")) != 2 {
		t.Errorf("claim names %s", devs)
	}
}

// TestDRADeviceTaintRecovers: a GPU device tainted NoExecute by the driver
// is a failed GPU: the job on it is recovered (its pod left running, as
// without deleteOnRecovery), and no new pod gets it.
func TestDRADeviceTaintRecovers(t *testing.T) {
	h, io, f, dev := oneRunning(t, map[string]int{"c1": 1, "c6": 6, "n1": 1}, "one", "c1")
	ctx := context.Background()
	s := f.slices[0].DeepCopy()
	s.ResourceVersion = "2"
	for i := range s.Spec.Devices {
		if s.Spec.Devices[i].Name == dev {
			s.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{{Key: "gpu.nvidia.com/xid", Value: "79", Effect: resourceapi.DeviceTaintEffectNoExecute}}
		}
	}
	f.slices = []*resourceapi.ResourceSlice{s}
	io.pods = append(io.pods, draPodOf("six", "c6"), draPodOf("next", "n1"))
	h.cycle(ctx)
	if !slices.ContainsFunc(io.events, func(e string) bool { return strings.HasPrefix(e, "one "+ReasonRecovery) }) {
		t.Errorf("no recovery for the pod on the tainted GPU %s: events %v", dev, io.events)
	}
	got := map[string]bool{}
	for _, c := range []string{"c6", "n1"} {
		if f.claims["default/"+c].Status.Allocation == nil {
			continue
		}
		devs, _ := claimed(t, f, c, types.UID("uid-"+map[string]string{"c6": "six", "n1": "next"}[c]))
		for _, d := range strings.Split(devs, ",") {
			if d == dev || got[d] {
				t.Errorf("device %s given again (claim %s: %s)", d, c, devs)
			}
			got[d] = true
		}
	}
	if len(got) != 7 {
		t.Errorf("%d healthy GPUs allocated, want the 7 untainted ones (activated %v, pending %v)", len(got), io.activated, io.pending)
	}
}

// TestDRALayoutFromSlices: a node no machine preset fits (four L40S)
// takes its NUMA nodes and PCIe roots from the slices' numaNode and
// pcieRoot attributes: after a 1-GPU pod, a 2-GPU pod gets the pair of
// the other NUMA node, not one across both.
func TestDRALayoutFromSlices(t *testing.T) {
	f := newFakeDRA()
	name := "pcie-1"
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-gpu", ResourceVersion: "1"},
		Spec: resourceapi.ResourceSliceSpec{Driver: DefaultDRADriver, NodeName: &name, Pool: resourceapi.ResourcePool{Name: name, ResourceSliceCount: 1}}}
	for i := range 4 {
		idx, numa := int64(i), int64(i/2)
		prod, root := "NVIDIA L40S", fmt.Sprintf("pci0000:%02x", 0x20*(i+1))
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"index": {IntValue: &idx}, "productName": {StringValue: &prod},
			"resource.kubernetes.io/numaNode": {IntValue: &numa}, "resource.kubernetes.io/pcieRoot": {StringValue: &root}}})
	}
	f.slices = []*resourceapi.ResourceSlice{s}
	f.putClass(DefaultDRADeviceClass, `device.driver == 'gpu.nvidia.com'`) // (the devices have no type)
	f.put(claimFor("one", DefaultDRADeviceClass, 1))
	f.put(claimFor("two", DefaultDRADeviceClass, 2))
	h, io := newDRAHost(t, f, node(name, -1, nil))
	ctx := context.Background()
	io.pods = []*v1.Pod{draPodOf("a", "one")}
	h.cycle(ctx)
	bindDRA(h, io)
	io.pods = append(io.pods, draPodOf("b", "two"))
	h.cycle(ctx)
	one, _ := claimed(t, f, "one", "uid-a")
	two, _ := claimed(t, f, "two", "uid-b")
	pair := strings.Split(two, ",")
	if len(pair) != 2 || numaOf2(pair[0]) != numaOf2(pair[1]) || numaOf2(pair[0]) == numaOf2(one) {
		t.Errorf("after %s, the 2-GPU pod got %v; want the other NUMA node's pair", one, pair)
	}
	if h.topo.Cluster.Link(0, 1).Kind == h.topo.Cluster.Link(0, 2).Kind {
		t.Errorf("GPUs 0-1 (%s) and 0-2 (%s) are linked alike: no NUMA layout", h.topo.Cluster.Link(0, 1).Kind, h.topo.Cluster.Link(0, 2).Kind)
	}
}

// numaOf2 is the NUMA node of a device of TestDRALayoutFromSlices.
func numaOf2(dev string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(dev, "gpu-"))
	return i / 2
}

// TestDRACliqueFromSlices: nodes whose GPUs publish one cliqueId share a
// multi-node NVLink domain, as with GPU feature discovery's clique label.
func TestDRACliqueFromSlices(t *testing.T) {
	f := newFakeDRA()
	var nodes []*v1.Node
	for _, name := range []string{"gb-t01", "gb-t02", "gb-t03"} {
		s := dgxSlice(name)
		clique := "4c2a1e7b-0000-0000-0000-000000000001.7"
		if name == "gb-t03" {
			clique = "4c2a1e7b-0000-0000-0000-000000000001.8"
		}
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Attributes["cliqueId"] = resourceapi.DeviceAttribute{StringValue: &clique}
		}
		f.slices = append(f.slices, s)
		nodes = append(nodes, node(name, -1, nil))
	}
	h, _ := newDRAHost(t, f, nodes...)
	h.cycle(context.Background())
	c := h.topo.Cluster
	fabric := func(name string) string {
		hid, _ := c.HostByName(name)
		first, _ := c.HostGPUs(hid)
		return fmt.Sprint(c.GPUFabric(first))
	}
	if fabric("gb-t01") != fabric("gb-t02") || fabric("gb-t01") == fabric("gb-t03") {
		t.Errorf("fabrics %s %s %s: want t01 and t02 in one clique, t03 in another", fabric("gb-t01"), fabric("gb-t02"), fabric("gb-t03"))
	}
}
