package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched/internal/devname"
	"github.com/gpusched/gpusched/topology"
)

// Dynamic Resource Allocation in scheduler mode (docs/dra.md).
//
// GPUs published as ResourceSlices by the GPU driver (Args.DRADriver,
// NVIDIA's gpu.nvidia.com by default) are GPUs of gpusched's cluster, and
// a pod's ResourceClaims whose requests all name the GPU device class
// (Args.DRADeviceClass) are GPUs of its job: whole GPUs, by count.
// gpusched allocates those claims itself, with the devices it chose:
//
//   - each cycle (drat.view), a node with GPUs in the driver's slices and
//     no device-plugin GPUs is seen as a GPU node of that many GPUs of its
//     productName (so a DGX H100 gets its machine preset's NVSwitch and
//     NUMA layout; other nodes the NUMA nodes and PCIe roots of their
//     devices' attributes, DRALayoutAnnotation; the multi-node NVLink
//     clique of their cliqueId), and its devices' taints
//     set its GPUs' health (host.draHealth); a pod with GPU claims is seen as requesting that many
//     GPUs, and a bound pod (or a gang member with a planned node) holds
//     the GPUs its claims' allocations name: the allocations, not the
//     indices annotation, are the record a restarted scheduler reads;
//   - when a cycle binds a job, before its pods are let through PreEnqueue
//     (drat.allocate), each GPU claim gets kube's delete-protection
//     finalizer (an update), then status.allocation naming the chosen
//     devices (node selector: the planned node) and reservedFor the pod
//     (a status update); the cycle's claims are written concurrently and
//     each job is let through once its own are;
//   - PreEnqueue lets a pod through only once its GPU claims were written
//     for its current binding and kube's DynamicResources plugin sees them
//     so (drat.notReady, draIO.shown: its claim tracker, in which each
//     write is assumed at once).
//
// kube's DynamicResources plugin, in the same profile, then finds these
// claims allocated and reserved for the pod: it checks their node
// selector, allocates the pod's other claims (NICs, storage; other
// drivers) on the planned node and skips the GPU claims at PreBind. It
// never allocates a GPU claim of a gpusched pod, and its allocator
// counts the devices of every allocated claim as taken, so the two never
// hand out one device twice. A claim allocated for a pod that is not
// bound and has no binding of gpusched's (a scheduler restart, a binding
// withdrawn), or for a pod that ended, is released (drat.release).
//
// CEL selectors of GPU requests restrict the nodes (dra_cel.go); a pod
// may instead claim one MIG device (dra_mig.go) or one share of a GPU
// (dra_share.go). ComputeDomain channel claims (multi-node NVLink) are
// allocated too: dra_computedomain.go. DeviceClasses are read
// (dra_class.go); firstAvailable requests and allocation mode All are
// handled in dra_first.go; claim constraints in dra_constraint.go. Not
// handled (the pod waits, saying why): claims mixing the GPU class with
// others. Admin access requests are kube's (adminAccess). Device taints and tolerations: dra_taint.go.

// draIO is what the DRA concern needs of the apiserver; tests give fakes.
type draIO interface {
	synced() bool
	listSlices() ([]*resourceapi.ResourceSlice, error)
	listClaims() ([]*resourceapi.ResourceClaim, error)
	// listTaintRules lists the DeviceTaintRules (none where they are not
	// served).
	listTaintRules() ([]*resourceapi.DeviceTaintRule, error)
	// class returns a DeviceClass from the informer's store; nil when
	// absent.
	class(name string) (*resourceapi.DeviceClass, error)
	// claim returns a claim from the informer's store; nil when absent.
	claim(ns, name string) (*resourceapi.ResourceClaim, error)
	// shown returns a claim as kube's DynamicResources plugin sees it
	// (its claim tracker: the informer's store and the writes made
	// since, updateStatus); nil when absent. A pod let through before it
	// shows its claims allocated has DynamicResources allocate them
	// anew, and its PreBind then fails ("allocated elsewhere").
	shown(ns, name string) (*resourceapi.ResourceClaim, error)
	// fetch reads a claim from the apiserver.
	fetch(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error)
	update(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error)
	updateStatus(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error)
}

// drat is scheduler mode's DRA concern: the GPUs of the driver's slices,
// the GPU claims of the profile's pods, and the claim writes. view,
// allocate and release run on the cycle goroutine only; notReady reads
// the informer's store and what gmu guards alone.
type drat struct {
	driver, class string
	migClass      string // Args.DRAMIGDeviceClass
	indices       string // Args.GPUIndicesAnnotation
	gpuResource   v1.ResourceName
	productLabel  string
	countLabel    string
	cliqueLabel   string
	io            draIO
	log           klog.Logger
	cd            *cdChannels // ComputeDomain channels (dra_computedomain.go)
	// settle is how long allocate waits for the informer to show its
	// writes before letting the pods through; grace is a wait after it,
	// for the handlers of the informer (kube's DynamicResources reads an
	// assume cache that its handler updates after the store).
	settle, grace time.Duration

	sliceKey string              // the slices last built from
	nodes    map[string]*draNode // node name → its GPUs
	cel      celMemo             // selectors' verdicts on the nodes' devices
	// picks are the subrequests picked for firstAvailable requests
	// ("ns/claim/request" → "request/subrequest"), kept while the claim
	// exists (dra_first.go).
	picks map[string]string
	// free returns a node's free GPUs in gpusched's ledger (false: not
	// known yet), freeSet which of its GPUs (by index) are free; the
	// host's.
	free    func(node string) (int, bool)
	freeSet func(node string) ([]bool, bool)
	kinds   classKinds        // what requests' selectors select (dra_class.go)
	byPool  map[string]string // pool → node name
	// known are the GPU devices each node's slices last gave (node →
	// device name → its device): one a complete pool leaves out later is
	// kept, failed (withdrawnTaint), readSlices.
	known map[string]map[string]*resourceapi.Device
	// sched: scheduler mode (newSchedDRA), where claim constraints are
	// checked and tainted GPUs lent; idle says which GPUs of a node have
	// nothing allocated, whatever their health (dra_lend.go).
	sched bool
	idle  func(node string) ([]bool, bool)
	// profile is the profile whose pods are gpusched's (scheduler mode),
	// foreign the GPUs other profiles' claims take (node → GPU indices:
	// dra_foreign.go).
	profile string
	foreign map[string]map[int]bool
	// lent are the tainted free GPUs lent this cycle to the pods that
	// tolerate them, loaned those lent and held since (dra_lend.go).
	lent, loaned map[lendKey]bool
	// jobOf is a pod's job ID (scheduler mode: reserveGangs); nil in
	// placement mode.
	jobOf func(*v1.Pod) string
	// packed are the pods of static MIG devices last restricted to the
	// nodes in use (packSingles, dra_static.go).
	packed map[types.UID]bool

	nodeCache map[string]draNodeCopy
	pods      map[types.UID]*draPod
	// pend are the claims several unbound pods name before any holds
	// them (scheduler mode; nil in placement mode: dra_shared.go).
	pend *pendingShares
	// owners are the static MIG devices claims hold ("pool/device" →
	// "namespace/claim"; nil when no node has any), ownersKey their key,
	// as read for this cycle's pods (setOwners, dra_static.go).
	owners    map[string]string
	ownersKey string
	// stale are claims to release (see view); fresh the copies release
	// wrote this cycle (by "ns/name"), the base of allocate's writes.
	stale []claimRef
	fresh map[string]*resourceapi.ResourceClaim
	// early are the pods allocate let through before the informer showed
	// their claims, until ready lets them through again.
	early map[types.UID]bool

	// gmu guards granted: the binding (node and GPU indices) each pod's
	// claims were last written for, and mine: the names of the claims of
	// each pod gpusched allocates (GPU and channel claims), as view last
	// saw them. PreEnqueue lets a pod through only when its current
	// binding is the one granted and those claims show it (notReady).
	gmu     sync.Mutex
	granted map[types.UID]string
	mine    map[types.UID][]string
}

