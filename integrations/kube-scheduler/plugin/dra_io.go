package plugin

import (
	"context"
	"slices"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// kubeDRA is draIO on a running kube-scheduler: the scheduler's own
// ResourceSlice and ResourceClaim informers (those kube's DynamicResources
// plugin reads) and its client.
type kubeDRA struct {
	cs      kubernetes.Interface
	slices  resourcelisters.ResourceSliceLister
	claims  resourcelisters.ResourceClaimLister
	classes resourcelisters.DeviceClassLister
	// rules lists the DeviceTaintRules; nil where they are not read (the
	// DRADeviceTaintRules gate off in the scheduler, or the apiserver not
	// serving them: an informer on an unserved resource never syncs).
	rules     resourcelisters.DeviceTaintRuleLister
	hasSynced func() bool
	// tracker is kube's DynamicResources' claim tracker (nil where the
	// scheduler has no DRA manager): shown reads it, and the claim
	// writes are assumed in it at once (AssumeClaimAfterAPICall, as
	// DynamicResources' own PreBind does), not when its informer
	// handler sees them.
	tracker fwk.ResourceClaimTracker
}

// newKubeDRA subscribes to h's ResourceSlice, ResourceClaim and
// DeviceClass informers, and its DeviceTaintRule informer where the
// rules are served (taintRulesServed); poke is called on every change.
func newKubeDRA(h fwk.Handle, poke func()) (*kubeDRA, error) {
	f := h.SharedInformerFactory()
	si, ci, dci := f.Resource().V1().ResourceSlices(), f.Resource().V1().ResourceClaims(), f.Resource().V1().DeviceClasses()
	on := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}
	if _, err := si.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	if _, err := ci.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	if _, err := dci.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	sinf, cinf, dcinf := si.Informer(), ci.Informer(), dci.Informer()
	k := &kubeDRA{cs: h.ClientSet(), slices: si.Lister(), claims: ci.Lister(), classes: dci.Lister(),
		hasSynced: func() bool { return sinf.HasSynced() && cinf.HasSynced() && dcinf.HasSynced() }}
	if m := h.SharedDRAManager(); m != nil {
		k.tracker = m.ResourceClaims()
	}
	if taintRulesServed(h) {
		ri := f.Resource().V1().DeviceTaintRules()
		if _, err := ri.Informer().AddEventHandler(on); err != nil {
			return nil, err
		}
		rinf, base := ri.Informer(), k.hasSynced
		k.rules, k.hasSynced = ri.Lister(), func() bool { return base() && rinf.HasSynced() }
	}
	return k, nil
}

// taintRulesServed reports whether DeviceTaintRules are read: the
// scheduler's DRADeviceTaintRules gate is on (GA and on by default in
// 1.37; system:kube-scheduler may then list and watch them) and the
// apiserver serves resource.k8s.io/v1 devicetaintrules.
func taintRulesServed(h fwk.Handle) bool {
	if !utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules) || h.ClientSet() == nil {
		return false
	}
	rl, err := h.ClientSet().Discovery().ServerResourcesForGroupVersion(resourceapi.SchemeGroupVersion.String())
	return err == nil && rl != nil && slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "devicetaintrules" })
}

func (k *kubeDRA) synced() bool { return k.hasSynced() }

func (k *kubeDRA) listSlices() ([]*resourceapi.ResourceSlice, error) {
	return k.slices.List(labels.Everything())
}

func (k *kubeDRA) listClaims() ([]*resourceapi.ResourceClaim, error) {
	return k.claims.List(labels.Everything())
}

func (k *kubeDRA) listTaintRules() ([]*resourceapi.DeviceTaintRule, error) {
	if k.rules == nil {
		return nil, nil
	}
	return k.rules.List(labels.Everything())
}

func (k *kubeDRA) claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	c, err := k.claims.ResourceClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

func (k *kubeDRA) shown(ns, name string) (*resourceapi.ResourceClaim, error) {
	if k.tracker == nil {
		return k.claim(ns, name)
	}
	if c, err := k.tracker.Get(ns, name); err == nil {
		return c, nil
	}
	return k.claim(ns, name) // (not tracked yet)
}

func (k *kubeDRA) class(name string) (*resourceapi.DeviceClass, error) {
	c, err := k.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

func (k *kubeDRA) fetch(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	return k.cs.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (k *kubeDRA) update(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	return k.assumed(k.cs.ResourceV1().ResourceClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{}))
}

func (k *kubeDRA) updateStatus(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	return k.assumed(k.cs.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}))
}

// assumed tells the claim tracker of a claim just written (out): its
// readers see it at once. (An error of the tracker's, such as its
// informer having a newer copy already, leaves the informer's.)
func (k *kubeDRA) assumed(out *resourceapi.ResourceClaim, err error) (*resourceapi.ResourceClaim, error) {
	if err == nil && k.tracker != nil && out != nil {
		_ = k.tracker.AssumeClaimAfterAPICall(out)
	}
	return out, err
}
