package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/gpusched/gpusched/topology"
)

// Dynamic Resource Allocation in placement mode (docs/dra.md, "Placement
// mode and DRA").
//
// Placement mode reads the GPU driver's ResourceSlices with scheduler
// mode's DRA concern (drat, dra.go): informer handlers give the state
// (state.go) nodes and pods as drat sees them (a DRA node with its GPUs as
// allocatable GPUs, a pod with GPU claims requesting their GPUs and, once
// bound, holding the GPUs their allocations name). kube's queue decides
// when a pod is scheduled; in its cycle:
//
//   - GPUSched's PreFilter, which must run before DynamicResources' (the
//     profile lists GPUSched under preFilter), places a pod with GPU claims
//     there and then (a gang member: its gang's plan), narrows the pod to
//     that node, and puts each GPU claim, allocated to the chosen devices,
//     into kube's claim tracker (SharedDRAManager().ResourceClaims(),
//     AssumeClaimAfterAPICall) without writing it: DynamicResources'
//     PreFilter then finds the claims allocated, checks their node and
//     allocates only the pod's other claims (NICs), counting gpusched's
//     devices as taken;
//   - an assumption not taken by Reserve before the next PreFilter (the
//     pod failed a filter, or its cycle ended otherwise) is restored: the
//     tracker goes back to the informer's claim;
//   - PreBind writes each claim's allocation and kube's delete-protection
//     finalizer; DynamicResources' PreBind adds the pod to reservedFor
//     (before gpusched's write it writes the assumed allocation itself;
//     after it, it refetches the claim on conflict): either order leaves
//     the claim allocated, finalized and reserved once;
//   - Unreserve (any failure after Reserve, PreBind and Bind included)
//     clears what gpusched wrote and restores the tracker.
//
// A pod may hold several MIG devices (dra_migs.go: one task each, on one
// node); ComputeDomain channel claims are assumed and written with the
// GPU claims, on the pod's node (dra_computedomain.go); a claim another
// pod holds is shared, not allocated again (dra_shared.go).

// draTracker is the part of kube's claim tracker (fwk.ResourceClaimTracker)
// placement mode uses.
type draTracker interface {
	Get(namespace, claimName string) (*resourceapi.ResourceClaim, error)
	AssumeClaimAfterAPICall(claim *resourceapi.ResourceClaim) error
	AssumedClaimRestore(namespace, claimName string)
}

// placeDRA is placement mode's DRA concern. mu guards d and holds; vmu
// guards views alone (read under state.mu, so it is taken last).
type placeDRA struct {
	mu      sync.Mutex
	d       *drat
	tracker draTracker
	log     klog.Logger
	now     func() time.Time
	nodes   map[string]*v1.Node // as the informer gave them
	holds   map[types.UID]*draHold
	// unsettled are the bound pods whose claims did not all name their
	// devices when last seen (the claims informer behind the pods'):
	// refresh looks at them again.
	unsettled map[types.UID]bool
	// avoid are nodes a pod's planned node failed other filters on (the
	// next placement avoids them), by pod.
	avoid map[types.UID][]string
	// channels are the ComputeDomain channel devices free on each node
	// (no claim allocated or held names them) when last read; the nodes
	// with one are given to the state labelled IMEXChannelLabel
	// (dra_computedomain.go). nil: not read yet.
	channels map[string][]string
	// order is the profile's plugin order check (nil: fine); checked once
	// the profile is built.
	checked bool
	order   error
	plugins func() *config.Plugins

	vmu   sync.Mutex
	views map[types.UID]*v1.Pod
}

// draHold is the GPU claims of one pod gpusched chose devices for.
type draHold struct {
	pod      *v1.Pod
	node     string
	claims   []heldClaim
	reserved bool // Reserve took it: its binding cycle owns it
}

type heldClaim struct {
	ns, name string
	alloc    *resourceapi.AllocationResult
	written  bool // PreBind wrote it
}

func newPlaceDRA(d *drat, tracker draTracker, log klog.Logger) *placeDRA {
	if d == nil || tracker == nil {
		return nil
	}
	return &placeDRA{d: d, tracker: tracker, log: log, now: time.Now, nodes: map[string]*v1.Node{},
		holds: map[types.UID]*draHold{}, avoid: map[types.UID][]string{}, views: map[types.UID]*v1.Pod{}, unsettled: map[types.UID]bool{}}
}

