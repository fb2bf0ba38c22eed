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
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
)

// kubeFilters runs kube-scheduler's own InterPodAffinity,
// PodTopologySpread and VolumeBinding filters for a waiting job's pod
// before it is planned (issue 26, defect 4), so that a pod is not planned
// on a node those filters reject: required pod affinity and anti-affinity
// (the pod's, and running pods' anti-affinity against it), DoNotSchedule
// topology spread, and its claims' volume topology. The plugins are
// kube's, built on a handle of our own whose snapshot is rebuilt from the
// informers' pods and nodes at each cycle that needs it (kube-scheduler's
// own snapshot belongs to its scheduling cycle: reading it from the
// host's goroutine would race). Pods gpusched planned but kube has not
// bound yet count on their planned node. Not covered: the constraints
// between the pods of one job (a gang's members are filtered as its first
// pod alone) or of jobs planned in the same cycle, and volumes kube's own
// binder has just assumed; a node kube still rejects is excluded for the
// job (constraints.go).
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
		kf.plugins = append(kf.plugins, vb.(kubeFilter))
		kf.volumes = true
	}
	return kf
}

// see gives kf the cycle's nodes and pods (every pod the informer
// lists). Under the host's mu.
func (kf *kubeFilters) see(nodes []*v1.Node, all []*v1.Pod) {
	kf.nodes, kf.all = nodes, all
}

// startCycle readies kf for the cycle's verdicts, with the pods planned
// but not bound (uid → node); the snapshot is built on first use.
func (kf *kubeFilters) startCycle(planned map[types.UID]string) {
	kf.snap, kf.antiAff = false, false
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

// key names what of p kube's filters look at, "" when they accept every
// node for it: p has no required pod (anti-)affinity nor DoNotSchedule
// spread, and no pod has a required anti-affinity term.
func (kf *kubeFilters) key(p *v1.Pod) string {
	if kf.err != nil {
		return ""
	}
	var aff, anti []v1.PodAffinityTerm
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			aff = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if a.PodAntiAffinity != nil {
			anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	var spread []v1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == v1.DoNotSchedule {
			spread = append(spread, c)
		}
	}
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

// verdict returns which of the nodes (by name) kube's filters accept for
// p, and why each other is refused; nil: all. An error of a plugin (not a
// refusal) accepts every node: kube's own filters still decide at
// binding.
func (kf *kubeFilters) verdict(ctx context.Context, log klog.Logger, p *v1.Pod) map[string]string {
	if !kf.snap {
		kf.lister.SharedLister = cache.NewSnapshot(kf.pods, kf.nodes)
		kf.snap = true
	}
	infos, err := kf.lister.NodeInfos().List()
	if err != nil {
		log.Error(err, "Listing the snapshot's nodes for kube's filters")
		return nil
	}
	var refused map[string]string
	refuse := func(node, why string) {
		if refused == nil {
			refused = map[string]string{}
		}
		if _, ok := refused[node]; !ok {
			refused[node] = why
		}
	}
	for _, pl := range kf.plugins {
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
				refuse(ni.Node().Name, pl.Name()+": "+st.Message())
			}
			continue
		}
		for _, ni := range infos {
			name := ni.Node().Name
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
	return refused
}
