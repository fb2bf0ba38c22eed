package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/gpusched/gpusched/queue"
)

// SchedulerPlugin is the plugin in scheduler mode (Args.Mode "scheduler"):
// it hosts one gpusched.Scheduler, which decides which jobs run, where and
// when (queues, quotas, fair share, EASY backfill with reservations,
// preemption planning). Pods of the profile are jobs: a single pod, or the
// members of a gang (the gpusched.io/gang labels). They wait at PreEnqueue
// until a gpusched cycle, run on informer events off kube-scheduler's
// per-pod path, binds their job; then each pod is let through to its
// planned node and GPUs, and Permit releases a job's pods together.
//
// Extension points:
//
//	PreEnqueue  a pod without a binding waits (its reason is in an event
//	            and in its PodScheduled condition)
//	PreFilter   the pod is narrowed to its planned node
//	Filter      every other node is unresolvable
//	PostFilter  a pod whose planned node failed other filters withdraws its
//	            job's binding (the job is placed again)
//	Reserve     the pod takes its planned slot (Unreserve: the job's
//	            binding is withdrawn and the job requeued)
//	Permit      a job's pods wait until all have reserved
//	PreBind     the planned GPU indices are written to the pod
//	Bind        (when the profile lists GPUSched first under bind) a
//	            one-pod job's pod is bound with its indices in the Binding
type SchedulerPlugin struct {
	handle fwk.Handle
	args   *Args
	h      *host
	// annotate writes the GPU indices annotation (a merge patch) to a pod.
	annotate func(ctx context.Context, namespace, name string, patch []byte) error
	binder   *binder
}

var (
	_ fwk.PreEnqueuePlugin    = (*SchedulerPlugin)(nil)
	_ fwk.EnqueueExtensions   = (*SchedulerPlugin)(nil)
	_ fwk.PreFilterPlugin     = (*SchedulerPlugin)(nil)
	_ fwk.FilterPlugin        = (*SchedulerPlugin)(nil)
	_ fwk.ReservePlugin       = (*SchedulerPlugin)(nil)
	_ fwk.PermitPlugin        = (*SchedulerPlugin)(nil)
	_ fwk.PreBindPlugin       = (*SchedulerPlugin)(nil)
	_ fwk.PreFilterExtensions = (*SchedulerPlugin)(nil)
)

