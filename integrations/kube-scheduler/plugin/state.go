package plugin

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpusched/gpusched/gang"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/workload"
)

// podRecord is what one pod assigned to a node holds, in node names and GPU
// indices rather than gpusched IDs, so that it survives rebuilding the
// cluster when nodes change.
type podRecord struct {
	uid  types.UID
	key  string // namespace/name
	node string
	// gpus are the GPU indices on the node; nil until known (a pod bound
	// by another scheduler without the indices annotation gets the node's
	// lowest free GPUs).
	gpus []int
	// indices is the pod's GPU indices annotation (or, for a DRA pod, the
	// GPUs its claims name), resolved into gpus once the node is a GPU
	// host of the cluster (it may not be yet when the pod is seen).
	indices string
	demand
	// part is what a pod of a MIG device or a share of a GPU (demand.mig,
	// demand.milli) takes of its one GPU, as placed (its GPU field unused);
	// src is the pod, whose annotations say it when it was bound by
	// another (a restart: heldPart).
	part topology.GPUClaim
	src  *v1.Pod
	// migs are, for a pod of several MIG devices (dra_migs.go), its MIG
	// devices as placed; nil for one bound by another (a restart): src's
	// claims name them (heldMIGClaims).
	migs []topology.GPUClaim
	// assumed: reserved by this plugin and not yet seen bound.
	assumed bool
	// applied: held on the current ledger.
	applied bool
	// cpuHeld: the claim includes CPU and memory (false when the ledger had
	// no room for them: the GPUs are held regardless).
	cpuHeld bool
	// req and placement, for pods this plugin placed alone: reported to the
	// placer's Tracker on release.
	req       *gang.Request
	placement *gang.Placement
}

// gangPlan is a gang placed by gpusched and held on the ledger while its
// members reserve their slots, one scheduling cycle each.
type gangPlan struct {
	spec      gangSpec
	req       *gang.Request
	placement *gang.Placement
	txn       gang.Txn
	// slot maps a member to its task: an index into placement.Claims.
	slot map[types.UID]int
	// reserved holds the members that have reserved their slot.
	reserved map[types.UID]bool
	// where is a one-line description of the chosen domain for events.
	where string
	// created is when the plan was made; plans not completed within the
	// gang timeout are dropped.
	created time.Time
}

// state is the plugin's model of the cluster: the topology built from the
// nodes, the ledger of what assigned pods hold, and the open gang plans.
// Informer handlers and the scheduler's extension points share it; mu guards
// everything.
type state struct {
	mu   sync.Mutex
	args *Args
	log  klog.Logger

	nodes map[string]*v1.Node
	// shapes remembers what each node contributed, to tell relevant node
	// updates from heartbeats.
	shapes map[string]string
	dirty  bool

	topo     *Topology
	ledger   *topology.Ledger
	placer   gang.Placer
	buildErr error
	builds   int

	pods  map[types.UID]*podRecord
	plans map[string]*gangPlan
	// early holds, per gang, the members turned away because the gang was
	// not complete yet. Adding a pod does not requeue pods the scheduler
	// turned away, so the member that first sees the whole gang activates
	// them.
	early map[string]map[types.UID]*v1.Pod
}

func newState(a *Args, log klog.Logger) *state {
	return &state{
		args:   a,
		log:    log,
		nodes:  map[string]*v1.Node{},
		shapes: map[string]string{},
		dirty:  true,
		pods:   map[types.UID]*podRecord{},
		plans:  map[string]*gangPlan{},
		early:  map[string]map[types.UID]*v1.Pod{},
	}
}

// shapeKey is the part of a node gpusched reads; a change in it rebuilds the
// cluster.
func (s *state) shapeKey(n *v1.Node) string {
	sh, ok := shapeOf(n, s.args)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d|%d|%s|%d|%d|%s|%s|%q|%v|%s|%t", sh.gpus, sh.allocGPUs, sh.model, sh.cpuMilli, sh.memoryMiB, sh.machine, sh.clique, sh.levels, sh.failed, sh.layout, sh.numa)
}