// newPlacementDRA returns placement mode's DRA concern on h, or nil when
// DRA is off (Args.DRADriver "none") or h has no DRA manager.
func newPlacementDRA(h fwk.Handle, args *Args, st *state, log klog.Logger) (*placeDRA, error) {
	if args.DRADriver == "none" || h.SharedInformerFactory() == nil || h.SharedDRAManager() == nil {
		return nil, nil
	}
	k, err := newKubeDRA(h, func() {})
	if err != nil {
		return nil, err
	}
	pd := newPlaceDRA(newDRA(args, k, st, log), h.SharedDRAManager().ResourceClaims(), log)
	if l, ok := h.(interface{ ListPlugins() *config.Plugins }); ok && pd != nil {
		pd.plugins = l.ListPlugins
	}
	return pd, nil
}

// node returns n as the state sees it (drat.node).
func (x *placeDRA) node(n *v1.Node) *v1.Node {
	if x == nil {
		return n
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.nodes[n.Name] = n
	if x.d.nodes == nil {
		x.d.readSlices()
	}
	if x.channels == nil {
		x.d.readChannelSlices()
		x.channels = x.freeChannelsLocked()
	}
	return x.nodeView(n)
}

// nodeView is n as the state sees it: drat.node's view, its tainted GPUs
// offered no more, labelled IMEXChannelLabel when a channel device of it
// is free. x.mu is held.
func (x *placeDRA) nodeView(n *v1.Node) *v1.Node {
	v := x.tainted(x.d.node(n))
	if len(x.channels[n.Name]) == 0 {
		return v
	}
	v = v.DeepCopy()
	if v.Labels == nil {
		v.Labels = map[string]string{}
	}
	v.Labels[IMEXChannelLabel] = "free"
	return v
}

// freeChannelsLocked returns the channel devices of each node that no
// claim of the informer's, nor any gpusched holds, names. x.mu is held.
func (x *placeDRA) freeChannelsLocked() map[string][]string {
	if len(x.d.cd.nodes) == 0 {
		return map[string][]string{} // (no channel devices: no claims to list)
	}
	claims, _ := x.d.io.listClaims()
	free := x.d.cd.freeOf(claims, nil)
	for _, uid := range sortedKeys(x.holds) {
		h := x.holds[uid]
		for _, c := range h.claims {
			for _, r := range c.alloc.Devices.Results {
				if r.Driver == x.d.cd.driver {
					free[h.node] = slices.DeleteFunc(free[h.node], func(d string) bool { return d == r.Device })
				}
			}
		}
	}
	return free
}

// tainted returns v, n as drat sees it, with the GPUs whose devices are
// tainted (NoSchedule or NoExecute, from the slice or a DeviceTaintRule)
// offered no more: allocatable less them, named in UnhealthyGPUsAnnotation
// under a count label of all, so that the ledger marks them failed and
// no pod is placed on them. x.mu is held.
func (x *placeDRA) tainted(v *v1.Node) *v1.Node {
	g := x.d.nodes[v.Name]
	if g == nil {
		return v
	}
	var bad []string
	for i, h := range g.health {
		if h != topology.Healthy {
			bad = append(bad, strconv.Itoa(i))
		}
	}
	for i := range g.staticGPUs {
		bad = append(bad, strconv.Itoa(len(g.devices)+i)) // (static MIG: no job, dra_static.go)
	}
	all := len(g.devices) + g.staticGPUs
	q, ok := v.Status.Allocatable[x.d.gpuResource]
	if len(bad) == 0 || !ok || q.Value() != int64(all) || v.Labels[x.d.countLabel] != "" {
		return v // (no taint, or device-plugin GPUs)
	}
	out := v.DeepCopy()
	out.Status.Allocatable[x.d.gpuResource] = *resource.NewQuantity(int64(all-len(bad)), resource.DecimalSI)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Labels[x.d.countLabel] = strconv.Itoa(all)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[UnhealthyGPUsAnnotation] = strings.Join(bad, ",")
	return out
}

func (x *placeDRA) forgetNode(name string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.nodes, name)
}

