package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumerestrictions"
)

// kubeFilters runs kube-scheduler's own InterPodAffinity,
// PodTopologySpread, VolumeBinding, VolumeRestrictions and
// NodeVolumeLimits filters for a waiting job's pod before it is planned
// (issue 26, defect 4), so that a pod is not planned on a node those
// filters reject: required pod affinity and anti-affinity (the pod's, and
// running pods' anti-affinity against it), DoNotSchedule topology spread,
// its claims' volume topology, volume conflicts (a ReadWriteOncePod claim
// another pod uses, an inline disk another pod of the node mounts), and
// the node's attach limit of each CSI driver (its CSINode's allocatable
// count, in-tree volumes migrated to CSI included). The plugins are
// kube's, built on a handle of our own whose snapshot is rebuilt from the
// informers' pods and nodes at each cycle that needs it (kube-scheduler's
// own snapshot belongs to its scheduling cycle: reading it from the
// host's goroutine would race). Pods gpusched planned but kube has not
// bound yet count on their planned node. A job is planned on the nodes
// kube's filters accept for every member (each member's claims may reach
// other nodes). Between the pods planned in one cycle (a gang's members,
// jobs planned together), each plan is checked pod after pod next to the
// plans kept before it (admit: InterPodAffinity, PodTopologySpread,
// VolumeRestrictions and NodeVolumeLimits, so two pods of one cycle never
// share a ReadWriteOncePod claim nor together pass a node's attach
// limit), and a gang whose members are anti-affine to
// each other (or spread) on a topology key is capped per node and per
// domain (perHostCap, domains.go), or, spread on a zone or rack, planned
// by quota and let through in waves (spread.go). Not covered: volumes kube's own binder
// has just assumed, unbound claims shared by the pods of one job (those of
// different jobs: sharedclaims.go);
// a node kube still rejects is excluded for the job (constraints.go).
type kubeFilters struct {
	plugins []kubeFilter
	lister  swapLister
	// snap: the snapshot is built for the current cycle; antiAff: some
	// pod in it has a required anti-affinity term (so any pod's labels
	// may be refused somewhere).
	snap    bool
	antiAff bool
	nodes   []*v1.Node
	all     []*v1.Pod // the cycle's (see)
	pods    []*v1.Pod // bound or planned: the snapshot's
	err     error     // why the plugins could not be built: not applied
	// volumes: VolumeBinding is among the plugins.
	volumes bool
	// admitted are the pods of the plans admit accepted this cycle, in
	// order; the snapshot holds the first inSnap of them, as assumed
	// (their copies with the node set). admittedAnti: one of them has a
	// required anti-affinity term.
	admitted     []plannedPod
	assumed      []*v1.Pod
	inSnap       int
	admittedAnti bool
	// admittedClaims: one of them mounts a persistent volume claim
	// (VolumeRestrictions: a ReadWriteOncePod claim is one pod's;
	// NodeVolumeLimits: its volume counts on its node).
	admittedClaims bool
	// claims: the nodes of claims not bound yet (sharedclaims.go).
	claims sharedClaims
}

// kubeFilter is one of kube's PreFilter+Filter plugins.
type kubeFilter interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
}

// swapLister is the handle's snapshot, replaced at each cycle.
type swapLister struct{ fwk.SharedLister }

// filterHandle is the handle kube's plugins are built with: the few
// methods they call at construction; the embedded Handle is nil.
type filterHandle struct {
	fwk.Handle
	lister *swapLister
	inf    informers.SharedInformerFactory
	cs     kubernetes.Interface
}

func (f *filterHandle) SnapshotSharedLister() fwk.SharedLister                 { return f.lister }
func (f *filterHandle) Parallelizer() fwk.Parallelizer                         { return serial{} }
func (f *filterHandle) SharedInformerFactory() informers.SharedInformerFactory { return f.inf }
func (f *filterHandle) ClientSet() kubernetes.Interface                        { return f.cs }

// SharedCSIManager reads the nodes' CSINode objects (NodeVolumeLimits).
func (f *filterHandle) SharedCSIManager() fwk.CSIManager {
	return nodevolumelimits.NewCSIManager(f.inf.Storage().V1().CSINodes().Lister())
}

// serial is the plugins' parallelizer: the host's cycle runs them on its
// own goroutine, one piece after another.
type serial struct{}

// Until runs doWorkPiece for each piece in turn, until ctx ends.
func (serial) Until(ctx context.Context, pieces int, doWorkPiece workqueue.DoWorkPieceFunc, _ string) {
	for i := 0; i < pieces && ctx.Err() == nil; i++ {
		doWorkPiece(i)
	}
}