// setNode records a node added or updated.
func (s *state) setNode(n *v1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[n.Name] = n
	if k := s.shapeKey(n); s.shapes[n.Name] != k {
		s.shapes[n.Name] = k
		s.dirty = true
	}
}

// deleteNode forgets a node.
func (s *state) deleteNode(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nodes[name]; !ok {
		return
	}
	delete(s.nodes, name)
	if s.shapes[name] != "" {
		s.dirty = true
	}
	delete(s.shapes, name)
}

// ensureTopology rebuilds the cluster and ledger if nodes changed. It returns
// the UIDs of gang members waiting at Permit whose plan the rebuild dropped:
// the caller rejects them once s.mu is released.
func (s *state) ensureTopology() []types.UID {
	if !s.dirty && s.topo != nil {
		return nil
	}
	s.dirty = false
	nodes := make([]*v1.Node, 0, len(s.nodes))
	for _, name := range sortedKeys(s.nodes) {
		nodes = append(nodes, s.nodes[name])
	}
	topo, err := BuildTopology(nodes, s.args)
	s.buildErr = err
	if err != nil && !errors.Is(err, ErrNoGPUNodes) {
		s.log.Error(err, "Cannot model the GPU nodes")
		if s.topo != nil {
			s.log.Info("Keeping the previous GPU topology")
			return nil
		}
	}
	var reject []types.UID
	for _, key := range sortedKeys(s.plans) {
		reject = append(reject, s.dropPlanLocked(key)...)
	}
	for _, r := range s.pods {
		r.applied, r.req, r.placement = false, nil, nil
	}
	s.builds++
	if err != nil {
		s.topo, s.ledger, s.placer = nil, nil, nil
		return reject
	}
	for _, w := range topo.Warnings {
		s.log.Info("GPU topology", "warning", w)
	}
	placer, err := newPlacer(s.args)
	if err != nil {
		panic("plugin: validated policy does not build: " + err.Error())
	}
	s.topo, s.ledger, s.placer = topo, topo.NewLedger(), placer
	recs := make([]*podRecord, 0, len(s.pods))
	for _, r := range s.pods {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *podRecord) int { return strings.Compare(a.key, b.key) })
	for _, r := range recs {
		s.applyLocked(r)
	}
	c := topo.Cluster
	s.log.V(2).Info("Built GPU topology", "hosts", c.NumHosts(), "gpus", c.NumGPUs(), "levels", c.NumLevels(), "pods", len(recs))
	return reject
}

func newPlacer(a *Args) (gang.Placer, error) {
	opts := gang.Options{}
	if a.Policy == "fgd" {
		opts.Frag.Distribution = a.Distribution()
	}
	return gang.New(a.Policy, opts)
}

// claimOf returns the claim of r on the current cluster; ok is false when r's
// node is not a GPU host of it.
func (s *state) claimOf(r *podRecord, withCPU bool) (topology.Claim, bool) {
	c := s.topo.Cluster
	h, ok := c.HostByName(r.node)
	if !ok {
		return topology.Claim{}, false
	}
	cl := topology.Claim{Host: h}
	if withCPU {
		cl.CPUMilli, cl.MemoryMiB = r.cpuMilli, r.memoryMiB
	}
	if _, several := podTasks(r.demand); several {
		cl.GPUs = r.migs
		if cl.GPUs == nil && r.src != nil {
			cl.GPUs = heldSeveralClaims(c, h, r.src) // (dra_shares.go)
		}
		return cl, len(cl.GPUs) > 0
	}
	first, n := c.HostGPUs(h)
	parted := r.demand.mig != "" || r.demand.milli > 0
	want := r.demand.gpus
	if parted {
		want = 1
	}
	if idx := parseIndices(r.indices, n); r.gpus == nil && len(idx) == want {
		r.gpus = idx
	}
	if r.gpus == nil && r.demand.gpus > 0 {
		// Unknown indices: the lowest free GPUs, as a device plugin
		// without hints would hand them out.
		for i := 0; i < n && len(r.gpus) < r.demand.gpus; i++ {
			if s.ledger.GPUIsFree(first + topology.GPUID(i)) {
				r.gpus = append(r.gpus, i)
			}
		}
	}
	for _, i := range r.gpus {
		if i < n {
			cl.GPUs = append(cl.GPUs, topology.GPUClaim{GPU: first + topology.GPUID(i), Kind: topology.ClaimWhole})
		}
	}
	if parted {
		// One MIG device or share of its GPU (dra_placement.go).
		if len(cl.GPUs) != 1 {
			return cl, false
		}
		if r.part.Kind != topology.ClaimWhole {
			x := r.part
			x.GPU = cl.GPUs[0].GPU
			cl.GPUs[0] = x
		} else if r.src == nil || heldPart(c, &cl, r.demand.taskGroup("", 1), r.src) != nil {
			return cl, false
		}
	}
	return cl, true
}