// draNode is one node's GPUs in the driver's slices.
type draNode struct {
	pool    string
	product string   // productName, as a GPU feature discovery label value
	devices []string // device name per GPU index
	index   map[string]int
	// health per GPU index, from the device's taints: NoExecute Failed,
	// NoSchedule Draining.
	health []topology.Health
	// layout is the NUMA nodes and PCIe host bridges of its GPUs, as JSON
	// of []topology.NUMASpec ("" when the slices say nothing of them).
	layout string
	// numa says every GPU publishes its NUMA node: the layout is the
	// node's own, over a machine preset's (DRANUMAAnnotation).
	numa bool
	// clique is its GPUs' cliqueId ("<cluster UUID>.<clique id>"), the
	// multi-node NVLink domain they share; "" when none.
	clique string
	// specs are the GPUs' devices as published, by GPU index (CEL
	// selectors read them, dra_cel.go).
	specs []*resourceapi.Device
	// migs are the MIG devices (partitions) of its GPUs (dra_mig.go), and
	// migSpec their geometry, as JSON of topology.MIGSpec ("" for none).
	migs    []*migDev
	migSpec string
	// unlinked are the MIG devices linkMIG left out (no GPU device of
	// their parent, or no memory-slice counters: static MIG), kept to say
	// why a request they match waits.
	unlinked []*resourceapi.Device
	// statics are the MIG devices of its GPUs in static MIG mode, and
	// staticGPUs the number of those GPUs, indexed after its whole GPUs
	// (dra_static.go).
	statics    []*staticMIG
	staticGPUs int
	// migOnly names its GPUs that are not published, only their counter
	// sets and MIG devices (counterSetGPUs, dra_mig.go): GPUs for MIG
	// devices only, so whole-GPU requests and shares never take the node.
	migOnly []string
}

// DRALayoutAnnotation carries, on the node as a cycle sees it (never
// written to the apiserver), the NUMA and PCIe layout of a DRA node's
// GPUs read from their resource.kubernetes.io/numaNode and pcieRoot
// attributes: BuildTopology gives it to nodes no machine preset fits,
// and to those of a preset whose GPUs all publish their NUMA node.
const DRALayoutAnnotation = "gpusched.io/dra-layout"

// DRANUMAAnnotation marks, likewise, a node whose every GPU publishes its
// NUMA node (resource.kubernetes.io/numaNode): its DRALayoutAnnotation
// then wins over the NUMA layout of the machine preset its product maps
// to (an HGX board on other CPUs, or in another NPS mode, than the DGX
// of the preset), whose NVLink fabric it keeps.
const DRANUMAAnnotation = "gpusched.io/dra-numa"

type draNodeCopy struct {
	src, out                             *v1.Node
	gpus                                 int
	product, layout, clique, mig, static string
	numa                                 bool
}

// draPod is what view made of one pod with claims.
type draPod struct {
	src    *v1.Pod
	key    string
	out    *v1.Pod // the pod as the cycle sees it; nil: left out (why)
	claims []gpuClaim
	gpus   int
	why    string
	// channels are its ComputeDomain channel claims (withChannels;
	// shaped: done).
	channels []chanClaim
	shaped   bool
	// struck says why a MIG device its claims hold is tainted NoExecute
	// and not tolerated ("" when none is; dra_taint.go).
	struck string
	// tolerated are the whole GPUs its claims hold whose taints their
	// requests tolerate (dra_taint.go).
	tolerated []string
	// unkept says why no node keeps its claims' constraints this cycle
	// (constrain, dra_constraint.go); "" when one does or it has none.
	unkept string
	// sharedWith names the gang member that holds a claim it shares with
	// it, placed with it on one node (dra_shared.go); "" when none.
	sharedWith string
	// refused says a claim of its on the GPU class asks what gpusched
	// does not allocate (why says what): the pod is a GPU pod all the
	// same, which waits rather than being left to kube's allocator.
	refused bool
	// static: its GPU requests are static MIG devices (dra_static.go).
	static bool
}

// staticMember is an unplaced gang member of static MIG devices at index
// at of a cycle's pods (reserveGangs).
type staticMember struct {
	at  int
	dp  *draPod
	job string
}

// gpuClaim is one ResourceClaim of a pod whose requests are GPUs.
type gpuClaim struct {
	claimRef
	requests []gpuRequest
	cons     []claimConstraint // its constraints (dra_constraint.go)
}

type gpuRequest struct {
	name  string
	count int
	// sels are the request's selectors: its DeviceClass's, then its own
	// (dra_class.go, dra_cel.go); own says its own have a CEL selector.
	sels []resourceapi.DeviceSelector
	own  bool
	// tols are its tolerations of device taints (dra_taint.go).
	tols []resourceapi.DeviceToleration
	// part is a MIG device or a share of a GPU instead of whole GPUs
	// (dra_mig.go, dra_share.go); nil for whole GPUs.
	part *partRequest
	// all: allocation mode All, count the GPUs of the nodes it may use
	// (dra_first.go).
	all bool
	// unpicked: a firstAvailable request no subrequest of which can be
	// placed now (its pod is looked at again next cycle).
	unpicked bool
}

type claimRef struct {
	ns, name string
	uid      types.UID // the pod it is (to be) reserved for
}

// newDRA returns the DRA concern for args, or nil when DRA is off; o
// keeps gpusched's ledger (drat.free, drat.freeSet: ledgerGPUs).
func newDRA(args *Args, io draIO, o ledgerOwner, log klog.Logger) *drat {
	if args.DRADriver == "" || args.DRADriver == "none" || io == nil {
		return nil
	}
	l := ledgerGPUs{o}
	return &drat{driver: args.DRADriver, class: args.DRADeviceClass, migClass: cmp.Or(args.DRAMIGDeviceClass, DefaultDRAMIGDeviceClass), indices: args.GPUIndicesAnnotation,
		gpuResource: v1.ResourceName(args.GPUResource), productLabel: args.GPUProductLabel, countLabel: args.GPUCountLabel, cliqueLabel: args.GPUCliqueLabel,
		io: io, log: log, cd: newCDChannels(args), settle: 5 * time.Second, grace: 50 * time.Millisecond, nodeCache: map[string]draNodeCopy{},
		pods: map[types.UID]*draPod{}, granted: map[types.UID]string{}, early: map[types.UID]bool{}, picks: map[string]string{}, free: l.freeGPUs, freeSet: l.freeGPUSet}
}

// synced reports whether the DRA informers have synced (true when off).
func (d *drat) synced() bool { return d == nil || d.io.synced() }