// pod returns p as the state sees it (drat.pod: a pod with GPU claims
// requests their GPUs) and what drat made of it (nil for a pod without
// claims). It takes mu.
func (x *placeDRA) pod(p *v1.Pod) (*v1.Pod, *draPod) {
	if x == nil || len(p.Spec.ResourceClaims) == 0 {
		return p, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.podLocked(p)
}

func (x *placeDRA) podLocked(p *v1.Pod) (*v1.Pod, *draPod) {
	if x.d.nodes == nil {
		x.d.readSlices()
	}
	x.ownersLocked()
	dp := x.d.withChannels(x.d.pod(p)) // (dra_computedomain.go)
	x.d.pods[p.UID] = dp
	out := dp.out
	if out == nil {
		out = p
	}
	settled := dp.why == "" && (len(dp.claims) == 0 || out.Annotations[x.d.indices] != "" || dp.static && x.d.staticHeld(dp, x.claimsOf(p), p.Spec.NodeName))
	if p.Spec.NodeName != "" && !settled && !isTerminal(p) {
		x.unsettled[p.UID] = true
	} else {
		delete(x.unsettled, p.UID)
	}
	x.vmu.Lock()
	x.views[p.UID] = out
	x.vmu.Unlock()
	return out, dp
}

// view returns the pod as pod last made it (p itself when it has no
// claims or was not seen): gang members' demands. It takes vmu only.
func (x *placeDRA) view(p *v1.Pod) *v1.Pod {
	if x == nil || len(p.Spec.ResourceClaims) == 0 {
		return p
	}
	x.vmu.Lock()
	defer x.vmu.Unlock()
	if v, ok := x.views[p.UID]; ok && v.Name == p.Name {
		return v
	}
	return p
}

// forgetPod drops what x knows of a deleted pod.
func (x *placeDRA) forgetPod(uid types.UID) {
	if x == nil {
		return
	}
	x.mu.Lock()
	delete(x.d.pods, uid)
	delete(x.avoid, uid)
	delete(x.unsettled, uid)
	x.mu.Unlock()
	x.vmu.Lock()
	delete(x.views, uid)
	x.vmu.Unlock()
}

// bound notes that pod is bound: its claims are written (PreBind) and no
// longer x's to undo.
func (x *placeDRA) bound(uid types.UID) {
	if x == nil {
		return
	}
	x.mu.Lock()
	delete(x.holds, uid)
	delete(x.avoid, uid)
	x.mu.Unlock()
}

// refresh reads the slices again and returns the nodes and pods whose view
// changed since, for the state: every node and bound pod when the slices
// changed, else the bound pods whose claims had not named their devices
// yet. It restores the assumptions of cycles that ended before Reserve. It
// runs at PreFilter.
func (x *placeDRA) refresh() (pods []*v1.Pod, ns []*v1.Node) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.restoreStaleLocked()
	old, oldCD := x.d.sliceKey, x.d.cd.sliceKey
	x.d.readSlices()
	x.d.readChannelSlices()
	was := x.channels
	x.channels = x.freeChannelsLocked()
	changed := x.d.sliceKey != old || x.d.cd.sliceKey != oldCD
	for _, name := range sortedKeys(x.nodes) {
		if changed || (len(was[name]) == 0) != (len(x.channels[name]) == 0) {
			ns = append(ns, x.nodeView(x.nodes[name]))
		}
	}
	look := x.unsettled
	if x.d.sliceKey != old {
		look = map[types.UID]bool{}
		for uid := range x.d.pods {
			look[uid] = true
		}
	}
	for _, uid := range sortedKeys(look) {
		old := x.d.pods[uid]
		if old == nil || old.src.Spec.NodeName == "" {
			continue // (an unbound pod's view is made at its PreFilter)
		}
		if out, dp := x.podLocked(old.src); dp != old {
			pods = append(pods, out)
		}
	}
	return pods, ns
}

// release restores the claims assumed for pod, whose cycle failed before
// Reserve (PostFilter): kube's allocator, for every profile, sees them
// free again at once.
func (x *placeDRA) release(uid types.UID) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if h := x.holds[uid]; h != nil && !h.reserved {
		for _, c := range h.claims {
			x.tracker.AssumedClaimRestore(c.ns, c.name)
		}
		delete(x.holds, uid)
	}
}

