package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// Name is the plugin's name in scheduler configurations.
const Name = "GPUSched"

// Event reasons the plugin records on pods.
const (
	// ReasonUnschedulable: gpusched found no placement; the message is
	// gpusched's one-line explanation (gang.Explanation.String).
	ReasonUnschedulable = "GPUSchedUnschedulable"
	// ReasonGangPlaced: gpusched placed a gang; the message says where.
	ReasonGangPlaced = "GPUSchedGangPlaced"
	// ReasonPending (scheduler mode): why the pod's job waits, gpusched's
	// Decision.Pending reason; repeated at most once per eventInterval.
	ReasonPending = "GPUSchedPending"
	// ReasonInvalid (scheduler mode, Warning): the pod's labels or
	// annotations (or the queue tree) are malformed; the message names the
	// pod and the field.
	ReasonInvalid = "GPUSchedInvalid"
	// ReasonPreempted (scheduler mode): gpusched evicts the pod to make
	// room for another job, or its eviction was refused.
	ReasonPreempted = "GPUSchedPreempted"
	// ReasonRecovery (scheduler mode, Warning): the pod's node or GPUs
	// failed and gpusched requeues its job.
	ReasonRecovery = "GPUSchedRecovery"
	// ReasonQueuesApplied (scheduler mode, on the queue ConfigMap): an edit
	// of the queue tree was applied live. One that was not is a
	// ReasonInvalid Warning on the ConfigMap naming the key and field.
	ReasonQueuesApplied = "GPUSchedQueuesApplied"
)

// cycleKey is the plugin's entry in a scheduling cycle's state.
const cycleKey fwk.StateKey = Name

// Plugin is the gpusched scheduler plugin: gpusched's placement policies
// choose the node and GPUs of every pod that requests GPUs, and gangs of pods
// are placed whole, all or nothing, inside one topology domain.
//
// Extension points:
//
//	PreFilter  resolve the pod's demand; a gang member gets (or plans) its
//	           gang's placement and is narrowed to its planned node; a pod
//	           that fits nowhere is rejected with gpusched's explanation
//	Filter     nodes without enough free GPUs (gang plans count) are rejected
//	PostFilter a gang member whose planned node failed drops its gang's plan
//	PreScore   the placement policy chooses among the feasible nodes
//	Score      100 for the chosen node, 0 for the others
//	Reserve    the chosen GPUs are taken on the ledger (Unreserve gives back)
//	Permit     gang members wait until every planned member has reserved
//	PreBind    the chosen GPU indices are written to the pod's annotation
//	Bind       (when the profile lists GPUSched first under bind) the pod is
//	           bound with the indices annotation in the Binding, instead
//	           of PreBind's patch
//
// Pods without GPUs and not in a gang are skipped.
type Plugin struct {
	handle fwk.Handle
	args   *Args
	st     *state
	pods   corelisters.PodLister
	now    func() time.Time
	// annotate writes the GPU indices annotation (a merge patch) to a pod.
	annotate func(ctx context.Context, namespace, name string, patch []byte) error
	binder   *binder
	// dra allocates the GPU claims of the pods it places (dra_placement.go);
	// nil when DRA is off.
	dra *placeDRA
}

var (
	_ fwk.PreFilterPlugin     = (*Plugin)(nil)
	_ fwk.PreFilterExtensions = (*Plugin)(nil)
	_ fwk.FilterPlugin        = (*Plugin)(nil)
	_ fwk.PostFilterPlugin    = (*Plugin)(nil)
	_ fwk.PreScorePlugin      = (*Plugin)(nil)
	_ fwk.ScorePlugin         = (*Plugin)(nil)
	_ fwk.ReservePlugin       = (*Plugin)(nil)
	_ fwk.PermitPlugin        = (*Plugin)(nil)
	_ fwk.PreBindPlugin       = (*Plugin)(nil)
)