// view returns the nodes and pods as a cycle sees them: GPU nodes of the
// driver's slices with their GPUs as allocatable GPUs, and pods with GPU
// claims requesting their GPUs (holding, when allocated, the claimed
// GPUs in the indices annotation). Unbound pods whose claims cannot be
// read yet are left out. assigned says whether a pod has a binding of
// gpusched's. Claims to release are kept for release.
func (d *drat) view(nodes []*v1.Node, pods []*v1.Pod, assigned func(types.UID) bool) ([]*v1.Node, []*v1.Pod) {
	if d == nil {
		return nodes, pods
	}
	d.readSlices()
	d.readChannelSlices()
	claims, err := d.io.listClaims()
	if err == nil {
		d.setOwners(claims)
	}
	outNodes := make([]*v1.Node, 0, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		outNodes = append(outNodes, d.node(n))
		seen[n.Name] = true
	}
	for name := range d.nodeCache {
		if !seen[name] {
			delete(d.nodeCache, name)
		}
	}
	out := make([]*v1.Pod, 0, len(pods))
	var gangs []staticMember
	live := map[types.UID]bool{}
	next := make(map[types.UID]*draPod, len(d.pods))
	d.stale = d.stale[:0]
	d.pend.collect(pods) // (dra_shared.go)
	for _, p := range pods {
		if !isTerminal(p) {
			live[p.UID] = true
		}
		if len(p.Spec.ResourceClaims) == 0 || d.foreignPod(p) {
			out = append(out, p)
			continue
		}
		dp := d.withChannels(d.pod(p))
		d.markShared(dp) // (dra_shared.go)
		next[p.UID] = dp
		po := d.constrain(dp, assigned(p.UID))
		if po == nil {
			continue
		}
		if dp.static && p.Spec.NodeName == "" && !assigned(p.UID) && p.Annotations[PlannedNodeAnnotation] == "" && d.jobOf != nil {
			gangs = append(gangs, staticMember{at: len(out), dp: dp, job: d.jobOf(p)}) // (dra_static.go)
		}
		out = append(out, po)
		if p.Spec.NodeName == "" && !assigned(p.UID) {
			d.grant(p.UID, "")
		}
		if p.Spec.NodeName == "" && !assigned(p.UID) && p.Annotations[PlannedNodeAnnotation] == "" && !isTerminal(p) {
			// Allocated for a pod gpusched has not bound (a restart, a
			// withdrawn binding): the allocation goes, the job is placed
			// afresh.
			for _, c := range dp.refs() {
				if cl, _ := d.io.claim(c.ns, c.name); cl != nil && cl.Status.Allocation != nil {
					d.stale = append(d.stale, c)
				}
			}
		}
	}
	d.pods = next
	out = d.reserveGangs(out, gangs)
	mine := make(map[types.UID][]string, len(next))
	named := map[string]bool{}
	for uid, dp := range next {
		for _, c := range dp.refs() {
			mine[uid] = append(mine[uid], c.name)
			named[c.ns+"/"+c.name] = true
		}
	}
	d.gmu.Lock()
	d.mine = mine
	d.gmu.Unlock()
	// Claims gpusched allocated whose pods are gone or ended.
	if err == nil {
		d.prunePicks(claims)
		for _, c := range claims {
			if c.Status.Allocation == nil || !d.ours(c) || c.DeletionTimestamp != nil {
				continue
			}
			users := 0
			for _, r := range c.Status.ReservedFor {
				if r.Resource == "pods" && live[r.UID] {
					users++
				}
			}
			if users == 0 && len(c.Status.ReservedFor) > 0 {
				d.stale = append(d.stale, claimRef{ns: c.Namespace, name: c.Name})
			}
		}
		for _, c := range d.stale {
			named[c.ns+"/"+c.name] = true // (released now: not foreign)
		}
		d.noteForeign(claims, named) // (dra_foreign.go)
	}
	outNodes = d.channelView(outNodes, claims)
	return outNodes, d.pinDomains(outNodes, d.lend(out, assigned), assigned)
}

// ours reports whether c's requests all name the GPU class and its
// allocation devices of the driver, or c is a ComputeDomain channel claim
// allocated channel devices only.
func (d *drat) ours(c *resourceapi.ResourceClaim) bool {
	reqs, other, _ := d.classify(c)
	if d.cd.isChannel(c) {
		return !slices.ContainsFunc(c.Status.Allocation.Devices.Results, func(r resourceapi.DeviceRequestAllocationResult) bool { return r.Driver != d.cd.driver })
	}
	if len(reqs) == 0 || other {
		return false
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != d.driver {
			return false
		}
	}
	return true
}

// readSlices rebuilds the GPU nodes when the driver's slices changed:
// per node, its "gpu" devices (devices with a type attribute "gpu", or
// none and no MIG profile) ordered by their index attribute, else minor,
// else name in natural order (gpu-2 before gpu-10), as importers/dra
// orders them. Of a pool published in several
// generations only the newest counts.
func (d *drat) readSlices() {
	list, err := d.io.listSlices()
	if err != nil {
		d.log.Error(err, "Listing ResourceSlices")
		return
	}
	rules, err := d.io.listTaintRules()
	if err != nil {
		d.log.Error(err, "Listing DeviceTaintRules")
		return
	}
	var mine []*resourceapi.ResourceSlice
	newest := map[string]int64{}
	for _, s := range list {
		if s.Spec.Driver == d.driver && s.Spec.NodeName != nil && *s.Spec.NodeName != "" {
			mine = append(mine, s)
			newest[s.Spec.Pool.Name] = max(newest[s.Spec.Pool.Name], s.Spec.Pool.Generation)
		}
	}
	slices.SortFunc(mine, func(a, b *resourceapi.ResourceSlice) int { return strings.Compare(a.Name, b.Name) })
	var kb strings.Builder
	for _, s := range mine {
		kb.WriteString(s.Name + "@" + s.ResourceVersion + ";")
	}
	key := kb.String() + rulesKey(rules)
	if key == d.sliceKey && d.nodes != nil {
		return
	}
	d.sliceKey = key
	d.nodes, d.byPool = map[string]*draNode{}, map[string]string{}
	type gpu struct {
		name         string
		index, minor int64
		health       topology.Health
		dev          *resourceapi.Device
	}
	mk := func(dev *resourceapi.Device) gpu {
		return gpu{name: dev.Name, index: attrInt(dev.Attributes, d.driver, attrIndex), minor: attrInt(dev.Attributes, d.driver, attrMinor),
			health: taintHealth(dev.Taints), dev: dev}
	}
	found := map[string][]gpu{}
	parts := map[string][]*resourceapi.Device{}
	complete := map[string]int64{} // pool → its slices of the newest generation less their count
	for _, s := range mine {
		if s.Spec.Pool.Generation < newest[s.Spec.Pool.Name] {
			continue
		}
		if _, ok := complete[s.Spec.Pool.Name]; !ok {
			complete[s.Spec.Pool.Name] = -s.Spec.Pool.ResourceSliceCount
		}
		complete[s.Spec.Pool.Name]++
		node := *s.Spec.NodeName
		if other, ok := d.byPool[s.Spec.Pool.Name]; ok && other != node {
			d.log.Info("A GPU pool spans nodes; its slices are left out", "pool", s.Spec.Pool.Name)
			continue
		}
		n := d.nodes[node]
		if n == nil {
			n = &draNode{pool: s.Spec.Pool.Name, index: map[string]int{}}
			d.nodes[node] = n
			d.byPool[s.Spec.Pool.Name] = node
		}
		for _, dev := range s.Spec.Devices {
			dev.Taints = taintsOf(dev.Taints, rules, d.driver, s.Spec.Pool.Name, dev.Name) // (dra_taint.go)
			typ := attrString(dev.Attributes, d.driver, attrType)
			if typ != "gpu" && (typ != "" || attrString(dev.Attributes, d.driver, attrProfile) != "") {
				if typ == attrTypeMIG {
					parts[node] = append(parts[node], &dev)
				}
				continue // MIG devices: linkMIG
			}
			found[node] = append(found[node], mk(&dev))
			if p := attrString(dev.Attributes, d.driver, attrProductName); p != "" && n.product == "" {
				n.product = strings.ReplaceAll(strings.TrimSpace(p), " ", "-")
			}
			if c := attrString(dev.Attributes, d.driver, attrCliqueID); c != "" && n.clique == "" {
				n.clique = c
			}
		}
	}
	// A GPU a node published and left out since (NVIDIA's driver
	// publishes the GPUs NVML finds: one fallen off the bus is gone after
	// the driver restarts) keeps its place, failed: the node keeps its
	// shape, its other GPUs their indices and jobs, and the job on it is
	// recovered. While its pool is published in part (a new generation
	// coming slice by slice) it keeps its place as it was. Forgotten with
	// the node's last GPU (and by a restarted scheduler).
	known := map[string]map[string]*resourceapi.Device{}
	for node, gs := range found {
		now := map[string]*resourceapi.Device{}
		for _, g := range gs {
			now[g.name] = g.dev
		}
		for _, name := range sortedKeys(d.known[node]) {
			if now[name] != nil {
				continue
			}
			x := *d.known[node][name]
			if complete[d.nodes[node].pool] >= 0 && !slices.ContainsFunc(x.Taints, isWithdrawn) {
				x.Taints = append(slices.Clip(x.Taints), withdrawnTaint)
			}
			gs = append(gs, mk(&x))
			now[name] = &x
		}
		found[node], known[node] = gs, now
	}
	d.known = known
	for node, ps := range parts {
		var pub []*resourceapi.Device
		for _, g := range found[node] {
			pub = append(pub, g.dev)
		}
		for _, dev := range d.counterSetGPUs(pub, ps) { // (dra_mig.go)
			found[node] = append(found[node], mk(dev))
			d.nodes[node].migOnly = append(d.nodes[node].migOnly, dev.Name)
			if p := attrString(dev.Attributes, d.driver, attrProductName); p != "" && d.nodes[node].product == "" {
				d.nodes[node].product = strings.ReplaceAll(strings.TrimSpace(p), " ", "-")
			}
		}
	}
	for node, gs := range found {
		slices.SortFunc(gs, func(a, b gpu) int {
			return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.minor, b.minor), devname.Compare(a.name, b.name))
		})
		n := d.nodes[node]
		for i, g := range gs {
			n.devices = append(n.devices, g.name)
			n.health = append(n.health, g.health)
			n.index[g.name] = i
			n.specs = append(n.specs, g.dev)
		}
	}
	for node, ps := range parts {
		d.linkMIG(d.nodes[node], d.linkStatic(d.nodes[node], ps)) // (dra_static.go)
	}
	for _, n := range d.nodes {
		var numa []int64
		var roots []string
		for _, dev := range append(slices.Clip(n.specs), n.staticParent()...) {
			numa = append(numa, attrInt(dev.Attributes, d.driver, attrNUMANode))
			roots = append(roots, attrString(dev.Attributes, d.driver, attrPCIeRoot))
		}
		n.layout = layoutOf(numa, roots)
		n.numa = len(numa) > 0 && !slices.ContainsFunc(numa, func(x int64) bool { return x < 0 || x >= 1<<20 })
	}
}