// restoreStaleLocked restores the claims assumed for pods whose cycle ended
// before Reserve: kube runs one scheduling cycle at a time, so by the next
// PreFilter none of them can reach Reserve any more. x.mu is held.
func (x *placeDRA) restoreStaleLocked() {
	for _, uid := range sortedKeys(x.holds) {
		if h := x.holds[uid]; !h.reserved {
			for _, c := range h.claims {
				x.tracker.AssumedClaimRestore(c.ns, c.name)
			}
			delete(x.holds, uid)
		}
	}
}

// checkOrder returns an error when the profile runs DynamicResources'
// PreFilter before GPUSched's: kube's allocator would take the GPU claims
// first. Checked once the profile is built (its lists are empty while the
// plugins are made).
func (x *placeDRA) checkOrder() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.checked || x.plugins == nil {
		return x.order
	}
	ps := x.plugins()
	if ps == nil || len(ps.PreFilter.Enabled) == 0 {
		return nil
	}
	x.checked = true
	var names []string
	for _, p := range ps.PreFilter.Enabled {
		names = append(names, p.Name)
	}
	x.order = preFilterOrder(names)
	return x.order
}

// preFilterOrder returns an error naming the order to use when
// DynamicResources' PreFilter runs before GPUSched's (names in the
// profile's order).
func preFilterOrder(names []string) error {
	k, dr := slices.Index(names, Name), slices.Index(names, "DynamicResources")
	if k < 0 || dr < 0 || k < dr {
		return nil
	}
	return fmt.Errorf("%s (mode: placement): the profile runs DynamicResources' PreFilter before %s's (order: %s), so kube's allocator, not gpusched, would choose the GPUs of DRA claims; list %s under preFilter (plugins: {preFilter: {enabled: [{name: %s}]}}, as deploy/scheduler-config.yaml does)",
		Name, Name, strings.Join(names, ", "), Name, Name)
}