// newKubeFilters builds kube's filters with inf and cs (the scheduler's
// informers and client). With inf nil there are no VolumeBinding filter
// (no claims to read) and no namespaces (a namespace selector of an
// affinity term matches none). An error is kept in kf.err: the filters
// are then not applied.
func newKubeFilters(ctx context.Context, inf informers.SharedInformerFactory, cs kubernetes.Interface) *kubeFilters {
	kf := &kubeFilters{}
	volumes := inf != nil
	if inf == nil {
		inf = informers.NewSharedInformerFactory(nil, 0)
	}
	kf.lister.SharedLister = cache.NewEmptySnapshot()
	h := &filterHandle{lister: &kf.lister, inf: inf, cs: cs}
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	ipa, err := interpodaffinity.New(ctx, &config.InterPodAffinityArgs{HardPodAffinityWeight: 1}, h, fts)
	if err != nil {
		kf.err = fmt.Errorf("kube's InterPodAffinity filter: %w", err)
		return kf
	}
	pts, err := podtopologyspread.New(ctx, &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}, h, fts)
	if err != nil {
		kf.err = fmt.Errorf("kube's PodTopologySpread filter: %w", err)
		return kf
	}
	kf.plugins = []kubeFilter{ipa.(kubeFilter), pts.(kubeFilter)}
	if volumes {
		vb, err := volumebinding.New(ctx, &config.VolumeBindingArgs{BindTimeoutSeconds: 600,
			// (a scoring shape, which the filter does not use)
			Shape: []config.UtilizationShapePoint{{Utilization: 0, Score: 0}, {Utilization: 100, Score: 10}}}, h, fts)
		if err != nil {
			kf.err = fmt.Errorf("kube's VolumeBinding filter: %w", err)
			return kf
		}
		vr, err := volumerestrictions.New(ctx, nil, h, fts)
		if err != nil {
			kf.err = fmt.Errorf("kube's VolumeRestrictions filter: %w", err)
			return kf
		}
		nvl, err := nodevolumelimits.NewCSI(ctx, nil, h, fts)
		if err != nil {
			kf.err = fmt.Errorf("kube's NodeVolumeLimits filter: %w", err)
			return kf
		}
		kf.plugins = append(kf.plugins, vb.(kubeFilter), vr.(kubeFilter), nvl.(kubeFilter))
		kf.volumes = true
		kf.claims.pvcs = inf.Core().V1().PersistentVolumeClaims().Lister()
	}
	return kf
}

// see gives kf the cycle's nodes and pods (every pod the informer
// lists). Under the host's mu.
func (kf *kubeFilters) see(nodes []*v1.Node, all []*v1.Pod) {
	kf.nodes, kf.all = nodes, all
}

// startCycle readies kf for the cycle's verdicts, with the pods planned
// but not bound (uid → node) and what names a pod's job; the snapshot is
// built on first use.
func (kf *kubeFilters) startCycle(planned map[types.UID]string, jobOf func(*v1.Pod) string) {
	kf.claims.reset(kf.all, planned, jobOf)
	kf.snap, kf.antiAff = false, false
	clear(kf.admitted) // (no pod of a past cycle kept alive)
	clear(kf.assumed)
	kf.admitted, kf.assumed, kf.inSnap, kf.admittedAnti, kf.admittedClaims = kf.admitted[:0], kf.assumed[:0], 0, false, false
	kf.pods = kf.pods[:0]
	for _, p := range kf.all {
		node := p.Spec.NodeName
		if node == "" {
			node = planned[p.UID]
		}
		if node == "" || isTerminal(p) {
			continue
		}
		if node != p.Spec.NodeName {
			q := *p // the spec's node name alone differs: a shallow copy
			q.Spec.NodeName = node
			p = &q
		}
		kf.pods = append(kf.pods, p)
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			kf.antiAff = true
		}
	}
}

// refusedNote says which nodes kube's filters refuse, and why (the first
// few); "" if none.
func refusedNote(refused map[string]string) string {
	if len(refused) == 0 {
		return ""
	}
	names := sortedKeys(refused)
	var parts []string
	for _, n := range names[:min(len(names), 3)] {
		parts = append(parts, n+" ("+refused[n]+")")
	}
	more := ""
	if len(names) > 3 {
		more = fmt.Sprintf(" and %d more", len(names)-3)
	}
	return fmt.Sprintf("kube's filters refuse %d node(s): %s%s", len(names), strings.Join(parts, ", "), more)
}

// kubeFilters returns the host's kube filters, built on first use without
// namespaces when the plugin set none.
func (h *host) kubeFilters() *kubeFilters {
	if h.kf == nil {
		h.kf = newKubeFilters(context.Background(), nil, nil)
		if h.kf.err != nil {
			h.log.Error(h.kf.err, "kube's filters are not applied before planning")
		}
	}
	return h.kf
}