// New is the plugin's factory, for app.WithPlugin(plugin.Name, plugin.New).
// It decodes and validates the args and subscribes to the Node and Pod
// informers of h. It returns a *Plugin in placement mode (the default) and
// a *SchedulerPlugin in scheduler mode.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	if args.Mode == ModeScheduler {
		return newSchedulerPlugin(ctx, args, h)
	}
	log := klog.FromContext(ctx).WithValues("plugin", Name)
	p := &Plugin{handle: h, args: args, st: newState(args, log), now: time.Now, binder: &binder{handle: h}}
	p.annotate = func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := h.ClientSet().CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if p.dra, err = newPlacementDRA(h, args, p.st, log); err != nil {
		return nil, err
	}
	if f := h.SharedInformerFactory(); f != nil {
		p.pods = f.Core().V1().Pods().Lister()
		if _, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.onNode(o) },
			UpdateFunc: func(_, o any) { p.onNode(o) },
			DeleteFunc: func(o any) { p.onNodeDelete(o) },
		}); err != nil {
			return nil, err
		}
		if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { p.onPod(o) },
			UpdateFunc: func(_, o any) { p.onPod(o) },
			DeleteFunc: func(o any) { p.onPodDelete(o) },
		}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Name returns Name.
func (p *Plugin) Name() string { return Name }

// Args returns the plugin's defaulted args. The caller must not modify them.
func (p *Plugin) Args() *Args { return p.args }

func (p *Plugin) onNode(o any) {
	if n, ok := o.(*v1.Node); ok {
		p.st.setNode(p.dra.node(n))
	}
}

func (p *Plugin) onNodeDelete(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if n, ok := o.(*v1.Node); ok {
		p.dra.forgetNode(n.Name)
		p.st.deleteNode(n.Name)
	}
}

func (p *Plugin) onPod(o any) {
	if pod, ok := o.(*v1.Pod); ok {
		if pod.Spec.NodeName != "" {
			p.dra.bound(pod.UID)
		}
		view, _ := p.dra.pod(pod)
		reject := p.st.setPod(view)
		p.reject(reject, fmt.Sprintf("gang member %s/%s finished", pod.Namespace, pod.Name))
	}
}

func (p *Plugin) onPodDelete(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if pod, ok := o.(*v1.Pod); ok {
		p.dra.forgetPod(pod.UID)
		reject := p.st.deletePod(pod.UID, pod.Spec.NodeName != "")
		p.reject(reject, fmt.Sprintf("gang member %s/%s was deleted", pod.Namespace, pod.Name))
	}
}

// cycle is what one scheduling cycle of one pod knows. PreFilter writes it;
// every later extension point reads it and must cope with any field left
// empty by a PreFilter that rejected the pod: kube-scheduler's preemption
// runs Filter (and AddPod/RemovePod) on the state of a rejected pod.
type cycle struct {
	d     demand
	build int // state.builds when PreFilter ran
	// A gang member's gang and planned node ("" when the gang has no plan
	// this pod takes part in: then no node can be used).
	gang    *gangSpec
	planned string
	// A single pod's request, the cluster and what each of its hosts had
	// free when PreFilter ran (immutable: Filter reads them in parallel),
	// and the node and placement PreScore chose. req and room are nil when
	// PreFilter could not resolve the pod.
	req     *gang.Request
	cluster *topology.Cluster
	room    []hostRoom
	// delta is what kube-scheduler's simulation added to (negative) or
	// removed from (positive) each host since PreFilter: AddPod and
	// RemovePod write it, on a clone of the state when preemption or
	// nominated pods are evaluated.
	delta  map[topology.HostID]demand
	chosen string
	choice *gang.Placement
	// draFixed: PreFilter chose the node and GPUs (a pod with DRA GPU
	// claims, dra_placement.go); PreScore and Reserve keep that choice.
	draFixed bool
}

// hostRoom is what one host had free for a pod when PreFilter ran; why is
// set when it takes no pod at all (not healthy).
type hostRoom struct {
	free demand
	all  int // the host's GPUs
	why  string
}

// Clone copies the simulation deltas and shares the rest: after PreFilter
// only AddPod/RemovePod (on clones) and PreScore (in the scheduling cycle)
// write to a cycle.
func (c *cycle) Clone() fwk.StateData {
	x := *c
	x.delta = maps.Clone(c.delta)
	return &x
}