// gpuPod says whether dp is a pod whose GPU claims gpusched allocates in
// placement mode; st is why it cannot be scheduled now (its claims are
// not there yet, or ask for what gpusched does not allocate: such a pod
// waits, never skipped, or kube's allocator would give it GPUs
// gpusched's ledger does not count).
func (x *placeDRA) gpuPod(dp *draPod) (bool, *fwk.Status) {
	if x == nil || dp == nil || len(dp.claims) == 0 && !dp.refused {
		return false, nil
	}
	if err := x.checkOrder(); err != nil {
		return false, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if dp.why != "" {
		return false, fwk.NewStatus(fwk.Unschedulable, "gpusched: "+dp.why)
	}
	return true, nil
}

// hold assumes pod's GPU claims allocated to a's GPUs (indices on its
// node, in claim and request order; its MIG devices or share: a.part, as
// drat.allocate reads them) in kube's claim tracker, and its
// ComputeDomain channel claims to a free channel device of the node
// (dra_computedomain.go). A claim the tracker shows allocated for nobody
// else (an earlier attempt's write Unreserve could not clear) is cleared
// first.
func (x *placeDRA) hold(ctx context.Context, pod *v1.Pod, dp *draPod, a assignment) *fwk.Status {
	node, gpus := a.node, a.gpus
	x.mu.Lock()
	defer x.mu.Unlock()
	h := &draHold{pod: pod, node: node}
	fail := func(st *fwk.Status) *fwk.Status {
		for _, c := range h.claims {
			x.tracker.AssumedClaimRestore(c.ns, c.name)
		}
		return st
	}
	k := 0
	taken := make([]bool, len(gpus)) // (MIG devices given, dra_migs.go)
	owners := x.ownersLocked()
	for _, c := range dp.claims {
		n := c.gpuSlots()
		if k+n > len(gpus) {
			return fail(fwk.AsStatus(fmt.Errorf("ResourceClaim %s/%s: gpusched chose %d GPUs, the pod's claims ask for more", c.ns, c.name, len(gpus))))
		}
		alloc, err := x.d.allocation(c, node, gpus[k:k+n], x.now())
		if err == nil {
			// MIG devices or a share: those of a.part (dra_mig.go).
			err = x.d.partResults(alloc, c, a, taken)
		}
		if err == nil {
			err = x.d.staticResults(alloc, c, node, owners) // (dra_static.go)
		}
		if err != nil {
			return fail(fwk.AsStatus(fmt.Errorf("ResourceClaim %s/%s: %w", c.ns, c.name, err)))
		}
		k += n
		if st := x.assumeLocked(ctx, h, pod, c.claimRef, func(*resourceapi.ResourceClaim) (*resourceapi.AllocationResult, error) { return alloc, nil }); st != nil {
			return fail(st)
		}
	}
	free := slices.Clone(x.channels[node])
	for _, c := range dp.channels {
		pick := func(cur *resourceapi.ResourceClaim) (*resourceapi.AllocationResult, error) {
			n := x.d.cd.nodes[node]
			if n == nil {
				return nil, errNoChannel{node: node}
			}
			dev := ""
			if a := cur.Status.Allocation; a != nil && len(a.Devices.Results) > 0 && a.Devices.Results[0].Driver == x.d.cd.driver && a.Devices.Results[0].Pool == n.pool {
				dev = a.Devices.Results[0].Device // (its own, from an earlier attempt)
			} else if len(free) > 0 {
				dev, free = free[0], free[1:]
			} else {
				return nil, errNoChannel{node: node}
			}
			return x.d.channelAllocation(c, node, n.pool, dev, x.now()), nil
		}
		if st := x.assumeLocked(ctx, h, pod, c.claimRef, pick); st != nil {
			return fail(st)
		}
	}
	x.holds[pod.UID] = h
	return nil
}

// assumeLocked assumes claim c of pod allocated to what alloc makes of
// it (as the tracker shows it) and adds it to h; a status when it cannot
// be. x.mu is held.
func (x *placeDRA) assumeLocked(ctx context.Context, h *draHold, pod *v1.Pod, c claimRef, alloc func(cur *resourceapi.ResourceClaim) (*resourceapi.AllocationResult, error)) *fwk.Status {
	cur, err := x.tracker.Get(c.ns, c.name)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpusched: ResourceClaim %s/%s: %v", c.ns, c.name, err))
	}
	want, err := alloc(cur)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpusched: ResourceClaim %s/%s: %v", c.ns, c.name, err))
	}
	if cur.Status.Allocation != nil {
		if other := x.holderLocked(c, pod.UID); other != nil {
			// A claim shared with a pod being bound: placed again once
			// that pod's allocation is written (dra_shared.go).
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpusched: ResourceClaim %s/%s is being allocated for pod %s/%s", c.ns, c.name, other.Namespace, other.Name))
		}
		if cur, err = x.clearStale(ctx, cur, pod); err != nil {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpusched: ResourceClaim %s/%s: %v", c.ns, c.name, err))
		}
	}
	y := cur.DeepCopy()
	y.Status.Allocation = want
	if err := x.tracker.AssumeClaimAfterAPICall(y); err != nil {
		return fwk.AsStatus(fmt.Errorf("ResourceClaim %s/%s: %w", c.ns, c.name, err))
	}
	h.claims = append(h.claims, heldClaim{ns: c.ns, name: c.name, alloc: want})
	return nil
}

// holderLocked returns the pod other than uid gpusched holds claim c for
// (nil: none). x.mu is held.
func (x *placeDRA) holderLocked(c claimRef, uid types.UID) *v1.Pod {
	for _, other := range sortedKeys(x.holds) {
		h := x.holds[other]
		if other != uid && slices.ContainsFunc(h.claims, func(hc heldClaim) bool { return hc.ns == c.ns && hc.name == c.name }) {
			return h.pod
		}
	}
	return nil
}

// clearStale clears the allocation of cur, which pod is to use, when no
// other pod holds it, and returns the claim as written.
func (x *placeDRA) clearStale(ctx context.Context, cur *resourceapi.ResourceClaim, pod *v1.Pod) (*resourceapi.ResourceClaim, error) {
	for _, r := range cur.Status.ReservedFor {
		if r.UID != pod.UID {
			return nil, fmt.Errorf("allocated and reserved for %s %s", r.Resource, r.Name)
		}
	}
	y := cur.DeepCopy()
	y.Status.Allocation, y.Status.ReservedFor, y.Status.Devices = nil, nil, nil
	w, err := x.d.io.updateStatus(ctx, y)
	if err != nil {
		return nil, fmt.Errorf("clearing an earlier allocation: %w", err)
	}
	x.log.V(2).Info("Cleared the allocation of a ResourceClaim of an unbound pod", "claim", cur.Namespace+"/"+cur.Name, "pod", klog.KObj(pod))
	_ = x.tracker.AssumeClaimAfterAPICall(w)
	return w, nil
}