// withdrawnTaint is the taint readSlices gives a GPU its node's slices
// left out: the GPU is failed (NoExecute) and never lent (dra_lend.go).
var withdrawnTaint = resourceapi.DeviceTaint{Key: "gpusched.io/withdrawn", Value: "not-published", Effect: resourceapi.DeviceTaintEffectNoExecute}

// isWithdrawn reports whether t is withdrawnTaint.
func isWithdrawn(t resourceapi.DeviceTaint) bool { return t.Key == withdrawnTaint.Key }

// layoutOf is the NUMA and PCIe layout of a node's GPUs (by index) from
// their NUMA nodes (1<<40: unknown, node 0) and PCIe roots ("": a bridge
// of its own), as JSON of []topology.NUMASpec; "" when neither is known.
func layoutOf(numa []int64, roots []string) string {
	known := false
	for i := range numa {
		known = known || numa[i] != 1<<40 || roots[i] != ""
	}
	if !known {
		return ""
	}
	var specs []topology.NUMASpec
	bridge := map[string]*topology.PCIeSpec{}
	for i := range numa {
		id := 0
		if numa[i] >= 0 && numa[i] < 1<<20 {
			id = int(numa[i])
		}
		k := slices.IndexFunc(specs, func(s topology.NUMASpec) bool { return s.ID == id })
		if k < 0 {
			specs = append(specs, topology.NUMASpec{ID: id})
			k = len(specs) - 1
		}
		key := fmt.Sprintf("%d/%s", id, roots[i])
		if b := bridge[key]; b != nil && roots[i] != "" {
			b.GPUs = append(b.GPUs, i)
			continue
		}
		specs[k].PCIe = append(specs[k].PCIe, topology.PCIeSpec{GPUs: []int{i}})
		bridge[key] = &specs[k].PCIe[len(specs[k].PCIe)-1]
	}
	slices.SortStableFunc(specs, func(a, b topology.NUMASpec) int { return cmp.Compare(a.ID, b.ID) })
	b, err := json.Marshal(specs)
	if err != nil {
		return ""
	}
	return string(b)
}

// taintHealth maps a device's taints to GPU health, as importers/dra
// does: NoExecute evicts (Failed), NoSchedule keeps what runs (Draining).
func taintHealth(ts []resourceapi.DeviceTaint) topology.Health {
	h := topology.Healthy
	for _, t := range ts {
		switch t.Effect {
		case resourceapi.DeviceTaintEffectNoExecute:
			h = topology.Failed
		case resourceapi.DeviceTaintEffectNoSchedule:
			if h == topology.Healthy {
				h = topology.Draining
			}
		}
	}
	return h
}

// draHealth gives the GPUs of DRA nodes the health their device taints
// say (Scheduler.SetGPUHealth): a job on a GPU tainted NoExecute is
// recovered, a GPU tainted NoSchedule takes no new job and, when one job
// holds it whole, keeps that one (kube's NoSchedule evicts nothing; a GPU
// of shares or MIG devices drains its jobs). h.mu is held.
func (h *host) draHealth() {
	if h.dra == nil || h.s == nil {
		return
	}
	c := h.topo.Cluster
	for _, name := range sortedKeys(h.dra.nodes) {
		n := h.dra.nodes[name]
		hid, ok := c.HostByName(name)
		if !ok || h.s.Ledger().HostCordoned(hid) {
			continue
		}
		first, count := c.HostGPUs(hid)
		for i := len(n.health); i < count && i < len(n.health)+n.staticGPUs; i++ {
			// A GPU in static MIG mode takes no job (dra_static.go).
			if g := first + topology.GPUID(i); h.s.Ledger().GPU(g).Health == topology.Healthy {
				if _, err := h.s.SetGPUHealth(g, topology.Draining); err != nil {
					h.log.Error(err, "Setting a static-MIG GPU draining", "node", name, "index", i)
				}
			}
		}
		for i := 0; i < count && i < len(n.health); i++ {
			g := first + topology.GPUID(i)
			st := h.s.Ledger().GPU(g)
			health := h.dra.lentHealth(name, i, n.health[i], st.Mode == topology.ModeFree) // (dra_lend.go)
			health = h.dra.foreignHealth(name, i, health, st.Mode)                         // (dra_foreign.go)
			if st.Health == health {
				continue
			}
			if st.Health == topology.Healthy && st.Mode == topology.ModeWhole && (health == topology.Draining || h.dra.tolerates(name, n.devices[i])) {
				// NoSchedule on a GPU one job holds whole, or NoExecute its
				// pod tolerates: the job runs on (a draining or failed
				// GPU's job would be recovered), and no other can have the
				// GPU while it does; its health is set once it is free,
				// before the cycle that could place a job there.
				continue
			}
			if _, err := h.s.SetGPUHealth(g, health); err != nil {
				h.log.Error(err, "Setting the health of a tainted GPU", "node", name, "device", n.devices[i])
			}
		}
	}
}

// Attributes of NVIDIA's DRA driver read here (names in the driver's
// domain; see importers/dra, which reads the same slices for the CLI).
const (
	attrType        = "type"
	attrIndex       = "index"
	attrMinor       = "minor"
	attrProductName = "productName"
	attrProfile     = "profile"
	attrCliqueID    = "cliqueId"
	attrNUMANode    = "resource.kubernetes.io/numaNode"
	attrPCIeRoot    = "resource.kubernetes.io/pcieRoot"
)