// applyLocked puts r on the ledger: its GPUs, and its CPU and memory when
// they fit. A pod the ledger cannot hold (another scheduler overcommitted a
// node) stays unapplied and is logged.
func (s *state) applyLocked(r *podRecord) {
	if r.applied {
		return
	}
	cl, ok := s.claimOf(r, true)
	if !ok {
		return // not on a GPU node
	}
	if err := s.ledger.Allocate(cl); err == nil {
		r.applied, r.cpuHeld = true, true
		return
	}
	cl.CPUMilli, cl.MemoryMiB = 0, 0
	if err := s.ledger.Allocate(cl); err == nil {
		r.applied, r.cpuHeld = true, false
		return
	}
	if len(r.gpus) > 0 && r.demand.mig == "" && r.demand.milli == 0 {
		// The recorded indices are taken or unhealthy: any free ones.
		r.gpus, r.indices = nil, ""
		if cl, ok = s.claimOf(r, false); ok && len(cl.GPUs) == r.demand.gpus {
			if err := s.ledger.Allocate(cl); err == nil {
				r.applied, r.cpuHeld = true, false
				return
			}
		}
	}
	s.log.Info("Pod does not fit the GPU ledger; its GPUs are not accounted", "pod", r.key, "node", r.node, "gpus", r.demand.gpus)
}

// releaseLocked takes r off the ledger.
func (s *state) releaseLocked(r *podRecord) {
	if !r.applied {
		return
	}
	r.applied = false
	cl, ok := s.claimOf(r, r.cpuHeld)
	if !ok {
		return
	}
	if err := s.ledger.Release(cl); err != nil {
		s.log.Error(err, "Releasing a pod's GPUs", "pod", r.key, "node", r.node)
		return
	}
	if r.req != nil {
		if t, ok := s.placer.(gang.Tracker); ok {
			t.Undone(r.req, r.placement)
		}
		r.req, r.placement = nil, nil
	}
}

// setPod records an assigned pod seen by the informer (bound by this plugin or
// by anyone else); a finished pod is deleted (see deletePod).
func (s *state) setPod(p *v1.Pod) []types.UID {
	if isTerminal(p) {
		return s.deletePod(p.UID, p.Spec.NodeName != "")
	}
	if p.Spec.NodeName == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.pods[p.UID]; ok {
		if r.node == p.Spec.NodeName {
			r.assumed = false
			if !s.restatedLocked(r, p) {
				return nil
			}
		}
		// Bound elsewhere than reserved (should not happen): follow the
		// API server.
		s.releaseLocked(r)
		delete(s.pods, p.UID)
	}
	r := &podRecord{uid: p.UID, key: p.Namespace + "/" + p.Name, node: p.Spec.NodeName, demand: demandOf(p, s.args),
		indices: p.Annotations[s.args.GPUIndicesAnnotation]}
	if r.demand.gpus == 0 && r.cpuMilli == 0 && r.memoryMiB == 0 && r.mig == "" && r.milli == 0 && r.shares == "" {
		return nil
	}
	if r.mig != "" || r.milli > 0 || r.shares != "" {
		r.src = p
	}
	if s.topo != nil {
		if h, ok := s.topo.Cluster.HostByName(r.node); ok {
			_, n := s.topo.Cluster.HostGPUs(h)
			if idx := parseIndices(p.Annotations[s.args.GPUIndicesAnnotation], n); len(idx) == r.demand.gpus {
				r.gpus = idx
			}
		}
	}
	s.pods[p.UID] = r
	if s.topo != nil {
		s.applyLocked(r)
	}
	return nil
}

