package plugin

import (
	"slices"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// kubePodGroups is podGroupLookup on a running kube-scheduler: the
// scheduler's PodGroup informer (the one kube's GangScheduling plugin
// reads where the GenericWorkload gate is on in the scheduler too).
type kubePodGroups struct {
	lister schedulinglisters.PodGroupLister
}

func (k kubePodGroups) podGroup(ns, name string) (*schedulingv1beta1.PodGroup, bool) {
	pg, err := k.lister.PodGroups(ns).Get(name)
	return pg, err == nil
}

// watchPodGroups sets a.groups to h's PodGroup informer where the
// apiserver serves scheduling.k8s.io/v1beta1 podgroups (the GenericWorkload
// gate and that runtime-config on), calling poke on every change, and
// returns whether it has synced. Where the API is not served (or discovery
// fails) a.groups stays nil and gangs come from the labels alone: an
// informer on an unserved resource would never sync.
func watchPodGroups(h fwk.Handle, a *Args, poke func(), log klog.Logger) (synced func() bool, err error) {
	synced = func() bool { return true }
	if utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		log.Error(nil, "kube-scheduler runs with the GenericWorkload feature gate: its pod-group cycles reserve and revert a PodGroup's pods, which withdraws gpusched's binding, so this profile's PodGroup pods will not bind; run the scheduler without the gate (the apiserver alone needs it)")
	}
	gv := schedulingv1beta1.SchemeGroupVersion.String()
	if h.ClientSet() == nil {
		return synced, nil
	}
	rl, derr := h.ClientSet().Discovery().ServerResourcesForGroupVersion(gv)
	if derr != nil || rl == nil || !slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }) {
		log.V(2).Info("The Workload API is not served: gangs come from the gang labels alone", "groupVersion", gv, "err", derr)
		return synced, nil
	}
	inf := h.SharedInformerFactory().Scheduling().V1beta1().PodGroups()
	on := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}
	if _, err := inf.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	a.groups = kubePodGroups{lister: inf.Lister()}
	log.Info("Reading the Workload API's PodGroups beside the gang labels", "groupVersion", gv)
	return inf.Informer().HasSynced, nil
}