// fits says why one task of c's pod does not fit on host h, with what
// PreFilter saw and the simulated changes since, or "".
func (c *cycle) fits(h topology.HostID) string {
	r := c.room[h]
	if r.why != "" {
		return r.why
	}
	f := r.free
	if d, ok := c.delta[h]; ok {
		f.gpus += d.gpus
		f.cpuMilli += d.cpuMilli
		f.memoryMiB += d.memoryMiB
	}
	switch {
	case f.gpus < c.d.gpus:
		return fmt.Sprintf("gpusched: %d of %d GPUs free, pod needs %d", max(f.gpus, 0), r.all, c.d.gpus)
	case f.cpuMilli < c.d.cpuMilli:
		return fmt.Sprintf("gpusched: %dm CPU free, pod needs %dm", max(f.cpuMilli, 0), c.d.cpuMilli)
	case f.memoryMiB < c.d.memoryMiB:
		return fmt.Sprintf("gpusched: %dMi memory free, pod needs %dMi", max(f.memoryMiB, 0), c.d.memoryMiB)
	}
	return ""
}

func readCycle(cs fwk.CycleState) *cycle {
	d, err := cs.Read(cycleKey)
	if err != nil {
		return nil
	}
	c, _ := d.(*cycle)
	return c
}

// PreFilter resolves the pod against gpusched's model of the cluster.
func (p *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	raw := pod
	pod, dp, claims, avoid, st := p.draPreFilter(pod) // (dra_placement.go)
	if st != nil {
		return nil, st
	}
	d := demandOf(pod, p.args)
	g, inGang, err := gangOf(pod, p.args)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	if d.gpus == 0 && d.mig == "" && d.milli == 0 && d.shares == "" && !inGang && (dp == nil || !dp.static || !claims) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if inGang && dp != nil && dp.static && claims {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gpusched: a gang member of static MIG devices, which placement mode does not place (each member's devices would be picked apart from its gang's plan); use mode: scheduler")
	}
	if _, several := podTasks(d); several && inGang {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gpusched: a gang member with several MIG devices or shares, which placement mode does not place (its gang would have to go whole on one node); use mode: scheduler")
	}
	if inGang {
		if c := p.gangSharedClaim(pod, dp, g); c != "" { // (dra_shared.go)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gpusched: gang members share the GPU ResourceClaim %s, which placement mode does not place (the gang would have to go whole on the node of its devices); use mode: scheduler", c))
		}
	}
	if d.gpus > topology.MaxGPUsPerHost {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("pod requests %d GPUs; no host has more than %d", d.gpus, topology.MaxGPUsPerHost))
	}
	gone := p.goneFromNominated(pod)
	s := p.st
	s.mu.Lock()
	s.forgetPods(gone)
	reject := s.ensureTopology()
	reject = append(reject, s.expirePlansLocked(p.now(), p.args.GangTimeout())...)
	if s.topo == nil {
		err := s.buildErr
		s.mu.Unlock()
		p.reject(reject, "its gang's placement was dropped")
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gpusched: %v", err))
	}
	c := &cycle{d: d, build: s.builds}
	var res *fwk.PreFilterResult
	var explained string
	var activate []*v1.Pod
	if inGang {
		c.gang = &g
		res, st, explained, activate = p.gangPreFilter(pod, c)
	} else {
		st, explained = p.singlePreFilter(pod, c)
	}
	var chosen assignment
	if claims && st.IsSuccess() {
		chosen, res, st = p.draChoice(pod, c, avoid)
	}
	s.mu.Unlock()
	if claims && st.IsSuccess() {
		st = p.dra.hold(ctx, raw, dp, chosen)
	}
	p.reject(reject, "its gang's placement was dropped")
	if explained != "" {
		p.event(pod, v1.EventTypeWarning, ReasonUnschedulable, explained)
	}
	if len(activate) > 0 {
		// The other members wait in the unschedulable queue, where adding
		// pods does not reach them: move them to the active queue.
		m := make(map[string]*v1.Pod, len(activate))
		for _, a := range activate {
			m[a.Namespace+"/"+a.Name] = a
		}
		p.handle.Activate(klog.FromContext(ctx), m)
	}
	cs.Write(cycleKey, c)
	return res, st
}

// goneFromNominated returns the pods gpusched still counts on pod's
// nominated node that the informer's store no longer has (or has finished).
// After kube-scheduler's preemption evicts victims, the preemptor comes back
// as soon as the scheduler's cache has dropped them, possibly before this
// plugin's informer handler has run: without this, PreFilter would see the
// victims' GPUs still taken and preemption would evict a second set. The
// store is updated before any handler runs, so it is never behind.
func (p *Plugin) goneFromNominated(pod *v1.Pod) []types.UID {
	name := pod.Status.NominatedNodeName
	if name == "" || p.pods == nil {
		return nil
	}
	s := p.st
	s.mu.Lock()
	var keys []*podRecord
	for _, uid := range sortedKeys(s.pods) {
		if r := s.pods[uid]; r.node == name && !r.assumed {
			keys = append(keys, r)
		}
	}
	s.mu.Unlock()
	var gone []types.UID
	for _, r := range keys {
		ns, n, _ := strings.Cut(r.key, "/")
		cur, err := p.pods.Pods(ns).Get(n)
		if err != nil || cur.UID != r.uid || isTerminal(cur) {
			gone = append(gone, r.uid)
		}
	}
	return gone
}