// restatedLocked reports whether bound pod p, recorded as r on its node,
// now says otherwise what it holds: other requests, or other GPUs in its
// indices annotation (a DRA pod's claims, read after its binding, name
// its GPUs: dra_placement.go). Its record is then made again.
func (s *state) restatedLocked(r *podRecord, p *v1.Pod) bool {
	d := demandOf(p, s.args)
	if d != r.demand {
		return true
	}
	if _, several := podTasks(d); several {
		// (its MIG devices, read from its claims)
		return r.migs == nil && (r.src == nil || p.Annotations[draMIGHeldAnnotation] != r.src.Annotations[draMIGHeldAnnotation] ||
			p.Annotations[draSharesHeldAnnotation] != r.src.Annotations[draSharesHeldAnnotation])
	}
	if d.mig != "" || d.milli > 0 {
		// (a part's GPU and MIG start, read from its claims)
		return r.part.Kind == topology.ClaimWhole && (r.src == nil || p.Annotations[s.args.GPUIndicesAnnotation] != r.indices ||
			p.Annotations[draMIGStartAnnotation] != r.src.Annotations[draMIGStartAnnotation])
	}
	if s.topo == nil || d.gpus == 0 {
		return false
	}
	h, ok := s.topo.Cluster.HostByName(r.node)
	if !ok {
		return false
	}
	_, n := s.topo.Cluster.HostGPUs(h)
	idx := parseIndices(p.Annotations[s.args.GPUIndicesAnnotation], n)
	if len(idx) != d.gpus {
		return false
	}
	held := slices.Clone(r.gpus)
	slices.Sort(held)
	return !slices.Equal(slices.Sorted(slices.Values(idx)), held)
}

// deletePod forgets a pod that was deleted or finished. A pod deleted before
// it was bound is left to Unreserve, which the scheduler calls for it; but a
// deleted gang member that had not reserved its slot yet drops its gang's
// plan (the gang can no longer complete as planned), and the members waiting
// at Permit are returned for the caller to reject.
func (s *state) deletePod(uid types.UID, bound bool) []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var reject []types.UID
	for _, key := range sortedKeys(s.plans) {
		pl := s.plans[key]
		if _, slotted := pl.slot[uid]; slotted && !pl.reserved[uid] {
			reject = append(reject, s.dropPlanLocked(key)...)
		}
	}
	if r, ok := s.pods[uid]; ok && (bound || !r.assumed) {
		s.releaseLocked(r)
		delete(s.pods, uid)
	}
	for key, m := range s.early {
		delete(m, uid)
		if len(m) == 0 {
			delete(s.early, key)
		}
	}
	return reject
}

// dropPlanLocked undoes an open gang plan: the ledger gets back every slot and
// the members that reserved one lose their records. It returns those members,
// for the caller to reject at Permit once s.mu is released.
func (s *state) dropPlanLocked(key string) []types.UID {
	pl, ok := s.plans[key]
	if !ok {
		return nil
	}
	delete(s.plans, key)
	if err := pl.txn.Undo(); err != nil {
		s.log.Error(err, "Undoing a gang plan", "gang", key)
	} else if t, ok := s.placer.(gang.Tracker); ok {
		t.Undone(pl.req, pl.placement)
	}
	var uids []types.UID
	for _, uid := range sortedKeys(pl.reserved) {
		if r, ok := s.pods[uid]; ok && r.assumed {
			r.applied = false // released with the transaction
			delete(s.pods, uid)
		}
		uids = append(uids, uid)
	}
	return uids
}