// reserve notes that pod's cycle reached Reserve: its assumptions are kept
// until PreBind writes them or Unreserve undoes them.
func (x *placeDRA) reserve(uid types.UID) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if h := x.holds[uid]; h != nil {
		h.reserved = true
	}
}

// holding reports whether gpusched holds GPU claims of pod (PreBind has
// claims to write).
func (x *placeDRA) holding(uid types.UID) bool {
	if x == nil {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.holds[uid] != nil
}

// preBind writes the allocations held for pod, with the delete-protection
// finalizer, and assumes the written claims in the tracker.
func (x *placeDRA) preBind(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	h := x.holds[pod.UID]
	var todo []heldClaim
	if h != nil {
		todo = slices.Clone(h.claims)
	}
	x.mu.Unlock()
	for i, c := range todo {
		w, err := x.writeAlloc(ctx, c, pod)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("writing ResourceClaim %s/%s: %w", c.ns, c.name, err))
		}
		x.mu.Lock()
		if h := x.holds[pod.UID]; h != nil && i < len(h.claims) {
			h.claims[i].written = true
		}
		x.mu.Unlock()
		if err := x.tracker.AssumeClaimAfterAPICall(w); err != nil {
			x.log.V(5).Info("Claim not stored in the assume cache", "claim", c.ns+"/"+c.name, "err", err)
		}
	}
	return nil
}

// writeAlloc sets c's allocation (and finalizer) on the apiserver's claim,
// retrying on conflicts; reservedFor is DynamicResources' to write.
func (x *placeDRA) writeAlloc(ctx context.Context, c heldClaim, pod *v1.Pod) (*resourceapi.ResourceClaim, error) {
	for attempt := 0; ; attempt++ {
		cur, err := x.d.io.fetch(ctx, c.ns, c.name)
		if err != nil {
			return nil, err
		}
		w, err := x.writeAllocOnce(ctx, cur, c, pod)
		if err == nil || !apierrors.IsConflict(err) || attempt >= 4 {
			return w, err
		}
	}
}

func (x *placeDRA) writeAllocOnce(ctx context.Context, cur *resourceapi.ResourceClaim, c heldClaim, pod *v1.Pod) (*resourceapi.ResourceClaim, error) {
	if cur.DeletionTimestamp != nil {
		return nil, fmt.Errorf("being deleted")
	}
	if a := cur.Status.Allocation; a != nil && !sameDevices(a, c.alloc) {
		return nil, fmt.Errorf("allocated elsewhere in the meantime")
	}
	for _, r := range cur.Status.ReservedFor {
		if r.UID != pod.UID {
			return nil, fmt.Errorf("reserved for %s %s", r.Resource, r.Name)
		}
	}
	var err error
	if !slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
		y := cur.DeepCopy()
		y.Finalizers = append(y.Finalizers, resourceapi.Finalizer)
		if cur, err = x.d.io.update(ctx, y); err != nil {
			return nil, err
		}
	}
	if cur.Status.Allocation != nil {
		return cur, nil // (DynamicResources' PreBind wrote it)
	}
	y := cur.DeepCopy()
	y.Status.Allocation = c.alloc
	return x.d.io.updateStatus(ctx, y)
}

// unreserve undoes what gpusched did for pod's claims: the allocations it
// wrote are cleared (when no other pod holds them), the tracker restored.
func (x *placeDRA) unreserve(ctx context.Context, pod *v1.Pod) {
	if x == nil {
		return
	}
	x.mu.Lock()
	h := x.holds[pod.UID]
	delete(x.holds, pod.UID)
	x.mu.Unlock()
	if h == nil {
		return
	}
	for _, c := range h.claims {
		if !c.written {
			x.tracker.AssumedClaimRestore(c.ns, c.name)
			continue
		}
		w, err := x.clearWritten(ctx, c, pod)
		if err != nil {
			x.log.Error(err, "Clearing the allocation gpusched wrote for an unreserved pod", "claim", c.ns+"/"+c.name, "pod", klog.KObj(pod))
			x.tracker.AssumedClaimRestore(c.ns, c.name)
			continue
		}
		if w == nil || x.tracker.AssumeClaimAfterAPICall(w) != nil {
			x.tracker.AssumedClaimRestore(c.ns, c.name)
		}
	}
}