// newSchedulerPlugin builds the scheduler-mode plugin and starts its cycle
// loop, which runs until ctx ends.
func newSchedulerPlugin(ctx context.Context, args *Args, h fwk.Handle) (*SchedulerPlugin, error) {
	log := klog.FromContext(ctx).WithValues("plugin", Name, "mode", ModeScheduler)
	p := &SchedulerPlugin{handle: h, args: args, binder: &binder{handle: h}}
	p.annotate = func(ctx context.Context, namespace, name string, patch []byte) error {
		_, err := h.ClientSet().CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	f := h.SharedInformerFactory()
	if f == nil {
		return nil, fmt.Errorf("%s: scheduler mode needs the scheduler's informers", Name)
	}
	io := &kubeIO{handle: h, nodes: f.Core().V1().Nodes().Lister(), pods: f.Core().V1().Pods().Lister(), log: log}
	nodeInf, podInf := f.Core().V1().Nodes().Informer(), f.Core().V1().Pods().Informer()
	p.h = newHost(args, h.ProfileName(), io, log)
	p.h.metrics = newCycleMetrics(defaultMetrics(), h.ProfileName())
	p.h.trace = newCycleTrace()
	// kube's InterPodAffinity, PodTopologySpread, VolumeBinding,
	// VolumeRestrictions and NodeVolumeLimits filters, before planning
	// (kubefilters.go), on the scheduler's informers.
	p.h.kf = newKubeFilters(ctx, f, h.ClientSet())
	if p.h.kf.err != nil {
		// kube's filters still check at binding: run without these.
		log.Error(p.h.kf.err, "kube's filters are not applied before planning")
	}
	if args.DRADriver != "none" {
		k, err := newKubeDRA(h, p.h.poke)
		if err != nil {
			return nil, err
		}
		p.h.dra = newSchedDRA(args, k, p.h, log)
	}
	groupsSynced, err := watchPodGroups(h, args, p.h.poke, log)
	if err != nil {
		return nil, err
	}
	io.hasSynced = func() bool { return nodeInf.HasSynced() && podInf.HasSynced() && p.h.dra.synced() && groupsSynced() }
	p.h.check = func() error { return checkProfile(h) }
	var raw string
	p.h.queues, raw, p.h.queuesErr = loadQueues(ctx, args, h, log)
	if p.h.queuesErr != nil && args.QueueConfigFile != "" {
		return nil, fmt.Errorf("%s args: queueConfigFile: %w", Name, p.h.queuesErr)
	}
	poke := func(any) { p.h.poke() }
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(o, n any) { poke(n) }, DeleteFunc: poke,
	}); err != nil {
		return nil, err
	}
	// Only the profile's pods start a cycle: a cycle reads every pod, and
	// other profiles' pods in a busy scheduler would run one per event.
	ours := func(o any) bool {
		pod, ok := o.(*v1.Pod)
		return !ok || pod.Spec.SchedulerName == h.ProfileName()
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if ours(o) {
				p.h.poke()
			}
		},
		UpdateFunc: func(o, n any) {
			if ours(n) {
				if op, ok := o.(*v1.Pod); ok && op.Spec.NodeName == "" {
					if np, ok := n.(*v1.Pod); ok && np.Spec.NodeName != "" {
						p.h.trace.bind(np.UID, time.Now())
					}
				}
				p.h.poke()
			}
		},
		DeleteFunc: func(o any) {
			d, tomb := o.(cache.DeletedFinalStateUnknown)
			if tomb {
				o = d.Obj
			}
			if !ours(o) {
				return
			}
			if pod, ok := o.(*v1.Pod); ok {
				p.h.trace.gone(pod.UID, time.Now())
				if !tomb {
					p.h.endedOutOfView(pod) // (lifecycle.go)
				}
				p.h.forget(pod)
				p.h.lead.forget(pod.UID)
			}
			p.h.poke()
		},
	}); err != nil {
		return nil, err
	}
	if args.QueueConfigMap != "" {
		if err := p.watchQueues(ctx, raw, log); err != nil {
			return nil, err
		}
	}
	if args.LiveAddress != "" {
		if err := p.h.servePage(ctx, args.LiveAddress); err != nil {
			return nil, err
		}
	}
	go p.h.run(ctx)
	return p, nil
}

// checkProfile vets the profile h serves, once kube-scheduler built it
// (its plugin lists are empty while the plugins are being made): see
// postFilterConflict.
func checkProfile(h fwk.Handle) error {
	l, ok := h.(interface{ ListPlugins() *config.Plugins })
	if !ok {
		return nil
	}
	ps := l.ListPlugins()
	if ps == nil {
		return nil
	}
	var names []string
	for _, p := range ps.PostFilter.Enabled {
		names = append(names, p.Name)
	}
	return postFilterConflict(h.ProfileName(), names)
}

// postFilterConflict returns an error naming the PostFilter plugins that
// run before GPUSched in profile (postFilter, in kube-scheduler's order).
// kube-scheduler runs PostFilter plugins in order until one succeeds or
// says UnschedulableAndUnresolvable; one before GPUSched (DefaultPreemption
// by default) would preempt pods for a gpusched pod whose planned node
// kube rejected: victims gpusched did not choose, deleted with no regard
// for its plans. Scheduler mode plans its own preemptions, so it refuses
// such a profile. GPUSched's own PostFilter ends the chain
// (UnschedulableAndUnresolvable), so plugins after it never run.
func postFilterConflict(profile string, postFilter []string) error {
	k := slices.Index(postFilter, Name)
	if k <= 0 {
		return nil
	}
	var before []string
	for _, n := range postFilter[:k] {
		if !harmlessPostFilter[n] {
			before = append(before, n)
		}
	}
	if len(before) == 0 {
		return nil
	}
	return fmt.Errorf("%s (mode: scheduler): profile %s runs the PostFilter plugin(s) %s before %s: they would preempt pods gpusched did not choose; disable them in the profile (plugins: {postFilter: {disabled: [{name: %s}]}}, as deploy/scheduler-mode.yaml does)",
		Name, profile, strings.Join(before, ", "), Name, before[0])
}