// forgetPods releases the records of pods gone from the scheduler's
// snapshot (see goneFromNominated) whose deletion the informer has not
// delivered yet; it does so as deletePod will. s.mu is held.
func (s *state) forgetPods(uids []types.UID) {
	for _, uid := range uids {
		if r, ok := s.pods[uid]; ok && !r.assumed {
			s.releaseLocked(r)
			delete(s.pods, uid)
		}
	}
}

// singlePreFilter checks that a pod outside any gang fits somewhere and
// records what each host has free for Filter. The room is recorded even when
// the pod fits nowhere: kube-scheduler's preemption then asks Filter whether
// removing victims makes room. s.mu is held.
func (p *Plugin) singlePreFilter(pod *v1.Pod, c *cycle) (*fwk.Status, string) {
	s := p.st
	req, err := s.singleRequest(pod, c.d)
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), ""
	}
	c.req = req
	cl := s.topo.Cluster
	c.cluster = cl
	c.room = make([]hostRoom, cl.NumHosts())
	for h := range c.room {
		c.room[h] = s.hostRoom(topology.HostID(h))
	}
	if _, why := s.place(req, s.eligibility(pod)); why != nil {
		msg := why.String()
		return fwk.NewStatus(fwk.Unschedulable, msg), msg
	}
	return nil, ""
}

// hostRoom returns what host h has free now.
func (s *state) hostRoom(h topology.HostID) hostRoom {
	l := s.ledger
	_, n := s.topo.Cluster.HostGPUs(h)
	r := hostRoom{all: n, free: demand{gpus: l.HostFreeGPUs(h), cpuMilli: l.CPUFree(h), memoryMiB: l.MemoryFree(h)}}
	if hh := l.HostHealth(h); hh != topology.Healthy {
		r.why = fmt.Sprintf("gpusched: host is %s", hh)
	}
	return r
}