// attrString reads a string attribute by its name, with or without the
// driver's domain.
func attrString(m map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, driver, name string) string {
	a := attr(m, driver, name)
	if a.StringValue == nil {
		return ""
	}
	return *a.StringValue
}

// attrInt reads an int attribute; 1<<40 when absent (sorts last).
func attrInt(m map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, driver, name string) int64 {
	a := attr(m, driver, name)
	if a.IntValue == nil {
		return 1 << 40
	}
	return *a.IntValue
}

func attr(m map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, driver, name string) resourceapi.DeviceAttribute {
	a, ok := m[resourceapi.QualifiedName(name)]
	if !ok {
		a = m[resourceapi.QualifiedName(driver+"/"+name)]
	}
	return a
}

// node returns n, or a copy with the GPUs of its slices as allocatable
// GPUs and their product as its product label when the device plugin
// publishes none.
func (d *drat) node(n *v1.Node) *v1.Node {
	g := d.nodes[n.Name]
	if g == nil || len(g.devices)+g.staticGPUs == 0 {
		return n
	}
	if q, ok := n.Status.Allocatable[d.gpuResource]; ok && q.Value() > 0 {
		return n // device-plugin GPUs: the extended resource counts
	}
	gpus, static := len(g.devices)+g.staticGPUs, g.staticIndices()
	if c, ok := d.nodeCache[n.Name]; ok && c.src == n && c.gpus == gpus && c.product == g.product && c.layout == g.layout && c.clique == g.clique && c.mig == g.migSpec && c.static == static && c.numa == g.numa {
		return c.out
	}
	out := n.DeepCopy()
	if out.Status.Allocatable == nil {
		out.Status.Allocatable = v1.ResourceList{}
	}
	// (GPUs in static MIG mode too, named in DRAStaticMIGAnnotation:
	// GPUs the library gives no job, dra_static.go.)
	out.Status.Allocatable[d.gpuResource] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if g.product != "" {
		out.Labels[d.productLabel] = g.product
	}
	delete(out.Labels, d.countLabel)
	if g.layout != "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[DRALayoutAnnotation] = g.layout
		if g.numa {
			out.Annotations[DRANUMAAnnotation] = "published"
		}
	}
	if g.clique != "" && out.Labels[d.cliqueLabel] == "" {
		out.Labels[d.cliqueLabel] = g.clique // (GPU feature discovery's label wins)
	}
	if g.migSpec != "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[DRAMIGAnnotation] = g.migSpec
	}
	if static != "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[DRAStaticMIGAnnotation] = static
	}
	d.nodeCache[n.Name] = draNodeCopy{src: n, out: out, gpus: gpus, product: g.product, layout: g.layout, clique: g.clique, mig: g.migSpec, static: static, numa: g.numa}
	return out
}

// claimName returns the name of the ResourceClaim a pod's claim entry
// refers to; "" when a template's claim is not made yet.
func claimName(p *v1.Pod, rc v1.PodResourceClaim) string {
	if rc.ResourceClaimName != nil {
		return *rc.ResourceClaimName
	}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.Name == rc.Name && s.ResourceClaimName != nil {
			return *s.ResourceClaimName
		}
	}
	return ""
}

// classify returns c's GPU requests; other says it has requests of other
// drivers' classes; why says what gpusched cannot allocate in it. A
// request naming a DeviceClass that does not exist is returned (kind
// unknown) with why. A firstAvailable request is returned as the
// subrequest picked (dra_first.go), named "request/subrequest".
func (d *drat) classify(c *resourceapi.ResourceClaim) (reqs []gpuRequest, other bool, why string) {
	for _, r := range c.Spec.Devices.Requests {
		var rq gpuRequest
		var kind reqKind
		var w string
		if r.Exactly != nil {
			rq, kind, w = d.exactRequest(r.Name, r.Exactly)
		} else {
			rq, kind, w = d.firstAvailable(c, r)
		}
		if kind == kindOther {
			other = true
			continue
		}
		why = cmp.Or(why, w)
		reqs = append(reqs, rq)
	}
	if len(reqs) > 0 && other {
		if i := slices.IndexFunc(c.Spec.Devices.Requests, func(r resourceapi.DeviceRequest) bool { return adminAccess(r.Exactly) }); i >= 0 {
			why = cmp.Or(why, fmt.Sprintf("request %q asks for adminAccess, which kube's allocator gives, beside requests gpusched allocates: put it in a claim of its own", c.Spec.Devices.Requests[i].Name))
		}
		why = cmp.Or(why, "the claim mixes the GPU class "+d.class+" with other device classes")
	}
	return reqs, other, why
}

// adminAccess reports whether e asks for admin access to its devices.
// gpusched leaves such requests to kube's allocator, as another driver's:
// per the DRA design admin access may be given to devices in use and is
// not counted against their capacity (so gpusched's ledger, which counts
// what pods hold, must not count it either), and only in namespaces
// labelled resource.kubernetes.io/admin-access, which the apiserver
// checks when the claim is made.
func adminAccess(e *resourceapi.ExactDeviceRequest) bool {
	return e != nil && e.AdminAccess != nil && *e.AdminAccess
}

// exactRequest returns request name (e) as gpusched sees it, its kind and
// what gpusched cannot allocate in it.
func (d *drat) exactRequest(name string, e *resourceapi.ExactDeviceRequest) (gpuRequest, reqKind, string) {
	dc, why := d.classOf(name, e.DeviceClassName)
	if why != "" {
		return gpuRequest{name: name, count: 1}, kindGPU, why
	}
	kind := d.kindOf(e.DeviceClassName, dc, e.Selectors)
	if kind == kindOther || adminAccess(e) {
		// Admin access is kube's allocator's to give (docs/dra.md): it
		// hands out devices in use, counted against nobody's capacity.
		return gpuRequest{}, kindOther, ""
	}
	rq := gpuRequest{name: name, count: int(max(cmp.Or(e.Count, 1), 1)), sels: requestSelectors(dc, e.Selectors), own: hasCEL(e.Selectors), tols: e.Tolerations}
	why = cmp.Or(why, d.partOf(&rq, e, kind))
	if e.AllocationMode == resourceapi.DeviceAllocationModeAll {
		why = cmp.Or(why, d.allOf(&rq))
	}
	return rq, kind, why
}