// plannedNodes returns the node of each pod planned and not bound.
func (h *host) plannedNodes() map[types.UID]string {
	h.amu.Lock()
	defer h.amu.Unlock()
	m := make(map[types.UID]string, len(h.assign))
	for uid, a := range h.assign {
		m[uid] = a.node
	}
	return m
}

// podTerms returns p's required pod affinity and anti-affinity terms and
// its DoNotSchedule topology spread constraints: what of p kube's
// InterPodAffinity and PodTopologySpread filters check against the other
// pods.
func podTerms(p *v1.Pod) (aff, anti []v1.PodAffinityTerm, spread []v1.TopologySpreadConstraint) {
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			aff = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if a.PodAntiAffinity != nil {
			anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			spread = append(spread, c)
		}
	}
	return aff, anti, spread
}

// key names what of p kube's filters look at, "" when they accept every
// node for it: p has no required pod (anti-)affinity nor DoNotSchedule
// spread, and no pod has a required anti-affinity term.
func (kf *kubeFilters) key(p *v1.Pod) string {
	if kf.err != nil {
		return ""
	}
	aff, anti, spread := podTerms(p)
	var claims []v1.Volume
	if kf.volumes {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				claims = append(claims, v)
			}
		}
	}
	if len(aff) == 0 && len(anti) == 0 && len(spread) == 0 && len(claims) == 0 && !kf.antiAff {
		return ""
	}
	b, err := json.Marshal(struct {
		N string                        `json:"n"`
		L map[string]string             `json:"l,omitempty"`
		A []v1.PodAffinityTerm          `json:"a,omitempty"`
		X []v1.PodAffinityTerm          `json:"x,omitempty"`
		S []v1.TopologySpreadConstraint `json:"s,omitempty"`
		V []v1.Volume                   `json:"v,omitempty"`
	}{p.Namespace, p.Labels, aff, anti, spread, claims})
	if err != nil {
		return fmt.Sprintf("%p", p) // cannot happen; a key of its own
	}
	return string(b)
}

// snapshot returns the cycle's snapshot, built on first use.
func (kf *kubeFilters) snapshot() {
	if !kf.snap {
		kf.lister.SharedLister = cache.NewSnapshot(kf.pods, kf.nodes)
		kf.snap = true
		kf.inSnap, kf.assumed = 0, kf.assumed[:0]
	}
}

// verdict returns which of the nodes (by name) kube's filters accept for
// p, and why each other is refused; nil: all. An error of a plugin (not a
// refusal) accepts every node: kube's own filters still decide at
// binding.
func (kf *kubeFilters) verdict(ctx context.Context, log klog.Logger, p *v1.Pod) map[string]string {
	kf.snapshot()
	var refused map[string]string
	refuse := func(node, why string) {
		if refused == nil {
			refused = map[string]string{}
		}
		if _, ok := refused[node]; !ok {
			refused[node] = why
		}
	}
	kf.run(ctx, log, p, "", true, refuse)
	kf.claims.conflict(p, "", kf.nodes, kf.admitted, refuse)
	return refused
}

// run runs kube's filters for p on the snapshot's nodes (only: that node
// alone; volumes: VolumeBinding too), calling refuse for each node a
// filter refuses, with why.
func (kf *kubeFilters) run(ctx context.Context, log klog.Logger, p *v1.Pod, only string, volumes bool, refuse func(node, why string)) {
	all, err := kf.lister.NodeInfos().List()
	if err != nil {
		log.Error(err, "Listing the snapshot's nodes for kube's filters")
		return
	}
	infos := make([]fwk.NodeInfo, 0, len(all))
	for _, ni := range all {
		if ni.Node() != nil { // (not a node a pod names that is gone)
			infos = append(infos, ni)
		}
	}
	for _, pl := range kf.plugins {
		if !volumes && pl.Name() == volumebinding.Name {
			continue
		}
		state := framework.NewCycleState()
		res, st := pl.PreFilter(ctx, state, p, infos)
		switch {
		case st.IsSkip():
			continue
		case st.Code() == fwk.Error:
			log.Error(st.AsError(), "kube's filter for a waiting pod", "filter", pl.Name(), "pod", klog.KObj(p))
			continue
		case !st.IsSuccess():
			for _, ni := range infos {
				if only == "" || ni.Node().Name == only {
					refuse(ni.Node().Name, pl.Name()+": "+st.Message())
				}
			}
			continue
		}
		for _, ni := range infos {
			name := ni.Node().Name
			if only != "" && name != only {
				continue
			}
			if !res.AllNodes() && !res.NodeNames.Has(name) {
				refuse(name, pl.Name()+": not among the nodes its PreFilter allows")
				continue
			}
			if st := pl.Filter(ctx, state, p, ni); st.Code() == fwk.Error {
				log.Error(st.AsError(), "kube's filter for a waiting pod", "filter", pl.Name(), "pod", klog.KObj(p), "node", name)
			} else if !st.IsSuccess() {
				refuse(name, pl.Name()+": "+st.Message())
			}
		}
	}
}