// harmlessPostFilter are the PostFilter plugins that may run before
// GPUSched: they evict nothing (DynamicResources, in kube-scheduler's
// default set, only releases resource claims of the pod it runs for).
var harmlessPostFilter = map[string]bool{"DynamicResources": true}

// watchQueues watches the queue ConfigMap (an informer on that one object)
// and applies each edit live (applyQueues); initial is the content read at
// start.
func (p *SchedulerPlugin) watchQueues(ctx context.Context, initial string, log klog.Logger) error {
	ns, name, _ := strings.Cut(p.args.QueueConfigMap, "/")
	f := informers.NewSharedInformerFactoryWithOptions(p.handle.ClientSet(), 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + name }))
	inf := f.Core().V1().ConfigMaps().Informer()
	last := initial
	on := func(o any) {
		cm, ok := o.(*v1.ConfigMap)
		if !ok || cm.Name != name {
			return
		}
		data := cm.Data[QueueConfigMapKey]
		if data == last {
			return
		}
		last = data
		p.applyQueues(cm, log)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: on, UpdateFunc: func(_, n any) { on(n) },
		DeleteFunc: func(any) {
			last = ""
			log.Info("Queue ConfigMap deleted; the queue tree in force stays", "configMap", p.args.QueueConfigMap)
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	return nil
}

// applyQueues parses the queue ConfigMap and puts its tree in force live
// (host.reconfigure). A tree that does not parse or cannot apply changes
// nothing: the tree in force stays, and a Warning event on the ConfigMap
// names the key and field. A tree that applies gets a Normal event.
func (p *SchedulerPlugin) applyQueues(cm *v1.ConfigMap, log klog.Logger) {
	src := fmt.Sprintf("ConfigMap %s/%s key %s", cm.Namespace, cm.Name, QueueConfigMapKey)
	rec := p.handle.EventRecorder()
	cfg, err := ParseQueueConfig([]byte(cm.Data[QueueConfigMapKey]), src)
	if err == nil {
		if err = p.h.reconfigure(cfg, p.h.io.now()); err != nil {
			err = fmt.Errorf("%s: %w", src, err)
		}
	}
	if err != nil {
		log.Error(err, "Queue tree edit not applied; the tree in force stays")
		if rec != nil && p.h.lead.isLeading() {
			rec.Eventf(cm, nil, v1.EventTypeWarning, ReasonInvalid, "QueueConfig", "not applied, the queue tree in force stays: %s", err.Error())
		}
		return
	}
	log.Info("Queue tree applied", "configMap", cm.Namespace+"/"+cm.Name, "resourceVersion", cm.ResourceVersion)
	if rec != nil && p.h.lead.isLeading() {
		rec.Eventf(cm, nil, v1.EventTypeNormal, ReasonQueuesApplied, "QueueConfig", "queue tree applied (resourceVersion %s)", cm.ResourceVersion)
	}
	p.h.poke()
}

// loadQueues reads the queue tree from the file or ConfigMap the args name;
// without either, one leaf queue "default" with backfill. raw is the
// ConfigMap's content, when it was read.
func loadQueues(ctx context.Context, args *Args, h fwk.Handle, log klog.Logger) (cfg queue.Config, raw string, err error) {
	switch {
	case args.QueueConfigFile != "":
		b, err := os.ReadFile(args.QueueConfigFile)
		if err != nil {
			return queue.Config{}, "", err
		}
		cfg, err := ParseQueueConfig(b, args.QueueConfigFile)
		return cfg, "", err
	case args.QueueConfigMap != "":
		ns, name, _ := strings.Cut(args.QueueConfigMap, "/")
		cm, err := h.ClientSet().CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return queue.Config{}, "", fmt.Errorf("queue ConfigMap %s: %w", args.QueueConfigMap, err)
		}
		src := fmt.Sprintf("ConfigMap %s key %s", args.QueueConfigMap, QueueConfigMapKey)
		cfg, err := ParseQueueConfig([]byte(cm.Data[QueueConfigMapKey]), src)
		if err != nil {
			log.Error(err, "Queue tree not usable; every pod waits until the ConfigMap is fixed")
			if r := h.EventRecorder(); r != nil {
				r.Eventf(cm, nil, v1.EventTypeWarning, ReasonInvalid, "QueueConfig", "%s", err.Error())
			}
		}
		return cfg, cm.Data[QueueConfigMapKey], err
	}
	return queue.Config{Root: queue.Node{Children: []queue.Node{
		{Name: args.DefaultQueue, Policy: queue.Policy{Backfill: true}},
	}}}, "", nil
}