// pod returns what view makes of p (cached while p and its claims are
// the same objects).
func (d *drat) pod(p *v1.Pod) *draPod {
	var claims []*resourceapi.ResourceClaim
	var kb strings.Builder
	why := ""
	for _, rc := range p.Spec.ResourceClaims {
		name := claimName(p, rc)
		if name == "" {
			why = cmp.Or(why, fmt.Sprintf("its ResourceClaim %q (from a template) is not made yet", rc.Name))
			continue
		}
		c, err := d.io.claim(p.Namespace, name)
		if err != nil || c == nil {
			why = cmp.Or(why, fmt.Sprintf("its ResourceClaim %s/%s does not exist yet", p.Namespace, name))
			continue
		}
		claims = append(claims, c)
		kb.WriteString(c.Name + "@" + c.ResourceVersion + ";" + d.classKey(c) + d.pend.key(c))
	}
	key := kb.String() + d.sliceKey + d.ownersKey
	if old, ok := d.pods[p.UID]; ok && old.src == p && old.key == key {
		return old
	}
	dp := &draPod{src: p, key: key, why: why}
	var held []int
	allocated := true
	heldOn := p.Spec.NodeName
	if heldOn == "" {
		heldOn = p.Annotations[PlannedNodeAnnotation]
	}
	var shared []string // the nodes of its claims other pods hold (dra_shared.go)
	for _, c := range claims {
		reqs, _, w := d.classify(c)
		if len(reqs) == 0 {
			continue
		}
		if heldByAnother(c, p) {
			shared = append(shared, d.allocNode(c))
			continue
		}
		if d.pend.follows(dp, p, c) { // (another pod names it and holds it first: dra_shared.go)
			continue
		}
		if slices.ContainsFunc(reqs, func(r gpuRequest) bool { return r.unpicked }) {
			dp.key = "\x00" // (no claim is named so: looked at again next cycle)
		}
		if w != "" {
			dp.why, dp.refused = cmp.Or(dp.why, fmt.Sprintf("ResourceClaim %s: %s", c.Name, w)), true
			continue
		}
		cons, w := d.constraintsOf(c)
		if w != "" {
			dp.why, dp.refused = cmp.Or(dp.why, fmt.Sprintf("ResourceClaim %s: %s", c.Name, w)), true
			continue
		}
		dp.claims = append(dp.claims, gpuClaim{claimRef: claimRef{ns: c.Namespace, name: c.Name, uid: p.UID}, requests: reqs, cons: cons})
		for _, r := range reqs {
			if r.part == nil {
				dp.gpus += r.count
			}
		}
		if c.Status.Allocation == nil {
			allocated = false
			continue
		}
		idx, ok := d.indicesOf(c, heldOn, reqs)
		if !ok {
			allocated = false
			continue
		}
		held = append(held, idx...)
	}
	if p.Spec.NodeName != "" {
		reqs := map[string][]gpuRequest{}
		for _, c := range dp.claims {
			reqs[c.name] = c.requests
		}
		dp.struck = d.struckBy(claims, reqs, heldOn)
		dp.tolerated = d.toleratedGPUs(claims, reqs, heldOn)
	}
	var nodes []string // the nodes CEL selectors leave it (nil: any)
	var part *partRequest
	if dp.why == "" {
		part, dp.why = d.podPart(dp)
		if dp.why != "" && p.Spec.NodeName != "" {
			part, dp.why = d.allocatedPart(dp, claims, heldOn) // (bound: its allocation says)
		}
	}
	if dp.why == "" && part != nil && part.static {
		return d.staticPod(dp, shared, d.owners) // (dra_static.go)
	}
	if dp.why == "" && p.Spec.NodeName == "" {
		nodes, dp.why = d.celNodes(dp.claims)
		nodes = onSharedNodes(nodes, shared)
	}
	if dp.why != "" && p.Spec.NodeName == "" {
		return dp // left out: waits
	}
	if part != nil {
		return d.partPod(dp, part, claims, heldOn, nodes)
	}
	if dp.gpus == 0 {
		dp.out = p
		if nodes != nil {
			dp.out = p.DeepCopy()
			onlyOn(dp.out, nodes)
		}
		return dp
	}
	out := p.DeepCopy()
	c := &out.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = v1.ResourceList{}
	}
	q := c.Resources.Requests[d.gpuResource]
	q.Add(*resource.NewQuantity(int64(dp.gpus), resource.DecimalSI))
	c.Resources.Requests[d.gpuResource] = q
	c.Resources.Limits[d.gpuResource] = q
	onlyOn(out, nodes)
	if allocated && heldOn != "" && len(held) == dp.gpus {
		// The allocations are the record of the GPUs it holds.
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[d.indices] = formatIndices(held)
	}
	dp.out = out
	return dp
}

// indicesOf returns the GPU indices on node that c's allocation names, in
// request order; ok is false when it names anything else.
func (d *drat) indicesOf(c *resourceapi.ResourceClaim, node string, reqs []gpuRequest) ([]int, bool) {
	n := d.nodes[node]
	if n == nil {
		return nil, false
	}
	var idx []int
	for _, r := range reqs {
		k := 0
		for _, res := range c.Status.Allocation.Devices.Results {
			if res.Request != r.name {
				continue
			}
			i, ok := n.index[res.Device]
			if res.Driver != d.driver || res.Pool != n.pool || !ok {
				return nil, false
			}
			idx = append(idx, i)
			k++
		}
		if k != r.count {
			return nil, false
		}
	}
	return idx, true
}

// allocation is the AllocationResult giving c's requests the devices of
// gpus (indices on node, in request order).
func (d *drat) allocation(c gpuClaim, node string, gpus []int, now time.Time) (*resourceapi.AllocationResult, error) {
	n := d.nodes[node]
	if n == nil {
		return nil, fmt.Errorf("node %s has no GPUs of driver %s", node, d.driver)
	}
	a := &resourceapi.AllocationResult{
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}},
		AllocationTimestamp: &metav1.Time{Time: now},
	}
	k := 0
	for _, r := range c.requests {
		if isStatic(r) {
			continue // (staticResults, dra_static.go)
		}
		for range r.count {
			if k >= len(gpus) || gpus[k] < 0 || gpus[k] >= len(n.devices) || n.devices[gpus[k]] == "" {
				return nil, fmt.Errorf("GPU %d of node %s is no device of driver %s", gpus[min(k, len(gpus)-1)], node, d.driver)
			}
			a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: r.name, Driver: d.driver, Pool: n.pool, Device: n.devices[gpus[k]], Tolerations: r.tols})
			k++
		}
	}
	return a, nil
}

// claimGroup is pods let through together (a job's pods of
// effects.activate), or written together and let through by another step
// (a gang's, writePlans: let false).
type claimGroup struct {
	pods []*v1.Pod
	let  bool
}

// podWrite is what allocate writes for one pod: its GPU claims'
// allocations, then its channel claims (writeChannels).
type podWrite struct {
	p      *v1.Pod
	group  int
	node   string
	key    string // bindingKey
	claims []gpuClaim
	allocs []*resourceapi.AllocationResult
}

// allocate writes the GPU claims of the pods of groups (about to be let
// through) with the devices of their assignments, and lets each group with
// let through (let) as soon as its own pods' claims are written and the
// informer shows them (at most settle), not after the cycle's other
// writes. The allocations are made here, in order; the writes go out
// concurrently, claimWriters at a time (a pod's own claims in order), and
// a group one of whose pods failed is not let through and writes no more.
// It returns the pods whose claims could not be written, with why, and
// the pods let through, once every group's writes are done and shown.
func (d *drat) allocate(ctx context.Context, groups []claimGroup, assignmentOf func(types.UID) (assignment, bool), now time.Time,
	let func([]*v1.Pod)) (failed map[types.UID]error, through map[types.UID]bool) {
	failed, through = map[types.UID]error{}, map[types.UID]bool{}
	if d == nil {
		return failed, through
	}
	var all []*v1.Pod
	for _, g := range groups {
		all = append(all, g.pods...)
	}
	picks, noChannel := d.channelPlan(all, assignmentOf)
	owners := d.owners
	if owners != nil {
		if claims, err := d.io.listClaims(); err == nil {
			owners = d.staticOwners(claims) // (as they are now, dra_static.go)
		}
	}
	var work []podWrite
	left := make([]int, len(groups)) // pods of each group still to write
	bad := make([]bool, len(groups))
	for gi, g := range groups {
		for _, p := range g.pods {
			w, err := d.planWrite(p, gi, assignmentOf, noChannel[p], owners, now)
			switch {
			case err != nil:
				failed[p.UID], bad[gi] = err, true
			case w != nil:
				work = append(work, *w)
				left[gi]++
			}
		}
	}
	var mu sync.Mutex // failed, left, bad and wrote while the writes run
	wrote := make([][]gpuClaim, len(groups))
	done := make(chan int, len(groups)) // groups whose writes are all done
	for gi := range groups {
		if left[gi] == 0 && !bad[gi] {
			done <- gi
		}
	}
	ran := make([]bool, len(work))
	go func() {
		workqueue.ParallelizeUntil(ctx, claimWriters, len(work), func(i int) {
			w := work[i]
			mu.Lock()
			skip := bad[w.group]
			ran[i] = true
			mu.Unlock()
			var ws []gpuClaim
			var err error
			if !skip {
				ws, err = d.writePod(ctx, w, picks, now)
			}
			mu.Lock()
			defer mu.Unlock()
			wrote[w.group] = append(wrote[w.group], ws...)
			if err != nil {
				failed[w.p.UID], bad[w.group] = err, true
			}
			if left[w.group]--; left[w.group] == 0 && !bad[w.group] {
				done <- w.group
			}
		})
		close(done)
	}()
	for gi := range done {
		batch := []int{gi}
		for more := true; more; {
			select {
			case g, ok := <-done:
				if ok {
					batch = append(batch, g)
				} else {
					more = false
				}
			default:
				more = false
			}
		}
		var claims []gpuClaim
		mu.Lock()
		for _, g := range batch {
			claims = append(claims, wrote[g]...)
		}
		mu.Unlock()
		shown := d.await(ctx, claims)
		for _, g := range batch {
			if !groups[g].let {
				continue
			}
			let(groups[g].pods)
			for _, p := range groups[g].pods {
				through[p.UID] = true
				if !shown {
					d.early[p.UID] = true
				}
			}
		}
	}
	for i, w := range work {
		if !ran[i] && failed[w.p.UID] == nil {
			failed[w.p.UID] = cmp.Or(ctx.Err(), errors.New("its claims were not written")) // (ParallelizeUntil stopped early)
		}
	}
	return failed, through
}