// clearWritten clears c's allocation on the apiserver when it is still
// the one gpusched wrote and no pod but pod holds it; nil when there was
// nothing to clear.
func (x *placeDRA) clearWritten(ctx context.Context, c heldClaim, pod *v1.Pod) (*resourceapi.ResourceClaim, error) {
	for attempt := 0; ; attempt++ {
		cur, err := x.d.io.fetch(ctx, c.ns, c.name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if cur.Status.Allocation == nil || !sameDevices(cur.Status.Allocation, c.alloc) ||
			slices.ContainsFunc(cur.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID != pod.UID }) {
			return nil, nil
		}
		y := cur.DeepCopy()
		y.Status.Allocation, y.Status.ReservedFor, y.Status.Devices = nil, nil, nil
		w, err := x.d.io.updateStatus(ctx, y)
		if err == nil || !apierrors.IsConflict(err) || attempt >= 4 {
			return w, err
		}
	}
}

// avoidNode notes that node failed pod's other filters: its next placement
// avoids it.
func (x *placeDRA) avoidNode(uid types.UID, node string) {
	if x == nil || node == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !slices.Contains(x.avoid[uid], node) {
		x.avoid[uid] = append(x.avoid[uid], node)
	}
}

// avoided returns the nodes pod's placements avoid, and forgets them (a
// placement that finds no node without them tries them all again).
func (x *placeDRA) avoided(uid types.UID, forget bool) []string {
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	out := x.avoid[uid]
	if forget {
		delete(x.avoid, uid)
	}
	return out
}

// draPreFilter brings the state up to date with the slices and claims
// (placeDRA.refresh) and returns pod as the state sees it, what drat made
// of it, whether gpusched allocates GPU claims of it, the nodes its
// placement avoids, and a status when it cannot be scheduled now.
func (p *Plugin) draPreFilter(pod *v1.Pod) (*v1.Pod, *draPod, bool, []string, *fwk.Status) {
	if p.dra == nil {
		return pod, nil, false, nil, nil
	}
	pods, nodes := p.dra.refresh()
	for _, n := range nodes {
		p.st.setNode(n)
	}
	for _, b := range pods {
		p.reject(p.st.setPod(b), fmt.Sprintf("gang member %s/%s finished", b.Namespace, b.Name))
	}
	view, dp := p.dra.pod(pod)
	claims, st := p.dra.gpuPod(dp)
	if st != nil {
		return pod, nil, false, nil, st
	}
	return view, dp, claims, p.dra.avoided(pod.UID, false), nil
}

// draChoice returns the node, GPUs (indices on it) and part of pod, whose GPU
// claims gpusched allocates: its gang's planned slot, or for a pod alone
// the policy's placement now, among the nodes its filters allow but those
// it avoids; the pod is narrowed to that node. s.mu is held.
func (p *Plugin) draChoice(pod *v1.Pod, c *cycle, avoid []string) (assignment, *fwk.PreFilterResult, *fwk.Status) {
	s := p.st
	cl := s.topo.Cluster
	if c.gang != nil {
		pl, ok := s.plans[c.gang.key]
		if !ok {
			return assignment{}, nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: its placement was dropped", c.gang.key))
		}
		i, slotted := pl.slot[pod.UID]
		if !slotted {
			return assignment{}, nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: placed without this pod", c.gang.key))
		}
		return claimAssignment(cl, pl.placement.Claims[i]), &fwk.PreFilterResult{NodeNames: sets.New(c.planned)}, nil
	}
	allow := s.eligibility(pod)
	all := slices.Clone(allow)
	for _, name := range avoid {
		if h, ok := cl.HostByName(name); ok {
			allow[h] = false
		}
	}
	pl, why := s.place(c.req, allow)
	if why != nil && len(avoid) > 0 {
		pl, why = s.place(c.req, all)
	}
	if why != nil {
		return assignment{}, nil, fwk.NewStatus(fwk.Unschedulable, why.String())
	}
	node := cl.HostName(pl.Claims[0].Host)
	c.chosen, c.choice, c.draFixed = node, pl, true
	// One task, or a pod of several MIG devices: its tasks, on one node.
	a := assignment{node: node}
	for _, x := range pl.Claims {
		b := claimAssignment(cl, x)
		mergeAssignment(&a, &b)
	}
	return a, &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
}