// gangPreFilter finds or makes the plan of pod's gang and narrows the pod to
// its planned node. s.mu is held.
func (p *Plugin) gangPreFilter(pod *v1.Pod, c *cycle) (*fwk.PreFilterResult, *fwk.Status, string, []*v1.Pod) {
	s := p.st
	g := *c.gang
	if pl, ok := s.plans[g.key]; ok {
		if !pl.spec.equal(g) {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("gang %s: members disagree on size, minimum or topology", g.key)), "", nil
		}
		i, ok := pl.slot[pod.UID]
		if !ok {
			return nil, fwk.NewStatus(fwk.Unschedulable,
				fmt.Sprintf("gang %s: placed without this pod (%d of %d members); it waits for the gang's next placement", g.key, len(pl.slot), g.size)), "", nil
		}
		c.planned = s.topo.Cluster.HostName(pl.placement.Claims[i].Host)
		return &fwk.PreFilterResult{NodeNames: sets.New(c.planned)}, nil, "", nil
	}

	// Gather the gang: members running or reserved, and pending ones.
	members, err := p.gangMembers(g, pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), "", nil
	}
	var pending []*v1.Pod
	var running []string // their nodes
	for _, m := range members {
		if r, ok := s.pods[m.UID]; ok {
			running = append(running, r.node)
		} else if m.Spec.NodeName != "" {
			running = append(running, m.Spec.NodeName)
		} else {
			pending = append(pending, m)
		}
	}
	if len(running) >= g.size {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("gang %s: all %d members already run; this pod is one too many", g.key, g.size)), "", nil
	}
	if len(running)+len(pending) < g.min {
		if s.early[g.key] == nil {
			s.early[g.key] = map[types.UID]*v1.Pod{}
		}
		s.early[g.key][pod.UID] = pod
		return nil, fwk.NewStatus(fwk.Unschedulable,
			fmt.Sprintf("gang %s: %d of %d pods exist (minimum %d); waiting for the rest", g.key, len(running)+len(pending), g.size, g.min)), "", nil
	}
	// The gang is complete: members turned away before go back to the
	// active queue, whatever happens to this attempt.
	var activate []*v1.Pod
	for _, uid := range sortedKeys(s.early[g.key]) {
		if uid != pod.UID {
			activate = append(activate, s.early[g.key][uid])
		}
	}
	delete(s.early, g.key)
	if n := g.size - len(running); len(pending) > n {
		pending = pending[:n]
	}

	// The job: one task group per distinct demand, members in name order.
	var job workload.Job
	job.ID = g.key
	job.Topology = g.constraints()
	var groupOf []int // per pending member
	var demands []demand
	for _, m := range pending {
		gi, _ := groupIndex(&job, &demands, demandOf(p.dra.view(m), p.args))
		job.Groups[gi].Count++
		groupOf = append(groupOf, gi)
	}
	if need := g.min - len(running); len(job.Groups) == 1 && need < job.Groups[0].Count {
		job.Groups[0].MinCount = max(need, 1) // elastic: at least the minimum
	}
	req, err := gang.NewRequest(s.topo.Cluster, &job)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error()), "", activate
	}
	allow := s.eligibility(pod)
	if len(running) > 0 && g.required != "" {
		s.keepNear(allow, running, req.Within())
	}
	pl, why := s.place(req, allow)
	if why != nil {
		msg := why.String()
		return nil, fwk.NewStatus(fwk.Unschedulable, msg), msg, activate
	}
	txn, err := gang.Commit(s.ledger, pl)
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("gang %s: committing its placement: %w", g.key, err)), "", activate
	}
	if t, ok := s.placer.(gang.Tracker); ok {
		t.Committed(req, pl)
	}
	plan := &gangPlan{spec: g, req: req, placement: pl, txn: txn, slot: map[types.UID]int{},
		reserved: map[types.UID]bool{}, created: p.now()}
	// Members take their group's tasks in name order.
	byGroup := make([][]int, len(job.Groups))
	for k, gi := range groupOf {
		byGroup[gi] = append(byGroup[gi], k)
	}
	cursor := make([]int, len(job.Groups))
	for ti, t := range pl.Tasks {
		k := byGroup[t.Group][cursor[t.Group]]
		cursor[t.Group]++
		plan.slot[pending[k].UID] = ti
	}
	cl := s.topo.Cluster
	plan.where = fmt.Sprintf("gang %s: %d pods on %d GPUs in %s %s", g.key, pl.Len(), pl.GPUs(), cl.LevelName(pl.Level), cl.DomainName(pl.Domain))
	s.plans[g.key] = plan
	i, ok := plan.slot[pod.UID]
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: placed without this pod", g.key)), "", activate
	}
	c.planned = cl.HostName(pl.Claims[i].Host)
	for _, m := range pending {
		if _, ok := plan.slot[m.UID]; ok && m.UID != pod.UID && !slices.ContainsFunc(activate, func(a *v1.Pod) bool { return a.UID == m.UID }) {
			activate = append(activate, m)
		}
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(c.planned)}, nil, "", activate
}

// gangMembers lists the live pods of g in name order, pod included, and checks
// that they agree on the gang's size and topology: as the informer has
// them, since g, read from pod as the cycle sees it, may carry the
// topology its claims imply (ComputeDomain channels: nvlink,
// dra_computedomain.go).
func (p *Plugin) gangMembers(g gangSpec, pod *v1.Pod) ([]*v1.Pod, error) {
	var list []*v1.Pod
	if p.pods != nil {
		// The scheduler's pod informer has no namespace index: list by
		// label and keep the namespace's.
		sel := labels.SelectorFromSet(labels.Set{p.args.GangLabel: g.name})
		all, err := p.pods.List(sel)
		if err != nil {
			return nil, err
		}
		for _, m := range all {
			if m.Namespace == g.namespace {
				list = append(list, m)
			}
		}
	}
	ref := g
	for _, m := range list {
		if rg, ok, err := gangOf(m, p.args); m.UID == pod.UID && ok && err == nil {
			ref = rg
		}
	}
	seen := false
	out := list[:0:0]
	for _, m := range list {
		if m.DeletionTimestamp != nil || isTerminal(m) {
			continue
		}
		mg, ok, err := gangOf(m, p.args)
		if err != nil {
			return nil, err
		}
		if m.UID == pod.UID {
			seen = true
			m = pod
		}
		if !ok || !mg.equal(ref) {
			return nil, fmt.Errorf("gang %s: pods %s and %s disagree on size, minimum or topology", g.key, pod.Name, m.Name)
		}
		out = append(out, m)
	}
	if !seen {
		out = append(out, pod)
	}
	sortPods(out)
	return out, nil
}