// eligibility returns, for each host of the cluster, whether pod p may run on
// its node as far as the node's own constraints go: not cordoned, no taint p
// does not tolerate, and p's node selector and required node affinity match.
// These are the Kubernetes filters gpusched must honour when it places a
// whole gang in one go; the scheduler's filters check each member again.
func (s *state) eligibility(p *v1.Pod) []bool {
	c := s.topo.Cluster
	out := make([]bool, c.NumHosts())
	aff := nodeaffinity.GetRequiredNodeAffinity(p)
	for h := range out {
		n := s.nodes[c.HostName(topology.HostID(h))]
		if n == nil {
			continue
		}
		if n.Spec.Unschedulable && !tolerates(p, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
			continue
		}
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(s.log, n.Spec.Taints, p.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, false); bad {
			continue
		}
		if ok, err := aff.Match(n); err != nil || !ok {
			continue
		}
		out[h] = true
	}
	return out
}

func tolerates(p *v1.Pod, t *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, t, false)
}

// singleRequest resolves a pod that is not in a gang as a one-task job.
// A pod of several MIG devices is a job of its podTasks on one host, as
// in scheduler mode (dra_migs.go).
func (s *state) singleRequest(p *v1.Pod, d demand) (*gang.Request, error) {
	job := &workload.Job{ID: p.Namespace + "/" + p.Name, Groups: []workload.TaskGroup{d.taskGroup("", 1)}}
	if tasks, several := podTasks(d); several {
		job.Groups, job.Topology = nil, []workload.Constraint{onOneHost}
		var demands []demand
		for _, t := range tasks {
			gi, _ := groupIndex(job, &demands, t)
			job.Groups[gi].Count++
		}
	}
	return gang.NewRequest(s.topo.Cluster, job)
}

// place runs the placer; allow restricts hosts (nil: all).
func (s *state) place(r *gang.Request, allow []bool) (*gang.Placement, *gang.Explanation) {
	if allow != nil {
		r.AllowHost = func(h topology.HostID) bool { return allow[h] }
		// Hosts left out here failed the profile's other filters (node
		// affinity, taints, cordons), not a quota.
		r.FilterLabel = "node filters"
	} else {
		r.AllowHost = nil
	}
	p := &gang.Placement{}
	if why := s.placer.Place(s.ledger, r, p); why != nil {
		return nil, why
	}
	return p, nil
}

// commitSingle applies a one-task placement for p and records it.
func (s *state) commitSingle(p *v1.Pod, d demand, r *gang.Request, pl *gang.Placement) error {
	if _, err := gang.Commit(s.ledger, pl); err != nil {
		return err
	}
	if t, ok := s.placer.(gang.Tracker); ok {
		t.Committed(r, pl)
	}
	cl := pl.Claims[0]
	c := s.topo.Cluster
	first, _ := c.HostGPUs(cl.Host)
	rec := &podRecord{uid: p.UID, key: p.Namespace + "/" + p.Name, node: c.HostName(cl.Host), demand: d,
		assumed: true, applied: true, cpuHeld: true, req: r, placement: pl}
	for _, g := range cl.GPUs {
		rec.gpus = append(rec.gpus, int(g.GPU-first))
	}
	rec.part = partOf(cl)
	if _, several := podTasks(d); several {
		rec.gpus = nil
		for _, x := range pl.Claims {
			rec.migs = append(rec.migs, x.GPUs...)
		}
	}
	s.pods[p.UID] = rec
	return nil
}

// partOf is what a one-task claim of a MIG device or a share takes of its
// GPU (kind ClaimWhole for whole GPUs).
func partOf(cl topology.Claim) topology.GPUClaim {
	if len(cl.GPUs) == 1 && cl.GPUs[0].Kind != topology.ClaimWhole {
		return cl.GPUs[0]
	}
	return topology.GPUClaim{}
}

// unreserveLocked undoes what Reserve did for p. For a gang member whose plan
// is still open, the whole plan goes; the other members to reject are
// returned.
func (s *state) unreserveLocked(p *v1.Pod, gangKey string) []types.UID {
	if gangKey != "" {
		if pl, ok := s.plans[gangKey]; ok {
			if _, member := pl.slot[p.UID]; member {
				return s.dropPlanLocked(gangKey)
			}
		}
	}
	if r, ok := s.pods[p.UID]; ok && r.assumed {
		s.releaseLocked(r)
		delete(s.pods, p.UID)
	}
	return nil
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortPods sorts pods by name.
func sortPods(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
}