// ParseQueueConfig reads a queue tree (package queue's Config) from YAML.
// Unknown fields are errors; errors name src and the line. Durations are Go
// durations ("10m").
func ParseQueueConfig(b []byte, src string) (queue.Config, error) {
	var cfg queue.Config
	if len(bytes.TrimSpace(b)) == 0 {
		return cfg, fmt.Errorf("%s: empty queue tree", src)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return queue.Config{}, fmt.Errorf("%s: %w", src, err)
	}
	return cfg, nil
}

// Name returns Name.
func (p *SchedulerPlugin) Name() string { return Name }

// Args returns the plugin's defaulted args. The caller must not modify them.
func (p *SchedulerPlugin) Args() *Args { return p.args }

// EventsToRegister returns no events: a waiting pod is moved to the active
// queue by the cycle that binds its job (Handle.Activate), not by cluster
// events.
func (p *SchedulerPlugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{}, nil
}

// PreEnqueue lets a pod into the scheduling queue once its job is bound.
func (p *SchedulerPlugin) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	if a, ok := p.h.assignmentOf(pod.UID); ok {
		if why := planHeld(a); why != "" {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why) // (gangplan.go)
		}
		if why := p.h.waveHeld(pod.UID); why != "" {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why) // (spread.go)
		}
		if why := p.h.dra.notReady(pod, a); why != "" {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why) // (dra.go)
		}
		return nil
	}
	if p.h.lead.letProbe(pod) {
		return nil // its scheduling cycle tells that this scheduler leads
	}
	p.h.poke()
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, p.h.waitingReason(pod.UID))
}

// PreFilter narrows the pod to its planned node.
func (p *SchedulerPlugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.h.lead.lead() // only the leader runs scheduling cycles
	p.h.trace.preFilter(pod.UID, time.Now())
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, p.h.waitingReason(pod.UID))
	}
	if why := planHeld(a); why != "" {
		// (PostFilter tries it again; PreEnqueue holds it until its
		// gang's plan is written.)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
	}
	if why := p.h.waveHeld(pod.UID); why != "" {
		// (PreEnqueue holds it until the waves before it reserved.)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(a.node)}, nil
}

// PreFilterExtensions returns p: it keeps no per-cycle state to update.
func (p *SchedulerPlugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod does nothing: gpusched's Scheduler, not kube's simulation, decides.
func (p *SchedulerPlugin) AddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

// RemovePod does nothing (see AddPod).
func (p *SchedulerPlugin) RemovePod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

// Filter rejects every node but the pod's planned one, unresolvably: kube's
// preemption never acts for a gpusched pod (gpusched plans its own).
func (p *SchedulerPlugin) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, p.h.waitingReason(pod.UID))
	}
	if ni == nil || ni.Node() == nil || ni.Node().Name != a.node {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gpusched: job %s is bound to %s", a.job, a.node))
	}
	return nil
}