// keepNear restricts allow to the hosts that share a domain at level lv with
// the first of the running members' nodes, so that a gang growing back to its
// size stays inside its required domain.
func (s *state) keepNear(allow []bool, running []string, lv topology.Level) {
	c := s.topo.Cluster
	h0, ok := c.HostByName(running[0])
	if !ok {
		return
	}
	domainOf := func(h topology.HostID) topology.DomainID {
		if lv == topology.LevelFabric {
			first, n := c.HostGPUs(h)
			if n == 0 {
				return topology.NoDomain
			}
			return c.GPUFabric(first)
		}
		return c.HostAt(h, lv)
	}
	want := domainOf(h0)
	for h := range allow {
		if allow[h] && (want == topology.NoDomain || domainOf(topology.HostID(h)) != want) {
			allow[h] = false
		}
	}
}

// expirePlansLocked drops gang plans older than timeout: their members were
// not all scheduled in time, so the GPUs they hold go back.
func (s *state) expirePlansLocked(now time.Time, timeout time.Duration) []types.UID {
	var reject []types.UID
	for _, key := range sortedKeys(s.plans) {
		if now.Sub(s.plans[key].created) > timeout {
			reject = append(reject, s.dropPlanLocked(key)...)
		}
	}
	return reject
}

// PreFilterExtensions returns the plugin: kube-scheduler's simulations
// (preemption dry runs, nominated pods) add and remove pods through it, so
// Filter sees the GPUs they would take or free.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod records that the simulation put podInfo's pod on its node: one
// pod's GPUs, CPU and memory fewer there.
func (p *Plugin) AddPod(_ context.Context, cs fwk.CycleState, _ *v1.Pod, podInfo fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
	return p.simulate(cs, podInfo, ni, -1)
}

// RemovePod records that the simulation took podInfo's pod off its node.
func (p *Plugin) RemovePod(_ context.Context, cs fwk.CycleState, _ *v1.Pod, podInfo fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
	return p.simulate(cs, podInfo, ni, +1)
}

func (p *Plugin) simulate(cs fwk.CycleState, podInfo fwk.PodInfo, ni fwk.NodeInfo, sign int) *fwk.Status {
	c := readCycle(cs)
	if c == nil || c.room == nil || podInfo == nil || podInfo.GetPod() == nil || ni == nil || ni.Node() == nil {
		return nil // no view to change (a gang member, or PreFilter resolved nothing)
	}
	h, ok := c.cluster.HostByName(ni.Node().Name)
	if !ok {
		return nil
	}
	d := demandOf(p.dra.view(podInfo.GetPod()), p.args)
	if c.delta == nil {
		c.delta = map[topology.HostID]demand{}
	}
	x := c.delta[h]
	x.gpus += sign * d.gpus
	x.cpuMilli += int64(sign) * d.cpuMilli
	x.memoryMiB += int64(sign) * d.memoryMiB
	c.delta[h] = x
	return nil
}

// Filter rejects nodes where the pod's GPUs do not fit, as PreFilter saw
// them plus what a simulation added or removed since. A gang member can use
// its planned node only; a member without a plan can use none (evicting
// pods from any one node does not make room for a gang that gpusched could
// not place), so every other node is unresolvable.
func (p *Plugin) Filter(_ context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	c := readCycle(cs)
	if c == nil || ni == nil || ni.Node() == nil {
		return nil
	}
	node := ni.Node().Name
	if c.gang != nil {
		switch {
		case c.planned == "":
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gang %s: not placed by gpusched", c.gang.key))
		case node != c.planned:
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gang %s: placed on %s", c.gang.key, c.planned))
		}
		return nil
	}
	if c.room == nil {
		return nil // PreFilter resolved nothing: no opinion
	}
	h, ok := c.cluster.HostByName(node)
	if !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gpusched: not a GPU node")
	}
	if msg := c.fits(h); msg != "" {
		return fwk.NewStatus(fwk.Unschedulable, msg)
	}
	return nil
}