// A planned pod (carryOut) on its node.
type plannedPod struct {
	pod  *v1.Pod
	node string
}

// refusal is a plan admit refused: kube's filters reject pod on node,
// why. own: the pods of its own plan placed before it are the cause (not
// only those of other jobs planned in the same cycle).
type refusal struct {
	pod       *v1.Pod
	node, why string
	own       bool
	// also: more nodes to exclude for the job with node (domains.go).
	also []string
}

// admit checks one job's plan, pod after pod, with kube's InterPodAffinity
// and PodTopologySpread filters against the pods bound or planned before
// the cycle (what the job's node filter was made from), the plans admit
// accepted before in this cycle, and the plan's own pods placed before
// (issue 26, defect 4: the members of a gang, jobs planned together). A
// pod is checked only where those can matter: something was admitted
// before it in the cycle, and it has pod constraints of its own or an
// admitted pod has a required anti-affinity term. It returns nil and
// keeps the plan's pods for the next plans when every pod passes; else
// the first refusal, keeping none of them.
func (kf *kubeFilters) admit(ctx context.Context, log klog.Logger, plan []plannedPod) *refusal {
	if kf.err != nil {
		return nil
	}
	mark, anti, claims := len(kf.admitted), kf.admittedAnti, kf.admittedClaims
	for _, pp := range plan {
		if why := kf.check(ctx, log, pp); why != "" {
			r := &refusal{pod: pp.pod, node: pp.node, why: why}
			kf.drop(log, mark, anti, claims)
			// Without its own pods, do the other plans of the cycle
			// still refuse it?
			r.own = kf.check(ctx, log, pp) == ""
			return r
		}
		kf.claims.admit(pp, len(kf.admitted))
		kf.admitted = append(kf.admitted, pp)
		if _, x, _ := podTerms(pp.pod); len(x) > 0 {
			kf.admittedAnti = true
		}
		if mountsClaim(pp.pod) {
			kf.admittedClaims = true
		}
	}
	return nil
}

// mountsClaim reports whether p mounts a persistent volume claim (a
// generic ephemeral volume's included: NodeVolumeLimits counts it).
func mountsClaim(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// check returns why kube's filters refuse pp's pod on its node next to
// the pods admitted so far, "" if they accept it or need not be asked.
// The admitted pods join the snapshot (as kube-scheduler assumes a pod)
// only once a check needs them.
func (kf *kubeFilters) check(ctx context.Context, log klog.Logger, pp plannedPod) string {
	if why := kf.claims.conflict(pp.pod, pp.node, nil, kf.admitted, nil); why != "" {
		return why
	}
	if len(kf.admitted) == 0 {
		return ""
	}
	aff, anti, spread := podTerms(pp.pod)
	claims := kf.volumes && kf.admittedClaims && mountsClaim(pp.pod)
	if len(aff) == 0 && len(anti) == 0 && len(spread) == 0 && !kf.admittedAnti && !claims {
		return ""
	}
	kf.snapshot()
	snap := kf.lister.SharedLister.(*cache.Snapshot)
	for ; kf.inSnap < len(kf.admitted); kf.inSnap++ {
		a := kf.admitted[kf.inSnap]
		q := *a.pod // the spec's node name alone differs: a shallow copy
		q.Spec.NodeName = a.node
		kf.assumed = append(kf.assumed, &q)
		pi, err := framework.NewPodInfo(&q)
		if err == nil {
			err = snap.AssumePod(pi)
		}
		if err != nil {
			log.Error(err, "Adding a planned pod to the snapshot of kube's filters", "pod", klog.KObj(a.pod))
		}
	}
	var why string
	kf.run(ctx, log, pp.pod, pp.node, false, func(_, w string) {
		if why == "" {
			why = w
		}
	})
	return why
}

// drop takes back the pods admitted from mark on (the snapshot forgets
// them, last first), and admittedAnti and admittedClaims to anti and
// claims.
func (kf *kubeFilters) drop(log klog.Logger, mark int, anti, claims bool) {
	if kf.inSnap > mark {
		snap := kf.lister.SharedLister.(*cache.Snapshot)
		for i := kf.inSnap - 1; i >= mark; i-- {
			if err := snap.ForgetPod(log, kf.assumed[i]); err != nil {
				log.Error(err, "Taking a planned pod back from the snapshot of kube's filters", "pod", klog.KObj(kf.assumed[i]))
			}
		}
		kf.inSnap, kf.assumed = mark, kf.assumed[:mark]
	}
	kf.admitted, kf.admittedAnti, kf.admittedClaims = kf.admitted[:mark], anti, claims
	kf.claims.drop(mark)
}