// planWrite returns what allocate writes for p of group gi: nil when p
// has no claims of gpusched's or no binding; an error when its binding
// cannot be written (noChannel: no channel device for it).
func (d *drat) planWrite(p *v1.Pod, gi int, assignmentOf func(types.UID) (assignment, bool), noChannel error, owners map[string]string, now time.Time) (*podWrite, error) {
	dp := d.pods[p.UID]
	if dp == nil || len(dp.claims)+len(dp.channels) == 0 {
		return nil, nil
	}
	a, ok := assignmentOf(p.UID)
	if !ok {
		return nil, nil
	}
	if noChannel != nil {
		return nil, noChannel
	}
	d.grant(p.UID, "")
	w := &podWrite{p: p, group: gi, node: a.node, key: bindingKey(a)}
	k := 0
	taken := make([]bool, len(a.gpus)) // (MIG devices given, dra_migs.go)
	for _, c := range dp.claims {
		n := c.gpuSlots()
		if k+n > len(a.gpus) {
			return nil, fmt.Errorf("ResourceClaim %s/%s: the pod's binding has %d GPUs, its claims %d", c.ns, c.name, len(a.gpus), dp.gpus)
		}
		alloc, err := d.allocation(c, a.node, a.gpus[k:k+n], now)
		if err == nil {
			err = d.partResults(alloc, c, a, taken)
		}
		if err == nil {
			err = d.staticResults(alloc, c, a.node, owners) // (dra_static.go)
		}
		if err == nil && p.Spec.NodeName == "" {
			err = d.checkConstraints(c, a.node, alloc)
		}
		if err == nil && p.Spec.NodeName == "" {
			err = d.checkTaints(c, a.node, alloc) // (dra_lend.go)
		}
		if err != nil {
			return nil, fmt.Errorf("ResourceClaim %s/%s: %w", c.ns, c.name, err)
		}
		w.claims, w.allocs = append(w.claims, c), append(w.allocs, alloc)
		k += n
	}
	return w, nil
}

// writePod writes w's claims in order, then its pod's channel claims, and
// grants the pod its binding when all are written. It returns the claims
// written. It runs beside other writePods: it reads what the cycle's view
// left and writes nothing of drat's but granted (under gmu).
func (d *drat) writePod(ctx context.Context, w podWrite, picks map[string]string, now time.Time) ([]gpuClaim, error) {
	var wrote []gpuClaim
	for i, c := range w.claims {
		if err := d.write(ctx, c, w.p, w.allocs[i]); err != nil {
			return wrote, fmt.Errorf("ResourceClaim %s/%s: %w", c.ns, c.name, err)
		}
		wrote = append(wrote, c)
	}
	ws, err := d.writeChannels(ctx, w.p, w.node, picks, now)
	wrote = append(wrote, ws...)
	if err != nil {
		return wrote, err
	}
	d.grant(w.p.UID, w.key)
	return wrote, nil
}

// ready returns the pods an earlier cycle let through before the
// informer showed their claims (await gave up, under load) that are not
// bound yet and whose claims show now, but those of skip, in UID order:
// allocateClaims lets them through again. Such a pod was turned back at
// PreEnqueue, and nothing else brings it back (EventsToRegister registers
// no event); for a pod in the queue already, being scheduled or waiting at
// Permit, letting it through again does nothing.
func (d *drat) ready(assignmentOf func(types.UID) (assignment, bool), skip map[types.UID]bool) []*v1.Pod {
	if d == nil {
		return nil
	}
	var out []*v1.Pod
	for _, uid := range slices.Sorted(maps.Keys(d.early)) {
		dp := d.pods[uid]
		a, ok := assignmentOf(uid)
		if dp == nil || !ok || dp.src.Spec.NodeName != "" {
			delete(d.early, uid) // gone, withdrawn or bound
			continue
		}
		if skip[uid] || d.notReady(dp.src, a) != "" {
			continue
		}
		delete(d.early, uid)
		out = append(out, dp.src)
	}
	return out
}

// bindingKey identifies a binding: its node and GPUs.
func bindingKey(a assignment) string { return a.node + "/" + formatIndices(a.gpus) + a.part }

// grant records the binding uid's claims were written for ("": none).
func (d *drat) grant(uid types.UID, key string) {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	if key == "" {
		delete(d.granted, uid)
	} else {
		d.granted[uid] = key
	}
}

// write sets c's allocation to alloc and reserves it for p, unless it is
// so already. A claim allocated otherwise is released first when it is
// reserved for nobody else.
//
// The base is the copy release wrote this cycle or the informer's: a
// write on a stale copy is refused (a conflict), and only then is the
// apiserver's copy read. Deciding to write nothing, or to refuse, takes
// the apiserver's copy (the informer's may not show a release yet).
func (d *drat) write(ctx context.Context, c gpuClaim, p *v1.Pod, alloc *resourceapi.AllocationResult) error {
	cur, read := d.fresh[c.ns+"/"+c.name], false
	if cur == nil {
		cur, _ = d.io.claim(c.ns, c.name)
	}
	var err error
	if cur == nil {
		if cur, err = d.io.fetch(ctx, c.ns, c.name); err != nil {
			return err
		}
		read = true
	}
	for attempt := 0; ; attempt++ {
		wrote, err := d.writeOnce(ctx, cur, p, alloc)
		var refused errRefused
		switch {
		case err == nil && (wrote || read):
			return nil
		case err != nil && !apierrors.IsConflict(err) && !(errors.As(err, &refused) && !read):
			return err
		case attempt >= 4:
			return cmp.Or(err, fmt.Errorf("the claim keeps changing"))
		}
		if cur, err = d.io.fetch(ctx, c.ns, c.name); err != nil {
			return err
		}
		read = true
	}
}

// errRefused is writeOnce refusing a claim as it found it.
type errRefused string

func (e errRefused) Error() string { return string(e) }