// PostFilter drops the plan of a gang member whose planned node failed other
// filters, so the gang is placed again.
func (p *Plugin) PostFilter(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	c := readCycle(cs)
	p.dra.release(pod.UID)
	if c != nil && c.draFixed {
		p.dra.avoidNode(pod.UID, c.chosen)
	}
	if c == nil || c.gang == nil || c.planned == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	s := p.st
	s.mu.Lock()
	var reject []types.UID
	if pl, ok := s.plans[c.gang.key]; ok {
		if _, member := pl.slot[pod.UID]; member {
			reject = s.dropPlanLocked(c.gang.key)
		}
	}
	s.mu.Unlock()
	p.reject(reject, fmt.Sprintf("gang %s: member %s did not fit its planned node", c.gang.key, pod.Name))
	return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: planned node %s failed; the gang will be placed again", c.gang.key, c.planned))
}

// PreScore lets the placement policy choose among the nodes that passed every
// filter.
func (p *Plugin) PreScore(_ context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	c := readCycle(cs)
	if c == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	if c.gang != nil {
		c.chosen = c.planned
		return nil
	}
	if c.req == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	if c.draFixed {
		return nil
	}
	s := p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.build != s.builds || s.topo == nil {
		return nil // Reserve places again
	}
	allow := make([]bool, s.topo.Cluster.NumHosts())
	for _, n := range nodes {
		if h, ok := s.topo.Cluster.HostByName(n.Node().Name); ok {
			allow[h] = true
		}
	}
	if pl, why := s.place(c.req, allow); why == nil {
		c.chosen, c.choice = s.topo.Cluster.HostName(pl.Claims[0].Host), pl
	}
	return nil
}

// Score gives the policy's choice fwk.MaxScore and every other node 0.
func (p *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if c := readCycle(cs); c != nil && c.chosen != "" && ni.Node().Name == c.chosen {
		return fwk.MaxScore, nil
	}
	return 0, nil
}

// ScoreExtensions returns nil: scores need no normalising.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// Reserve takes the pod's GPUs on the ledger: a gang member's planned slot,
// or the policy's choice on the node the scheduler picked.
func (p *Plugin) Reserve(_ context.Context, cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	st := p.reserve(cs, pod, node)
	if st.IsSuccess() {
		p.dra.reserve(pod.UID)
	}
	return st
}

func (p *Plugin) reserve(cs fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	c := readCycle(cs)
	if c == nil {
		return nil
	}
	s := p.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topo == nil {
		return fwk.NewStatus(fwk.Unschedulable, "gpusched: no GPU topology")
	}
	cl := s.topo.Cluster
	if c.gang != nil {
		pl, ok := s.plans[c.gang.key]
		if !ok {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: its placement was dropped", c.gang.key))
		}
		i, ok := pl.slot[pod.UID]
		if !ok || cl.HostName(pl.placement.Claims[i].Host) != node {
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: pod is not planned on %s", c.gang.key, node))
		}
		claim := pl.placement.Claims[i]
		first, _ := cl.HostGPUs(claim.Host)
		rec := &podRecord{uid: pod.UID, key: pod.Namespace + "/" + pod.Name, node: node, demand: c.d,
			assumed: true, applied: true, cpuHeld: true}
		for _, g := range claim.GPUs {
			rec.gpus = append(rec.gpus, int(g.GPU-first))
		}
		rec.part = partOf(claim)
		s.pods[pod.UID] = rec
		pl.reserved[pod.UID] = true
		return nil
	}
	if c.build == s.builds && c.choice != nil && c.chosen == node {
		if err := s.commitSingle(pod, c.d, c.req, c.choice); err == nil {
			return nil
		}
	}
	if c.draFixed {
		// Its claims name the GPUs PreFilter chose: no others.
		return fwk.NewStatus(fwk.Unschedulable, "gpusched: the GPUs chosen for the pod's claims are no longer free; it is placed again")
	}
	// The scheduler picked another node, or the ledger changed: place on
	// that node alone.
	req, err := s.singleRequest(pod, c.d)
	if err != nil {
		return fwk.AsStatus(err)
	}
	h, ok := cl.HostByName(node)
	if !ok {
		return fwk.NewStatus(fwk.Unschedulable, "gpusched: not a GPU node")
	}
	allow := make([]bool, cl.NumHosts())
	allow[h] = true
	pl, why := s.place(req, allow)
	if why != nil {
		return fwk.NewStatus(fwk.Unschedulable, why.String())
	}
	if err := s.commitSingle(pod, c.d, req, pl); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	return nil
}