// PostFilter withdraws the binding of a pod whose planned node failed
// another plugin's filter (kube-scheduler's view of the node disagrees with
// gpusched's): the job is requeued and placed again, instead of its pod
// waiting for ever.
func (p *SchedulerPlugin) PostFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, p.h.waitingReason(pod.UID))
	}
	why := "its filters failed"
	if m != nil {
		st := m.Get(a.node)
		if st != nil && st.Plugin() == Name {
			// The planned node was refused by gpusched itself: its
			// PreFilter or Filter ran before the cycle that planned the
			// job (a scheduler just started or just became leader lets one
			// pod through to start its cycles). Not a rejection: the pod is
			// tried again on its plan, nothing is excluded or withdrawn
			// (TestPostFilterPlanAfterFilterNotExcluded).
			p.h.io.activate([]*v1.Pod{pod})
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gpusched: job %s was planned on %s after its filters ran; trying again", a.job, a.node))
		}
		if st != nil && len(st.Reasons()) > 0 {
			why = st.Plugin() + ": " + strings.Join(st.Reasons(), ", ")
		}
	}
	p.h.exclude(pod.UID, a.node, why, p.h.io.now())
	withdrawn := p.h.unreserve(pod.UID)
	if len(withdrawn) > 0 {
		p.h.metrics.withdrew(WithdrawnNodeRejected)
	}
	for _, uid := range withdrawn {
		if wp := p.handle.GetWaitingPod(uid); wp != nil {
			wp.Reject(Name, fmt.Sprintf("gpusched: pod %s/%s of the same job did not fit its planned node", pod.Namespace, pod.Name))
		}
	}
	p.h.poke()
	// UnschedulableAndUnresolvable: no PostFilter plugin after GPUSched
	// (kube's preemption) runs for this pod.
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("gpusched: planned node %s failed; job %s is placed again", a.node, a.job))
}

// Reserve takes the pod's planned slot; the last member of a spread
// gang's wave to reserve (assumed in kube's cache by now) lets the next
// wave through (spread.go).
func (p *SchedulerPlugin) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	if _, _, err := p.h.reserve(pod.UID, node); err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error())
	}
	if next := p.h.releaseWave(pod.UID); len(next) > 0 {
		p.h.io.activate(next)
	}
	return nil
}

// Unreserve withdraws the binding of the pod's job: its other pods waiting
// at Permit are rejected, and the next cycle requeues the job (a second
// failure excludes the node for a backoff: bindFailed).
func (p *SchedulerPlugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	p.h.bindFailed(pod.UID, p.h.io.now())
	withdrawn := p.h.unreserve(pod.UID)
	if len(withdrawn) > 0 {
		p.h.metrics.withdrew(WithdrawnBindFailed)
	}
	for _, uid := range withdrawn {
		if uid != pod.UID {
			if wp := p.handle.GetWaitingPod(uid); wp != nil {
				wp.Reject(Name, fmt.Sprintf("gpusched: pod %s/%s of the same job could not be bound", pod.Namespace, pod.Name))
			}
		}
	}
	p.h.poke()
}

// Permit lets a job's pods go together, once every one has reserved.
func (p *SchedulerPlugin) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, node string) (*fwk.Status, time.Duration) {
	all, members, err := p.h.reserve(pod.UID, node)
	if err != nil {
		return fwk.NewStatus(fwk.Unschedulable, err.Error()), 0
	}
	if !all {
		return fwk.NewStatus(fwk.Wait, "gpusched: waiting for the job's other pods"), p.args.GangTimeout()
	}
	allow := sets.New(members...)
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		if allow.Has(wp.GetPod().UID) {
			wp.Allow(Name)
		}
	})
	return nil, 0
}

// PreBind writes the planned GPU indices to the pod's annotation, unless
// Bind writes them with the binding.
func (p *SchedulerPlugin) PreBind(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) *fwk.Status {
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok {
		return fwk.NewStatus(fwk.Unschedulable, "gpusched: the pod's binding was withdrawn")
	}
	if p.bindsIndices(pod) {
		return nil
	}
	return writeIndices(ctx, p.annotate, p.args.GPUIndicesAnnotation, pod, formatIndices(a.gpus))
}