// writeOnce writes cur toward alloc reserved for p; wrote says whether it
// wrote anything.
func (d *drat) writeOnce(ctx context.Context, cur *resourceapi.ResourceClaim, p *v1.Pod, alloc *resourceapi.AllocationResult) (wrote bool, err error) {
	if cur.DeletionTimestamp != nil {
		return false, errRefused("being deleted")
	}
	reserved := slices.ContainsFunc(cur.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == p.UID })
	if a := cur.Status.Allocation; a != nil {
		if sameDevices(a, alloc) && reserved {
			return false, nil
		}
		for _, r := range cur.Status.ReservedFor {
			if r.UID != p.UID {
				return false, errRefused(fmt.Sprintf("allocated and reserved for %s %s", r.Resource, r.Name))
			}
		}
		if !sameDevices(a, alloc) {
			x := cur.DeepCopy()
			x.Status.Allocation, x.Status.ReservedFor, x.Status.Devices = nil, nil, nil
			if cur, err = d.io.updateStatus(ctx, x); err != nil {
				return false, err
			}
		}
	}
	// The finalizer is metadata, the allocation status: the apiserver
	// takes each only in its own request (an update drops status
	// changes, a status update metadata changes), as kube's own
	// DynamicResources writes them.
	if !slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
		x := cur.DeepCopy()
		x.Finalizers = append(x.Finalizers, resourceapi.Finalizer)
		if cur, err = d.io.update(ctx, x); err != nil {
			return false, err
		}
	}
	x := cur.DeepCopy()
	if x.Status.Allocation == nil {
		x.Status.Allocation = alloc
	}
	// (cur, not the claim as found: moving the allocation above cleared
	// its reservations.)
	if !reservedFor(cur, p.UID) {
		x.Status.ReservedFor = append(x.Status.ReservedFor, resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	_, err = d.io.updateStatus(ctx, x)
	return true, err
}

// sameDevices reports whether two allocations name the same devices for
// the same requests on the same nodes.
func sameDevices(a, b *resourceapi.AllocationResult) bool {
	key := func(x *resourceapi.AllocationResult) []string {
		var out []string
		for _, r := range x.Devices.Results {
			out = append(out, r.Request+"|"+r.Driver+"|"+r.Pool+"|"+r.Device)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// await waits until the informer's store shows the claims allocated and
// reserved for their pods, at most settle; false when it gave up.
func (d *drat) await(ctx context.Context, claims []gpuClaim) bool {
	if len(claims) == 0 {
		return true
	}
	deadline := time.Now().Add(d.settle)
	for _, c := range claims {
		for {
			if cl, _ := d.io.shown(c.ns, c.name); cl != nil && cl.Status.Allocation != nil && reservedFor(cl, c.uid) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				d.log.Info("The scheduler's informer does not show a claim gpusched allocated yet; letting its pod through", "claim", c.ns+"/"+c.name)
				return false
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(d.grace)
	return true
}

func reservedFor(c *resourceapi.ResourceClaim, uid types.UID) bool {
	return slices.ContainsFunc(c.Status.ReservedFor, func(r resourceapi.ResourceClaimConsumerReference) bool { return r.UID == uid })
}

// release clears the allocations view found stale, but those of pods
// about to be let through (keep): allocate writes them.
func (d *drat) release(ctx context.Context, keep map[types.UID]bool) {
	if d == nil {
		return
	}
	d.fresh = map[string]*resourceapi.ResourceClaim{}
	for _, c := range d.stale {
		if c.uid != "" && keep[c.uid] {
			continue
		}
		cur, err := d.io.claim(c.ns, c.name)
		if err != nil || cur == nil || cur.Status.Allocation == nil {
			continue
		}
		x := cur.DeepCopy()
		x.Status.Allocation, x.Status.ReservedFor, x.Status.Devices = nil, nil, nil
		out, err := d.io.updateStatus(ctx, x)
		if err != nil {
			d.log.V(2).Info("Releasing a ResourceClaim's GPUs", "claim", c.ns+"/"+c.name, "err", err)
			continue
		}
		d.fresh[c.ns+"/"+c.name] = out
		d.log.V(2).Info("Released the GPUs of a ResourceClaim no pod of gpusched's uses", "claim", c.ns+"/"+c.name)
	}
	d.stale = d.stale[:0]
}

// notReady says why pod, whose binding is a, may not enter a scheduling
// cycle yet: a GPU claim of it not yet written for a, or that the informer
// does not show allocated and reserved for it. "" when it may.
func (d *drat) notReady(p *v1.Pod, a assignment) string {
	if d == nil || len(p.Spec.ResourceClaims) == 0 {
		return ""
	}
	d.gmu.Lock()
	granted := d.granted[p.UID] == bindingKey(a)
	names := d.mine[p.UID]
	d.gmu.Unlock()
	for _, name := range names {
		c, err := d.io.shown(p.Namespace, name)
		if err != nil || c == nil {
			continue
		}
		if !granted || c.Status.Allocation == nil || !reservedFor(c, p.UID) {
			return fmt.Sprintf("gpusched: waiting for its ResourceClaim %s to show the GPUs gpusched allocated", name)
		}
	}
	return ""
}

// left returns the pods view left out, with why, in UID order.
func (d *drat) left() []podEvent {
	if d == nil {
		return nil
	}
	var out []podEvent
	for _, uid := range slices.Sorted(maps.Keys(d.pods)) {
		if dp := d.pods[uid]; dp.out == nil && dp.why != "" {
			out = append(out, podEvent{pod: dp.src, what: "gpusched: " + dp.why})
		} else if dp.unkept != "" {
			out = append(out, podEvent{pod: dp.src, what: "gpusched: " + dp.unkept})
		}
	}
	return append(out, d.cd.held...)
}

// allocateClaims releases the stale claims view found and writes the GPU
// claims of the pods fx lets through (drat.allocate). Each job of
// fx.activate is let through as soon as its pods' claims are written (and
// leaves fx.activate); a gang of fx.plans once its plan is written too
// (writePlans). A pod whose claims could not be written is not let
// through: its job's binding is withdrawn and the job requeued, as when a
// member fails to bind.
func (h *host) allocateClaims(ctx context.Context, fx *effects) {
	if h.dra == nil {
		return
	}
	var groups []claimGroup
	at := map[string]int{} // job → its group of fx.activate
	keep := map[types.UID]bool{}
	for _, p := range fx.activate {
		keep[p.UID] = true
		a, ok := h.assignmentOf(p.UID)
		if i, same := at[a.job]; ok && same {
			groups[i].pods = append(groups[i].pods, p)
			continue
		}
		if ok {
			at[a.job] = len(groups)
		}
		groups = append(groups, claimGroup{pods: []*v1.Pod{p}, let: true})
	}
	for _, g := range fx.plans {
		for _, p := range g.pods {
			keep[p.UID] = true
		}
		groups = append(groups, claimGroup{pods: g.pods})
	}
	h.dra.release(ctx, keep)
	h.letThrough(h.dra.ready(h.assignmentOf, keep))
	failed, through := h.dra.allocate(ctx, groups, h.assignmentOf, h.io.now(), h.letThrough)
	fx.activate = slices.DeleteFunc(fx.activate, func(p *v1.Pod) bool { return through[p.UID] })
	if len(failed) == 0 {
		return
	}
	for _, uid := range slices.Sorted(maps.Keys(failed)) {
		h.log.Error(failed[uid], "Allocating a pod's GPU claims; its job's binding is withdrawn", "pod", uid)
		if node := cmp.Or(channelNode(failed[uid]), constraintNode(failed[uid])); node != "" {
			h.exclude(uid, node, failed[uid].Error(), h.io.now())
		}
		for _, r := range h.unreserve(uid) {
			h.io.rejectWaiting(r, "gpusched: the job's GPU claims could not be allocated")
		}
	}
	withdrawn := func(p *v1.Pod) bool { _, ok := h.assignmentOf(p.UID); return !ok }
	fx.activate = slices.DeleteFunc(fx.activate, withdrawn)
	fx.plans = slices.DeleteFunc(fx.plans, func(g planWrite) bool { return slices.ContainsFunc(g.pods, withdrawn) })
	h.poke()
}

// claimWriters bounds the claim writes allocate makes at once (the
// client's rate limiter still paces them).
const claimWriters = 32