// Unreserve gives back what Reserve took; for a gang member whose gang has not
// been permitted yet, the whole gang's plan goes and the other members are
// rejected.
func (p *Plugin) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) {
	p.dra.unreserve(ctx, pod)
	c := readCycle(cs)
	key := ""
	if c != nil && c.gang != nil {
		key = c.gang.key
	} else if g, ok, err := gangOf(pod, p.args); ok && err == nil {
		key = g.key
	}
	s := p.st
	s.mu.Lock()
	reject := s.unreserveLocked(pod, key)
	s.mu.Unlock()
	p.reject(reject, fmt.Sprintf("gang %s: member %s was unreserved", key, pod.Name))
}

// Permit holds a gang member until every planned member has reserved, then
// lets them all go at once.
func (p *Plugin) Permit(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	c := readCycle(cs)
	if c == nil || c.gang == nil {
		return nil, 0
	}
	s := p.st
	s.mu.Lock()
	pl, ok := s.plans[c.gang.key]
	if !ok {
		s.mu.Unlock()
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("gang %s: its placement was dropped", c.gang.key)), 0
	}
	if len(pl.reserved) < len(pl.slot) {
		s.mu.Unlock()
		return fwk.NewStatus(fwk.Wait, fmt.Sprintf("gang %s: %d of %d members reserved", c.gang.key, len(pl.reserved), len(pl.slot))), p.args.GangTimeout()
	}
	// Every member holds its slot: the plan's claims now belong to the
	// members' records.
	delete(s.plans, c.gang.key)
	allow := sets.New[types.UID]()
	for uid := range pl.reserved {
		allow.Insert(uid)
	}
	where := pl.where
	s.mu.Unlock()
	var released []*v1.Pod
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if allow.Has(wp.GetPod().UID) {
			wp.Allow(Name)
			released = append(released, wp.GetPod())
		}
	})
	for _, m := range append(released, pod) {
		p.event(m, v1.EventTypeNormal, ReasonGangPlaced, where)
	}
	return nil, 0
}

// PreBindPreFlight says whether PreBind has indices to write.
func (p *Plugin) PreBindPreFlight(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	if p.dra.holding(pod.UID) {
		// Its claims to write, in the profile's order (DynamicResources
		// adds the pod to their reservedFor).
		return &fwk.PreBindPreFlightResult{AllowParallel: false}, nil
	}
	if readCycle(cs) == nil || p.bindsIndices() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	s := p.st
	s.mu.Lock()
	r, ok := s.pods[pod.UID]
	has := ok && len(r.gpus) > 0
	s.mu.Unlock()
	if !has {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}

// PreBind writes the chosen GPU indices to the pod's annotation, unless
// Bind writes them with the binding.
func (p *Plugin) PreBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	if st := p.dra.preBind(ctx, pod); !st.IsSuccess() {
		return st
	}
	if p.bindsIndices() {
		return nil
	}
	val, _ := p.heldIndices(pod)
	return writeIndices(ctx, p.annotate, p.args.GPUIndicesAnnotation, pod, val)
}

// writeIndices writes the GPU indices val to pod's annotation key with
// annotate (a merge patch), unless val is empty or already there.
func writeIndices(ctx context.Context, annotate func(ctx context.Context, namespace, name string, patch []byte) error, key string, pod *v1.Pod, val string) *fwk.Status {
	if val == "" || pod.Annotations[key] == val {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: val}}})
	if err != nil {
		return fwk.AsStatus(err)
	}
	if err := annotate(ctx, pod.Namespace, pod.Name, patch); err != nil {
		return fwk.AsStatus(fmt.Errorf("writing %s: %w", key, err))
	}
	return nil
}

// reject rejects waiting pods by UID.
func (p *Plugin) reject(uids []types.UID, why string) {
	for _, uid := range uids {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, why)
		}
	}
}

// event records an event about pod, if the scheduler gave us a recorder.
func (p *Plugin) event(pod *v1.Pod, typ, reason, msg string) {
	if r := p.handle.EventRecorder(); r != nil {
		r.Eventf(pod, nil, typ, reason, "Scheduling", "%s", msg)
	}
}