// kubeIO is hostIO on a running kube-scheduler.
type kubeIO struct {
	handle    fwk.Handle
	nodes     corelisters.NodeLister
	pods      corelisters.PodLister
	hasSynced func() bool
	log       klog.Logger
}

func (k *kubeIO) synced() bool                   { return k.hasSynced() }
func (k *kubeIO) listNodes() ([]*v1.Node, error) { return k.nodes.List(labels.Everything()) }
func (k *kubeIO) listPods() ([]*v1.Pod, error)   { return k.pods.List(labels.Everything()) }
func (k *kubeIO) now() time.Time                 { return time.Now() }
func (k *kubeIO) rejectWaiting(uid types.UID, why string) {
	if wp := k.handle.GetWaitingPod(uid); wp != nil {
		wp.Reject(Name, why)
	}
}

func (k *kubeIO) activate(pods []*v1.Pod) {
	m := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		m[p.Namespace+"/"+p.Name] = p
	}
	k.handle.Activate(k.log, m)
}

func (k *kubeIO) event(pod *v1.Pod, typ, reason, msg string) {
	k.eventWithAction(pod, typ, reason, "Scheduling", msg)
}

// eventWithAction records an event whose action is action (a reason
// token for a pending pod's event, reasons.go).
func (k *kubeIO) eventWithAction(pod *v1.Pod, typ, reason, action, msg string) {
	if r := k.handle.EventRecorder(); r != nil {
		r.Eventf(pod, nil, typ, reason, action, "%s", msg)
	}
}

// setPending sets the pod's PodScheduled condition to False with reason
// and msg.
func (k *kubeIO) setPending(ctx context.Context, pod *v1.Pod, reason, msg string) error {
	return patchPending(ctx, k.handle.ClientSet(), pod, reason, msg, metav1.Now())
}

// patchPending sets the pod's PodScheduled condition to False with reason
// (a reason token; v1.PodReasonUnschedulable when empty) and msg, at now,
// and clears the nominated node the pod carries, if any.
//
// A pod gpusched holds at PreEnqueue never runs a scheduling cycle, so
// kube-scheduler never clears a nomination it made itself: the
// NominatedNodeName it writes before PreBind survives a scheduler killed
// between that write and the Binding. kube-scheduler's filters count a
// nominated pod's requests on its node for every pod of no higher
// priority, so a stale nomination keeps GPUs free in gpusched's ledger
// unusable: the pods gpusched places there fail NodeResourcesFit for as
// long as the nominated pod waits.
func patchPending(ctx context.Context, cs kubernetes.Interface, pod *v1.Pod, reason, msg string, now metav1.Time) error {
	if reason == "" {
		reason = v1.PodReasonUnschedulable
	}
	status := map[string]any{"conditions": []map[string]any{{
		"type": string(v1.PodScheduled), "status": string(v1.ConditionFalse), "reason": reason,
		"message": msg, "lastTransitionTime": now,
	}}}
	if pod.Status.NominatedNodeName != "" {
		status["nominatedNodeName"] = nil
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func (k *kubeIO) deletePod(ctx context.Context, pod *v1.Pod) error {
	return k.handle.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
}

// evict evicts pod through the Eviction API, which honours
// PodDisruptionBudgets, with grace as its grace period (at most the pod's
// own).
func (k *kubeIO) evict(ctx context.Context, pod *v1.Pod, grace time.Duration) error {
	secs := int64(grace / time.Second)
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < secs {
		secs = *g
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &secs, Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	return k.handle.ClientSet().CoreV1().Pods(pod.Namespace).EvictV1(ctx, ev)
}

// PreBindPreFlight says whether PreBind has indices to write.
func (p *SchedulerPlugin) PreBindPreFlight(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.PreBindPreFlightResult, *fwk.Status) {
	a, ok := p.h.assignmentOf(pod.UID)
	if !ok || len(a.gpus) == 0 || pod.Annotations[p.args.GPUIndicesAnnotation] == formatIndices(a.gpus) || p.bindsIndices(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreBindPreFlightResult{AllowParallel: true}, nil
}
